"""What the kit feeds an op: parameter values derived from the declaration, and small inputs.

The kit tests an op with its defaults, except that

- a required parameter without a default gets a valid value from its declared range
  (``num_classes=10``, ``size=(8, 10)``, ...), and
- a parameter whose default is its neutral value (so the op would do nothing) gets a value away
  from neutral (its largest-magnitude value, or a point halfway to the end of its range), so that
  the checks exercise the op's real work.

Pass a bound op (``spec.bind(...)``) to the kit to choose the values yourself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augjax._core.spec import OpSpec
from augjax._runtime.execution.bound import BoundOp
from augjax.errors import ParamError

__all__ = [
    "SHAPE",
    "channels_for",
    "example_op",
    "example_params",
    "make_images",
    "make_labels",
    "neutral_params",
    "num_classes",
]

#: Batch, height, width of the kit's images (small and not square, so a swapped H/W shows).
SHAPE = (2, 12, 14)


def _valid(op: str, name: str, p: Any, candidates: list[Any]) -> tuple[bool, Any]:
    for value in candidates:
        try:
            return True, p.check(op, name, value)
        except (ParamError, TypeError, ValueError, ArithmeticError):
            continue
    return False, None


def _required_candidates(p: Any) -> list[Any]:
    lo, hi = p.low, p.high
    mid = None if lo is None or hi is None else (lo + hi) / 2
    if p.kind == "size":
        return [(8, 10), 8, (int(lo or 1), int(lo or 1))]
    if p.kind == "int":
        return [10, *(int(v) for v in (lo, hi, mid) if v is not None), 1, 0]
    if p.kind in ("float", "float_or_pair"):
        return [v for v in (mid, lo, hi, 0.5, 1.0, 0.0) if v is not None]
    if p.kind == "pair":
        return [(lo, hi)] if lo is not None and hi is not None else [(0.25, 0.75), (0.0, 1.0)]
    if p.kind == "floats":
        return [(0.5,), (1.0,)]
    if p.kind == "str":
        return list(p.choices or ())
    return [True, False]


def _away_from_neutral(p: Any) -> list[Any]:
    n, lo, hi = p.neutral, p.low, p.high
    out: list[Any] = []
    if p.magnitude is not None:
        m0, m1 = p.magnitude
        out += [m1, (m0 + m1) / 2]
    if p.kind in ("float", "float_or_pair", "floats", "int") and isinstance(n, (int, float)):
        if hi is not None and math.isfinite(hi) and hi != n:
            out.append(n + (hi - n) / 2)
        if lo is not None and math.isfinite(lo) and lo != n:
            out.append(n - (n - lo) / 2)
        out += [n + 0.5, n + 1, n - 0.5, n - 1]
        if p.kind == "int":
            out = [round(v) for v in out if round(v) != n]
    elif p.kind == "bool":
        out.append(not n)
    elif p.kind == "str":
        out += [c for c in p.choices or () if c != n]
    elif p.kind == "pair" and lo is not None and hi is not None:
        out.append((lo + (hi - lo) / 4, hi - (hi - lo) / 4))
    return out


def _is_neutral(op: str, name: str, p: Any, value: Any) -> bool:
    if p.neutral is None:
        return False
    try:
        return p.check(op, name, p.neutral) == value
    except (ParamError, TypeError, ValueError):
        return False


def example_params(spec: OpSpec) -> dict[str, Any]:
    """The parameter values the kit uses for ``spec`` (see the module docstring)."""
    values: dict[str, Any] = {}
    for name, p in spec.params.items():
        if p.required and p.default is None:
            ok, value = _valid(spec.name, name, p, _required_candidates(p))
            if ok:
                values[name] = value
            continue
        try:
            default = p.check(spec.name, name, p.default)
        except ParamError:
            continue  # reported by check_declaration
        if _is_neutral(spec.name, name, p, default):
            ok, value = _valid(spec.name, name, p, _away_from_neutral(p))
            if ok and not _is_neutral(spec.name, name, p, value):
                values[name] = value
    return values


def example_op(spec: OpSpec) -> BoundOp:
    """``spec`` bound to :func:`example_params` (or to only the required picks, should the
    combination be refused)."""
    try:
        return spec.bind(**example_params(spec))
    except ParamError:
        required = {k: v for k, v in example_params(spec).items() if spec.params[k].required}
        return spec.bind(**required)


def neutral_params(op: BoundOp) -> dict[str, Any] | None:
    """``op``'s parameters with every parameter that declares a neutral value set to it, or
    ``None`` when the op does not declare itself an identity for those values: no neutral
    value, a magnitude parameter without one, or a declared change of size, dtype or layout."""
    spec = op.spec
    if spec.output_size is not None or spec.output_dtype is not None:
        return None
    declared = {k: p for k, p in spec.params.items() if p.neutral is not None}
    if not declared:
        return None
    if any(p.magnitude is not None and p.neutral is None for p in spec.params.values()):
        return None
    values = dict(op.kwargs)
    for name, p in declared.items():
        try:
            values[name] = p.check(spec.name, name, p.neutral)
        except ParamError:
            return None  # reported by check_declaration
    if any(spec.layout_after(layout, values) != layout for layout in spec.layouts):
        return None
    return values


def channels_for(spec: OpSpec) -> int:
    """A channel count the op accepts: 3 where allowed, else its first declared one."""
    if spec.channels is None or 3 in spec.channels:
        return 3
    return spec.channels[0]


def num_classes(op: BoundOp) -> int:
    """The number of classes the kit's labels use (the op's ``num_classes`` if it has one)."""
    value = op.kwargs.get("num_classes")
    return int(value) if isinstance(value, int) and value > 0 else 2


def make_images(spec: OpSpec, dtype: str, *, layout: str = "HWC", seed: int = 0,
                shape: tuple[int, int, int] = SHAPE) -> np.ndarray:
    """A batch the op accepts: uint8 levels, or float32 in [0, 1], in ``layout``."""
    n, h, w = shape
    c = channels_for(spec)
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        x = rng.integers(0, 256, (n, h, w, c), dtype=np.uint8)
    else:
        x = rng.random((n, h, w, c), dtype=np.float32)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if layout == "CHW" else x


def make_labels(op: BoundOp, n: int) -> np.ndarray | None:
    """Integer class ids ``(n,)`` for ops that take labels, else ``None``."""
    if "labels" not in op.spec.inputs:
        return None
    return (np.arange(n, dtype=np.int32) * 3 + 1) % num_classes(op)
