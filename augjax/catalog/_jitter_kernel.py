"""ColorJitter as a Pallas kernel with real per-image control flow (the "pallas" form).

Under ``vmap`` an XLA program cannot branch per sample: every sample's order is computed by
selecting among stages that all run (see :mod:`augjax.catalog._jitter`, seven stage evaluations
per pixel where four apply, and contrast's prefix evaluated a second time). A Pallas program
works on one tile of one image, so it can read that image's order and branch: each pixel goes
through exactly its image's active adjustments (``lax.switch`` per stage, one scalar test per
tile), which is what makes the kernel cheap where it is compute-bound (the GPU).

Two kernels, both over a grid of (image, tile of ``block`` pixels), reading the interleaved
``(H, W, 3)`` image directly (one strided load per channel, no layout change, no float copy):

- the contrast pass (only when contrast is on): the stages before contrast, then the sum of the
  (floored, for uint8) grayscale over the tile, one partial sum per tile; the mean is their sum
  over the image divided by its pixel count.
- the chain pass: every active stage in the image's order, contrast with that mean, stored in
  the input dtype. It recomputes the stages before contrast: writing the image as contrast sees
  it from the contrast pass instead (exact: uint8 levels are whole) was measured on an H200 at
  0.166 vs 0.174 ms (B=256), inside the noise, and left out.

The last tile of an image is moved back to end at the image's last pixel (so no load or store is
ever out of bounds and no tail masking is needed); the pixels it shares with the previous tile
are computed twice with the same result and left out of its partial sum. Same arithmetic as the
XLA forms, stage by stage: bitwise where Pallas interprets the kernel (CPU). Compiled by Triton
the float divisions are not correctly rounded as XLA's are (an ulp of float32): on an H200, 159
of 38.5 M uint8 elements moved, by at most 3 levels.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from augjax.catalog._tv_color import hue_planes
from augjax.kernels.pallas import (
    AVAILABLE,
    call,
    owned,
    planes,
    store_planes,
    tile,
    tile_start,
)
from augjax.kernels.enhance import contrast
from augjax.kernels.pixels import blend_gray, blend_planes, planes_gray, to_dtype

__all__ = ["AVAILABLE", "IDENTITY", "jitter_kernel"]

#: Pixels per program (a power of two, as Triton's blocks must be; smaller images: the largest
#: power of two that fits).
BLOCK = 512
#: Warps per program.
NUM_WARPS = 4
#: The stage index that applies nothing (inactive adjustments, stages after contrast in the
#: contrast pass).
IDENTITY = 4


def _branches(dtype):
    """``lax.switch`` branches ``(planes, factors, mean) -> planes`` for stages 0..4: the same
    blends as the XLA kernels (bitwise the same stage); contrast is
    :func:`augjax.kernels.enhance.contrast` with the mean of the contrast pass."""
    return (
        lambda p, f, m: blend_planes(p, 0.0, f[0], dtype),
        lambda p, f, m: tuple(contrast(v, m, f[1], dtype) for v in p),
        lambda p, f, m: blend_planes(p, blend_gray(*p, dtype), f[2], dtype),
        lambda p, f, m: hue_planes(*p, f[3], dtype),
        lambda p, f, m: p,
    )


def _load(x_ref, start, block: int):
    """The tile's pixels as float32 planes, three strided loads straight from the interleaved
    image. (Reading uint8 images as uint32 words instead, 4 pixels in 3 words, channels by
    shifts, was 2x slower on an H200, B=256: 0.392 vs 0.181 ms: four lanes of planes per
    thread cost more registers than the wider accesses save.)"""
    return tuple(v.astype(jnp.float32) for v in planes(x_ref, start, block, 3))


def _scalars(seq_ref, par_ref):
    seq = [seq_ref[j] for j in range(4)]
    return seq, [par_ref[j] for j in range(4)], par_ref[4]


def _contrast_kernel(seq_ref, par_ref, x_ref, o_ref, *, pixels, block, dtype):
    seq, factors, _ = _scalars(seq_ref, par_ref)
    start = tile_start(pixels, block)
    p = _load(x_ref, start, block)
    branches = _branches(dtype)
    before = True  # stages until contrast (seq holds each adjustment once)
    for j in range(4):
        before = before & (seq[j] != 1)
        p = lax.switch(jnp.where(before, seq[j], IDENTITY), branches, p, factors, 0.0)
    # contrast_mean's gray, summed by tiles here (the mean is their sum over the image divided
    # by its pixel count, in XLA). uint8: integer levels, whose sums are exact in float32
    # (< 2**24) in any order
    gray = jnp.where(owned(start, block, pl.program_id(0) * block), planes_gray(p, dtype), 0.0)
    o_ref[pl.program_id(0)] = jnp.sum(gray)


def _chain_kernel(seq_ref, par_ref, x_ref, o_ref, *, pixels, block, dtype):
    seq, factors, mean = _scalars(seq_ref, par_ref)
    start = tile_start(pixels, block)
    p = _load(x_ref, start, block)
    branches = _branches(dtype)
    for j in range(4):
        p = lax.switch(seq[j], branches, p, factors, mean)
    store_planes(o_ref, start, block, [to_dtype(v, dtype) for v in p])


def _call(kernel, out_shape, pixels, dtype, interpret, *args):
    block = tile(pixels, BLOCK)
    tiles = pl.cdiv(pixels, block)
    return call(functools.partial(kernel, pixels=pixels, block=block, dtype=dtype),
                out_shape(tiles), (tiles,), args, num_warps=NUM_WARPS, interpret=interpret)


def jitter_kernel(image: jax.Array, seq: jax.Array, factors: jax.Array, contrast: bool,
                  interpret: bool = False) -> jax.Array:
    """One image through its adjustments.

    Args:
        image: ``(H, W, 3)`` in its own dtype (uint8 or float).
        seq: ``(4,)`` int32, the stages in this image's order, 4 (none) for inactive ones.
        factors: ``(4,)`` float32 factors (hue: the shift in turns).
        contrast: whether contrast is among the active stages (static): runs the mean pass.
        interpret: run the kernels with Pallas' interpreter (CPU, tests).
    """
    h, w, _ = image.shape
    if h * w == 0:
        return image
    flat = image.reshape(h * w * 3)
    seq = seq.astype(jnp.int32)
    mean = jnp.float32(0.0)
    if contrast:
        par = jnp.concatenate([factors, jnp.zeros(4, jnp.float32)])
        sums = _call(_contrast_kernel, lambda n: jax.ShapeDtypeStruct((n,), jnp.float32),
                     h * w, image.dtype, interpret, seq, par, flat)
        mean = jnp.sum(sums) / (h * w)
    par = jnp.concatenate([factors, jnp.stack([mean]), jnp.zeros(3, jnp.float32)])
    out = _call(_chain_kernel, lambda n: jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                h * w, image.dtype, interpret, seq, par, flat)
    return out.reshape(image.shape)
