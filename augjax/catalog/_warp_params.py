"""The parameters the geometric ops share (interpolation, fill, sampling convention, a signed
magnitude) and the policy family member a warping op's geometry gives."""

from __future__ import annotations

import jax.numpy as jnp

from augjax._core.meta import Meta
from augjax._core.param import Param
from augjax.catalog._fuse import EXACT_NONE, Affine, fused
from augjax.kernels.geometry import exact_paths, exact_source
from augjax.kernels.warp import INTERPOLATIONS

__all__ = [
    "CONVENTIONS",
    "TRANSLATE_MAX",
    "affine_family",
    "convention_param",
    "exact_paths",
    "exact_source",
    "fill_param",
    "interpolation_param",
    "magnitude_param",
    "sampling_params",
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


def sampling_params(interpolation: str = "nearest", convention: bool = True) -> dict[str, Param]:
    """How a warp samples: ``interpolation`` (this default), ``fill`` and, for the
    single-magnitude warps, ``convention``."""
    out = {"interpolation": interpolation_param(interpolation), "fill": fill_param()}
    return {**out, "convention": convention_param()} if convention else out


def magnitude_param(default: float, high: float, doc: str) -> Param:
    return Param((-default, default), kind="float_or_pair", neutral=0.0, magnitude=(0.0, high),
                 signed=True, doc=doc)


def affine_family(exact: bool = False):
    """Joins an op declared by its geometry (:func:`augjax.kernels.geometry.warp`) to the
    policy layers' affine family (above ``@op``): the member's coefficients (and, with
    ``exact``, its exact-path code) are the geometry's own, for an image of the layer's size."""

    def decorate(spec):
        geometry = spec.kernel.geometry

        def coeffs(params, h, w, **config):
            return geometry(params, Meta(h, w, 0, ""), **config).coeffs

        def code(params, h, w, **config):
            found = geometry(params, Meta(h, w, 0, ""), **config).exact
            return jnp.int32(EXACT_NONE) if found is None else found

        return fused(Affine(coeffs, code if exact else None))(spec)

    return decorate
