"""GPU soak test (for the H200): many batches through a DALI GPU pipeline with an
augjax chain, watching device memory, host memory and compilations. Self-contained.

Pipeline: a shuffling file reader over augjax's bundled sample images (repeated so an epoch is
``--batch-size`` samples or more), the nvJPEG decoder (``device="mixed"``), a GPU resize, then
ONE augjax chain on the GPU (random resized crop, flip, colour jitter, random erasing, mixup on
the reader's labels, normalize to float CHW), its per-sample seeds drawn by DALI on the GPU.

After a warm-up it runs ``--batches`` batches (outputs stay on the GPU; every ``--every``
batches one output is copied to the host and checked: finite images, soft labels summing to
1) and records every ``--every`` batches:

- device memory: ``jax.devices()[0].memory_stats()`` (``bytes_in_use``, ``peak_bytes_in_use``;
  the JAX allocator only: DALI's own pool is not in it), and its slope in KB per 1000 batches
  after the first readings (:func:`settled_slope_per_1000`);
- host resident memory (``/proc/self/statm``) and its slope, the same way;
- augjax traces (``augjax.trace_count()``) and XLA compilations (JAX's compilation cache
  misses) after the warm-up: both should be 0;
- augjax's compile caches and the number of live JAX arrays; ms per batch.

Usage (on the GPU machine)::

    python tests/reliability/soak_gpu.py                       # 2,000 batches of 256 x 224 x 224
    python tests/reliability/soak_gpu.py --batches 500 --batch-size 64

It prints a short summary and writes ``benchmarks/results/soak-gpu-<date>.json``. Exit status 0
when there was no recompilation, no bad batch, and the device-memory slope after warm-up is
under ``--max-slope-kb`` (default 1024 KB per 1000 batches).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from soak_cpu import jax_caches  # noqa: E402  (JAX's compile caches, shared with the CPU soak)

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def rss_kb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024


def slope_per_1000(xs, ys) -> float:
    """Least-squares slope of ``ys`` over ``xs``, per 1000 units of ``x`` (every reading)."""
    if len(xs) < 2:
        return float("nan")
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0] * 1000)


#: The share of the readings :func:`settled_slope_per_1000` leaves out as warm-up.
SETTLE = 0.2


def settled_slope_per_1000(xs, ys, settle: float = SETTLE) -> float:
    """The growth of ``ys`` per 1000 units of ``x`` once the run has settled: the first
    ``settle`` share of the readings (at least one) is left out, as the warm-up in which the
    allocators, DALI's pools and JAX's caches fill, and the slope of the rest is the median of
    the slopes between every two readings (Theil-Sen: a reading or two off the line moves it
    little, and a steady leak gives its rate exactly).

    On a fresh H200 the device memory grew to 147.0 MB over the first readings and stayed flat
    from batch 200 to 2000, yet the least-squares slope over every reading was 19.5 MB per
    1000 batches. One step late in a run is not told apart from a leak: it counts as growth.
    """
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    start = max(1, int(np.ceil(settle * len(x))))
    x, y = x[start:], y[start:]
    if len(x) < 2:
        return float("nan")
    i, j = np.triu_indices(len(x), 1)
    dx = x[j] - x[i]
    keep = dx != 0
    return float(np.median((y[j] - y[i])[keep] / dx[keep]) * 1000)


def device_memory() -> dict[str, int]:
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return {k: int(stats[k]) for k in ("bytes_in_use", "peak_bytes_in_use", "num_allocs",
                                        "bytes_limit") if k in stats}


def augjax_caches() -> dict[str, object]:
    import jax

    from augjax._runtime.execution.program import array_program, seeded_program
    from augjax.dali._bridge import dali_function

    state = {name: fn.cache_info()._asdict() for name, fn in (
        ("array_program", array_program), ("seeded_program", seeded_program),
        ("dali_function", dali_function))}
    state["live_jax_arrays"] = len(jax.live_arrays())
    state["jax_caches"] = jax_caches()
    return state


def versions() -> dict[str, str]:
    import jax
    import jaxlib
    import nvidia.dali

    import augjax

    devices = [f"{d.platform}:{getattr(d, 'device_kind', '?')}" for d in jax.devices()]
    return {"augjax": augjax.__version__, "dali": nvidia.dali.__version__, "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "devices": ", ".join(devices)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=2_000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--max-slope-kb", type=float, default=1024.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                    help="cpu: a smoke run of this script on a machine without a GPU")
    args = ap.parse_args(argv)
    gpu = args.device == "gpu"

    import jax
    from nvidia.dali import fn, pipeline_def

    import augjax
    from augjax.dali._bridge import dali_function

    if gpu and not any(d.platform == "gpu" for d in jax.devices()):
        print("soak_gpu: JAX sees no GPU", file=sys.stderr)
        return 2
    images_dir = Path(augjax.__file__).parent / "data" / "images"
    base = sorted(str(p) for p in images_dir.glob("*.jpg"))
    files = base * max(1, -(-args.batch_size // len(base)))
    labels = [i % len(base) for i in range(len(files))]
    ops = augjax.ops
    chain = augjax.compose(
        ops.random_resized_crop.bind(size=args.size),
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.random_erasing.bind(p=0.25),
        ops.mixup.bind(alpha=0.4, num_classes=len(base), mode="elem"),
        ops.normalize.bind(chw=True),
    )
    side = args.size + args.size // 4

    @pipeline_def(batch_size=args.batch_size, num_threads=4, device_id=0 if gpu else None,
                  seed=args.seed, prefetch_queue_depth=2)
    def pipe():
        jpegs, lab = fn.readers.file(files=files, labels=labels, random_shuffle=True,
                                     name="reader")
        imgs = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu")
        imgs = fn.resize(imgs, size=[side, side])
        return chain(imgs, lab.gpu() if gpu else lab)

    p = pipe()
    p.build()
    op = dali_function(tuple(chain.steps), "HWC", True, True, args.device, 0, None)
    callback = getattr(op, "__wrapped__", op)
    program = getattr(callback, "jitted", callback)

    def check(outs) -> tuple[bool, bool]:
        x, y = ((o.as_cpu() if gpu else o) for o in outs)
        x, y = np.asarray(x.as_tensor()), np.asarray(y.as_tensor())
        return bool(np.isfinite(x).all()), bool(np.allclose(y.sum(-1), 1.0, atol=1e-5))

    t0 = time.perf_counter()
    for _ in range(args.warmup):
        p.run()
    warm_s = time.perf_counter() - t0
    gc.collect()
    traces0, caches0 = augjax.trace_count(), augjax_caches()
    mem0 = device_memory()
    xs, dev, host, times = [0], [mem0.get("bytes_in_use", 0) / 1024], [rss_kb()], []
    bad_images = bad_labels = 0
    start = time.perf_counter()
    for b in range(1, args.batches + 1):
        t = time.perf_counter()
        outs = p.run()
        if b % args.every == 0:
            ok_img, ok_lab = check(outs)
            bad_images += not ok_img
            bad_labels += not ok_lab
            del outs
            xs.append(b)
            dev.append(device_memory().get("bytes_in_use", 0) / 1024)
            host.append(rss_kb())
            print(f"batch {b:6d}  device {dev[-1] / 1024:9.1f} MB  host {host[-1] / 1024:8.1f} MB"
                  f"  {1000 * statistics.median(times[-args.every + 1:] or [0]):.2f} ms/batch",
                  flush=True)
        else:
            del outs
            times.append(time.perf_counter() - t)
    total_s = time.perf_counter() - start
    traces1, caches1, mem1 = augjax.trace_count(), augjax_caches(), device_memory()
    comp0 = caches0["jax_caches"].get("compilation", {}).get("misses")
    comp1 = caches1["jax_caches"].get("compilation", {}).get("misses")
    size = getattr(program, "_cache_size", None)
    r = {
        "batches": args.batches,
        "warmup_s": warm_s,
        "total_s": total_s,
        "ms_per_batch_median": 1000 * statistics.median(times),
        "ms_per_batch_p99": 1000 * float(np.percentile(times, 99)),
        "device_kb_first": dev[0], "device_kb_last": dev[-1], "device_kb_max": max(dev),
        "device_slope_kb_per_1000_batches": slope_per_1000(xs, dev),
        "device_settled_slope_kb_per_1000_batches": settled_slope_per_1000(xs, dev),
        "device_memory_at_warmup_end": mem0, "device_memory_at_end": mem1,
        "host_rss_kb_first": host[0], "host_rss_kb_last": host[-1],
        "host_rss_slope_kb_per_1000_batches": slope_per_1000(xs, host),
        "host_rss_settled_slope_kb_per_1000_batches": settled_slope_per_1000(xs, host),
        "recompilations_after_warmup": traces1 - traces0,
        "xla_compilations_after_warmup": None if comp0 is None else comp1 - comp0,
        "program_jax_cache_size": size() if callable(size) else None,
        "caches_at_warmup_end": caches0, "caches_at_end": caches1,
        "checked_batches": len(xs) - 1,
        "batches_with_non_finite_images": bad_images,
        "batches_with_bad_label_sums": bad_labels,
    }
    result = {
        "benchmark": "soak-gpu",
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": {"node": platform.node(), "platform": platform.platform(),
                    "cpu_count": os.cpu_count()},
        "versions": versions(),
        "config": {**vars(args), "files": len(files), "chain": repr(chain),
                   "pipeline": "readers.file(shuffle) -> decoders.image(mixed) -> resize(gpu) "
                               "-> chain(gpu)"},
        "results": r,
        "samples": [[x, d, h] for x, d, h in zip(xs, dev, host)],
    }
    default = RESULTS / f"soak-{args.device}-smoke-{datetime.date.today()}.json"
    if gpu:
        default = RESULTS / f"soak-gpu-{datetime.date.today()}.json"
    path = Path(args.json) if args.json else default
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n{versions()['devices']}: {r['batches']} batches of {args.batch_size} in "
          f"{total_s:.1f} s ({r['ms_per_batch_median']:.2f} ms/batch median, "
          f"p99 {r['ms_per_batch_p99']:.2f})")
    print(f"device memory (JAX) {dev[0] / 1024:.1f} -> {dev[-1] / 1024:.1f} MB, slope after "
          f"warm-up {r['device_settled_slope_kb_per_1000_batches']:.1f} KB/1000 batches (every "
          f"reading, least squares: {r['device_slope_kb_per_1000_batches']:.1f}); host RSS "
          f"{host[0] / 1024:.1f} -> {host[-1] / 1024:.1f} MB, slope after warm-up "
          f"{r['host_rss_settled_slope_kb_per_1000_batches']:.1f} KB/1000 batches (least "
          f"squares {r['host_rss_slope_kb_per_1000_batches']:.1f})")
    print(f"augjax traces after warm-up {r['recompilations_after_warmup']}, XLA compilations "
          f"{r['xla_compilations_after_warmup']}; live JAX arrays "
          f"{caches0['live_jax_arrays']} -> {caches1['live_jax_arrays']}; bad batches "
          f"{bad_images} images, {bad_labels} labels of {r['checked_batches']} checked; "
          f"wrote {path}")
    ok = (r["recompilations_after_warmup"] == 0 and not r["xla_compilations_after_warmup"]
          and bad_images == 0 and bad_labels == 0
          and r["device_settled_slope_kb_per_1000_batches"] < args.max_slope_kb)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
