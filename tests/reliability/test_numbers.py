"""Numbers: values the kernels cannot compute with are refused up front, never turned into NaN
images or silently wrong draws; non-finite pixels are reported in checking mode and never reach
other samples; reading a config raises only typed augjax errors (docs/RELIABILITY.md,
"Numbers and configs").

- Every numeric parameter of every registered op refuses a value that is not finite in float32
  (the kernels' dtype: ``1e39`` is finite in float64 and ``inf`` in float32), a float too small
  for float32, an integer outside int32, and a 400-digit integer: ``ParamError`` naming the op
  and the parameter.
- The same for the composites' and policies' numbers (``random_choice`` weights, ``p``, ``mstd``)
  and for a chain's ``start`` (folded into a uint32 key).
- Configs: huge integers, 2000-deep nesting, overlong JSON numbers, a ``start`` of ``2**32`` and
  random hostile values anywhere in valid configs (hypothesis) give an ``AugjaxError``.
- Pixels: NaN, +inf and -inf raise ``InputError`` in checking mode (NumPy, ``jax.Array``, DALI
  CPU), warn for NumPy input otherwise; in a chain they stay in their sample (and its mixing
  partner), never in the labels. Per-op containment is in test_hostile.
"""

from __future__ import annotations

import json
import math
import warnings

import jax
import numpy as np
import pytest
from _reliability import OPS, base_params
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import augjax
from augjax._core.param import F32_MAX, F32_TINY
from augjax.errors import AugjaxError, InputError, InputRangeWarning, ParamError

ops = augjax.ops
KEY = jax.random.key(0)
HUGE = 10**400  # a JSON integer Python reads, and float() cannot convert

FLOAT_KINDS = ("float", "float_or_pair", "pair", "floats")
INT_KINDS = ("int", "int_or_pair", "size")


def _as_kind(kind: str, v):
    return (v, v) if kind in ("pair", "size") else (v,) if kind == "floats" else v


def _numeric_params():
    for name, (spec, _) in sorted(OPS.items()):
        if spec is None:
            continue
        for pname, p in spec.params.items():
            if p.kind in FLOAT_KINDS + INT_KINDS:
                yield pytest.param(name, pname, id=f"{name}.{pname}")


@pytest.mark.parametrize("name, pname", list(_numeric_params()))
def test_numeric_params_refuse_values_the_kernels_cannot_hold(name, pname):
    spec = OPS[name][0]
    kind = spec.params[pname].kind
    cases = [(HUGE, "")]  # 400 digits: an OverflowError in float() before
    if kind in FLOAT_KINDS:
        cases += [(1e39, "float32"), (-1e39, "float32"), (1e-39, "too small for float32")]
    else:
        cases += [(2**40, "int32")]
    p = spec.params[pname]
    for value, words in cases:
        try:
            bound = spec.bind(**{**base_params(spec, num_classes=4), pname: _as_kind(kind, value)})
        except ParamError as caught:
            err = caught
        else:  # the op's validate made it a value the kernel can hold (mixup: alpha -> 1e30)
            assert p.validate is not None, f"{name}.{pname}={value!r} accepted"
            got = np.ravel(np.asarray(dict(bound.params)[pname], np.float64))
            assert all(x == 0 or F32_TINY <= abs(x) <= F32_MAX for x in got), (value, got)
            continue
        assert (err.op, err.param) == (name, pname), str(err)
        assert f"{name}: parameter '{pname}'" in str(err), str(err)
        if p.validate is None and _in_range(p, value):  # else the range or the op says no
            assert words in str(err), str(err)
        assert len(str(err)) < 600, "a huge value is shown shortened"


def _in_range(p, v) -> bool:
    return (p.low is None or v > p.low or (v == p.low and not p.low_exclusive)) and \
        (p.high is None or v < p.high or (v == p.high and not p.high_exclusive))


def test_a_range_whose_width_overflows_float32_is_refused():
    with pytest.raises(ParamError, match="width.*float32"):
        ops.rotate.bind(degrees=(-3e38, 3e38))  # drawn as low + u * (high - low)


def test_float32_limits_themselves_are_accepted():
    spec = ops.brightness.bind(factor=(0.0, 3e38))  # finite in float32: accepted (and clamped)
    out = np.asarray(spec(np.full((2, 4, 4, 3), 0.5, np.float32), key=jax.random.split(KEY, 2)))
    assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1


def test_brightness_beyond_float32_was_nan_images_and_is_refused():
    with pytest.raises(ParamError, match=r"brightness: parameter 'factor'.*not finite in float32"):
        ops.brightness(np.zeros((2, 4, 4, 3), np.float32), key=jax.random.split(KEY, 2),
                       factor=1e39)


@pytest.mark.parametrize("weights, words", [
    ([1e39, 1e39], "float32"),              # inf in float32: the second op was never picked
    ([3e38, 3e38], "sum is not finite"),    # each finite, their float32 sum is not
    ([HUGE, 1], "too large"),
    ([1e-39, 1], "too small"),
])
def test_random_choice_weights_the_draw_cannot_hold_are_refused(weights, words):
    with pytest.raises(ParamError, match=rf"random_choice: parameter 'weights'.*{words}"):
        augjax.random_choice([ops.invert, ops.flip], weights=weights)


def test_large_finite_weights_still_pick_every_op():
    n = 256
    x = np.zeros((n, 2, 2, 3), np.float32)
    step = augjax.random_choice([ops.invert, ops.brightness.bind(factor=1.0)],
                                weights=[1e38, 1e38])
    inverted = (np.asarray(step(x, key=jax.random.split(KEY, n)))[:, 0, 0, 0] == 1).mean()
    assert 0.35 < inverted < 0.65, inverted


@pytest.mark.parametrize("build, words", [
    (lambda: augjax.random_apply(ops.invert, HUGE), "random_apply: parameter 'p'"),
    (lambda: augjax.rand_augment(mstd=1e39), "rand_augment: parameter 'mstd'.*float32"),
    (lambda: augjax.rand_augment(m=HUGE), "rand_augment: parameter 'm'"),
    (lambda: augjax.rand_augment(n=HUGE), "rand_augment: parameter 'n'"),
    (lambda: augjax.augmix(severity=HUGE), "augmix: parameter 'severity'"),
    (lambda: augjax.compose(ops.flip, start=2**32), "compose: argument 'start'"),
    (lambda: augjax.compose(ops.flip, ops.invert, start=2**32 - 1), "compose: argument 'start'"),
])
def test_composite_and_policy_numbers_are_checked(build, words):
    with pytest.raises(ParamError, match=words):
        build()


def test_a_chain_may_start_at_the_last_uint32_position():
    x = np.random.default_rng(0).random((4, 6, 6, 3)).astype(np.float32)
    keys = jax.random.split(KEY, 4)
    last = augjax.compose(ops.flip, ops.brightness, start=2**32 - 2)
    out = np.asarray(last(x, key=keys))  # was an OverflowError at the first call
    # a chain is its ops applied one at a time, each keeping its position (2**32 - 1 here)
    one_by_one = last[1:](last[:1](x, key=keys), key=keys)
    np.testing.assert_array_equal(out, np.asarray(one_by_one))
    assert not np.array_equal(out, np.asarray(augjax.compose(ops.flip, ops.brightness)(
        x, key=keys)))


# -- configs ------------------------------------------------------------------------------------
def _deep(n: int, kind: str = "random_apply") -> dict:
    node = {"type": "op", "name": "invert"}
    for _ in range(n):
        node = ({"type": "random_apply", "op": node, "p": 0.5} if kind == "random_apply" else
                {"type": "random_choice", "ops": [node, {"type": "op", "name": "flip"}]})
    return {"augjax_config": 1, **node}


@pytest.mark.parametrize("load, words", [
    (lambda: augjax.from_dict(_deep(2000)), "nests dicts and lists more than"),
    (lambda: augjax.from_dict(_deep(33)), "nests steps more than 32 levels"),
    (lambda: augjax.from_json("[" * 100_000 + "]" * 100_000), "cannot be read as JSON"),
    (lambda: augjax.from_json('{"augjax_config": 1, "type": "op", "name": "flip", "params": '
                              '{"p": 1' + "0" * 5000 + "}}"), "cannot be read as JSON"),
    (lambda: augjax.from_dict({"augjax_config": 1, "type": "op", "name": "flip",
                               "params": {"p": HUGE}}), r"config: flip: parameter 'p'"),
    (lambda: augjax.from_dict({"augjax_config": 1, "type": "compose", "start": 2**32,
                               "steps": [{"type": "op", "name": "flip"}]}), "'start'"),
    (lambda: augjax.from_dict({"augjax_config": HUGE}), "version 1000"),
    (lambda: augjax.from_json(b"\xff\xfe"), "config"),
])
def test_config_loading_errors_are_typed(load, words):
    with pytest.raises(ParamError, match=words):
        load()


@pytest.mark.slow
def test_the_deepest_config_read_also_runs():
    """32 nested choices load and trace (56 ran out of Python's stack when traced)."""
    step = augjax.from_dict(_deep(32, "random_choice"))
    x = np.random.default_rng(1).random((2, 4, 4, 3)).astype(np.float32)
    assert np.asarray(step(x, key=jax.random.split(KEY, 2))).shape == x.shape


BASES = [
    augjax.to_dict(augjax.compose(
        ops.rotate.bind(degrees=(-10.0, 10.0)), augjax.random_apply(ops.invert, 0.25),
        augjax.random_choice([ops.autocontrast, ops.brightness.bind(factor=(0.5, 1.5))],
                             weights=[1, 3]),
        augjax.some_of([ops.grayscale, ops.posterize.bind(bits=(4, 6))], n=(0, 2)),
        ops.mixup.bind(num_classes=10), start=2)),
    augjax.to_dict(augjax.rand_augment(n=3, m=5, mstd=0.5)),
    augjax.to_dict(augjax.augmix(severity=4, width=2)),
    augjax.to_dict(augjax.auto_augment("svhn", fill=(0.1, 0.2, 0.3))),
]

_LEAF = st.one_of(
    st.none(), st.booleans(), st.text(max_size=8),
    st.sampled_from([HUGE, -HUGE, 2**32, 2**63, 1e39, -1e39, 1e-39, 1e308, math.inf, -math.inf,
                     math.nan, "inf", "-inf", "nan", 0, -1, 0.5, 1, 3]),
    st.integers(), st.floats(),
)
_JSON = st.recursive(_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(
        ["type", "name", "op", "ops", "steps", "params", "p", "weights", "n", "m", "start",
         "augjax_config"]), inner, max_size=4)), max_leaves=12)


def _paths(node, path=()):
    yield path
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for k, v in items:
        yield from _paths(v, (*path, k))


def _replaced(config, path, value):
    if not path:
        return value
    out = json.loads(json.dumps(config))
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
@example(data=None)
def test_hostile_values_anywhere_in_a_config_give_typed_errors(data):
    """Any value put anywhere in a valid config: it loads, or raises an ``AugjaxError``
    (before: ``OverflowError``, ``RecursionError``, ``TypeError``, ...)."""
    if data is None:  # the cases of the issue, always run
        cases = [(BASES[0], ("steps", 0, "params", "degrees"), [HUGE, 1]),
                 (BASES[0], ("start",), 2**32), (BASES[1], ("m",), HUGE),
                 (BASES[0], ("steps", 2, "weights"), [1e39, 1e39])]
    else:
        base = data.draw(st.sampled_from(BASES))
        path = data.draw(st.sampled_from(list(_paths(base))))
        cases = [(base, path, data.draw(_JSON))]
    for base, path, value in cases:
        config = _replaced(base, path, value)
        try:
            step = augjax.from_dict(config)
        except AugjaxError:
            continue
        json.dumps(augjax.to_dict(step), allow_nan=False)  # what loads writes back as strict JSON


# -- pixels -------------------------------------------------------------------------------------
def _with(value, sample=1, n=4):
    x = np.random.default_rng(0).random((n, 6, 6, 3)).astype(np.float32)
    x[sample, 2, 3, 0] = value
    return x


@pytest.mark.parametrize("value, words", [(math.nan, "1 NaN value"),
                                          (math.inf, r"1 \+inf value"),
                                          (-math.inf, "1 -inf value")])
@pytest.mark.parametrize("device", [False, True])
def test_checking_mode_refuses_non_finite_pixels_naming_the_samples(value, words, device):
    x = _with(value, sample=2)
    x = jax.device_put(x) if device else x
    expected = rf"solarize: argument 'images' expects finite.*{words}.*sample\(s\) 2"
    with augjax.checking(), pytest.raises(InputError, match=expected):
        ops.solarize(x, key=jax.random.split(KEY, 4))
    chain = augjax.compose(ops.flip, ops.color_jitter.bind(contrast=0.4))
    with augjax.checking(), pytest.raises(InputError, match="flip: .*finite"):
        chain(x, key=jax.random.split(KEY, 4))


def test_nan_pixels_in_numpy_input_warn_by_default():
    with pytest.warns(InputRangeWarning, match="flip: .*NaN or infinite values"):
        ops.flip(_with(math.nan), key=jax.random.split(KEY, 4))


@pytest.mark.filterwarnings("ignore::augjax.InputRangeWarning")
def test_non_finite_pixels_in_a_dali_cpu_pipeline_in_checking_mode():
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import fn, pipeline_def, types

    x = _with(math.nan, sample=1, n=2)

    with augjax.checking():
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe():
            images = fn.external_source(lambda: list(x), batch=True, dtype=types.FLOAT,
                                        layout="HWC")
            return ops.flip(images, seed=1)

        p = pipe()
        p.build()
    with pytest.raises(RuntimeError, match=r"flip: argument 'images' expects finite.*1 NaN"):
        p.run()


@pytest.mark.fast_tier("nan")
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_non_finite_pixel_stays_in_its_sample_through_a_training_chain(value):
    """A timm-style chain (crop, flip, jitter, RandAugment, erasing, mixup): the bad pixel of
    sample 1 reaches at most sample 1 and its mixing partner (n - 1 - i), never the labels."""
    n = 6
    chain = augjax.compose(
        ops.random_resized_crop.bind(size=8), ops.flip,
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
        augjax.rand_augment(n=2, m=9), ops.random_erasing.bind(p=0.5),
        ops.mixup.bind(num_classes=5, alpha=0.8))
    x = np.random.default_rng(3).random((n, 12, 12, 3)).astype(np.float32)
    labels = np.arange(n) % 5
    keys = jax.random.split(KEY, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputRangeWarning)
        clean, _ = chain(x, labels, key=keys)
        bad, soft = chain(_with_at(x, value), labels, key=keys)
    clean, bad = np.asarray(clean), np.asarray(bad)
    changed = {i for i in range(n) if not np.array_equal(bad[i], clean[i], equal_nan=True)}
    assert changed <= {1, n - 2}, changed
    assert np.isfinite(np.asarray(soft)).all()


def _with_at(x, value):
    y = x.copy()
    y[1, 5, 5, :] = value
    return y


def test_f32_max_is_the_float32_maximum():
    assert F32_MAX == float(np.finfo(np.float32).max)
