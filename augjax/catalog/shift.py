"""Shears and translations: the AutoAugment / RandAugment primitives, on HWC images.

Their one magnitude parameter (``shear``, ``translate``) is a number (used as is) or a pair
drawn uniformly per sample, and reaches the kernel in ``params`` under its own name. They follow
torchvision's ``_apply_op`` (``F.affine`` about a corner, whole-pixel shifts) or, with
``convention="pil"``, PIL's affine transform as timm uses it. Sampling, fill and tolerances are
those of :mod:`augjax.catalog.geometry`. Each op is declared by its geometry
(:func:`augjax.kernels.geometry.warp`): one :class:`~augjax.kernels.geometry.Warp` per sample
gives its pixels, its forward 3x3 matrix (which moves boxes and keypoints), the mask path
(the same warp, nearest) and its policy family member.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax.catalog._warp_params import (
    TRANSLATE_MAX,
    affine_family,
    magnitude_param,
)
from augjax.kernels.geometry import Warp, warp

__all__ = ["shear_x", "shear_y", "translate_x", "translate_y"]


def _shear_matrix(s: jax.Array, h: int, w: int, axis: str) -> jax.Array:
    # torchvision _apply_op: F.affine(shear=[degrees(atan(s)), 0] (or [0, ...]), center=[0, 0]).
    # In _get_inverse_affine_matrix tan(atan(s)) = s, and center [0, 0] is (-W/2, -H/2) from the
    # image centre, which leaves a constant term of s*H/2 (x shear) or s*W/2 (y shear).
    zero, one = jnp.float32(0.0), jnp.float32(1.0)
    if axis == "x":
        return jnp.stack([one, s, s * (h / 2.0), zero, one, zero])
    return jnp.stack([one, zero, zero, s, one, s * (w / 2.0)])


def _shear_coeffs(s: jax.Array, axis: str) -> jax.Array:
    # PIL (1, s, 0, 0, 1, 0) / (1, 0, 0, s, 1, 0): timm's shear_x / shear_y.
    zero, one = jnp.float32(0.0), jnp.float32(1.0)
    s = jnp.asarray(s, jnp.float32)
    if axis == "x":
        return jnp.stack([one, s, zero, zero, one, zero])
    return jnp.stack([one, zero, zero, s, one, zero])


def _shear(params, meta, convention: str, axis: str) -> Warp:
    s = params["shear"]
    if convention == "pil":
        return Warp.pil(_shear_coeffs(s, axis), meta)
    return Warp.affine(_shear_matrix(s, meta.height, meta.width, axis), meta)


_SHEAR_DOC = ("shear factor: a number is used as is, a pair (lo, hi) is drawn uniformly per sample;"
              " RandAugment range 0..0.3, randomly negated")


@affine_family()
@op(
    "shear_x",
    params={"shear": magnitude_param(0.3, _SHEAR_DOC)},
    reference="torchvision AutoAugment/RandAugment ShearX (_apply_op: F.affine, center=[0, 0]); "
              "convention='pil': timm shear_x (PIL)",
)
@warp(convention=True)
def shear_x(params, meta, *, convention, **_):
    """Shears along the width axis by the factor ``shear`` (AutoAugment/RandAugment ShearX).

    Output pixel ``(x, y)`` samples input ``(x + s*y, y)``, with ``y`` counted from the top edge
    (PIL ``(1, s, 0, 0, 1, 0)``; torchvision ``_apply_op`` ShearX, which calls
    ``F.affine(shear=[degrees(atan(s)), 0], center=[0, 0])``).

    ``shear`` (params ``shear``) is a number (used as is) or a pair drawn per sample.

    ``convention="pil"`` samples as PIL's ``image.transform(size, Image.AFFINE, (1, s, 0, 0, 1, 0),
    resample, fillcolor=fill)`` (timm's ShearX): a pixel whose source point falls outside takes
    the fill and edge samples are clamped (torchvision blends border pixels with the fill).
    Nearest matches PIL bitwise in the tests; bilinear uint8 values may be one level off (PIL
    interpolates in float64 and truncates, augjax in float32; see
    :func:`augjax.kernels.warp_pil.warp_affine_pil`).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    return _shear(params, meta, convention, "x")


@affine_family()
@op(
    "shear_y",
    params={"shear": magnitude_param(0.3, _SHEAR_DOC)},
    reference="torchvision AutoAugment/RandAugment ShearY (_apply_op: F.affine, center=[0, 0]); "
              "convention='pil': timm shear_y (PIL)",
)
@warp(convention=True)
def shear_y(params, meta, *, convention, **_):
    """Shears along the height axis by the factor ``shear`` (AutoAugment/RandAugment ShearY).

    Output pixel ``(x, y)`` samples input ``(x, y + s*x)``, with ``x`` counted from the left edge
    (PIL ``(1, 0, 0, s, 1, 0)``; torchvision ``_apply_op`` ShearY,
    ``F.affine(shear=[0, degrees(atan(s))], center=[0, 0])``).

    ``shear`` (params ``shear``) is a number (used as is) or a pair drawn per sample.

    ``convention="pil"`` samples as PIL's ``image.transform(size, Image.AFFINE, (1, 0, 0, s, 1, 0),
    resample, fillcolor=fill)`` (timm's ShearY): a pixel whose source point falls outside takes
    the fill and edge samples are clamped (torchvision blends border pixels with the fill).
    Nearest matches PIL bitwise in the tests; bilinear uint8 values may be one level off (PIL
    interpolates in float64 and truncates, augjax in float32; see
    :func:`augjax.kernels.warp_pil.warp_affine_pil`).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    return _shear(params, meta, convention, "y")


def _translate_inverse(value, h: int, w: int, relative: bool, axis: str) -> jax.Array:
    pixels = value * (w if axis == "x" else h) if relative else value
    shift = jnp.trunc(pixels)  # torchvision _apply_op: translate=[int(magnitude), 0]
    zero = jnp.float32(0.0)
    tx, ty = (shift, zero) if axis == "x" else (zero, shift)
    one = jnp.float32(1.0)
    return jnp.stack([one, zero, -tx, zero, one, -ty])


def _translate_coeffs(value, h: int, w: int, relative: bool, axis: str) -> jax.Array:
    # PIL (1, 0, -px, 0, 1, 0) / (1, 0, 0, 0, 1, -px): a shift by px pixels, not rounded
    # (timm's translate_*_rel / _abs pass the pixels as they come, with the opposite sign).
    pixels = jnp.asarray(value, jnp.float32)
    if relative:
        pixels = pixels * (w if axis == "x" else h)
    zero, one = jnp.float32(0.0), jnp.float32(1.0)
    if axis == "x":
        return jnp.stack([one, zero, -pixels, zero, one, zero])
    return jnp.stack([one, zero, zero, zero, one, -pixels])


def _translate(params, meta, relative: bool, convention: str, axis: str) -> Warp:
    value, h, w = params["translate"], meta.height, meta.width
    if convention == "pil":
        return Warp.pil(_translate_coeffs(value, h, w, relative, axis), meta)
    return Warp.affine(_translate_inverse(value, h, w, relative, axis), meta)


_TRANSLATE_DOC = ("shift: a fraction of the {side} (relative=True) or pixels, truncated to whole "
                  "pixels (convention='pil': not rounded); a number is used as is, a pair "
                  "(lo, hi) is drawn uniformly per sample; RandAugment range 0..150/331, "
                  "randomly negated")


def _translate_params(side: str) -> dict[str, Param]:
    return {
        "translate": magnitude_param(TRANSLATE_MAX, _TRANSLATE_DOC.format(side=side)),
        "relative": Param(True, doc=f"translate is a fraction of the {side} (else pixels)"),
    }


@affine_family()
@op(
    "translate_x",
    params=_translate_params("width"),
    reference="torchvision AutoAugment/RandAugment TranslateX (_apply_op: F.affine); "
              "convention='pil': timm translate_x_rel / translate_x_abs (PIL), negated",
)
@warp(convention=True)
def translate_x(params, meta, *, relative, convention, **_):
    """Shifts the content right by whole pixels (left when negative), filling the uncovered columns.

    The shift is ``trunc(translate * width)`` pixels when ``relative`` (the default), else
    ``trunc(translate)``: whole pixels, as torchvision's ``_apply_op`` passes
    ``translate=[int(magnitude), 0]`` to ``F.affine`` (AutoAugment/RandAugment TranslateX).

    ``translate`` (params ``translate``) is a number (used as is) or a pair drawn per sample.

    ``convention="pil"`` samples as PIL's ``image.transform(size, Image.AFFINE, coeffs,
    resample, fillcolor=fill)`` with the shift not rounded (fractional pixels, as timm's
    TranslateXRel/YRel and TranslateX/Y): a pixel whose source point falls outside takes the
    fill and edge samples are clamped. The direction stays augjax's (positive moves the content
    right): timm's ``translate_x_rel(img, pct)`` is ``translate=-pct`` here, and
    ``translate_x_abs(img, px)`` is ``translate=-px, relative=False`` (timm's policy tables in
    augjax negate the magnitude for this). Nearest matches PIL bitwise in the tests; bilinear
    uint8 values may be one level off (float32 vs PIL's float64, then truncation).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    return _translate(params, meta, relative, convention, "x")


@affine_family()
@op(
    "translate_y",
    params=_translate_params("height"),
    reference="torchvision AutoAugment/RandAugment TranslateY (_apply_op: F.affine); "
              "convention='pil': timm translate_y_rel / translate_y_abs (PIL), negated",
)
@warp(convention=True)
def translate_y(params, meta, *, relative, convention, **_):
    """Shifts the content down by whole pixels (up when negative), filling the uncovered rows.

    The shift is ``trunc(translate * height)`` pixels when ``relative`` (the default), else
    ``trunc(translate)`` (torchvision ``_apply_op`` TranslateY).

    ``translate`` (params ``translate``) is a number (used as is) or a pair drawn per sample.

    ``convention="pil"`` samples as PIL's ``image.transform(size, Image.AFFINE, coeffs,
    resample, fillcolor=fill)`` with the shift not rounded (fractional pixels, as timm's
    TranslateXRel/YRel and TranslateX/Y): a pixel whose source point falls outside takes the
    fill and edge samples are clamped. The direction stays augjax's (positive moves the content
    down): timm's ``translate_y_rel(img, pct)`` is ``translate=-pct`` here, and
    ``translate_y_abs(img, px)`` is ``translate=-px, relative=False`` (timm's policy tables in
    augjax negate the magnitude for this). Nearest matches PIL bitwise in the tests; bilinear
    uint8 values may be one level off (float32 vs PIL's float64, then truncation).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    return _translate(params, meta, relative, convention, "y")
