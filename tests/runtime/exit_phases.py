"""Processes that end in each phase of the ``recurring`` partial-batch policy (augjax.
_runtime.padding), for tests/runtime/test_recurring_exit.py.

    python exit_phases.py PHASE[,PHASE...] RUNS WORKERS

imports NumPy, JAX and augjax once (no JAX backend started), then forks ``RUNS`` children per
phase, ``WORKERS`` at a time. A child starts its own backend, calls a chain on batches of 16,
then 5, 5 and 5 images (the policy's phases: padded, padded while the size's own program
compiles in a background thread, its own program) and ends as the phase says, through the
interpreter's real exit: ``sys.exit(0)`` (or a ``SystemExit`` raised inside a call) unwinds to
the top of this script, and the interpreter finalizes (threads joined, ``atexit`` handlers
run, modules torn down). A first child (``warm``) runs every call first: it fills the caches
and names the modules the calls import, which this process then imports before it forks the
others. Prints one line per child: ``PHASE RUN CODE CPU`` (the exit status as
:func:`os.waitstatus_to_exitcode` gives it: ``-11`` a segfault, ``-6`` an abort, ``-9`` killed
after ``LIMIT`` seconds; the child's CPU seconds).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import sys
import time

import jax
import numpy as np

import augjax
import augjax._runtime.execution.padding as _padding
from augjax import ops

#: Seconds a child may take before it is killed (a hang at exit or in a forked child).
LIMIT = 120.0
#: Seconds a forked worker that only waits for the compiles it knows of may take.
WORKER_LIMIT = 30.0


def _chain():
    return augjax.compose(ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.6, 1.4)))


def _calls(chain, *sizes: int) -> None:
    for n in sizes:
        x = np.full((n, 8, 8, 3), 7 * n, np.uint8)
        jax.block_until_ready(chain(x, key=jax.random.key(n)))


def _exit_in_begin() -> None:
    """The second batch of 5 exits from inside its call, right after its background compile
    started."""
    begin = _padding._Compile.begin

    def exiting(self):
        begin(self)
        sys.exit(0)

    _padding._Compile.begin = exiting


def _exit_on_alarm(seconds: float) -> None:
    """A ``SystemExit`` raised in the main thread after ``seconds``, wherever it is (a signal,
    as Ctrl-C would)."""
    def handler(signum, frame):
        sys.exit(0)

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _forked_child_exits() -> None:
    """Forks a worker while the background compile runs, as ``multiprocessing`` (and a
    PyTorch DataLoader) do: the worker waits for the compiles it knows of and ends as such a
    worker ends (threads joined, then ``os._exit``: a forked child of a process whose JAX
    started cannot finalize an interpreter, with or without augjax); this process then exits,
    with 3 if the worker did not end with 0 within ``WORKER_LIMIT`` seconds."""
    worker = multiprocessing.get_context("fork").Process(target=_padding.wait_compiles)
    worker.start()
    worker.join(WORKER_LIMIT)
    if worker.exitcode != 0:
        if worker.exitcode is None:
            worker.kill()
        sys.exit(3)


def phase(name: str) -> None:
    """Runs one child's calls for the phase ``name``; returns only where the phase exits by
    falling off the end (then the caller exits)."""
    chain = _chain()
    if name == "first":  # the size's first batch ran padded: no compile behind
        _calls(chain, 16, 5)
    elif name == "behind":  # its second batch ran: its own program compiles behind
        _calls(chain, 16, 5, 5)
    elif name == "in-second":  # exits inside the second batch's call, the compile started
        _exit_in_begin()
        _calls(chain, 16, 5, 5)
    elif name == "in-third":  # a signal exits the third batch's call (it waits for the compile)
        _calls(chain, 16, 5, 5)
        _exit_on_alarm(0.01)
        _calls(chain, 5)
        signal.setitimer(signal.ITIMER_REAL, 0)
    elif name == "after":  # the compile finished; the size ran its own program
        _calls(chain, 16, 5, 5)
        _padding.wait_compiles()
        _calls(chain, 5)
    elif name == "fork":  # forks a worker while the compile runs behind; both end
        _calls(chain, 16, 5, 5)
        _forked_child_exits()
    else:
        raise SystemExit(f"unknown phase {name!r}")


PHASES = ("first", "behind", "in-second", "in-third", "after", "fork")


def _fork(name: str, write: int | None = None) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        phase(name)
        if write is not None:  # what the calls imported, for the parent to import
            os.write(write, "\n".join(sorted(sys.modules)).encode())
        sys.exit(0)  # unwinds to the top: the interpreter's own exit
    return pid


def _warm() -> tuple[int, float]:
    """One child that runs every call (the compiles or the program store's loads for the
    others) and names the modules the calls imported: this process imports them, so that the
    next children pay their JAX backend, their calls and their exit, not the imports."""
    read, write = os.pipe()
    pid = _fork("after", write)
    os.close(write)
    with os.fdopen(read) as names:
        imported = names.read().split()
    _, status, usage = os.wait4(pid, 0)
    for name in imported:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001  (a module a child imports only as it may)
                pass
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def main(phases: list[str], runs: int, workers: int) -> None:
    code, cpu = _warm()
    print("warm", 0, code, f"{cpu:.3f}", flush=True)
    todo = [(name, run) for name in phases for run in range(runs)]
    running: dict[int, tuple[str, int, float]] = {}
    while todo or running:
        while todo and len(running) < workers:
            name, run = todo.pop(0)
            running[_fork(name)] = (name, run, time.monotonic() + LIMIT)
        time.sleep(0.01)
        for pid, (name, run, deadline) in list(running.items()):
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if not done and time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                done, status, usage = os.wait4(pid, 0)
            if done:
                del running[pid]
                cpu = usage.ru_utime + usage.ru_stime
                print(name, run, os.waitstatus_to_exitcode(status), f"{cpu:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3]))
