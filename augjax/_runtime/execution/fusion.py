"""Where a chain's program keeps a step's output in memory: what each step does with the
image (:func:`step_kind`, read from its trace) and whether the next step reads it fused
(:func:`fused_with`, per backend). :func:`augjax._runtime.execution.lowering.apply_params` places
the boundaries (:func:`augjax.kernels.boundary.materialize`) where this says so."""

from __future__ import annotations

import functools
from typing import Any

import jax

from augjax._core.step import Step
from augjax.kernels.boundary import (
    CROP,
    MOVE,
    MOVE_TWICE,
    OTHER,
    POINTWISE,
    image_kind,
    image_kind_and_work,
)
from augjax.kernels.platform import only_platform

__all__ = ["HEAVY", "WIDENING", "backend", "fused_with", "kept_before_batch", "step_kind"]


#: What a step is, for the fusion boundary after it (:func:`augjax.kernels.boundary.image_kind`):
#: one that only moves or selects elements (flips, crops, erasing), a pointwise one that widens
#: its values (its output has more bytes per value than its input, normalize's uint8 -> float32:
#: recomputed from its input by a consumer for less than writing and reading it back), another
#: pointwise one, or any other.
WIDENING = "widening"
#: On a GPU, an OTHER step that stacks its output's channels from planes computed with at least
#: :data:`HEAVY_OPERATIONS` primitives (:func:`augjax.kernels.boundary.channel_work`): XLA:GPU
#: fused hue (109) into a crop's slice, whose loop computes each output value on its own, so
#: the whole RGB -> HSV -> RGB of a pixel ran once for each of its three channels (hue +
#: center_crop 1.24-1.57x the two ops alone, H100, B=256, 2026-12-05; hue alone writes the
#: channels from planes it keeps). Fusing the other steps into a crop paid (saturation +
#: center_crop 0.48x, gaussian_blur 0.83x, rotate 0.51x). Everywhere else it is an OTHER step.
HEAVY = "heavy"
HEAVY_OPERATIONS = 80


def backend() -> str:
    """The backend whose rules place the boundaries: JAX's default (the one a chain compiles
    for)."""
    return jax.default_backend()


def step_kind(step: Step, hwc: jax.Array, params: Any) -> str:
    """The step's kind on ``hwc`` (traced or abstract) with ``params``; OTHER without tracing
    on a backend that keeps no boundary (neither a CPU nor a GPU)."""
    if backend() not in ("cpu", "gpu"):
        return OTHER
    leaves, tree = jax.tree_util.tree_flatten(params)
    kind_of = kind_of_step.__wrapped__ if hasattr(step, "skeleton") else kind_of_step  # traced values
    return kind_of(step, (hwc.shape, hwc.dtype), tree, tuple((v.shape, v.dtype) for v in leaves),
                   backend())


@functools.lru_cache(maxsize=1024)
def kind_of_step(step: Any, image: tuple[Any, Any], tree: Any, leaves: tuple[Any, ...],
                 on: str = "cpu") -> str:
    """The kind of ``step`` on an image of ``image`` (shape, dtype) with params of ``tree``
    and ``leaves`` (shapes, dtypes), as a program for the backend ``on`` computes it (its
    platform's branches only: the others' would read as control flow); on a GPU, an OTHER step
    that stacks its channels from much work is :data:`HEAVY`."""
    hwc = jax.ShapeDtypeStruct(*image)
    params = jax.tree_util.tree_unflatten(tree, [jax.ShapeDtypeStruct(*v) for v in leaves])
    with only_platform("cuda" if on == "gpu" else on):
        if on == "gpu":  # the channels' work read from the same trace
            kind, work = image_kind_and_work(jax.vmap(step.run), hwc, params)
            if kind == OTHER:
                return HEAVY if work >= HEAVY_OPERATIONS else OTHER
        else:
            kind = image_kind(jax.vmap(step.run), hwc, params)
    if kind != POINTWISE:
        return kind
    out = jax.eval_shape(jax.vmap(step.run), hwc, params)
    return WIDENING if out.dtype.itemsize > hwc.dtype.itemsize else POINTWISE


def fused_with(before: str | None, kind: str) -> bool:
    """Whether a step of ``kind`` reads the step ``before`` fused (no boundary between them).
    On a GPU (:data:`GPU_KEPT`): fused unless a step of kind OTHER (a resample, or a colour op
    that mixes a pixel's channels) reads an OTHER or POINTWISE one, or a crop reads a
    :data:`HEAVY` one. On a CPU, as measured on a
    2-core CPU (``benchmarks/compose.py``, ratios to the two ops alone):
    after a widening pointwise step (normalize: cheaper to recompute than to write as float32
    and read back); a pointwise or widening step after a pointwise one; after a step that only
    moves elements (flip, crops, erasing), a widening step or one that moves elements once
    (kept in memory, the flip's output cost its write and read back: vflip + normalize 1.26x,
    flip + random_erasing 1.22x; fused 0.92x, 0.96x); after a crop, any moving step (crop +
    flip 0.46-0.58x); after a flip, a flip (kept, the first flip's output was allocated for
    each call and faulted in page by page, 768 pages at B=16: flip + vflip 1.14-1.41x; fused
    0.52-0.60x at B=16, 0.49x at B=256). Not a flip after erasing (read twice: erasing + vflip
    1.70-2.3x fused), nor a pointwise step after another kind (XLA:CPU fused rotate's resample
    into brightness at 2x, random erasing and brightness at 2.6x, vflip and brightness at
    1.26-1.35x where kept was 1.06-1.12x, B=16)."""
    if backend() == "gpu":
        return not ((kind in (OTHER, HEAVY) and before in GPU_KEPT)
                    or (kind == CROP and before == HEAVY))
    moving = (CROP, MOVE, MOVE_TWICE)
    return (before == WIDENING or (before == POINTWISE and kind in (POINTWISE, WIDENING))
            or (before == CROP and kind in (*moving, WIDENING))
            or (before in (MOVE, MOVE_TWICE) and kind in (CROP, MOVE, WIDENING))
            or (before == MOVE_TWICE and kind == MOVE_TWICE))


#: On a GPU, the kinds of step whose output is kept in memory before a resampling step or a
#: batch-level one reads it. XLA:GPU fuses a producer into each read: into a resample's taps
#: (four for bilinear) or into both images a mixing step reads. A resample or a pointwise step
#: (hue: ~40 operations a pixel) computed again for each tap cost more than its write and read
#: back (H200, B=256: affine + rotate 1.81x, hue + affine 1.55x, random_resized_crop + rotate
#: 1.25x the two ops alone, unbounded); a move or a crop is cheaper to fuse (crop + rotate
#: 0.79x, normalize + rotate 0.75x). A step that mixes a pixel's channels (hue, saturation,
#: grayscale) reads as OTHER too, so two of them are kept apart: hue + saturation 0.92x the
#: two ops alone (H100, B=256, 2026-12-05; no kept pair over 0.94x there).
GPU_KEPT = (OTHER, HEAVY, POINTWISE)


def kept_before_batch(before: str | None) -> bool:
    """Whether the output of the step ``before`` (its kind; None: no step) is kept in memory
    before a batch-level step reads it: on a GPU after a :data:`GPU_KEPT` step, on a CPU after
    any but a widening one."""
    if before is None:
        return False
    if backend() == "gpu":
        return before in GPU_KEPT
    return before != WIDENING
