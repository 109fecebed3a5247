"""Random fields drawn inside kernels (a value per voxel): ``threefry_2x32`` over a counter,
with the key's data as its key, so a value costs half a hash (a 32-bit word) or a quarter
(16 bits) whatever JAX's ``jax_threefry_partitionable`` says, and the values are the same
under either setting of that flag. Under the flag's default (True) ``jax.random.uniform`` and
``jax.random.normal`` hash once per value: on the CPU, 2 x 3 x 64^3 uniform values took 14-17
CPU-ms that way and 6 CPU-ms as 16-bit halves here.

Any key implementation works: its data's first two words key the hash (threefry keys are those
two words).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["normal", "uniform16", "words"]


def words(key: jax.Array, count: int) -> jax.Array:
    """``count`` uint32 words: ``threefry_2x32`` of the counter ``0 .. count - 1`` keyed by
    ``key``'s data."""
    from jax.extend.random import threefry_2x32

    seed = jax.random.key_data(key).reshape(-1)[:2]
    return threefry_2x32((seed[0], seed[1]), jnp.arange(count, dtype=jnp.uint32))


def uniform16(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """float32 ``shape``, uniform in (-1, 1) at 16-bit resolution: the midpoints
    ``(k + 0.5) / 32768 - 1`` of 65,536 equal steps, two values per word (its low half, then
    its high half: ``jax.random.bits(key, shape, uint16)``'s order)."""
    size = math.prod(shape)
    bits = words(key, (size + 1) // 2)
    halves = jnp.stack([bits & 0xFFFF, bits >> 16], axis=-1).reshape(-1)[:size]
    return ((halves.astype(jnp.float32) + 0.5) * (2.0 / 65536.0) - 1.0).reshape(shape)


def normal(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """float32 ``shape``, standard normal, one word per value, converted as
    ``jax.random.normal`` converts its bits: 23 bits to a uniform in ``[nextafter(-1, 0),
    1)``, then ``sqrt(2) * erfinv``."""
    size = math.prod(shape)
    bits = words(key, size)
    one = np.float32(1.0).view(np.uint32)
    unit = jax.lax.bitcast_convert_type((bits >> 9) | one, jnp.float32) - 1.0  # [0, 1)
    lo = np.nextafter(np.float32(-1.0), np.float32(0.0))
    u = jnp.maximum(lo, unit * (np.float32(1.0) - lo) + lo)
    return (np.float32(np.sqrt(2.0)) * jax.lax.erf_inv(u)).reshape(shape)
