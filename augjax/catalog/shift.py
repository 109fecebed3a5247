"""Shears and translations: the AutoAugment / RandAugment primitives, on HWC images.

Their one magnitude parameter (``shear``, ``translate``) is a number (used as is) or a pair
drawn uniformly per sample, and reaches the kernel in ``params`` under its own name. They follow
torchvision's ``_apply_op`` (``F.affine`` about a corner, whole-pixel shifts) or, with
``convention="pil"``, PIL's affine transform as timm uses it. Sampling, fill and tolerances are
those of :mod:`augjax.catalog.geometry`; each op's ``matrix`` gives the sample's forward 3x3
matrix (:mod:`augjax.kernels.matrix`), which also moves boxes and keypoints; masks go through
the kernel with nearest sampling (:mod:`augjax._runtime.targets`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax._core.spec import op
from augjax.catalog._fuse import Affine, fused
from augjax.catalog._warp_params import (
    TRANSLATE_MAX,
    convention_param,
    fill_param,
    interpolation_param,
    magnitude_param,
    warp_by_convention,
)
from augjax.kernels.matrix import from_centered_inverse, from_pil_coefficients

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


def _shear_op_matrix(axis: str):
    def matrix(params, meta, *, convention, **_):
        if convention == "pil":
            return from_pil_coefficients(_shear_coeffs(params["shear"], axis))
        return from_centered_inverse(
            _shear_matrix(params["shear"], meta.height, meta.width, axis), meta.height,
            meta.width)

    return matrix


def _shear_fuse(axis: str) -> Affine:
    def coeffs(params, h, w, *, convention, **_):
        if convention == "pil":
            return _shear_coeffs(params["shear"], axis)
        return _shear_matrix(params["shear"], h, w, axis)

    return Affine(coeffs)


_SHEAR_DOC = ("shear factor: a number is used as is, a pair (lo, hi) is drawn uniformly per sample;"
              " RandAugment range 0..0.3, randomly negated")


@fused(_shear_fuse("x"))
@op(
    "shear_x",
    params={
        "shear": magnitude_param(0.3, 0.3, _SHEAR_DOC),
        "interpolation": interpolation_param("nearest"),
        "fill": fill_param(),
        "convention": convention_param(),
    },
    matrix=_shear_op_matrix("x"),
    reference="torchvision AutoAugment/RandAugment ShearX (_apply_op: F.affine, center=[0, 0]); "
              "convention='pil': timm shear_x (PIL)",
)
def shear_x(image, params, *, interpolation, fill, convention):
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
    h, w = image.shape[:2]
    s = params["shear"]
    return warp_by_convention(image, lambda: _shear_matrix(s, h, w, "x"), lambda: _shear_coeffs(s, "x"),
                 convention, interpolation, fill, "shear_x")


@fused(_shear_fuse("y"))
@op(
    "shear_y",
    params={
        "shear": magnitude_param(0.3, 0.3, _SHEAR_DOC),
        "interpolation": interpolation_param("nearest"),
        "fill": fill_param(),
        "convention": convention_param(),
    },
    matrix=_shear_op_matrix("y"),
    reference="torchvision AutoAugment/RandAugment ShearY (_apply_op: F.affine, center=[0, 0]); "
              "convention='pil': timm shear_y (PIL)",
)
def shear_y(image, params, *, interpolation, fill, convention):
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
    h, w = image.shape[:2]
    s = params["shear"]
    return warp_by_convention(image, lambda: _shear_matrix(s, h, w, "y"), lambda: _shear_coeffs(s, "y"),
                 convention, interpolation, fill, "shear_y")


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


def _translate(image, value, relative, interpolation, fill, convention, axis: str):
    h, w = image.shape[:2]
    return warp_by_convention(image, lambda: _translate_inverse(value, h, w, relative, axis),
                 lambda: _translate_coeffs(value, h, w, relative, axis), convention,
                 interpolation, fill, f"translate_{axis}")


def _translate_matrix(axis: str):
    def matrix(params, meta, *, relative, convention, **_):
        if convention == "pil":
            return from_pil_coefficients(
                _translate_coeffs(params["translate"], meta.height, meta.width, relative, axis))
        m6 = _translate_inverse(params["translate"], meta.height, meta.width, relative, axis)
        return from_centered_inverse(m6, meta.height, meta.width)

    return matrix


def _translate_fuse(axis: str) -> Affine:
    def coeffs(params, h, w, *, relative, convention, **_):
        if convention == "pil":
            return _translate_coeffs(params["translate"], h, w, relative, axis)
        return _translate_inverse(params["translate"], h, w, relative, axis)

    return Affine(coeffs)


_TRANSLATE_DOC = ("shift: a fraction of the {side} (relative=True) or pixels, truncated to whole "
                  "pixels (convention='pil': not rounded); a number is used as is, a pair "
                  "(lo, hi) is drawn uniformly per sample; RandAugment range 0..150/331, "
                  "randomly negated")


def _translate_params(side: str) -> dict[str, Param]:
    return {
        "translate": magnitude_param(TRANSLATE_MAX, TRANSLATE_MAX, _TRANSLATE_DOC.format(side=side)),
        "relative": Param(True, doc=f"translate is a fraction of the {side} (else pixels)"),
        "interpolation": interpolation_param("nearest"),
        "fill": fill_param(),
        "convention": convention_param(),
    }


@fused(_translate_fuse("x"))
@op(
    "translate_x",
    params=_translate_params("width"),
    matrix=_translate_matrix("x"),
    reference="torchvision AutoAugment/RandAugment TranslateX (_apply_op: F.affine); "
              "convention='pil': timm translate_x_rel / translate_x_abs (PIL), negated",
)
def translate_x(image, params, *, relative, interpolation, fill, convention):
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
    return _translate(image, params["translate"], relative, interpolation, fill, convention,
                      "x")


@fused(_translate_fuse("y"))
@op(
    "translate_y",
    params=_translate_params("height"),
    matrix=_translate_matrix("y"),
    reference="torchvision AutoAugment/RandAugment TranslateY (_apply_op: F.affine); "
              "convention='pil': timm translate_y_rel / translate_y_abs (PIL), negated",
)
def translate_y(image, params, *, relative, interpolation, fill, convention):
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
    return _translate(image, params["translate"], relative, interpolation, fill, convention,
                      "y")
