"""The parameters the geometric ops share (interpolation, fill, sampling convention, a signed
magnitude) and the warp that follows the convention."""

from __future__ import annotations

import jax.numpy as jnp

from augjax._core.param import Param
from augjax.catalog._fuse import (
    EXACT_HALF,
    EXACT_NONE,
    EXACT_QUARTER,
    EXACT_THREE_QUARTERS,
)
from augjax.kernels.warp import INTERPOLATIONS, check_fill, warp_affine
from augjax.kernels.warp_pil import warp_affine_pil

__all__ = [
    "CONVENTIONS",
    "TRANSLATE_MAX",
    "convention_param",
    "exact_paths",
    "exact_source",
    "fill_param",
    "interpolation_param",
    "magnitude_param",
    "warp_by_convention",
]

#: torchvision RandAugment's largest translation, as a fraction of the image side (150/331).
TRANSLATE_MAX = 150.0 / 331.0


def interpolation_param(default: str) -> Param:
    return Param(default, choices=INTERPOLATIONS, doc="'nearest' or 'bilinear' sampling")


def fill_param() -> Param:
    return Param(0.0, kind="floats", low=0.0, high=1.0, optional=True,
                 doc="value of pixels from outside the image, a fraction of the range in [0, 1] "
                     "(x255 for uint8; torchvision's uint8 128 is 128/255), one or one per "
                     "channel; None = zero padding")


#: The sampling conventions of the single-magnitude warps.
CONVENTIONS = ("torchvision", "pil")


def convention_param() -> Param:
    return Param("torchvision", choices=CONVENTIONS,
                 doc="'torchvision' (tensor kernels: whole-pixel shifts, border pixels blend "
                     "with the fill) or 'pil' (PIL's transform, as timm: fractional shifts, "
                     "edge samples clamped, outside points take the fill)")


def warp_by_convention(image, inverse6, coeffs, convention: str, interpolation: str, fill, name: str):
    """Warps by torchvision's centred inverse ``inverse6`` or, for ``convention="pil"``, by
    PIL's affine data ``coeffs`` (both callables of nothing, so only one is built)."""
    fill = check_fill(fill, image, name)
    if convention == "pil":
        return warp_affine_pil(image, coeffs(), interpolation, fill)
    return warp_affine(image, inverse6(), interpolation, fill)


def magnitude_param(default: float, high: float, doc: str) -> Param:
    return Param((-default, default), kind="float_or_pair", neutral=0.0, magnitude=(0.0, high),
                 signed=True, doc=doc)


def exact_paths(image, out, code):
    """``out`` where ``code`` is ``EXACT_NONE``, else the exact copy or turn of ``image`` it
    names (PIL rotate's paths; the quarter turns only on square images).

    The copy and the turns are one gather at integer positions chosen by ``code``: as
    transposes, a batch computing every path and selecting would put all of the layer's pixel
    work into XLA's (slower) transpose kernel on a GPU."""
    h, w = image.shape[:2]
    i = jnp.arange(h, dtype=jnp.int32)[:, None]
    j = jnp.arange(w, dtype=jnp.int32)[None, :]
    rows, cols = exact_source(i, j, code, h, w)
    return jnp.where(code == EXACT_NONE, out, image[rows, cols])


def exact_source(i, j, code, h: int, w: int):
    """The source row and column of output pixel ``(i, j)`` (int32 arrays) under the exact
    path ``code`` of an ``h`` x ``w`` image (:func:`exact_paths`; the identity for
    ``EXACT_NONE`` and ``EXACT_COPY``)."""
    rows = jnp.where(code == EXACT_HALF, h - 1 - i, i)
    cols = jnp.where(code == EXACT_HALF, w - 1 - j, j)
    if h == w:  # rot90(image, 1)[i, j] = image[j, w-1-i]; rot90(image, 3)[i, j] = image[h-1-j, i]
        rows = jnp.where(code == EXACT_QUARTER, j, rows)
        cols = jnp.where(code == EXACT_QUARTER, w - 1 - i, cols)
        rows = jnp.where(code == EXACT_THREE_QUARTERS, h - 1 - j, rows)
        cols = jnp.where(code == EXACT_THREE_QUARTERS, i, cols)
    return rows, cols
