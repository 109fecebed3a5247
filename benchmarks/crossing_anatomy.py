"""Where a ``jax_function`` crossing's time goes (GPU or CPU).

    python benchmarks/crossing_anatomy.py --device gpu --batch 256 --out anatomy.json

Times, per batch, the Python side of DALI's JAX callback by wrapping the pieces DALI's plugin
calls (``jax.dlpack.from_dlpack`` for each input, the function itself, the ``__dlpack__`` export
of each output), next to the pipeline's throughput, for: an empty pipeline, a jitted identity,
augjax's flip (images + one seed input), flip with seeds drawn on the CPU and copied, and an
augjax chain. What the callback does not account for is DALI's own side (operator scheduling,
stream waits, output bookkeeping).
"""

from __future__ import annotations

import argparse
import collections
import json
import time

from pipeline_bench import _batches, _pipeline, _sync, time_pipeline  # noqa: E402

TIMES: dict[str, list[float]] = collections.defaultdict(list)


def _instrument() -> None:
    import jax.dlpack
    from nvidia.dali.plugin.jax.fn import _function_transform as ft

    orig_from = jax.dlpack.from_dlpack
    orig_gpu, orig_cpu = ft.gpu_to_dlpack, ft.cpu_to_dlpack

    def from_dlpack(*a, **k):
        t = time.perf_counter()
        try:
            return orig_from(*a, **k)
        finally:
            TIMES["from_dlpack"].append(time.perf_counter() - t)

    def timed(orig, name):
        def inner(*a, **k):
            t = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                TIMES[name].append(time.perf_counter() - t)
        return inner

    jax.dlpack.from_dlpack = from_dlpack
    ft.gpu_to_dlpack = timed(orig_gpu, "to_dlpack")
    ft.cpu_to_dlpack = timed(orig_cpu, "to_dlpack")


def _timed_function(fn):
    def inner(*arrays):
        t = time.perf_counter()
        try:
            return fn(*arrays)
        finally:
            TIMES["function"].append(time.perf_counter() - t)
    return inner


def rows(device: str):
    import jax
    from nvidia.dali import fn, types
    from nvidia.dali.plugin.jax import fn as jax_fn

    import augjax
    from augjax._runtime.keys import SEED_HIGH
    from augjax._runtime.program import seeded_program

    flip = augjax.ops.flip.bind(p=0.5)
    identity = jax_fn.jax_function(_timed_function(jax.jit(lambda x: x)), output_layouts="HWC")
    program = seeded_program((flip,), "HWC", False, True)
    flip_fn = jax_fn.jax_function(_timed_function(program), output_layouts="HWC", device=device)
    chain = augjax.compose(flip, augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4,
                                                              saturation=0.4, hue=0.1))
    chain_fn = jax_fn.jax_function(
        _timed_function(seeded_program(tuple(chain.steps), "HWC", False, True)),
        output_layouts="HWC", device=device)

    def seeds(dev):
        return fn.random.uniform(range=[0, SEED_HIGH], shape=[2], dtype=types.INT32, device=dev)

    def cpu_seeds():
        s = seeds("cpu")
        return s.gpu() if device == "gpu" else s

    return {
        "empty pipeline": lambda x: x,
        "jax_function identity": lambda x: identity(x),
        "augjax flip (seeds on data device)": lambda x: flip_fn(x, seeds(device)),
        "augjax flip (seeds on CPU, copied)": lambda x: flip_fn(x, cpu_seeds()),
        "augjax flip + color_jitter": lambda x: chain_fn(x, seeds(device)),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    _instrument()
    batches, _ = _batches(args.device, args.batch, args.size)
    result = {}
    for name, build in rows(args.device).items():
        p = _pipeline(args.device, args.batch, batches, build)
        time_pipeline(args.device, p, 5, 1)  # warm-up, compile
        TIMES.clear()
        ms = time_pipeline(args.device, p, args.iters, 1, warmup=0)
        calls = max(len(TIMES["function"]), 1)
        parts = {k: 1e3 * sum(v) / calls for k, v in TIMES.items()}
        result[name] = {"ms_per_batch": ms, "callback_ms_per_batch": parts}
        del p
        _sync(args.device)
    base = result["empty pipeline"]["ms_per_batch"]
    print(f"\n{args.device} B={args.batch}: ms per batch; callback parts per call")
    for name, r in result.items():
        parts = ", ".join(f"{k} {v:.3f}" for k, v in r["callback_ms_per_batch"].items())
        print(f"  {name:<40} {r['ms_per_batch']:7.3f} (+{r['ms_per_batch'] - base:6.3f})  {parts}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": args.device, "batch": args.batch, "rows": result}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
