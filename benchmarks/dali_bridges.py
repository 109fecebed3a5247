"""Which DALI bridge: the same work through ``jax_function`` (a ``@pipeline_def``, DALI's dynamic
executor and ``exec_dynamic=False``), through DALI's dynamic mode (``ndd``: eager, and captured
with ``capture=True``), and as DALI's native operators, per op and end to end from JPEGs.

    python benchmarks/dali_bridges.py --device gpu --batch 32 64 256 --machine gpu-h200
    python benchmarks/dali_bridges.py --device cpu --batch 16 --machine cpu
    python benchmarks/dali_bridges.py --device cpu --batch 8 --quick      # smoke (minutes)

**Per op** (``--ops``: flip, color_jitter, normalize, random_resized_crop; 224^2 uint8 images
already in memory, on the device: 4 batches cycled). Rows, ms per batch (median of ``--reps``
repetitions of ``--iters`` batches after ``--warmup``):

- ``pipeline jax_function (dynamic|legacy executor)``: ``external_source`` -> the augjax op (one
  ``jax_function``, seeds drawn by DALI) -> ``pipe.run()``;
- ``pipeline DALI native``: ``fn.flip`` / ``fn.color_twist`` / ``fn.crop_mirror_normalize`` /
  ``fn.random_resized_crop`` (random arguments from ``fn.random``);
- ``ndd eager``: the op on an ``ndd.Batch`` with ``seed=`` an ``ndd.random.RNG`` (the batch in and
  out through DLPack), ``ndd eager output=jax`` its jax.Array, ``ndd native eager`` DALI's
  operator called in dynamic mode;
- ``ndd capture``: the same loop body under ``ndd.ExternalSource(...).captured(B)``;
- ``arrays``: the op on jax.Arrays (the kernel alone, no DALI).

**End to end** (``--e2e``; ``--images`` distinct JPEGs of ImageNet-like sizes, made from the
bundled photos as ``e2e.py`` makes them): reader -> decode (``mixed`` / ``gpu`` on a GPU) ->
random resized crop -> flip, colour jitter, normalize (CHW float), mixup/cutmix; and with
RandAugment(n=2, m=9) in place of the colour jitter. Rows: the pipeline's decode + DALI rrc
(the baseline), DALI native augmentations, the augjax chain in the pipeline (both executors;
with DALI's rrc, and with augjax's rrc reading the decoded sizes), and in dynamic mode eager and
captured (DALI's rrc, or augjax's on the ragged batch). images/s.

``--no-command-buffers`` sets ``XLA_FLAGS=--xla_gpu_enable_command_buffer=`` before JAX starts
(NVIDIA/DALI#6449); the file records the flags. Writes
``benchmarks/results/dali-bridges-<machine>-<date>.json`` (``--out`` to override) with each row,
the ratios against DALI native / the decode + rrc baseline, the machine and the versions.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

if "--no-command-buffers" in sys.argv:  # before JAX is imported (NVIDIA/DALI#6449)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_gpu_enable_command_buffer=").strip()

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
CLASSES = 1000
OPS = ("flip", "color_jitter", "normalize", "random_resized_crop")


# -- the work ------------------------------------------------------------------------------------
def augjax_op(name: str, size: int):
    import augjax

    ops = augjax.ops
    return {"flip": ops.flip.bind(p=0.5),
            "color_jitter": ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4,
                                                  hue=0.1),
            "normalize": ops.normalize.bind(mean=(0.485, 0.456, 0.406),
                                            std=(0.229, 0.224, 0.225)),
            "random_resized_crop": ops.random_resized_crop.bind(size=size)}[name]


def dali_native(name: str, images, size: int):
    """DALI's operator for ``name`` in a pipeline (random arguments from ``fn.random``)."""
    from nvidia.dali import fn, types

    if name == "flip":
        return fn.flip(images, horizontal=fn.random.coin_flip())
    if name == "color_jitter":
        return fn.color_twist(images, brightness=fn.random.uniform(range=[0.6, 1.4]),
                              contrast=fn.random.uniform(range=[0.6, 1.4]),
                              saturation=fn.random.uniform(range=[0.6, 1.4]),
                              hue=fn.random.uniform(range=[-36.0, 36.0]))
    if name == "normalize":
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC",
                                        mean=MEAN, std=STD)
    return fn.random_resized_crop(images, size=(size, size))


def ndd_native(name: str, batch, size: int, rng):
    """DALI's operator for ``name`` called in dynamic mode."""
    import nvidia.dali.experimental.dynamic as ndd

    n = batch.batch_size
    if name == "flip":
        return ndd.flip(batch, horizontal=ndd.random.coin_flip(batch_size=n, rng=rng))
    if name == "color_jitter":
        u = [ndd.random.uniform(batch_size=n, range=r, rng=rng)
             for r in ([0.6, 1.4], [0.6, 1.4], [0.6, 1.4], [-36.0, 36.0])]
        return ndd.color_twist(batch, brightness=u[0], contrast=u[1], saturation=u[2],
                               hue=u[3])
    if name == "normalize":
        return ndd.crop_mirror_normalize(batch, dtype=ndd.float32, output_layout="HWC",
                                         mean=MEAN, std=STD)
    return ndd.random_resized_crop(batch, size=(size, size), rng=rng)


def chains():
    """The end-to-end chains after the crop (flip, colour, normalize, mixup/cutmix)."""
    import augjax

    ops = augjax.ops
    tail = (ops.normalize.bind(chw=True), ops.mixup_cutmix.bind(num_classes=CLASSES))
    jitter = ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)
    return {"chain": (ops.flip.bind(p=0.5), jitter, *tail),
            "randaug": (ops.flip.bind(p=0.5), augjax.rand_augment(n=2, m=9), *tail)}


# -- timing --------------------------------------------------------------------------------------
def _wait(out, device: str) -> None:
    """Waits for ``out`` (jax.Arrays, ndd batches, DALI outputs, tuples of them)."""
    import jax

    for x in out if isinstance(out, (tuple, list)) else (out,):
        if isinstance(x, jax.Array):
            x.block_until_ready()
        elif hasattr(x, "evaluate"):
            x.evaluate()
    harness.sync(device)


def time_steps(step, device: str, args) -> list[float]:
    """ms per batch of each repetition of ``args.iters`` calls of ``step`` (waited once per
    repetition: dispatch pipelined as in a training loop)."""
    out = None
    for _ in range(args.warmup):
        out = step()
    _wait(out, device)
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        for _ in range(args.iters):
            out = step()
        _wait(out, device)
        times.append((time.perf_counter() - t0) * 1e3 / args.iters)
    return times


def _row(rows: list, section: str, work: str, bridge: str, b: int, times: list[float],
         **extra) -> None:
    ms = harness.median(times)
    rows.append({"section": section, "work": work, "bridge": bridge, "batch": b,
                 "ms_per_batch": ms, "ms_reps": times, "img_s": b * 1e3 / ms, **extra})
    print(f"  {section:6s} B={b:<4d} {work:30s} {bridge:42s} {ms:8.3f} ms  "
          f"{b * 1e3 / ms:9.0f} img/s", flush=True)


def _ndd_batches(host: list[np.ndarray], device: str) -> list:
    """``host`` as dynamic-mode batches on ``device`` (GPU: JAX's buffers, through DLPack)."""
    import jax
    import nvidia.dali.experimental.dynamic as ndd

    if device == "gpu":
        gpu = jax.local_devices(backend="gpu")[0]
        return [ndd.as_batch(jax.device_put(h, gpu), layout="HWC").evaluate() for h in host]
    return [ndd.as_batch(h, layout="HWC").evaluate() for h in host]


# -- per op --------------------------------------------------------------------------------------
def per_op(rows: list, b: int, args) -> None:
    import jax
    import nvidia.dali.experimental.dynamic as ndd

    dev = args.device
    host = harness.host_batches(b, args.size, n=4)
    on_device = harness.device_batches(dev, host)
    batches = _ndd_batches(host, dev)
    for name in args.ops:
        step = augjax_op(name, args.size)
        for executor in ("dynamic", "legacy"):
            p = harness.pipeline(dev, b, on_device, lambda x: step(x, seed=1),
                                 executor=executor, seed=1)
            _row(rows, "op", name, f"pipeline jax_function ({executor} executor)", b,
                 time_steps(p.run, dev, args))
            del p
        p = harness.pipeline(dev, b, on_device, lambda x: dali_native(name, x, args.size),
                             seed=1)
        _row(rows, "op", name, "pipeline DALI native", b, time_steps(p.run, dev, args))
        del p
        cycle, rng = itertools.cycle(batches), ndd.random.RNG(seed=1)
        _row(rows, "op", name, "ndd eager", b,
             time_steps(lambda: step(next(cycle), seed=rng), dev, args))
        _row(rows, "op", name, "ndd eager output=jax", b,
             time_steps(lambda: step(next(cycle), seed=rng, output="jax"), dev, args))
        _row(rows, "op", name, "ndd native eager", b,
             time_steps(lambda: ndd_native(name, next(cycle), args.size, rng), dev, args))
        _row(rows, "op", name, "ndd capture", b, _captured(step, batches, b, dev, args))
        arrays = [jax.device_put(h, jax.devices(dev)[0]) for h in host]
        cyc, key = itertools.cycle(arrays), jax.random.key(1)
        _row(rows, "op", name, "arrays (no DALI)", b,
             time_steps(lambda: step(next(cyc), key=key), dev, args))


def _captured(step, batches: list, b: int, device: str, args) -> list[float]:
    """The op in a capture-mode loop over an ``ndd.ExternalSource`` of ``batches``."""
    import nvidia.dali.experimental.dynamic as ndd

    source = ndd.ExternalSource(batches, cycle=True, device=device, layout="HWC")
    rng = ndd.random.RNG(seed=1)
    loop = source.captured(batch_size=b)

    def body():
        return step(next(loop), seed=rng)

    try:
        return time_steps(body, device, args)
    finally:
        getattr(loop, "close", lambda: None)()


# -- end to end ----------------------------------------------------------------------------------
def _pipeline_e2e(kind: str, recipe: str, b: int, files, labels, executor: str, args):
    import augjax
    from nvidia.dali import fn, pipeline_def, types

    gpu = args.device == "gpu"
    tail = augjax.compose(list(chains()[recipe]))
    rrc = augjax.ops.random_resized_crop.bind(size=args.size)

    @pipeline_def(batch_size=b, num_threads=args.threads, device_id=0 if gpu else None,
                  seed=1234, prefetch_queue_depth=2, exec_dynamic=executor == "dynamic",
                  enable_conditionals=kind == "native" and recipe == "randaug")
    def pipe():
        jpegs, lab = fn.readers.file(files=files, labels=labels, random_shuffle=True,
                                     initial_fill=min(1024, len(files)), name="reader")
        images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu",
                                   output_type=types.RGB)
        lab = lab.gpu() if gpu else lab
        if kind == "augjax rrc":
            return augjax.compose([rrc, *chains()[recipe]])(images, lab)
        images = fn.random_resized_crop(images, size=(args.size, args.size))
        if kind == "baseline":
            return images, lab
        if kind == "native":
            images = fn.flip(images, horizontal=fn.random.coin_flip())
            if recipe == "randaug":
                from nvidia.dali.auto_aug import rand_augment

                images = rand_augment.rand_augment(images, n=2, m=9)
            else:
                images = dali_native("color_jitter", images, args.size)
            return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                            mean=MEAN, std=STD), lab
        return tail(images, lab)

    p = pipe()
    p.build()
    return p


def _dynamic_e2e(kind: str, recipe: str, b: int, files, labels, capture: bool, args):
    """A step function over ``reader.next_epoch``: decode -> rrc -> chain, in dynamic mode."""
    import augjax
    import nvidia.dali.experimental.dynamic as ndd

    decode_device = "gpu" if args.device == "gpu" else "cpu"
    tail = augjax.compose(list(chains()[recipe]))
    whole = augjax.compose([augjax.ops.random_resized_crop.bind(size=args.size),
                            *chains()[recipe]])
    reader = ndd.readers.File(files=files, labels=labels, random_shuffle=True, seed=1234,
                              initial_fill=min(1024, len(files)))
    rng = ndd.random.RNG(seed=1234)
    epoch = reader.next_epoch(batch_size=b, capture=capture)

    def step():
        jpegs, lab = next(epoch)
        images = ndd.decoders.image(jpegs, device=decode_device)
        if decode_device == "gpu":
            lab = lab.gpu()
        if kind == "augjax rrc":
            return whole(images, lab, seed=rng)
        images = ndd.random_resized_crop(images, size=(args.size, args.size), rng=rng)
        return tail(images, lab, seed=rng)

    return step, epoch


def end_to_end(rows: list, b: int, files: list[str], args) -> None:
    dev = args.device
    needed = (args.warmup + args.iters * args.reps + 2) * b
    listed = files * math.ceil(needed / len(files))  # one epoch covers every timed batch
    labels = [i % CLASSES for i in range(len(listed))]
    pipe_kinds = [("baseline", "chain", "dynamic"), ("native", "chain", "dynamic"),
                  ("augjax", "chain", "dynamic"), ("augjax", "chain", "legacy"),
                  ("augjax rrc", "chain", "dynamic"), ("native", "randaug", "dynamic"),
                  ("augjax", "randaug", "dynamic")]
    for kind, recipe, executor in pipe_kinds:
        p = _pipeline_e2e(kind, recipe, b, listed, labels, executor, args)
        work = "decode + rrc" if kind == "baseline" else f"decode + rrc + {recipe}"
        _row(rows, "e2e", work, f"pipeline {kind} ({executor} executor)", b,
             time_steps(p.run, dev, args))
        del p
    for kind, recipe in (("augjax", "chain"), ("augjax rrc", "chain"), ("augjax", "randaug")):
        for capture in (False, True):
            step, epoch = _dynamic_e2e(kind, recipe, b, listed, labels, capture, args)
            what = "ndd rrc" if kind == "augjax" else "augjax rrc on the ragged batch"
            try:
                times = time_steps(step, dev, args)
            except Exception as err:  # noqa: BLE001 - a mode that fails is a result too
                rows.append({"section": "e2e", "work": f"decode + rrc + {recipe}",
                             "bridge": f"ndd {'capture' if capture else 'eager'}, {what}",
                             "batch": b, "error": f"{type(err).__name__}: {err}"[:500]})
                print(f"  e2e    B={b:<4d} {recipe:30s} ndd {what}: {type(err).__name__}")
                continue
            finally:
                if hasattr(epoch, "close"):
                    epoch.close()
            _row(rows, "e2e", f"decode + rrc + {recipe}",
                 f"ndd {'capture' if capture else 'eager'}, {what}", b, times)


# -- ratios and the file -------------------------------------------------------------------------
def ratios(rows: list) -> dict:
    """Per op: each bridge's ms / DALI native's (lower is better); end to end: each row's
    images/s / the decode + rrc baseline's (higher is better)."""
    out: dict = {"op_vs_native": {}, "e2e_vs_baseline": {}}
    by = {(r["section"], r["work"], r["bridge"], r["batch"]): r for r in rows if "error" not in r}
    for (section, work, bridge, b), r in by.items():
        if section == "op" and bridge != "pipeline DALI native":
            ref = by.get(("op", work, "pipeline DALI native", b))
            if ref:
                out["op_vs_native"][f"B={b} {work}: {bridge}"] = r["ms_per_batch"] / ref[
                    "ms_per_batch"]
        if section == "e2e" and work != "decode + rrc":
            ref = by.get(("e2e", "decode + rrc", "pipeline baseline (dynamic executor)", b))
            if ref:
                out["e2e_vs_baseline"][f"B={b} {work}: {bridge}"] = r["img_s"] / ref["img_s"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--batch", type=int, nargs="+", default=[32, 64, 256])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--no-e2e", action="store_true", help="per-op rows only")
    ap.add_argument("--no-ops", action="store_true", help="end-to-end rows only")
    ap.add_argument("--images", type=int, default=256, help="distinct JPEGs end to end")
    ap.add_argument("--threads", type=int, default=8, help="DALI's threads end to end")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 3 iterations, 1 repetition, 2 warm-up, 16 JPEGs")
    ap.add_argument("--no-command-buffers", action="store_true",
                    help="XLA_FLAGS=--xla_gpu_enable_command_buffer= (set before JAX starts)")
    ap.add_argument("--machine", default=None, help="the machine part of the file name")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.iters, args.reps, args.warmup, args.images = 3, 1, 2, min(args.images, 16)
    gpu = args.device == "gpu"
    machine = args.machine or ("cpu" if not gpu else "gpu")
    rows: list = []
    files: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_e2e:
            from e2e import make_images

            files = make_images(Path(tmp), args.images)
        for b in args.batch:
            print(f"B={b}", flush=True)
            if not args.no_ops:
                per_op(rows, b, args)
            if not args.no_e2e:
                end_to_end(rows, b, files, args)
    result = {"date": harness.today(), "machine": harness.machine(gpu, machine),
              "versions": harness.versions(gpu), "xla_flags": os.environ.get("XLA_FLAGS", ""),
              "args": {k: v for k, v in vars(args).items()}, "rows": rows,
              "ratios": ratios(rows)}
    out = Path(args.out) if args.out else harness.RESULTS / (
        f"dali-bridges-{machine}-{harness.today()}"
        f"{'-quick' if args.quick else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
