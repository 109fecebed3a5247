"""Rewrites the targets of benchmarks/README.md (between ``<!-- report: start -->`` and
``<!-- report: end -->``) and the GPU summary of the documentation's performance page,
docs/guide/performance.md (between ``<!-- perf-summary: start -->`` and
``<!-- perf-summary: end -->``) from the newest result
files: ``results/cpu-<date>.json`` (the CPU suite), ``results/gpu-<machine>-<date>.json``
(``gpu.py``) and ``results/e2e-<machine>-<date>.json`` (``e2e.py``). Every target of
``targets.py`` is listed with its measured value and met / not met / not measured.

    python benchmarks/report.py            # rewrite both pages
    python benchmarks/report.py --check    # exit 1 when they are not up to date
    python benchmarks/report.py --print    # print the section with every row, write nothing

It also writes every measured figure of README.md and docs/ (``figures.py``: a marker naming a
result file, the table or number written after it with the file's date and machine);
``--check`` covers them too. ``--results DIR`` (another folder of result files) leaves the pages'
figures alone: they name files of ``benchmarks/results/``.

Files whose schema predates this script (no ``groups`` / ``rows`` / ``summary`` key), partial
CPU runs and GPU runs made with ``--device cpu`` are passed over.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import figures  # noqa: E402
from targets import ALL, Target  # noqa: E402

RESULTS_DIR = [HERE / "results"]  # --results changes it
BENCH_README = HERE / "README.md"
DOCS_PAGE = HERE.parent / "docs" / "guide" / "performance.md"
SECTION = ("<!-- report: start (written by benchmarks/report.py; do not edit) -->",
           "<!-- report: end -->")
SUMMARY = ("<!-- perf-summary: start (written by benchmarks/report.py; do not edit) -->",
           "<!-- perf-summary: end -->")


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def newest(kind: str) -> tuple[Path, dict] | tuple[None, None]:
    """The newest result file of ``kind`` ("cpu", "gpu", "e2e") in the current schema: of one
    day's files the most complete one (the tables show one whole run)."""
    found = candidates(kind, latest_first=False)
    return found[0] if found else (None, None)


def candidates(kind: str, latest_first: bool = True) -> list[tuple[Path, dict]]:
    """The result files of ``kind`` in the current schema, newest date first; of one day's
    files the one started last first (``latest_first``; the GPU script records the time) or
    the most complete one first."""
    found = []
    for path in RESULTS_DIR[0].glob(f"{kind}-*.json"):
        data = _load(path)
        if not isinstance(data, dict) or data.get("benchmark") != kind:
            continue
        if kind == "cpu" and ("groups" not in data or data.get("partial")):
            continue
        if kind == "gpu" and ("rows" not in data or "gpu" not in data["versions"]):
            continue
        if kind == "gpu" and "legacy" in str(data.get("config", {}).get("executor", "")):
            continue  # the targets are read under DALI's default (dynamic) executor
        if kind == "e2e" and ("summary" not in data or str(data.get("machine")) == "cpu"):
            continue
        size = len(data.get("groups") or data.get("rows") or data.get("summary") or ())
        started = data.get("started") or ""
        order = (started, size) if latest_first else (size, started)
        found.append((data.get("date", ""), *order, path.stem, path.stat().st_mtime, path, data))
    # Then the one whose name sorts last (a day's later runs are named
    # "<kind>-<machine>-<date>-<run>": a clone's modification times say nothing), then the
    # last written.
    found.sort(key=lambda t: t[:5], reverse=True)
    return [(path, data) for *_, path, data in found]


def _f(x, digits=2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:,.{digits}f}"


# --------------------------------------------------------------------------------------------
# targets


def _gpu_value(t: Target, gpu: dict):
    rows = gpu["rows"]
    if t.kind == "ms":
        row = rows.get(t.where, {})
        return row.get("augjax_ms"), None
    if t.kind == "ratio":
        row = rows.get(t.where, {})
        return row.get("ratio_fastest_peer"), None
    if t.kind == "ops":  # every op: <= limit x the copy floor or <= its fastest peer
        bad = []
        for key, row in rows.items():
            if not key.startswith(t.where + "/") or "augjax_ms" not in row:
                continue
            ok = row.get("x_copy_floor", math.inf) <= t.limit or row.get(
                "ratio_fastest_peer", math.inf) <= 1.0
            if not ok:
                bad.append(f"{key.rsplit('/', 1)[1]} {row['augjax_ms']:.2f} ms")
        return None, bad
    if t.kind == "ops-dali":
        bad = []
        for key, row in rows.items():
            if key.startswith(t.where + "/") and row.get("ratio_fastest_peer", 0) > t.limit:
                bad.append(f"{key.rsplit('/', 1)[1]} {row['ratio_fastest_peer']:.2f}x")
        return None, bad
    return None, None


def evaluate(cpu, gpus, e2e, files=None) -> list[dict]:
    """Each target judged from its source's newest file; a GPU target from the newest GPU file
    that measured it (``gpus``: ``(path, data)`` newest first; a later run may time a few rows
    only, each row with its peers of that run)."""
    out = []
    files = files or {}
    for t in ALL:
        value, bad, measured, where = None, None, False, files.get(t.source)
        if t.source == "cpu" and cpu:
            value = cpu["groups"].get(t.where, {}).get("ratio")
            measured = value is not None
        elif t.source == "gpu":
            for path, gpu in gpus:
                if t.kind in ("ops", "ops-dali") and (gpu.get("config", {}).get("ops")
                                                      or "arrays/dali_peers" in gpu["rows"]):
                    continue  # "every op" is judged from a run over every op and its peers
                value, bad = _gpu_value(t, gpu)
                measured = value is not None or (bad is not None and any(
                    k.startswith(t.where + "/") and "augjax_ms" in r
                    for k, r in gpu["rows"].items()))
                if measured:
                    where = path
                    break
        elif t.source == "e2e" and e2e:
            b, key = t.where.split("/", 1)
            value = e2e["summary"].get(b, {}).get(key)
            measured = value is not None
        if not measured:
            met = None
        elif bad is not None:
            met = not bad
        elif t.kind == "speed":
            met = value >= t.limit
        else:
            met = value <= t.limit
        out.append({"target": t, "value": value, "bad": bad, "met": met,
                    "file": where if measured else None})
    return out


def _measured(e: dict) -> str:
    t = e["target"]
    if e["met"] is None:
        return "not measured"
    if e["bad"] is not None:
        return "all" if not e["bad"] else "over: " + ", ".join(e["bad"][:8]) + (
            f" (+{len(e['bad']) - 8} more)" if len(e["bad"]) > 8 else "")
    unit = " ms" if t.kind == "ms" else "x"
    return f"{_f(e['value'])}{unit}"


def targets_table(evals) -> list[str]:
    """One row per target; "better" says which way its number improves: times and time ratios
    (augjax / peer) are better lower, throughput ratios (images/s against a baseline) higher."""
    lines = ["| target | better | measured | met? | file |", "|---|---|---|---|---|"]
    for e in evals:
        t = e["target"]
        met = {True: "**yes**", False: "no", None: "-"}[e["met"]]
        f = e["file"]
        better = "higher" if t.kind == "speed" else "lower"
        lines.append(f"| {t.text} | {better} | {_measured(e)} | {met} | "
                     f"{f.name if f else '-'} |")
    return lines


# --------------------------------------------------------------------------------------------
# tables


def cpu_table(cpu: dict) -> list[str]:
    m, v = cpu["machine"], cpu["versions"]
    head = (f"CPU suite (`pytest benchmarks/ --benchmark-only`), {cpu['date']}, "
            f"{m['cpu_count']} cores, 1-minute load {m['load_average_1min_start']:.1f} at the "
            f"start and {m['load_average_1min_end']:.1f} at the end; {cpu.get('executor', 'async')}"
            f" executor; DALI {v['dali']}, JAX "
            f"{v['jax']}, timm {v.get('timm')}, Python {v['python']}; B={cpu['batch']} x "
            f"{cpu['size']}x{cpu['size']}x3 uint8, median ms per batch; ratio = augjax / peer "
            f"(same run, lower is better).")
    lines = [head, "", "\"paired\" is a second reading: the median of the per-round ratios where "
             "augjax's rounds alternated with the peer's (the same load, but the two thread "
             "pools and the scheduler interfere across the alternation; see cpu_results.py).",
             "",
             "| group | augjax (ms) | peer | peer (ms) | ratio | paired | images/s augjax / peer |",
             "|---|---|---|---|---|---|---|"]
    for group in sorted(cpu["groups"], key=lambda g: (g.startswith("op/"), g)):
        g = cpu["groups"][group]
        a, p = g.get("augjax", {}), g.get("peer", {})
        ips = (f"{_f(a.get('images_per_s'), 1)} / {_f(p.get('images_per_s'), 1)}"
               if not group.startswith("op/") else "")
        lines.append(f"| {group} | {_f(a.get('median_ms'))} | {p.get('label', '-')} | "
                     f"{_f(p.get('median_ms'))} | {_f(g.get('ratio'))} | "
                     f"{_f(g.get('ratio_paired'))} | {ips} |")
    return lines


def gpu_tables(gpu: dict) -> list[str]:
    v, m, rows = gpu["versions"], gpu["machine"], gpu["rows"]
    floor = rows.get("arrays/copy_floor", {}).get("ms")
    lines = [f"GPU (`python benchmarks/gpu.py`), {gpu['date']}, {v.get('gpu')} (driver "
             f"{v.get('driver')}, CUDA {v.get('cuda')}), {m.get('cpu_count')} host cores; "
             f"DALI {v['dali']}, JAX {v['jax']}, Python {v['python']}. Arrays at B="
             f"{gpu['config']['batch_sizes']['arrays'][0]}, ms per call; copy floor "
             f"{_f(floor, 3)} ms.", "",
             "| op / policy | augjax (ms) | x copy floor | fastest peer | peer (ms) | ratio |",
             "|---|---|---|---|---|---|"]
    for key, row in rows.items():
        if not key.startswith(("arrays/op/", "arrays/policy/")):
            continue
        name = key.split("/", 2)[2]
        if "augjax_ms" not in row:
            lines.append(f"| {name} | {row.get('error', row.get('skipped', '-'))[:60]} | | | | |")
            continue
        best = row.get("fastest_peer")
        lines.append(f"| {name} | {_f(row['augjax_ms'], 3)} | {_f(row.get('x_copy_floor'), 1)} | "
                     f"{best or '-'} | {_f(row['peers'].get(best) if best else None, 3)} | "
                     f"{_f(row.get('ratio_fastest_peer'))} |")
    dali = [k for k in rows if k.startswith("dali/")]
    if dali:
        bs = sorted({k.split("/")[1] for k in dali}, key=lambda b: int(b[2:]))
        names = list(dict.fromkeys(k.split("/", 2)[2] for k in dali))
        lines += ["", "Through DALI (ms per batch: augjax / peer, ratio):", "",
                  "| row | " + " | ".join(bs) + " |", "|---|" + "---|" * len(bs)]
        for n in names:
            cells = []
            for b in bs:
                row = rows.get(f"dali/{b}/{n}", {})
                if "ms" in row:
                    cells.append(_f(row["ms"], 3))
                elif "augjax_ms" in row:
                    best = row.get("fastest_peer")
                    cells.append(f"{_f(row['augjax_ms'], 3)} / "
                                 f"{_f(row['peers'].get(best) if best else None, 3)} "
                                 f"({_f(row.get('ratio_fastest_peer'))}x)")
                else:
                    cells.append(str(row.get("error", row.get("skipped", "-")))[:40])
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines


def newer_rows(gpus, table_file) -> list[str]:
    """The arrays rows that a run later than the table's file measured again (a run of the
    policies only, say): each with its newest reading and file."""
    seen, out = set(), []
    for path, gpu in gpus:
        if path == table_file:
            break
        for key, row in gpu["rows"].items():
            if key.startswith(("arrays/op/", "arrays/policy/")) and "augjax_ms" in row \
                    and key not in seen:
                seen.add(key)
                out.append(f"| {key.split('/', 2)[2]} | {_f(row['augjax_ms'], 3)} | "
                           f"{_f(row.get('x_copy_floor'), 1)} | {path.name} |")
    if not out:
        return []
    return ["", "Rows measured again by later runs (the table above is one run):", "",
            "| op / policy | augjax (ms) | x copy floor | file |", "|---|---|---|---|", *out]


E2E_ROWS = [("decode + crop", "decode_crop_img_s", None),
            ("+ DALI flip, color_twist, crop_mirror_normalize", "dali_native_img_s", None),
            ("+ augjax chain (one crossing)", "augjax_chain_img_s", "augjax_chain_vs_decode_crop"),
            ("+ DALI flip, auto_aug rand_augment, crop_mirror_normalize", "dali_randaug_img_s",
             None),
            ("+ augjax chain with RandAugment", "augjax_randaug_img_s",
             "augjax_randaug_vs_decode_crop"),
            ("iterator: augjax chain after it, augment_batches(prefetch=2) (x the iterator's "
             "decode + crop)",
             "after_iterator_prefetch_img_s", "after_iterator_prefetch_vs_iterator_decode_crop")]


def e2e_table(e2e: dict) -> list[str]:
    cols = sorted(e2e["summary"], key=lambda k: (int(k.split()[0][2:]), k.split()[1]))
    lines = [f"End to end (`e2e.py`), {e2e['date']}, {e2e.get('machine')}, "
             f"{e2e['config'].get('distinct_images')} distinct JPEGs; images/s (x decode + crop):",
             "", "| images/s | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for label, key, rel in E2E_ROWS:
        cells = []
        for c in cols:
            s = e2e["summary"][c]
            v = s.get(key)
            cells.append("" if v is None else f"{v:,.0f}" + (
                f" ({s[rel]:.2f}x)" if rel and rel in s else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


# --------------------------------------------------------------------------------------------


def build(tables: bool = False) -> tuple[str, str | None]:
    """The README's section (the targets; with ``tables``, every row of the newest CPU, GPU and
    e2e files too, as ``--print`` shows them) and the docs page's GPU summary."""
    files, data = {}, {}
    for kind in ("cpu", "gpu", "e2e"):
        files[kind], data[kind] = newest(kind)
    evals = evaluate(data["cpu"], candidates("gpu"), data["e2e"], files)
    met = sum(e["met"] is True for e in evals)
    missed = sum(e["met"] is False for e in evals)
    lines = [SECTION[0], "",
             f"Targets: {met} met, {missed} not met, {len(evals) - met - missed} not measured "
             f"in the newest result files. Every row of those files: "
             f"`python benchmarks/report.py --print`.", ""]
    lines += targets_table(evals)
    if tables and data["cpu"]:
        lines += [""] + cpu_table(data["cpu"])
    if tables and data["gpu"]:
        lines += [""] + gpu_tables(data["gpu"]) + newer_rows(candidates("gpu"), files["gpu"])
    if tables and data["e2e"]:
        lines += [""] + e2e_table(data["e2e"])
    lines += ["", SECTION[1]]
    summary = None
    if data["gpu"]:
        gpu_evals = [e for e in evals if e["target"].source in ("gpu", "e2e")]
        v = data["gpu"]["versions"]
        summary = "\n".join([SUMMARY[0], "",
                             f"Measured on {v.get('gpu')}, {data['gpu']['date']} (JAX "
                             f"{v.get('jax')}, DALI {v.get('dali')}, Python {v.get('python')}); "
                             f"the tables: `benchmarks/results/{files['gpu'].name}` "
                             "(`python benchmarks/report.py --print`). Each row names the "
                             "result file it was read from (`benchmarks/results/`).", ""]
                            + targets_table(gpu_evals) + ["", SUMMARY[1]])
    return "\n".join(lines), summary


def _replace(text: str, marks: tuple[str, str], body: str) -> str:
    start, end = marks
    if start not in text or end not in text:
        raise SystemExit(f"markers missing: {start!r} ... {end!r}")
    head, rest = text.split(start, 1)
    return head + body + rest.split(end, 1)[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--print", action="store_true")
    ap.add_argument("--results", default=None, help="folder of result files (default: results/)")
    args = ap.parse_args(argv)
    if args.results:
        RESULTS_DIR[0] = Path(args.results)
    section, summary = build(tables=args.print)
    if args.print:
        print(section)
        if summary:
            print(summary)
        return 0
    stale = []
    for path, marks, body in ((BENCH_README, SECTION, section), (DOCS_PAGE, SUMMARY, summary)):
        if body is None:  # no GPU run in the current schema yet: the summary stays as it is
            continue
        old = path.read_text()
        new = _replace(old, marks, body)
        if new != old:
            stale.append(path)
            if not args.check:
                path.write_text(new)
    if not args.results:
        try:
            stale += figures.update(check=args.check)
        except figures.FigureError as e:
            print(f"a figure marker cannot be written: {e}", file=sys.stderr)
            return 2
    if args.check:
        for p in stale:
            print(f"{p} is not up to date: run python benchmarks/report.py")
        return 1 if stale else 0
    for p in stale:
        print(f"rewrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
