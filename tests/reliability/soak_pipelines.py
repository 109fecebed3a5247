"""Builds and destroys many DALI pipelines in one process (files -> decode -> random resized crop
-> an augjax chain), cycling through chains, batch sizes and both executors: device and host
memory must stay flat and no pipeline may fail. (Once, in a long benchmark process on the H200,
``random_resized_crop`` at B=256 failed with "Critical error in pipeline" after ~30 pipelines.)

    python tests/reliability/soak_pipelines.py --pipelines 100                  # GPU
    python tests/reliability/soak_pipelines.py --device cpu --pipelines 8 --batch 4 8 --size 32

Each pipeline runs ``--batches`` batches; every output is checked (finite images, soft labels
summing to 1). After each pipeline is deleted it records JAX's device memory in use
(``memory_stats()["bytes_in_use"]``), DALI's device memory in use where DALI reports it, and the
host's resident memory. Writes ``benchmarks/results/soak-pipelines-<device>-<date>.json``; exit
status 0 when no pipeline failed and the memory slopes after the first ``--settle`` pipelines are
under ``--max-slope-mb`` per 100 pipelines.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parents[1] / "benchmarks" / "results"
sys.path.insert(0, str(HERE))
from soak_gpu import device_memory, rss_kb, slope_per_1000  # noqa: E402

CLASSES = 1000


def dali_device_mb() -> float | None:
    """DALI's own device memory in use (its pool is not JAX's), where this DALI reports it."""
    try:
        from nvidia.dali import backend

        stats = backend.GetDeviceMemoryStats(0) if hasattr(backend, "GetDeviceMemoryStats") \
            else None
    except Exception:  # noqa: BLE001 - not every build has the call
        return None
    if isinstance(stats, dict) and "allocated" in stats:
        return stats["allocated"] / 2**20
    return None


def chains():
    """The chains cycled through: the e2e benchmark's two (with and without RandAugment), flip
    alone, flip + normalize."""
    import augjax

    ops = augjax.ops
    out = {
        "chain": augjax.compose(
            ops.flip.bind(p=0.5),
            ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
            ops.normalize.bind(chw=True), ops.random_erasing.bind(p=0.25),
            ops.mixup_cutmix.bind(num_classes=CLASSES)),
        "randaug": augjax.compose(
            ops.flip.bind(p=0.5), augjax.policies.rand_augment(n=2, m=9),
            ops.normalize.bind(chw=True), ops.random_erasing.bind(p=0.25),
            ops.mixup_cutmix.bind(num_classes=CLASSES)),
    }
    out["flip"] = augjax.compose(ops.flip.bind(p=0.5))
    out["flip + normalize"] = augjax.compose(ops.flip.bind(p=0.5), ops.normalize.bind(chw=True))
    return out


def build(chain, labels_in: bool, b: int, files, labels, executor: str, gpu: bool, size: int,
          seed: int):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=b, num_threads=4, device_id=0 if gpu else None, seed=seed,
                  exec_dynamic=executor == "dynamic")
    def pipe():
        jpegs, lab = fn.readers.file(files=files, labels=labels, random_shuffle=True)
        images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB)
        images = fn.random_resized_crop(images, size=(size, size))
        lab = lab.gpu() if gpu else lab
        if labels_in:
            return chain(images, lab)
        return chain(images), lab

    p = pipe()
    p.build()
    return p


def check(outs, gpu: bool, mixes: bool) -> bool:
    x, y = ((o.as_cpu() if gpu else o) for o in outs)
    x, y = np.asarray(x.as_tensor()), np.asarray(y.as_tensor())
    ok = bool(np.isfinite(x).all())
    if mixes:
        ok = ok and bool(np.allclose(y.sum(-1), 1.0, atol=1e-4))
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--pipelines", type=int, default=100)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--batch", type=int, nargs="+", default=[32, 64, 128, 256])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--settle", type=int, default=20)
    ap.add_argument("--max-slope-mb", type=float, default=16.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    gpu = args.device == "gpu"

    import jax
    import nvidia.dali

    import augjax

    distinct = sorted(str(p) for p in
                      (Path(augjax.__file__).parent / "data" / "images").glob("*.jpg"))
    files = distinct * max(1, -(-2 * max(args.batch) // len(distinct)))
    labels = [i % CLASSES for i in range(len(files))]
    table = chains()
    names = list(table)
    records, failures = [], []
    t0 = time.perf_counter()
    for i in range(args.pipelines):
        name = names[i % len(names)]
        b = args.batch[(i // len(names)) % len(args.batch)]
        executor = ("dynamic", "legacy")[(i // (len(names) * len(args.batch))) % 2]
        chain = table[name]
        mixes = "labels" in chain.inputs
        t = time.perf_counter()
        rec = {"i": i, "chain": name, "batch": b, "executor": executor}
        try:
            p = build(chain, mixes, b, files, labels, executor, gpu, args.size, seed=1000 + i)
            ok = all(check(p.run(), gpu, mixes) for _ in range(args.batches))
            rec["outputs_ok"] = ok
            if not ok:
                failures.append({**rec, "error": "non-finite images or bad label sums"})
            del p
        except Exception as err:  # noqa: BLE001 - recorded, the soak goes on
            rec["error"] = f"{type(err).__name__}: {str(err)[:300]}"
            failures.append(rec)
        gc.collect()
        rec["seconds"] = time.perf_counter() - t
        rec["jax_device_mb"] = device_memory().get("bytes_in_use", 0) / 2**20
        rec["dali_device_mb"] = dali_device_mb()
        rec["host_rss_mb"] = rss_kb() / 1024
        records.append(rec)
        print(f"{i:4d} {name:<10} B={b:<5} {executor:<8} {rec['seconds']:6.2f} s  JAX "
              f"{rec['jax_device_mb']:8.1f} MB  host {rec['host_rss_mb']:8.1f} MB"
              f"{'  ' + rec['error'] if 'error' in rec else ''}", flush=True)
    late = [r for r in records if r["i"] >= args.settle]
    xs = [r["i"] for r in late]
    # slope_per_1000 gives per 1000 x-units: pipelines here, so / 10 for per 100 pipelines
    dev_slope = slope_per_1000(xs, [r["jax_device_mb"] for r in late]) / 10
    host_slope = slope_per_1000(xs, [r["host_rss_mb"] for r in late]) / 10
    result = {
        "benchmark": "soak-pipelines",
        "date": datetime.date.today().isoformat(),
        "versions": {"augjax": augjax.__version__, "dali": nvidia.dali.__version__,
                     "jax": jax.__version__, "python": platform.python_version(),
                     "devices": str(jax.devices())},
        "config": {k: v for k, v in vars(args).items()},
        "total_s": time.perf_counter() - t0,
        "failures": failures,
        "jax_device_mb_slope_per_100_pipelines": dev_slope,
        "host_rss_mb_slope_per_100_pipelines": host_slope,
        "records": records,
    }
    out = Path(args.out) if args.out else (
        RESULTS / f"soak-pipelines-{args.device}-{result['date']}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{len(records)} pipelines, {len(failures)} failed; after pipeline {args.settle}: JAX "
          f"device memory {dev_slope:+.2f} MB / 100 pipelines, host RSS {host_slope:+.2f} MB / "
          f"100 pipelines; wrote {out}")
    ok = not failures and (len(xs) < 2 or (abs(dev_slope) < args.max_slope_mb
                                           and host_slope < args.max_slope_mb))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
