"""Level statistics of one HWC image, per channel: histograms, PIL's equalization table, and
the min-max stretch of autocontrast, as torchvision computes them.

- :func:`histogram` counts the levels of an integer image (``(bins, C)`` int32);
- :func:`equalize_lut` turns those counts into PIL's ``ImageOps.equalize`` lookup table (which
  torchvision's ``equalize`` reproduces), :func:`lookup` applies a table;
- :func:`value_range` and :func:`stretch` are torchvision ``autocontrast``: the per-channel
  minimum and maximum, and ``(x - min) / ((max - min) / bound)`` with a true division.

All are traceable (no Python branch on values) and work on one image; vmap them for a batch.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from augjax.kernels.level_products import PRODUCT_PIXELS, histogram_product, lookup_product
from augjax.kernels.partition import partitioned
from augjax.kernels.platform import platform_dependent
from augjax.kernels.batching import broadcast_unbatched
from augjax.kernels.pixels import bound

__all__ = ["equalize_lut", "histogram", "level_ramp", "lookup", "map_levels", "stretch",
           "value_range"]


def histogram(levels: jax.Array, bins: int = 256, needed: jax.Array | None = None) -> jax.Array:
    """The per-channel histogram of an integer image: ``(bins, C)`` int32 counts of each level
    ``0 .. bins - 1`` in ``levels`` ``(H, W, C)`` (values outside that range are dropped).

    ``needed`` (a bool scalar, batched with the image under ``vmap``) marks the images whose
    counts are read: the others get zeros, and on a GPU cost almost nothing (a policy layer
    needs the histogram only for the samples that chose equalize)."""
    levels = jax.lax.stop_gradient(levels)  # counts: no gradient
    if needed is None:
        return _histogram_fn(bins)(levels)
    return _masked_histogram_fn(bins)(levels, jnp.asarray(needed, bool))


#: Sub-histograms per image and channel on a GPU: neighbouring pixels count into different
#: copies, so the atomic adds of one warp rarely meet on one address (a photo's values cluster
#: on few levels). 32 copies measured 3.4x faster than one on an H200 (B=256, 224x224x3).
GPU_LANES = 32


def _flat_histogram(levels: jax.Array, bins: int, needed: jax.Array | None = None,
                    lanes: int = 1) -> jax.Array:
    """``(..., H, W, C)`` levels to ``(..., bins, C)`` counts with one scatter-add over a flat
    index (image, lane, channel, level): XLA's CPU scatter is several times faster on one flat
    index than on the ``(level, channel)`` pairs, or on the batched indices ``vmap`` would make.
    ``lanes`` copies of each histogram take the pixels in turn (summed at the end); the images
    where ``needed`` (``lead``-shaped bool) is False add nothing."""
    *lead, h, w, c = levels.shape
    images = math.prod(lead)
    q = levels.reshape(images, h * w, c).astype(jnp.int32)
    lane = (jnp.arange(h * w, dtype=jnp.int32) % lanes)[None, :, None]
    base = ((jnp.arange(images, dtype=jnp.int32)[:, None, None] * lanes + lane) * c
            + jnp.arange(c, dtype=jnp.int32)[None, None, :]) * bins
    total = images * lanes * c * bins
    keep = (q >= 0) & (q < bins)
    if needed is not None:
        keep = keep & needed.reshape(images, 1, 1)
    idx = jnp.where(keep, q + base, total).reshape(-1)
    counts = jnp.zeros((total,), jnp.int32).at[idx].add(1, mode="drop")
    counts = counts.reshape(images, lanes, c, bins).sum(axis=1)
    return jnp.swapaxes(counts.reshape(*lead, c, bins), -1, -2)


def _any_histogram(levels: jax.Array, bins: int, needed: jax.Array | None = None) -> jax.Array:
    """:func:`_flat_histogram` with one lane on a CPU; on CUDA the Pallas kernel of
    :mod:`augjax.kernels.histogram_pallas` for uint8 images and 256 bins; on a TPU (up to 256
    bins) a matrix product of one-hots (:func:`augjax.kernels.level_products.histogram_product`:
    the same counts; the scatter took 930 ms of equalize's B=256 batch on a TPU v5e); elsewhere
    the flat scatter with :data:`GPU_LANES` lanes."""

    def cpu(v, m):
        return _flat_histogram(v, bins, m)

    def gpu(v, m):
        return _flat_histogram(v, bins, m, GPU_LANES)

    *_, h, w, _ = levels.shape
    kernel = {}
    if (bins == 256 and levels.dtype == jnp.uint8 and 0 < h * w < 2**24 and not partitioned()
            and _pallas_available()):
        kernel["cuda"] = _pallas_histogram
    if bins <= 256 and h * w < PRODUCT_PIXELS:
        kernel["tpu"] = lambda v, m: histogram_product(v, bins, m)
    return platform_dependent(levels, needed, cpu=cpu, default=gpu, **kernel)


def _pallas_histogram(levels: jax.Array, needed: jax.Array | None) -> jax.Array:
    """256-bin counts of uint8 ``(..., H, W, C)`` images, one Pallas kernel over the batch
    (H200, B=256, 224x224x3: 0.040 ms, against about 0.49 for the 32-lane scatter)."""
    from augjax.kernels.histogram_pallas import image_histogram

    *lead, h, w, c = levels.shape
    flat = levels.reshape(-1, h, w, c)
    keep = (jnp.ones((flat.shape[0],), bool) if needed is None
            else jnp.broadcast_to(needed, lead).reshape(-1))
    return jax.vmap(image_histogram)(flat, keep).reshape(*lead, 256, c)


def _pallas_available() -> bool:
    from augjax.kernels.histogram_pallas import AVAILABLE

    return AVAILABLE


@functools.cache
def _histogram_fn(bins: int):
    @custom_vmap
    def hist(levels):
        return _any_histogram(levels, bins)

    @hist.def_vmap
    def _batched(axis_size, in_batched, levels):  # a batch of images: still one flat scatter
        return _any_histogram(levels, bins), in_batched[0]

    return hist


@functools.cache
def _masked_histogram_fn(bins: int):
    @custom_vmap
    def hist(levels, needed):
        return _any_histogram(levels, bins, needed)

    @hist.def_vmap
    def _batched(axis_size, in_batched, levels, needed):
        levels, needed = broadcast_unbatched(axis_size, in_batched, (levels, needed))
        return _any_histogram(levels, bins, needed), True

    return hist


def equalize_lut(hist: jax.Array) -> tuple[jax.Array, jax.Array]:
    """PIL's equalization table for each channel's ``hist`` ``(bins, C)``.

    With ``pixels`` the count of the channel and ``step = (pixels - hist[top]) // (bins - 1)``,
    ``top`` its highest level present: ``lut[0] = 0`` and ``lut[i] = (cumsum(hist)[i - 1] +
    step // 2) // step``, clipped to ``bins - 1`` (torchvision's ``equalize``). Returns
    ``(lut, valid)``: the ``(bins, C)`` int32 table, and ``(C,)`` bool, False where ``step`` is
    0 (one level, or nearly), for which PIL leaves the channel unchanged.
    """
    bins = hist.shape[0]
    cum = jnp.cumsum(hist, axis=0)
    pixels = cum[-1]
    top = jnp.argmax(cum == pixels[None, :], axis=0)  # the last non-empty bin
    # Counts are non-negative: truncating divisions (lax.div) are the floor divisions, without
    # the sign corrections of ``//`` that XLA's CPU backend would fuse into the lookup's pass
    # and repeat for every pixel (with the table :func:`lookup` stores: equalize 6.0 -> 2.0 ms
    # at B=16 on 2 cores).
    step = _div(pixels - jnp.take_along_axis(hist, top[None, :], axis=0)[0], bins - 1)
    lut = _div(cum[:-1] + _div(step, 2), jnp.maximum(step, 1))
    lut = jnp.concatenate([jnp.zeros_like(lut[:1]), jnp.clip(lut, 0, bins - 1)], axis=0)
    return lut, step != 0


def _div(a: jax.Array, b) -> jax.Array:
    """``a // b`` for non-negative integers, as one truncating division."""
    a = jnp.asarray(a)
    return jax.lax.div(a, jnp.broadcast_to(jnp.asarray(b, a.dtype), a.shape))


def _stored(table: jax.Array) -> jax.Array:
    """``table`` (integers, ``(bins, C)``) as XLA's CPU backend stores it: a cumulative sum
    (a reduce-window, which XLA does not fuse into its consumers) of the table's differences."""
    t = table.astype(jnp.int32)
    steps = jnp.concatenate([t[:1], t[1:] - t[:-1]], axis=0)
    return jnp.cumsum(steps, axis=0).astype(table.dtype)


def level_ramp(dtype, channels: int) -> jax.Array:
    """Every level ``0..255`` as a ``(256, 1, channels)`` image of ``dtype``: a level map
    applied to it gives the per-channel table that :func:`lookup` applies to a whole image."""
    return jnp.broadcast_to(jnp.arange(256, dtype=dtype)[:, None, None], (256, 1, channels))


def lookup(levels: jax.Array, lut: jax.Array) -> jax.Array:
    """``lut[levels[..., c], c]`` for every pixel: a per-channel table ``(bins, C)`` applied to
    an integer image ``(H, W, C)``; returns the table's dtype. On a TPU a uint8 table of 256
    levels applied to a uint8 image is read by a matrix product instead of a gather
    (:func:`augjax.kernels.level_products.lookup_product`, the same values)."""
    if levels.dtype == jnp.uint8 and lut.dtype == jnp.uint8 and lut.shape[0] == 256:
        return platform_dependent(levels, lut, tpu=lookup_product, default=_gathered_lookup)
    return _gathered_lookup(levels, lut)


def map_levels(image: jax.Array, level_map, *operands: jax.Array) -> jax.Array:
    """``level_map(image, *operands)`` for a per-value map (each output value depends only on
    the input value and its channel). A uint8 image maps each channel's 256 levels once and
    looks its pixels up (:func:`level_ramp`, :func:`lookup`: one evaluation per level instead
    of per pixel); on a TPU, which gathers slowly, the map is applied to every pixel (the same
    values). Other dtypes are mapped directly."""
    if image.dtype != jnp.uint8:
        return level_map(image, *operands)

    def table(x, *ops):
        return lookup(x, level_map(level_ramp(jnp.uint8, x.shape[-1]), *ops)[:, 0, :])

    return platform_dependent(image, *operands, tpu=level_map, default=table)


def _gathered_lookup(levels: jax.Array, lut: jax.Array) -> jax.Array:
    """:func:`lookup` as a gather of the table (CPU, GPU, and other tables)."""
    h, w, c = levels.shape
    flat = levels.reshape(h * w, c).astype(jnp.int32)
    # The barrier keeps XLA from fusing the table's arithmetic (a cumsum, for equalize) into
    # the gather, where it would be recomputed for every pixel. XLA's CPU backend drops
    # barriers before it fuses; there an integer table goes through a running sum of its
    # differences (the same values), which XLA computes on its own.
    lut = jax.lax.optimization_barrier(lut)
    if jnp.issubdtype(lut.dtype, jnp.integer):
        lut = platform_dependent(lut, cpu=_stored, default=lambda t: t)
    return jnp.take_along_axis(lut, flat, axis=0).reshape(h, w, c)


#: Pixels per row of :func:`value_range`'s first pass.
_RANGE_LANES = 32


def value_range(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Each channel's smallest and largest value of ``x`` ``(H, W, C)``: two ``(C,)`` arrays.

    In two passes: over rows of 32 pixels (``32 C`` values, channel-interleaved), then over
    the 32 lanes. XLA reduces a long axis in front of a short channel axis slowly (5x on a
    CPU, more on a GPU); min and max are exact in any order."""
    h, w, c = x.shape
    if (h * w) % _RANGE_LANES:
        return x.min(axis=(0, 1)), x.max(axis=(0, 1))
    rows = x.reshape(h * w // _RANGE_LANES, _RANGE_LANES * c)
    lo = rows.min(axis=0).reshape(_RANGE_LANES, c).min(axis=0)
    hi = rows.max(axis=0).reshape(_RANGE_LANES, c).max(axis=0)
    return lo, hi


def stretch(x: jax.Array, lo: jax.Array, hi: jax.Array, dtype) -> jax.Array:
    """torchvision ``autocontrast``'s level map, bit for bit: ``clip((x - lo) / inv_scale, 0,
    bound)`` with ``inv_scale = (hi - lo) * (1 / bound)`` per channel (``bound`` 255 for uint8,
    1 for float), and ``lo = 0``, ``inv_scale = 1`` for a constant channel (``lo == hi``).
    ``x`` is float32 in ``dtype``'s scale; returns float32 (truncate with
    :func:`augjax.kernels.to_dtype`).

    XLA rewrites ``a / broadcast(b)`` as ``a * broadcast(1 / b)``, which rounds twice and moves
    some levels; the divisor is therefore formed per pixel (``inv_scale + 0 * x``, the same value
    for finite ``x``), which keeps a true division.
    """
    top = bound(dtype)
    flat = hi == lo
    inv_scale = jnp.where(flat, 1.0, (hi - lo) * (1.0 / top))
    lo = jnp.where(flat, 0.0, lo)
    return jnp.clip((x - lo) / (inv_scale + x * 0.0), 0.0, top)
