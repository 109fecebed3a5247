"""Checks the ``params`` given to ``apply`` against what ``sample`` draws, before they run.

``op.apply(x, params=...)`` runs the kernels with the given values. A dict that lacks a key the
op reads (``policy.apply`` without ``branches``, ``mixup.apply`` with only ``lam`` and ``perm``)
would fail inside the trace with a bare ``KeyError``; a key the op does not read would be
silently ignored; and a per-sample switch that the op's configuration turns off
(``flip.apply(params={"vertical": ...})`` while ``vertical=False``) would silently do nothing.
Each raises an :class:`~augjax.errors.InputError` naming the key instead.

The expected structure is the sampler's output shape (``jax.eval_shape``: a trace, no compile),
cached per steps, layout, batch shape and dtype.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from augjax._runtime.program import sample_program
from augjax.errors import InputError

__all__ = ["check_given_params"]


@functools.lru_cache(maxsize=256)
def _expected(steps: tuple[Any, ...], layout: str, shape: tuple[int, ...], dtype: str) -> Any:
    program = sample_program(steps, layout, 0, shape, dtype)
    keys = None
    if any(step.spec.random for step in steps):
        keys = jax.ShapeDtypeStruct((shape[0],), jax.random.key(0).dtype)
    return jax.eval_shape(program, keys)


def _static_switch(step: Any, key: str) -> bool:
    """Whether ``key`` is also a bool configuration parameter of ``step`` that is off."""
    spec = getattr(step, "spec", None)
    params = getattr(spec, "params", {}) or {}
    kwargs = getattr(step, "kwargs", {}) or {}
    p = params.get(key)
    return p is not None and p.kind == "bool" and kwargs.get(key) is False


def _compare(expected: Any, given: Any, path: str, step: Any, name: str) -> None:
    owner = getattr(step, "name", name)
    if isinstance(expected, Mapping):
        if not isinstance(given, Mapping):
            raise InputError(f"{name}.apply: params{path} expects a dict with keys "
                             f"{sorted(expected)} (what {owner}.sample returns), got "
                             f"{type(given).__name__}", op=name, argument="params")
        extra = sorted(set(given) - set(expected))
        missing = sorted(set(expected) - set(given))
        for key in extra:
            if _static_switch(step, key):
                raise InputError(
                    f"{name}.apply: params{path}[{key!r}] is ignored: the op's configuration "
                    f"has {key}=False, so {name} draws and applies no {key!r}; pass "
                    f"{key}=True to apply (e.g. {name}.apply(x, params=..., {key}=True)) and "
                    f"give params with the keys {sorted(expected)} ({name}.sample(x, key=k, "
                    f"{key}=True) draws them)", op=name, argument="params")
        if extra:
            raise InputError(
                f"{name}.apply: params{path} has key(s) {extra} that {owner} does not read (it "
                f"reads {sorted(expected)}, what {owner}.sample returns); they would be "
                f"ignored", op=name, argument="params")
        if missing:
            raise InputError(
                f"{name}.apply: params{path} lacks key(s) {missing}: {owner} reads "
                f"{sorted(expected)} (what {owner}.sample returns; sample, then edit the values)",
                op=name, argument="params")
        for key in expected:
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


def _contradictions(step: Any, params: Any, path: str, name: str) -> None:
    """A per-sample switch set where the configuration turns it off (read from host values)."""
    if not isinstance(params, Mapping):
        return
    for key, value in params.items():
        if not _static_switch(step, key) or isinstance(value, jax.core.Tracer):
            continue
        if isinstance(value, (np.ndarray, jax.Array, bool)) and np.any(np.asarray(value)):
            raise InputError(
                f"{name}.apply: params{path}[{key!r}] is set for some samples, but the op's "
                f"configuration has {key}=False, so it would be ignored; pass {key}=True "
                f"({name}.apply(x, params=..., {key}=True))", op=name, argument="params")


def check_given_params(steps: Sequence[Any], params: Sequence[Any], *, name: str, layout: str,
                       shape: tuple[int, ...], dtype: str, chained: bool) -> None:
    """Raises :class:`InputError` naming the key when ``params`` (one pytree per step) lacks a
    key the steps read, has one they do not, or switches on what the configuration turns off."""
    expected = _expected(tuple(steps), layout, tuple(shape), dtype)
    for i, (step, e, g) in enumerate(zip(steps, expected, params)):
        path = f"[{i}]" if chained else ""
        _contradictions(step, g, path, name)
        _compare(e, g, path, step, name)
