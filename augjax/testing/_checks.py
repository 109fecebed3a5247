"""The conformance checks. Each takes a bound op (the spec plus the parameter values to test)
and raises ``AssertionError`` naming what is wrong, or :class:`CheckSkipped` with the reason.

Tolerances: results computed in two ways that should agree (jit vs eager, vmap vs one sample at
a time) may differ by float rounding only: at most 1 uint8 level or 1e-5 in float32. DALI vs
array paths and same-key runs run one compiled program and must be bitwise equal. Neutral
parameters must return the input exactly for uint8 and within 1e-6 for float32.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax._runtime.execution.bound import BoundOp
from augjax._runtime.execution.keys import keys_from_seeds
from augjax._runtime.execution.padding import no_padding
from augjax._runtime.execution.program import trace_count
from augjax._runtime.store.programs import load_count
from augjax.errors import InputError, InputTypeError, KeyRequiredError, ParamError
from augjax.testing._dali import dali_available, run_dali
from augjax.testing._declaration import check_declaration, check_param_validation
from augjax.testing._geometry import check_geometry, moves_pixels
from augjax.testing._stays import check_targets_stay, targets_stay
from augjax.testing._examples import (
    SHAPE,
    channels_for,
    make_images,
    make_labels,
    neutral_params,
)

__all__ = ["CHECKS", "CheckSkipped", "applicable_checks"]


class CheckSkipped(Exception):
    """A check that cannot run here (e.g. DALI is not installed); the message says why."""


# -- helpers -------------------------------------------------------------------------------------
def _main_dtype(op: BoundOp) -> str:
    return "uint8" if "uint8" in op.spec.dtypes else op.spec.dtypes[0]


def _main_layout(op: BoundOp) -> str:
    return "HWC" if "HWC" in op.spec.layouts else op.spec.layouts[0]


def _keys(seed: int, n: int = SHAPE[0]) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


def _run(op: BoundOp, images: Any, labels: Any, keys: Any, layout: str) -> list[np.ndarray]:
    inputs = (images,) if labels is None else (images, labels)
    with no_padding():  # each batch size its own program: the checks compare them
        out = op(*inputs, key=keys, layout=layout)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return math.inf
    if a.size == 0:
        return 0.0
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(np.nanmax(np.where(np.isnan(a) & np.isnan(b), 0.0, d)))


def _tolerance(dtype: Any) -> float:
    return 1.0 if np.dtype(dtype) == np.uint8 else 1e-5


def _assert_close(what: str, got: np.ndarray, want: np.ndarray, tol: float) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.dtype} {got.shape} vs {want.dtype} {want.shape}")
    diff = _max_diff(got, want)
    if diff > tol:
        bad = np.argwhere(np.abs(got.astype(np.float64) - want.astype(np.float64)) > tol)
        raise AssertionError(f"{what}: max |diff| {diff:g} > {tol:g} at {len(bad)} of {got.size} "
                             f"values, first at index {tuple(int(i) for i in bad[0])}")


def _to_layout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if src == dst:
        return x
    return x.transpose(0, 3, 1, 2) if dst == "CHW" else x.transpose(0, 2, 3, 1)


# -- API checks (no compilation) -----------------------------------------------------------------


def check_input_errors(op: BoundOp) -> None:
    """Wrong inputs raise augjax's typed errors: ``InputTypeError`` for a type that is not an
    array, ``InputError`` for a wrong rank, dtype, channel count or label shape,
    ``KeyRequiredError`` for a random op called without a key."""
    spec, problems = op.spec, []
    x = make_images(spec, _main_dtype(op), layout=_main_layout(op))
    labels = make_labels(op, len(x))
    key, layout = jax.random.key(0), _main_layout(op)

    def expect(label: str, error: type[BaseException], *inputs: Any, **kwargs: Any) -> None:
        kwargs = {"key": key, "layout": layout, **kwargs}
        try:
            op(*inputs, **kwargs)
        except error:
            return
        except Exception as err:  # noqa: BLE001 - reported
            problems.append(f"{label}: raised {type(err).__name__} instead of "
                            f"{error.__name__}: {err}")
            return
        problems.append(f"{label}: no error (expected {error.__name__})")

    def with_labels(images: Any, lab: Any = labels) -> tuple[Any, ...]:
        return (images,) if labels is None else (images, lab)

    expect("images as a Python list", InputTypeError, *with_labels(x.tolist()))
    expect("images as a str", InputTypeError, *with_labels("images"))
    expect("one image without a batch axis", InputError, *with_labels(x[0]))
    expect("int16 images", InputError, *with_labels(x.astype(np.int16)))
    if spec.channels is not None:
        bad = next(c for c in (2, 5, 1, 3, 4) if c not in spec.channels)
        shape = (len(x), SHAPE[1], SHAPE[2], bad) if layout == "HWC" else (
            len(x), bad, SHAPE[1], SHAPE[2])
        expect(f"{bad}-channel images", InputError,
               *with_labels(np.zeros(shape, x.dtype)))
    if spec.random:
        expect("no key", KeyRequiredError, *with_labels(x), key=None)
    if labels is not None:
        expect("labels missing", InputError, x)
        expect("labels as a Python list", InputTypeError, x, labels.tolist())
        expect("labels of the wrong length", InputError, x, labels[:1])
    assert not problems, f"op {spec.name!r}: " + "; ".join(problems)


# -- behaviour checks ------------------------------------------------------------------------------
def _contract_cases(op: BoundOp) -> list[tuple[str, str]]:
    """(dtype, layout) pairs covering every declared dtype and layout with as few compiled
    programs as possible: the main case, then the other dtype in the other layout."""
    spec = op.spec
    dtypes = [_main_dtype(op)] + [d for d in spec.dtypes if d != _main_dtype(op)]
    layouts = [_main_layout(op)] + [x for x in spec.layouts if x != _main_layout(op)]
    return [(dtypes[i % len(dtypes)], layouts[i % len(layouts)])
            for i in range(max(len(dtypes), len(layouts)))]


def check_output_contract(op: BoundOp) -> None:
    """Every declared dtype and layout gives the declared output dtype, shape and layout (the
    size from ``output_size``) and finite values; ops with labels return one label row per
    image."""
    spec = op.spec
    n, h, w = SHAPE
    c = channels_for(spec)
    oh, ow = spec.output_size(h, w, **op.kwargs) if spec.output_size is not None else (h, w)
    for dtype, layout in _contract_cases(op):
        x = make_images(spec, dtype, layout=layout)
        out = _run(op, x, make_labels(op, n), _keys(1), layout)
        after = spec.layout_after(layout, op.kwargs)
        want_shape = (n, oh, ow, c) if after == "HWC" else (n, c, oh, ow)
        want_dtype = np.dtype(spec.output_dtype or dtype)
        assert out[0].shape == want_shape and out[0].dtype == want_dtype, (
            f"{dtype} {layout} input {x.shape}: got {out[0].dtype} {out[0].shape}, the "
            f"declaration promises {want_dtype} {want_shape} ({after})")
        if want_dtype.kind == "f":
            assert np.isfinite(out[0]).all(), f"{dtype} {layout} input gave non-finite values"
        if "labels" in spec.outputs:
            assert len(out) == 2 and out[1].shape[0] == n, (
                f"expected (images, labels) with {n} labels, got {[o.shape for o in out]}")
            assert np.isfinite(out[1]).all(), "non-finite labels"


def check_jit_matches_eager(op: BoundOp) -> None:
    """The jitted, batched program equals the kernel run eagerly (not traced) on each sample
    (sample-level ops) or on the batch (batch-level ops), with the params ``sample`` gives for
    the same keys."""
    spec, kw = op.spec, op.kwargs
    layout, dtype = _main_layout(op), _main_dtype(op)
    x = make_images(spec, dtype, layout=layout)
    labels = make_labels(op, len(x))
    keys = _keys(2)
    got = _run(op, x, labels, keys, layout)
    hwc = _to_layout(x, layout, "HWC")
    params = jax.tree_util.tree_map(_on_host, _sample(op, x, labels, keys, layout))
    # The eager kernel gets fresh (uncommitted) arrays, each sample's sliced on the host: the
    # same values, and its primitives compile once for every kind of argument, not once for
    # the sampler's committed outputs and again for constants (and no slicing programs).
    if spec.level == "sample":
        outs = [op.run(jnp.asarray(hwc[i]), jax.tree_util.tree_map(
                    lambda v, i=i: jnp.asarray(v[i]) if isinstance(v, np.ndarray) else v[i],
                    params))
                for i in range(len(x))]
        want = [np.stack([np.asarray(o) for o in outs])]
    else:
        args = [jnp.asarray(hwc)] + ([jnp.asarray(labels)] if labels is not None else [])
        result = op.run_batch(tuple(args), jax.tree_util.tree_map(
            lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v, params))
        want = [np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))]
    want[0] = _to_layout(want[0], "HWC", spec.layout_after(layout, kw))
    for i, (g, e) in enumerate(zip(got, want)):
        _assert_close(f"{'images' if i == 0 else 'labels'}: jit vs eager", g, e,
                      _tolerance(g.dtype))


def _on_host(v: Any) -> Any:
    """A param leaf as a NumPy array (keys, which params must not hold, are left as they are
    for check_sample_apply to report)."""
    if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jax.dtypes.prng_key):
        return v
    return np.asarray(v)


def check_vmap_matches_loop(op: BoundOp) -> None:
    """For sample-level ops, the batched program equals the op applied to each sample alone
    (a batch of one) with that sample's key."""
    layout = _main_layout(op)
    x = make_images(op.spec, _main_dtype(op), layout=layout)
    keys = _keys(3)
    batched = _run(op, x, None, keys, layout)[0]
    for i in range(len(x)):
        alone = _run(op, x[i:i + 1], None, keys[i:i + 1], layout)[0]
        _assert_close(f"sample {i}: batch vs alone", batched[i:i + 1], alone,
                      _tolerance(alone.dtype))


def _sample(op: BoundOp, images: Any, labels: Any, keys: Any, layout: str) -> Any:
    inputs = (images,) if labels is None else (images, labels)
    return op.sample(*inputs, key=keys, layout=layout)


def _leaves_with_paths(params: Any) -> list[tuple[str, Any]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    return [(jax.tree_util.keystr(path), leaf) for path, leaf in flat]


def check_sample_apply(op: BoundOp) -> None:
    """Params-first: ``op.sample`` gives a pytree of arrays with a leading batch axis (values,
    never keys), the same for the same key; ``op.apply`` with them equals the call bitwise,
    also inside a chain (``compose(op).sample`` / ``.apply``); geometric ops give one finite
    3x3 matrix per sample."""
    spec = op.spec
    layout, dtype = _main_layout(op), _main_dtype(op)
    x = make_images(spec, dtype, layout=layout)
    labels = make_labels(op, len(x))
    keys = _keys(10)
    inputs = (x,) if labels is None else (x, labels)
    params = _sample(op, x, labels, keys, layout)
    assert isinstance(params, dict), f"sample returned {type(params).__name__}, not a dict"
    for path, leaf in _leaves_with_paths(params):
        assert isinstance(leaf, (jax.Array, np.ndarray)), f"params{path} is not an array"
        assert not jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key), (
            f"params{path} holds keys; params hold the drawn values")
        assert leaf.ndim >= 1 and leaf.shape[0] == len(x), (
            f"params{path} has shape {leaf.shape}, not a leading batch axis of {len(x)}")
    missing = [n for n in spec.per_sample if n not in params]
    assert not missing, f"per-sample parameters {missing} are missing from the params"
    again = _sample(op, x, labels, keys, layout)
    for (path, a), (_, b) in zip(_leaves_with_paths(params), _leaves_with_paths(again)):
        _assert_close(f"params{path}, same key twice", np.asarray(a), np.asarray(b), 0.0)
    called = _run(op, x, labels, keys, layout)
    applied = op.apply(*inputs, params=params, layout=layout)
    applied = [np.asarray(a) for a in (applied if isinstance(applied, tuple) else (applied,))]
    for i, (c, a) in enumerate(zip(called, applied)):
        _assert_close(f"output {i}: call vs apply(sample)", a, c, 0.0)
    from augjax.chain import compose

    chain = compose(op)
    chain_params = chain.sample(*inputs, key=keys, layout=layout)
    replay = chain.apply(*inputs, params=chain_params, layout=layout)
    replay = [np.asarray(a) for a in (replay if isinstance(replay, tuple) else (replay,))]
    for i, (c, a) in enumerate(zip(called, replay)):
        _assert_close(f"output {i}: op vs compose(op).apply(compose(op).sample)", a, c, 0.0)
    if spec.level == "sample" and spec.matrix is not None:
        from augjax.chain import matrices

        h, w = (x.shape[1], x.shape[2]) if layout == "HWC" else (x.shape[2], x.shape[3])
        c = x.shape[3] if layout == "HWC" else x.shape[1]
        # One program for the matrices (eagerly, each of their primitives compiles alone).
        m = np.asarray(jax.jit(lambda p: matrices(op, p, (h, w), c, dtype, len(x)))(params))
        assert m.shape == (len(x), 3, 3) and np.isfinite(m).all(), (
            f"matrix gave {m.shape} (finite: {np.isfinite(m).all()}), not (N, 3, 3) finite")


def check_differentiable(op: BoundOp) -> None:
    """On float32 images, ``jax.grad`` of the output's sum with respect to the image, through
    ``apply`` with sampled params (in ``jax.jit``, as a training step takes it), is finite and
    of the image's shape."""
    spec = op.spec
    layout = _main_layout(op)
    x = make_images(spec, "float32", layout=layout)
    labels = make_labels(op, len(x))
    params = _sample(op, x, labels, _keys(11), layout)

    def total(images):
        inputs = (images,) if labels is None else (images, labels)
        out = op.apply(*inputs, params=params, layout=layout)
        out = out[0] if isinstance(out, tuple) else out
        return jnp.sum(out)

    # Jitted: one program for the forward pass and its transpose (eagerly, ``jax.grad`` runs
    # the linearized and the transposed programs and each primitive around them apart).
    grad = np.asarray(jax.jit(jax.grad(total))(jnp.asarray(x)))
    assert grad.shape == x.shape, f"grad has shape {grad.shape}, not {x.shape}"
    assert np.isfinite(grad).all(), "the gradient with respect to the image is not finite"


def check_neutral_is_identity(op: BoundOp) -> None:
    """With every parameter that declares a neutral value set to it, the op returns its input
    (exactly for uint8, within 1e-6 for float32; checked for the first declared dtype)."""
    values = neutral_params(op)
    assert values is not None, "the op declares no identity (the check does not apply)"
    neutral = op.spec.bind(**values)
    layout = _main_layout(op)
    dtype = _main_dtype(op)
    x = make_images(op.spec, dtype, layout=layout)
    out = _run(neutral, x, make_labels(op, len(x)), _keys(4), layout)[0]
    _assert_close(f"{dtype} with neutral {values}", out, x, 0.0 if dtype == "uint8" else 1e-6)


def check_same_key_reproduces(op: BoundOp) -> None:
    """Two calls with equal keys give bitwise-equal outputs."""
    layout = _main_layout(op)
    x = make_images(op.spec, _main_dtype(op), layout=layout)
    labels = make_labels(op, len(x))
    a = _run(op, x, labels, _keys(5), layout)
    b = _run(op, x, labels, _keys(5), layout)
    for i, (u, v) in enumerate(zip(a, b)):
        _assert_close(f"output {i}, same key twice", u, v, 0.0)


def _interior_variant(op: BoundOp) -> BoundOp | None:
    """``op`` with every number parameter that sits at an end of its declared range moved to
    the middle (``p=1.0`` -> ``0.5``): a probability at 0 or 1 makes a random op deterministic."""
    moved = {}
    for name, p in op.spec.params.items():
        value = op.kwargs.get(name)
        if (p.kind in ("float", "int") and isinstance(value, (int, float))
                and p.low is not None and p.high is not None and p.low < p.high
                and value in (p.low, p.high)):
            mid = (p.low + p.high) / 2
            moved[name] = round(mid) if p.kind == "int" else mid
    if not moved:
        return None
    try:
        return op.spec.bind(**{**op.kwargs, **moved})
    except ParamError:
        return None


def check_different_keys_differ(op: BoundOp) -> None:
    """Different keys give different outputs (the op uses its key): one of 31 other keys
    changes the result, with the tested parameters or, failing that, with every number
    parameter that sits at an end of its range moved to the middle (``p=1`` -> ``0.5``)."""
    layout = _main_layout(op)
    x = make_images(op.spec, _main_dtype(op), layout=layout)
    labels = make_labels(op, len(x))
    tried = []
    for variant in (op, _interior_variant(op)):
        if variant is None:
            continue
        tried.append(variant.kwargs)
        first = _run(variant, x, labels, _keys(100), layout)
        for seed in range(101, 132):
            other = _run(variant, x, labels, _keys(seed), layout)
            if any(u.shape != v.shape or not np.array_equal(u, v) for u, v in zip(first, other)):
                return
    raise AssertionError(f"32 different keys all gave the same output with params "
                         f"{' and with '.join(map(str, tried))}: the op ignores its key (if "
                         f"these params make it deterministic, check a bound op with other "
                         f"values)")


def check_no_input_mutation(op: BoundOp) -> None:
    """NumPy inputs are unchanged after the call."""
    layout = _main_layout(op)
    x = make_images(op.spec, _main_dtype(op), layout=layout)
    labels = make_labels(op, len(x))
    x0, l0 = x.copy(), None if labels is None else labels.copy()
    _run(op, x, labels, _keys(6), layout)
    assert np.array_equal(x, x0), "the op modified its NumPy images"
    assert labels is None or np.array_equal(labels, l0), "the op modified its NumPy labels"


def check_no_recompilation(op: BoundOp) -> None:
    """Calls with new data and keys of the same shapes, and an equal op bound again, reuse the
    compiled program: augjax neither traces one (``augjax.trace_count()`` does not move) nor
    loads one from its program store."""
    layout = _main_layout(op)
    x = make_images(op.spec, _main_dtype(op), layout=layout)
    labels = make_labels(op, len(x))
    _run(op, x, labels, _keys(7), layout)
    before = trace_count() + load_count()
    _run(op, make_images(op.spec, _main_dtype(op), layout=layout, seed=9), labels, _keys(8),
         layout)
    try:
        again = op.spec.bind(**op.kwargs)
    except ParamError as err:
        raise AssertionError(f"the normalised parameters {op.kwargs} are refused when bound "
                             f"again ({err}): Param.check must accept its own output") from err
    _run(again, x, labels, _keys(9), layout)
    traced = trace_count() + load_count() - before
    assert traced == 0, (f"{traced} new trace(s) or stored program(s) loaded for calls with the same shapes (are the "
                         f"parameters hashable and normalised? {op.kwargs})")


#: DALI vs array, for ops that DALI resamples itself (a ``ragged=`` window that resizes, read by
#: ``fn.resize``): the same windows, DALI's resampling, which differs most at the box's border
#: (docs/guide/ragged.md: mean 0.13 level, interior within 1, border pixels up to 11).
DALI_RESAMPLE_TOLERANCE = 16.0


def _dali_tolerance(op: BoundOp, dtype: str, layout: str) -> float:
    from augjax._runtime.ragged.prefix import window_structure

    if layout != "HWC" or op.spec.ragged is None or window_structure((op,)).size is None:
        return 0.0
    return DALI_RESAMPLE_TOLERANCE / (255.0 if dtype == "float32" else 1.0)


def check_dali_matches_array(op: BoundOp) -> None:
    """In a DALI CPU pipeline, with given per-sample seeds, the op gives bitwise the output of
    the array path with ``key=augjax.keys_from_seeds(seeds)`` (for the first declared dtype:
    the bridge treats dtypes alike, and each compile costs). Ops that DALI resamples itself
    (``ragged=`` windows that resize) are within :data:`DALI_RESAMPLE_TOLERANCE` levels."""
    reason = dali_available()
    if reason is not None:
        raise CheckSkipped(reason)
    layout = _main_layout(op)
    seeds = np.random.default_rng(11).integers(0, 2**30, (SHAPE[0], 2), dtype=np.int32)
    dtype = _main_dtype(op)
    x = make_images(op.spec, dtype, layout=layout, seed=12)
    labels = make_labels(op, len(x))
    dali = run_dali(op, x, labels, seeds, layout)
    array = _run(op, x, labels, keys_from_seeds(seeds), layout)
    assert len(dali) == len(array), f"DALI gave {len(dali)} outputs, arrays {len(array)}"
    for i, (d, a) in enumerate(zip(dali, array)):
        _assert_close(f"{dtype} output {i}: DALI vs array", d, a,
                      _dali_tolerance(op, dtype, layout))


#: Every check, in the order the kit runs them, with the condition (on the bound op) under
#: which it applies.
CHECKS: tuple[tuple[Callable[[BoundOp], None], Callable[[BoundOp], bool]], ...] = (
    (check_declaration, lambda op: True),
    (check_param_validation, lambda op: True),
    (check_input_errors, lambda op: True),
    (check_output_contract, lambda op: True),
    (check_jit_matches_eager, lambda op: True),
    (check_sample_apply, lambda op: True),
    (check_geometry, moves_pixels),
    (check_targets_stay, targets_stay),
    (check_differentiable, lambda op: "float32" in op.spec.dtypes
     and op.spec.output_dtype in (None, "float32")),
    (check_vmap_matches_loop, lambda op: op.spec.level == "sample"),
    (check_neutral_is_identity, lambda op: neutral_params(op) is not None),
    (check_same_key_reproduces, lambda op: op.spec.random),
    (check_different_keys_differ, lambda op: op.spec.random),
    (check_no_input_mutation, lambda op: True),
    (check_no_recompilation, lambda op: True),
    (check_dali_matches_array, lambda op: True),
)


def applicable_checks(op: BoundOp) -> list[Callable[[BoundOp], None]]:
    """The checks that apply to ``op``: by level, randomness and declared neutral values."""
    return [check for check, applies in CHECKS if applies(op)]
