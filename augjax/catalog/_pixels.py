"""Pixel arithmetic shared by the catalog: value bounds, dtype-faithful rounding, grayscale.

Kernels compute in float32 and return the input dtype. For uint8, torchvision converts back to
uint8 after each adjustment by truncation (``tensor.to(torch.uint8)``); :func:`requantize` models
that exactly, so chains of adjustments match torchvision step by step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["bound", "is_int", "requantize", "to_dtype", "gray", "blend"]

#: ITU-R 601-2 luma weights, as torchvision and PIL use them.
LUMA = (0.2989, 0.587, 0.114)


def is_int(dtype) -> bool:
    """Whether images of this dtype hold integer levels (uint8)."""
    return jnp.issubdtype(dtype, jnp.integer)


def bound(dtype) -> float:
    """The largest pixel value: 255 for uint8, 1 for float images."""
    return 255.0 if is_int(dtype) else 1.0


def requantize(x: jax.Array, dtype) -> jax.Array:
    """Clamps float ``x`` to the valid range and, for integer dtypes, truncates to whole levels
    (torchvision's ``clamp_(0, bound)`` then ``.to(uint8)``); stays float32."""
    x = jnp.clip(x, 0.0, bound(dtype))
    return jnp.floor(x) if is_int(dtype) else x


def to_dtype(x: jax.Array, dtype, *, rounding: str = "floor") -> jax.Array:
    """Float32 ``x`` back to ``dtype``: clamped, and floored or rounded for uint8."""
    if not is_int(dtype):
        return x.astype(dtype)
    x = jnp.clip(x, 0.0, 255.0)
    x = jnp.floor(x) if rounding == "floor" else jnp.round(x)
    return x.astype(dtype)


def gray(x: jax.Array) -> jax.Array:
    """Luma of an ``(..., 3)`` float image, ``(...)``: 0.2989 R + 0.587 G + 0.114 B."""
    return x[..., 0] * LUMA[0] + x[..., 1] * LUMA[1] + x[..., 2] * LUMA[2]


def blend(a: jax.Array, b: jax.Array, ratio: jax.Array, dtype) -> jax.Array:
    """torchvision ``_blend``: ``ratio * a + (1 - ratio) * b``, clamped and requantized."""
    return requantize(a * ratio + b * (1.0 - ratio), dtype)
