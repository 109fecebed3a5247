"""The public calls, top to bottom: what ``op(...)``, ``step(...)``, ``step.sample`` and
``step.apply`` run.

Below this layer a step is data: an op's declaration (:class:`~augjax._core.spec.OpSpec`), the
runtime's :class:`~augjax._runtime.execution.bound.BoundOp` and the composites answer the Step
contract (:mod:`augjax._core.step`) and call nothing above them. What users call is of this layer:
:class:`Op` (what ``@augjax.op`` makes; ``augjax.ops.flip``), :class:`BoundOp`
(``op.bind(...)``) and the composites, whose base takes its calls from :class:`StepCalls`.
A call goes down from here, by the kind of its input:

- DALI dynamic-mode batches (and ``output=``): in and out through
  :func:`augjax.dali.dynamic.adapt`, the call itself on arrays;
- then the kind of the images (:func:`augjax._core.kinds.kind_of`: an ``augjax.Images`` /
  ``augjax.Clips`` given, a layout that names a kind, a plain array as images; a plain array of
  rank 5 refused) picks the front end in the one table :data:`augjax.fronts.FRONTS`: images
  (arrays through :func:`augjax._runtime.execution.dispatch.apply_steps`, which finds or builds the
  program and runs it; DALI ``DataNode`` values through :func:`augjax.dali.apply_dali`), clips
  (:mod:`augjax.clips`). The program runs each step's ``draw`` and ``run``, an op's kernel there.

The images come back as the kind they came in (an ``augjax.Clips`` as an ``augjax.Clips``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

# Modules, not names: a call reads ``fronts.FRONTS`` (and the others) when it runs.
import augjax.fronts as fronts
from augjax._core import spec as _spec
from augjax._core.kinds import Kind, kind_of
from augjax._core.step import CALL_KEYWORDS, Params, Step
from augjax._core.target_kinds import rewrap_targets, unwrap_targets
from augjax._core.targets import TARGET_KEYWORDS
from augjax._plugins.registry import REGISTRY
from augjax._runtime.execution import bound as _bound
from augjax._runtime.execution.dispatch import is_data_node
from augjax._runtime.execution.lowering import final_layout
from augjax.dali import dynamic
from augjax.errors import AugjaxError, InputError

__all__ = ["BoundOp", "Op", "StepCalls", "apply_step", "call_step", "op", "sample_step"]


def _out_layout(step: Step, kind: Kind) -> str:
    """The layout of a call's output images (a chain may end in ``"CHW"``)."""
    try:
        return kind.layout_of(final_layout(step.program()[0], kind.frame_layout))
    except AugjaxError:  # the call itself names what is wrong
        return kind.layout


def _as_kind(result: Any, step: Step, kind: Kind) -> Any:
    """A call's result with its images as the kind that came in (torchvision's rule: a
    tv_tensor in, the same type out); DALI ``DataNode`` results stay nodes."""
    if is_data_node(kind.array):
        return result
    out = type(kind)(result if not isinstance(result, (tuple, dict)) else
                     (result[0] if isinstance(result, tuple) else result["images"]),
                     _out_layout(step, kind))
    if isinstance(result, tuple):
        return (out, *result[1:])
    if isinstance(result, dict):
        return {**result, "images": out}
    return out


def _per_frame(step: Step, per_frame: Any) -> bool:
    """``per_frame`` as given when it is a bool; InputError for anything else (a truthy string
    would otherwise draw per frame)."""
    if not isinstance(per_frame, (bool, np.bool_)):
        raise InputError(f"{step.name}: argument 'per_frame' expects a bool (True: one draw per "
                         f"frame of augjax.Clips), got {type(per_frame).__name__} "
                         f"{per_frame!r}", op=step.name, argument="per_frame")
    return bool(per_frame)


def _kind(step: Step, inputs: tuple[Any, ...], layout: str) -> tuple[Kind, bool, tuple]:
    """(the kind of the images, whether the caller wrapped them, the inputs unwrapped)."""
    kind, wrapped = kind_of(inputs[0] if inputs else None, layout, step.name)
    return kind, wrapped, (kind.array, *inputs[1:]) if inputs else ()


def call_step(step: Step, inputs: tuple[Any, ...], *, key: Any, seeds: Any, seed: int | None,
              device: str | None, layout: str, per_frame: bool, targets: dict[str, Any],
              output: str | None = None) -> Any:
    """``step(*inputs, ...)`` (see :meth:`StepCalls.__call__`)."""
    per_frame = _per_frame(step, per_frame)
    targets, given = unwrap_targets(step.name, targets)
    try:
        out = _call_step(step, inputs, key=key, seeds=seeds, seed=seed, device=device,
                         layout=layout, per_frame=per_frame, targets=targets, output=output)
    except AugjaxError as err:  # raised while a program traced: JAX's note is not the user's
        notes = getattr(err, "__notes__", None)
        if notes:
            notes[:] = [n for n in notes if not n.lstrip("-\n").startswith(_JAX_NOTE)]
        raise
    return rewrap_targets(out, given)


#: The note JAX adds to an error raised inside a traced function (traceback filtering).
_JAX_NOTE = "For simplicity, JAX has removed its internal frames"


def _call_step(step: Step, inputs: tuple[Any, ...], *, key: Any, seeds: Any, seed: int | None,
               device: str | None, layout: str, per_frame: bool, targets: dict[str, Any],
               output: str | None = None) -> Any:
    # DALI dynamic-mode batches (and output=) as the array path's arguments, and back
    adapted = dynamic.adapt(step.name, inputs, key=key, seeds=seeds, seed=seed, device=device,
                            layout=layout, output=output, targets=targets, random=step.random,
                            out_layout=lambda: _out_layout(
                                step, kind_of(inputs[0], layout, step.name)[0]))
    if adapted is not None:
        return adapted.finish(_call_step(step, adapted.inputs, key=adapted.key, seeds=None,
                                         seed=None, device=None, layout=layout,
                                         per_frame=per_frame, targets=adapted.targets))
    kind, wrapped, inputs = _kind(step, inputs, layout)
    result = fronts.front(kind).call(step, inputs, key=key, seeds=seeds, seed=seed,
                                     device=device, layout=kind.layout, per_frame=per_frame,
                                     targets=targets)
    return _as_kind(result, step, kind) if wrapped else result


def sample_step(step: Step, inputs: tuple[Any, ...], *, key: Any, layout: str, per_frame: bool,
                targets: dict[str, Any]) -> Params:
    """``step.sample(*inputs, ...)`` (see :meth:`StepCalls.sample`)."""
    per_frame = _per_frame(step, per_frame)
    targets, _ = unwrap_targets(step.name, targets)
    adapted = dynamic.adapt(step.name, inputs, layout=layout, targets=targets, output="jax")
    kind, _, inputs = _kind(step, adapted.inputs, layout)
    return fronts.front(kind).sample(step, inputs, key=key, layout=kind.layout,
                                     per_frame=per_frame, targets=adapted.targets)


def apply_step(step: Step, inputs: tuple[Any, ...], *, params: Params, layout: str,
               per_frame: bool, targets: dict[str, Any]) -> Any:
    """``step.apply(*inputs, params=...)`` (see :meth:`StepCalls.apply`)."""
    per_frame = _per_frame(step, per_frame)
    targets, given = unwrap_targets(step.name, targets)
    return rewrap_targets(_apply_step(step, inputs, params=params, layout=layout,
                                      per_frame=per_frame, targets=targets), given)


def _apply_step(step: Step, inputs: tuple[Any, ...], *, params: Params, layout: str,
                per_frame: bool, targets: dict[str, Any]) -> Any:
    adapted = dynamic.adapt(step.name, inputs, layout=layout, targets=targets,
                            out_layout=lambda: _out_layout(
                                step, kind_of(inputs[0], layout, step.name)[0]))
    if adapted is not None:
        return adapted.finish(_apply_step(step, adapted.inputs, params=params, layout=layout,
                                          per_frame=per_frame, targets=adapted.targets))
    kind, wrapped, inputs = _kind(step, inputs, layout)
    result = fronts.front(kind).apply(step, inputs, params=params, layout=kind.layout,
                                      per_frame=per_frame, targets=targets)
    return _as_kind(result, step, kind) if wrapped else result


class StepCalls:
    """The public batch calls of a step (a :class:`BoundOp`, a composite): ``step(...)``,
    ``step.sample``, ``step.apply``, on whatever answers the Step contract."""

    def __call__(self: Step, *inputs: Any, key: Any = None, seeds: Any = None,
                 seed: int | None = None, device: str | None = None, layout: str = "HWC",
                 per_frame: bool = False, output: str | None = None, **targets: Any) -> Any:
        """Applies the step.

        Args:
            *inputs: ``images`` (and ``labels`` for steps that mix labels): ``jax.Array`` /
                NumPy batches of rank 4 (images), an input kind (``augjax.Images(x)``,
                ``augjax.Clips(x)`` for clips (N, T, H, W, C); a plain array of rank 5 is
                refused: :class:`augjax.InputKindError`), DALI dynamic-mode ``Batch`` objects
                (:mod:`augjax.dali.dynamic`), or DALI ``DataNode`` values inside a
                ``@pipeline_def``.
            key: arrays only: a ``jax.random.key`` (split per sample) or one key per sample;
                required for random steps.
            seeds: DALI only: a ``DataNode`` of int32 ``(2,)`` seeds per sample to use instead
                of the ones augjax draws (see :func:`augjax.keys_from_seeds`); in dynamic mode
                a ``Batch`` or an ``(N, 2)`` array of them.
            seed: DALI only: seed of the DALI RNG op that draws the per-sample seeds (default:
                derived from the pipeline seed); in dynamic mode an ``ndd.random.RNG``.
            device: DALI only: ``"cpu"`` or ``"gpu"``; default: the device of ``images``.
            layout: ``"HWC"`` (default) or ``"CHW"``; ``"FHWC"`` / ``"FCHW"`` for clips
                (DALI sequences, or a plain array of rank 5); a kind given says its own.
            per_frame: clips only (``augjax.Clips``): one draw per frame instead of one per
                clip (see :mod:`augjax.clips`).
            output: ``"jax"`` (jax.Arrays) or ``"dali"`` (dynamic-mode ``Batch`` objects);
                default: the kind that came in (:mod:`augjax.dali.dynamic`).
            **targets: ``masks=`` ((N, H, W) or (N, H, W, K) integer masks), ``boxes=``
                ((N, M, 4) XYXY pixels), ``keypoints=`` ((N, K, 2) x, y), ``boxes_valid=`` /
                ``keypoints_valid=`` ((N, M) / (N, K) bool; boxes also (N,) counts),
                ``mask_fill=`` (int, default 0); ``boxes_format=`` (``"xyxy"``, ``"xywh"``,
                ``"cxcywh"``, an ``n`` suffix for normalised; rotated ``"xywhr"``,
                ``"cxcywhr"`` (N, M, 5), ``"xyxyxyxy"`` (N, M, 8)), ``boxes_normalized=``,
                ``sanitize=`` (:class:`augjax.Sanitize`); keypoints also grouped
                ``(N, G, K, 2)``; see :mod:`augjax._runtime.targets.follow`.

        Returns:
            ``images`` (as the kind that came in: an ``augjax.Clips`` for clips given so, a
            plain array for a plain array), or ``(images, soft_labels)`` for steps that output
            labels; with any target, a dict ``{"images", "labels"?, "masks"?, "boxes"?, "boxes_valid"?,
            "boxes_count"?, "boxes_index"?, "keypoints"?, "keypoints_valid"?}``.
        """
        return call_step(self, inputs, key=key, seeds=seeds, seed=seed, device=device,
                         layout=layout, per_frame=per_frame, targets=targets, output=output)

    def sample(self: Step, *inputs: Any, key: Any, layout: str = "HWC", per_frame: bool = False,
               **targets: Any) -> Params:
        """The values this step draws for ``inputs`` with ``key`` (arrays; only the images'
        shape and dtype matter, a shape tuple is accepted): a pytree of arrays with a leading
        axis N, exactly what ``self(*inputs, key=key)`` uses. A chain gives one per step.
        ``self.apply(*inputs, params=self.sample(*inputs, key=key))`` equals the call bitwise.
        ``targets`` (``boxes=``, ``masks=``, ...) reach the ops whose samplers read them
        (``sample_targets``, e.g. ``random_iou_crop``); pass the call's own.
        """
        return sample_step(self, inputs, key=key, layout=layout, per_frame=per_frame,
                           targets=targets)

    def apply(self: Step, *inputs: Any, params: Params, layout: str = "HWC",
              per_frame: bool = False, **targets: Any) -> Any:
        """Applies the step with given ``params`` (from :meth:`sample`, maybe edited):
        deterministic, no key. Takes the targets a call takes; returns what a call returns."""
        return apply_step(self, inputs, params=params, layout=layout, per_frame=per_frame,
                          targets=targets)


class BoundOp(StepCalls, _bound.BoundOp):
    """An op configured with validated parameter values, as ``op.bind(...)`` gives it: the
    runtime's :class:`augjax._runtime.execution.bound.BoundOp` (the step it runs) with the public
    calls (:class:`StepCalls`). Call it like the op; ``sample`` / ``apply`` give and replay its
    per-sample values (documented per op: ``degrees``, ``box``, ``lam``, ...)."""


class Op(_spec.OpSpec):
    """An op as users get it (``augjax.ops.flip``, what ``@augjax.op`` makes): the declaration
    (:class:`~augjax._core.spec.OpSpec`) with its calls.

    ``op(images, key=..., **params)`` runs it on a ``jax.Array`` batch; ``op(node, **params)``
    inside a ``@pipeline_def`` adds a DALI operator; ``op.bind(**params)`` configures it
    without data (for chains).
    """

    def __init__(self, *args: Any, **fields: Any) -> None:
        super().__init__(*args, **fields)
        # help(op), op.__doc__ and IPython's op? show the op's own documentation: its call
        # with its parameters and their defaults, then its doc (the class says what any op is)
        params = ", ".join(f"{k}" if p.required else f"{k}={p.default!r}"
                           for k, p in self.params.items())
        call = f"{self.name}({', '.join(self.inputs)}, *, key=None"
        call += f", {params})" if params else ")"
        object.__setattr__(self, "__doc__", f"{call}\n\n{self.doc or ''}".rstrip() + "\n")

    @classmethod
    def of(cls, spec: _spec.OpSpec) -> Op:
        """``spec`` (a declaration) as an op with its calls."""
        if isinstance(spec, cls):
            return spec
        return cls(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(_spec.OpSpec)})

    def bind(self, **params: Any) -> BoundOp:
        """Returns this op configured with ``params`` (validated now), ready to apply or chain."""
        return _bound.bound(self, params, BoundOp)

    def sample(self, *inputs: Any, key: Any, layout: str = "HWC", per_frame: bool = False,
               **params: Any) -> Params:
        """The per-sample values this op draws for ``inputs`` with ``key``: a dict of arrays
        with a leading axis N (see :meth:`StepCalls.sample`). Targets (``boxes=``, ...) are
        taken as in a call (read by a sampler with ``sample_targets``)."""
        targets = {k: params.pop(k) for k in list(params) if k in TARGET_KEYWORDS}
        return self.bind(**params).sample(*inputs, key=key, layout=layout, per_frame=per_frame,
                                          **targets)

    def apply(self, *inputs: Any, params: Params, layout: str = "HWC", per_frame: bool = False,
              **op_params: Any) -> Any:
        """Applies the op with given per-sample values ``params`` (from :meth:`sample`, maybe
        edited); deterministic (see :meth:`StepCalls.apply`). Targets (``masks=``,
        ``boxes=``, ...) are taken as in a call."""
        targets = {k: op_params.pop(k) for k in list(op_params) if k in TARGET_KEYWORDS}
        return self.bind(**op_params).apply(*inputs, params=params, layout=layout,
                                            per_frame=per_frame, **targets)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        """Applies the op; see :meth:`StepCalls.__call__` for the call keywords."""
        call = {k: kwargs.pop(k) for k in list(kwargs) if k in CALL_KEYWORDS | TARGET_KEYWORDS}
        return self.bind(**kwargs)(*inputs, **call)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled by reference (see :meth:`augjax._core.spec.OpSpec.__reduce_ex__`), else by
        its registered name."""
        if _spec.reference(self) is None and _registered(self.name) is self:
            return (_registered, (self.name,))
        return super().__reduce_ex__(protocol)


def _registered(name: str) -> Op | None:
    """The registered op ``name`` (in a worker process: its registry loads it); None when
    there is none."""
    try:
        return REGISTRY.get(name)
    except AugjaxError:
        return None


@functools.wraps(_spec.op)
def op(name: str, **options: Any) -> Callable[[Callable[..., Any]], Op]:
    declare = _spec.op(name, **options)

    def decorate(kernel: Callable[..., Any]) -> Op:
        return Op.of(declare(kernel))

    return decorate


op.__module__ = __name__
