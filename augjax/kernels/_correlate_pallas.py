""":func:`augjax.kernels.correlate_separable` of float32 images as Pallas (Triton) kernels.

XLA's form takes the taps as shifted views of a reflect-padded copy: every output value reads
each of its ``k`` taps from the cache, so a 41-tap pass moves 41 times the image through L1
(elastic_transform blurs two displacement fields of 224x224 per image with 41 taps: 0.25 ms a
field on an H200 at B=256, and a kernel that loaded each tap's rows as a block took as long).
Here a program takes a strip of ``cols`` columns and ``rows`` consecutive output rows of an
``(n, L)`` array, loads each of the ``rows + k - 1`` source rows it needs once (its index
reflected, reflect-101) and keeps them in registers, and sums every output row from them:
``(rows + k - 1) / rows`` loads per value instead of ``k``. So it correlates along the first
axis; the pass along the width runs on the transposed image (XLA's transposes, which it may
fuse into the ops around them). The sums run in tap order, as
XLA's do (``v_0 k_0``, then ``+ v_t k_t``), so the values are the XLA form's. One pass over
a 224x224 field at B=256: 0.066 ms (the two passes and the transposes 0.172, XLA 0.241).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from augjax.kernels._pallas import AVAILABLE, compiler_params, pl_triton, reflect101

__all__ = ["AVAILABLE", "correlate_rows", "correlate_separable_kernel"]

#: Output rows per program (its source rows stay in registers). H200, B=256, one 224x224
#: field, 41 taps, both passes and the transposes (ms; rows / columns / warps): 8 / 128 / 2
#: 0.172, 12 / 256 / 4 0.172, 8 / 256 / 4 0.174, 12 / 128 / 2 0.173, 4 / 256 / 2 0.182,
#: 16 / 256 / 4 0.180, 32 / 256 / 8 0.182, 8 / 64 / 4 0.345 (XLA's form 0.241); bitwise XLA's
#: sums in every case.
ROWS = 8
#: The most columns a program takes (a power of two).
MAX_COLS = 128
#: Warps per program.
NUM_WARPS = 2


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _kernel(k_ref, x_ref, o_ref, *, n, length, taps, rows, cols):
    r = taps // 2
    i0 = pl.program_id(0) * rows
    j = pl.program_id(1) * cols + jnp.arange(cols, dtype=jnp.int32)
    inside = j < length
    src = [pl_triton.load(x_ref.at[reflect101(i0 + (q - r), n, r + rows) * length + j],
                          mask=inside, other=0.0)
           for q in range(rows + taps - 1)]
    k = [k_ref[t] for t in range(taps)]
    for o in range(rows):
        acc = src[o] * k[0]
        for t in range(1, taps):
            acc = acc + src[o + t] * k[t]
        pl_triton.store(o_ref.at[(i0 + o) * length + j], acc, mask=inside & (i0 + o < n))


def correlate_rows(x: jax.Array, kernel: jax.Array, interpret: bool = False) -> jax.Array:
    """``sum_t kernel[t] * x[reflect(i + t - r), j]`` of a float32 ``(n, L)`` array (odd static
    kernel length, values may be traced): :func:`augjax.kernels.correlate1d` along axis 0.
    ``interpret``: run with Pallas' interpreter (CPU, tests)."""
    n, length = x.shape
    kernel = jnp.asarray(kernel, jnp.float32)
    if n * length == 0:
        return x
    cols = min(MAX_COLS, _next_pow2(length))
    rows = min(ROWS, n)
    out = pl.pallas_call(
        functools.partial(_kernel, n=n, length=length, taps=kernel.shape[0], rows=rows,
                          cols=cols),
        out_shape=jax.ShapeDtypeStruct((n * length,), jnp.float32),
        grid=(pl.cdiv(n, rows), pl.cdiv(length, cols)),
        interpret=interpret,
        compiler_params=compiler_params(NUM_WARPS),
    )(kernel, x.astype(jnp.float32).reshape(n * length))
    return out.reshape(n, length)


def correlate_separable_kernel(x: jax.Array, k_rows: jax.Array, k_cols: jax.Array,
                               interpret: bool = False) -> jax.Array:
    """``correlate_separable(x, k_rows, k_cols)`` of a float32 ``(H, W, C)`` image: ``k_cols``
    along the width (rows of the transposed image), then ``k_rows`` along the height."""
    h, w, c = x.shape
    xt = jnp.transpose(x, (1, 0, 2)).reshape(w, h * c)
    first = correlate_rows(xt, k_cols, interpret).reshape(w, h, c)
    first = jnp.transpose(first, (1, 0, 2)).reshape(h, w * c)
    return correlate_rows(first, k_rows, interpret).reshape(h, w, c)
