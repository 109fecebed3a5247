"""Blur and detail-reduction ops on HWC images: box, motion and median blur, pixelate (the
Gaussian blur is augjax's own: :mod:`augjax.catalog.blur`).

Images are uint8 (0..255) or float32 in [0, 1]; kernels compute in float32 and return the input
dtype (uint8 rounded half to even, as torchvision's ``round_()``). Filters use reflect-101 borders
(``dcb|abcd|cba``: torch ``pad(mode="reflect")``, scipy ``mode="mirror"``) unless stated.
Kernel sizes are static (part of the compiled program).

Params (``op.sample``; one value per sample, float32 unless stated): ``box_blur``: none;
``motion_blur``: ``angle``, ``direction``; ``median_blur``: ``applied`` (bool); ``pixelate``:
``block`` (a whole number), ``applied`` (bool). augjax draws the per-sample values (a range
``(low, high)`` uniformly, an integer range as whole numbers, a number is used as is); the
``applied`` coin is ``uniform(k, ()) < p`` from the op's ``sample`` key ``k``.
``op.apply(x, params={...})`` applies exact values.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from augjax import Param, op
from augjax.kernels import (
    box_sum,
    broadcast_unbatched,
    filter_taps,
    is_int,
    matrix_pass,
    median_filter,
    platform_dependent,
    to_dtype,
)
from augjax_contrib._common import API, coin, odd_int, odd_size

__all__ = ["box_blur", "motion_blur", "median_blur", "pixelate"]

_RADIANS = math.pi / 180.0
_P = Param(1.0, low=0.0, high=1.0, neutral=0.0, doc="probability of applying the op to a sample")


@op(
    "box_blur",
    params={
        "kernel_size": Param((3, 3), kind="size", low=1, high=99, validate=odd_size,
                             doc="odd kernel size, int or (height, width)"),
    },
    reference="scipy.ndimage.uniform_filter(mode='mirror')",
    api_version=API,
)
def box_blur(image, params, *, kernel_size):
    """Replaces each pixel with the mean of the ``kernel_size`` window around it.

    The mean filter of ``scipy.ndimage.uniform_filter`` with ``mode="mirror"`` (reflect-101
    borders), in float32; uint8 results are rounded half to even. Odd sizes only, so the window is
    centred (OpenCV ``blur`` and PIL ``BoxBlur`` use replicated borders instead). Deterministic:
    no params. uint8 windows are summed exactly in integers and divided once (so the result is
    the exact mean, rounded); float images are summed in float32 and scaled by ``1 / (kh kw)``.
    """
    kh, kw = kernel_size
    if is_int(image.dtype):
        acc = jnp.uint16 if 255 * kh * kw < 65536 else jnp.int32
        total = box_sum(image.astype(acc), kh, kw)
        return to_dtype(total.astype(jnp.float32) / jnp.float32(kh * kw), image.dtype,
                        rounding="round")
    x = box_sum(image.astype(jnp.float32), kh, kw) * jnp.float32(1.0 / (kh * kw))
    return x.astype(image.dtype)


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
    theta = angle * _RADIANS
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
    api_version=API,
)
def motion_blur(image, params, *, kernel_size):
    """Blurs each image along a straight line, as a camera or object moving during exposure.

    Per sample, ``angle`` and ``direction`` are drawn uniformly from their ranges and the image is
    correlated with :func:`motion_kernel` (reflect-101 borders; uint8 rounded). The parameters
    follow kornia ``RandomMotionBlur`` (kernel size, angle, direction in [-1, 1]); the kernel is
    drawn with bilinear splats in closed form instead of kornia's rotated image, so it is exactly
    specified (see :func:`motion_kernel`). The band ``|q_y| < 1`` is 2 wide, so the kernel has
    at most three nonzero cells in each column (each row, for a steep line), and
    :func:`augjax.kernels.filter_taps` reads at most ``3 * kernel_size`` cells per pixel (on
    CUDA only those, for uint8 images). Params: ``angle``, ``direction``.
    """
    kernel = motion_kernel(kernel_size, params["angle"], params["direction"])
    return filter_taps(image, kernel, max_taps=3 * kernel_size)


@op(
    "median_blur",
    params={
        "kernel_size": Param(3, kind="int", low=3, high=15, validate=odd_int,
                             doc="odd window size"),
        "p": _P,
    },
    sample=coin,
    reference="OpenCV medianBlur / albumentations MedianBlur (replicated borders)",
    api_version=API,
)
def median_blur(image, params, *, kernel_size, p):
    """Replaces each pixel with the median of its ``kernel_size`` x ``kernel_size`` window, per
    channel, with probability ``p`` per sample.

    Borders repeat the edge pixels (OpenCV ``medianBlur``, albumentations ``MedianBlur``,
    ``scipy.ndimage.median_filter(mode="nearest")``). The median of an odd window is one of its
    values, so the result is exact in both dtypes. DALI's ``experimental.median_blur`` is
    GPU-only and not used as a reference. Params: ``applied`` (bool, ``uniform < p``).
    """
    med = median_filter(image, kernel_size)
    return jnp.where(params["applied"], med, image)


@op(
    "pixelate",
    params={
        "block": Param((4, 8), kind="int_or_pair", low=1, high=512,
                       doc="block side in pixels, or an inclusive (low, high) range"),
        "p": _P,
    },
    sample=coin,
    reference="mean-pool then nearest upsample (PIL resize BOX then NEAREST when divisible)",
    api_version=API,
)
def pixelate(image, params, *, p):
    """Replaces each ``block`` x ``block`` tile (anchored at the top-left corner) with its mean.

    Per sample a block side is drawn (inclusive integer range) and the op is applied with
    probability ``p``. Tiles cut by the right or bottom edge average only the pixels they hold.
    When the block divides the image this equals PIL ``resize(size // block, BOX)`` followed by
    ``resize(size, NEAREST)``; uint8 means are rounded half to even (PIL rounds half up).
    Computed as block sums (two scatter-adds: rows into row blocks, then the columns of the
    transposed sums into column blocks; exact for uint8, whose sums are whole numbers below
    2^24 in float32) spread back over the blocks by one gather and divided by each block's
    area; on a TPU the sums are two matrix products (the same uint8 values; float32 sums
    within float32 rounding of the CPU's). Params: ``block`` (a whole number), ``applied`` (bool, ``uniform < p``).
    """
    out = _block_means(image, jnp.maximum(params["block"].astype(jnp.int32), 1))
    out = to_dtype(out, image.dtype, rounding="round")
    return jnp.where(params["applied"], out, image)


def _block_means_batch(x: jax.Array, b: jax.Array) -> jax.Array:
    """Each value's block mean, float32, for images ``x`` ``(N, H, W, C)`` with block sides
    ``b`` ``(N,)`` int32 (blocks anchored at the top-left corner, partial at the edges): block
    sums by scatters; on a TPU, which scatters and gathers element by element (717 ms a B=256
    224^2 batch on a TPU v5e), by matrix products (:func:`_block_sums_product`)."""
    sums = platform_dependent(x, b, tpu=_block_sums_product, default=_block_sums_scattered)
    n, h, w, c = x.shape

    def extent(size):  # each index's block length (the last block may be cut)
        start = (jnp.arange(size, dtype=jnp.int32)[None, :] // b[:, None]) * b[:, None]
        return (jnp.minimum(start + b[:, None], size) - start).astype(jnp.float32)

    return sums / (extent(h)[:, :, None, None] * extent(w)[:, None, :, None])


def _block_sums_product(x: jax.Array, b: jax.Array) -> jax.Array:
    """:func:`_block_sums_scattered` as two matrix passes (``augjax.kernels.tap_passes``'s, at
    ``Precision.HIGHEST``): along each axis ``S[i, j] = [i // b == j // b]`` sums each value's
    block and spreads the sum back over it. uint8 sums are whole numbers below 2^24: the same
    values; float32 sums are added in another order (within float32 rounding of them)."""
    n, h, w, c = x.shape

    def spread(size):  # (N, size, size)
        block = jnp.arange(size, dtype=jnp.int32)[None, :] // b[:, None]
        return (block[:, :, None] == block[:, None, :]).astype(jnp.float32)

    def one(image, rows, cols):
        return matrix_pass(matrix_pass(image.reshape(h, w * c), rows, 0).reshape(h, w, c),
                           cols, 1)

    return jax.vmap(one)(x.astype(jnp.float32), spread(h), spread(w))


def _block_sums_scattered(x: jax.Array, b: jax.Array) -> jax.Array:
    """Each value's block sum, float32 (``x`` ``(N, H, W, C)``, ``b`` ``(N,)``): rows scattered
    into row blocks, then the columns of the transposed sums into column blocks, and spread
    back over the blocks by one gather."""
    n, h, w, c = x.shape
    img = jnp.arange(n, dtype=jnp.int32)[:, None]
    ids_r = (img * h + jnp.arange(h, dtype=jnp.int32)[None, :] // b[:, None]).reshape(-1)
    ids_c = (img * w + jnp.arange(w, dtype=jnp.int32)[None, :] // b[:, None]).reshape(-1)
    rows = jnp.zeros((n * h, w * c), jnp.float32).at[ids_r].add(
        x.astype(jnp.float32).reshape(n * h, w * c), indices_are_sorted=True)
    rows = rows.reshape(n, h, w, c).transpose(0, 2, 1, 3).reshape(n * w, h * c)
    sums = jnp.zeros((n * w, h * c), jnp.float32).at[ids_c].add(rows, indices_are_sorted=True)
    bb = b[:, None, None, None]
    at = ((jnp.arange(n, dtype=jnp.int32)[:, None, None, None] * w
           + jnp.arange(w, dtype=jnp.int32)[None, None, :, None] // bb) * h
          + jnp.arange(h, dtype=jnp.int32)[None, :, None, None] // bb) * c \
        + jnp.arange(c, dtype=jnp.int32)[None, None, None, :]
    return sums.reshape(-1)[at]  # (N, H, W, C): the sum of each value's block


@jax.custom_jvp
def _block_means(image, b):
    return _block_means_vmappable(image, b)


@_block_means.defjvp
def _block_means_jvp(primals, tangents):
    """Block means are linear in the image: the tangent is the block means of the tangent,
    computed with plain primitives (which reverse mode can transpose; a custom_vmap cannot)."""
    image, b = primals
    return _block_means(image, b), _block_means_batch(tangents[0][None], b[None])[0]


@custom_vmap
def _block_means_vmappable(image, b):
    return _block_means_batch(image[None], b[None])[0]


@_block_means_vmappable.def_vmap
def _block_means_batched(axis_size, in_batched, image, b):
    """A batch: one scatter per pass over the whole batch (no per-image batched indices)."""
    image, b = broadcast_unbatched(axis_size, in_batched, (image, b))
    return _block_means_batch(image, b), True
