"""Where a chain's program keeps a step's output in memory: what each step does with the
image (:func:`step_kind`, read from its trace) and whether the next step reads it fused
(:func:`fused_with`, per backend). :func:`augjax._runtime.lowering.apply_params` places the
boundaries (:func:`augjax.kernels.boundary.materialize`) where this says so."""

from __future__ import annotations

import functools
from typing import Any

import jax

from augjax._core.step import Step
from augjax.kernels.boundary import CROP, MOVE, MOVE_TWICE, OTHER, POINTWISE, image_kind

__all__ = ["WIDENING", "fused_with", "step_kind"]


#: What a step is, for the fusion boundary after it (:func:`augjax.kernels.boundary.image_kind`):
#: one that only moves or selects elements (flips, crops, erasing), a pointwise one that widens
#: its values (its output has more bytes per value than its input, normalize's uint8 -> float32:
#: recomputed from its input by a consumer for less than writing and reading it back), another
#: pointwise one, or any other.
WIDENING = "widening"


def step_kind(step: Step, hwc: jax.Array, params: Any) -> str:
    """The step's kind on ``hwc`` (traced or abstract) with ``params``; OTHER without tracing
    where no boundary is kept (not a CPU backend: the step's branches for a GPU cost trace
    time)."""
    if jax.default_backend() != "cpu":
        return OTHER
    leaves, tree = jax.tree_util.tree_flatten(params)
    kind_of = kind_of_step.__wrapped__ if hasattr(step, "skeleton") else kind_of_step  # traced values
    return kind_of(step, (hwc.shape, hwc.dtype), tree, tuple((v.shape, v.dtype) for v in leaves))


@functools.lru_cache(maxsize=1024)
def kind_of_step(step: Any, image: tuple[Any, Any], tree: Any, leaves: tuple[Any, ...]) -> str:
    hwc = jax.ShapeDtypeStruct(*image)
    params = jax.tree_util.tree_unflatten(tree, [jax.ShapeDtypeStruct(*v) for v in leaves])
    kind = image_kind(jax.vmap(step.run), hwc, params)
    if kind != POINTWISE:
        return kind
    out = jax.eval_shape(jax.vmap(step.run), hwc, params)
    return WIDENING if out.dtype.itemsize > hwc.dtype.itemsize else POINTWISE


def fused_with(before: str | None, kind: str) -> bool:
    """Whether a step of ``kind`` reads the step ``before`` fused (no boundary between them),
    as measured on a 2-core CPU (``benchmarks/compose.py``, ratios to the two ops alone):
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
    moving = (CROP, MOVE, MOVE_TWICE)
    return (before == WIDENING or (before == POINTWISE and kind in (POINTWISE, WIDENING))
            or (before == CROP and kind in (*moving, WIDENING))
            or (before in (MOVE, MOVE_TWICE) and kind in (CROP, MOVE, WIDENING))
            or (before == MOVE_TWICE and kind == MOVE_TWICE))
