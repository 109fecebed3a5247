"""Distortion ops on HWC images: DALI's water and sphere remaps, torchvision's elastic transform.

Images are uint8 (0..255) or float32 in [0, 1]. Each op computes, for every output pixel, a
source position and samples the input there (nearest or bilinear); positions outside the image
read ``fill``, a fraction of the dtype's maximum. uint8 results of bilinear sampling are rounded
half to even. Scalar parameters come from one draw ``u = uniform(key, (n,))`` per sample: a range
``(low, high)`` maps to ``low + u_i (high - low)``, the ``p`` coin is ``u_i < p``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from augjax import Param, op

from augjax_contrib._common import (
    correlate_separable,
    gaussian_kernel1d,
    peak,
    pixel_grid,
    sample_bilinear,
    sample_nearest,
    span,
    to_dtype,
    pair_xy,
    to_float,
    uniform,
    uniforms,
)

__all__ = ["water", "sphere", "elastic_transform"]

_INTERP = Param("nearest", choices=("nearest", "bilinear"), doc="sampling of the source image")
_FILL = Param(0.0, low=0.0, high=1.0, doc="value outside the image (fraction of the maximum)")
_P = Param(1.0, low=0.0, high=1.0, neutral=0.0, doc="probability of applying the op to a sample")


def _dali_remap(image: jax.Array, sx: jax.Array, sy: jax.Array, interpolation: str,
                fill: float) -> jax.Array:
    """Samples ``image`` at DALI source positions (pixel ``(i, j)`` covers ``[j, j+1) x [i, i+1)``,
    so its centre is at ``(j + 0.5, i + 0.5)``): nearest takes ``floor``, bilinear interpolates
    between centres; taps outside the image read ``fill``."""
    x = to_float(image)
    fill_v = fill * peak(image.dtype)
    if interpolation == "nearest":
        out = sample_nearest(x, jnp.floor(sx).astype(jnp.int32), jnp.floor(sy).astype(jnp.int32),
                             fill_v)
    else:
        out = sample_bilinear(x, sx - 0.5, sy - 0.5, fill_v)
    return to_dtype(out, image.dtype)


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
    reference="nvidia.dali.fn.water",
)
def water(key, image, *, ampl_x, ampl_y, freq_x, freq_y, phase_x, phase_y, interpolation,
          fill, p):
    """Makes the image look as if seen through a rippled water surface.

    DALI ``fn.water`` semantics: output pixel ``(x, y)`` (integer column and row) reads the input
    at ``(x + ampl_x sin(freq_x y + phase_x), y + ampl_y cos(freq_y x + phase_y))`` in DALI's
    pixel-area coordinates; ``interpolation="nearest"`` (DALI ``INTERP_NN``, the default) or
    ``"bilinear"`` (``INTERP_LINEAR``); outside positions read ``fill`` (DALI ``fill_value =
    fill * 255`` for uint8). ``p`` plays DALI's ``mask``. Beyond DALI, each wave parameter may be
    a range drawn per sample. Computed in float32; where ``sin``/``cos`` round differently from
    DALI's ``sinf``/``cosf``, a nearest-sampled position that falls within about ``1e-5`` of a
    pixel edge can pick the neighbour. Draws: ``u = uniform(key, (7,))`` for the six wave
    parameters in signature order, then the coin.
    """
    u = uniforms(key, 7)
    ax, ay, fx, fy, px, py = (span(u[i], v) for i, v in enumerate(
        (ampl_x, ampl_y, freq_x, freq_y, phase_x, phase_y)))
    x, y = pixel_grid(image.shape[0], image.shape[1])
    sx = x + ax * jnp.sin(fx * y + px)
    sy = y + ay * jnp.cos(fy * x + py)
    return jnp.where(u[6] < p, _dali_remap(image, sx, sy, interpolation, fill), image)


@op(
    "sphere",
    params={"interpolation": _INTERP, "fill": _FILL, "p": _P},
    reference="nvidia.dali.fn.sphere",
)
def sphere(key, image, *, interpolation, fill, p):
    """Bulges the image as if it were painted on a sphere seen from the front.

    DALI ``fn.sphere`` semantics: with ``mid = (W / 2, H / 2)``, ``d = int(max(W, H) / 2)`` and
    ``t = (x + 0.5, y + 0.5) - mid`` for output pixel ``(x, y)``, the input is read at
    ``mid + (|t| / d) * t``; interpolation and ``fill`` as in :func:`water`; ``p`` plays DALI's
    ``mask``. The op has no other parameter, so it is random only through ``p``. Draws:
    ``u = uniform(key, (1,))`` for the coin.
    """
    h, w = image.shape[0], image.shape[1]
    mid_x, mid_y = w * 0.5, h * 0.5
    d = float(int(max(mid_x, mid_y)))
    x, y = pixel_grid(h, w)
    tx = x + 0.5 - mid_x
    ty = y + 0.5 - mid_y
    rad = jnp.sqrt(tx * tx + ty * ty) / d
    out = _dali_remap(image, mid_x + rad * tx, mid_y + rad * ty, interpolation, fill)
    return jnp.where(uniforms(key, 1)[0] < p, out, image)


def _blur_size(sigma: float) -> int:
    k = int(8 * sigma + 1)
    return k + 1 if k % 2 == 0 else k


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
    reference="torchvision.transforms.v2.ElasticTransform",
)
def elastic_transform(key, image, *, alpha, sigma, interpolation, fill):
    """Moves every pixel along a smooth random displacement field (elastic deformation).

    torchvision ``ElasticTransform(alpha, sigma, interpolation, fill)`` semantics: a pair means
    ``(x, y)`` values, not a range. Uniform noise ``u_x, u_y`` in ``[-1, 1)`` per pixel is blurred
    with torchvision's Gaussian (kernel ``int(8 sigma_x + 1)`` for ``u_x`` and
    ``int(8 sigma_y + 1)`` for ``u_y``, made odd; sigma ``sigma_x`` along the width and
    ``sigma_y`` along the height; reflect-101 borders), scaled to ``alpha_x / W`` and ``alpha_y / H`` and added to the identity
    grid of ``grid_sample(align_corners=False)``; pixels are sampled bilinearly (or nearest, ties
    to even) with zero padding. With a ``fill``, torchvision's mask rule follows: bilinear
    ``(S(img) - fill) * S(1) + fill``, nearest ``fill where S(1) < 0.5``. uint8 is rounded.
    Draws: ``u = uniform(key, (2, H, W), minval=-1, maxval=1)``; ``u_x, u_y = u``. Deviation:
    torchvision rejects blur pads as large as the image; here the reflection repeats.
    """
    h, w = image.shape[0], image.shape[1]
    (ax, ay), (sx, sy) = alpha, sigma
    noise = uniform(key, (2, h, w), -1.0, 1.0)
    disp = []
    for u, size, a, n in ((noise[0], _blur_size(sx), ax, w), (noise[1], _blur_size(sy), ay, h)):
        u = correlate_separable(u[..., None], gaussian_kernel1d(size, jnp.float32(sy)),
                                gaussian_kernel1d(size, jnp.float32(sx)))
        disp.append(u[..., 0] * jnp.float32(a) / jnp.float32(n))
    x, y = pixel_grid(h, w)
    gx = (2.0 * x + 1.0) / w - 1.0 + disp[0]
    gy = (2.0 * y + 1.0) / h - 1.0 + disp[1]
    ix = ((gx + 1.0) * w - 1.0) / 2.0
    iy = ((gy + 1.0) * h - 1.0) / 2.0
    img = to_float(image)
    ones = jnp.ones((h, w, 1), jnp.float32)
    if interpolation == "nearest":
        jx, jy = jnp.round(ix).astype(jnp.int32), jnp.round(iy).astype(jnp.int32)
        out, mask = sample_nearest(img, jx, jy, 0.0), sample_nearest(ones, jx, jy, 0.0)
    else:
        out, mask = sample_bilinear(img, ix, iy, 0.0), sample_bilinear(ones, ix, iy, 0.0)
    if fill is not None:
        f = jnp.float32(fill * peak(image.dtype))
        out = jnp.where(mask < 0.5, f, out) if interpolation == "nearest" else (out - f) * mask + f
    return to_dtype(out, image.dtype, clip=False)
