"""Cost of ``augjax.ShardedSource``'s forms on CPU: the source alone and source + JPEG decode.

Each form runs in real DALI CPU pipelines over the bundled JPEGs (repeated): ``--shards K``
pipelines of one process, each reading its shard of the global batch and run from one thread,
as DALI's JAX iterator runs one pipeline per GPU. Reported per form: img/s (wall), and the CPU
time per image of the Python thread that runs the pipelines (the part that holds the GIL, which
all pipelines of one process share: it bounds the input side however many GPUs there are),
with each form's ratio to the per-sample form.

    python benchmarks/source_bench.py                        # every form, batch 64
    python benchmarks/source_bench.py --shards 2 --batch 128 --iters 40 --workers 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# name -> (mode, read, parallel)
FORMS = {
    "sample": ("sample", "python", False),
    "batch": ("batch", "python", False),
    "sample+dali-read": ("sample", "dali", False),
    "batch+dali-read": ("batch", "dali", False),
    "sample, parallel": ("sample", "python", True),
    "batch, parallel": ("batch", "python", True),
    "batch+dali-read, parallel": ("batch", "dali", True),
}


def files(repeat: int) -> tuple[list[str], list[int]]:
    import augjax

    bundled = sorted(str(p) for p in (Path(augjax.__file__).parent / "data" / "images")
                     .glob("*.jpg"))
    return bundled * repeat, list(range(len(bundled))) * repeat


def build(form, paths, labels, batch, shard, shards, decode, threads, workers):
    from nvidia.dali import fn, pipeline_def, types

    import augjax

    mode, read, parallel = FORMS[form]
    src = augjax.ShardedSource(paths, labels, batch_size=batch, shard_id=shard,
                               num_shards=shards, seed=0, mode=mode, read=read)

    extra = {"py_num_workers": workers, "py_start_method": "spawn"} if parallel else {}

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=0,
                  prefetch_queue_depth=2, **extra)
    def pipe():
        depth = max(2, workers) if parallel else None
        encoded, label, seeds, index = src.external_source(parallel=parallel,
                                                           prefetch_queue_depth=depth)
        if decode:
            encoded = fn.decoders.image(encoded, device="cpu", output_type=types.RGB)
        return encoded, label, seeds, index

    p = pipe()
    p.build()
    return p


def measure(pipes, iters: int, batch: int) -> tuple[float, float]:
    """img/s and the calling thread's CPU microseconds per image, across epoch ends."""
    def one():
        try:
            return [p.run() for p in pipes]
        except StopIteration:
            for p in pipes:
                p.reset()
            return [p.run() for p in pipes]

    for _ in range(3):  # warm-up: workers started, buffers allocated
        one()
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(iters):
        one()
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    n = iters * batch * len(pipes)
    return n / wall, cpu / n * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64, help="per pipeline")
    ap.add_argument("--shards", type=int, default=1, help="pipelines in this process")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2, help="DALI CPU threads")
    ap.add_argument("--workers", type=int, default=2, help="py_num_workers of parallel forms")
    ap.add_argument("--repeat", type=int, default=64, help="repeat the 8 bundled JPEGs")
    ap.add_argument("--forms", nargs="*", default=list(FORMS), choices=list(FORMS))
    ap.add_argument("--out", default=None, help="write the results as JSON")
    args = ap.parse_args(argv)
    paths, labels = files(args.repeat)
    rows = []
    for decode in (False, True):
        base = None
        for form in args.forms:
            pipes = [build(form, paths, labels, args.batch, s, args.shards, decode,
                           args.threads, args.workers) for s in range(args.shards)]
            rate, us = measure(pipes, args.iters, args.batch)
            del pipes
            base = base or (rate, us)
            rows.append({"form": form, "decode": decode, "img_per_s": rate,
                         "thread_cpu_us_per_img": us, "speedup": rate / base[0],
                         "thread_cpu_ratio": us / base[1]})
            print(f"{'source + decode' if decode else 'source alone':16s} {form:26s} "
                  f"{rate:9.0f} img/s  {rate / base[0]:5.2f}x   thread CPU {us:7.1f} us/img "
                  f"({us / base[1]:5.2f}x)", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
