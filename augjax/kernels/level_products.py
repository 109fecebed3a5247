"""Histograms and table lookups of 8-bit levels without a scatter or a gather: the TPU's forms
(a TPU scatters and gathers element by element, slowly, and multiplies matrices fast on its
MXU). A level ``q`` in ``0..255`` is the pair ``(q >> 4, q & 15)``, each a one-hot of 16:

- :func:`histogram_product`: the ``(16, 16)`` counts of the pairs are one matrix product of the
  two one-hots over the pixels (0/1 in bfloat16, summed in float32: exact below 2**24 pixels);
- :func:`lookup_product`: a uint8 table ``T`` read as 16 rows of 16, ``onehot(q >> 4) @ T``
  gives each value its table row (one term per sum: exact), and 16 selects by ``q & 15`` pick
  the entry;
- :func:`rows_product`: each value's row of a float32 table ``(256, K)``, ``onehot(q) @ T``
  with ``T`` split into three bfloat16 parts that sum to it exactly (one term per sum).

The values are the gathers' and the scatter's, bit for bit, on any platform (a CPU computes them
in tests); :mod:`augjax.kernels.histogram` and the ops choose them on a TPU only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["histogram_product", "lookup_product", "rows_product", "PRODUCT_PIXELS"]

_BF16 = jnp.bfloat16
_F32 = jnp.float32

#: Pixels per image and channel up to which float32 sums of ones count exactly.
PRODUCT_PIXELS = 2**24


def _nibbles(q: jax.Array, axis: int) -> tuple[jax.Array, jax.Array]:
    """The one-hots (bool) of ``q >> 4`` and ``q & 15``, a new axis of 16 at ``axis``."""
    a = jnp.arange(16, dtype=jnp.int32)
    shape = [1] * (q.ndim + 1)
    shape[axis] = 16
    a = a.reshape(shape)
    q = jnp.expand_dims(q, axis)
    return jnp.right_shift(q, 4) == a, jnp.bitwise_and(q, 15) == a


def histogram_product(levels: jax.Array, bins: int, needed: jax.Array | None = None) -> jax.Array:
    """``(..., H, W, C)`` integer levels to ``(..., bins, C)`` int32 counts of each level
    ``0 .. bins - 1`` (others dropped; ``bins <= 256``, ``H W <`` :data:`PRODUCT_PIXELS`), the
    images where ``needed`` (bool, broadcast against the leading axes) is False all zeros:
    one matrix product per image and channel of the one-hots of the levels' two nibbles."""
    *lead, h, w, c = levels.shape
    q = jnp.swapaxes(levels.reshape(-1, h * w, c).astype(jnp.int32), 1, 2)  # (I, C, P)
    keep = (q >= 0) & (q < bins)
    if needed is not None:
        keep = keep & jnp.broadcast_to(needed, tuple(lead)).reshape(-1, 1, 1)
    hi, lo = _nibbles(q, 2)  # (I, C, 16, P)
    hi = (hi & keep[:, :, None, :]).astype(_BF16)
    counts = jnp.einsum("icap,icbp->icab", hi, lo.astype(_BF16), preferred_element_type=_F32)
    counts = counts.reshape(-1, c, 256)[:, :, :bins].astype(jnp.int32)
    return jnp.swapaxes(counts, 1, 2).reshape(*lead, bins, c)


def lookup_product(levels: jax.Array, lut: jax.Array) -> jax.Array:
    """``lut[levels[..., c], c]`` for uint8 ``levels`` ``(H, W, C)`` and a uint8 table
    ``(256, C)``: each value's row of 16 entries by one product with the one-hot of its high
    nibble (exact: one term, levels exact in bfloat16), the entry by 16 selects."""
    h, w, c = levels.shape
    q = levels.reshape(h * w, c).astype(jnp.int32).T  # (C, P)
    hi, lo = _nibbles(q, 1)  # (C, 16, P)
    table = lut.T.reshape(c, 16, 16).astype(_BF16)  # [c, a, b] = lut[16 a + b, c]
    rows = jnp.einsum("cab,cap->cbp", table, hi.astype(_BF16), preferred_element_type=_F32)
    out = jnp.sum(jnp.where(lo, rows, 0.0), axis=1)  # (C, P)
    return out.T.reshape(h, w, c).astype(lut.dtype)


def _split3(t: jax.Array) -> jax.Array:
    """Finite float32 ``t`` as three bfloat16 parts (stacked last) whose float32 sum
    ``(a + b) + c`` is ``t`` exactly (8 significant bits each)."""
    a = t.astype(_BF16)
    r = t - a.astype(_F32)
    b = r.astype(_BF16)
    return jnp.stack([a, b, (r - b.astype(_F32)).astype(_BF16)], axis=-1)


def rows_product(q: jax.Array, table: jax.Array) -> jax.Array:
    """``table[q]``: ``(P, K)`` float32 rows of a finite ``(256, K)`` float32 table for int
    levels ``q`` ``(P,)`` in ``0..255``, as the product of ``q``'s one-hot with the table's
    three bfloat16 parts (one term per sum: each part exact), summed back exactly."""
    k = table.shape[1]
    onehot = (q[:, None] == jnp.arange(256, dtype=q.dtype)[None, :]).astype(_BF16)
    parts = _split3(table.astype(_F32)).reshape(256, 3 * k)
    r = jnp.dot(onehot, parts, preferred_element_type=_F32).reshape(-1, k, 3)
    return (r[..., 0] + r[..., 1]) + r[..., 2]
