"""The CPU suite's rows, paired into groups (augjax against its peer of the same run), and the
result file ``results/cpu-<date>.json`` with every group's ratio and the targets met or not.

A group holds up to two rows: ``augjax`` and ``peer``; its ratio is augjax's median time over
the peer's, each row timed on its own (lower is better; < 1: augjax is faster). Where augjax's
rounds also alternated with the peer's, ``ratio_paired`` is the median of the per-round ratios:
a second reading, measured under the same load but not free of bias (the two libraries'
thread pools and the scheduler interfere across the alternation: a DALI batch right after an
XLA call ran up to 5x slower than alone on the loaded 2-core machine, and faster after a
pause). Where the two readings disagree, the machine was too loaded for that row.
``test_cpu.py`` records each row with :func:`record`; ``conftest.py`` writes the file at the
end of the session.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from harness import RESULTS, machine, today, versions

#: group -> role ("augjax" / "peer") -> row
ROWS: dict[str, dict[str, dict]] = {}


def record(benchmark, group: str, role: str, label: str, images: int,
           partner_s: list[float] | None = None) -> None:
    """Files the benchmark's median under ``group``/``role`` (with ``partner_s``, the peer's
    time in each of the same rounds: the paired ratio) and, once both rows of the group are in,
    puts the ratio into both rows' ``extra_info`` (pytest-benchmark's JSON)."""
    stats = benchmark.stats.stats
    med = stats.median
    row = {"label": label, "median_ms": 1e3 * med, "images_per_s": images / med,
           "rounds": stats.rounds, "iqr_ms": 1e3 * stats.iqr, "extra_info": benchmark.extra_info}
    if partner_s:
        per_round = [a / p for a, p in zip(stats.data, partner_s)]
        row["paired_ratio"] = statistics.median(per_round)
        row["paired_ratios"] = per_round
        row["partner_median_ms"] = 1e3 * statistics.median(partner_s)
    benchmark.extra_info.update(group=group, role=role, label=label,
                                images_per_s=row["images_per_s"])
    ROWS.setdefault(group, {})[role] = row
    pair = ROWS[group]
    if "augjax" in pair and "peer" in pair:
        r = ratio(group)
        for side in pair.values():
            side["extra_info"]["ratio_augjax_over_peer"] = r


def ratio(group: str) -> float:
    """augjax's median over the peer's (nan: one row)."""
    pair = ROWS.get(group, {})
    if "augjax" not in pair or "peer" not in pair:
        return math.nan
    return pair["augjax"]["median_ms"] / pair["peer"]["median_ms"]


def paired_ratio(group: str) -> float:
    return ROWS.get(group, {}).get("augjax", {}).get("paired_ratio", math.nan)


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


def result(batch: int, size: int, load_start: float, partial: bool, executor: str) -> dict:
    """The whole run as one JSON-able dict."""
    from targets import CPU

    groups = {}
    for group, pair in ROWS.items():
        groups[group] = {role: {k: v for k, v in row.items() if k != "extra_info"}
                         for role, row in pair.items()}
        r, paired = ratio(group), paired_ratio(group)
        groups[group]["ratio"] = None if math.isnan(r) else r
        groups[group]["ratio_paired"] = None if math.isnan(paired) else paired
    info = machine()
    info["load_average_1min_start"] = load_start
    info["load_average_1min_end"] = info.pop("load_average_1min")
    return {"benchmark": "cpu", "date": today(), "machine": info, "versions": versions(),
            "batch": batch, "size": size, "partial": partial, "executor": executor,
            "metric": "median ms per batch (pipe.run() or one call on arrays) over the rounds; "
                      "ratio = augjax / peer, same run, of the rows' medians; ratio_paired = "
                      "the median of per-round ratios where the rounds alternated",
            "groups": groups, "targets": evaluate(CPU, groups)}


def write(res: dict, out: str | None = None) -> Path:
    name = f"cpu-{res['date']}{'-partial' if res['partial'] else ''}.json"
    path = Path(out) if out else RESULTS / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=1) + "\n")
    return path
