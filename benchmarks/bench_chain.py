"""A 4-op chain as ONE ``jax_function`` crossing versus the same ops as four crossings, through
a DALI CPU pipeline (ms per batch, ratio, same run).

The chain: ``flip(p=0.5)`` + ``color_jitter(brightness=0.4, contrast=0.4, saturation=0.4)`` +
``rotate(degrees=(-15, 15), bilinear)`` + ``normalize(chw=True)`` (uint8 HWC in, float32 CHW
out); the ``pointwise`` chain replaces the rotation by ``solarize(threshold=(128, 255))``.
Variants, each its own DALI pipeline fed one constant uint8 batch:

- ``fused``: ``augjax.compose(...)(images)``: one operator, inputs = images + one seed input;
- ``separate``: ``op(images)`` four times: four operators, three seed inputs (normalize has no
  randomness), three intermediate batches handed back to DALI;
- ``dali_native`` (context, rotate chain only): ``fn.flip`` + ``fn.color_twist`` + ``fn.rotate`` +
  ``fn.crop_mirror_normalize`` (the nearest native equivalent, not the same arithmetic);
- ``empty`` (context): the pipeline with no op (``external_source`` only);
- ``pure_jax`` (context): the fused program, and the four ops as four programs, called on a
  device array (no DALI).

Rounds alternate the variants, the pure-JAX ones included (so load changes hit them alike);
each round times ``iters`` calls after warm-up; the report gives medians and minimums over
rounds and the per-round fused/separate ratio. On a shared machine the minimum is the steadier
estimate of the intrinsic cost.

Usage: ``python benchmarks/bench_chain.py [--configs 32x224:rotate 32x64:pointwise ...]
[--iters 5] [--rounds 25] [--json benchmarks/results/bench_chain.json]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time

import numpy as np


def chain_ops(kind: str = "rotate"):
    """The 4-op chain: ``rotate`` (flip, colour jitter, bilinear rotation, normalize) or
    ``pointwise`` (the rotation replaced by a random solarize: no resampling)."""
    import augjax

    ops = augjax.ops
    third = (ops.rotate.bind(degrees=(-15.0, 15.0), interpolation="bilinear")
             if kind == "rotate" else ops.solarize.bind(threshold=(128.0, 255.0)))
    return [
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
        third,
        ops.normalize.bind(chw=True),
    ]


def build(variant: str, batch: np.ndarray, threads: int, kind: str):
    from nvidia.dali import fn, pipeline_def, types

    import augjax

    ops = chain_ops(kind)
    chain = augjax.compose(*ops)

    @pipeline_def(batch_size=len(batch), num_threads=threads, device_id=None, seed=1,
                  prefetch_queue_depth=1)
    def pipe():
        images = fn.external_source(source=lambda: batch, batch=True, layout="HWC")
        if variant == "fused":
            return chain(images)
        if variant == "separate":
            for op in ops:
                images = op(images)
            return images
        if variant == "dali_native":
            images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
            images = fn.color_twist(images, brightness=fn.random.uniform(range=[0.6, 1.4]),
                                    contrast=fn.random.uniform(range=[0.6, 1.4]),
                                    saturation=fn.random.uniform(range=[0.6, 1.4]))
            images = fn.rotate(images, angle=fn.random.uniform(range=[-15.0, 15.0]),
                               keep_size=True, interp_type=types.INTERP_LINEAR)
            return fn.crop_mirror_normalize(
                images, dtype=types.FLOAT, output_layout="CHW",
                mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
        return images  # "empty"

    p = pipe()
    p.build()
    return p


def time_pipeline(p, iters: int) -> float:
    start = time.perf_counter()
    for _ in range(iters):
        out = p.run()
    np.asarray(out[0].as_tensor())
    return 1e3 * (time.perf_counter() - start) / iters


def pure_jax(batch: np.ndarray, kind: str):
    """The same work without DALI: callables for the fused program and for the four ops as four
    programs (each at its chain position, so the outputs are bitwise equal)."""
    import jax

    import augjax

    ops = chain_ops(kind)
    chain = augjax.compose(*ops)
    x = jax.device_put(batch)
    keys = jax.random.split(jax.random.key(0), len(batch))

    def separate():
        y = x
        for j, op in enumerate(ops):
            y = augjax.compose(op, start=j)(y, key=keys)
        return y

    def fused():
        return chain(x, key=keys)

    assert np.array_equal(np.asarray(fused()), np.asarray(separate()))
    return {"jax_fused": fused, "jax_separate": separate}


def time_jax(fn, iters: int) -> float:
    fn().block_until_ready()
    start = time.perf_counter()
    for _ in range(iters):
        fn().block_until_ready()
    return 1e3 * (time.perf_counter() - start) / iters


def versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("augjax", "jax", "jaxlib", "nvidia-dali-cpu", "nvidia-dali-cuda120", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def measure(batch_size: int, size: int, iters: int, rounds: int, warmup: int,
            threads: int, kind: str) -> dict:
    """One configuration: every variant, interleaved rounds, medians and paired ratios."""
    import augjax

    rng = np.random.default_rng(0)
    batch = rng.integers(0, 256, (batch_size, size, size, 3), dtype=np.uint8)
    variants = ("fused", "separate", "empty") + (("dali_native",) if kind == "rotate" else ())
    traces = augjax.trace_count()
    compile_s, pipes = {}, {}
    for v in variants:
        start = time.perf_counter()
        pipes[v] = build(v, batch, threads, kind)
        for _ in range(warmup):
            pipes[v].run()
        compile_s[v] = time.perf_counter() - start
    traced = augjax.trace_count() - traces  # 1 (fused) + 4 (separate)
    jax_fns = pure_jax(batch, kind)
    times = {v: [] for v in (*variants, *jax_fns)}
    load = [os.getloadavg()[0]]
    for r in range(rounds):
        order = (*variants, *jax_fns)
        for v in (order if r % 2 == 0 else order[::-1]):
            times[v].append(time_jax(jax_fns[v], iters) if v in jax_fns
                            else time_pipeline(pipes[v], iters))
        load.append(os.getloadavg()[0])
    ratios = [f / s for f, s in zip(times["fused"], times["separate"])]
    med = {v: statistics.median(t) for v, t in times.items()}
    low = {v: min(t) for v, t in times.items()}
    return {
        "config": {"batch": batch_size, "size": [size, size, 3], "dtype": "uint8",
                   "iters_per_round": iters, "rounds": rounds, "dali_threads": threads,
                   "device": "cpu", "chain_kind": kind,
                   "chain": [repr(op) for op in chain_ops(kind)]},
        "load_average_1min": {"min": min(load), "max": max(load)},
        "ms_per_batch_median": med,
        "ms_per_batch_min": low,
        "ms_per_batch_rounds": times,
        "dali_over_jax_ms_median": {"fused": med["fused"] - med["jax_fused"],
                                    "separate": med["separate"] - med["jax_separate"]},
        "fused_over_separate": {"ratio_of_medians": med["fused"] / med["separate"],
                                "ratio_of_minimums": low["fused"] / low["separate"],
                                "median_of_round_ratios": statistics.median(ratios),
                                "per_round": ratios,
                                "pure_jax_ratio_of_medians":
                                    med["jax_fused"] / med["jax_separate"]},
        "saved_ms_per_batch": med["separate"] - med["fused"],
        "crossings": {"fused": 1, "separate": 4},
        "programs_traced": traced,
        "build_and_warmup_s": compile_s,
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+",
                    default=["32x224:rotate", "32x64:rotate", "32x224:pointwise",
                             "32x64:pointwise"],
                    help="BATCHxSIZE[:rotate|pointwise] configurations (square uint8 RGB)")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    runs = []
    for spec in args.configs:
        shape, _, kind = spec.lower().partition(":")
        b, s = (int(v) for v in shape.split("x"))
        runs.append(measure(b, s, args.iters, args.rounds, args.warmup, args.threads,
                            kind or "rotate"))
    result = {
        "benchmark": "bench_chain",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(), "shared": "other jobs ran at the same time"},
        "versions": versions(),
        "runs": runs,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return result


if __name__ == "__main__":
    main()
