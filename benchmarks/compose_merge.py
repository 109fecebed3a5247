"""One result file from several runs of ``compose.py`` (a matrix timed by two processes at once,
or cut by a time limit and finished by another run), with the summary the pages' figures read.

    python benchmarks/compose_merge.py A.json B.json --out results/compose-cpu-DATE-b16-matrix.json \
        --note "..." [--drop-from B.json first+second ...] [--recheck C.json]

A pair timed in several files keeps its row of the first file that has it; ``--drop-from FILE
PAIR...`` leaves those pairs of that file out (rows timed on code that differs for them);
``--recheck FILE...``: the pairs timed again there (more rounds) take that reading's paired ratio
as their final ratio, as ``compose.py --recheck`` does, the first reading kept. Each row keeps
``parts``, how its ops alone drew: its own (rows since 2026-12-05) or its file's ``config.parts``
("own-draws" for files before it had one). The
file keeps each source's name, note, argv and load, and adds ``summary``: the pairs timed, how
many are over the target, the median and the worst rows by final ratio (``compose.worst``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compose import TARGET, worst  # noqa: E402


def summary(pairs: list[dict], n: int = 10) -> dict:
    """The pairs timed, those over :data:`compose.TARGET`, the median final ratio and the ``n``
    worst rows (first, second, the three ms and the final ratio; the recheck's ms where the pair
    was timed again)."""
    done = [r for r in pairs if "ratio" in r]
    final = [r.get("final_ratio", r["ratio"]) for r in done]
    keys = ("first", "second", "chain_ms", "first_ms", "second_ms", "sum_ms", "final_ratio")
    return {"pairs_timed": len(done), "over_target": sum(f > TARGET for f in final),
            "over_1_05": sum(f > 1.05 for f in final),
            "median_ratio": round(statistics.median(final), 3) if final else None,
            "worst": [{k: {**r, **r.get("recheck", {})}.get(k, r["ratio"]) for k in keys}
                      for r in worst(done, n)]}


def merge(files: list[str], note: str, drop: dict[str, set[tuple[str, str]]],
          recheck: list[str] = ()) -> dict:
    results = [json.loads(Path(f).read_text()) for f in files]
    out = dict(results[0])
    seen: set[tuple[str, str]] = set()
    pairs = []
    for name, result in zip(files, results):
        for row in result["pairs"]:
            pair = (row["first"], row["second"])
            if pair in seen or pair in drop.get(name, set()) or "ratio" not in row:
                continue
            seen.add(pair)
            pairs.append({"parts": result["config"].get("parts", "own-draws"), **row,
                          "source": Path(name).name})
    out.update(pairs=pairs, note=note, complete=len(seen) == 400,
               sources=[{"file": Path(f).name, "note": r.get("note"),
                         "argv": r["config"].get("argv"), "elapsed_s": r.get("elapsed_s"),
                         "machine": r.get("machine")} for f, r in zip(files, results)])
    for row in pairs:  # no recheck: the paired ratio (a load change hits the three alike)
        row.setdefault("final_ratio", row["paired_ratio"])
    for name in recheck:
        again = {(r["first"], r["second"]): r for r in json.loads(Path(name).read_text())
                 ["pairs"] if "ratio" in r}
        for row in pairs:
            pair = (row["first"], row["second"])
            if pair in again:
                keys = ("chain_ms", "first_ms", "second_ms", "sum_ms", "ratio", "paired_ratio",
                        "iters")
                row["recheck"] = {**{k: again[pair][k] for k in keys},
                                  "file": Path(name).name}
                row["final_ratio"] = again[pair]["paired_ratio"]
    out["recheck_files"] = [Path(name).name for name in recheck]
    out["summary"] = summary(pairs)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--note", default="")
    parser.add_argument("--recheck", nargs="+", default=[],
                        help="result files timing some pairs again (a later one wins)")
    parser.add_argument("--drop-from", nargs="+", action="append", default=[],
                        metavar=("FILE", "PAIR"))
    args = parser.parse_args(argv)
    drop = {f: {tuple(p.split("+", 1)) for p in pairs} for f, *pairs in args.drop_from}
    result = merge(args.files, args.note, drop, args.recheck)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    s = result["summary"]
    print(f"{s['pairs_timed']} pairs, {s['over_target']} over {TARGET}x, median "
          f"{s['median_ratio']}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
