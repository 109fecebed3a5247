"""``lax.platform_dependent`` without the branches no backend of this process can run.

``jax.lax.platform_dependent`` traces (and, under ``vmap``, batches) every branch, although
only the lowering platform's branch is compiled. augjax's programs are compiled for the
backends of the process that runs them, so a branch for a platform the process has no backend
for is dead code that only costs trace time: on a CPU-only machine the colour jitter's CUDA
branch (a Pallas kernel) and its GPU branch cost about 0.9 s of the timm-style chain's 1.7 s
trace. :func:`platform_dependent` drops those branches, and calls the one left directly.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any

import jax

__all__ = ["live_platforms", "only_platform", "platform_dependent"]


@functools.cache
def live_platforms() -> frozenset[str]:
    """The platforms this process has a JAX backend for (``{"cpu"}``, ``{"cpu", "cuda"}``)."""
    from jax.extend.backend import backends

    return frozenset(backends())


def platform_dependent(*args: Any, default: Callable[..., Any] | None = None,
                       **per_platform: Callable[..., Any]) -> Any:
    """``jax.lax.platform_dependent(*args, default=..., **per_platform)`` restricted to the
    platforms of :func:`live_platforms`; the branch is called directly when only one is left.
    """
    live = _ONLY.get() or live_platforms()
    kept = {name: fn for name, fn in per_platform.items() if name in live}
    if default is not None and live <= set(kept):
        default = None  # every live platform has its own branch
    branches = list(kept.values()) + ([default] if default is not None else [])
    if len(branches) == 1:
        return branches[0](*args)
    if not branches:  # no branch for any live platform: let JAX word the error
        return jax.lax.platform_dependent(*args, default=default, **per_platform)
    return jax.lax.platform_dependent(*args, default=default, **kept)


_ONLY: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar(
    "augjax_only_platform", default=None)


@contextlib.contextmanager
def only_platform(name: str) -> Iterator[None]:
    """:func:`platform_dependent` traces only ``name``'s branch inside (what a program compiled
    for that platform computes: how a chain reads a step,
    :mod:`augjax._runtime.execution.fusion`)."""
    token = _ONLY.set(frozenset({name}))
    try:
        yield
    finally:
        _ONLY.reset(token)
