"""The Step contract: what the runtime asks of everything it runs (a configured op,
``BoundOp``; a composite: chains, ``random_apply``, the policies), declared once as the
:class:`Step` protocol, and :class:`BaseStep`, the public batch calls and defaults both kinds
share.

A step answers four questions, and the runtime asks nothing else (tests/core/test_steps.py):

- *structure*: what it takes (``inputs``, ``level``, ``layouts``, ``dtypes``, ``channels``)
  and what it makes of one sample's :class:`Structure` (``after``: size, channels, dtype,
  layout), and how targets follow it (``geometric``, ``follow``);
- *randomness*: ``random``, ``draw(key, meta) -> params`` (``sample_targets``: what its sampler
  reads);
- *application*: ``run(image, params)`` on one HWC image (``run_batch`` for batch-level ops),
  ``run_masks``;
- *geometry*: ``matrix(params, meta)`` and ``stages(params, meta)`` for boxes and keypoints.

The public calls (``step(...)``, ``step.sample``, ``step.apply``) go to the runtime, a higher
layer: the package hands their implementation down with :func:`install_calls` (``_core``
imports nothing above it). Importing this module imports no JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from augjax.errors import InputError

__all__ = ["CALL_KEYWORDS", "BaseStep", "Step", "Structure", "install_calls", "step_call"]

#: Keywords of a call that are not op parameters (declared once: ops reserve these names).
CALL_KEYWORDS = frozenset({"key", "seeds", "seed", "device", "layout", "per_frame", "output"})


class Structure(NamedTuple):
    """What a step sees of one sample before any pixel is read: an image of ``height`` x
    ``width`` with ``channels`` channels of ``dtype`` (a NumPy dtype name), in a batch laid out
    as ``layout`` (``"HWC"`` or ``"CHW"``)."""

    height: int
    width: int
    channels: int
    dtype: str
    layout: str = "HWC"

    @property
    def shape(self) -> tuple[int, int, int]:
        """One image's HWC shape."""
        return (self.height, self.width, self.channels)


@runtime_checkable
class Step(Protocol):
    """What the runtime runs. ``BoundOp`` and every composite implement it; the runtime reads
    these members and nothing else of a step."""

    # -- structure -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The step's name in messages."""

    @property
    def inputs(self) -> tuple[str, ...]:
        """The positional inputs a call takes: ``("images",)`` or ``("images", "labels")``."""

    @property
    def outputs(self) -> tuple[str, ...]:
        """What a call returns."""

    @property
    def level(self) -> str:
        """``"sample"`` (runs on one image, vmapped) or ``"batch"`` (mixes the batch)."""

    @property
    def layouts(self) -> tuple[str, ...]:
        """The layouts the step takes."""

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The image dtypes the step takes."""

    @property
    def channels(self) -> tuple[int, ...] | None:
        """The channel counts the step takes (None: any)."""

    @property
    def compute_bound(self) -> bool:
        """Much arithmetic per pixel (the CPU runs such steps in cache-sized chunks)."""

    def after(self, structure: Structure) -> Structure:
        """What the step makes of one sample of ``structure``.

        Raises:
            InputError: the step cannot act on such a sample (alternatives that disagree)."""

    @property
    def ragged(self) -> bool:
        """Whether the step takes images of different sizes (as a chain's first step)."""

    def window(self, params: Any, height: Any, width: Any) -> Any:
        """How the step reads one image of its true (traced) size (a ``Window``)."""

    # -- randomness ----------------------------------------------------------------------
    @property
    def random(self) -> bool:
        """Whether the step draws anything (a call then needs a key)."""

    @property
    def sample_targets(self) -> tuple[str, ...]:
        """The targets its sampler reads (``("boxes",)``), empty for most steps."""

    def draw(self, key: Any, meta: Any) -> Any:
        """One sample's params (the batch's for batch-level steps); traced. An op also takes
        ``overrides`` (a policy's values) and ``targets`` (for ``sample_targets``)."""

    # -- application ---------------------------------------------------------------------
    @property
    def kwargs(self) -> dict[str, Any]:
        """The step's configured parameter values (empty for composites)."""

    @property
    def declared(self) -> Mapping[str, Any]:
        """The step's declared parameters (``Param`` by name; empty for composites)."""

    def run(self, image: Any, params: Any) -> Any:
        """The step on one HWC image with its params; deterministic."""

    def run_checked(self, image: Any, params: Any, where: str) -> Any:
        """:meth:`run` as an element of a composite (``where`` names it in messages), checking
        what it takes and gives."""

    def run_batch(self, inputs: tuple[Any, ...], params: Any) -> Any:
        """A batch-level step on ``(images[, labels])`` with the batch's params."""

    @property
    def pads_exactly(self) -> bool:
        """Whether a batch padded with copies gives its real samples the same bits."""

    # -- geometry and targets ------------------------------------------------------------
    @property
    def geometric(self) -> bool:
        """Whether the step may move pixels."""

    @property
    def follow(self) -> Any:
        """How targets follow a batch-level step (an ``augjax.Follow``)."""

    def matrix(self, params: Any, meta: Any) -> Any:
        """One sample's forward 3x3 matrix."""

    def stages(self, params: Any, meta: Any) -> tuple[tuple[Any, tuple[int, int]], ...]:
        """One sample's geometry for boxes and keypoints, stage by stage."""

    def run_masks(self, mask: Any, params: Any) -> Any:
        """The step on one encoded mask."""

    # -- as a config ---------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """The type of the step's config node (``"op"``, ``"compose"``, ``"rand_augment"``)."""

    def to_config(self) -> dict[str, Any]:
        """The step's config node without ``type`` (``augjax.to_dict``; values as they are,
        child steps already encoded)."""

    # -- as a program --------------------------------------------------------------------
    @property
    def chained(self) -> bool:
        """Whether the params are one pytree per step the step holds (a chain)."""

    def elements(self) -> tuple[Any, ...]:
        """The steps inside this one."""

    def program(self) -> tuple[tuple[Any, ...], int]:
        """The steps a call runs, and the chain position of the first."""


# -- the calls the package hands down -----------------------------------------------------------
_LOADER: list[Callable[[], Mapping[str, Callable[..., Any]]]] = []
_CALLS: dict[str, Callable[..., Any]] = {}


def install_calls(loader: Callable[[], Mapping[str, Callable[..., Any]]]) -> None:
    """Hands down what steps call above this layer: ``loader()`` (run on the first call)
    returns ``{"call", "sample", "apply", "bind", "dali"}`` functions (see ``augjax/__init__``)."""
    _LOADER[:] = [loader]
    _CALLS.clear()


def step_call(name: str) -> Callable[..., Any]:
    """The installed implementation of ``name`` (see :func:`install_calls`)."""
    fn = _CALLS.get(name)
    if fn is None:
        if not _LOADER:
            raise RuntimeError("augjax: no runtime is installed (import augjax first)")
        _CALLS.update(_LOADER[0]())
        fn = _CALLS[name]
    return fn


class BaseStep:
    """The public batch calls and the defaults ``BoundOp`` and composites share."""

    #: Whether the step's params are one pytree per step it holds (a chain) or its own.
    chained = False

    # -- structure ---------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[str, ...]:
        """The positional inputs a call takes."""
        return ("images",)

    @property
    def outputs(self) -> tuple[str, ...]:
        """What a call returns."""
        return ("images",)

    def elements(self) -> tuple[Any, ...]:
        """The steps inside this one (empty for ops and policies)."""
        return ()

    def program(self) -> tuple[tuple[Any, ...], int]:
        """The steps a call runs, and the chain position of the first."""
        return (self,), 0

    # -- public batch calls ------------------------------------------------------------------
    def __call__(self, *inputs: Any, key: Any = None, seeds: Any = None, seed: int | None = None,
                 device: str | None = None, layout: str = "HWC", per_frame: bool = False,
                 output: str | None = None, **targets: Any) -> Any:
        """Applies the step.

        Args:
            *inputs: ``images`` (and ``labels`` for steps that mix labels): ``jax.Array`` /
                NumPy batches, DALI dynamic-mode ``Batch`` objects (:mod:`augjax.dali.dynamic`),
                or DALI ``DataNode`` values inside a ``@pipeline_def``.
            key: arrays only: a ``jax.random.key`` (split per sample) or one key per sample;
                required for random steps.
            seeds: DALI only: a ``DataNode`` of int32 ``(2,)`` seeds per sample to use instead
                of the ones augjax draws (see :func:`augjax.keys_from_seeds`); in dynamic mode
                a ``Batch`` or an ``(N, 2)`` array of them.
            seed: DALI only: seed of the DALI RNG op that draws the per-sample seeds (default:
                derived from the pipeline seed); in dynamic mode an ``ndd.random.RNG``.
            device: DALI only: ``"cpu"`` or ``"gpu"``; default: the device of ``images``.
            layout: ``"HWC"`` (default) or ``"CHW"``; ``"FHWC"`` / ``"FCHW"`` for clips
                (DALI sequences; arrays of rank 5 are clips in any case).
            per_frame: clips only (``(N, T, H, W, C)``): one draw per frame instead of one per
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
                ``(N, G, K, 2)``; see :mod:`augjax._runtime.targets`.

        Returns:
            ``images``, or ``(images, soft_labels)`` for steps that output labels; with any
            target, a dict ``{"images", "labels"?, "masks"?, "boxes"?, "boxes_valid"?,
            "boxes_count"?, "boxes_index"?, "keypoints"?, "keypoints_valid"?}``.
        """
        return step_call("call")(self, inputs, key=key, seeds=seeds, seed=seed, device=device,
                                 layout=layout, per_frame=per_frame, targets=targets,
                                 output=output)

    def sample(self, *inputs: Any, key: Any, layout: str = "HWC", per_frame: bool = False,
               **targets: Any) -> Any:
        """The values this step draws for ``inputs`` with ``key`` (arrays; only the images'
        shape and dtype matter, a shape tuple is accepted): a pytree of arrays with a leading
        axis N, exactly what ``self(*inputs, key=key)`` uses. A chain gives one per step.
        ``self.apply(*inputs, params=self.sample(*inputs, key=key))`` equals the call bitwise.
        ``targets`` (``boxes=``, ``masks=``, ...) reach the ops whose samplers read them
        (``sample_targets``, e.g. ``random_iou_crop``); pass the call's own.
        """
        return step_call("sample")(self, inputs, key=key, layout=layout, per_frame=per_frame,
                                   targets=targets)

    def apply(self, *inputs: Any, params: Any, layout: str = "HWC", per_frame: bool = False,
              **targets: Any) -> Any:
        """Applies the step with given ``params`` (from :meth:`sample`, maybe edited):
        deterministic, no key. Takes the targets a call takes; returns what a call returns."""
        return step_call("apply")(self, inputs, params=params, layout=layout,
                                  per_frame=per_frame, targets=targets)

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
        out = self.after(Structure(meta.height, meta.width, meta.channels, meta.dtype))
        return ((self.matrix(params, meta), (out.height, out.width)),)

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
