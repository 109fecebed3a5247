""":func:`augjax.kernels.correlate1d` of float32 images as a Pallas (Triton) kernel.

XLA's form takes the taps as shifted views of a reflect-padded copy; for long kernels
(elastic_transform blurs its two displacement fields per image with 41 taps) XLA's fusion of
the padding's concatenate into every view cost 0.54 + 0.32 ms on an H200 at B=256. A program
here takes ``block`` consecutive values of the ``(H, W * C)`` image and, for each tap, reads
the values at the tap's offset with the row or column reflected (reflect-101) in place, so
nothing is padded. The sum runs in tap order, as XLA's does (``v_0 k_0``, then ``+ v_t k_t``).
Tiles are :mod:`augjax.kernels._pallas`'s.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from augjax.kernels._pallas import (
    AVAILABLE,
    compiler_params,
    gather,
    reflect101,
    tile,
    tile_start,
)

__all__ = ["AVAILABLE", "correlate1d_kernel"]

#: Values per program (a power of two).
BLOCK = 1024
#: Warps per program.
NUM_WARPS = 4


def _kernel(k_ref, x_ref, o_ref, *, h, w, c, axis, taps, block):
    size = h * w * c
    start = tile_start(size, block)
    o = start + jnp.arange(block, dtype=jnp.int32)
    i = o // (w * c)
    rest = o - i * (w * c)
    j = rest // c
    ch = rest - j * c
    r = taps // 2
    acc = None
    for t in range(taps):
        if axis == 0:
            src = reflect101(i + (t - r), h, r) * (w * c) + rest
        else:
            src = i * (w * c) + reflect101(j + (t - r), w, r) * c + ch
        v = gather(x_ref, src) * k_ref[t]
        acc = v if acc is None else acc + v
    o_ref[pl.ds(start, block)] = acc


def correlate1d_kernel(x: jax.Array, kernel: jax.Array, axis: int,
                       interpret: bool = False) -> jax.Array:
    """``correlate1d(x, kernel, axis)`` of a float32 ``(H, W, C)`` image (reflect-101
    borders, odd static kernel length, values may be traced). ``interpret``: run with Pallas'
    interpreter (CPU, tests)."""
    h, w, c = x.shape
    size = h * w * c
    kernel = jnp.asarray(kernel, jnp.float32)
    if size == 0:
        return x
    block = tile(size, BLOCK)
    out = pl.pallas_call(
        functools.partial(_kernel, h=h, w=w, c=c, axis=axis, taps=kernel.shape[0],
                          block=block),
        out_shape=jax.ShapeDtypeStruct((size,), jnp.float32),
        grid=(pl.cdiv(size, block),),
        interpret=interpret,
        compiler_params=compiler_params(NUM_WARPS),
    )(kernel, x.astype(jnp.float32).reshape(size))
    return out.reshape(h, w, c)
