"""Samplers that read targets (``@op(..., sample_targets=("boxes",))``): which programs pass
the call's target arrays to the sampler, and the targets each such step sees (moved by the
steps before it, as the apply program moves them). Programs whose steps read no targets take
none, and draw exactly as before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.meta import Meta
from augjax._runtime.targets.follow import follow_targets
from augjax.errors import InputError

__all__ = ["draw_seeing", "sees_targets", "targets_at"]


def sees_targets(steps: Sequence[Any], targets: Any) -> Any:
    """``targets`` where a step's sampler reads targets (``sample_targets``), else None: the
    samplers of other programs take no target arrays (and stay as they were)."""
    if targets is None:
        return None
    asked = any(s.sample_targets for s in steps)
    return targets if asked else None


def draw_seeing(step: Any, pos: int, meta: Meta, keys: Any, n: int, seen: Any) -> Any:
    """The params of a step whose sampler reads targets, for the batch's ``seen`` targets (a
    dict of arrays with a leading axis N, boxes in pixel XYXY; None: the call has none, the
    sampler sees none). Rotated boxes (corners, ``(N, M, 8)``) are refused: such samplers
    read axis-aligned boxes (torchvision's ``RandomIoUCrop`` refuses them too)."""
    boxes = None if seen is None else seen.get("boxes")
    if boxes is not None and boxes.shape[-1] != 4:
        raise InputError(f"{step.name}: argument 'boxes_format' expects unrotated boxes (xyxy, "
                         f"xywh, cxcywh) for an op whose sampler reads the boxes, got rotated "
                         f"boxes", op=step.name, argument="boxes_format")
    def one(k: Any, t: Any) -> Any:
        return step.draw(None if k is None else jax.random.fold_in(k, pos), meta,
                         targets={} if t is None else t)

    if step.random and keys is not None:
        return jax.vmap(one)(keys, seen)
    if seen is not None:
        return jax.vmap(lambda t: one(None, t))(seen)
    return jax.tree_util.tree_map(lambda v: jnp.broadcast_to(v, (n,) + jnp.shape(v)),
                                  one(None, None))


def targets_at(before: Sequence[Any], params: Sequence[Any], targets: Any,
               arrays: Sequence[Any], shape: tuple[int, ...], dtype: Any) -> dict[str, Any]:
    """The batch's targets after the steps ``before`` with their ``params``: a dict with the
    names of :class:`TargetSpec` ``targets`` (boxes in pixel XYXY whatever the call's
    ``boxes_format``, with their validity)."""
    name = getattr(before[0], "name", "augjax") if before else "augjax"
    moved = follow_targets(tuple(before), tuple(params), targets, arrays, shape, dtype, name,
                           inner=True)
    return dict(zip(targets.outputs, moved))
