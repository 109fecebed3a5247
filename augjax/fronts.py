"""The front ends by input kind, in one table: what :mod:`augjax.calls` runs for a step's call,
``sample`` and ``apply`` once it knows the kind of the images (:mod:`augjax._core.kinds`).

torchvision v2's ``_get_kernel(fn, type(inpt))`` is the model: :func:`front` walks the kind's
type's MRO (stopping at :class:`~augjax._core.kinds.Kind`, so a subclass of a kind gets its
parent's front end, never another's) and :data:`FRONTS` holds one :class:`Front` per kind:

- :class:`~augjax._core.kinds.Images`: arrays through
  :mod:`augjax._runtime.execution.dispatch` (which finds or builds the program and runs it),
  DALI ``DataNode`` values through :func:`augjax.dali.apply_dali`;
- :class:`~augjax._core.kinds.Clips`: :mod:`augjax.clips` (arrays and DALI sequences);
- :class:`~augjax._core.kinds.Volumes`: :mod:`augjax.volume_slices` (a step per slice, as
  clips; the volume ops' own runtime is :mod:`augjax.volumes`).

Each front end takes the call's inputs with the images unwrapped (``inputs[0]`` the kind's
``array``) and the kind's ``layout``. A new kind is a type in :mod:`augjax._core.kinds` and a
row here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import augjax.clips as clips
import augjax.volume_slices as volume_slices
from augjax._core.kinds import Clips, Images, Kind, Volumes
from augjax._core.step import Params, Step
from augjax._runtime.execution import dispatch
from augjax.errors import InputError

__all__ = ["FRONTS", "Front", "front", "program_of"]


class Front(NamedTuple):
    """A kind's front end: ``call(step, inputs, *, key, seeds, seed, device, layout,
    per_frame, targets)``, ``sample(step, inputs, *, key, layout, per_frame, targets)``,
    ``apply(step, inputs, *, params, layout, per_frame, targets)``."""

    call: Callable[..., Any]
    sample: Callable[..., Params]
    apply: Callable[..., Any]


def program_of(step: Step) -> tuple[tuple[Step, ...], int]:
    """The steps a call runs and the chain position of the first; InputError when empty."""
    steps, start = step.program()
    if not steps:
        raise InputError(f"{step.name}: the chain is empty", op=step.name)
    return tuple(steps), start


def _per_frame(step: Step, images: Any, per_frame: bool) -> None:
    if per_frame:
        raise InputError(f"{step.name}: argument 'per_frame' is for clips "
                         f"(augjax.Clips: (N, T, H, W, C)), got images of shape "
                         f"{tuple(getattr(images, 'shape', ()))}", op=step.name,
                         argument="per_frame")


def _images_call(step: Step, inputs: tuple[Any, ...], *, key: Any, seeds: Any,
                 seed: int | None, device: str | None, layout: str, per_frame: bool,
                 targets: dict[str, Any]) -> Any:
    _per_frame(step, inputs[0] if inputs else None, per_frame)
    steps, start = program_of(step)
    dispatch.check_call(inputs, name=step.name, inputs_decl=step.inputs, layout=layout,
                        steps=steps)
    if dispatch.data_nodes(inputs, name=step.name):
        from augjax.dali import apply_dali  # DALI's modules load when a DataNode comes

        return apply_dali(steps, inputs, name=step.name, outputs_decl=step.outputs,
                          seeds=seeds, seed=seed, device=device, layout=layout, start=start,
                          targets=dict(targets), key=key)
    return dispatch.apply_steps(steps, inputs, name=step.name, inputs_decl=step.inputs,
                                outputs_decl=step.outputs, key=key, seeds=seeds, seed=seed,
                                device=device, layout=layout, start=start, targets=targets)


def _images_sample(step: Step, inputs: tuple[Any, ...], *, key: Any, layout: str,
                   per_frame: bool, targets: dict[str, Any]) -> Params:
    _per_frame(step, inputs[0] if inputs else None, per_frame)
    steps, start = program_of(step)
    params = dispatch.sample_steps_on(steps, inputs, name=step.name, inputs_decl=step.inputs,
                                      key=key, layout=layout, start=start, targets=targets)
    return params if step.chained else params[0]


def _images_apply(step: Step, inputs: tuple[Any, ...], *, params: Params, layout: str,
                  per_frame: bool, targets: dict[str, Any]) -> Any:
    _per_frame(step, inputs[0] if inputs else None, per_frame)
    steps, _ = program_of(step)
    return dispatch.apply_with_params(steps, inputs, params if step.chained else (params,),
                                      name=step.name, inputs_decl=step.inputs,
                                      outputs_decl=step.outputs, layout=layout,
                                      targets=targets, chained=step.chained)


def _clips_sample(step: Step, inputs: tuple[Any, ...], *, key: Any, layout: str,
                  per_frame: bool, targets: dict[str, Any]) -> Params:
    del targets  # no sampler on clips reads them (the draws are the first frames' shape's)
    return clips.sample_clips(step, inputs, key=key, layout=layout, per_frame=per_frame)


def _in_clip_terms(front: Any) -> Any:
    """``front`` (a clips front end function ``(step, inputs, *, layout, ...)``) whose
    :class:`~augjax.errors.InputError` from an op's check of the frames (which names a batch
    of images ``(N, H, W, C)`` and an image layout) gets a note in the clips' terms: their
    shape, their layout, and that each clip's frames are checked as images."""

    @functools.wraps(front)
    def noted(step: Any, inputs: tuple[Any, ...], **kwargs: Any) -> Any:
        try:
            return front(step, inputs, **kwargs)
        except InputError as err:
            shape = tuple(getattr(inputs[0], "shape", ())) if inputs else ()
            if len(shape) == 5 and "batch shape" in str(err):
                layout = clips.frame_layout(kwargs.get("layout", "FHWC"))
                err.add_note(f"{step.name}: the clips {shape} (layout F{layout}) are checked "
                             f"frame by frame, as images in layout {layout}: the batch shape "
                             f"above is one frame of each clip")
            raise

    return noted


#: One front end per kind (torchvision's ``_KERNEL_REGISTRY``, keyed by input type only: every
#: step runs on every kind).
FRONTS: dict[type[Kind], Front] = {
    Images: Front(_images_call, _images_sample, _images_apply),
    Clips: Front(*map(_in_clip_terms, (clips.call_clips, _clips_sample, clips.apply_clips))),
    Volumes: Front(volume_slices.call_volumes, volume_slices.sample_slices,
                   volume_slices.apply_slices),
}


def front(kind: Kind) -> Front:
    """The front end of ``kind``: its type's, or the nearest base kind's (an MRO walk that
    stops at :class:`~augjax._core.kinds.Kind`)."""
    for cls in type(kind).__mro__:
        if cls is Kind:
            break
        if cls in FRONTS:
            return FRONTS[cls]
    raise InputError(f"augjax: no front end for {type(kind).__name__}; the kinds are "
                     f"{', '.join('augjax.' + k.__name__ for k in FRONTS)}",
                     argument="images")
