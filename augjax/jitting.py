"""``augjax.jit``: ``jax.jit`` for a training step that calls augjax chains.

A chain called on arrays runs augjax's own compiled programs, whose XLA options keep the
boundaries between its steps (:mod:`augjax.kernels.boundary`: each step reads the one before
from memory instead of computing it again for each read). Called inside a caller's
``jax.jit`` the chain is inlined into the caller's program and compiled with the caller's
options, which expand those boundaries on the CPU. There augjax keeps them as conditionals
(:mod:`augjax.kernels.embedded`), which leaves a resample's own passes fused differently: the
ImageNet chain (random resized crop + flip + colour jitter + normalize, B=16 uint8, 2-core
CPU) cost 9.7x augjax's own call before, about 2.5-3.5x with them
(``benchmarks/inside_jit.py``).

:func:`jit` is the supported way to embed chains in a jitted step: the step is traced as
augjax's own programs are (:func:`augjax.kernels.embedded.own_program`) and compiled with
their options (on the CPU: the barrier expander off, and the options that keep bits the same
on every CPU, :mod:`augjax.kernels.portable`); on other backends it is ``jax.jit`` with the
same trace. The chain then costs what augjax's own call costs, and gives its bits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

from augjax.errors import InputTypeError
from augjax.kernels.boundary import boundary_compiler_options
from augjax.kernels.embedded import owned

__all__ = ["jit"]


def jit(fun: Callable[..., Any] | None = None, /, **jit_kwargs: Any) -> Any:
    """``jax.jit(fun, **jit_kwargs)`` for a step that calls augjax chains, ops or policies:
    traced as augjax's own programs are and compiled with their XLA options (merged under
    ``compiler_options=`` if given; yours win on a clash), so that the chains inside keep the
    fusion boundaries between their steps. Use as ``augjax.jit(step)``, ``@augjax.jit`` or
    ``@augjax.jit(donate_argnums=0)``; everything else is ``jax.jit``'s.

    On the CPU the options hold for the whole step, model included: optimisation barriers
    (``jax.checkpoint``'s) are kept to the end, and XLA's YNNPACK fusions are off."""
    if fun is None:
        return functools.partial(jit, **jit_kwargs)
    if not callable(fun):
        raise InputTypeError(f"augjax.jit: argument 'fun' expects a callable (the step to "
                             f"jit), got {type(fun).__name__}", op="jit", argument="fun")

    options = {**(boundary_compiler_options() or {}), **(jit_kwargs.pop("compiler_options", None)
                                                           or {})}
    return jax.jit(owned(fun), compiler_options=options or None, **jit_kwargs)
