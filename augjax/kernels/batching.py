"""A helper for kernels with their own batching rule (``jax.custom_batching.custom_vmap``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["broadcast_unbatched"]


def broadcast_unbatched(axis_size: int, in_batched: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """In a ``custom_vmap`` rule: ``args`` (a tuple of pytrees) with every array that
    ``in_batched`` marks unbatched broadcast to a leading batch axis of ``axis_size``, so
    that the rule can treat every argument as a batch."""
    return jax.tree_util.tree_map(
        lambda v, b: v if b else jnp.broadcast_to(v, (axis_size, *jnp.shape(v))),
        tuple(args), tuple(in_batched))
