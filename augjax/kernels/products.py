"""Matrix products at full float32 precision on every platform.

A TPU multiplies float32 matrices in bfloat16 passes at JAX's default precision, and a recent
NVIDIA GPU in TF32: a 3x3 geometric matrix built that way moves pixels (perspective's matrix
moved 35% of a TPU's uint8 values by up to 100 levels against the CPU's). The products that
build matrices and parameters go through :func:`matmul`, at ``Precision.HIGHEST``; a CPU
computes float32 products in full either way, so its bits do not change.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

__all__ = ["HIGHEST", "matmul", "product"]

HIGHEST = jax.lax.Precision.HIGHEST


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a @ b`` at full float32 precision."""
    return jnp.matmul(a, b, precision=HIGHEST)


def product(*ms: jax.Array) -> jax.Array:
    """``ms[0] @ ms[1] @ ...`` (left to right) at full float32 precision."""
    return functools.reduce(matmul, ms)
