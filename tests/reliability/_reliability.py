"""Shared helpers of the reliability suite: the ops that exist when the tests run, valid
parameter values derived from each op's declared Params, and calling any op generically.

Everything here is derived from the op declarations (``OpSpec``: level, inputs, dtypes, layouts,
channels, params with kinds, ranges, choices), so the tests cover every op registered when they
run, built-in or from an installed pack, without a list of names.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import numpy as np

import augjax
from augjax.errors import AugjaxError, ParamError

#: Bound used for a side of a numeric range that the op leaves open (floats), and the span of
#: an open-ended integer range. Beyond it values are absurd rather than hostile (std=1e-300 makes
#: normalize overflow to inf, which is arithmetic, not a bug).
OPEN_BOUND = 1e3
OPEN_INT_SPAN = 16


def op_table() -> dict[str, tuple[Any, str | None]]:
    """``name -> (spec or None, reason it failed to load or None)`` for every listed op."""
    table = {}
    for name in augjax.list_ops():
        try:
            table[name] = (augjax.get_op(name), None)
        except AugjaxError as err:  # a plugin that fails to load is reported by the registry
            table[name] = (None, f"{type(err).__name__}: {err}")
    return table


OPS = op_table()


def op_names(pred=lambda spec: True) -> list[str]:
    """Names of the ops (loadable or not) for ``pytest.mark.parametrize``; ops that failed to
    load are kept so that the test reports them (see :func:`spec_or_skip`)."""
    return [n for n, (spec, _) in OPS.items() if spec is None or pred(spec)]


def spec_or_skip(name: str):
    """The spec of op ``name``, or a pytest skip that says why it cannot be loaded."""
    import pytest

    spec, reason = OPS[name]
    if spec is None:
        pytest.skip(f"op {name!r} is listed but does not load: {reason}")
    return spec


def is_mixing(spec) -> bool:
    """Batch-level ops that take labels (mixup and friends)."""
    return "labels" in spec.inputs


def has_num_classes(spec) -> bool:
    return "num_classes" in spec.params


def channels_for(spec, prefer: int = 3) -> int:
    """A channel count the op accepts (RGB when it can)."""
    if spec.channels is None or prefer in spec.channels:
        return prefer
    return spec.channels[0]


def required_value(spec, name: str, p, hw: tuple[int, int] = (16, 16),
                   num_classes: int | None = None) -> Any:
    """A valid value for a required param, from its declaration: ``num_classes`` as given, a
    ``size`` about half the image, else the first of (mid-range, low, high, 1) that checks."""
    if name == "num_classes" and num_classes is not None:
        return num_classes
    lo = p.low if p.low is not None else 1
    hi = p.high if p.high is not None else lo + 16
    if p.kind == "size":
        cands = [tuple(int(min(max(v // 2, lo), hi)) for v in hw)]
    else:
        mid = (lo + hi) / 2
        cands = [int(mid) if p.kind in ("int", "int_or_pair") else mid, lo, hi, 1]
        if p.kind in ("pair", "float_or_pair"):
            cands = [(lo, hi)] + cands
        if p.kind == "int_or_pair":
            cands = [(int(lo), int(hi))] + cands
        if p.kind == "floats":
            cands = [(float(mid),)]
        if p.kind == "str":
            cands = list(p.choices or ())
        if p.kind == "bool":
            cands = [False]
    for value in cands:
        try:
            return p.check(spec.name, name, value)
        except ParamError:
            continue
    raise NotImplementedError(f"{spec.name}: no generic value for required {name!r}")


def base_params(spec, num_classes: int | None = None,
                hw: tuple[int, int] = (16, 16)) -> dict[str, Any]:
    """Values for the op's required params (``num_classes``, crop sizes, ...)."""
    return {name: required_value(spec, name, p, hw, num_classes)
            for name, p in spec.params.items() if p.required}


def _lively(spec, name: str, p) -> Any:
    """A value that makes the parameter do something when its default is neutral (e.g.
    color_jitter's 0 ranges), so that alignment tests see per-sample randomness."""
    if p.kind not in ("float", "float_or_pair") or p.default != p.neutral or p.neutral is None:
        return p.default
    lo = p.low if p.low is not None else p.neutral - 1.0
    hi = p.high if p.high is not None else p.neutral + 1.0
    span = min(hi - p.neutral, p.neutral - lo) if lo < p.neutral < hi else (hi - lo)
    if p.kind == "float_or_pair":
        if lo < p.neutral < hi:
            return (p.neutral - span / 2, p.neutral + span / 2)
        return (lo, min(hi, lo + 1.0))
    return min(hi, p.neutral + max(span, 0.0) / 2) if hi > p.neutral else lo


def lively_params(spec, num_classes: int | None = None,
                  hw: tuple[int, int] = (16, 16)) -> dict[str, Any]:
    """Valid params with every neutral-by-default float moved off its neutral value where the
    op accepts that (checked with :meth:`Param.check`); required params filled in (sizes for
    images of ``hw``)."""
    out = base_params(spec, num_classes, hw)
    for name, p in spec.params.items():
        if p.required:
            continue
        value = _lively(spec, name, p)
        if value is p.default:
            continue
        try:
            out[name] = p.check(spec.name, name, value)
        except ParamError:
            pass
    spec.bind(**out)  # raises if the combination is invalid
    return out


def call(spec, images, labels=None, *, key=None, layout="HWC", **params):
    """Applies ``spec`` on arrays; returns ``(images, labels or None)``."""
    kw = {"key": key} if spec.random else {}
    if is_mixing(spec):
        out, soft = spec(images, labels, layout=layout, **kw, **params)
        return out, soft
    return spec(images, layout=layout, **kw, **params), None


def expected_shape(spec, shape, layout, params) -> tuple[int, ...]:
    """The declared output shape for an input ``shape`` in ``layout``."""
    n = shape[0]
    if layout == "HWC":
        h, w, c = shape[1:]
    else:
        c, h, w = shape[1:]
    bound = spec.bind(**params)
    if spec.output_size is not None:
        h, w = spec.output_size(h, w, **bound.kwargs)
    out_layout = spec.layout_after(layout, bound.kwargs)
    return (n, h, w, c) if out_layout == "HWC" else (n, c, h, w)


def expected_dtype(spec, dtype) -> np.dtype:
    return np.dtype(spec.output_dtype or dtype)


def random_images(n, h, w, c, dtype, seed=0, layout="HWC"):
    """Distinct random images (uint8 levels or float32 in [0, 1])."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.uint8:
        x = rng.integers(0, 256, (n, h, w, c), dtype=np.uint8)
    else:
        x = rng.random((n, h, w, c), dtype=np.float32)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if layout == "CHW" else x


def keys(n: int, seed: int = 0) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


# -- hypothesis strategies derived from Params ---------------------------------------------------
def _num(p, integral: bool):
    from hypothesis import strategies as st

    lo, hi = p.low, p.high
    if integral:
        lo = math.ceil(lo) if lo is not None else -OPEN_INT_SPAN
        hi = math.floor(hi) if hi is not None else max(lo, 0) + OPEN_INT_SPAN
        return st.one_of(st.sampled_from(sorted({lo, hi})), st.integers(lo, hi))
    lo = float(lo) if lo is not None else -OPEN_BOUND
    hi = float(hi) if hi is not None else max(lo, 0.0) + OPEN_BOUND
    return st.one_of(
        st.sampled_from(sorted({lo, hi})),
        st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    )


def param_strategy(spec, name: str, p, channels: int):
    """Values valid for one Param by its declaration (kind, range, choices, optional); values
    that its own ``validate`` rejects are replaced by the default."""
    from hypothesis import strategies as st

    kind = p.kind
    if kind == "bool":
        base = st.booleans()
    elif kind == "str":
        base = st.sampled_from(p.choices)
    elif kind in ("float", "int"):
        base = _num(p, kind == "int")
    elif kind == "pair":
        base = st.tuples(_num(p, False), _num(p, False)).map(lambda t: tuple(sorted(t)))
    elif kind == "float_or_pair":
        base = st.one_of(
            _num(p, False),
            st.tuples(_num(p, False), _num(p, False)).map(lambda t: tuple(sorted(t))),
        )
    elif kind == "int_or_pair":
        base = st.one_of(
            _num(p, True),
            st.tuples(_num(p, True), _num(p, True)).map(lambda t: tuple(sorted(t))),
        )
    elif kind == "floats":
        base = st.one_of(st.lists(_num(p, False), min_size=1, max_size=1),
                         st.lists(_num(p, False), min_size=channels, max_size=channels)
                         ).map(tuple)
    elif kind == "size":
        one = _num(p, True)
        base = st.one_of(one, st.tuples(one, one))
    else:  # a kind added later: its default
        base = st.just(p.default)
    if p.optional:
        base = st.one_of(st.none(), base)

    def valid(value):
        try:
            p.check(spec.name, name, value)
            return value
        except ParamError:
            return p.default

    return base.map(valid)


def params_strategy(spec, channels: int, num_classes: int | None,
                    hw: tuple[int, int] = (16, 16)):
    """A strategy of full parameter dicts for ``spec`` (required params filled in)."""
    from hypothesis import strategies as st

    fields = {}
    for name, p in spec.params.items():
        if p.required:
            continue
        fields[name] = param_strategy(spec, name, p, channels)
    base = base_params(spec, num_classes, hw)
    return st.fixed_dictionaries(fields).map(lambda d: {**d, **base})


# -- the shared per-op case --------------------------------------------------------------------
def _distinct(out) -> bool:
    return len({row.tobytes() for row in np.asarray(out).reshape(len(out), -1)}) > 1


def non_degenerate(spec, params, x, k):
    """``(params, out)`` where distinct inputs give distinct outputs, so that alignment checks
    can tell samples apart. Defaults sized for 224-pixel images can blank a small one (a grid
    mask tile of 100): then each numeric param is tried at its declared lower bound and
    mid-range until the outputs differ. Returns ``(params, None)`` when none does."""
    out, _ = call(spec, x, key=k, **params)
    if _distinct(out):
        return params, np.asarray(out)
    for pname, p in spec.params.items():
        if p.required or p.kind not in ("float", "int", "float_or_pair") or p.low is None:
            continue
        hi = p.high if p.high is not None else p.low + 1
        for value in (p.low, (p.low + hi) / 2):
            try:
                trial = {**params, pname: p.check(spec.name, pname, value)}
                out, _ = call(spec, x, key=k, **trial)
            except ParamError:
                continue
            if _distinct(out):
                return trial, np.asarray(out)
    return params, None


#: Shape of the shared case: a batch of 6 square images (rot90 with a random k needs square).
CASE_N, CASE_HW = 6, 20


@functools.cache
def sample_case(name: str):
    """The shared case of a sample-level op: ``(params, x, keys, out)`` for float32 images (the
    op's first dtype if it has no float32) of ``(6, 20, 20, C)`` and lively params. The
    alignment and hostile tests both run it, so its program compiles once per session."""
    spec = OPS[name][0]
    dtype = "float32" if "float32" in spec.dtypes else spec.dtypes[0]
    params = lively_params(spec, hw=(CASE_HW, CASE_HW))
    x = random_images(CASE_N, CASE_HW, CASE_HW, channels_for(spec), dtype, seed=1)
    k = keys(CASE_N, seed=2)
    params, out = non_degenerate(spec, params, x, k)
    return params, x, k, out
