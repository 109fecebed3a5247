"""The test suite's CPU profile: CPU-seconds per test, module and tier, read off each test's
process (every thread, plus the subprocesses it waited for), so that a run on a machine that
other work shares still says what each test costs (wall time there says how busy the machine
was). ``tests/conftest.py`` turns it on when ``AUGJAX_TEST_PROFILE`` names a folder: each
pytest process (each xdist worker) writes ``<folder>/<worker>.jsonl``, one line per test. Then

    python tests/suite_profile.py <folder>      # per module: CPU-s, tests, of which slow
    python tests/suite_profile.py <whole-suite folder> <fast-tier folder> --cut
                                                # writes the fast tier's cut, fast_tier_cut.py

How the numbers became the fast tier and CI's split: CONTRIBUTING.md ("The tests")."""

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
#: Set by tests/conftest.py on a test that its module marks slow (not the tier's lists).
MARKED = pytest.StashKey[bool]()


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
                     "slow": item.get_closest_marker("slow") is not None,
                     "marked": item.stash.get(MARKED, False), "jax": spent})

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


#: The fast tier's budget cut (``--cut``): a parametrized test whose fast parameter sets cost
#: this many CPU-s together runs its cheapest set only; a test that costs ``TEST_BUDGET`` or more
#: leaves the tier where its module keeps a cheaper test.
PARAM_BUDGET = 2.0
TEST_BUDGET = 2.0
CUT_FILE = Path(__file__).with_name("fast_tier_cut.py")


def fast_tier_cut(*folders: str) -> tuple[dict[str, str], list[str]]:
    """The cut of :data:`PARAM_BUDGET` and :data:`TEST_BUDGET` over the tests that
    ``tests/conftest.py``'s own lists keep in the fast tier (those the current cut left out count
    as fast again): the parameter set each cut parametrized test keeps, and the tests left out.
    The kit's test and the per-op sweeps keep their own sets (``KIT_FAST_OPS``). A test's cost
    is the one of the last profile in ``folders`` that ran it: a profile of the whole suite
    first, then one of the fast tier (a test there costs what it costs without the slow tests
    that warmed the compilation cache for it)."""
    import conftest
    import fast_tier_cut as cut

    last = {}
    for folder in folders:
        for f in sorted(Path(folder).glob("*.jsonl")):
            for line in f.read_text().splitlines():
                row = json.loads(line) if line else {}
                if "id" in row:
                    last[row["id"]] = row
    rows = list(last.values())

    def fast_by_hand(r: dict) -> bool:  # a profile without "marked": the cut counts as fast
        marked = r["marked"] if "marked" in r else r["slow"] and not left_out_by_cut(
            cut.ONE_PARAM, cut.LEFT_OUT, r["id"])
        return not marked and not conftest.slow_by_hand(r["id"])

    fast = [r for r in rows if "id" in r and fast_by_hand(r)]
    by_base: dict[str, list[dict]] = collections.defaultdict(list)
    for r in fast:
        by_base[r["id"].partition("[")[0]].append(r)
    params: dict[str, str] = {}
    kept: list[dict] = []
    for base, rs in by_base.items():
        sweep = base in conftest.OP_SWEEPS or rs[0]["id"].startswith(conftest.KIT_TEST)
        if len(rs) > 1 and "[" in rs[0]["id"] and not sweep \
                and sum(r["cpu"] for r in rs) >= PARAM_BUDGET:
            # the set the current cut keeps stays (costs of sets from different profiles do
            # not compare); else the cheapest
            same = [r for r in rs if r["id"] == f"{base}[{cut.ONE_PARAM.get(base)}]"]
            cheapest = same[0] if same else min(rs, key=lambda r: r["cpu"])
            params[base] = cheapest["id"][len(base) + 1:-1]
            kept.append(cheapest)
        else:
            kept += rs
    by_module: dict[str, list[dict]] = collections.defaultdict(list)
    for r in kept:
        by_module[r["id"].split("::")[0]].append(r)
    out: list[str] = []
    for rs in by_module.values():
        cheap = [r for r in rs if r["cpu"] < TEST_BUDGET] or [min(rs, key=lambda r: r["cpu"])]
        for r in rs:
            if r in cheap or r["id"].startswith(conftest.KIT_TEST):
                continue
            base = r["id"].partition("[")[0]
            if base in params:  # its one kept set is costly too: the whole test leaves
                del params[base]
                out.append(base)
            else:
                out.append(r["id"])
    fast_cpu = sum(r["cpu"] for r in fast)
    left = sum(r["cpu"] for r in fast if left_out_by_cut(params, out, r["id"]))
    print(f"fast tier by the hand lists {fast_cpu:.0f} CPU-s; the cut leaves out {left:.0f}, "
          f"keeps {fast_cpu - left:.0f}", file=sys.stderr)
    return params, sorted(out)


def left_out_by_cut(params: dict[str, str], out, nodeid: str) -> bool:
    """Whether the cut (``ONE_PARAM``, ``LEFT_OUT``) leaves ``nodeid`` out of the fast tier."""
    base, _, param = nodeid.partition("[")
    return (nodeid in out or base in out
            or (base in params and param[:-1] != params[base]))


def write_cut(*folders: str) -> None:
    """Writes :data:`CUT_FILE` from the profiles in ``folders`` (:func:`fast_tier_cut`)."""
    params, out = fast_tier_cut(*folders)
    lines = ['"""The fast tier\'s budget cut, written by ``python tests/suite_profile.py <profile>',
             '[<fast-tier profile>] --cut`` from CPU profiles (CONTRIBUTING.md, "The tests"): a',
             f'parametrized test whose fast parameter sets cost {PARAM_BUDGET} CPU-s or more',
             'together runs its cheapest set in the fast tier (``ONE_PARAM``); a test of',
             f'{TEST_BUDGET} CPU-s or more leaves the tier where its module keeps a cheaper test',
             '(``LEFT_OUT``). CI runs them all. Not edited by hand: written again from a new',
             'profile."""',
             "", "from __future__ import annotations", "", "ONE_PARAM: dict[str, str] = {"]
    lines += [f"    {json.dumps(base)}: {json.dumps(param)},"
              for base, param in sorted(params.items())]
    lines += ["}", "", "LEFT_OUT = frozenset({"]
    lines += [f"    {json.dumps(nodeid)}," for nodeid in out]
    lines += ["})", ""]
    lines = [f"{line}  # noqa: E501" if len(line) > 100 else line for line in lines]
    CUT_FILE.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    if "--cut" in sys.argv[2:]:
        write_cut(*[a for a in sys.argv[1:] if a != "--cut"])
    else:
        print(report(sys.argv[1]))
