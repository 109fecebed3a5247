"""A batch size that recurs after other sizes ran (``AUGJAX_PARTIAL_BATCHES=recurring``, the
default) ends up on the path of a fresh process: once its own program exists, a call does
exactly the work a call of that size does in a process that never saw another size (every
Python function and builtin it runs, counted), enters no JAX dispatch in Python (the
compiled executable's fast path), traces and compiles nothing; and the background compile
keeps nothing of the caller's alive once done (augjax._runtime.execution.padding).

Counted, not timed: these run on whatever device JAX picks (CPU here; on a GPU machine the
fused program of ``call_program``)."""

from __future__ import annotations

import gc
import os
import sys
import weakref
from collections import Counter
from collections.abc import Callable

import jax
import numpy as np
import pytest
from helpers import fresh_programs

import augjax
import augjax._runtime.execution.padding as _padding
from augjax import ops
from augjax._runtime.store import programs as program_store

#: The program store on in this process, as a user has it (tests/conftest.py: STORE_OFF_ROOMS).
pytestmark = pytest.mark.program_store

SMALL, BIG = 5, 16
PADDING = _padding.__file__
#: JAX's Python dispatch: a jitted call enters these only when its compiled fast path misses.
JAX_DISPATCH = {os.path.join(os.path.dirname(jax.__file__), "_src", *name.split("/"))
                for name in ("pjit.py", "dispatch.py", "interpreters/pxla.py")}


@pytest.fixture(autouse=True)
def _padded_batches(monkeypatch):
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "1")  # the default, which conftest turns off
    monkeypatch.setenv("AUGJAX_PROGRAM_CACHE", "0")  # programs from tracing ("traced")


def chain():
    return augjax.compose(ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.6, 1.4)))


def loader_batch(n: int, seed: int) -> jax.Array:
    """A new device array per call, as a loader gives them (its own sharding object)."""
    x = np.random.default_rng(seed).integers(0, 256, (n, 16, 16, 3), dtype=np.uint8)
    return jax.device_put(x, jax.devices()[0])


_compiles: list[str] = []


def _listen(event: str, duration: float, **_) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _compiles.append(event)


jax.monitoring.register_event_duration_secs_listener(_listen)


def counted(fn: Callable[[], object]) -> tuple[Counter, object]:
    """``fn()``'s work: every Python function entered (file, name) and builtin called; the
    garbage collector held off (when it runs depends on what the process allocated before)."""
    work: Counter = Counter()

    def profile(frame, event, arg):
        if event == "call":
            work[(frame.f_code.co_filename, frame.f_code.co_name)] += 1
        elif event == "c_call":
            work[("<builtin>", getattr(arg, "__qualname__", type(arg).__name__))] += 1

    gc.disable()
    sys.setprofile(profile)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
        gc.enable()
    work.pop(("<builtin>", "setprofile"), None)
    return work, out


def steady_work(history: list[int], calls: int = 3) -> tuple[Counter, list[np.ndarray]]:
    """The work of ``calls`` calls of a batch of SMALL once the process ran ``history`` (batch
    sizes, in order) with fresh programs; and their outputs. Checks that the steady calls
    trace, compile and pad nothing."""
    fresh_programs()
    aug = chain()
    for i, n in enumerate(history):
        jax.block_until_ready(aug(loader_batch(n, i), key=jax.random.key(i)))
        _padding.wait_compiles()
    padded = []
    real = _padding._padded
    _padding._padded = lambda *a: padded.append(a[-1]) or real(*a)
    try:
        work: Counter = Counter()
        outs = []
        traces, compiles = augjax.trace_count(), len(_compiles)
        for i in range(calls):
            x, key = loader_batch(SMALL, 100 + i), jax.random.key(100 + i)
            one, out = counted(lambda x=x, key=key: aug(x, key=key))
            work.update(one)
            outs.append(np.asarray(out))
    finally:
        _padding._padded = real
    assert (augjax.trace_count() - traces, len(_compiles) - compiles, padded) == (0, 0, [])
    return work, outs


@pytest.mark.fast_tier("stored-recurring-history1")
@pytest.mark.parametrize("policy, history", [
    ("recurring", [BIG, BIG, SMALL, SMALL]),  # padded twice, its own program compiled behind
    ("recurring", [BIG, SMALL, SMALL, BIG, SMALL]),
    ("off", [BIG, SMALL]),
])
@pytest.mark.parametrize("store", ["0", "1"], ids=["traced", "stored"])
def test_a_recurring_size_runs_exactly_the_work_of_a_fresh_process(monkeypatch, policy,
                                                                    history, store):
    """``stored``: with the program store on (the default; the session's cache folder), where
    a program's runs are also keyed by JAX's settings, which a background thread could see
    otherwise than the caller."""
    monkeypatch.setenv(_padding.ENV, policy)
    monkeypatch.setenv("AUGJAX_PROGRAM_CACHE", store)
    if program_store.enabled() != (store == "1"):
        pytest.skip("the program store cannot be used here (no flatbuffers or no cache folder)")
    fresh, fresh_out = steady_work([SMALL])
    after, after_out = steady_work(history)
    assert after == fresh, {k: (fresh[k], after[k]) for k in fresh.keys() | after.keys()
                            if fresh[k] != after[k]}
    for a, b in zip(after_out, fresh_out):
        np.testing.assert_array_equal(a, b)
    # The partial-batch layer adds one lookup and nothing else: no lock, no policy read, no
    # note of the size; and JAX's Python dispatch (a jit's cache miss) is never entered.
    assert {name for (path, name) in after if path == PADDING} == {
        "call", "_signature", "_batch", "_sizes"}
    assert after[(PADDING, "call")] == 3
    assert not [k for k in after if k[0] in JAX_DISPATCH]


def test_a_finished_background_compile_keeps_no_program_alive():
    """The sizes a program ran are kept weakly by program: a finished compile job that held
    the program would keep it (and its executables) for the rest of the process."""
    fresh_programs()
    known = weakref.WeakSet(_padding._records.keys())  # other tests' programs
    aug = chain()
    for i, n in enumerate([BIG, SMALL, SMALL]):
        jax.block_until_ready(aug(loader_batch(n, i), key=jax.random.key(i)))
    _padding.wait_compiles()
    held = [weakref.ref(p) for p in list(_padding._records.keys()) if p not in known]
    assert held
    fresh_programs()
    gc.collect()
    assert [r for r in held if r() is not None] == []
