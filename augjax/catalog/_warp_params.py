"""The parameters the geometric ops share (interpolation, fill, sampling convention, a signed
magnitude) and the warp that follows the convention."""

from __future__ import annotations

from augjax._core.param import Param
from augjax.kernels.warp import INTERPOLATIONS, check_fill, warp_affine, warp_affine_pil

__all__ = [
    "CONVENTIONS",
    "TRANSLATE_MAX",
    "convention_param",
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
