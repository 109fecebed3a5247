"""The demo's DALI pipelines: ``fn.readers.file`` -> ``fn.decoders.image`` (``"cpu"``, or
``"mixed"`` on the GPU) -> ``fn.resize`` + ``fn.crop`` to a fixed square -> the row's augjax ops
(one op, or a chain fused by ``augjax.compose`` into one operator).

One pipeline per row, so that an op that fails cannot take the others down; each pipeline runs
``draws`` iterations over the same batch, and its RNG (seeded by the demo seed) gives every
iteration and every sample its own draw. A row whose op reads instance masks (``copy_paste``:
``sample_targets`` holds ``"masks"``) gets :func:`instance_masks` as ``masks=``: two drawn
instances per image, so that it pastes instances, not whole images.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from augjax.errors import BackendUnavailableError

__all__ = ["PipelineConfig", "RowOutput", "instance_masks", "run_pipeline"]


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """What every demo pipeline shares."""

    file_root: Path
    file_list: Path
    batch: int
    size: int
    device: str
    seed: int
    draws: int


@dataclasses.dataclass
class RowOutput:
    """What one pipeline produced: per draw, the images (and labels), plus timings."""

    images: list[np.ndarray]
    labels: list[np.ndarray]
    layout: str
    build_s: float
    first_s: float
    next_s: list[float]
    adapted: list[str]


def _dali():
    try:
        from nvidia.dali import fn, pipeline_def, types
    except ImportError:  # pragma: no cover - DALI is in the test environment
        raise BackendUnavailableError(
            "augjax demo runs a DALI pipeline and needs NVIDIA DALI with its JAX plugin: "
            "pip install 'augjax[dali]' (CPU or CUDA 12) or 'augjax[cuda12]'"
        ) from None
    return fn, pipeline_def, types


def _host(t: Any) -> Any:
    """A DALI TensorList on the host (GPU outputs are copied)."""
    return t.as_cpu() if type(t).__name__ == "TensorListGPU" else t


def _adapt(fn, types, x: Any, spec: Any, state: dict[str, Any], adapted: list[str]) -> Any:
    """Converts ``x`` to a dtype, layout and channel count ``spec`` accepts (noted in
    ``adapted``); ``state`` tracks what ``x`` is: dtype, layout, channels."""
    if spec.channels is not None and state["channels"] not in spec.channels:
        if 1 in spec.channels and state["channels"] == 3 and state["layout"] == "HWC" \
                and state["dtype"] == "uint8":
            x = fn.color_space_conversion(x, image_type=types.RGB, output_type=types.GRAY)
            state["channels"] = 1
            adapted.append(f"{spec.name}: input converted RGB -> gray")
    if state["dtype"] not in spec.dtypes:
        if state["dtype"] == "uint8" and "float32" in spec.dtypes:
            x = fn.cast(x, dtype=types.FLOAT) * (1.0 / 255.0)
            state["dtype"] = "float32"
            adapted.append(f"{spec.name}: input converted uint8 -> float32 in [0, 1]")
        elif state["dtype"] == "float32" and "uint8" in spec.dtypes:
            x = fn.cast(fn.clamp(x * 255.0 + 0.5, lo=0.0, hi=255.0), dtype=types.UINT8)
            state["dtype"] = "uint8"
            adapted.append(f"{spec.name}: input converted float32 -> uint8 (x255)")
    if state["layout"] not in spec.layouts:
        perm = [2, 0, 1] if state["layout"] == "HWC" else [1, 2, 0]
        new = "CHW" if state["layout"] == "HWC" else "HWC"
        x = fn.transpose(x, perm=perm, output_layout=new)
        state["layout"] = new
        adapted.append(f"{spec.name}: input transposed to {new}")
    return x


def instance_masks(height: int, width: int | None = None) -> np.ndarray:
    """Two instances on a ``height`` x ``width`` image (square by default), ``(height, width,
    2)`` uint8 (channel ``m`` is 1 inside instance ``m``): a disc at the upper left and a box
    at the lower right, in fractions of the image's sides."""
    width = height if width is None else width
    yy, xx = np.mgrid[0:height, 0:width] + 0.5
    yy, xx = yy / height, xx / width
    disc = (xx - 0.32) ** 2 + (yy - 0.36) ** 2 < 0.2 ** 2
    box = (xx > 0.55) & (xx < 0.9) & (yy > 0.5) & (yy < 0.88)
    return np.stack([disc, box], axis=-1).astype(np.uint8)


def _needs_instances(steps: list[Any]) -> bool:
    """Whether an op of the row draws from instance masks (``copy_paste``)."""
    return any("masks" in step.spec.sample_targets for step in steps)


class _Single:
    """One bound op with the call interface of a chain (``inputs``, ``__call__``)."""

    def __init__(self, step: Any) -> None:
        self.step, self.inputs = step, step.spec.inputs

    def __call__(self, *inputs: Any, layout: str, **targets: Any) -> Any:
        return self.step(*inputs, layout=layout, **targets)


def _fused(steps: list[Any]) -> Any:
    """The row's ops as one DALI operator: the op itself, or ``augjax.compose`` of a chain
    (one fused ``jax_function``, as users run chains)."""
    if len(steps) == 1:
        return _Single(steps[0])
    from augjax.chain import compose

    return compose(*steps)


def run_pipeline(cfg: PipelineConfig, steps: list[Any] | None) -> RowOutput:
    """Builds and runs the pipeline of one row (``steps``: BoundOps, or None for the originals).

    Raises:
        whatever DALI or the ops raise; the caller reports it.
    """
    fn, pipeline_def, types = _dali()
    gpu = cfg.device == "gpu"
    adapted: list[str] = []
    state = {"dtype": "uint8", "layout": "HWC", "channels": 3}
    masks = instance_masks(cfg.size) if steps and _needs_instances(steps) else None
    if masks is not None:
        adapted.append("masks=: 2 instances per image (a disc, a box)")

    @pipeline_def(batch_size=cfg.batch, num_threads=2, device_id=0 if gpu else None,
                  seed=cfg.seed, prefetch_queue_depth=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(cfg.file_root), file_list=str(cfg.file_list),
                                        random_shuffle=False, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB)
        images = fn.resize(images, size=[cfg.size, cfg.size], mode="not_smaller", antialias=True)
        images = fn.crop(images, crop=(cfg.size, cfg.size))
        x, y = images, labels
        if steps:
            x = _adapt(fn, types, x, steps[0].spec, state, adapted)
            op = _fused(steps)
            targets = {} if masks is None else {"masks": types.Constant(
                masks, layout="HWC", device="gpu" if gpu else "cpu")}
            if "labels" in op.inputs:
                out = op(x, y, layout=state["layout"], **targets)
                x, y = (out["images"], out["labels"]) if isinstance(out, dict) else out
            else:
                out = op(x, layout=state["layout"], **targets)
                x = out["images"] if isinstance(out, dict) else \
                    out[0] if isinstance(out, tuple) else out
            for step in steps:
                state["layout"] = step.spec.layout_after(state["layout"], step.kwargs)
        return x, y

    t0 = time.perf_counter()
    p = pipe()
    p.build()
    t1 = time.perf_counter()
    images, labels, times = [], [], []
    try:
        for _ in range(cfg.draws):
            t = time.perf_counter()
            out_x, out_y = (_host(t) for t in p.run())
            images.append(np.array(out_x.as_tensor()))
            labels.append(np.array(out_y.as_tensor()))
            times.append(time.perf_counter() - t)
        layout = out_x.layout() or state["layout"]
    finally:
        del p
    return RowOutput(images=images, labels=labels, layout=layout, build_s=t1 - t0,
                     first_s=times[0], next_s=times[1:], adapted=adapted)
