"""pytest glue of the CPU suite (``test_cpu.py``): the folder's modules on the path, the ratio
table at the end of the session, and the result file ``results/cpu-<date>.json``.

``benchmarks/`` is not in pyproject's ``testpaths``: ``pytest`` alone (and CI) runs ``tests/``
only; run this suite with ``pytest benchmarks/ --benchmark-only``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

_LOAD: list[float] = []


def pytest_sessionstart(session):
    _LOAD.append(os.getloadavg()[0])


def _partial(session) -> bool:
    opt = session.config.option
    return bool(getattr(opt, "keyword", "") or getattr(opt, "markexpr", "")
                or any("::" in a for a in session.config.args))


def pytest_sessionfinish(session, exitstatus):
    import cpu_results

    if not cpu_results.ROWS:
        return
    import test_cpu

    res = cpu_results.result(test_cpu.B, test_cpu.S, _LOAD[0] if _LOAD else float("nan"),
                             partial=_partial(session), executor=test_cpu.EXECUTOR)
    path = cpu_results.write(res, os.environ.get("AUGJAX_BENCH_OUT"))
    session.config._augjax_cpu_result = (res, path)


def pytest_terminal_summary(terminalreporter, config):
    got = getattr(config, "_augjax_cpu_result", None)
    if not got:
        return
    res, path = got
    tr = terminalreporter
    m = res["machine"]
    tr.section(f"augjax / peer, CPU, {res['executor']} executor, B={res['batch']} x "
               f"{res['size']}^2 uint8, "
               f"{m['cpu_count']} cores, load {m['load_average_1min_start']:.1f} -> "
               f"{m['load_average_1min_end']:.1f}")
    for group, g in sorted(res["groups"].items()):
        a, p = g.get("augjax"), g.get("peer")
        cells = [f"{group:<32}"]
        cells.append(f"augjax {a['median_ms']:9.2f} ms" if a else f"{'':>19}")
        cells.append(f"peer {p['median_ms']:9.2f} ms ({p['label']})" if p else "no peer")
        if g.get("ratio_paired") is not None:
            cells.append(f"(paired {g['ratio_paired']:.2f})")
        if g.get("ratio") is not None:
            cells.insert(2, f"ratio {g['ratio']:6.2f}")
        tr.write_line("  ".join(cells))
    tr.write_line("targets:")
    for t in res["targets"]:
        state = {True: "met", False: "NOT met", None: "not measured"}[t["met"]]
        r = "-" if t["ratio"] is None else f"{t['ratio']:.2f}"
        tr.write_line(f"  {t['id']:<24} {r:>6} (limit {t['limit']})  {state}")
    tr.write_line(f"wrote {path}")
