"""The Step contract: what ops (``BoundOp``) and composites (chains, ``random_apply``, policies)
share, declared once: the call keywords, the structure a step promises (output size, dtype,
layout), the per-sample params-first contract (``draw``, ``run``, ``matrix``) and the public
batch calls (``step(...)``, ``step.sample(...)``, ``step.apply(...)``). Importing it imports no
JAX (the dispatch is imported on the first call)."""

from __future__ import annotations

from typing import Any

from augjax.errors import InputError

__all__ = ["CALL_KEYWORDS", "Step"]

#: Keywords of a call that are not op parameters (declared once: ops reserve these names).
CALL_KEYWORDS = frozenset({"key", "seeds", "seed", "device", "layout", "per_frame"})


class Step:
    """Base of everything a program runs. Subclasses provide ``name``, ``spec`` (the step as
    an op declaration: level, layouts, output size / dtype / layout), ``kwargs`` and the
    per-sample contract: ``draw(key, meta) -> params``, ``run(image, params) -> image`` and
    ``matrix(params, meta) -> (3, 3)``."""

    #: Whether the step's params are one pytree per step it holds (a chain) or its own.
    chained = False

    # -- structure ---------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[str, ...]:
        """The positional inputs a call takes."""
        return tuple(self.spec.inputs)

    @property
    def outputs(self) -> tuple[str, ...]:
        """What a call returns."""
        return tuple(self.spec.outputs)

    def elements(self) -> tuple[Any, ...]:
        """The steps inside this one (empty for ops and policies)."""
        return ()

    def program(self) -> tuple[tuple[Any, ...], int]:
        """The steps a call runs, and the chain position of the first."""
        return (self,), 0

    # -- public batch calls ------------------------------------------------------------------
    def __call__(self, *inputs: Any, key: Any = None, seeds: Any = None, seed: int | None = None,
                 device: str | None = None, layout: str = "HWC", per_frame: bool = False,
                 **targets: Any) -> Any:
        """Applies the step.

        Args:
            *inputs: ``images`` (and ``labels`` for steps that mix labels): ``jax.Array`` /
                NumPy batches, or DALI ``DataNode`` values inside a ``@pipeline_def``.
            key: arrays only: a ``jax.random.key`` (split per sample) or one key per sample;
                required for random steps.
            seeds: DALI only: a ``DataNode`` of int32 ``(2,)`` seeds per sample to use instead
                of the ones augjax draws (see :func:`augjax.keys_from_seeds`).
            seed: DALI only: seed of the DALI RNG op that draws the per-sample seeds (default:
                derived from the pipeline seed).
            device: DALI only: ``"cpu"`` or ``"gpu"``; default: the device of ``images``.
            layout: ``"HWC"`` (default) or ``"CHW"``; ``"FHWC"`` / ``"FCHW"`` for clips
                (DALI sequences; arrays of rank 5 are clips in any case).
            per_frame: clips only (``(N, T, H, W, C)``): one draw per frame instead of one per
                clip (see :mod:`augjax.clips`).
            **targets: ``masks=`` ((N, H, W) or (N, H, W, K) integer masks), ``boxes=``
                ((N, M, 4) XYXY pixels), ``keypoints=`` ((N, K, 2) x, y), ``boxes_valid=`` /
                ``keypoints_valid=`` ((N, M) / (N, K) bool; boxes also (N,) counts),
                ``mask_fill=`` (int, default 0); ``boxes_format=`` (``"xyxy"``, ``"xywh"``,
                ``"cxcywh"``, an ``n`` suffix for normalised; rotated ``"xywhr"``,
                ``"cxcywhr"`` (N, M, 5), ``"xyxyxyxy"`` (N, M, 8)), ``boxes_normalized=``,
                ``sanitize=`` (:class:`augjax.Sanitize`); keypoints also grouped
                ``(N, G, K, 2)``; see :mod:`augjax._runtime.targets`.

        Returns:
            ``images``, or ``(images, soft_labels)`` for steps that output labels; with any
            target, a dict ``{"images", "labels"?, "masks"?, "boxes"?, "boxes_valid"?,
            "boxes_count"?, "boxes_index"?, "keypoints"?, "keypoints_valid"?}``.
        """
        from augjax._runtime.dispatch import apply_steps

        if _clips(inputs, per_frame, self.name, layout):
            from augjax.clips import call_clips

            return call_clips(self, inputs, key=key, layout=layout, per_frame=per_frame,
                              targets=targets, seeds=seeds, seed=seed, device=device)
        steps, start = self._steps()
        return apply_steps(steps, inputs, name=self.name, inputs_decl=self.inputs,
                           outputs_decl=self.outputs, key=key, seeds=seeds, seed=seed,
                           device=device, layout=layout, start=start, targets=targets)

    def sample(self, *inputs: Any, key: Any, layout: str = "HWC", per_frame: bool = False,
               **targets: Any) -> Any:
        """The values this step draws for ``inputs`` with ``key`` (arrays; only the images'
        shape and dtype matter, a shape tuple is accepted): a pytree of arrays with a leading
        axis N, exactly what ``self(*inputs, key=key)`` uses. A chain gives one per step.
        ``self.apply(*inputs, params=self.sample(*inputs, key=key))`` equals the call bitwise.
        ``targets`` (``boxes=``, ``masks=``, ...) reach the ops whose samplers read them
        (``sample_targets``, e.g. ``random_iou_crop``); pass the call's own.
        """
        from augjax._runtime.dispatch import sample_steps_on

        if _clips(inputs, per_frame, self.name):  # clips: see augjax.clips
            from augjax.clips import sample_clips

            return sample_clips(self, inputs, key=key, layout=layout, per_frame=per_frame)
        steps, start = self._steps()
        params = sample_steps_on(steps, inputs, name=self.name, inputs_decl=self.inputs,
                                 key=key, layout=layout, start=start, targets=targets)
        return params if self.chained else params[0]

    def apply(self, *inputs: Any, params: Any, layout: str = "HWC", per_frame: bool = False,
              **targets: Any) -> Any:
        """Applies the step with given ``params`` (from :meth:`sample`, maybe edited):
        deterministic, no key. Takes the targets a call takes; returns what a call returns."""
        from augjax._runtime.dispatch import apply_with_params

        if _clips(inputs, per_frame, self.name):  # clips: see augjax.clips
            from augjax.clips import apply_clips

            return apply_clips(self, inputs, params=params, layout=layout, per_frame=per_frame,
                               targets=targets)
        steps, _ = self._steps()
        return apply_with_params(steps, inputs, params if self.chained else (params,),
                                 name=self.name, inputs_decl=self.inputs,
                                 outputs_decl=self.outputs, layout=layout, targets=targets,
                                 chained=self.chained)

    # -- targets (masks, boxes, keypoints) ---------------------------------------------------
    @property
    def geometric(self) -> bool:
        """Whether the step may move pixels (so boxes and keypoints must follow its matrix)."""
        return any(el.geometric for el in self.elements())

    def stages(self, params: Any, meta: Any) -> tuple[tuple[Any, tuple[int, int]], ...]:
        """One sample's geometry for boxes and keypoints, stage by stage: ``((matrix, (height,
        width)), ...)``, each box clamped to its stage's size (torchvision moves boxes op by op).
        Default: the step's one matrix, or nothing for a step that moves no pixel."""
        if not self.geometric:
            return ()
        return ((self.matrix(params, meta), self.size_after(meta.height, meta.width)),)

    def run_masks(self, mask: Any, params: Any) -> Any:
        """The step on one mask, encoded as an HWC uint8 image whose last channel is 255
        inside the image (see :mod:`augjax._runtime.targets`); the same sampling as the image,
        nearest, and zero where pixels come from outside. Steps that move no pixel return it
        unchanged.

        Raises:
            InputError: the step moves pixels in a way masks cannot follow.
        """
        if not self.geometric:
            return mask
        raise InputError(f"{self.name}: masks cannot follow this step (it moves pixels and "
                         f"declares no mask rule)", op=self.name, argument="masks")

    def _steps(self) -> tuple[tuple[Any, ...], int]:
        steps, start = self.program()
        if not steps:
            raise InputError(f"{self.name}: the chain is empty", op=self.name)
        return steps, start


def _clips(inputs: tuple[Any, ...], per_frame: bool, name: str, layout: str = "HWC") -> bool:
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
