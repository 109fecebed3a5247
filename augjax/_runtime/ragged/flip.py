"""A flip right after a chain's ragged prefix, folded into the list's read
(:func:`augjax._runtime.ragged.read.read_list`): each sample's flip is drawn as the chain would
draw it (``fold_in(sample_key, position)``, the same ``draw``), the read mirrors its output as it
writes it (its taps' rows reversed, :func:`augjax.kernels.window.flip_taps`: each pixel the same
sum, the same bits) and boxes and keypoints move through the flip's own stage
(:func:`augjax._runtime.targets.follow.follow_targets`, as the chain's program moves them). The
chain then goes on after the flip: one program less per call (the flip read the whole batch again,
~0.12 CPU-ms per 320^2 image of ~1.2 on 2 shared cores, 2026-12-05)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from augjax._core.meta import Meta
from augjax._runtime.execution.program import build_program, once_cache
from augjax._runtime.targets.inputs import prepare_targets
from augjax._runtime.targets.follow import follow_targets

__all__ = ["draw_flips", "flip_after", "flip_targets"]


def flip_after(steps: tuple[Any, ...], n: int, keys: Any) -> Any:
    """The step after the ragged prefix (``steps[n]``) when it is the catalog's ``flip`` drawn
    per sample (keys given), else None."""
    if keys is None or len(steps) <= n:
        return None
    return steps[n] if steps[n].name == CATALOG_FLIP and steps[n].level == "sample" else None


#: The catalog's ``flip``, by its name (the Step protocol's; augjax's own ops are never
#: shadowed by a pack's, and composites and policies go by other names): the runtime sits
#: below the catalog and imports none of it (tests/core/test_layers.py).
CATALOG_FLIP = "flip"


@once_cache(maxsize=64)
def _draw_program(step: Any, position: int, out: tuple[int, int], channels: int, dtype: str):
    meta = Meta(out[0], out[1], channels, dtype)

    def program(keys):
        return jax.vmap(lambda k: step.draw(jax.random.fold_in(k, position), meta))(keys)

    return build_program("sample", program, "ragged_flip_sample", (step,), kept=False)


def draw_flips(step: Any, position: int, keys: Any, out: tuple[int, int], channels: int,
               dtype: str) -> tuple[Any, np.ndarray]:
    """``(params, flip)``: the flip's params as the chain draws them for its ``position`` (a
    dict of ``(N,)`` bools) and as the read takes them, bools ``(N, 2)`` (top-bottom,
    left-right)."""
    params = _draw_program(step, position, tuple(out), channels, dtype)(keys)
    flip = np.stack([np.asarray(params["vertical"]), np.asarray(params["horizontal"])], 1)
    return params, flip


@once_cache(maxsize=64)
def _targets_program(step: Any, spec: Any, shape: tuple[int, ...], dtype: str):
    def program(params, *arrays):
        return follow_targets((step,), (params,), spec, arrays, shape, dtype, step.name)

    return build_program("apply", program, "ragged_flip_targets", (step,), kept=False)


def flip_targets(step: Any, params: Any, moved: dict[str, Any], shape: tuple[int, ...],
                 dtype: str, name: str) -> dict[str, Any]:
    """The boxes and keypoints among ``moved`` (a list's targets after its prefix, at the
    output ``shape`` ``(N, H, W, C)``) through the flip with ``params``: the chain's stage for
    them (:func:`augjax._runtime.targets.follow.follow_targets`); ``name``: the call's, for
    errors."""
    points = {k: v for k, v in moved.items() if k not in ("masks", "mask_fill")}
    if not points:
        return moved
    spec, arrays = prepare_targets(name, points, shape[0], shape[1], shape[2], concrete=True)
    out = _targets_program(step, spec, tuple(shape), dtype)(params, *arrays)
    return {**moved, **dict(zip(spec.outputs, out))}
