"""What augjax's Pallas (Triton) kernels share: the backend, their tiles, their rounding.

The flat kernels work on tiles of ``block`` consecutive elements (a power of two, as Triton's
blocks must be), one tile per program along grid axis 0; the last tile is moved back to end at
the array's last element, so no access is out of bounds and no tail masking is needed (the
elements it shares with the previous tile are computed twice, with the same result).

Imported only by the kernel modules, which are imported when a program is traced: importing
Pallas takes about 0.1 s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from augjax.kernels.pixels import to_dtype

try:  # deprecated in JAX 0.11 (DeprecationWarning) in favour of Mosaic GPU; may go away
    from jax.experimental.pallas import triton as pl_triton
except ImportError:  # pragma: no cover - JAX without the Triton backend
    pl_triton = None

__all__ = ["AVAILABLE", "call", "gather", "interleave", "kept_in_place", "owned", "pl_triton",
           "planes", "reflect101", "round_half_even", "store_planes", "tile", "tile_start",
           "to_uint8"]

#: Whether this JAX has Pallas' Triton backend.
AVAILABLE = pl_triton is not None


def tile(size: int, block: int) -> int:
    """The tile of an array of ``size`` elements: ``block``, or the largest power of two that
    fits a smaller array."""
    return min(block, 1 << (size.bit_length() - 1))


def tile_start(size: int, block: int, axis: int = 0):
    """The first element of this program's tile along grid axis ``axis``, the last tile moved
    back to end at ``size``."""
    return jnp.minimum(pl.program_id(axis) * block, size - block)


def planes(x_ref, start, block: int, c: int) -> list:
    """The ``block`` pixels from pixel ``start`` of an interleaved ``(H * W * C,)`` image, one
    vector per channel in the image's dtype (one strided load each)."""
    return [x_ref[pl.ds(start * c + k, block, stride=c)] for k in range(c)]


def store_planes(o_ref, start, block: int, vectors) -> None:
    """:func:`planes`' inverse: writes one vector per channel as the ``block`` pixels from pixel
    ``start`` of an interleaved ``(H * W * C,)`` output (one strided store each)."""
    c = len(vectors)
    for k, v in enumerate(vectors):
        o_ref[pl.ds(start * c + k, block, stride=c)] = v


def owned(start, block: int, first):
    """Which of the tile's ``block`` elements from ``start`` no earlier tile holds (the last
    tile, moved back, shares some with the one before): those at or past ``first``, this
    program's own first element (``program_id * block``, read outside any branch)."""
    return start + jnp.arange(block, dtype=jnp.int32) >= first


def gather(x_ref, index):
    """The values of ``x_ref`` at the integer vector ``index`` (one load per value)."""
    return pl_triton.load(x_ref.at[index])


def interleave(vectors: list):
    """The ``2**k`` vectors ``(L,)`` side by side, ``(L, 2**k)`` (column ``o`` is
    ``vectors[o]``), built by Triton joins (each thread keeps its values of all the vectors), so
    a tile of rows can be stored transposed, or planes stored as channels, in whole sectors."""
    if len(vectors) == 1:
        return vectors[0][:, None]

    def build(vs):  # the last join picks the lowest bit of the column
        if len(vs) == 1:
            return vs[0]
        return jnp.stack([build(vs[0::2]), build(vs[1::2])], axis=-1)

    if len(vectors) & (len(vectors) - 1):
        raise ValueError(f"interleave: a power of two of vectors, got {len(vectors)}")
    return build(list(vectors)).reshape(vectors[0].shape + (len(vectors),))


def reflect101(t, n: int, reach: int):
    """Reflect-101 of integer indices ``t`` in ``[-reach, n - 1 + reach]`` into ``[0, n)``.
    Where ``reach < n`` (an image larger than the kernel) one reflection is enough: two
    compares and selects; else any distance by the period ``2n - 2`` (a whole number of
    periods added first, as ``rem`` keeps the sign). A remainder per cell and value made the
    motion-blur kernel's flat form 1.5x slower on an H200 (0.68 against 0.45 ms at B=256)."""
    if n == 1:
        return t * 0
    if reach < n:
        t = jnp.where(t < 0, -t, t)
        return jnp.where(t > n - 1, 2 * (n - 1) - t, t)
    period = 2 * n - 2
    m = lax.rem(t + period * (reach // period + 1), period)
    return jnp.minimum(m, period - m)


def round_half_even(x):
    """``jnp.round`` (half to even) from floor and compares, for floats below 2**23 in
    magnitude (Triton has no rounding instruction that JAX lowers)."""
    f = jnp.floor(x)
    d = x - f
    odd = f - 2.0 * jnp.floor(f * 0.5)
    return jnp.where(d > 0.5, f + 1.0, jnp.where(d < 0.5, f, f + odd))


def to_uint8(v):
    """:func:`augjax.kernels.pixels.to_dtype` of a float vector to uint8, ``rounding="round"``
    (clamped, rounded half to even: the warps' and filters' cast)."""
    return to_dtype(v, jnp.uint8, rounding=round_half_even)


def call(kernel, out_shape, grid, args, *, num_warps: int, interpret: bool, **options):
    """``pl.pallas_call(kernel, ...)(*args)`` with Triton's compile options (``num_warps``, one
    stage), which also select Triton over Mosaic GPU (JAX's default on a GPU): the kernels are
    written in Triton's model. ``interpret``: Pallas' interpreter (CPU, tests)."""
    return pl.pallas_call(kernel, out_shape=out_shape, grid=grid, interpret=interpret,
                          compiler_params=pl_triton.CompilerParams(num_warps=num_warps,
                                                                   num_stages=1),
                          **options)(*args)


def _nothing(x_ref, o_ref) -> None:
    del x_ref, o_ref


def kept_in_place(x):
    """``x``, through a Triton call that does nothing, its output aliased to its input
    (``input_output_aliases``): XLA:GPU fuses no producer into a custom call, so whatever
    computes ``x`` is written to memory once and every later read loads it; no element is
    moved (XLA copies ``x`` first only where its buffer cannot be given to the call). On a GPU
    only (a Triton kernel)."""
    flat = x.reshape(-1)
    out = call(_nothing, jax.ShapeDtypeStruct(flat.shape, flat.dtype), (1,), (flat,),
               num_warps=1, interpret=False, input_output_aliases={0: 0})
    return out.reshape(x.shape)
