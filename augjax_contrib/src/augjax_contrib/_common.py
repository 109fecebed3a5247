"""What the contrib ops share beyond :mod:`augjax.kernels`: the authoring-API version they are
written for, parameter normalisers, flat random fields for ``sample=`` hooks, the coin hook and a
pixel grid. Everything is plain JAX; kernels see one HWC image (augjax vmaps them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "API",
    "uniform",
    "normal",
    "coin",
    "pair_xy",
    "odd_int",
    "odd_size",
    "pixel_grid",
]

#: The augjax authoring API the pack is written for (params-first kernels, ``sample=`` hooks).
API = "2.0"


def uniform(key: jax.Array, shape: tuple[int, ...], low: float = 0.0,
            high: float = 1.0) -> jax.Array:
    """``jax.random.uniform(key, shape, float32, low, high)``, drawn flat and reshaped: the same
    values (JAX's threefry counts over the flattened shape) at a fraction of the compile time."""
    size = int(np.prod(shape))
    return jax.random.uniform(key, (size,), jnp.float32, low, high).reshape(shape)


def normal(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """``jax.random.normal(key, shape, float32)``, drawn flat and reshaped (see :func:`uniform`)."""
    return jax.random.normal(key, (int(np.prod(shape)),), jnp.float32).reshape(shape)


def coin(key, meta, params, *, p, **config) -> dict[str, jax.Array]:
    """``sample=`` hook of ops with a probability ``p``: ``applied = uniform(key, ()) < p``."""
    return {"applied": jax.random.uniform(key, (), jnp.float32) < p}


def pair_xy(value: tuple[float, ...]) -> tuple[float, float]:
    """Param normaliser: one number or ``(x, y)``, returned as ``(x, y)`` (not a range)."""
    if len(value) not in (1, 2):
        raise ValueError("expected one number or a pair (x, y)")
    return (value[0], value[-1])


def odd_int(value: int) -> int:
    """Param normaliser: an odd integer."""
    if value % 2 == 0:
        raise ValueError("must be odd")
    return value


def odd_size(value: tuple[int, int]) -> tuple[int, int]:
    """Param normaliser for kernel sizes: both entries odd and positive."""
    if any(v < 1 or v % 2 == 0 for v in value):
        raise ValueError("kernel sizes must be odd and positive")
    return value


def pixel_grid(h: int, w: int) -> tuple[jax.Array, jax.Array]:
    """Float32 column and row indices ``(x, y)`` of every pixel, each ``(H, W)``."""
    y, x = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32),
                        indexing="ij")
    return x, y
