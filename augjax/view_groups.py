"""How a views' groups are keyed, batched and stacked, shared by the uniform path
(:mod:`augjax.multiview`) and the path for images of different sizes
(:mod:`augjax.ragged_views`): each view's key, runs of views through the same step (batched
together), and a group's views stacked."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax.errors import InputError

__all__ = ["runs", "stacked", "view_keys"]


def view_keys(keys: jax.Array, counts: tuple[int, ...]) -> dict[int, jax.Array]:
    """``keys`` (N,) per image -> per group position ``g``: keys ``(N, V)``."""
    keys = keys if keys.ndim else keys[None]
    out = {}
    for g, count in enumerate(counts):
        group = jax.vmap(lambda k, g=g: jax.random.fold_in(k, g))(keys)
        out[g] = jax.vmap(lambda k, c=count: jax.vmap(
            lambda v: jax.random.fold_in(k, v))(jnp.arange(c, dtype=jnp.uint32)))(group)
    return out


def runs(steps: tuple[Any, ...]) -> list[tuple[Any, list[int]]]:
    """Consecutive views through the same step, batched together: ``[(step, [v, ...]), ...]``."""
    runs: list[tuple[Any, list[int]]] = []
    for v, step in enumerate(steps):
        if runs and runs[-1][0] == step:
            runs[-1][1].append(v)
        else:
            runs.append((step, [v]))
    return runs


def stacked(name: str, views_out: list[Any]) -> jax.Array:
    """A group's views stacked on axis 1.

    Raises:
        InputError: the views give different shapes or dtypes."""
    shapes = {(tuple(y.shape[1:]), y.dtype) for y in views_out}
    if len(shapes) > 1:
        listing = ", ".join(f"view {v}: {y.dtype} {tuple(y.shape[1:])}"
                            for v, y in enumerate(views_out))
        raise InputError(f"views: the views of group {name!r} give different outputs "
                         f"({listing}); a group's views are stacked and must agree "
                         f"(put views of another size in a group of their own)",
                         op="views", argument="groups")
    return jnp.stack(views_out, axis=1)
