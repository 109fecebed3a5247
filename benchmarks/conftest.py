"""Benchmarks' pytest glue: the ratio summary of bench_cpu.py."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def pytest_terminal_summary(terminalreporter):
    try:
        from bench_cpu import RESULTS, B, S
    except ImportError:
        return
    if not RESULTS:
        return
    import jax
    import nvidia.dali

    import augjax

    tr = terminalreporter
    tr.section(f"augjax / DALI native, CPU, B={B} x {S}x{S}x3 uint8 (median ms per batch)")
    rows = {}
    for group, r in RESULTS.items():
        ratio = r["augjax"] / r["native"] if "augjax" in r and "native" in r else float("nan")
        rows[group] = {**r, "ratio_augjax_over_native": ratio}
        tr.write_line(f"{group:<18} native {r.get('native', float('nan')):8.2f}  augjax "
                      f"{r.get('augjax', float('nan')):8.2f}  arrays {r.get('arrays', float('nan')):8.2f}"
                      f"  ratio {ratio:5.2f}")
    out = os.environ.get("AUGJAX_BENCH_OUT") or str(
        Path(__file__).parent / "results" / f"cpu-{datetime.date.today().isoformat()}.json")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                   "cpu_count": os.cpu_count(), "batch": B, "size": S,
                   "versions": {"augjax": augjax.__version__, "dali": nvidia.dali.__version__,
                                "jax": jax.__version__, "python": platform.python_version()},
                   "ms_per_batch": rows}, f, indent=1)
    tr.write_line(f"wrote {out}")
