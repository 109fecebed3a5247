"""The CPU suite's rows, paired into groups (augjax against its peer of the same run), and the
result file ``results/cpu-<date>.json`` with every group's ratio and the targets met or not.

A group holds up to two rows: ``augjax`` and ``peer``; its ratio is augjax's median time over
the peer's (lower is better; < 1: augjax is faster). ``test_cpu.py`` records each row with
:func:`record`; ``conftest.py`` writes the file at the end of the session.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from harness import RESULTS, machine, today, versions

#: group -> role ("augjax" / "peer") -> row
ROWS: dict[str, dict[str, dict]] = {}


def record(benchmark, group: str, role: str, label: str, images: int) -> None:
    """Files the benchmark's median under ``group``/``role`` and, once both rows of the group
    are in, puts the ratio into both rows' ``extra_info`` (pytest-benchmark's JSON)."""
    med = benchmark.stats.stats.median
    row = {"label": label, "median_ms": 1e3 * med, "images_per_s": images / med,
           "rounds": benchmark.stats.stats.rounds, "iqr_ms": 1e3 * benchmark.stats.stats.iqr,
           "extra_info": benchmark.extra_info}
    benchmark.extra_info.update(group=group, role=role, label=label,
                                images_per_s=row["images_per_s"])
    ROWS.setdefault(group, {})[role] = row
    pair = ROWS[group]
    if "augjax" in pair and "peer" in pair:
        r = ratio(group)
        for side in pair.values():
            side["extra_info"]["ratio_augjax_over_peer"] = r


def ratio(group: str) -> float:
    pair = ROWS.get(group, {})
    if "augjax" not in pair or "peer" not in pair:
        return math.nan
    return pair["augjax"]["median_ms"] / pair["peer"]["median_ms"]


def evaluate(targets, groups: dict) -> list[dict]:
    """Each target with its measured ratio and met / not met / not measured."""
    out = []
    for t in targets:
        g = groups.get(t.where, {})
        r = g.get("ratio")
        measured = r is not None and not math.isnan(r)
        out.append({"id": t.id, "target": t.text, "limit": t.limit, "ratio": r if measured
                    else None, "met": (r <= t.limit) if measured else None})
    return out


def result(batch: int, size: int, load_start: float, partial: bool) -> dict:
    """The whole run as one JSON-able dict."""
    from targets import CPU

    groups = {}
    for group, pair in ROWS.items():
        groups[group] = {role: {k: v for k, v in row.items() if k != "extra_info"}
                         for role, row in pair.items()}
        r = ratio(group)
        groups[group]["ratio"] = None if math.isnan(r) else r
    info = machine()
    info["load_average_1min_start"] = load_start
    info["load_average_1min_end"] = info.pop("load_average_1min")
    return {"benchmark": "cpu", "date": today(), "machine": info, "versions": versions(),
            "batch": batch, "size": size, "partial": partial,
            "metric": "median ms per batch (pipe.run() or one call on arrays) over the rounds; "
                      "ratio = augjax / peer, same run",
            "groups": groups, "targets": evaluate(CPU, groups)}


def write(res: dict, out: str | None = None) -> Path:
    name = f"cpu-{res['date']}{'-partial' if res['partial'] else ''}.json"
    path = Path(out) if out else RESULTS / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=1) + "\n")
    return path
