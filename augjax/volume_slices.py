"""The front end of :class:`augjax.Volumes` for every step that is not a volume op (2D ops,
chains, policies): the volume's slices along D are the frames of a clip, run through
:mod:`augjax.clips` (one draw per volume, ``per_frame=True`` one per slice; masks follow, 3D
keypoints are the volume ops' own)."""

from __future__ import annotations

from typing import Any

import augjax.clips as clips
from augjax._core.declaration import FHWC
from augjax.errors import InputError

__all__ = ["apply_slices", "call_volumes", "sample_slices"]

#: The slices of a volume batch run as the frames of clips in this layout.
SLICES = FHWC

def _slice_targets(name: str, targets: dict[str, Any]) -> dict[str, Any]:
    if "keypoints" in targets:
        raise InputError(f"{name}: 3D keypoints follow the volume ops (augjax.volume_ops); a "
                         f"2D step runs per slice and takes masks only", op=name,
                         argument="keypoints")
    return targets


def call_volumes(step: Any, inputs: tuple[Any, ...], *, key: Any, seeds: Any, seed: Any,
                 device: Any, layout: str, per_frame: bool, targets: dict[str, Any]) -> Any:
    """A step (2D: an op, chain, policy) on volumes: per slice along D, one draw per volume
    (``per_frame=True``: per slice), through :func:`augjax.clips.call_clips`."""
    del layout
    return clips.call_clips(step, inputs, key=key, layout=SLICES, per_frame=per_frame,
                            targets=_slice_targets(step.name, targets), seeds=seeds, seed=seed,
                            device=device)


def sample_slices(step: Any, inputs: tuple[Any, ...], *, key: Any, layout: str, per_frame: bool,
                  targets: dict[str, Any]) -> Any:
    """What :func:`call_volumes` draws (:func:`augjax.clips.sample_clips`)."""
    del layout, targets
    return clips.sample_clips(step, inputs, key=key, layout=SLICES, per_frame=per_frame)


def apply_slices(step: Any, inputs: tuple[Any, ...], *, params: Any, layout: str,
                 per_frame: bool, targets: dict[str, Any]) -> Any:
    """:func:`call_volumes` with given params (:func:`augjax.clips.apply_clips`)."""
    del layout
    return clips.apply_clips(step, inputs, params=params, layout=SLICES, per_frame=per_frame,
                             targets=_slice_targets(step.name, targets))
