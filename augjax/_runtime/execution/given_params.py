"""The ``params`` given to ``apply``, checked against what ``sample`` draws.

``op.apply(x, params=...)`` runs the kernels with the given values. Two mistakes used to go
unexplained: a dict that lacks a key the op reads (``policy.apply`` without ``branches``,
``mixup.apply`` with only ``lam`` and ``perm``) failed inside the trace with a bare
``KeyError``, and a per-sample switch that the op's configuration turns off
(``flip.apply(params={"vertical": ...})`` while ``vertical=False``) silently did nothing. Both
raise an :class:`~augjax.errors.InputError` naming the key and the fix. Keys the sampler does
not give are not refused in general: some ops read optional fields (``color_jitter`` applies the
adjustments whose factors are present).

The expected structure is the sampler's output shape (``jax.eval_shape``: a trace, no compile),
computed only to explain a missing key.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from augjax._runtime.execution.program import sample_program
from augjax.errors import InputError

__all__ = ["check_given_params", "explain_missing_key"]


@functools.lru_cache(maxsize=256)
def _expected(steps: tuple[Any, ...], layout: str, shape: tuple[int, ...], dtype: str) -> Any:
    program = sample_program(steps, layout, 0, shape, dtype)
    keys = None
    if any(step.random for step in steps):
        keys = jax.ShapeDtypeStruct((shape[0],), jax.random.key(0).dtype)
    return jax.eval_shape(program, keys)


def _static_switch(step: Any, key: str) -> bool:
    """Whether ``key`` is also a bool configuration parameter of ``step`` that is off."""
    params = step.declared
    kwargs = step.kwargs
    p = params.get(key)
    return p is not None and p.kind == "bool" and kwargs.get(key) is False


def _compare(expected: Any, given: Any, path: str, step: Any, name: str) -> None:
    owner = getattr(step, "name", name)
    if isinstance(expected, Mapping):
        if not isinstance(given, Mapping):
            raise InputError(f"{name}.apply: params{path} expects a dict with keys "
                             f"{sorted(expected)} (what {owner}.sample returns), got "
                             f"{type(given).__name__}", op=name, argument="params")
        missing = sorted(set(expected) - set(given))
        if missing:
            raise InputError(
                f"{name}.apply: params{path} lacks key(s) {missing}: {owner} reads "
                f"{sorted(expected)} (what {owner}.sample returns; sample, then edit the values)",
                op=name, argument="params")
        for key in expected:
            if key in given:
                _compare(expected[key], given[key], f"{path}[{key!r}]", step, name)
    elif isinstance(expected, (tuple, list)):
        if not isinstance(given, (tuple, list)) or len(given) != len(expected):
            got = (f"{type(given).__name__} of length {len(given)}"
                   if isinstance(given, (tuple, list)) else type(given).__name__)
            raise InputError(f"{name}.apply: params{path} expects a sequence of "
                             f"{len(expected)} (what {owner}.sample returns), got {got}",
                             op=name, argument="params")
        for i, (e, g) in enumerate(zip(expected, given)):
            _compare(e, g, f"{path}[{i}]", step, name)


def _readable(value: Any) -> bool:
    """Host values (and jax.Arrays on the CPU) are read for free; device arrays only in checking
    mode (reading them is a sync), as the image range check does."""
    from augjax._runtime.execution.checking import checking_enabled

    if isinstance(value, (np.ndarray, bool, np.bool_)):
        return True
    if isinstance(value, jax.Array):
        return checking_enabled() or all(d.platform == "cpu" for d in value.devices())
    return False


def _contradictions(step: Any, params: Any, path: str, name: str) -> None:
    """A per-sample switch set where the configuration turns it off (read from host values)."""
    if not isinstance(params, Mapping):
        return
    for key, value in params.items():
        if not _static_switch(step, key) or isinstance(value, jax.core.Tracer):
            continue
        if _readable(value) and np.any(np.asarray(value)):
            raise InputError(
                f"{name}.apply: params{path}[{key!r}] is set for some samples, but the op's "
                f"configuration has {key}=False, so it would be ignored; pass {key}=True "
                f"({name}.apply(x, params=..., {key}=True))", op=name, argument="params")


def check_given_params(steps: Sequence[Any], params: Sequence[Any], *, name: str,
                       chained: bool) -> None:
    """Raises :class:`InputError` where ``params`` (one pytree per step) switches on, for some
    sample, what the step's configuration turns off (host values and CPU arrays; device arrays
    in checking mode)."""
    for i, (step, g) in enumerate(zip(steps, params)):
        _contradictions(step, g, f"[{i}]" if chained else "", name)


def explain_missing_key(steps: Sequence[Any], params: Sequence[Any], err: KeyError, *,
                        name: str, layout: str, shape: tuple[int, ...], dtype: str,
                        chained: bool) -> InputError:
    """The :class:`InputError` for a ``KeyError`` raised while the steps read ``params``: the
    missing key(s) and the keys ``sample`` gives."""
    try:
        expected = _expected(tuple(steps), layout, tuple(shape), dtype)
        for i, (step, e, g) in enumerate(zip(steps, expected, params)):
            _compare(e, g, f"[{i}]" if chained else "", step, name)
    except InputError as found:
        return found
    return InputError(f"{name}.apply: the params lack key {err.args[0]!r}, which the op reads "
                      f"(give what {name}.sample returns, edited)", op=name, argument="params")
