"""Numeric parameter values as arguments of a program, not constants of its trace.

A program is traced and compiled for its steps' structure (which ops, their sizes, dtypes,
layouts, choices, switches); the numbers a step is configured with (``flip``'s ``p``,
``brightness``'s ``factor``, a policy's magnitude ``m``) are handed to it at every call. So
``flip(p=0.3)`` after ``flip(p=0.5)``, or a magnitude schedule that changes ``m`` every epoch,
runs the program already compiled.

A step takes part through two methods (a step without them keeps every value static):

- ``lift() -> (skeleton, values)``: the step with each liftable value replaced by a
  :class:`Lifted` marker (the skeleton: equal, and hashed alike, for every value; it keys the
  programs), and the values taken out, in order;
- ``with_values(values) -> step``: the skeleton with the markers replaced by ``values`` (traced
  inside a program), the step the program's trace runs.

The array path (:func:`augjax._runtime.execution.dispatch.apply_steps`) lifts; the program reads the
values given for the call (:func:`given`) and passes them in as an argument. Other callers give
steps without markers and no values: nothing changes for them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["Lifted", "abstract", "abstract_value", "as_arguments", "fill", "given", "giving",
           "has_lifted", "kinds", "lift", "marker_kind"]


@dataclasses.dataclass(frozen=True)
class Lifted:
    """Where a step's value was taken out of its skeleton. ``kind`` is what the program's key
    keeps of the value (its Python type, and anything the step's structure reads from it:
    ``"float"``, ``"level/discrete"``); the value itself is an argument."""

    kind: str

    def __repr__(self) -> str:  # deterministic: the program store's key reads it
        return f"Lifted({self.kind!r})"


def lift(steps: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[tuple[Any, ...], ...]]:
    """``(skeletons, values)`` of ``steps``: one skeleton and one tuple of values per step."""
    skeletons, values = [], []
    for step in steps:
        try:
            skeleton, vals = _LIFTS[step]
        except (KeyError, TypeError):  # TypeError: a step that cannot be a key
            method = getattr(step, "lift", None)
            skeleton, vals = method() if method is not None else (step, ())
            _remember(step, (skeleton, vals))
        skeletons.append(skeleton)
        values.append(tuple(vals))
    return tuple(skeletons), tuple(values)


#: Lifted steps by step: a step called again gives the same skeleton (the program caches find
#: it by identity first).
_LIFTS: dict[Any, tuple[Any, tuple[Any, ...]]] = {}


def _remember(step: Any, lifted: tuple[Any, tuple[Any, ...]]) -> None:
    try:
        if len(_LIFTS) >= 1024:
            _LIFTS.clear()
        _LIFTS[step] = lifted
    except TypeError:  # unhashable: lifted on every call
        pass


def fill(skeletons: Sequence[Any], values: Sequence[Sequence[Any]] | None) -> tuple[Any, ...]:
    """The steps a program's trace runs: ``skeletons`` with their markers replaced by
    ``values`` (one tuple per step); ``skeletons`` as they are where no values were given."""
    if not values:
        return tuple(skeletons)
    return tuple(step.with_values(vals) if vals else step for step, vals in zip(skeletons, values))


def has_lifted(items: Any) -> bool:
    """Whether any of ``items`` is a :class:`Lifted` marker."""
    return any(isinstance(v, Lifted) for v in items)


_GIVEN: contextvars.ContextVar[Any] = contextvars.ContextVar("augjax_values", default=None)


@contextlib.contextmanager
def giving(values: Any) -> Iterator[None]:
    """The values of the call under way (read by the program with :func:`given`)."""
    token = _GIVEN.set(values)
    try:
        yield
    finally:
        _GIVEN.reset(token)


def given() -> Any:
    """The values :func:`giving` set for this call, or None."""
    return _GIVEN.get()


def marker_kind(value: Any) -> str | None:
    """The :class:`Lifted` kind a liftable Python value takes: ``"float"``, ``"int"`` (a whole
    number below 2**24 in magnitude: exact as a float32), or ``"pair/float"`` / ``"pair/int"``
    for a range of two; None for any other value."""
    kind = type(value)
    if kind in (tuple, list) and len(value) == 2 and type(value[0]) is type(value[1]):
        one = marker_kind(value[0])
        return None if one is None else f"pair/{one}"
    if kind is float:
        return "float"
    if kind is int and abs(value) < 2 ** 24:  # (bool is not int) exact as a float32 too
        return "int"
    return None


def kinds(step: Any) -> list[str]:
    """The kinds of the :class:`Lifted` markers ``step`` holds, in order (its values'); a step
    that holds others' (a composite) says itself, with ``marker_kinds()``."""
    method = getattr(step, "marker_kinds", None)
    if method is not None:
        return list(method())
    params = getattr(step, "params", None)
    if isinstance(params, tuple):
        items = [v for _, v in params]
    else:
        items = list(getattr(step, "__dict__", {}).values())
    return [v.kind for v in items if isinstance(v, Lifted)]


def abstract_value(kind: str) -> Any:
    """The abstract value of a marker of ``kind``: a weak-typed scalar (int32 for ``"int"``,
    float32 otherwise: a policy's ``"level/..."`` too), as JAX makes a Python number it meets
    in a trace; two of them for a pair."""
    import jax
    import jax.numpy as jnp

    pair = kind.startswith("pair/")
    base = kind.split("/", 1)[1] if pair else kind
    one = jax.ShapeDtypeStruct((), jnp.int32 if base == "int" else jnp.float32, weak_type=True)
    return (one, one) if pair else one


def abstract(skeletons: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    """Abstract values for ``skeletons``' markers (:func:`abstract_value`)."""
    return tuple(tuple(abstract_value(k) for k in kinds(step)) for step in skeletons)


def as_arguments(values: Sequence[Sequence[Any]]) -> tuple[tuple[Any, ...], ...]:
    """``values`` as a program's argument: weak-typed float32 (int32) scalars, as JAX makes a
    Python float (int) it meets in a trace, a pair as two (kept per value: a call then
    transfers nothing new). Steps without values give ``()``, as a caller that lifts nothing
    (DALI's path) passes: the programs' argument then has one structure, and one program
    serves both."""
    if not any(values):
        return ()
    return tuple(tuple(_argument(v) for v in vals) for vals in values)


_ARGUMENTS: dict[tuple[Any, ...], Any] = {}


def _argument(value: Any) -> Any:
    import jax.numpy as jnp

    if isinstance(value, (tuple, list)):
        return tuple(_argument(v) for v in value)
    # ints apart from floats, 0.0 apart from -0.0; NaN is never found again
    key = (type(value), value, math.copysign(1.0, value))
    found = _ARGUMENTS.get(key)
    if found is None:
        if len(_ARGUMENTS) >= 4096:
            _ARGUMENTS.clear()
        found = _ARGUMENTS[key] = jnp.asarray(value)
    return found
