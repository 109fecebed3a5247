"""How a views' groups are keyed, batched and stacked, shared by the uniform path
(:mod:`augjax.multiview`) and the path for images of different sizes
(:mod:`augjax.ragged_views`): each view's key, runs of views through the same step (batched
together), and a group's views stacked."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from augjax.errors import InputError

__all__ = ["run_keys", "runs", "split_views", "stacked", "view_keys"]


def view_keys(keys: jax.Array, counts: tuple[int, ...]) -> dict[int, jax.Array]:
    """``keys`` (N,) per image -> per group position ``g``: keys ``(N, V)``."""
    keys = keys if keys.ndim else keys[None]
    return dict(enumerate(_view_keys(keys, tuple(counts))))


# Jitted, these helpers are one small program a call (eager, each fold_in, gather, slice and
# stack was dispatched on its own: ~12 CPU-ms of a DINO record's ~25, 2026-12-07); integer
# arithmetic and copies, so the same bits. Inside a trace they are inlined.
@functools.partial(jax.jit, static_argnums=1)
def _view_keys(keys: jax.Array, counts: tuple[int, ...]) -> tuple[jax.Array, ...]:
    out = []
    for g, count in enumerate(counts):
        group = jax.vmap(lambda k, g=g: jax.random.fold_in(k, g))(keys)
        out.append(jax.vmap(lambda k, c=count: jax.vmap(
            lambda v: jax.random.fold_in(k, v))(jnp.arange(c, dtype=jnp.uint32)))(group))
    return tuple(out)


@functools.partial(jax.jit, static_argnums=1)
def run_keys(keys: jax.Array, vs: tuple[int, ...]) -> jax.Array:
    """A group's keys ``(N, V)`` -> the keys of its views ``vs``, image-major:
    ``(N * len(vs),)``."""
    picked = keys[:, jnp.asarray(vs)]
    return picked.reshape(picked.shape[0] * len(vs))


@functools.partial(jax.jit, static_argnums=(1, 2))
def split_views(y: Any, n: int, count: int) -> tuple[Any, ...]:
    """A run's result (leaves ``(n * count, ...)``, image-major) -> one result per view (leaves
    ``(n, ...)``)."""
    return tuple(jax.tree_util.tree_map(
        lambda leaf, j=j: leaf.reshape(n, count, *leaf.shape[1:])[:, j], y)
        for j in range(count))


@jax.jit
def _stack(views_out: tuple[jax.Array, ...]) -> jax.Array:
    return jnp.stack(views_out, axis=1)


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
    return _stack(tuple(views_out))
