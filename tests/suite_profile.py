"""The test suite's CPU profile: CPU-seconds per test, module and tier, read off each test's
process (every thread, plus the subprocesses it waited for), so that a run on a machine that
other work shares still says what each test costs (wall time there says how busy the machine
was). ``tests/conftest.py`` turns it on when ``AUGJAX_TEST_PROFILE`` names a folder: each
pytest process (each xdist worker) writes ``<folder>/<worker>.jsonl``, one line per test. Then

    python tests/suite_profile.py <folder>      # per module: CPU-s, tests, of which slow
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

ENV = "AUGJAX_TEST_PROFILE"


#: CPU-seconds of processes that ran for the current test but that this process does not reap
#: itself (a fork server's children, tests/forkrun.py): :func:`charge` adds them here and
#: the running test's row takes what was added during it.
_CHARGED = [0.0]


#: JAX's compile-path timings and counts of those processes (:func:`charge_jax`).
_CHARGED_JAX: collections.Counter = collections.Counter()


def charge_jax(spent: dict[str, float]) -> None:
    """Adds a child's JAX timings and counts (the names of :data:`EVENTS`, ``compiles``,
    ``hits``) to the running test's row, as :func:`charge` does its CPU."""
    _CHARGED_JAX.update(spent)


def charge(seconds: float) -> None:
    """Adds ``seconds`` of CPU to the running test's row (negative: takes them off, e.g. where
    a server that reaped those processes is reaped in turn and its children's CPU arrives in
    this process's own count)."""
    _CHARGED[0] += seconds


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


class Recorder:
    """The pytest plugin: one JSON line per test (its setup, call and teardown together)."""

    def __init__(self, folder: str) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.out = open(Path(folder) / f"{worker}.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        self.jax = collections.Counter()  # JAX's own timings in this process (_listen)
        _listen(self.jax)

    def _write(self, row: dict) -> None:
        self.out.write(json.dumps(row) + "\n")
        self.out.flush()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        own0, kids0 = _cpu()
        charged0 = _CHARGED[0]
        t0 = time.perf_counter()
        jax0 = collections.Counter(self.jax) + _CHARGED_JAX
        yield
        own1, kids1 = _cpu()
        charged = _CHARGED[0] - charged0
        spent = {k: round(v, 3) for k, v in (self.jax + _CHARGED_JAX - jax0).items()}
        self._write({"id": item.nodeid, "cpu": round(own1 - own0 + kids1 - kids0 + charged, 3),
                     "wall": round(time.perf_counter() - t0, 3),
                     "slow": item.get_closest_marker("slow") is not None, "jax": spent})

    def pytest_sessionfinish(self, session):
        own, kids = _cpu()
        self._write({"event": "end", "cpu": own + kids, "own": own})
        self.out.close()


#: JAX's monitoring events this profile adds up per test (in this process, and in the fork
#: server's children that ran for it: :func:`charge_jax`; not in other subprocesses): the name
#: in the row -> JAX's event.
EVENTS = {
    "trace_s": "/jax/core/compile/jaxpr_trace_duration",
    "lower_s": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "compile_s": "/jax/core/compile/backend_compile_duration",  # cache hits included
    "saved_s": "/jax/compilation_cache/compile_time_saved_sec",
}


def _listen(into: collections.Counter) -> None:
    """Adds JAX's compile-path durations and counts to ``into`` (``compile_s`` and
    ``compiles`` count persistent-cache hits too; ``hits`` those)."""
    import jax.monitoring as monitoring

    names = {event: name for name, event in EVENTS.items()}

    def duration(event: str, secs: float, **_: object) -> None:
        name = names.get(event)
        if name:
            into[name] += secs
            if name == "compile_s":
                into["compiles"] += 1

    def event(event: str, **_: object) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            into["hits"] += 1

    monitoring.register_event_duration_secs_listener(duration)
    monitoring.register_event_listener(event)


def _outside(rows: list[dict]) -> float:
    """A process's CPU outside its tests (its own, and its children's outside the tests)."""
    end, ran = rows[-1], [r["cpu"] for r in rows if "id" in r]
    if not ran:
        return end.get("own", 0.0)
    return end["cpu"] - sum(ran)


def report(folder: str, top: int = 40) -> str:
    """Per module: CPU-seconds of all its tests and of its slow ones, heaviest first; then the
    totals (tests, fast tier, slow) and the processes' CPU outside their tests."""
    files = [[json.loads(line) for line in f.read_text().splitlines() if line]
             for f in sorted(Path(folder).glob("*.jsonl"))]
    tests = [r for rows in files for r in rows if "id" in r]
    # each process's CPU outside its tests: imports, collection, xdist's traffic. xdist's
    # controller runs no test, and its children are the workers (their own files): its own CPU.
    outside = sum(_outside(rows) for rows in files if rows and rows[-1].get("event") == "end")
    mods: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0, 0.0, 0])
    for r in tests:
        m = mods[r["id"].split("::")[0]]
        m[0] += r["cpu"]
        m[1] += 1
        if r["slow"]:
            m[2] += r["cpu"]
            m[3] += 1
    lines = [f"{'CPU-s':>8} {'tests':>6} {'slow CPU-s':>10} {'slow':>5}  module"]
    for name, (cpu, n, slow_cpu, slow_n) in sorted(mods.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"{cpu:8.1f} {n:6d} {slow_cpu:10.1f} {slow_n:5d}  {name}")
    total = sum(r["cpu"] for r in tests)
    slow = sum(r["cpu"] for r in tests if r["slow"])
    lines.append(f"total {total:.0f} CPU-s over {len(tests)} tests: fast tier {total - slow:.0f}, "
                 f"slow {slow:.0f}; outside the tests (imports, collection) {outside:.0f} CPU-s "
                 f"over {len(files)} process(es)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(sys.argv[1]))
