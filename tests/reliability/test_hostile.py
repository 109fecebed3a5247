"""Hostile inputs: every registered op answers with a typed error or a documented,
tested behaviour; never a crash, a hang, a NaN it created, or silently wrong output.

- A property test per op (hypothesis): shapes (batch of 1 and up, sides from 1 pixel), dtypes,
  layouts, channel counts and parameter values drawn from the op's declared Params (ranges with
  their bounds, choices, kinds, optional). Each draw either raises an augjax error that names the
  op, or returns the declared shape and dtype, finite values, in [0, 1] for float images in
  [0, 1], deterministically. On the same compiled program, float images outside [0, 1] and NaN
  pixels are fed too: no NaN or inf is created, values are clamped or passed through (never
  extrapolated), and a NaN stays in its sample (or the one sample mixed with it).
- Deterministic checks over every op: empty batches, wrong rank, dtype, channel count and
  layout, labels of the wrong length, kind or range, and non-finite, out-of-range or mistyped
  parameter values.
- A batch of 4096 and a 1024x1024 image through a chain; out-of-range labels in DALI.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np
import pytest
from _reliability import (
    base_params,
    call,
    channels_for,
    expected_dtype,
    expected_shape,
    is_mixing,
    keys,
    lively_params,
    op_names,
    params_strategy,
    random_images,
    sample_case,
    spec_or_skip,
)
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from tiers import op_sweep

import augjax
from augjax._runtime.execution.padding import no_padding
from augjax.errors import AugjaxError, InputError, ParamError

ALL_OPS = op_names()
SAMPLE_OPS = op_names(lambda s: not is_mixing(s))
MIXING_OPS = op_names(is_mixing)

#: Examples per op and variant (each compiles a program: ~0.1-0.5 s for a sample op on CPU,
#: ~2 s for a mixing op). Raise them locally, e.g. AUGJAX_HYPOTHESIS_EXAMPLES=10.
EXAMPLES = int(os.environ.get("AUGJAX_HYPOTHESIS_EXAMPLES", "2"))
#: Variants: uint8 HWC with a batch of one, and float32 CHW with a batch of 2-4 (where the op
#: declares them), so every op sees both dtypes, both layouts and N = 1.
VARIANTS = {"uint8-HWC-N1": ("uint8", "HWC", 1), "float32-CHW": ("float32", "CHW", None)}


def _settings(n: int):
    # No shrinking: a failure is reported with the example that failed (shrinking recompiles
    # the op for every candidate and can take minutes).
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck),
                    phases=(Phase.explicit, Phase.generate))


# -- the property test -------------------------------------------------------------------------
def _draw_case(data, spec, variant):
    dtype, layout, n = VARIANTS[variant]
    dtype = dtype if dtype in spec.dtypes else spec.dtypes[0]
    layout = layout if layout in spec.layouts else spec.layouts[0]
    draw = data.draw
    if n is None:
        n = draw(st.integers(2, 4), label="n")
    c = draw(st.sampled_from(spec.channels or (1, 3, 4)), label="channels")
    h = draw(st.integers(1, 12), label="height")
    w = draw(st.integers(1, 12), label="width")
    k = draw(st.integers(2, 5), label="num_classes") if is_mixing(spec) else None
    params = draw(params_strategy(spec, c, k, (h, w)), label="params")
    seed = draw(st.integers(0, 2**31 - 1), label="seed")
    return dtype, layout, n, c, h, w, k, params, seed


def _labels(spec, n, k, soft: bool, seed: int):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, k, n).astype(np.int32)
    if not soft:
        return ids
    rows = rng.random((n, k)).astype(np.float32) + 1e-3
    return rows / rows.sum(-1, keepdims=True)


def _nan_at(x, layout, value=np.nan):
    """A copy of float ``x`` with one NaN pixel (every channel; or ``value``: +-inf) in
    sample 0."""
    y = x.copy()
    if layout == "HWC":
        y[0, 0, 0, :] = value
    else:
        y[0, :, 0, 0] = value
    return y


def _clips(spec, params) -> bool:
    """Whether the op is asked to keep values in range (``clip=False`` opts out, e.g. noise;
    an op whose ``clip`` defaults to False, such as DALI's ``color_twist``, opts in with True).
    ``interpolation="bicubic"`` (``resize``, ``random_resized_crop``) opts out too: the cubic's
    negative lobes overshoot, and float images are left so, as torchvision leaves them."""
    if params.get("interpolation") == "bicubic":
        return False
    default = spec.params["clip"].default if "clip" in spec.params else True
    return params.get("clip", default) is not False


def _run_case(spec, data, variant):
    dtype, layout, n, c, h, w, k, params, seed = _draw_case(data, spec, variant)
    x = random_images(n, h, w, c, dtype, seed=seed % 1000, layout=layout)
    labels = _labels(spec, n, k, soft=bool(seed % 2), seed=seed) if is_mixing(spec) else None
    key = jax.random.key(seed)
    try:
        spec.bind(**params)
    except ParamError as err:  # values valid one by one that clash (min > max): draw again
        assert spec.name in str(err)
        assume(False)
    try:
        out, soft = call(spec, x, labels, key=key, layout=layout, **params)
        out = np.asarray(out)
    except AugjaxError as err:  # a documented refusal (params that clash, a crop too large)
        assert spec.name in str(err), f"the error does not name the op: {err}"
        return
    # Declared shape and dtype, finite values, in range.
    assert out.shape == expected_shape(spec, x.shape, layout, params), (out.shape, params)
    assert out.dtype == expected_dtype(spec, x.dtype), (out.dtype, params)
    if out.dtype.kind == "f":
        assert np.isfinite(out).all(), f"non-finite output for finite input, params {params}"
        if spec.output_dtype is None and dtype == "float32" and _clips(spec, params):
            assert out.min() >= -1e-6 and out.max() <= 1 + 1e-6, (out.min(), out.max(), params)
    if soft is not None:
        soft = np.asarray(soft)
        assert soft.shape == (n, k) and np.isfinite(soft).all()
        np.testing.assert_allclose(soft.sum(-1), 1.0, atol=1e-5)
    # Deterministic given the key.
    again, _ = call(spec, x, labels, key=key, layout=layout, **params)
    np.testing.assert_array_equal(np.asarray(again), out)
    if dtype != "float32":
        return
    _check_wide_and_nan(spec, x, labels, key, layout, params, out)


def _check_wide_and_nan(spec, x, labels, key, layout, params, out):
    """Same program, hostile values: float images in [-1, 2] give finite values, clamped or
    passed through (an inversion ``1 - x`` included), never pushed further out; a NaN pixel in
    sample 0 changes sample 0 only (or also the one sample mixed with it), never the labels;
    so does a +inf or a -inf pixel."""
    n = len(x)
    # Float images outside [0, 1]: no NaN/inf created; values clamped or passed through (an
    # inversion 1 - x included), never pushed further out.
    wide = (x * 3.0 - 1.0).astype(np.float32)
    out_w, _ = call(spec, wide, labels, key=key, layout=layout, **params)
    out_w = np.asarray(out_w)
    if out_w.dtype.kind == "f":
        assert np.isfinite(out_w).all(), f"out-of-range input made non-finite output {params}"
        if spec.output_dtype is None and _clips(spec, params):
            x_lo, x_hi = float(wide.min()), float(wide.max())
            lo, hi = min(0.0, x_lo, 1.0 - x_hi), max(1.0, x_hi, 1.0 - x_lo)
            assert out_w.min() >= lo - 1e-5 and out_w.max() <= hi + 1e-5, (
                f"pushed beyond the input's range: {out_w.min()}..{out_w.max()} from "
                f"{x_lo}..{x_hi}, params {params}")
    # A NaN or infinite pixel in sample 0 stays in its sample (or the one sample mixed with
    # it), whatever the op makes of it there (docs/RELIABILITY.md, "Numbers").
    for bad in (np.nan, np.inf, -np.inf) if n >= 2 else ():
        out_n, soft_n = call(spec, _nan_at(x, layout, bad), labels, key=key, layout=layout,
                             **params)
        out_n = np.asarray(out_n)
        changed = [i for i in range(n) if not np.array_equal(out_n[i], out[i], equal_nan=True)]
        if is_mixing(spec):
            assert len(set(changed) - {0}) <= 1, f"{bad} of sample 0 reached samples {changed}"
            assert np.isfinite(np.asarray(soft_n)).all(), f"{bad} pixels reached the labels"
        elif spec.level == "batch":  # pasting ops (mosaic, copy_paste) copy pixels across
            # samples: the bad pixel is copied (at most once per tile of each output), not spread
            shown = ~np.isfinite(out_n).all(axis=-1 if layout == "HWC" else 1)
            assert shown.sum() <= 4 * n, f"{bad} of sample 0 spread to {shown.sum()} pixels"
        else:
            assert set(changed) <= {0}, f"{bad} of sample 0 reached samples {changed}"


@pytest.mark.parametrize("name", op_sweep(SAMPLE_OPS))
def test_out_of_range_floats_and_nan_pixels(name):
    """On the shared case (lively params, float32; compiled once with test_alignment): images
    in [-1, 2] and a NaN pixel in sample 0 (see :func:`_check_wide_and_nan`)."""
    spec = spec_or_skip(name)
    params, x, k, out = sample_case(name)
    if x.dtype != np.float32 or out is None:
        pytest.skip(f"{name}: no float32 case (dtypes {spec.dtypes})")
    _check_wide_and_nan(spec, x, None, k, "HWC", params, out)


@pytest.mark.fast_tier(
    "brightness-uint8-HWC-N1", "cutout-uint8-HWC-N1", "equalize-float32-CHW",
    "gaussian_blur-uint8-HWC-N1", "gaussian_noise-float32-CHW", "normalize-float32-CHW",
    "random_resized_crop-float32-CHW", "rotate-uint8-HWC-N1")
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", op_sweep(SAMPLE_OPS))
@_settings(EXAMPLES)
@given(data=st.data())
def test_op_properties_over_shapes_dtypes_and_params(name, variant, data):
    _run_case(spec_or_skip(name), data, variant)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", op_sweep(MIXING_OPS))
@_settings(EXAMPLES)
@given(data=st.data())
def test_mixing_op_properties_over_shapes_dtypes_and_params(name, variant, data):
    _run_case(spec_or_skip(name), data, variant)


# -- shapes ------------------------------------------------------------------------------------
def _args(spec, x, n=None, k=3):
    n = len(x) if n is None else n
    return (x, np.zeros(n, np.int32)) if is_mixing(spec) else (x,)


def _params(spec, hw=(8, 8), k=3):
    return base_params(spec, num_classes=k, hw=hw)


def _key_kw(spec):
    return {"key": jax.random.key(0)} if spec.random else {}


@pytest.mark.parametrize("name", op_sweep(ALL_OPS))
def test_empty_batch_keeps_its_shape(name):
    spec = spec_or_skip(name)
    c = channels_for(spec)
    x = np.zeros((0, 8, 8, c), np.uint8)
    params = _params(spec)
    out = spec(*_args(spec, x), **_key_kw(spec), **params)
    img = out[0] if is_mixing(spec) else out
    assert img.shape == expected_shape(spec, x.shape, "HWC", params)
    if is_mixing(spec):
        assert out[1].shape == (0, 3)


def _expect(exc, fragments, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    return info.value


@pytest.mark.fast_tier("to_float")
@pytest.mark.parametrize("name", ALL_OPS)
def test_wrong_rank_dtype_channels_and_layout_are_input_errors(name):
    spec = spec_or_skip(name)
    c = channels_for(spec)
    params = _params(spec)
    x = random_images(2, 8, 8, c, np.uint8)

    def run(images, **kw):
        return spec(*_args(spec, images, n=2), **_key_kw(spec), **params, **kw)

    _expect(InputError, [name, "'images'", "rank 4", "rank 3"], run, x[0])
    # a plain rank 5 is refused as clips or volumes (tests/clips/test_kinds.py); rank 6 too
    _expect(InputError, [name, "'images'", "rank 4", "rank 6"], run, x[None, None])
    for bad in (np.int16, np.int32, np.float16, np.bool_):
        _expect(InputError, [name, "'images'", "dtype", np.dtype(bad).name], run, x.astype(bad))
    if spec.channels is not None:
        for bad_c in sorted({1, 2, 4, 5} - set(spec.channels)):
            _expect(InputError, [name, "channels", f"got {bad_c} ("], run,
                    random_images(2, 8, 8, bad_c, np.uint8))
        if 3 in spec.channels:  # CHW data given as HWC: the hint names the layout
            chw = np.ascontiguousarray(random_images(2, 8, 9, 3, np.uint8).transpose(0, 3, 1, 2))
            _expect(InputError, [name, "layout='CHW'"], run, chw)
    _expect(InputError, [name, "'layout'", "NHWC"], run, x, layout="NHWC")
    _expect(InputError, [name, "'images'", "list"],
            spec, x.tolist(), *_args(spec, x, n=2)[1:], **_key_kw(spec), **params)


def test_float64_images_become_float32_as_jax_does():
    """JAX's default (x64 off) turns float64 NumPy arrays into float32; ops then treat them as
    float32 images, identically."""
    x = random_images(3, 8, 8, 3, np.float32)
    k = jax.random.key(0)
    a = augjax.ops.brightness(x.astype(np.float64), key=k, factor=(0.5, 1.5))
    b = augjax.ops.brightness(x, key=k, factor=(0.5, 1.5))
    assert a.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# -- labels ------------------------------------------------------------------------------------
@pytest.mark.fast_tier("mixup")
@pytest.mark.parametrize("name", MIXING_OPS)
def test_bad_labels_are_input_errors_before_anything_runs(name):
    spec = spec_or_skip(name)
    x = random_images(4, 8, 8, 3, np.uint8)
    params = _params(spec, k=3)
    before = augjax.trace_count()

    def run(labels):
        return spec(x, labels, key=jax.random.key(0), **params)

    # Class ids outside [0, num_classes): NumPy labels are checked before the call; device
    # labels are not read back (a sync per call) and poison the soft labels with NaN instead.
    for bad in ([0, 1, 2, 3], [-1, 0, 1, 2]):
        _expect(InputError, [name, "'labels'", "[0, 3)", "num_classes=3"], run,
                np.array(bad, np.int32))
    assert augjax.trace_count() == before, "out-of-range labels reached the tracer"
    for bad in ([0, 1, 2, 3], [-1, 0, 1, 2]):
        _, soft = run(jax.numpy.asarray(bad, jax.numpy.int32))
        assert np.isnan(np.asarray(soft)).all()
    _, soft = run(jax.numpy.asarray([0, 1, 2, 0], jax.numpy.int32))
    assert np.isfinite(np.asarray(soft)).all()
    _expect(InputError, [name, "'labels'", "(3,)"], run, np.zeros(3, np.int32))
    _expect(InputError, [name, "'labels'", "(5, 1)"], run, np.zeros((5, 1), np.int32))
    _expect(InputError, [name, "'labels'", "float32"], run, np.zeros(4, np.float32))
    _expect(InputError, [name, "'labels'", "(4, 2)"], run, np.zeros((4, 2), np.int32))
    _expect(InputError, [name, "'labels'"], run, np.full((4, 5), 0.2, np.float32))
    _expect(InputError, [name, "2 positional input(s)"], spec, x, key=jax.random.key(0),
            **params)


def test_out_of_range_labels_in_dali_give_nan_soft_labels_for_that_batch():
    from helpers import run_dali

    spec = spec_or_skip(MIXING_OPS[0]) if MIXING_OPS else pytest.skip("no mixing op")
    params = _params(spec, k=4)
    x = random_images(4, 8, 8, 3, np.uint8)
    ok = np.array([[0], [1], [2], [3]], np.int32)
    (_, soft), = run_dali(lambda a, b: spec(a, b, **params), x, ok)
    assert soft.shape == (4, 4) and np.isfinite(soft).all()
    for bad in ([[0], [1], [9], [3]], [[0], [-2], [1], [3]]):
        (img, soft), = run_dali(lambda a, b: spec(a, b, **params), x, np.array(bad, np.int32))
        assert np.isnan(soft).all() and img.shape == x.shape


# -- parameters --------------------------------------------------------------------------------
def _bad_values(p):
    """Values that must be refused for a Param, by kind."""
    numeric = p.kind in ("float", "int", "pair", "float_or_pair", "int_or_pair", "floats",
                         "size")
    out = []
    if numeric:
        for v in (math.nan, math.inf, -math.inf):
            out.append(v if p.kind in ("float", "int", "float_or_pair", "int_or_pair", "floats")
                       else (v, v))
        if p.kind in ("pair", "float_or_pair", "int_or_pair"):
            out.append((0.0, math.nan))
        if p.kind == "int_or_pair":
            out += [0.5, (1.5, 2.0)]  # not whole numbers
        if p.low is not None:
            below = p.low - 1
            out.append(below if p.kind != "pair" else (below, p.low))
        if p.high is not None:
            above = p.high + 1
            out.append(above if p.kind != "pair" else (p.high, above))
        out += ["x", True, None if not p.optional else "x"]
    elif p.kind == "bool":
        out += [1, "yes", None if not p.optional else 0]
    elif p.kind == "str":
        out += ["no-such-choice", 3]
    return out


@pytest.mark.parametrize("name", ALL_OPS)
def test_bad_param_values_are_param_errors_naming_op_and_param(name):
    spec = spec_or_skip(name)
    base = _params(spec)
    checked = 0
    for pname, p in spec.params.items():
        for value in _bad_values(p):
            err = _expect(ParamError, [name, f"'{pname}'"], spec.bind, **{**base, pname: value})
            assert err.op == name and err.param == pname
            checked += 1
    _expect(ParamError, [name, "unknown parameter", "'no_such_param'"], spec.bind, **base,
            no_such_param=1)
    assert checked or not spec.params


# -- size extremes -----------------------------------------------------------------------------
def _chain():
    compose = augjax.compose
    fit = []
    for name in SAMPLE_OPS:
        try:
            spec = augjax.get_op(name)
        except AugjaxError:
            continue
        if spec.output_size or spec.output_dtype or spec.output_layout or spec.channels == (1,):
            continue
        if any(p.required for p in spec.params.values()):
            continue
        fit.append(spec.bind(**lively_params(spec, hw=(8, 8))))
    rng = np.random.default_rng(0)
    picked = [fit[i] for i in sorted(rng.choice(len(fit), size=min(5, len(fit)), replace=False))]
    return compose(*picked)


@pytest.mark.slow
def test_a_batch_of_4096_and_a_1024_pixel_image():
    chain = _chain()
    x = random_images(4096, 8, 8, 3, np.uint8, seed=1)
    k = keys(4096, seed=2)
    out = np.asarray(chain(x, key=k))
    assert out.shape == x.shape and out.dtype == np.uint8
    with no_padding():  # a batch of 5 compiled as such, not padded to 4096
        np.testing.assert_array_equal(out[:5], np.asarray(chain(x[:5], key=k[:5])))
    big = random_images(1, 1024, 1024, 3, np.float32, seed=3)
    out = np.asarray(chain(big, key=k[:1]))
    assert out.shape == big.shape and np.isfinite(out).all()
    assert 0.0 <= out.min() and out.max() <= 1.0


# -- raw errors and unbounded work ------------------------------------------------------------
@pytest.mark.parametrize("name", ALL_OPS)
def test_images_without_pixels_are_input_errors(name):
    """A batch of images of height or width 0 (a failed decode upstream) is refused by every
    op before it samples: random_resized_crop and random_iou_crop raised IndexError from the
    trace, blurs and resize IndexError or ZeroDivisionError, others returned empty images."""
    spec = spec_or_skip(name)
    c = channels_for(spec)
    params = _params(spec)
    for shape in ((2, 0, 0, c), (2, 0, 5, c), (2, 5, 0, c)):
        x = np.zeros(shape, spec.dtypes[0])
        err = _expect(InputError, [name, "'images'", "at least 1 x 1 pixels", str(shape)],
                      spec, *_args(spec, x), **_key_kw(spec), **params)
        assert err.argument == "images"


def test_a_list_with_an_image_without_pixels_is_an_input_error():
    images = [random_images(1, 8, 8, 3, np.uint8)[0], np.zeros((0, 6, 3), np.uint8)]
    _expect(InputError, ["random_resized_crop", "'images'", "at least 1 x 1 pixels", "image 1",
                         "(0, 6, 3)"], augjax.ops.random_resized_crop, images,
            key=jax.random.key(0), size=8)


_ROTATED = {"cxcywhr": [8.0, 8.0, 6.0, 4.0, 30.0],
            "xyxyxyxy": [2.0, 2.0, 10.0, 2.0, 10.0, 10.0, 2.0, 10.0]}


@pytest.mark.parametrize("fmt", sorted(_ROTATED))
@pytest.mark.parametrize("name", ["mosaic", "copy_paste"])
def test_rotated_boxes_in_a_pasting_op_are_input_errors(name, fmt):
    """The pasting ops move boxes by their XYXY sides (a batch hook takes pixel XYXY boxes):
    rotated ones raised ``TypeError: add got incompatible shapes`` from the trace."""
    x = random_images(4, 16, 16, 3, np.uint8)
    boxes = np.tile(np.array(_ROTATED[fmt], np.float32), (4, 1, 1))
    before = augjax.trace_count()
    for step in (augjax.get_op(name), augjax.compose(augjax.ops.flip, augjax.get_op(name))):
        err = _expect(InputError, [name, "'boxes_format'", "unrotated", f"got rotated boxes "
                                   f"({fmt!r})"], step, x, key=jax.random.key(0), boxes=boxes,
                      boxes_format=fmt)
        assert (err.op, err.argument) == (name, "boxes_format")
    assert augjax.trace_count() == before, "refused after a trace"


def test_a_colour_only_chain_flags_boxes_as_an_identity_geometric_op_does():
    """Boxes that no op moves keep their coordinates (colour ops do not clamp) and get the
    validity any chain gives them: a NaN box, one outside the image or below the rule's size
    is invalid (they came back valid), as after a flip with p=0; a flag given False stays."""
    x = random_images(2, 16, 16, 3, np.uint8)
    boxes = np.array([[[1, 1, 8, 8], [np.nan, 1, 8, 8], [100, 100, 120, 120],
                       [-30, -30, -20, -20], [10, 10, 10.5, 10.5], [2, 2, 20, 20],
                       [3, 3, 9, 9]]] * 2, np.float32)
    given = np.ones((2, 7), bool)
    given[1, 6] = False
    expected = np.array([[True, False, False, False, False, True, True],
                         [True, False, False, False, False, True, False]])
    colour = augjax.compose(augjax.ops.brightness.bind(factor=(0.5, 1.5)),
                            augjax.ops.grayscale)
    still = augjax.compose(augjax.ops.flip.bind(p=0.0))
    k = jax.random.key(0)
    out = colour(x, key=k, boxes=boxes, boxes_valid=given)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]), expected)
    np.testing.assert_array_equal(np.asarray(out["boxes"]), boxes)
    ref = still(x, key=k, boxes=boxes, boxes_valid=given)
    np.testing.assert_array_equal(np.asarray(ref["boxes_valid"]), expected)
    # rotated boxes, by their own rule: a NaN box and one outside the image are invalid
    rot = np.array([[_ROTATED["cxcywhr"], [np.nan, 8, 6, 4, 30], [90, 90, 6, 4, 30]]] * 2,
                   np.float32)
    out = colour(x, key=k, boxes=rot, boxes_format="cxcywhr")
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]), [[True, False, False]] * 2)
    # (through corners and back: within float32 rounding)
    np.testing.assert_allclose(np.asarray(out["boxes"])[:, ::2], rot[:, ::2], atol=1e-4)


def _peak_bytes(fn) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
    except AugjaxError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


_BOUNDS = {  # what is built -> (the call beyond the bound, the one at it, what the error names)
    "views": (lambda n: augjax.views({"g": (n, augjax.ops.flip.bind())}), "MAX_VIEWS",
              ["views", "'groups'", "at most 256 views"]),
    "views-list": (lambda n: augjax.views({"g": [augjax.ops.flip.bind()] * n}), "MAX_VIEWS",
                   ["views", "'groups'", "at most 256 views"]),  # (the list is the caller's)
    "rand_augment": (lambda n: augjax.rand_augment(n=n), "MAX_POLICY_LAYERS",
                     ["rand_augment", "'n'", "[0, 64]"]),
    "augmix": (lambda n: augjax.augmix(width=n), "MAX_AUGMIX_WIDTH",
               ["augmix", "'width'", "[1, 16]"]),
    "rand_augment-bins": (lambda n: augjax.rand_augment(num_magnitude_bins=n, m=1),
                          "MAX_MAGNITUDE_BINS", ["rand_augment", "'num_magnitude_bins'",
                                                 "[2, 1024]"]),
    "trivial_augment_wide-bins": (lambda n: augjax.trivial_augment_wide(num_magnitude_bins=n),
                                  "MAX_MAGNITUDE_BINS", ["trivial_augment_wide",
                                                         "'num_magnitude_bins'", "[2, 1024]"]),
}


@pytest.mark.parametrize("what", _BOUNDS)
def test_counts_beyond_their_documented_bound_are_refused_before_any_work(what):
    """``views({"g": (10**9, step)})`` grew to 7.8 GB and never returned, ``rand_augment(n=
    1_000_000)`` and ``augmix(width=100_000)`` loaded for minutes: each count has a bound
    (augjax._core.limits), checked when the step is built: a ParamError that names it, with
    nothing traced and no memory taken for the count (a count of a million allocates less
    than 1 MB), while the bound itself is taken."""
    from augjax._core import limits

    build, bound, fragments = _BOUNDS[what]
    top = getattr(limits, bound)
    before = augjax.trace_count()
    _expect(ParamError, fragments + [str(top + 1)], build, top + 1)
    if what != "views-list":
        assert _peak_bytes(lambda: build(1_000_000)) < 1_000_000
    _expect(ParamError, fragments + ["1000000"], build, 1_000_000)
    build(top)
    assert augjax.trace_count() == before


def test_index_seeds_take_64_bit_seeds_and_refuse_what_does_not_fit():
    """``index_seeds`` raised OverflowError for a seed of 2**40 or an index of 2**64: seeds take
    ``[0, 2**64)`` (the high word mixed in), seeds below 2**32 give the seeds they gave (values
    recorded before), and an index, epoch or seed that does not fit is a typed error."""
    assert augjax.index_seeds(np.arange(3), 1, 7).tolist() == [[653042660, 0], [653042660, 1],
                                                              [653042660, 2]]
    assert augjax.index_seeds([9], 0, 2**32 - 1).tolist() == [[768639563, 9]]
    heads = {augjax.index_seeds([0], 0, s)[0, 0] for s in (0, 2**32, 2**40, 2**64 - 1)}
    assert len(heads) == 4
    for args, argument, fragment in (
            (([2**64],), "indices", "indices in [18446744073709551616, 18446744073709551616]"),
            ((np.array([2**63], np.uint64),), "indices", "[0, 2**31)"),
            (([1.5],), "indices", "dtype float64"),
            (([1], -1), "epoch", "[0, 2**32)"), (([1], 2**32), "epoch", "[0, 2**32)"),
            (([1], 0, 2**64), "seed", "[0, 2**64)"), (([1], 0, -1), "seed", "[0, 2**64)")):
        err = _expect(InputError, ["index_seeds", f"'{argument}'", fragment],
                      augjax.index_seeds, *args)
        assert err.argument == argument
    assert augjax.index_seeds([], 0, 0).shape == (0, 2)
