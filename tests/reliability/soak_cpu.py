"""Soak test: many batches through a DALI CPU pipeline with an augjax chain.

The pipeline is a training-style one: a shuffling file reader over augjax's bundled sample
images, the DALI decoder, a resize, then ONE augjax chain (random resized crop, flip, colour
jitter, random erasing, mixup on the reader's labels, normalize to float CHW) fused into one
``jax_function``. After a warm-up it runs ``--batches`` batches and records:

- resident memory (``/proc/self/statm``, or psutil when installed) every ``--every`` batches,
  and its least-squares slope in KB per 1000 batches;
- augjax traces (``augjax.trace_count()``): recompilations after the warm-up;
- the compile caches: ``augjax._runtime.execution.program.array_program``, ``seeded_program``,
  ``augjax.dali._bridge.dali_function`` (``cache_info()``), the jitted program's own JAX cache
  (``_cache_size()``), the number of live JAX arrays and of Python objects;
- every batch's images finite and soft labels summing to 1; ms per batch.

Usage: ``python tests/reliability/soak_cpu.py [--batches 10000] [--batch-size 16] [--json PATH]``.
The results JSON (date, machine, versions, config, results) goes to
``benchmarks/results/soak-cpu-<date>.json`` by default.
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

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def rss_kb() -> float:
    """Resident set size of this process in KB."""
    try:
        import psutil

        return psutil.Process().memory_info().rss / 1024
    except ImportError:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1024


def slope_per_1000(xs: list[int], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs``, per 1000 units of ``x``."""
    x = np.asarray(xs, float)
    y = np.asarray(ys, float)
    if len(x) < 2:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0] * 1000)


def versions() -> dict[str, str]:
    import jax
    import jaxlib
    import nvidia.dali

    import augjax

    return {"augjax": augjax.__version__, "dali": nvidia.dali.__version__, "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "numpy": np.__version__,
            "python": platform.python_version()}


def machine() -> dict[str, object]:
    return {"node": platform.node(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0]}


def build_chain(size: int, num_classes: int):
    import augjax

    ops = augjax.ops
    return augjax.compose(
        ops.random_resized_crop.bind(size=size),
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.random_erasing.bind(p=0.25),
        ops.mixup.bind(alpha=0.4, num_classes=num_classes, mode="elem"),
        ops.normalize.bind(chw=True),
    )


def build_pipeline(chain, files, batch_size: int, size: int, seed: int, device: str = "cpu"):
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None if device == "cpu" else 0,
                  seed=seed, prefetch_queue_depth=2)
    def pipe():
        jpegs, labels = fn.readers.file(files=files, labels=list(range(len(files))),
                                        random_shuffle=True, name="reader")
        images = fn.decoders.image(jpegs, device="cpu" if device == "cpu" else "mixed")
        images = fn.resize(images, size=[size + size // 4, size + size // 4])
        if device == "gpu":
            labels = labels.gpu()
        return chain(images, labels)

    p = pipe()
    p.build()
    return p


def dali_program(chain, device: str):
    """The jitted function the chain's DALI operator calls (the cached ``dali_function``; with
    mixing ops it is the label-checked wrapper's ``jitted``)."""
    from augjax.dali._bridge import dali_function

    op = dali_function(tuple(chain.steps), "HWC", True, True, device, 0, None)  # as apply_dali
    callback = getattr(op, "__wrapped__", op)
    return getattr(callback, "jitted", callback)


def jax_caches() -> dict[str, dict[str, int]]:
    """JAX's own process-wide caches (private API, read if present): traced jaxprs, lowerings,
    compiled executables. Their misses count compilations."""
    out = {}
    try:
        from jax._src import pjit
        from jax._src.interpreters import pxla
    except ImportError:
        return out
    for name, fn in (("infer_params", getattr(pjit, "_infer_params_cached", None)),
                     ("lowering_to_hlo", getattr(pxla, "_cached_lowering_to_hlo", None)),
                     ("compilation", getattr(pxla, "_cached_compilation", None))):
        try:
            info = fn.cache_info()
            out[name] = {"hits": info.hits, "misses": info.misses, "currsize": info.currsize}
        except (AttributeError, TypeError):
            continue
    return out


def cache_state(program) -> dict[str, object]:
    """Sizes of augjax's compile caches and JAX's cache of the chain's jitted program."""
    import jax

    from augjax._runtime.execution.program import array_program, seeded_program
    from augjax.dali._bridge import dali_function

    state = {name: fn.cache_info()._asdict() for name, fn in (
        ("array_program", array_program), ("seeded_program", seeded_program),
        ("dali_function", dali_function))}
    size = getattr(program, "_cache_size", None)
    state["program_jax_cache_size"] = size() if callable(size) else None
    state["jax_caches"] = jax_caches()
    state["live_jax_arrays"] = len(jax.live_arrays())
    gc.collect()
    state["python_objects"] = len(gc.get_objects())
    return state


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=10_000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--size", type=int, default=32, help="output side in pixels")
    ap.add_argument("--every", type=int, default=250, help="memory sample period (batches)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", default=None, help="results path (default: results/soak-cpu-DATE)")
    args = ap.parse_args(argv)

    import augjax
    files = sorted(str(p) for p in (Path(augjax.__file__).parent / "data" / "images").glob("*.jpg"))
    chain = build_chain(args.size, len(files))
    p = build_pipeline(chain, files, args.batch_size, args.size, args.seed)
    program = dali_program(chain, "cpu")

    def one_batch() -> tuple[bool, bool]:
        images, soft = p.run()
        x = np.asarray(images.as_tensor())
        y = np.asarray(soft.as_tensor())
        return bool(np.isfinite(x).all()), bool(np.allclose(y.sum(-1), 1.0, atol=1e-5))

    t0 = time.perf_counter()
    for _ in range(args.warmup):
        one_batch()
    warm_s = time.perf_counter() - t0
    gc.collect()
    traces0 = augjax.trace_count()
    caches0 = cache_state(program)
    xs, ys, times = [0], [rss_kb()], []
    bad_images = bad_labels = 0
    start = time.perf_counter()
    for b in range(1, args.batches + 1):
        t = time.perf_counter()
        ok_img, ok_lab = one_batch()
        times.append(time.perf_counter() - t)
        bad_images += not ok_img
        bad_labels += not ok_lab
        if b % args.every == 0:
            xs.append(b)
            ys.append(rss_kb())
            print(f"batch {b:6d}  rss {ys[-1] / 1024:8.1f} MB  "
                  f"{1000 * statistics.median(times[-args.every:]):.2f} ms/batch", flush=True)
    total_s = time.perf_counter() - start
    traces1 = augjax.trace_count()
    caches1 = cache_state(program)
    half = len(ys) // 2
    result = {
        "benchmark": "soak-cpu",
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(),
        "config": {**vars(args), "files": len(files), "chain": repr(chain),
                   "pipeline": "readers.file(shuffle) -> decoders.image(cpu) -> resize -> chain"},
        "results": {
            "batches": args.batches,
            "warmup_batches": args.warmup,
            "warmup_s": warm_s,
            "total_s": total_s,
            "ms_per_batch_median": 1000 * statistics.median(times),
            "ms_per_batch_p99": 1000 * float(np.percentile(times, 99)),
            "rss_kb_first": ys[0],
            "rss_kb_last": ys[-1],
            "rss_kb_max": max(ys),
            "rss_slope_kb_per_1000_batches": slope_per_1000(xs, ys),
            "rss_slope_second_half_kb_per_1000_batches": slope_per_1000(xs[half:], ys[half:]),
            "traces_at_warmup_end": traces0,
            "recompilations_after_warmup": traces1 - traces0,
            "xla_compilations_after_warmup": (
                caches1["jax_caches"]["compilation"]["misses"]
                - caches0["jax_caches"]["compilation"]["misses"]
                if "compilation" in caches0["jax_caches"] else None),
            "caches_at_warmup_end": caches0,
            "caches_at_end": caches1,
            "batches_with_non_finite_images": bad_images,
            "batches_with_bad_label_sums": bad_labels,
        },
        "rss_samples": [[x, y] for x, y in zip(xs, ys)],
    }
    path = Path(args.json) if args.json else RESULTS / f"soak-cpu-{datetime.date.today()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    r = result["results"]
    print(f"\n{r['batches']} batches in {r['total_s']:.1f} s "
          f"({r['ms_per_batch_median']:.2f} ms/batch median)")
    print(f"RSS {r['rss_kb_first'] / 1024:.1f} -> {r['rss_kb_last'] / 1024:.1f} MB, slope "
          f"{r['rss_slope_kb_per_1000_batches']:.1f} KB/1000 batches "
          f"(second half {r['rss_slope_second_half_kb_per_1000_batches']:.1f})")
    xla0 = caches0["jax_caches"].get("compilation", {}).get("misses")
    xla1 = caches1["jax_caches"].get("compilation", {}).get("misses")
    print(f"augjax traces after warm-up: {r['recompilations_after_warmup']}; XLA compilations "
          f"after warm-up: {None if xla0 is None else xla1 - xla0}; augjax caches "
          + ", ".join(f"{k} {caches0[k]['currsize']}->{caches1[k]['currsize']}"
                      for k in ("array_program", "seeded_program", "dali_function"))
          + f"; live JAX arrays {caches0['live_jax_arrays']} -> {caches1['live_jax_arrays']}")
    print(f"non-finite batches {bad_images}, bad label sums {bad_labels}; wrote {path}")
    ok = (r["recompilations_after_warmup"] == 0 and not r["xla_compilations_after_warmup"]
          and bad_images == 0 and bad_labels == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
