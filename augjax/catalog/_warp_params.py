"""The parameter the single-magnitude warps share (a signed magnitude) and the policy family
member a warping op's geometry gives (what they sample with comes with
:func:`augjax.kernels.geometry.warp`)."""

from __future__ import annotations

import jax.numpy as jnp

from augjax._core.meta import Meta
from augjax._core.param import Param
from augjax.catalog._fuse import EXACT_NONE, Affine, fused
from augjax.kernels.geometry import exact_paths, exact_source

__all__ = [
    "TRANSLATE_MAX",
    "affine_family",
    "exact_paths",
    "exact_source",
    "magnitude_param",
]

#: torchvision RandAugment's largest translation, as a fraction of the image side (150/331).
TRANSLATE_MAX = 150.0 / 331.0


def magnitude_param(high: float, doc: str) -> Param:
    """A single-magnitude warp's parameter: ``(-high, high)`` drawn per sample by default;
    policies map magnitudes to ``0..high``, randomly negated."""
    return Param((-high, high), kind="float_or_pair", neutral=0.0, magnitude=(0.0, high),
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
