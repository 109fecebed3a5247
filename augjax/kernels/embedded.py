"""Fusion boundaries that hold when a chain is traced inside a caller's ``jax.jit`` on the CPU.

augjax compiles its own CPU programs with XLA's barrier expander off, so that the
``lax.optimization_barrier`` between a chain's steps bounds fusion (:mod:`augjax.kernels.boundary`).
A chain traced inside the caller's ``jax.jit`` is compiled with the caller's options: there
the barriers are expanded before fusion, and XLA fused the crop's resample into flip's
``select(coin, reverse(y), y)`` and the sampler's arithmetic into the kernels, computing them
again for each read (the ImageNet chain, random resized crop + flip + colour jitter +
normalize, B=16 uint8 on a 2-core CPU: 9.7x augjax's own call).

A boundary there is a conditional (:func:`kept_by_branch`): ``lax.cond`` on a predicate that is
always true but that XLA cannot fold (the first element's bits or'ed with 1, compared with 0),
whose true branch returns its operand and whose false branch zeros. No fusion crosses a
conditional: its operand is written to memory by its producer, and its consumers read the
branch's output. The values are unchanged (the true branch is the identity). It costs a copy
of the kept array (the branch's output buffer) and a scalar read. Under ``vmap`` (an op's
per-sample kernel) the conditional takes the whole batch (``jax.custom_batching.custom_vmap``):
a batched predicate would make it a select of both branches, which keeps nothing.

Which form a trace gets is decided while it is traced: :func:`own_program` marks the traces of
augjax's own programs (:class:`augjax._runtime.store.programs.StoredProgram`,
:class:`augjax.kernels.portable.portable_jit`, the functions handed to DALI's ``jax_function``
and ``augjax.jit``: :func:`owned`), where barriers keep the form they always had; any other
trace is a caller's.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

__all__ = ["in_own_program", "kept_by_branch", "own_program", "owned"]

_OWN: contextvars.ContextVar[bool] = contextvars.ContextVar("augjax_own_program", default=False)

_UNSIGNED = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}


@contextlib.contextmanager
def own_program() -> Iterator[None]:
    """Inside: what is traced is augjax's own program (compiled with augjax's options)."""
    token = _OWN.set(True)
    try:
        yield
    finally:
        _OWN.reset(token)


def owned(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` traced as augjax's own program (:func:`own_program`): for the functions augjax
    jits itself or hands to DALI's ``jax_function``, whose barriers then stay barriers (and are
    expanded where the options say so) as before."""

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        with own_program():
            return fn(*args, **kwargs)

    return traced


def in_own_program() -> bool:
    """Whether the current trace is one of augjax's own programs (:func:`own_program`)."""
    return _OWN.get()


def _always_true(leaf: jax.Array) -> jax.Array:
    """A boolean scalar that is true for any ``leaf`` (non-empty) and that XLA cannot fold:
    ``(bits of leaf's first element | 1) != 0``."""
    first = leaf.reshape(-1)[0]
    if first.dtype == jnp.bool_:
        first = first.astype(jnp.uint8)
    elif not jnp.issubdtype(first.dtype, jnp.integer):
        first = jax.lax.bitcast_convert_type(first, _UNSIGNED[first.dtype.itemsize])
    return (first | 1) != 0


def _through_cond(leaves: list[jax.Array]) -> list[jax.Array]:
    return jax.lax.cond(_always_true(leaves[0]), lambda v: v,
                        lambda v: [jnp.zeros_like(leaf) for leaf in v], leaves)


@custom_vmap
def _batched_kept(leaves: list[jax.Array]) -> list[jax.Array]:
    return _through_cond(leaves)


@_batched_kept.def_vmap
def _kept_rule(axis_size: int, in_batched: Any, leaves: list[jax.Array]) -> Any:
    """Under ``vmap``: the conditional over the whole batch (a batched predicate would make it a
    select of both branches, which keeps nothing)."""
    return _batched_kept(leaves), in_batched[0]


@jax.custom_jvp
def _kept(leaves: list[jax.Array]) -> list[jax.Array]:
    return _batched_kept(leaves)


@_kept.defjvp
def _kept_jvp(primals: Any, tangents: Any) -> Any:
    """Differentiable as the identity (the kit differentiates ops inside ``jax.jit``)."""
    return _kept(primals[0]), tangents[0]


def kept_by_branch(x: Any) -> Any:
    """``x`` (an array or pytree) through a conditional that XLA cannot remove: computed and
    kept in memory before any consumer reads it, under any compiler options, under ``vmap``
    (the conditional then takes the whole batch) and differentiable (as the identity). Key
    arrays and arrays without elements pass by (nothing to keep)."""
    leaves, tree = jax.tree_util.tree_flatten(x)
    kept = [i for i, leaf in enumerate(leaves)
            if leaf.size and not jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key)]
    if not kept:
        return x
    for i, leaf in zip(kept, _kept([leaves[i] for i in kept])):
        leaves[i] = leaf
    return jax.tree_util.tree_unflatten(tree, leaves)
