"""A batch of 16 after batches of 64, under each partial-batch policy, against a batch of 16 in
a fresh process (docs/RELIABILITY.md, "Partial batches").

    python benchmarks/partial_batches.py                       # CPU, 224 x 224 uint8
    python benchmarks/partial_batches.py --json benchmarks/results/partial-batches-cpu-<date>.json
    python benchmarks/partial_batches.py --device gpu --big 256 --small 64

Each row is a child process (``--child``) with augjax's program store and JAX's compilation
cache off, so every compile is paid where it happens. ``fresh``: the small batch alone, its
first call (trace + compile) and its steady calls. ``after``: ``--rounds`` batches of the big
size first, then small batches: the time of each of the first two calls, how long the second
call's background compile ran on after it (``compile_behind_ms``: ``recurring`` only), and the
median of the calls from the third on. ``ratio`` = that median / the fresh process's steady
median, the faster of two fresh processes run before and after the policies' (the target:
<= 1.2). Policies: ``pad`` (augjax's rule before: every smaller batch runs
padded to the compiled size), ``recurring`` (the default now), ``buckets``, ``off``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = ("rotate", "flip", "crop-flip-jitter-normalize")
POLICIES = ("pad", "recurring", "buckets", "off")


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


def child(case: str, policy: str, big: int, small: int, size: int, rounds: int, calls: int,
          device: str) -> dict[str, object]:
    import jax
    import numpy as np

    import augjax._runtime.padding as padding

    dev = jax.devices(device)[0]
    aug = build(case, size)
    x = jax.device_put(np.random.default_rng(0).integers(0, 256, (big, size, size, 3),
                                                         dtype=np.uint8), dev)
    xs = jax.device_put(np.asarray(x)[:small], dev)
    keys = iter(jax.random.split(jax.random.key(0), 1000))

    def run(batch):
        return lambda: aug(batch, key=next(keys))

    out: dict[str, object] = {"case": case, "policy": policy}
    if policy == "fresh":
        out["first_ms"] = _timed(run(xs))
        steady = [_timed(run(xs)) for _ in range(calls)]
        out["steady_ms"] = statistics.median(steady)
        out["steady_all_ms"] = steady
        return out
    big_times = [_timed(run(x)) for _ in range(rounds)]
    out["big_first_ms"], out["big_steady_ms"] = big_times[0], statistics.median(big_times[1:])
    out["call1_ms"] = _timed(run(xs))
    out["call2_ms"] = _timed(run(xs))
    t0 = time.perf_counter()
    padding.wait_compiles()
    out["compile_behind_ms"] = (time.perf_counter() - t0) * 1e3
    later = [_timed(run(xs)) for _ in range(calls)]
    out["call3_ms"] = later[0]
    out["later_ms"] = statistics.median(later)
    out["later_all_ms"] = later
    return out


def run_child(args: argparse.Namespace, case: str, policy: str) -> dict[str, object]:
    env = dict(os.environ, AUGJAX_PROGRAM_CACHE="0", AUGJAX_COMPILATION_CACHE="0",
               AUGJAX_PARTIAL_BATCHES=policy if policy != "fresh" else "recurring")
    cmd = [sys.executable, __file__, "--child", case, policy, "--big", str(args.big),
           "--small", str(args.small), "--size", str(args.size), "--rounds", str(args.rounds),
           "--calls", str(args.calls), "--device", args.device]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("CASE", "POLICY"), help=argparse.SUPPRESS)
    ap.add_argument("--big", type=int, default=64)
    ap.add_argument("--small", type=int, default=16)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--rounds", type=int, default=3, help="big batches first")
    ap.add_argument("--calls", type=int, default=15, help="timed steady calls")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cases", nargs="+", default=list(CASES))
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.big, args.small, args.size, args.rounds,
                               args.calls, args.device)))
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness

    rows = []
    for case in args.cases:
        # The fresh process runs before and after the policies' (the machine's load drifts);
        # the ratios take the faster of the two, so they err on the high side.
        fresh = [run_child(args, case, "fresh")]
        policy_rows = [run_child(args, case, policy) for policy in args.policies]
        fresh.append(run_child(args, case, "fresh"))
        reference = min(f["steady_ms"] for f in fresh)
        for f in fresh:
            rows.append(f)
            print(f"{case:28s} fresh      first {f['first_ms']:9.1f} ms  steady "
                  f"{f['steady_ms']:8.2f} ms", flush=True)
        for row in policy_rows:
            row["fresh_steady_ms"] = reference
            row["ratio"] = row["later_ms"] / reference
            rows.append(row)
            print(f"{case:28s} {row['policy']:10s} call1 {row['call1_ms']:9.1f}  call2 "
                  f"{row['call2_ms']:9.1f}  behind {row['compile_behind_ms']:8.1f}  call3 "
                  f"{row['call3_ms']:8.2f}  later {row['later_ms']:8.2f} ms  ratio "
                  f"{row['ratio']:.2f}", flush=True)
    gpu = args.device != "cpu"
    meta = {"date": harness.today(), "machine": harness.machine(gpu), "versions":
            harness.versions(gpu), "big": args.big, "small": args.small, "size": args.size,
            "rounds": args.rounds, "calls": args.calls, "device": args.device,
            "note": "each row a fresh process; program store and compilation cache off"}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
