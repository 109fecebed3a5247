"""The sparse correlation of :func:`augjax.kernels.taps.filter_taps` as a Pallas (Triton)
kernel for uint8 images: each image reads only its kernel's nonzero cells.

Under ``vmap`` XLA cannot give each image its own loop: the shifted views of
:func:`augjax.kernels.taps.correlate_taps` read every cell of the kernel for every image (49
for a 7x7 motion line, of which 7 to 19 are nonzero). A Pallas program works on one tile of one
image and loops over that image's ``count`` cells.

A program takes a tile of ``rows`` rows and ``cols`` consecutive values of the ``(H, W * C)``
image. For each cell it reflects (reflect-101) the tile's row indices and its column indices
as two short vectors and adds them per value, so the image is never padded and a value's
index costs one addition per cell. The sum is clamped, rounded half to even and stored as
uint8. Rounding is :mod:`augjax.kernels.pallas`'s.

An earlier form took flat tiles of 2048 values and reflected each value's row and column for
every cell (two divisions per value, about 20 integer operations per value and cell). On an
H200 (B=256, 224x224x3, one jitted call timed with its dispatch) it took 0.78 ms for
``kernel_size`` 7 and 1.24 for 15; these tiles take 0.63 and 1.08, the same values (bitwise).
``motion_blur`` in ``benchmarks/gpu.py``: 0.48 -> 0.44 ms (kornia's ``RandomMotionBlur``: 2.05).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from augjax.kernels.pallas import (
    AVAILABLE,
    call,
    gather,
    pl_triton,
    reflect101,
    round_half_even,
    tile,
    tile_start,
)
from augjax.kernels.pixels import to_dtype

__all__ = ["AVAILABLE", "taps_kernel"]
#: Rows and values per program (powers of two) and warps per program. H200, B=256, the timing
#: above, kernel_size 7 / 15 (ms; rows x values x warps): 4 x 256 x 2 0.627 / 1.084,
#: 8 x 256 x 4 0.639 / 1.154, 16 x 128 x 4 0.659 / 1.132, 32 x 64 x 4 0.668 / 1.065,
#: 16 x 256 x 8 0.667 / 1.097, 8 x 128 x 2 0.766 / 1.111, 8 x 512 x 4 0.836 / 1.321,
#: 2 x 1024 x 4 0.843 / 1.425.
ROWS = 4
COLS = 256
NUM_WARPS = 2


def _kernel(count_ref, dy_ref, dx_ref, wt_ref, x_ref, o_ref, *, h, w, c, rows, cols, reach):
    wc = w * c
    i = tile_start(h, rows, 0) + jnp.arange(rows, dtype=jnp.int32)
    q = tile_start(wc, cols, 1) + jnp.arange(cols, dtype=jnp.int32)
    j = q // c
    ch = q - j * c

    def tap(k, acc):
        row = reflect101(i + dy_ref[k], h, reach) * wc
        col = reflect101(j + dx_ref[k], w, reach) * c + ch
        return acc + gather(x_ref, row[:, None] + col[None, :]).astype(jnp.float32) * wt_ref[k]

    acc = lax.fori_loop(0, count_ref[0], tap, jnp.zeros((rows, cols), jnp.float32))
    out = to_dtype(acc, o_ref.dtype, rounding=round_half_even)  # filter_taps' cast
    pl_triton.store(o_ref.at[i[:, None] * wc + q[None, :]], out)


def taps_kernel(image: jax.Array, count: jax.Array, dy: jax.Array, dx: jax.Array,
                weights: jax.Array, reach: int, interpret: bool = False) -> jax.Array:
    """``sum_k weights[k] * image[reflect(i + dy[k]), reflect(j + dx[k])]`` over ``k < count``
    for a uint8 ``(H, W, C)`` image, clamped and rounded half to even (uint8 out). ``reach``
    (static) bounds ``|dy|`` and ``|dx|``. ``interpret``: run with Pallas' interpreter (CPU,
    tests)."""
    h, w, c = image.shape
    if h * w * c == 0:
        return image
    rows, cols = tile(h, ROWS), tile(w * c, COLS)
    out = call(functools.partial(_kernel, h=h, w=w, c=c, rows=rows, cols=cols, reach=reach),
               jax.ShapeDtypeStruct((h * w * c,), image.dtype),
               (pl.cdiv(h, rows), pl.cdiv(w * c, cols)),
               (jnp.reshape(count, (1,)).astype(jnp.int32), dy, dx, weights.astype(jnp.float32),
                image.reshape(h * w * c)), num_warps=NUM_WARPS, interpret=interpret)
    return out.reshape(h, w, c)
