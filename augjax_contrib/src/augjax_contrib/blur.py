"""Blur and detail-reduction ops on HWC images: Gaussian, box, motion and median blur, pixelate.

Images are uint8 (0..255) or float32 in [0, 1]; kernels compute in float32 and return the input
dtype (uint8 rounded half to even, as torchvision's ``round_()``). Filters use reflect-101 borders
(``dcb|abcd|cba``: torch ``pad(mode="reflect")``, scipy ``mode="mirror"``) unless stated.
Kernel sizes are static (part of the compiled program); sigmas, angles, block sizes and the
``p`` coin are drawn per sample inside the program, all from one draw ``u = uniform(key, (n,))``
in the order the docstrings list (a range maps to ``low + u_i (high - low)``, an integer range to
``low + floor(u_i (high - low + 1))``, the coin is ``u_i < p``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from augjax import Param, op

from augjax_contrib._common import (
    RADIANS,
    correlate,
    correlate_separable,
    gaussian_kernel1d,
    int_pair,
    odd_int,
    odd_size,
    pad_edge,
    span,
    span_int,
    to_dtype,
    to_float,
    uniforms,
)

__all__ = ["gaussian_blur", "box_blur", "motion_blur", "median_blur", "pixelate"]

_P = Param(1.0, low=0.0, high=1.0, neutral=0.0, doc="probability of applying the op to a sample")


@op(
    "gaussian_blur",
    params={
        "kernel_size": Param((5, 5), kind="size", low=1, high=99, validate=odd_size,
                             doc="odd kernel size, int or (height, width)"),
        "sigma": Param((0.1, 2.0), kind="float_or_pair", low=1e-3, high=100.0,
                       doc="Gaussian sigma, or a (low, high) range drawn per sample"),
    },
    reference="torchvision.transforms.v2.GaussianBlur",
)
def gaussian_blur(key, image, *, kernel_size, sigma):
    """Blurs each image with a Gaussian kernel whose sigma is drawn per sample.

    torchvision ``GaussianBlur(kernel_size, sigma)`` semantics: ``sigma`` is a number or a range
    ``(low, high)`` from which one sigma is drawn uniformly (used for both axes); the 1D kernel is
    ``exp(-t^2 / (2 sigma^2))`` normalised, for ``t = -(k-1)/2 .. (k-1)/2``; borders are padded
    with reflection (reflect-101); uint8 results are rounded. Deviations: torchvision draws one
    sigma per call, augjax one per sample; a pair ``kernel_size`` is ``(height, width)`` here
    (torchvision orders it ``(kx, ky)``); torchvision rejects pads as large as the image, here the
    reflection repeats. Draws: ``u = uniform(key, (1,))`` for sigma.
    """
    s = span(uniforms(key, 1)[0], sigma)
    kh, kw = kernel_size
    x = correlate_separable(to_float(image), gaussian_kernel1d(kh, s), gaussian_kernel1d(kw, s))
    return to_dtype(x, image.dtype, clip=False)


@op(
    "box_blur",
    params={
        "kernel_size": Param((3, 3), kind="size", low=1, high=99, validate=odd_size,
                             doc="odd kernel size, int or (height, width)"),
    },
    random=False,
    reference="scipy.ndimage.uniform_filter(mode='mirror')",
)
def box_blur(image, *, kernel_size):
    """Replaces each pixel with the mean of the ``kernel_size`` window around it.

    The mean filter of ``scipy.ndimage.uniform_filter`` with ``mode="mirror"`` (reflect-101
    borders), in float32; uint8 results are rounded half to even. Odd sizes only, so the window is
    centred (OpenCV ``blur`` and PIL ``BoxBlur`` use replicated borders instead).
    """
    kh, kw = kernel_size
    x = correlate_separable(to_float(image), jnp.full((kh,), 1.0 / kh), jnp.full((kw,), 1.0 / kw))
    return to_dtype(x, image.dtype, clip=False)


def motion_kernel(size: int, angle: jax.Array, direction: jax.Array) -> jax.Array:
    """The ``(size, size)`` motion-blur kernel for ``angle`` (degrees) and ``direction``.

    A line of ``size`` taps through the centre, weights ``linspace(a, 1 - a, size)`` with
    ``a = (direction + 1) / 2`` (uniform for ``direction = 0``), drawn with bilinear splats:
    ``K[u, v] = sum_t w_t * tri(q_x - t) * tri(q_y)``, where ``(q_x, q_y)`` are the coordinates of
    ``(v - r, u - r)`` along and across the line, ``tri(s) = max(0, 1 - |s|)``, ``r = size // 2``.
    The line's direction is ``(cos angle, -sin angle)`` in (x right, y down) image coordinates:
    positive angles turn counter-clockwise as displayed. ``K`` is normalised to sum 1.
    """
    r = size // 2
    a = (direction + 1.0) / 2.0
    t = jnp.arange(size, dtype=jnp.float32) - r
    w = a + (1.0 - 2.0 * a) * (t + r) / max(size - 1, 1)
    theta = angle * RADIANS
    c, s = jnp.cos(theta), jnp.sin(theta)
    u, v = jnp.meshgrid(t, t, indexing="ij")  # u: row offset (y), v: column offset (x)
    qx = v * c - u * s
    qy = v * s + u * c
    tri = lambda d: jnp.maximum(0.0, 1.0 - jnp.abs(d))  # noqa: E731
    k = jnp.sum(w[:, None, None] * tri(qx[None] - t[:, None, None]), axis=0) * tri(qy)
    return k / jnp.sum(k)


@op(
    "motion_blur",
    params={
        "kernel_size": Param(7, kind="int", low=3, high=63, validate=odd_int,
                             doc="odd length of the blur line"),
        "angle": Param((-90.0, 90.0), kind="float_or_pair", low=-360.0, high=360.0,
                       doc="line angle in degrees (counter-clockwise), or a range"),
        "direction": Param(0.0, kind="float_or_pair", low=-1.0, high=1.0,
                           doc="weight skew along the line in [-1, 1] (0 = uniform), or a range"),
    },
    reference="kornia.augmentation.RandomMotionBlur (kernel definition: see motion_kernel)",
)
def motion_blur(key, image, *, kernel_size, angle, direction):
    """Blurs each image along a straight line, as a camera or object moving during exposure.

    Per sample, ``angle`` and ``direction`` are drawn uniformly from their ranges and the image is
    correlated with :func:`motion_kernel` (reflect-101 borders; uint8 rounded). The parameters
    follow kornia ``RandomMotionBlur`` (kernel size, angle, direction in [-1, 1]); the kernel is
    drawn with bilinear splats in closed form instead of kornia's rotated image, so it is exactly
    specified (see :func:`motion_kernel`). Draws: ``u = uniform(key, (2,))`` for angle, direction.
    """
    u = uniforms(key, 2)
    kernel = motion_kernel(kernel_size, span(u[0], angle), span(u[1], direction))
    return to_dtype(correlate(to_float(image), kernel), image.dtype, clip=False)


@op(
    "median_blur",
    params={
        "kernel_size": Param(3, kind="int", low=3, high=15, validate=odd_int,
                             doc="odd window size"),
        "p": _P,
    },
    reference="OpenCV medianBlur / albumentations MedianBlur (replicated borders)",
)
def median_blur(key, image, *, kernel_size, p):
    """Replaces each pixel with the median of its ``kernel_size`` x ``kernel_size`` window, per
    channel, with probability ``p`` per sample.

    Borders repeat the edge pixels (OpenCV ``medianBlur``, albumentations ``MedianBlur``,
    ``scipy.ndimage.median_filter(mode="nearest")``). The median of an odd window is one of its
    values, so the result is exact in both dtypes. DALI's ``experimental.median_blur`` is
    GPU-only and not used as a reference. Draws: ``u = uniform(key, (1,))`` for the coin.
    """
    k = kernel_size
    r = k // 2
    h, w = image.shape[0], image.shape[1]
    padded = pad_edge(image, r, r)
    windows = jnp.stack([padded[i:i + h, j:j + w] for i in range(k) for j in range(k)])
    med = jnp.sort(windows, axis=0)[(k * k) // 2]
    return jnp.where(uniforms(key, 1)[0] < p, med, image)


@op(
    "pixelate",
    params={
        "block": Param((4, 8), kind="float_or_pair", low=1, high=512, validate=int_pair,
                       doc="block side in pixels, or an inclusive (low, high) range"),
        "p": _P,
    },
    reference="mean-pool then nearest upsample (PIL resize BOX then NEAREST when divisible)",
)
def pixelate(key, image, *, block, p):
    """Replaces each ``block`` x ``block`` tile (anchored at the top-left corner) with its mean.

    Per sample a block side is drawn (inclusive integer range) and the op is applied with
    probability ``p``. Tiles cut by the right or bottom edge average only the pixels they hold.
    When the block divides the image this equals PIL ``resize(size // block, BOX)`` followed by
    ``resize(size, NEAREST)``; uint8 means are rounded half to even (PIL rounds half up).
    Computed as ``A_rows @ image @ A_cols^T`` with block-averaging matrices (exact in float32
    up to summation order). Draws: ``u = uniform(key, (2,))`` for block, coin.
    """
    u = uniforms(key, 2)
    b = span_int(u[0], block)
    h, w = image.shape[0], image.shape[1]
    x = to_float(image)
    a_rows, a_cols = _block_average(h, b), _block_average(w, b)
    hp = jax.lax.Precision.HIGHEST
    x = jnp.einsum("ij,jwc->iwc", a_rows, x, precision=hp)
    x = jnp.einsum("vw,iwc->ivc", a_cols, x, precision=hp)
    out = to_dtype(x, image.dtype, clip=False)
    return jnp.where(u[1] < p, out, image)


def _block_average(n: int, b: jax.Array) -> jax.Array:
    """``(n, n)`` matrix averaging each index over its block ``i // b`` (partial last block)."""
    idx = jnp.arange(n, dtype=jnp.int32) // b
    same = (idx[:, None] == idx[None, :]).astype(jnp.float32)
    return same / jnp.sum(same, axis=1, keepdims=True)
