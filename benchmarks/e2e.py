"""End to end on the GPU: JPEG files -> nvJPEG decode (mixed) -> random resized crop -> augment,
images per second of the whole input pipeline, under DALI's dynamic executor and
``exec_dynamic=False``, with augjax inside the pipeline (one ``jax_function``) or after DALI's
JAX iterator (``augjax.dali.augment_batches``), next to DALI's native augmentations.

    python benchmarks/e2e.py --batch 64 256 1024 --machine gpu-h200
    python benchmarks/e2e.py --device cpu --batch 8 --iters 3 --reps 1 --images 16   # smoke

The files: ``--images`` JPEGs of ImageNet-like sizes (shorter side 333-500, quality 90),
generated at start from augjax's bundled photos (random crops, resizes and flips of them, so
every file decodes to different pixels), listed as often as needed to fill 2 batches.

Every row is images/s = B / (median over ``--reps`` of the mean time per batch over ``--iters``
batches, after ``--warmup`` batches). Pipeline rows call ``pipe.run()``; "iterator" rows run the
pipeline through ``nvidia.dali.plugin.jax.DALIGenericIterator`` and make the consumer wait for
each batch (``jax.block_until_ready``), as a training step would. Inside every ``jax_function``
the callback's host time is recorded (``callback_ms``: DALI's whole Python callback, ``function_ms``:
the augjax program's call inside it; the rest is DLPack in and out). ``--profile`` adds the JAX
profiler (CUPTI) on a few rows; ``--diagnose`` the rows that isolate where the crossing's time goes
(a callback that sleeps or spins for 1 ms, executor options, prefetch depth).

Writes ``benchmarks/results/e2e-<machine>-<date>.json`` (``--out`` to override). This is the
``e2e`` mode of ``benchmarks/gpu.py`` (which runs it with a time limit and keeps its summary in
the GPU result file); run it alone for the diagnosis rows (``--diagnose``, ``--profile``).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
CLASSES = 1000

#: (start, end, thread id) of every DALI jax_function callback, and the augjax program's call
CALLS: dict[str, list] = collections.defaultdict(list)


def _instrument_callbacks() -> None:
    """Times DALI's Python callback of every ``jax_function`` made from now on."""
    from nvidia.dali.plugin.jax.fn import _jax_function_impl as impl

    orig = impl._jax_callback_wrapper

    def wrapper(function, sharding, device):
        def inner(*a):
            t = time.perf_counter()
            try:
                return function(*a)
            finally:
                CALLS["function"].append((t, time.perf_counter(), threading.get_ident()))

        outer = orig(inner, sharding, device)

        def timed(*a):
            t = time.perf_counter()
            try:
                return outer(*a)
            finally:
                CALLS["callback"].append((t, time.perf_counter(), threading.get_ident()))
        return timed

    impl._jax_callback_wrapper = wrapper


def make_images(root: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` distinct JPEGs of ImageNet-like sizes made from the bundled photos."""
    from PIL import Image

    import augjax

    src = sorted((Path(augjax.__file__).parent / "data" / "images").glob("*.jpg"))
    photos = [Image.open(p).convert("RGB") for p in src]
    rng = np.random.default_rng(seed)
    files = []
    for i in range(n):
        im = photos[i % len(photos)]
        w, h = im.size
        cw, ch = int(w * rng.uniform(0.5, 1.0)), int(h * rng.uniform(0.5, 1.0))
        x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        crop = im.crop((x0, y0, x0 + cw, y0 + ch))
        short = int(rng.integers(333, 501))
        long_ = int(short * rng.uniform(1.0, 1.5))
        size = (long_, short) if rng.random() < 0.75 else (short, long_)
        crop = crop.resize(size, Image.BILINEAR)
        if rng.random() < 0.5:
            crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
        path = root / f"{i:05d}.jpg"
        crop.save(path, quality=90)
        files.append(str(path))
    return files


def _sync(gpu: bool) -> None:
    if gpu:
        try:
            import cupy

            cupy.cuda.runtime.deviceSynchronize()
        except ImportError:  # pragma: no cover
            import jax

            jax.effects_barrier()


# ---------------------------------------------------------------------------------------------
# augmentations


def augjax_chains():
    import augjax

    ops = augjax.ops
    chain = augjax.compose(
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.normalize.bind(chw=True),
        ops.random_erasing.bind(p=0.25),
        ops.mixup_cutmix.bind(num_classes=CLASSES),
    )
    randaug = augjax.compose(
        ops.flip.bind(p=0.5),
        augjax.policies.rand_augment(n=2, m=9),
        ops.normalize.bind(chw=True),
        ops.random_erasing.bind(p=0.25),
        ops.mixup_cutmix.bind(num_classes=CLASSES),
    )
    return {"chain": chain, "randaug": randaug}


def dali_native(images, randaug: bool, gpu: bool):
    from nvidia.dali import fn, types

    images = fn.flip(images, horizontal=fn.random.coin_flip())
    if randaug:
        from nvidia.dali.auto_aug import rand_augment

        images = rand_augment.rand_augment(images, n=2, m=9)
    else:
        images = fn.color_twist(images, brightness=fn.random.uniform(range=[0.6, 1.4]),
                                contrast=fn.random.uniform(range=[0.6, 1.4]),
                                saturation=fn.random.uniform(range=[0.6, 1.4]),
                                hue=fn.random.uniform(range=[-36.0, 36.0]))
    return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN,
                                    std=STD)


def _callback_fn(kind: str):
    """A GPU/CPU jax_function body for the diagnosis rows."""
    import jax

    ident = jax.jit(lambda x: x)

    def sleep(x):
        time.sleep(1e-3)  # releases the GIL
        return ident(x)

    def spin(x):
        t = time.perf_counter()
        while time.perf_counter() - t < 1e-3:  # holds the GIL
            pass
        return ident(x)

    return {"identity": ident, "sleep": sleep, "spin": spin}[kind]


# ---------------------------------------------------------------------------------------------
# pipelines


ROWS = {
    # name: (kind, options)
    "decode + crop": ("plain", {}),
    "+ DALI flip, color_twist, crop_mirror_normalize": ("dali", {}),
    "+ augjax flip, color_jitter, normalize CHW, random_erasing, mixup_cutmix (one crossing)":
        ("augjax:chain", {}),
    "+ DALI flip, auto_aug rand_augment(n=2, m=9), crop_mirror_normalize": ("dali_randaug", {}),
    "+ augjax flip, rand_augment(n=2, m=9), normalize, random_erasing, mixup_cutmix":
        ("augjax:randaug", {}),
    "iterator: decode + crop": ("iter:plain", {}),
    "iterator: augjax chain inside the pipeline": ("iter:augjax:chain", {}),
    "iterator: augjax chain after the iterator, no prefetch": ("after:chain", {"prefetch": 0}),
    "iterator: augjax chain after the iterator, augment_batches(prefetch=2)":
        ("after:chain", {"prefetch": 2}),
    "iterator: augjax RandAugment chain after the iterator, augment_batches(prefetch=2)":
        ("after:randaug", {"prefetch": 2}),
}

DIAGNOSE = {
    "+ jax_function identity (the bare crossing)": ("fn:identity", {}),
    "+ jax_function that sleeps 1 ms (GIL released)": ("fn:sleep", {}),
    "+ jax_function that spins 1 ms (GIL held)": ("fn:spin", {}),
    "+ augjax normalize CHW only (no seed input)": ("augjax:normalize", {}),
    "+ augjax chain, seeds drawn on the CPU": ("augjax:chain", {"cpu_seeds": True}),
    "decode + crop, prefetch_queue_depth=3": ("plain", {"depth": 3}),
    "+ augjax chain, prefetch_queue_depth=3": ("augjax:chain", {"depth": 3}),
    "decode + crop, prefetch_queue_depth=4": ("plain", {"depth": 4}),
    "+ augjax chain, prefetch_queue_depth=4": ("augjax:chain", {"depth": 4}),
    "+ augjax RandAugment chain, prefetch_queue_depth=4": ("augjax:randaug", {"depth": 4}),
    "decode + crop, concurrency FULL": ("plain", {"concurrency": "FULL"}),
    "+ augjax chain, concurrency FULL": ("augjax:chain", {"concurrency": "FULL"}),
    "decode + crop, stream_policy PER_OPERATOR": ("plain", {"stream_policy": "PER_OPERATOR"}),
    "+ augjax chain, stream_policy PER_OPERATOR": ("augjax:chain",
                                                   {"stream_policy": "PER_OPERATOR"}),
    "decode + crop, num_threads 8": ("plain", {"threads": 8}),
    "+ augjax chain, num_threads 8": ("augjax:chain", {"threads": 8}),
}


def build_pipeline(kind: str, opts: dict, b: int, files, labels, executor: str, gpu: bool,
                   size: int):
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali import pipeline as dali_pipeline
    from nvidia.dali.plugin.jax import fn as jax_fn

    import augjax

    dynamic = executor == "dynamic"
    extra = {}
    if dynamic and "concurrency" in opts:
        extra["concurrency"] = getattr(dali_pipeline.OperatorConcurrency, opts["concurrency"])
    if dynamic and "stream_policy" in opts:
        extra["stream_policy"] = getattr(dali_pipeline.StreamPolicy, opts["stream_policy"])
    chains = augjax_chains()
    dev = "gpu" if gpu else "cpu"
    body = kind.split(":", 1)[1] if kind.startswith(("iter:", "after:")) else kind
    if kind.startswith("after:"):
        body = "outputs seeds"

    @pipeline_def(batch_size=b, num_threads=opts.get("threads", 4),
                  device_id=0 if gpu else None, seed=1234,
                  prefetch_queue_depth=opts.get("depth", 2), exec_dynamic=dynamic,
                  enable_conditionals=body == "dali_randaug", **extra)
    def pipe():
        jpegs, lab = fn.readers.file(files=files, labels=labels, random_shuffle=True,
                                     initial_fill=min(1024, len(files)), name="reader")
        images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu",
                                   output_type=types.RGB)
        images = fn.random_resized_crop(images, size=(size, size))
        lab = lab.gpu() if gpu else lab
        if body == "plain":
            return images, lab
        if body == "outputs seeds":
            return images, lab, augjax.dali.sample_seeds(device=dev)
        if body in ("dali", "dali_randaug"):
            return dali_native(images, body == "dali_randaug", gpu), lab
        if body.startswith("fn:"):
            f = jax_fn.jax_function(_callback_fn(body[3:]), output_layouts="HWC", device=dev)
            return f(images), lab
        if body == "augjax:normalize":
            return augjax.ops.normalize(images, chw=True), lab
        chain = chains[body.split(":")[1]]
        if opts.get("cpu_seeds"):
            seeds = augjax.dali.sample_seeds(device="cpu")
            return chain(images, lab, seeds=seeds.gpu() if gpu else seeds)
        return chain(images, lab)

    p = pipe()
    p.build()
    return p


def time_loop(step, iters: int, reps: int, warmup: int, gpu: bool) -> tuple[float, list[float]]:
    for _ in range(warmup):
        step()
    _sync(gpu)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        _sync(gpu)
        times.append((time.perf_counter() - t0) / iters)
    return statistics.median(times), times


def measure(name: str, kind: str, opts: dict, b: int, files, labels, executor: str, gpu: bool,
            args) -> dict:
    import jax

    from augjax._runtime.execution.program import seeded_program

    CALLS.clear()
    t_build = time.perf_counter()
    p = build_pipeline(kind, opts, b, files, labels, executor, gpu, args.size)
    build_s = time.perf_counter() - t_build
    held = {}
    if kind.startswith(("iter:", "after:")):
        from nvidia.dali.plugin.jax import DALIGenericIterator

        names = ["images", "labels", "seeds"] if kind.startswith("after:") else ["images",
                                                                                 "labels"]
        it = DALIGenericIterator([p], names, size=-1)
        if kind.startswith("after:"):
            import augjax

            chain = augjax_chains()[kind.split(":")[1]]
            if opts["prefetch"]:
                it = augjax.dali.augment_batches(it, chain, prefetch=opts["prefetch"])

                def step():
                    held["out"] = jax.block_until_ready(next(it)["images"])
            else:
                program = seeded_program(tuple(chain.steps), "HWC", True, True, chain.start)

                def step():
                    batch = next(it)
                    held["out"] = jax.block_until_ready(
                        program(batch["images"], batch["labels"], batch["seeds"])[0])
        else:
            def step():
                held["out"] = jax.block_until_ready(next(it)["images"])
    else:
        def step():
            held["out"] = p.run()

    t_first = time.perf_counter()
    step()  # the first batch: compiles a jax_function's program
    first_s = time.perf_counter() - t_first
    CALLS.clear()
    sec, reps = time_loop(step, args.iters, args.reps, args.warmup, gpu)
    row = {"img_s": b / sec, "ms_per_batch": 1e3 * sec,
           "ms_per_batch_reps": [1e3 * t for t in reps], "build_s": build_s,
           "first_batch_s": first_s, "kind": kind, "options": opts}
    n_batches = args.iters * args.reps + args.warmup
    for what in ("callback", "function"):
        spans = CALLS.get(what)
        if spans:
            durs = [1e3 * (e - s) for s, e, _ in spans]
            row[f"{what}_ms_median"] = statistics.median(durs)
            row[f"{what}_ms_per_batch"] = sum(durs) / n_batches
            row[f"{what}_threads"] = len({t for _, _, t in spans})
    if args.profile and b == 256 and name in args.profile_rows:
        from gpu_profile import profile

        row["profile"] = profile(step, 20, lambda: _sync(gpu))
    held.clear()
    del p
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--batch", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--executors", nargs="+", default=["dynamic", "legacy"],
                    choices=("dynamic", "legacy"))
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--images", type=int, default=512,
                    help="distinct JPEG files to generate (0: the 8 bundled photos as they are)")
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rows", nargs="*", default=None, help="rows whose name contains one of these")
    ap.add_argument("--diagnose", type=int, nargs="*", default=[],
                    help="batch sizes at which to run the diagnosis rows (dynamic executor)")
    ap.add_argument("--diag-rows", nargs="*", default=None,
                    help="diagnosis rows whose name contains one of these")
    ap.add_argument("--profile", action="store_true",
                    help="JAX profiler (CUPTI) on decode + crop and the augjax chain, B=256")
    ap.add_argument("--machine", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--time-limit", type=float, default=1e9,
                    help="seconds after which rows not yet run are skipped (results so far kept)")
    args = ap.parse_args(argv)
    gpu = args.device == "gpu"
    t_start = time.perf_counter()
    sys.path.insert(0, str(HERE))
    args.profile_rows = [
        "decode + crop",
        "+ augjax flip, color_jitter, normalize CHW, random_erasing, mixup_cutmix (one crossing)",
        "+ DALI flip, color_twist, crop_mirror_normalize",
        "iterator: augjax chain after the iterator, augment_batches(prefetch=2)"]

    import harness
    import jax

    import augjax

    _instrument_callbacks()
    kind = jax.devices()[0].device_kind.lower().replace("nvidia", "").strip()
    machine = args.machine or ("gpu-" + kind.replace(" ", "-") if gpu else "cpu")  # as gpu.py
    date = datetime.date.today().isoformat()
    out = Path(args.out) if args.out else RESULTS / f"e2e-{machine}-{date}.json"
    tmp = tempfile.TemporaryDirectory()
    if args.images:
        distinct = make_images(Path(tmp.name), args.images)
    else:  # the 8 bundled photos themselves (what the first measurements used)
        distinct = sorted(str(p) for p in
                          (Path(augjax.__file__).parent / "data" / "images").glob("*.jpg"))
    reps_needed = -(-2 * max(args.batch) // len(distinct))
    files = distinct * max(1, reps_needed)
    labels = [i % CLASSES for i in range(len(files))]
    result = {
        "benchmark": "e2e",
        "date": date,
        "machine": machine,
        "host": {"node": platform.node(), "cpu_count": os.cpu_count(),
                 "platform": platform.platform()},
        "versions": {**harness.versions(gpu), "devices": str(jax.devices())},
        "config": {"batch_sizes": args.batch, "executors": args.executors, "size": args.size,
                   "distinct_images": len(distinct),
                   "images": "generated, ImageNet-like sizes" if args.images else "the 8 bundled photos", "files_listed": len(files),
                   "iters": args.iters, "reps": args.reps, "warmup": args.warmup,
                   "pipeline": "readers.file(shuffle) -> decoders.image(mixed, RGB) -> "
                               "random_resized_crop(size) -> augmentation; num_threads 4, "
                               "prefetch_queue_depth 2 unless a row says otherwise",
                   "metric": "images/s = B / median over reps of the mean time per batch"},
        "rows": {},
    }

    def save():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")

    plan = []
    for b in args.batch:
        for ex in args.executors:
            for name, (kind, opts) in ROWS.items():
                if args.rows and not any(r in name for r in args.rows):
                    continue
                if ex == "legacy" and kind == "dali_randaug":
                    continue  # not in the table (DALI conditionals + legacy)
                plan.append((b, ex, name, kind, opts))
        if b in args.diagnose:  # right after the main rows of the same batch size
            for name, (kind, opts) in DIAGNOSE.items():
                if args.diag_rows and not any(r in name for r in args.diag_rows):
                    continue
                plan.append((b, "dynamic", name, kind, opts))
    for b, ex, name, kind, opts in plan:
        key = f"B={b} {ex}"
        if time.perf_counter() - t_start > args.time_limit:
            result["rows"].setdefault(key, {})[name] = {"skipped": "time limit"}
            continue
        try:
            row = measure(name, kind, opts, b, files, labels, ex, gpu, args)
        except Exception as err:  # noqa: BLE001 - a failed row is recorded, the others run
            row = {"error": f"{type(err).__name__}: {str(err)[:400]}"}
        result["rows"].setdefault(key, {})[name] = row
        txt = (f"{row['img_s']:9.0f} img/s {row['ms_per_batch']:7.2f} ms/batch"
               if "img_s" in row else row["error"])
        cb = (f"  callback {row['callback_ms_median']:.3f} ms (fn {row['function_ms_median']:.3f})"
              if "callback_ms_median" in row else "")
        print(f"{key:<16} {name[:86]:<86} {txt}{cb}", flush=True)
        save()
    result["summary"] = summary(result)
    head = result["summary"].get("B=256 dynamic", {})
    for k in ("decode_crop_img_s", "augjax_chain_img_s", "augjax_randaug_img_s",
              "dali_randaug_img_s"):
        result[k] = head.get(k)  # B=256, DALI's default (dynamic) executor
    save()
    print(json.dumps(result["summary"], indent=1))
    print(f"wrote {out}")
    return 0


SHORT = {
    "decode_crop_img_s": "decode + crop",
    "dali_native_img_s": "+ DALI flip, color_twist, crop_mirror_normalize",
    "augjax_chain_img_s":
        "+ augjax flip, color_jitter, normalize CHW, random_erasing, mixup_cutmix (one crossing)",
    "dali_randaug_img_s": "+ DALI flip, auto_aug rand_augment(n=2, m=9), crop_mirror_normalize",
    "augjax_randaug_img_s":
        "+ augjax flip, rand_augment(n=2, m=9), normalize, random_erasing, mixup_cutmix",
    "iterator_decode_crop_img_s": "iterator: decode + crop",
    "iterator_augjax_inside_img_s": "iterator: augjax chain inside the pipeline",
    "after_iterator_no_prefetch_img_s": "iterator: augjax chain after the iterator, no prefetch",
    "after_iterator_prefetch_img_s":
        "iterator: augjax chain after the iterator, augment_batches(prefetch=2)",
    "after_iterator_randaug_prefetch_img_s":
        "iterator: augjax RandAugment chain after the iterator, augment_batches(prefetch=2)",
}


def summary(result: dict) -> dict:
    """The headline numbers per batch size and executor, and the issue's ratios."""
    out = {}
    for key, rows in result["rows"].items():
        s = {k: rows[v]["img_s"] for k, v in SHORT.items() if "img_s" in rows.get(v, {})}
        base = s.get("decode_crop_img_s")
        if base:
            for k in ("augjax_chain_img_s", "augjax_randaug_img_s", "dali_native_img_s"):
                if k in s:
                    s[k.replace("_img_s", "_vs_decode_crop")] = s[k] / base
        if "augjax_randaug_img_s" in s and "dali_randaug_img_s" in s:
            s["augjax_randaug_vs_dali_randaug"] = s["augjax_randaug_img_s"] / s["dali_randaug_img_s"]
        ib = s.get("iterator_decode_crop_img_s")
        if ib:
            for k in ("iterator_augjax_inside_img_s", "after_iterator_no_prefetch_img_s",
                      "after_iterator_prefetch_img_s", "after_iterator_randaug_prefetch_img_s"):
                if k in s:
                    s[k.replace("_img_s", "_vs_iterator_decode_crop")] = s[k] / ib
        out[key] = s
    return out


if __name__ == "__main__":
    raise SystemExit(main())
