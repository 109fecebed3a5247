"""What keeping the same bits on every x86-64 CPU costs: augjax's CPU programs compile with
YNNPACK's fusions off (``augjax.kernels.portable``); this times the ops whose programs XLA had
handed to YNNPACK (a dot or a reduction: ``scale_jitter``, ``contrast``, ``color_twist``,
``random_photometric_distort``) and two that it did not, with the option (as shipped) and
without it (YNNPACK's fusions as XLA:CPU picks them), each variant in fresh processes,
alternating, on the same inputs. Prints a table and writes JSON with the machine and versions::

    python benchmarks/portable_bits.py --out benchmarks/results/portable-bits-cpu-<date>.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

from harness import cpu_model  # noqa: E402  (benchmarks/ is the script's folder)

OPS = ("scale_jitter", "contrast", "color_twist", "random_photometric_distort", "rotate",
       "brightness")
CHILD = "AUGJAX_PORTABLE_BENCH_CHILD"


def child(batch: int, size: int, reps: int, ynn: bool) -> dict:
    """Median ms per call of each op (after its first call) in this process."""
    import numpy as np

    if ynn:  # XLA:CPU's own choice: no portable options
        import augjax.kernels.portable as portable
        portable._known = lambda option: False  # noqa: SLF001
    import jax

    import augjax
    from augjax.testing import example_op

    rng = np.random.default_rng(0)
    out = {}
    for name in OPS:
        op = example_op(augjax.get_op(name))
        for dtype in ("uint8", "float32"):
            x = rng.integers(0, 256, (batch, size, size, 3), dtype=np.uint8)
            x = x if dtype == "uint8" else x.astype(np.float32) / np.float32(255)
            key = jax.random.key(0)
            jax.block_until_ready(op(x, key=key))
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                jax.block_until_ready(op(x, key=key))
                times.append(time.perf_counter() - t)
            out[f"{name}/{dtype}"] = 1e3 * float(np.median(times))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2, help="fresh processes per variant")
    ap.add_argument("--out")
    args = ap.parse_args()
    if os.environ.get(CHILD):
        print(json.dumps(child(args.batch, args.size, args.reps, os.environ[CHILD] == "ynn")))
        return
    runs: dict[str, list[dict]] = {"portable": [], "ynn": []}
    env = {**os.environ, "AUGJAX_COMPILATION_CACHE": "0", "AUGJAX_PROGRAM_CACHE": "0"}
    for _ in range(args.rounds):
        for variant in runs:
            res = subprocess.run([sys.executable, __file__, "--batch", str(args.batch),
                                  "--size", str(args.size), "--reps", str(args.reps)],
                                 env={**env, CHILD: variant}, capture_output=True, text=True,
                                 check=True)
            runs[variant].append(json.loads(res.stdout.strip().splitlines()[-1]))
    rows = {}
    print(f"{'op':40s} {'portable ms':>12s} {'ynn ms':>8s} {'ratio':>6s}")
    for case in runs["portable"][0]:
        p = min(r[case] for r in runs["portable"])
        y = min(r[case] for r in runs["ynn"])
        rows[case] = {"portable_ms": p, "ynn_ms": y, "ratio": p / y}
        print(f"{case:40s} {p:12.3f} {y:8.3f} {p / y:6.2f}")
    if args.out:
        import jax

        meta = {"date": time.strftime("%Y-%m-%d"), "machine": platform.processor() or
                platform.machine(), "cpu": cpu_model(), "nproc": os.cpu_count(),
                "jax": jax.__version__, "python": platform.python_version(),
                "batch": args.batch, "size": args.size, "reps": args.reps,
                "rounds": args.rounds, "load": os.getloadavg()[0],
                "statistic": "min over rounds of the median per process"}
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
