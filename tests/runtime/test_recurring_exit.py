"""No crash at exit under the ``recurring`` partial-batch policy
(augjax._runtime.execution.padding): a process that ends in any phase of the policy (a size's first
batch ran padded; its second started its own program's compile in a background thread; the exit
comes from inside that call, from a signal while the third call waits for the compile, or after the
compile finished; a worker forked while it ran) ends with status 0, through the interpreter's real
exit (tests/runtime/exit_phases.py). Before the fix the compile ran in a daemon thread, which the
interpreter's teardown stopped inside XLA: most processes that exited while it ran aborted
(``terminate called after throwing an instance of ''``, ``FATAL: exception not rethrown``,
status -6) or crashed (-11), and a forked worker that waited for the compiles hung."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jax
import numpy as np
import pytest

import augjax
import augjax._runtime.execution.padding as _padding
from augjax import ops

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("exit_phases.py")
PHASES = ("first", "behind", "in-second", "in-third", "after", "fork")
#: The phases in which the background compile runs when the process ends.
IN_FLIGHT = ("behind", "in-second", "in-third", "fork")


def exits(phases: tuple[str, ...], runs: int) -> Counter:
    """Runs ``runs`` processes per phase (two at a time); the exit statuses they had, counted
    by ``(phase, status)``."""
    env = {**os.environ, "AUGJAX_PAD_BATCHES": "1", "AUGJAX_PARTIAL_BATCHES": "recurring",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    done = subprocess.run([sys.executable, str(SCRIPT), ",".join(phases), str(runs), "2"],
                          env=env, capture_output=True, text=True, timeout=900, check=False)
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    got = Counter((name, int(code)) for name, _, code, _ in rows)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sum(got.values()) == 1 + runs * len(phases), (done.stdout, done.stderr[-3000:])
    return got


def check(got: Counter, phases: tuple[str, ...], runs: int) -> None:
    want = Counter({("warm", 0): 1, **{(name, 0): runs for name in phases}})
    assert got == want, f"exit statuses by (phase, status): {dict(got)}"


def test_one_process_in_each_phase_with_a_compile_behind_exits_with_0():
    check(exits(IN_FLIGHT, 1), IN_FLIGHT, 1)  # about 6 CPU-s


@pytest.mark.slow  # 121 processes: about 90 CPU-s
def test_twenty_processes_in_each_phase_exit_with_0():
    check(exits(PHASES, 20), PHASES, 20)


@pytest.fixture
def _recurring(monkeypatch):
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "1")  # the default, which conftest turns off
    monkeypatch.setenv("AUGJAX_PARTIAL_BATCHES", "recurring")
    monkeypatch.setattr(_padding, "_closed", False)


def test_once_the_exit_began_no_compile_starts_and_batches_run_padded(_recurring, monkeypatch):
    chain = augjax.compose(ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.6, 1.4)))
    x = np.random.default_rng(0).integers(0, 256, (16, 8, 8, 3), dtype=np.uint8)
    key = jax.random.key(3)
    chain(x, key=key)
    before = {id(s): s.padded.get(5, 0) for by_sig in _padding._records.values()
              for s in by_sig.values()}
    started: list[object] = []
    monkeypatch.setattr(_padding._Compile, "begin", lambda job: started.append(job))
    _padding._closing()  # what the interpreter runs at exit, before it joins the threads
    outs = [np.asarray(chain(x[:5], key=key)) for _ in range(4)]
    assert started == []
    sizes = [s for by_sig in _padding._records.values() for s in by_sig.values()
             if s.padded.get(5, 0) - before.get(id(s), 0) == 4]
    assert [(5 in s.compiled, s.pending) for s in sizes] == [(False, {})]
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "0")
    alone = np.asarray(chain(x[:5], key=key))  # the batch of 5's own program
    for out in outs:
        np.testing.assert_array_equal(out, alone)
