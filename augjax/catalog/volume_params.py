"""Validation and draws shared by the volume ops (``augjax/catalog/volume_*.py``): numbers,
ranges, per-axis ranges, probabilities, and batchgeneratorsv2's ``BGContrast`` draw."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from augjax.errors import ParamError

__all__ = ["axes_ranges", "contrast_draw", "number", "pair", "probability", "uniform"]


def number(op: str, name: str, v: Any, low: float | None = None) -> float:
    """A finite number (>= ``low``), else ParamError."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or (low is not None and v < low):
        bound = f" >= {low}" if low is not None else ""
        raise ParamError(f"{op}: parameter '{name}' expects a finite number{bound}, got {v!r}",
                         op=op, param=name)
    return float(v)


def probability(op: str, name: str, v: Any) -> float:
    v = number(op, name, v, 0.0)
    if v > 1.0:
        raise ParamError(f"{op}: parameter '{name}' expects a probability in [0, 1], got {v!r}",
                         op=op, param=name)
    return v


def pair(op: str, name: str, v: Any, low: float | None = None, symmetric: bool = False
         ) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo <= hi``; a number ``f`` is ``(-f, f)`` when ``symmetric`` (MONAI's
    ranges), else ``(f, f)``."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        f = number(op, name, v, 0.0 if symmetric else low)
        return (-f, f) if symmetric else (f, f)
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        raise ParamError(f"{op}: parameter '{name}' expects a number or (low, high), got {v!r}",
                         op=op, param=name)
    lo, hi = (number(op, name, x, low) for x in v)
    if lo > hi:
        raise ParamError(f"{op}: parameter '{name}' expects low <= high, got {v!r}", op=op,
                         param=name)
    return (lo, hi)


def axes_ranges(op: str, name: str, v: Any, n: int = 3) -> tuple[tuple[float, float], ...]:
    """One range per axis: a number or pair for every axis, or ``n`` of them (MONAI's
    ``rotate_range=(rx, ry, rz)``)."""
    if isinstance(v, (tuple, list)) and len(v) == n and n != 2:
        return tuple(pair(op, name, x, symmetric=True) for x in v)
    return (pair(op, name, v, symmetric=True),) * n


def uniform(key: jax.Array, ranges: Any, shape: tuple[int, ...] = ()) -> jax.Array:
    """Uniform draws in ``ranges`` (a pair, or a sequence of pairs: one per last axis)."""
    lo, hi = jnp.asarray(ranges, jnp.float32).T
    u = jax.random.uniform(key, shape + lo.shape)
    return lo + u * (hi - lo)


def contrast_draw(key: jax.Array, low: float, high: float, shape: tuple[int, ...] = ()
                  ) -> jax.Array:
    """batchgeneratorsv2's ``BGContrast((low, high))``: with probability 0.5 (when ``low <
    1``) uniform in ``(low, 1)``, else uniform in ``(max(low, 1), high)``."""
    k_side, k_value = jax.random.split(key)
    below = (jax.random.uniform(k_side, shape) < 0.5) & (low < 1.0)
    u = jax.random.uniform(k_value, shape)
    lo = jnp.where(below, low, max(low, 1.0))
    hi = jnp.where(below, 1.0, high)
    return lo + u * (hi - lo)
