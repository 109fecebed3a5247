"""Which ops a trace reaches: a recorder the program store opens around an export.

An op's code decides a traced program's pixels, and a program may reach ops that its steps do
not hold as objects (a policy's op list names them; a composite resolves them while tracing).
:meth:`OpSpec.draw <augjax._core.spec.OpSpec.draw>` and :meth:`~augjax._core.spec.OpSpec.run`
note their spec here; :mod:`augjax._runtime.program_identity` turns the noted specs into the
code a stored program depends on. Outside :func:`recording` noting costs one context lookup.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

__all__ = ["note", "recording"]

_REACHED: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "augjax_reached_ops", default=None)


def note(spec: Any) -> None:
    """Records that the trace in progress reached ``spec`` (no-op outside :func:`recording`)."""
    reached = _REACHED.get()
    if reached is not None:
        reached.append(spec)


@contextlib.contextmanager
def recording() -> Iterator[list[Any]]:
    """Within this block, the op specs a trace reaches are appended to the list it yields (and,
    when the block ends, to the list of an enclosing block: a program traced inside another
    program's trace is part of it)."""
    outer = _REACHED.get()
    reached: list[Any] = []
    token = _REACHED.set(reached)
    try:
        yield reached
    finally:
        _REACHED.reset(token)
        if outer is not None:
            outer.extend(reached)
