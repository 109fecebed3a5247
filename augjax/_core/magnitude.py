"""The magnitude model: how a policy turns a magnitude level into an op's parameter value.

An op declares its map on the parameter (``Param(magnitude=...)``); policies read it there,
and the reference tables (:mod:`augjax.policies.tables`) only override what a reference does
differently.

Every policy draws, per op application, a *level* and turns it into a fraction
``t = level / levels`` of the largest magnitude: ``levels = num_magnitude_bins - 1`` for the
torchvision / DALI bin scale (``m=9`` of 31 bins is ``t = 9/30``) and ``levels = 10`` for timm's
``M`` scale (``m9`` is ``t = 0.9``; timm's ``_LEVEL_DENOM``). A :class:`MagnitudeMap` then gives
the value, in the order the reference implementations compute it::

    u = lerp(start * S, end * S, t)      # S = image width / height for "per" maps, else 1
    u = clip(u, clip)                    # e.g. timm's min(256, ...) on solarize
    u = Q(u)                             # "trunc" (int()), "round" (half to even), or none
    u = -u  with probability 1/2         # signed maps ("randomly negate")
    v = plus + times * u                 # e.g. torchvision's 1 + magnitude for enhance ops
    v = clip(v, bounds)                  # e.g. timm's max(0.1, ...) on increasing enhance ops
    v = draw_from + (v - draw_from) * U  # only timm GaussianBlurRand: uniform in [draw_from, v]

Integer levels (every policy without magnitude noise) use tables computed here in float64, as
timm does in Python; ``f32=True`` maps compute the lerp as ``torch.linspace(start, end, levels
+ 1)`` does in float32 (:func:`torch_linspace`), as torchvision's tables are made. Continuous
levels (``mstd`` noise) use the same formula in float32 inside the program.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

__all__ = ["MagnitudeMap", "formula", "linear", "torch_linspace"]

_QUANTIZE = (None, "trunc", "round")
_PER = (None, "width", "height")


def torch_linspace(start: float, end: float, steps: int, i: int) -> float:
    """Element ``i`` of ``torch.linspace(start, end, steps)`` (float32, ATen's CPU kernel):
    ``start`` and ``end`` rounded to float32, ``step = (end - start) / (steps - 1)`` in float32,
    then ``start + step * i`` for ``i < steps // 2`` and ``end - step * (steps - 1 - i)`` above,
    each a fused multiply-add rounded once to float32 (the kernel as compiled for AVX2/AVX512
    contracts it; checked against torch 2.14 on every torchvision policy table). The fused
    product is exact in float64 (24-bit step times an index below 2**29) and the float64 sum
    is exact for these tables' magnitudes, so one rounding to float32 gives the FMA result.
    """
    f32 = np.float32
    lo, hi = f32(start), f32(end)
    if steps == 1:
        return float(lo)
    step = f32(f32(hi - lo) / f32(steps - 1))
    if i < steps // 2:
        return float(f32(float(step) * i + float(lo)))
    return float(f32(float(hi) - float(step) * (steps - 1 - i)))


@dataclasses.dataclass(frozen=True)
class MagnitudeMap:
    """A level fraction ``t`` -> parameter value map (see the module docstring for the order)."""

    start: float
    end: float
    signed: bool = False
    quantize: str | None = None
    clip: tuple[float | None, float | None] = (None, None)
    times: float = 1.0
    plus: float = 0.0
    bounds: tuple[float | None, float | None] = (None, None)
    per: str | None = None
    f32: bool = False
    draw_from: float | None = None

    def __post_init__(self) -> None:
        if self.quantize not in _QUANTIZE or self.per not in _PER:
            raise ValueError(f"bad MagnitudeMap {self!r}")

    @property
    def neutral(self) -> float:
        """The value at level 0 (for unsigned maps) / the centre of reflection (signed maps)."""
        return self.plus

    def _side(self, height: int, width: int) -> float:
        return {None: 1.0, "width": float(width), "height": float(height)}[self.per]

    def value(self, level: float, denominator: float, negative: bool, height: int,
              width: int) -> float:
        """The value at ``level`` (``t = level / denominator``), in float64 as the references
        compute it in Python; ``f32`` maps at a whole level of a whole denominator give element
        ``level`` of ``torch.linspace(lo, hi, denominator + 1)`` (:func:`torch_linspace`), at
        other levels the float64 lerp rounded to float32."""
        side = self._side(height, width)
        lo, hi = self.start * side, self.end * side
        steps = denominator + 1
        if self.f32 and float(level).is_integer() and float(steps).is_integer() \
                and 0 <= level < steps:
            u = torch_linspace(lo, hi, int(steps), int(level))
        else:
            u = lo + (hi - lo) * (level / denominator)
            if self.f32:
                u = float(np.float32(u))
        u = _clip(u, self.clip, max, min)
        if self.quantize == "trunc":
            u = float(math.trunc(u))
        elif self.quantize == "round":
            u = float(np.round(u))
        if self.signed and negative:
            u = -u
        return _clip(self.plus + self.times * u, self.bounds, max, min)

    def table(self, levels: int, denominator: float, height: int, width: int) -> np.ndarray:
        """Values at the integer levels ``0..levels``: shape ``(2, levels + 1)`` float32, row 0
        positive, row 1 negated (equal rows for unsigned maps)."""
        return np.array(
            [[self.value(i, denominator, neg, height, width) for i in range(levels + 1)]
             for neg in (False, True)],
            np.float32,
        )

    def traced(self, t: Any, negative: Any, height: int, width: int) -> Any:
        """The same map in float32 for a traced (continuous) ``t``."""
        import jax.numpy as jnp

        side = self._side(height, width)
        lo, hi = self.start * side, self.end * side
        u = lo + (hi - lo) * t.astype(jnp.float32)
        u = _clip(u, self.clip, jnp.maximum, jnp.minimum)
        if self.quantize == "trunc":
            u = jnp.trunc(u)
        elif self.quantize == "round":
            u = jnp.round(u)
        if self.signed:
            u = jnp.where(negative, -u, u)
        return _clip(self.plus + self.times * u, self.bounds, jnp.maximum, jnp.minimum)

    def finish(self, v: Any, key: Any) -> Any:
        """Applies the random draw of ``draw_from`` maps (identity for the others)."""
        import jax

        if self.draw_from is None:
            return v
        return self.draw_from + (v - self.draw_from) * jax.random.uniform(key, ())


def _clip(x: Any, bounds: tuple[float | None, float | None], hi_fn, lo_fn) -> Any:
    lo, hi = bounds
    if lo is not None:
        x = hi_fn(x, lo)
    if hi is not None:
        x = lo_fn(x, hi)
    return x


def _g(x: float) -> str:
    return f"{x:g}"


def _clip_text(text: str, bounds: tuple[float | None, float | None]) -> str:
    lo, hi = bounds
    if lo is not None and hi is not None:
        return f"clip({text}, {_g(lo)}, {_g(hi)})"
    if lo is not None:
        return f"max({text}, {_g(lo)})"
    if hi is not None:
        return f"min({text}, {_g(hi)})"
    return text


def formula(m: MagnitudeMap) -> str:
    """A magnitude map as a formula of ``t`` (the level as a fraction of the largest), e.g.
    ``1 ± lerp(0, 0.9, t)``; ``±`` marks maps that policies negate with probability 1/2."""
    u = f"lerp({_g(m.start)}, {_g(m.end)}, t)"
    if m.per:
        u = f"{u} * {m.per}"
    u = _clip_text(u, m.clip)
    if m.quantize:
        u = f"{m.quantize}({u})"
    if m.times != 1.0:
        u = f"{_g(m.times)} * {u}"
    sign = "±" if m.signed else ""
    if m.plus:
        v = f"{_g(m.plus)} {sign or '+'} {u}"
    else:
        v = f"{sign}{u}"
    v = _clip_text(v, m.bounds)
    if m.draw_from is not None:
        v = f"U({_g(m.draw_from)}, {v})"
    return v


def linear(start: float, end: float, **kw: Any) -> MagnitudeMap:
    """Shorthand for :class:`MagnitudeMap`."""
    return MagnitudeMap(float(start), float(end), **kw)


#: The enhance ops' map (brightness, contrast, saturation, sharpness): ``1 +- 0.9 t``,
#: torchvision RandAugment's ``1 + linspace(0, 0.9)``, written as offsets so that timm's and
#: DALI's tables (which compute ``1 + 0.9 t``) get the same float64 values.
ENHANCE = MagnitudeMap(0.0, 0.9, signed=True, plus=1.0)
