""":func:`augjax.kernels.correlate_separable` and :func:`~augjax.kernels.correlate_planes` of
float32 images as Pallas (Triton) kernels.

XLA's form takes the taps as shifted views of a reflect-padded copy: every output value reads
each of its ``k`` taps from the cache, so a 41-tap pass moves 41 times the image through L1
(elastic_transform blurs two displacement fields of 224x224 per image with 41 taps: 0.25 ms a
field on an H200 at B=256, and a kernel that loaded each tap's rows as a block took as long).
Here a program takes a strip of ``cols`` columns and ``rows`` consecutive output rows of an
``(n, L)`` array, loads each of the ``rows + k - 1`` source rows it needs once (its index
reflected, reflect-101) and keeps them in registers, and sums every output row from them:
``(rows + k - 1) / rows`` loads per value instead of ``k``. So it correlates along the first
axis; the pass along the width runs on the transposed image and can store its tile transposed
(the tile's rows joined into columns, :func:`augjax.kernels.pallas.interleave`, so each
thread writes whole sectors): no transpose pass after it. The planes kernel runs the height
passes of several planes in one program, scales them and stores them as the channels of one
image. The sums run in tap order, as XLA's do (``v_0 k_0``, then ``+ v_t k_t``), so the values
are the XLA form's (bitwise on an H200). H200, B=256, elastic's two 224x224 fields: the width
passes 0.124 ms, the planes kernel 0.137 (XLA's form 0.55; these kernels with XLA's
transposes between them and no stack, 0.34).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from augjax.kernels.pixels import tap_sum
from augjax.kernels.pallas import (
    AVAILABLE,
    call,
    interleave,
    pl_triton,
    reflect101,
)

__all__ = ["AVAILABLE", "correlate_planes_kernel", "correlate_rows", "correlate_separable_kernel"]

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


def _source_rows(x_ref, i0, j, inside, *, n, length, taps, rows):
    """The ``rows + taps - 1`` source rows of output rows ``i0 ..`` at columns ``j`` of an
    ``(n, length)`` array (row indices reflected), one vector each."""
    r = taps // 2
    return [pl_triton.load(x_ref.at[reflect101(i0 + (q - r), n, r + rows) * length + j],
                           mask=inside, other=0.0)
            for q in range(rows + taps - 1)]


def _correlated(k_ref, src, *, taps, rows):
    """The ``rows`` output rows summed from the source rows, in tap order (``tap_sum``, as
    :func:`augjax.kernels.correlate1d`)."""
    k = [k_ref[t] for t in range(taps)]
    return [tap_sum(src[o:o + taps], k) for o in range(rows)]


def _program(rows, cols, length):
    i0 = pl.program_id(0) * rows
    j = pl.program_id(1) * cols + jnp.arange(cols, dtype=jnp.int32)
    return i0, j, j < length


def _kernel(k_ref, x_ref, o_ref, *, n, length, taps, rows, cols, transposed):
    i0, j, inside = _program(rows, cols, length)
    out = _correlated(k_ref, _source_rows(x_ref, i0, j, inside, n=n, length=length, taps=taps,
                                          rows=rows), taps=taps, rows=rows)
    if transposed:  # the tile's rows as columns of the (length, n) result, whole sectors
        i = i0 + jnp.arange(rows, dtype=jnp.int32)
        pl_triton.store(o_ref.at[j[:, None] * n + i[None, :]], interleave(out),
                        mask=inside[:, None] & (i < n)[None, :])
        return
    for o, acc in enumerate(out):
        pl_triton.store(o_ref.at[(i0 + o) * length + j], acc, mask=inside & (i0 + o < n))


def correlate_rows(x: jax.Array, kernel: jax.Array, interpret: bool = False,
                   transposed: bool = False) -> jax.Array:
    """``sum_t kernel[t] * x[reflect(i + t - r), j]`` of a float32 ``(n, L)`` array (odd static
    kernel length, values may be traced): :func:`augjax.kernels.correlate1d` along axis 0.
    ``transposed``: the result transposed, ``(L, n)``, written so by the kernel (no transpose
    pass). ``interpret``: run with Pallas' interpreter (CPU, tests)."""
    n, length = x.shape
    kernel = jnp.asarray(kernel, jnp.float32)
    if n * length == 0:
        return x.T if transposed else x
    cols = min(MAX_COLS, _next_pow2(length))
    rows = min(ROWS, _next_pow2(n)) if transposed else min(ROWS, n)
    out = call(functools.partial(_kernel, n=n, length=length, taps=kernel.shape[0], rows=rows,
                                 cols=cols, transposed=transposed),
               jax.ShapeDtypeStruct((n * length,), jnp.float32),
               (pl.cdiv(n, rows), pl.cdiv(length, cols)),
               (kernel, x.astype(jnp.float32).reshape(n * length)), num_warps=NUM_WARPS,
               interpret=interpret)
    return out.reshape((length, n) if transposed else (n, length))


def correlate_separable_kernel(x: jax.Array, k_rows: jax.Array, k_cols: jax.Array,
                               interpret: bool = False) -> jax.Array:
    """``correlate_separable(x, k_rows, k_cols)`` of a float32 ``(H, W, C)`` image: ``k_cols``
    along the width (rows of the transposed image), then ``k_rows`` along the height. One
    channel: the width pass writes its result back in the image's layout."""
    h, w, c = x.shape
    xt = jnp.transpose(x, (1, 0, 2)).reshape(w, h * c)
    if c == 1:
        first = correlate_rows(xt, k_cols, interpret, transposed=True)
    else:
        first = correlate_rows(xt, k_cols, interpret).reshape(w, h, c)
        first = jnp.transpose(first, (1, 0, 2)).reshape(h, w * c)
    return correlate_rows(first, k_rows, interpret).reshape(h, w, c)


def _planes_kernel(*refs, n, length, taps, rows, cols):
    c = len(taps)
    k_refs, x_refs, s_ref, o_ref = refs[:c], refs[c:2 * c], refs[2 * c], refs[2 * c + 1]
    i0, j, inside = _program(rows, cols, length)
    outs = []
    for p in range(c):
        src = _source_rows(x_refs[p], i0, j, inside, n=n, length=length, taps=taps[p],
                           rows=rows)
        scale = s_ref[p]
        outs.append([v * scale for v in _correlated(k_refs[p], src, taps=taps[p], rows=rows)])
    chan = jnp.arange(c, dtype=jnp.int32)
    for o in range(rows):
        pixel = (i0 + o) * length + j
        pl_triton.store(o_ref.at[pixel[:, None] * c + chan[None, :]],
                        interleave([out[o] for out in outs]),
                        mask=(inside & (i0 + o < n))[:, None] & (chan < c)[None, :])


def correlate_planes_kernel(planes: list, kernels: list, scale: jax.Array,
                            interpret: bool = False) -> jax.Array:
    """:func:`augjax.kernels.correlate_planes` of float32 ``(H, W)`` planes (a power of two of
    them): per plane the width pass (:func:`correlate_rows` of the transposed plane, written
    back transposed), then one kernel for the height passes of all planes, which scales each
    and writes them as the channels of the ``(H, W, C)`` result."""
    h, w = planes[0].shape
    c = len(planes)
    if h * w == 0:
        return jnp.zeros((h, w, c), jnp.float32)
    first = [correlate_rows(p.astype(jnp.float32).T, k_cols, interpret, transposed=True)
             for p, (_, k_cols) in zip(planes, kernels, strict=True)]
    k_rows = [jnp.asarray(k, jnp.float32) for k, _ in kernels]
    cols = min(MAX_COLS, _next_pow2(w))
    rows = min(ROWS, h)
    out = call(functools.partial(_planes_kernel, n=h, length=w,
                                 taps=[k.shape[0] for k in k_rows], rows=rows, cols=cols),
               jax.ShapeDtypeStruct((h * w * c,), jnp.float32),
               (pl.cdiv(h, rows), pl.cdiv(w, cols)),
               (*k_rows, *(f.reshape(h * w) for f in first),
                jnp.asarray(scale, jnp.float32).reshape(c)), num_warps=NUM_WARPS,
               interpret=interpret)
    return out.reshape(h, w, c)
