"""How an op joins a family that a policy layer computes once for every sample (internal).

A policy layer applies one op per sample, chosen among its op space. Ops of one *family* share
their costly part, so the layer computes each family once and selects per sample
(:mod:`augjax.policies._families`). An op declares its membership with :func:`fused` on its
spec; the member gives the per-sample part of the family computation, built from the same
functions as the op's kernel, so that the layer's pixels are the op's own:

- :class:`Affine`: the op is one warp by per-sample coefficients (torchvision's centred
  inverse, or PIL's affine data for ``convention="pil"``), plus exact paths (PIL rotate's
  copies and transposes) as a code.
- :class:`Blend`: ``x * f + d * (1 - f)`` with a degenerate image ``d`` (zeros, the mean
  gray, the gray, the smoothed copy: sharpness's own formula), clamped and truncated.
- :class:`Tone`: a level map given statistics of the image (its range, mean gray, histogram
  table): on uint8 every one is a per-channel 256-entry table, applied by one lookup.

:class:`ImageStats` holds those statistics of one image, computed on first use.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from augjax.catalog._tv_color import gray_for_blend, gray_planes
from augjax.kernels.geometry import EXACT_NONE
from augjax.kernels.histogram import equalize_lut, histogram, value_range
from augjax.kernels.enhance import contrast_mean
from augjax.kernels.pixels import from_unit, is_int

__all__ = ["EXACT_NONE", "Affine", "Blend", "ImageStats", "Tone", "fused"]


@dataclasses.dataclass(frozen=True)
class Affine:
    """A warp member. ``coeffs(params, height, width, **config)`` gives the (6,) float32
    coefficients the op warps by under its ``convention``; ``exact(params, height, width,
    **config)`` (optional) the int32 exact-path code
    (:data:`augjax.kernels.geometry.EXACT_NONE` and the others)."""

    coeffs: Callable[..., jax.Array]
    exact: Callable[..., jax.Array] | None = None


@dataclasses.dataclass(frozen=True)
class Blend:
    """A blend member: ``degenerate`` is ``"zero"``, ``"mean"`` (the mean gray),
    ``"gray"`` or ``"smooth"`` (sharpness's smoothed copy and formula); the factor is
    ``params[param]``."""

    degenerate: str
    param: str = "factor"


@dataclasses.dataclass(frozen=True)
class Tone:
    """A level-map member: ``fn(values, params, stats, **config)`` maps values of the image's
    dtype given the image's :class:`ImageStats`; None means the op's kernel is itself
    pointwise. ``stats`` names the :class:`ImageStats` properties ``fn`` reads (None: not
    declared, any); a layer tells :class:`ImageStats` which samples read each declared one
    (today only the histogram of ``equalize`` skips the others; the rest are cheap)."""

    fn: Callable[..., jax.Array] | None = None
    stats: tuple[str, ...] | None = None

    def reads(self) -> tuple[str, ...] | None:
        """The statistics the member reads: none for a pointwise kernel."""
        return () if self.fn is None else self.stats


def fused(*members: Any) -> Callable[[Any], Any]:
    """Decorates an op spec (above ``@op``) with its family members."""

    def decorate(spec: Any) -> Any:
        return dataclasses.replace(spec, fuse=tuple(members))

    return decorate


class ImageStats:
    """Statistics of one HWC image (its own dtype), each computed when first read.
    ``needed`` maps a statistic's name to a bool: whether this sample reads it (a policy layer
    knows which op each sample chose); where False a statistic's value is not meaningful and
    may cost nothing. Unnamed statistics are computed for every sample. ``known`` gives
    statistics already computed elsewhere (by name), used as they are."""

    def __init__(self, image: jax.Array, needed: dict[str, jax.Array] | None = None,
                 known: dict[str, Any] | None = None) -> None:
        self.image = image
        self.dtype = image.dtype
        self.needed = needed or {}
        self.__dict__.update(known or {})  # the cached properties' values

    @functools.cached_property
    def range(self) -> tuple[jax.Array, jax.Array]:
        """Each channel's smallest and largest value (float32)."""
        return value_range(self.image.astype(jnp.float32))

    @functools.cached_property
    def gray(self) -> jax.Array:
        """The (H, W) grayscale torchvision blends contrast and saturation with."""
        return gray_for_blend(self.image.astype(jnp.float32), self.dtype)

    @functools.cached_property
    def gray_mean(self) -> jax.Array:
        """The mean of :attr:`gray` (contrast's degenerate value,
        :func:`augjax.kernels.enhance.contrast_mean`)."""
        return contrast_mean(gray_planes(self.image.astype(jnp.float32)), self.dtype)

    @functools.cached_property
    def levels(self) -> jax.Array:
        """The image's uint8 levels (float images quantized as torchvision's equalize; other
        integer images as int32)."""
        x = self.image if is_int(self.dtype) else from_unit(self.image, jnp.uint8)
        return x if x.dtype == jnp.uint8 else x.astype(jnp.int32)

    @functools.cached_property
    def equalize(self) -> tuple[jax.Array, jax.Array]:
        """PIL's equalization table of :attr:`levels` and the channels it applies to."""
        return equalize_lut(histogram(self.levels, needed=self.needed.get("equalize")))


def member(spec: Any, kind: type) -> Any:
    """The member of ``spec`` of class ``kind``, or None."""
    return next((m for m in getattr(spec, "fuse", ()) if isinstance(m, kind)), None)
