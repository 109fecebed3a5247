""":func:`augjax.kernels.sample` (torchvision's ``grid_sample`` rule) as Pallas (Triton) kernels
for uint8 images, which :func:`augjax.kernels.remap` and :func:`augjax.kernels.elastic` run on
CUDA, and the per-tile sampler they share with the policy layer's warps (elastic's kernel
reads the displacement and makes the coordinates itself, which are never stored: elastic's
pixels in 0.127 ms on an H200 at B=256).

XLA's form gathers each bilinear tap of every channel as a separate value of a float copy of
the image; this kernel reads the source coordinates of a tile of pixels, gathers the four taps
of each channel from the uint8 image and writes the tile's pixels, interleaved, in one pass.
The arithmetic is :func:`augjax.kernels.warp.sample`'s: the functions of
:mod:`augjax.kernels.grid_sample` on the tile's pixels, so the pixels are the same (checked
interpreted on a CPU and compiled on a GPU, ``tests/catalog``). Tiles and rounding are
:mod:`augjax.kernels.pallas`'s.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from augjax.kernels.grid_sample import bilinear_taps, elastic_source, fill_blend, nearest_tap
from augjax.kernels.pallas import (
    AVAILABLE,
    call,
    gather,
    round_half_even,
    store_planes,
    tile,
    tile_start,
    to_uint8,
)

__all__ = ["AVAILABLE", "elastic_kernel", "pick_pixels", "sample_kernel", "sample_pixels"]

#: Pixels per program (a power of two). H200, B=256, 224x224x3, elastic_transform's
#: coordinates: 256 / 512 / 1024 / 2048 pixels with 8 warps 0.121 / 0.130 / 0.150 / 0.153 ms,
#: with 4 warps 0.127 / 0.159 / 0.150 / 0.164, with 2 warps 0.21-0.23 (XLA's form 0.32 with its
#: coordinates' arithmetic).
BLOCK = 256
#: Warps per program.
NUM_WARPS = 8


def pick_pixels(x_ref, fill_ref, index, inside, *, c, fill):
    """The pixels at ``index`` (pixel indices) of the interleaved uint8 image in ``x_ref``
    where ``inside``, the fill elsewhere (zeros, or ``fill_ref``'s ``(C,)`` fill rounded half
    to even where ``fill``): one uint8 vector per channel."""
    out = []
    for k in range(c):
        outside = jnp.uint8(0) if not fill else to_uint8(fill_ref[k])
        out.append(jnp.where(inside, gather(x_ref, index * c + k), outside))
    return tuple(out)


def sample_pixels(x_ref, fill_ref, sx, sy, *, h, w, c, interpolation, fill):
    """``sample`` of the interleaved uint8 ``(H * W * C,)`` image in ``x_ref`` at the source
    coordinates ``sx``, ``sy`` (float vectors): one uint8 vector per channel. ``fill``
    (static): whether ``fill_ref`` holds a ``(C,)`` fill (torchvision's mask rule) or the
    padding is zeros."""
    if interpolation == "nearest":
        return pick_pixels(x_ref, fill_ref, *nearest_tap(sx, sy, h, w, round_half_even), c=c,
                           fill=fill)
    taps, mask = bilinear_taps(sx, sy, h, w)
    values = [0.0] * c
    for index, wt in taps:
        for k in range(c):
            values[k] = values[k] + gather(x_ref, index * c + k).astype(jnp.float32) * wt
    return tuple(to_uint8(fill_blend(v, fill_ref[k], mask) if fill else v)
                 for k, v in enumerate(values))


def _kernel(fill_ref, sx_ref, sy_ref, x_ref, o_ref, *, h, w, c, pixels, block, interpolation,
            fill):
    start = tile_start(pixels, block)
    sx = sx_ref[pl.ds(start, block)]
    sy = sy_ref[pl.ds(start, block)]
    store_planes(o_ref, start, block, sample_pixels(x_ref, fill_ref, sx, sy, h=h, w=w, c=c,
                                                    interpolation=interpolation, fill=fill))


def _elastic_kernel(fill_ref, bx_ref, by_ref, d_ref, x_ref, o_ref, *, h, w, c, pixels, block,
                    interpolation, fill):
    start = tile_start(pixels, block)
    gx = bx_ref[pl.ds(start, block)] + d_ref[pl.ds(start * 2, block, stride=2)]
    gy = by_ref[pl.ds(start, block)] + d_ref[pl.ds(start * 2 + 1, block, stride=2)]
    sx, sy = elastic_source(gx, w), elastic_source(gy, h)
    store_planes(o_ref, start, block, sample_pixels(x_ref, fill_ref, sx, sy, h=h, w=w, c=c,
                                                    interpolation=interpolation, fill=fill))


def _call(body, image, inputs, pixels, interpolation, fill, interpret):
    """``body(fill_ref, *input_refs, image_ref, out_ref)`` over tiles of the ``pixels`` output
    pixels: ``(pixels * C,)`` interleaved, in the image's dtype."""
    h, w, c = image.shape
    block = tile(pixels, BLOCK)
    fill_v = (jnp.zeros((c,), jnp.float32) if fill is None
              else jnp.broadcast_to(jnp.asarray(fill, jnp.float32), (c,)))
    return call(functools.partial(body, h=h, w=w, c=c, pixels=pixels, block=block,
                                  interpolation=interpolation, fill=fill is not None),
                jax.ShapeDtypeStruct((pixels * c,), image.dtype), (pl.cdiv(pixels, block),),
                (fill_v, *inputs, image.reshape(h * w * c)), num_warps=NUM_WARPS,
                interpret=interpret)


def sample_kernel(image: jax.Array, x: jax.Array, y: jax.Array, interpolation: str,
                  fill: jax.Array | None, interpret: bool = False) -> jax.Array:
    """:func:`augjax.kernels.sample` of a uint8 ``(H, W, C)`` image at the float32 source
    coordinates ``x``, ``y`` ``(Ho, Wo)``: ``(Ho, Wo, C)`` uint8. ``interpret``: run with
    Pallas' interpreter (CPU, tests)."""
    h, w, c = image.shape
    ho, wo = x.shape
    pixels = ho * wo
    if pixels == 0 or h * w == 0:
        raise ValueError("sample_kernel: the image and the coordinates must have pixels "
                         f"(got {image.shape} and {x.shape}); remap gives those to XLA")
    coords = (x.astype(jnp.float32).reshape(pixels), y.astype(jnp.float32).reshape(pixels))
    return _call(_kernel, image, coords, pixels, interpolation, fill,
                 interpret).reshape(ho, wo, c)


def elastic_kernel(image: jax.Array, base_x: jax.Array, base_y: jax.Array,
                   displacement: jax.Array, interpolation: str, fill: jax.Array | None,
                   interpret: bool = False) -> jax.Array:
    """:func:`augjax.kernels.elastic` of a uint8 ``(H, W, C)`` image: the identity grid in
    ``grid_sample`` units (``base_x``, ``base_y``, ``(H, W)``) plus the ``(H, W, 2)``
    displacement, taken to pixels (``((g + 1) * size - 1) / 2``) and sampled, in one pass: the
    coordinates are never stored. ``interpret``: run with Pallas' interpreter (CPU, tests)."""
    h, w, c = image.shape
    pixels = h * w
    if pixels == 0:
        raise ValueError(f"elastic_kernel: the image must have pixels (got {image.shape}); "
                         "elastic gives those to XLA")
    grid = (base_x.astype(jnp.float32).reshape(pixels), base_y.astype(jnp.float32).reshape(pixels),
            displacement.astype(jnp.float32).reshape(pixels * 2))
    return _call(_elastic_kernel, image, grid, pixels, interpolation, fill,
                 interpret).reshape(h, w, c)
