"""Which ops a trace reaches: a recorder the program store opens around an export.

An op's code decides a traced program's pixels, and a program may reach ops that its steps do
not hold as objects (a policy's op list names them; a composite resolves them while tracing).
:meth:`OpSpec.draw <augjax._core.spec.OpSpec.draw>` and :meth:`~augjax._core.spec.OpSpec.run`
note their spec here; :mod:`augjax._runtime.store.identity` turns the noted specs into the
code a stored program depends on. Outside :func:`recording` noting costs one context lookup.

An op's kernel or sampler may import a helper module when it runs (inside its body, or by a
computed name): :func:`calling` runs them and keeps, per op, the modules each run imported
(:func:`imported_by`), so that every program of the op names them, whichever trace imported
them first.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["calling", "imported_by", "note", "recording"]

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


_imported: dict[tuple[str, str], set[str]] = {}
_lock = threading.Lock()


def _op_id(spec: Any) -> tuple[str, str]:
    return (spec.name, str(getattr(spec.kernel, "__module__", None)))


def calling(spec: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, an op's kernel or sampler, noting the modules it imported
    against ``spec`` (new entries of ``sys.modules``, which keeps the order of imports)."""
    count = len(sys.modules)
    out = fn(*args, **kwargs)
    if len(sys.modules) > count:
        new = list(sys.modules)[count:]
        with _lock:
            _imported.setdefault(_op_id(spec), set()).update(new)
    return out


def imported_by(spec: Any) -> set[str]:
    """The modules runs of ``spec``'s kernel and sampler imported in this process."""
    with _lock:
        return set(_imported.get(_op_id(spec), ()))
