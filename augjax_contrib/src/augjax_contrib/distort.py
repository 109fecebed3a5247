"""Distortion ops on HWC images: DALI's water and sphere remaps, torchvision's elastic transform.

Images are uint8 (0..255) or float32 in [0, 1]. Each op computes, for every output pixel, a
source position and samples the input there (nearest or bilinear); positions outside the image
read ``fill``, a fraction of the dtype's maximum (water and sphere: DALI's rule, each bilinear
tap outside reads the fill; elastic_transform: torchvision's, :func:`augjax.kernels.elastic`).
uint8 results of bilinear sampling are rounded half to even. The ops move pixels
(``geometric=True``) but by no matrix, so :func:`augjax.invert` cannot undo them.

Params (``op.sample``; per sample, float32 unless stated): ``water``: ``ampl_x``, ``ampl_y``,
``freq_x``, ``freq_y``, ``phase_x``, ``phase_y``, ``applied`` (bool); ``sphere``: ``applied``
(bool); ``elastic_transform``: ``displacement`` ((H, W, 2), torchvision's displacement field in
``grid_sample`` units: x then y offsets, in [-1, 1] for the whole image). augjax draws the wave
parameters (a range uniformly, a number as is); the ``applied`` coin is ``uniform(k, ()) < p``
from the op's ``sample`` key ``k``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax import Param, op
from augjax.kernels import (
    check_fill,
    correlate_planes,
    elastic,
    gaussian_kernel1d,
    is_int,
    sample,
    to_dtype,
)
from augjax_contrib._common import API, coin, pair_xy, pixel_grid, uniform

__all__ = ["water", "sphere", "elastic_transform"]

_INTERP = Param("nearest", choices=("nearest", "bilinear"), doc="sampling of the source image")
_FILL = Param(0.0, low=0.0, high=1.0, doc="value outside the image (fraction of the maximum)")
_P = Param(1.0, low=0.0, high=1.0, neutral=0.0, doc="probability of applying the op to a sample")


def _dali_remap(image: jax.Array, sx: jax.Array, sy: jax.Array, interpolation: str,
                fill: float, op_name: str) -> jax.Array:
    """Samples ``image`` at DALI source positions (pixel ``(i, j)`` covers ``[j, j+1) x [i, i+1)``,
    so its centre is at ``(j + 0.5, i + 0.5)``): nearest takes ``floor``, bilinear interpolates
    between centres.

    DALI's fill rule differs from :func:`augjax.kernels.sample`'s (torchvision's, which blends
    the zero-padded value, weighted once more by the footprint inside, with the fill): here each
    of the four taps outside the image reads ``fill`` and the taps are blended as they are. The
    taps are :func:`augjax.kernels.sample` nearest reads of the float image.
    """
    fill_v = check_fill(fill, image, op_name)
    if interpolation == "nearest":
        return sample(image, jnp.floor(sx), jnp.floor(sy), "nearest", fill_v)
    x = image.astype(jnp.float32)
    sx, sy = sx - 0.5, sy - 0.5
    x0, y0 = jnp.floor(sx), jnp.floor(sy)
    fx, fy = (sx - x0)[..., None], (sy - y0)[..., None]

    def tap(dx: int, dy: int) -> jax.Array:
        return sample(x, x0 + dx, y0 + dy, "nearest", fill_v)

    top = tap(0, 0) * (1 - fx) + tap(1, 0) * fx
    bottom = tap(0, 1) * (1 - fx) + tap(1, 1) * fx
    out = top * (1 - fy) + bottom * fy
    if is_int(image.dtype):
        return to_dtype(out, image.dtype, rounding="round")
    return jnp.clip(out, 0.0, 1.0).astype(image.dtype)


@op(
    "water",
    params={
        "ampl_x": Param(10.0, kind="float_or_pair", neutral=0.0, doc="x wave amplitude (pixels)"),
        "ampl_y": Param(10.0, kind="float_or_pair", neutral=0.0, doc="y wave amplitude (pixels)"),
        "freq_x": Param(0.049087, kind="float_or_pair", doc="x wave frequency (radians/pixel)"),
        "freq_y": Param(0.049087, kind="float_or_pair", doc="y wave frequency (radians/pixel)"),
        "phase_x": Param(0.0, kind="float_or_pair", doc="x wave phase (radians)"),
        "phase_y": Param(0.0, kind="float_or_pair", doc="y wave phase (radians)"),
        "interpolation": _INTERP,
        "fill": _FILL,
        "p": _P,
    },
    sample=coin,
    geometric=True,
    reference="nvidia.dali.fn.water",
    api_version=API,
)
def water(image, params, *, interpolation, fill, p):
    """Makes the image look as if seen through a rippled water surface.

    DALI ``fn.water`` semantics: output pixel ``(x, y)`` (integer column and row) reads the input
    at ``(x + ampl_x sin(freq_x y + phase_x), y + ampl_y cos(freq_y x + phase_y))`` in DALI's
    pixel-area coordinates; ``interpolation="nearest"`` (DALI ``INTERP_NN``, the default) or
    ``"bilinear"`` (``INTERP_LINEAR``); outside positions read ``fill`` (DALI ``fill_value =
    fill * 255`` for uint8). ``p`` plays DALI's ``mask``. Beyond DALI, each wave parameter may be
    a range drawn per sample. Computed in float32; where ``sin``/``cos`` round differently from
    DALI's ``sinf``/``cosf``, a nearest-sampled position that falls within about ``1e-5`` of a
    pixel edge can pick the neighbour. Params: ``ampl_x``, ``ampl_y``, ``freq_x``, ``freq_y``,
    ``phase_x``, ``phase_y``, ``applied`` (bool, ``uniform < p``).
    """
    x, y = pixel_grid(image.shape[0], image.shape[1])
    sx = x + params["ampl_x"] * jnp.sin(params["freq_x"] * y + params["phase_x"])
    sy = y + params["ampl_y"] * jnp.cos(params["freq_y"] * x + params["phase_y"])
    out = _dali_remap(image, sx, sy, interpolation, fill, "water")
    return jnp.where(params["applied"], out, image)


@op(
    "sphere",
    params={"interpolation": _INTERP, "fill": _FILL, "p": _P},
    sample=coin,
    geometric=True,
    reference="nvidia.dali.fn.sphere",
    api_version=API,
)
def sphere(image, params, *, interpolation, fill, p):
    """Bulges the image as if it were painted on a sphere seen from the front.

    DALI ``fn.sphere`` semantics: with ``mid = (W / 2, H / 2)``, ``d = int(max(W, H) / 2)`` and
    ``t = (x + 0.5, y + 0.5) - mid`` for output pixel ``(x, y)``, the input is read at
    ``mid + (|t| / d) * t``; interpolation and ``fill`` as in :func:`water`; ``p`` plays DALI's
    ``mask``. The op has no other parameter, so it is random only through ``p``. Params:
    ``applied`` (bool, ``uniform < p``).
    """
    h, w = image.shape[0], image.shape[1]
    mid_x, mid_y = w * 0.5, h * 0.5
    d = float(int(max(mid_x, mid_y)))
    x, y = pixel_grid(h, w)
    tx = x + 0.5 - mid_x
    ty = y + 0.5 - mid_y
    rad = jnp.sqrt(tx * tx + ty * ty) / d
    out = _dali_remap(image, mid_x + rad * tx, mid_y + rad * ty, interpolation, fill, "sphere")
    return jnp.where(params["applied"], out, image)


def _blur_size(sigma: float) -> int:
    k = int(8 * sigma + 1)
    return k + 1 if k % 2 == 0 else k


def _displacement(key, meta, params, *, alpha, sigma, **config):
    """torchvision ``ElasticTransform.make_params`` on augjax draws: uniform noise in [-1, 1),
    blurred, scaled by ``alpha / size``; ``(H, W, 2)``, x then y."""
    h, w = meta.height, meta.width
    (ax, ay), (sx, sy) = alpha, sigma
    noise = uniform(key, (2, h, w), -1.0, 1.0)
    kernels = [(gaussian_kernel1d(size, jnp.float32(sy)), gaussian_kernel1d(size, jnp.float32(sx)))
               for size in (_blur_size(sx), _blur_size(sy))]
    scale = jnp.float32(ax) / jnp.float32(w), jnp.float32(ay) / jnp.float32(h)
    return {"displacement": correlate_planes((noise[0], noise[1]), kernels, scale)}


@op(
    "elastic_transform",
    params={
        "alpha": Param(50.0, kind="floats", low=0.0, high=1e4, neutral=0.0, validate=pair_xy,
                       doc="displacement strength, or (alpha_x, alpha_y)"),
        "sigma": Param(5.0, kind="floats", low=0.01, high=100.0, validate=pair_xy,
                       doc="smoothness of the displacement, or (sigma_x, sigma_y)"),
        "interpolation": Param("bilinear", choices=("nearest", "bilinear"),
                               doc="sampling of the source image"),
        "fill": Param(0.0, low=0.0, high=1.0, optional=True,
                      doc="value outside the image (fraction of max), None: zeros, no mask"),
    },
    sample=_displacement,
    geometric=True,
    reference="torchvision.transforms.v2.ElasticTransform",
    api_version=API,
)
def elastic_transform(image, params, *, alpha, sigma, interpolation, fill):
    """Moves every pixel along a smooth random displacement field (elastic deformation).

    torchvision ``ElasticTransform(alpha, sigma, interpolation, fill)`` semantics: a pair means
    ``(x, y)`` values, not a range. The sampler draws uniform noise ``u = uniform(k, (2, H, W),
    -1, 1)``, ``u_x, u_y = u``, blurs it with torchvision's Gaussian (kernel ``int(8 sigma_x +
    1)`` for ``u_x`` and ``int(8 sigma_y + 1)`` for ``u_y``, made odd; sigma ``sigma_x`` along
    the width and ``sigma_y`` along the height; reflect-101 borders) and multiplies it by
    ``alpha_x / W`` and ``alpha_y / H`` (each rounded to float32): the ``displacement``
    (:func:`augjax.kernels.correlate_planes`), added to the identity grid of
    ``grid_sample(align_corners=False)``; pixels are sampled bilinearly (or nearest, ties to
    even) with zero padding. With a ``fill``, torchvision's mask rule follows: bilinear
    ``(S(img) - fill) * S(1) + fill``, nearest ``fill where S(1) < 0.5``. uint8 is rounded.
    Params: ``displacement`` ((H, W, 2); torchvision's ``F.elastic(image, displacement)`` takes
    the same field with a leading 1; :func:`augjax.kernels.elastic` samples with it).
    Deviation: torchvision rejects blur pads as large as the image; here the reflection
    repeats.
    """
    fill_v = None if fill is None else check_fill(fill, image, "elastic_transform")
    return elastic(image, params["displacement"], interpolation, fill_v, op="elastic_transform")
