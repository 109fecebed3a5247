"""The sparse correlation of :func:`augjax.kernels.taps.filter_taps` as a Pallas (Triton)
kernel for uint8 images: each image reads only its kernel's nonzero cells.

Under ``vmap`` XLA cannot give each image its own loop: the shifted views of
:func:`augjax.kernels.taps.correlate_taps` read every cell of the kernel for every image (49
for a 7x7 motion line, of which 7 to 19 are nonzero). A Pallas program works on one tile of one
image and loops over that image's ``count`` cells.

A program takes ``block`` consecutive values of the ``(H, W * C)`` image; for each cell it
reads the values at the cell's offset, the rows and columns reflected (reflect-101) inside the
kernel, so the image is never padded (on an H200 at B=256, XLA's reflect padding of the uint8
batch took 0.27 ms and a kernel reading the padded copy 0.23; this one takes 0.45 in all, its
loads being per-value gathers). The sum is clamped, rounded half to even and stored as uint8.
Tiles and rounding are :mod:`augjax.kernels._pallas`'s.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from augjax.kernels._pallas import (
    AVAILABLE,
    compiler_params,
    gather,
    reflect101,
    round_half_even,
    tile,
    tile_start,
)

__all__ = ["AVAILABLE", "taps_kernel"]
#: Values per program (a power of two). 512 to 4096 measured within 5% of each other on an
#: H200 (B=256, 224x224x3; an earlier form of this kernel that read a padded copy).
BLOCK = 2048
#: Warps per program.
NUM_WARPS = 4


def _kernel(count_ref, dy_ref, dx_ref, wt_ref, x_ref, o_ref, *, h, w, c, block, reach):
    size = h * w * c
    start = tile_start(size, block)
    o = start + jnp.arange(block, dtype=jnp.int32)
    i = o // (w * c)
    rest = o - i * (w * c)
    j = rest // c
    ch = rest - j * c

    def tap(k, acc):
        src = (reflect101(i + dy_ref[k], h, reach) * (w * c)
               + reflect101(j + dx_ref[k], w, reach) * c + ch)
        return acc + gather(x_ref, src).astype(jnp.float32) * wt_ref[k]

    acc = lax.fori_loop(0, count_ref[0], tap, jnp.zeros((block,), jnp.float32))
    o_ref[pl.ds(start, block)] = round_half_even(jnp.clip(acc, 0.0, 255.0)).astype(o_ref.dtype)


def taps_kernel(image: jax.Array, count: jax.Array, dy: jax.Array, dx: jax.Array,
                weights: jax.Array, reach: int, interpret: bool = False) -> jax.Array:
    """``sum_k weights[k] * image[reflect(i + dy[k]), reflect(j + dx[k])]`` over ``k < count``
    for a uint8 ``(H, W, C)`` image, clamped and rounded half to even (uint8 out). ``reach``
    (static) bounds ``|dy|`` and ``|dx|``. ``interpret``: run with Pallas' interpreter (CPU,
    tests)."""
    h, w, c = image.shape
    size = h * w * c
    if size == 0:
        return image
    block = tile(size, BLOCK)
    out = pl.pallas_call(
        functools.partial(_kernel, h=h, w=w, c=c, block=block, reach=reach),
        out_shape=jax.ShapeDtypeStruct((size,), image.dtype),
        grid=(pl.cdiv(size, block),),
        interpret=interpret,
        compiler_params=compiler_params(NUM_WARPS),
    )(jnp.reshape(count, (1,)).astype(jnp.int32), dy, dx, weights.astype(jnp.float32),
      image.reshape(size))
    return out.reshape(h, w, c)
