"""What a chain costs inside the caller's jitted step: augjax's own call, the same chain traced
inside the caller's ``jax.jit`` (the boundaries between its steps kept as conditionals,
``augjax.kernels.embedded``), and inside ``augjax.jit`` (the step compiled with augjax's
options). Same inputs and keys, the three forms timed in alternating rounds in one process;
their outputs are checked bitwise equal first. Prints a table and writes JSON::

    python benchmarks/inside_jit.py --out benchmarks/results/inside-jit-cpu-<date>.json
    python benchmarks/inside_jit.py --batch 256 --out benchmarks/results/inside-jit-gpu-h200-<date>.json

On a GPU the chains run on the default device (no DALI needed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import machine, median, time_call, today, versions  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def chains() -> dict:
    import augjax

    ops = augjax.ops
    return {
        "imagenet": augjax.compose(
            ops.random_resized_crop.bind(size=224), ops.flip.bind(p=0.5),
            ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
            ops.normalize.bind(mean=MEAN, std=STD)),
        "randaugment": augjax.compose(
            ops.random_resized_crop.bind(size=224), ops.flip.bind(p=0.5),
            augjax.rand_augment(n=2, m=9), ops.normalize.bind(mean=MEAN, std=STD)),
    }


def measure(name: str, chain, x, key, iters: int, reps: int) -> dict:
    import jax

    import augjax

    forms = {"own": lambda: chain(x, key=key),
             "jax.jit": (lambda f: lambda: f(x, key))(jax.jit(lambda a, k: chain(a, key=k))),
             "augjax.jit": (lambda f: lambda: f(x, key))(
                 augjax.jit(lambda a, k: chain(a, key=k)))}
    outs = {form: np.asarray(fn()) for form, fn in forms.items()}
    equal = {form: bool(np.array_equal(outs[form], outs["own"])) for form in forms}
    times: dict[str, list[float]] = {form: [] for form in forms}
    for _ in range(reps):  # alternating rounds: load changes hit every form alike
        for form, fn in forms.items():
            times[form] += time_call(fn, iters, 1, warmup=1)
    ms = {form: median(t) for form, t in times.items()}
    row = {"chain": name, "ms": ms, "bitwise_equal_to_own": equal,
           "ratio_to_own": {form: ms[form] / ms["own"] for form in forms}}
    print(f"{name:12s} own {ms['own']:8.2f} ms | jax.jit {ms['jax.jit']:8.2f} ms "
          f"({row['ratio_to_own']['jax.jit']:.2f}x) | augjax.jit {ms['augjax.jit']:8.2f} ms "
          f"({row['ratio_to_own']['augjax.jit']:.2f}x) | bitwise {all(equal.values())}",
          flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--chains", default="imagenet,randaugment")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    import jax

    gpu = jax.default_backend() == "gpu"
    x = jax.device_put(np.random.default_rng(0).integers(
        0, 256, (args.batch, args.size, args.size, 3), dtype=np.uint8))
    key = jax.random.key(0)
    every = chains()
    rows = [measure(name, every[name], x, key, args.iters, args.reps)
            for name in args.chains.split(",")]
    result = {"date": today(), "benchmark": "inside_jit", "machine": machine(gpu),
              "versions": versions(gpu), "batch": args.batch, "size": args.size,
              "dtype": "uint8", "iters": args.iters, "reps": args.reps, "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
