"""A batch of 16 after batches of 64, under each partial-batch policy, against a batch of 16 in
a fresh process (docs/RELIABILITY.md, "Partial batches").

    python benchmarks/partial_batches.py                       # CPU, 224 x 224 uint8
    python benchmarks/partial_batches.py --json benchmarks/results/partial-batches-cpu-<date>.json
    python benchmarks/partial_batches.py --device gpu --budget 420 --json $OUT/partial.json

Each row is a child process (``--child``). ``fresh``: the small batch alone (its first call:
trace + compile). A policy's row: ``--big-calls`` batches of the big size first, then small
batches: the time of each of the first two calls, how long the second call's background
compile ran on after it (``compile_behind_ms``: ``recurring`` only), and the third call. Then
every row times its steady calls of the small batch: at least ``--min-calls``, then on until
``--seconds`` have passed or ``--calls`` were made; wall time and the process's CPU time
(every thread's: XLA's too) per call, median and spread. The inputs are made before the
timing (keys from a pool, arrays sharing one sharding object), so a call times the augjax
call alone.

The steady calls of the same executable vary between processes (placement, clocks, the load
of a shared machine) by more than the target's margin, so the rows are repeated: a round runs
one process of each row, the order reversed every other round, and the ratio is the median of
the rows' medians over the fresh rows' (``ratio``; ``cpu_ratio`` of the CPU time, ``p10_ratio``
of the fastest tenth), with the paired per-round ratios beside it.
``off`` (every size its own program, compiled at its first batch) runs exactly the fresh
process's program after the same history: its ratio is the noise floor of the method, as is
the spread of the fresh rows. The first round runs with JAX's compilation cache and augjax's
program store off (each row pays its compiles: the compile columns); later rounds share a
compilation cache in a temporary folder (the same executables, loaded instead of compiled) to
fit more rounds in ``--budget``: seconds for all cases, shared out evenly; a case stops
starting rounds when the next would not fit (the first round always runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CASES = ("rotate", "flip", "crop-flip-jitter-normalize")
POLICIES = ("recurring", "off")  # also "pad", "buckets"; "fresh" always runs


def build(case: str, size: int):
    import augjax
    from augjax import ops

    if case == "rotate":
        return ops.rotate.bind(degrees=30.0)
    if case == "flip":
        return ops.flip.bind(p=0.5)
    crop = max(8, size * 7 // 8)
    return augjax.compose(ops.random_resized_crop.bind(size=(crop, crop)), ops.flip.bind(p=0.5),
                          ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
                          ops.normalize.bind(chw=True))


def _timed(fn) -> float:
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    return (time.perf_counter() - t0) * 1e3


def _quantiles(xs: list[float]) -> dict[str, float]:
    q = statistics.quantiles(xs, n=10) if len(xs) > 1 else [xs[0]] * 9
    return {"median": statistics.median(xs), "p10": q[0], "p90": q[-1],
            "mean": statistics.fmean(xs), "n": len(xs)}


def child(case: str, policy: str, opts: argparse.Namespace) -> dict[str, object]:
    import jax
    import numpy as np
    from jax.sharding import SingleDeviceSharding

    import augjax._runtime.execution.padding as padding

    # One sharding object for every input: a lookup then never compares two equal shardings
    # in one process and not in the other (a loader's new arrays compare in both).
    place = SingleDeviceSharding(jax.devices(opts.device)[0])
    aug = build(case, opts.size)
    host = np.random.default_rng(0).integers(0, 256, (opts.big, opts.size, opts.size, 3),
                                             dtype=np.uint8)
    x = jax.device_put(host, place)
    xs = jax.device_put(host[:opts.small], place)
    pool = list(jax.random.split(jax.random.key(0), 64))  # made before any timing
    count = iter(range(10**9))

    def run(batch):
        return lambda: aug(batch, key=pool[next(count) % len(pool)])

    out: dict[str, object] = {"case": case, "policy": policy}
    if policy == "fresh":
        out["first_ms"] = _timed(run(xs))
    else:
        big = [_timed(run(x)) for _ in range(opts.big_calls)]
        out["big_first_ms"], out["big_steady_ms"] = big[0], statistics.median(big[1:] or big)
        out["call1_ms"] = _timed(run(xs))
        out["call2_ms"] = _timed(run(xs))
        t0 = time.perf_counter()
        padding.wait_compiles()
        out["compile_behind_ms"] = (time.perf_counter() - t0) * 1e3
        out["call3_ms"] = _timed(run(xs))
    for _ in range(3):  # settle (the fresh row's second call; allocator, clocks)
        _timed(run(xs))
    wall, cpu = [], []
    fn = run(xs)
    end = time.perf_counter() + opts.seconds
    while len(wall) < opts.calls and (len(wall) < opts.min_calls or time.perf_counter() < end):
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(fn())
        t1, c1 = time.perf_counter(), time.process_time()
        wall.append((t1 - t0) * 1e3)
        cpu.append((c1 - c0) * 1e3)
    out["steady_ms"] = _quantiles(wall)
    out["steady_cpu_ms"] = _quantiles(cpu)
    return out


def run_child(opts: argparse.Namespace, case: str, policy: str, cache: str | None,
              timeout: float) -> dict[str, object]:
    env = dict(os.environ, AUGJAX_PROGRAM_CACHE="0",
               AUGJAX_PARTIAL_BATCHES=policy if policy != "fresh" else "recurring")
    if cache is None:
        env["AUGJAX_COMPILATION_CACHE"] = "0"
    else:
        env.update(AUGJAX_COMPILATION_CACHE="1", AUGJAX_CACHE_DIR=cache)
    cmd = [sys.executable, __file__, "--child", case, policy]
    for name in ("big", "small", "size", "big_calls", "calls", "min_calls", "seconds", "device"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(opts, name))]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"case": case, "policy": policy, "error": f"timed out after {timeout:.0f} s"}
    if done.returncode:
        return {"case": case, "policy": policy, "error": done.stderr.strip()[-2000:]}
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["process_s"] = time.perf_counter() - t0
    row["cache"] = "cold" if cache is None else "warm"
    return row


def summarize(case: str, rows: list[dict[str, object]], policies: list[str]) -> dict:
    """The ratios of a case: medians of the rows' steady medians, and paired per round."""
    good = [r for r in rows if "error" not in r]

    def med(policy: str, what: str = "steady_ms", stat: str = "median") -> float | None:
        xs = [r[what][stat] for r in good if r["policy"] == policy]
        return statistics.median(xs) if xs else None

    def per_round(policy: str, what: str) -> list[float]:
        out = []
        for rnd in sorted({r["round"] for r in good}):
            pair = {r["policy"]: r[what]["median"] for r in good if r["round"] == rnd}
            if policy in pair and "fresh" in pair:
                out.append(pair[policy] / pair["fresh"])
        return out

    fresh = [r["steady_ms"]["median"] for r in good if r["policy"] == "fresh"]
    out = {"case": case, "fresh_ms": med("fresh"), "fresh_cpu_ms": med("fresh", "steady_cpu_ms"),
           "fresh_spread": max(fresh) / min(fresh) if fresh else None,
           "rounds": len({r["round"] for r in good})}
    for policy in policies:
        wall, cpu = med(policy), med(policy, "steady_cpu_ms")
        fast, fresh_fast = med(policy, stat="p10"), med("fresh", stat="p10")
        out[policy] = {
            "ms": wall, "cpu_ms": cpu,
            "ratio": wall / out["fresh_ms"] if wall and out["fresh_ms"] else None,
            "cpu_ratio": cpu / out["fresh_cpu_ms"] if cpu and out["fresh_cpu_ms"] else None,
            "p10_ratio": fast / fresh_fast if fast and fresh_fast else None,
            "paired_ratios": per_round(policy, "steady_ms"),
            "paired_cpu_ratios": per_round(policy, "steady_cpu_ms")}
    return out


def _print_row(row: dict[str, object]) -> None:
    if "error" in row:
        print(f"{row['case']:28s} {row['policy']:10s} ERROR {row['error'][-300:]}", flush=True)
        return
    s, c = row["steady_ms"], row["steady_cpu_ms"]
    head = (f"first {row['first_ms']:8.1f}" if row["policy"] == "fresh" else
            f"call1 {row['call1_ms']:8.1f} call2 {row['call2_ms']:8.1f} behind "
            f"{row['compile_behind_ms']:7.1f} call3 {row['call3_ms']:7.2f}")
    print(f"{row['case']:28s} r{row['round']} {row['policy']:10s} {head}  steady "
          f"{s['median']:8.3f} ms [{s['p10']:.3f}, {s['p90']:.3f}] n={s['n']} cpu "
          f"{c['median']:8.3f} ({row['cache']}, {row['process_s']:.0f} s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("CASE", "POLICY"), help=argparse.SUPPRESS)
    ap.add_argument("--big", type=int, default=64)
    ap.add_argument("--small", type=int, default=16)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--big-calls", type=int, default=3, help="big batches first")
    ap.add_argument("--calls", type=int, default=3000, help="most timed steady calls a row")
    ap.add_argument("--min-calls", type=int, default=30, help="fewest timed steady calls a row")
    ap.add_argument("--seconds", type=float, default=2.0, help="timed steady calls a row, s")
    ap.add_argument("--repeats", type=int, default=3, help="most rounds a case")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for all cases (later rounds start only where they fit)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--policies", nargs="+", default=list(POLICIES),
                    choices=("pad", "recurring", "buckets", "off"))
    ap.add_argument("--json", help="write the results here")
    opts = ap.parse_args()
    if opts.child:
        print(json.dumps(child(*opts.child, opts)))
        return
    started = time.perf_counter()
    load_before = os.getloadavg()
    rows, summaries = [], []
    kinds = ["fresh", *opts.policies]
    with tempfile.TemporaryDirectory(prefix="augjax-partial-") as tmp:
        for i, case in enumerate(opts.cases):
            case_start = time.perf_counter()
            share = None
            if opts.budget is not None:
                share = (opts.budget - (case_start - started)) / (len(opts.cases) - i)
            cache = os.path.join(tmp, f"cache-{i}")
            longest = 0.0
            case_rows = []
            for rnd in range(opts.repeats):
                elapsed = time.perf_counter() - case_start
                if rnd and share is not None and elapsed + longest > share:
                    break
                r0 = time.perf_counter()
                order = kinds if rnd % 2 == 0 else kinds[::-1]
                for policy in order:
                    limit = max(60.0, share or 600.0)
                    row = run_child(opts, case, policy, cache if rnd else None, limit)
                    row["round"] = rnd
                    case_rows.append(row)
                    _print_row(row)
                longest = max(longest, time.perf_counter() - r0)
            rows += case_rows
            summary = summarize(case, case_rows, opts.policies)
            summaries.append(summary)
            for policy in opts.policies:
                p = summary[policy]
                if p["ratio"] is None:
                    continue
                paired = ", ".join(f"{x:.2f}" for x in p["paired_ratios"])
                print(f"{case:28s} {policy:10s} ratio {p['ratio']:.2f} (cpu {p['cpu_ratio']:.2f}; "
                      f"p10 {p['p10_ratio']:.2f}; paired {paired}); fresh "
                      f"{summary['fresh_ms']:.3f} ms, fresh spread {summary['fresh_spread']:.2f}",
                      flush=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness

    gpu = opts.device != "cpu"
    meta = {"date": harness.today(), "machine": harness.machine(gpu), "versions":
            harness.versions(gpu), "load_average_before": load_before,
            "load_average_after": os.getloadavg(), "run_s": time.perf_counter() - started,
            "command": " ".join(["python", *sys.argv]),
            **{k: getattr(opts, k) for k in ("big", "small", "size", "big_calls", "calls",
                                              "min_calls", "seconds", "repeats", "budget",
                                              "device", "policies")},
            "note": "each row a fresh process; program store off; round 0 with the compilation "
                    "cache off (compile columns), later rounds share a compilation cache; ratio "
                    "= median of a row's steady medians / the fresh rows'; off = the noise "
                    "floor (it runs the fresh process's program)"}
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"meta": meta, "summary": summaries, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
