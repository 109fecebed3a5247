"""What a step's public calls run (``step(...)``, ``step.sample``, ``step.apply``): clips go to
:mod:`augjax.clips`, batches to the runtime, DataNodes on to :mod:`augjax.dali`; DALI
dynamic-mode batches come in and go out through :func:`augjax.dali.dynamic.adapt`.

``_core`` declares the calls and the runtime runs them, but both sit below clips and DALI; the
package hands these functions down (:func:`augjax._core.step.install_calls`, in
``augjax/__init__``), so no import points up a layer (tests/core/test_layers.py).
"""

from __future__ import annotations

from typing import Any

# Modules, not names: a call reads ``dispatch.apply_steps`` (and the others) when it runs.
import augjax.clips as clips
from augjax.dali import dynamic
from augjax._runtime import dispatch
from augjax._runtime.bound import bound
from augjax._runtime.lowering import final_layout
from augjax.errors import AugjaxError, InputError

__all__ = ["CALLS", "apply_step", "call_step", "sample_step"]


def _are_clips(inputs: tuple[Any, ...], per_frame: bool, name: str,
               layout: str = "HWC") -> bool:
    """Whether a call's images are clips: an array of rank 5, or a layout ``"FHWC"`` /
    ``"FCHW"`` (DALI sequences) (:mod:`augjax.clips`).

    Raises:
        InputError: ``per_frame`` given for images that are not clips.
    """
    images = inputs[0] if inputs else None
    clips = layout in ("FHWC", "FCHW") or (
        hasattr(images, "ndim") and getattr(images, "ndim", 0) == 5
        and not type(images).__module__.startswith("nvidia.dali"))
    if per_frame and not clips:
        raise InputError(f"{name}: argument 'per_frame' is for clips (N, T, H, W, C), got "
                         f"images of shape {tuple(getattr(images, 'shape', ()))}", op=name,
                         argument="per_frame")
    return clips


def _out_layout(step: Any, layout: str) -> str:
    """The layout of a call's output images (a chain may end in ``"CHW"``)."""
    frames = layout[1:] if layout in ("FHWC", "FCHW") else layout
    try:
        out = final_layout(step.program()[0], frames)
    except AugjaxError:  # the call itself names what is wrong
        return layout
    return out if frames == layout else "F" + out


def _program(step: Any) -> tuple[tuple[Any, ...], int]:
    steps, start = step.program()
    if not steps:
        raise InputError(f"{step.name}: the chain is empty", op=step.name)
    return steps, start


def call_step(step: Any, inputs: tuple[Any, ...], *, key: Any, seeds: Any, seed: int | None,
              device: str | None, layout: str, per_frame: bool, targets: dict[str, Any],
              output: str | None = None) -> Any:
    """``step(*inputs, ...)`` (see :meth:`augjax._core.step.BaseStep.__call__`)."""
    # DALI dynamic-mode batches (and output=) as the array path's arguments, and back
    adapted = dynamic.adapt(step.name, inputs, key=key, seeds=seeds, seed=seed, device=device,
                            layout=layout, output=output, targets=targets, random=step.random,
                            out_layout=lambda: _out_layout(step, layout))
    if adapted is not None:
        return adapted.finish(call_step(step, adapted.inputs, key=adapted.key, seeds=None,
                                        seed=None, device=None, layout=layout,
                                        per_frame=per_frame, targets=adapted.targets))
    if _are_clips(inputs, per_frame, step.name, layout):
        return clips.call_clips(step, inputs, key=key, layout=layout, per_frame=per_frame,
                          targets=targets, seeds=seeds, seed=seed, device=device)
    steps, start = _program(step)
    return dispatch.apply_steps(steps, inputs, name=step.name, inputs_decl=step.inputs,
                       outputs_decl=step.outputs, key=key, seeds=seeds, seed=seed,
                       device=device, layout=layout, start=start, targets=targets)


def sample_step(step: Any, inputs: tuple[Any, ...], *, key: Any, layout: str, per_frame: bool,
                targets: dict[str, Any]) -> Any:
    """``step.sample(*inputs, ...)`` (see :meth:`augjax._core.step.BaseStep.sample`)."""
    adapted = dynamic.adapt(step.name, inputs, layout=layout, targets=targets, output="jax")
    inputs, targets = adapted.inputs, adapted.targets
    if _are_clips(inputs, per_frame, step.name):
        return clips.sample_clips(step, inputs, key=key, layout=layout, per_frame=per_frame)
    steps, start = _program(step)
    params = dispatch.sample_steps_on(steps, inputs, name=step.name, inputs_decl=step.inputs,
                             key=key, layout=layout, start=start, targets=targets)
    return params if step.chained else params[0]


def apply_step(step: Any, inputs: tuple[Any, ...], *, params: Any, layout: str,
               per_frame: bool, targets: dict[str, Any]) -> Any:
    """``step.apply(*inputs, params=...)`` (see :meth:`augjax._core.step.BaseStep.apply`)."""
    adapted = dynamic.adapt(step.name, inputs, layout=layout, targets=targets,
                            out_layout=lambda: _out_layout(step, layout))
    if adapted is not None:
        return adapted.finish(apply_step(step, adapted.inputs, params=params, layout=layout,
                                         per_frame=per_frame, targets=adapted.targets))
    if _are_clips(inputs, per_frame, step.name):
        return clips.apply_clips(step, inputs, params=params, layout=layout, per_frame=per_frame,
                           targets=targets)
    steps, _ = _program(step)
    return dispatch.apply_with_params(steps, inputs, params if step.chained else (params,),
                             name=step.name, inputs_decl=step.inputs,
                             outputs_decl=step.outputs, layout=layout, targets=targets,
                             chained=step.chained)


def _apply_dali(*args: Any, **kwargs: Any) -> Any:
    from augjax.dali import apply_dali  # DALI's modules load when a DataNode comes

    return apply_dali(*args, **kwargs)


#: The functions ``augjax/__init__`` hands down to ``_core`` (and through it to the runtime).
CALLS = {"call": call_step, "sample": sample_step, "apply": apply_step, "bind": bound,
         "dali": _apply_dali}
