"""Where the CPU time of the LSJ recipe in DALI goes: the same JPEGs and draws as
``bench_recipes.py --recipes lsj`` (64 painted 480x640 JPEGs, B=16, 320x320, ``num_threads=2``)
through truncated pipelines, CPU ms per image (this process, psutil), interleaved rounds.

Stages (each pipeline is the previous one plus a part): ``reader`` (``fn.readers.coco``),
``decode`` (``fn.decoders.image``), ``plan`` (the window plan's ``jax_function``), ``resize``
(``fn.resize`` of the visible ROI), ``read`` (the ``scale_jitter`` chain on the images only:
the plan ``jax_function``, ``fn.resize`` of the visible ROI, ``fn.slice`` with padding),
``read+boxes`` (the same chain with the boxes: the boxes ``jax_function``), ``recipe`` (the
example's ``build_pipeline``: ``lsj`` with the flip's ``jax_function``). Two variants of the
read: ``decode-roi`` decodes only the region the resize reads (``fn.decoders.image_slice`` at the
plan's ROI, with the resize filter's margin, shapes from ``fn.peek_image_shape``), and
``read-roi`` resizes that region (ROI shifted into it); ``decode-roi0`` / ``read-roi0`` decode
from the image's origin to the ROI's end (plus the margin), so the ROI keeps its values.

    python benchmarks/lsj_stages.py --rounds 5 --out /tmp/lsj-stages.json
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

from grain_bench import time_loader  # noqa: E402
from harness import machine, today, versions  # noqa: E402

HW = (480, 640)


def _recipes():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "recipes_detection", HERE.parent / "examples" / "recipes_detection.py")
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    return rec


def decode_window(shapes, roi_start, roi_end, size, from_origin=False):
    """The source region (start, shape; int32, HW) the antialiased resize of ``[roi_start,
    roi_end)`` to ``size`` reads (its filter reaches ``ceil(scale) + 2`` pixels past the ROI),
    and the ROI in that region's pixels."""
    import jax.numpy as jnp

    hw = shapes[:, :2]
    scale = (roi_end - roi_start) / jnp.maximum(size, 1.0)
    margin = jnp.ceil(scale).astype(jnp.int32) + 2
    lo = jnp.clip(jnp.floor(roi_start).astype(jnp.int32) - margin, 0, hw)
    if from_origin:  # the ROI keeps its floats: the resize gives the full decode's bits
        lo = jnp.zeros_like(lo)
    hi = jnp.clip(jnp.ceil(roi_end).astype(jnp.int32) + margin, lo, hw)
    return lo, hi - lo, roi_start - lo, roi_end - lo


def build(rec, root, stage: str, *, batch: int, size: int, seed: int = 0):
    import jax
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin import jax as dax

    import augjax
    from augjax import ops
    from augjax._runtime.ragged.prefix import window_structure
    from augjax.dali._ragged import plan_function

    if stage == "recipe":
        return rec.build_pipeline(root, "lsj", batch_size=batch, size=size, max_boxes=4,
                                  seed=seed)
    jitter = ops.scale_jitter.bind(target_size=size, scale_range=(0.1, 2.0),
                                   fill=rec.MEAN_FRACTIONS)
    chain = augjax.compose(jitter)

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=seed)
    def pipe():
        jpegs, boxes, classes = fn.readers.coco(
            file_root=str(root / "images"), annotations_file=str(root / "annotations.json"),
            ltrb=True, random_shuffle=True, name="reader")
        if stage == "reader":
            return jpegs
        seeds = augjax.dali.sample_seeds(device="cpu")
        if stage in ("decode-roi", "read-roi", "decode-roi0", "read-roi0"):
            steps = tuple(chain.steps)
            shapes = fn.peek_image_shape(jpegs, dtype=types.INT32)
            plan = plan_function(steps, 0, True)
            roi_start, roi_end, vis, start = plan(shapes, seeds)
            window = dax.fn.jax_function(
                jax.jit(functools.partial(decode_window, from_origin=stage.endswith("0"))),
                num_outputs=4, device="cpu")
            lo, shape, rs, re = window(shapes, roi_start, roi_end, vis)
            x = fn.decoders.image_slice(jpegs, lo, shape, axis_names="HW", output_type=types.RGB)
            if stage.startswith("decode-roi"):
                return x
            x = fn.resize(x, size=vis, roi_start=rs, roi_end=re, interp_type=types.INTERP_LINEAR,
                          antialias=True)
            fill = [float(round(f * 255.0)) for f in window_structure(steps).fill]
            return fn.slice(x, start=start, shape=[size, size], axis_names="HW",
                            out_of_bounds_policy="pad", fill_values=fill)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        if stage == "decode":
            return images
        if stage in ("plan", "resize"):
            steps = tuple(chain.steps)
            shapes = images.shape(dtype=types.INT32, device="cpu")
            roi_start, roi_end, vis, start = plan_function(steps, 0, True)(shapes, seeds)
            if stage == "plan":
                return images, roi_start, roi_end, vis, start
            return fn.resize(images, size=vis, roi_start=roi_start, roi_end=roi_end,
                             interp_type=types.INTERP_LINEAR, antialias=True), start
        if stage == "read":
            return chain(images, seeds=seeds)
        boxes, classes, count = rec.pad_boxes(boxes, classes, 4)
        out = chain(images, boxes=boxes, boxes_valid=count, seeds=seeds)
        return out["images"], out["boxes"], out["boxes_valid"]

    p = pipe()
    p.build()
    return p


STAGES = ("reader", "decode", "decode-roi", "decode-roi0", "plan", "resize", "read", "read-roi",
          "read-roi0", "read+boxes", "recipe")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=320)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    from sample_dataset import make_dataset

    rec = _recipes()
    root = Path(tempfile.mkdtemp(prefix="augjax-lsj-stages-"))
    make_dataset(root, sizes=(HW,) * args.images)
    pipes = {s: build(rec, root, s, batch=args.batch, size=args.size)
             for s in args.stages.split(",")}

    def loader(p):
        def make():
            while True:
                yield p.run()
        return make

    rows: dict[str, list[float]] = {s: [] for s in pipes}
    for r in range(args.rounds):
        for s, p in pipes.items():
            _, cpu_ms = time_loader(loader(p), args.batch, args.warmup, args.batches)
            rows[s].append(cpu_ms)
            print(f"round {r}: {s}: {cpu_ms:.2f} CPU ms/image", flush=True)
    medians = {s: statistics.median(v) for s, v in rows.items()}
    for s, m in medians.items():
        print(f"{s}: median {m:.2f} CPU ms/image")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "benchmark": "benchmarks/lsj_stages.py " + " ".join(argv or sys.argv[1:]),
            "date": today(), "machine": machine(), "versions": versions(),
            "clock": "CPU ms per image of this process (psutil), DALI num_threads=2",
            "config": {k: v for k, v in vars(args).items() if k != "out"} | {"jpeg": list(HW)},
            "cpu_ms": rows, "median_cpu_ms": medians}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
