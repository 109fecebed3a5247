"""The demo's views and clips: two more DALI pipelines over the same photographs, each drawn
into a picture of its own next to ``demo.png``.

- **Views** (``demo-views.png``): a recipe of :mod:`augjax.recipes` (uint8 views, not
  normalized) on the photographs resized and center-cropped to ``source`` pixels, in one
  ``jax_function`` with one output per group. One row per image: the original, then each
  group's views.
- **Clips** (``demo-clips.png``): each photograph becomes a clip of ``frames`` frames (a pan from
  left to right: ``fn.crop`` at ``crop_pos_x`` 0 .. 1, stacked by ``fn.stack`` into a sequence,
  layout ``"FHWC"``), then the op (or chain ``a+b``) runs on the sequences twice with the same
  seeds: one draw per clip, and one draw per frame (``per_frame=True``). One row per clip: the
  frames, the per-clip result, the per-frame result.

Both pipelines draw their per-sample seeds with ``fn.random.uniform`` (seeded by the demo seed)
and give them to the augjax calls as ``seeds=``; the seeds are recorded in ``demo.json``, so the
pictures can be checked against the array calls with ``key=augjax.keys_from_seeds(seeds)``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from augjax._demo.params import demo_params, fmt, parse_rows
from augjax._demo.pipeline import PipelineConfig, _dali, _host
from augjax._demo.render import GridRow, render_grid, save_png
from augjax._demo.structures import views_of

__all__ = ["CLIPS_PNG", "VIEWS_PNG", "clip_step", "run_clips", "run_views", "source_size"]

VIEWS_PNG = "demo-views.png"
CLIPS_PNG = "demo-clips.png"


def source_size(size: int) -> int:
    """The side of the photographs the views are cut from: 5/4 of a global view (DINO's 224
    views from images of about 256 and more)."""
    return size + size // 4


def _seeds(fn, types):
    import augjax.dali

    return augjax.dali.sample_seeds(device="cpu")


def _read(fn, types, cfg: PipelineConfig, side: int):
    jpegs, _ = fn.readers.file(file_root=str(cfg.file_root), file_list=str(cfg.file_list),
                               random_shuffle=False, name="Reader")
    images = fn.decoders.image(jpegs, device="mixed" if cfg.device == "gpu" else "cpu",
                               output_type=types.RGB)
    return fn.resize(images, size=[side, side], mode="not_smaller", antialias=True)


def _run_once(pipe: Any) -> tuple[list[np.ndarray], float, float]:
    """Builds and runs ``pipe`` once: its outputs as arrays, the build and the run seconds."""
    t0 = time.perf_counter()
    p = pipe()
    p.build()
    t1 = time.perf_counter()
    try:
        outs = [np.array(_host(o).as_tensor()) for o in p.run()]
    finally:
        del p
    return outs, t1 - t0, time.perf_counter() - t1


def run_views(cfg: PipelineConfig, recipe: str, out_dir: Path) -> dict[str, Any]:
    """Runs ``recipe``'s views in a DALI pipeline and writes ``out_dir/demo-views.png``.

    Returns:
        The record for ``demo.json``: the recipe, the groups' shapes, the seeds, the picture's
        layout (``column_x``, ``row_y``, and per column what it shows) and timings.

    Raises:
        whatever DALI or augjax raise; the caller reports it.
    """
    fn, pipeline_def, types = _dali()
    views = views_of(recipe, cfg.size)
    side = source_size(cfg.size)

    @pipeline_def(batch_size=cfg.batch, num_threads=2, device_id=0 if cfg.device == "gpu"
                  else None, seed=cfg.seed, prefetch_queue_depth=1)
    def pipe():
        images = fn.crop(_read(fn, types, cfg, side), crop=(side, side))
        seeds = _seeds(fn, types)
        out = views(images, seeds=seeds)
        return (images, seeds, *(out[name] for name in views.names))

    (images, seeds, *groups), build_s, run_s = _run_once(pipe)
    columns = [{"image": "original"}]
    breaks = []
    for name, out in zip(views.names, groups):
        breaks.append(len(columns))
        columns += [{"group": name, "view": v} for v in range(out.shape[1])]
    rows = []
    for i in range(cfg.batch):
        cells = [images[i]] + [view for out in groups for view in out[i]]
        lines = [f"original {side} px"] + [f"{name}: {out.shape[1]} views, {out.shape[2]} px"
                                           for name, out in zip(views.names, groups)]
        rows.append(GridRow(f"image {i}", lines, cells))
    header = f"augjax.recipes.{recipe}() views in DALI, demo seed {cfg.seed}"
    canvas, layout = render_grid(rows, cell=side, groups=0, header=header, breaks=breaks)
    save_png(canvas, out_dir / VIEWS_PNG)
    return {
        "status": "ok", "recipe": recipe, "file": VIEWS_PNG, "source_size": side,
        "groups": {name: list(out.shape[1:]) for name, out in zip(views.names, groups)},
        "seeds": seeds.tolist(),
        "grid": {"width": canvas.width, "height": canvas.height, "cell": side,
                 "columns": columns, "column_x": layout["columns"], "row_y": layout["rows"]},
        "timing": {"build_s": round(build_s, 4), "first_batch_s": round(run_s, 4)},
    }


def clip_step(ops: str, size: int) -> tuple[Any, list[dict[str, Any]]]:
    """The step ``ops`` names (an op, or a chain ``a+b`` composed) with the demo's parameters
    (``p`` of a step set to 1, so that every clip shows it), and per op its parameters.

    Raises:
        DemoInputError: an unknown op, or more than one row (a pattern matching several ops).
    """
    from augjax._demo import DemoInputError
    from augjax.chain import compose
    from augjax._plugins.registry import REGISTRY

    try:
        rows = parse_rows(ops)
    except DemoInputError as err:  # parse_rows speaks of --ops
        raise DemoInputError(str(err).replace("argument --ops", "argument --clip", 1)) from None
    if len(rows) != 1:
        raise DemoInputError(f"argument --clip: expects one op or one chain a+b, got {ops!r} "
                             f"({len(rows)} ops match)")
    bound, record = [], []
    for step in rows[0].steps:
        spec = REGISTRY.get(step.name)
        if "labels" in spec.inputs:
            raise DemoInputError(f"argument --clip: {spec.name} mixes labels; the clips row "
                                 f"shows ops on images")
        given, _ = demo_params(spec, num_classes=2, size=size)
        if "p" in spec.params:
            given["p"] = 1.0
        bound.append(spec.bind(**given))
        record.append({"op": spec.name, "params": {k: fmt(v) for k, v in given.items()}})
    return (bound[0] if len(bound) == 1 else compose(*bound)), record


def run_clips(cfg: PipelineConfig, ops: str, frames: int, out_dir: Path) -> dict[str, Any]:
    """Runs ``ops`` on clips (the photographs panned across, ``frames`` frames) in a DALI
    pipeline, one draw per clip and one per frame with the same seeds, and writes
    ``out_dir/demo-clips.png``.

    Returns:
        The record for ``demo.json`` (as :func:`run_views`'s).

    Raises:
        DemoInputError: a bad ``ops``; else whatever DALI or augjax raise.
    """
    fn, pipeline_def, types = _dali()
    step, steps = clip_step(ops, cfg.size)
    side = cfg.size + cfg.size // 2
    positions = [t / (frames - 1) if frames > 1 else 0.5 for t in range(frames)]

    @pipeline_def(batch_size=cfg.batch, num_threads=2, device_id=0 if cfg.device == "gpu"
                  else None, seed=cfg.seed, prefetch_queue_depth=1)
    def pipe():
        photos = _read(fn, types, cfg, side)
        crops = [fn.crop(photos, crop=(cfg.size, cfg.size), crop_pos_x=x, crop_pos_y=0.5)
                 for x in positions]
        clips = fn.stack(*crops, axis=0, axis_name="F")
        seeds = _seeds(fn, types)
        per_clip = step(clips, seeds=seeds, layout="FHWC")
        per_frame = step(clips, seeds=seeds, layout="FHWC", per_frame=True)
        return clips, seeds, per_clip, per_frame

    (clips, seeds, per_clip, per_frame), build_s, run_s = _run_once(pipe)
    kinds = ("frames", "per_clip", "per_frame")
    columns = [{"show": kind, "frame": t} for kind in kinds for t in range(frames)]
    rows = []
    for n in range(cfg.batch):
        cells = [frame for out in (clips, per_clip, per_frame) for frame in out[n]]
        lines = [f"{frames} frames | one draw per clip | per_frame=True"]
        if n == 0:
            lines += [f"{s['op']}: " + (", ".join(f"{k}={v}" for k, v in s["params"].items())
                                        or "(defaults)") for s in steps]
        rows.append(GridRow(f"clip {n}", lines, cells))
    header = f"{ops} on clips in DALI (FHWC), demo seed {cfg.seed}"
    canvas, layout = render_grid(rows, cell=cfg.size, groups=frames, header=header)
    save_png(canvas, out_dir / CLIPS_PNG)
    return {
        "status": "ok", "ops": ops, "steps": steps, "frames": frames, "file": CLIPS_PNG,
        "seeds": seeds.tolist(),
        "grid": {"width": canvas.width, "height": canvas.height, "cell": cfg.size,
                 "columns": columns, "column_x": layout["columns"], "row_y": layout["rows"]},
        "timing": {"build_s": round(build_s, 4), "first_batch_s": round(run_s, 4)},
    }
