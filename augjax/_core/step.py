"""The Step contract: what the runtime asks of everything it runs (a configured op,
``BoundOp``; a composite: chains, ``random_apply``, the policies), declared once as the
:class:`Step` protocol, and :class:`BaseStep`, the defaults both kinds share.

A step answers four questions, and the runtime asks nothing else (tests/core/test_steps.py):

- *structure*: what it takes (``inputs``, ``level``, ``layouts``, ``dtypes``, ``channels``)
  and what it makes of one sample's :class:`Structure` (``after``: size, channels, dtype,
  layout), and how targets follow it (``geometric``, ``follow``);
- *randomness*: ``random``, ``draw(key, meta) -> params`` (``sample_targets``: what its sampler
  reads);
- *application*: ``run(image, params)`` on one HWC image (``run_batch`` for batch-level ops),
  ``run_masks``;
- *geometry*: ``matrix(params, meta)`` and ``stages(params, meta)`` for boxes and keypoints.

A step here is data the runtime reads: it calls nothing above ``_core``. The public calls
(``step(...)``, ``step.sample``, ``step.apply``) are those of the classes users get, which
:mod:`augjax.calls` builds on these (its :class:`~augjax.calls.StepCalls`): the call goes
down from there. Importing this module imports no JAX.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias, runtime_checkable

from augjax.errors import InputError

if TYPE_CHECKING:
    import jax

    from augjax._core.meta import Meta, Window
    from augjax._core.param import Param
    from augjax._core.targets import Follow

__all__ = ["CALL_KEYWORDS", "BaseStep", "Params", "Step", "Structure"]

#: A step's draws: one sample's (a batch's for batch-level steps) pytree of arrays, a dict for
#: an op, one pytree per step for a chain (``chained``). JAX has no narrower type for a pytree.
Params: TypeAlias = Any

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

    def window(self, params: Params, height: jax.Array, width: jax.Array) -> Window:
        """How the step reads one image of its true (traced) size (a ``Window``)."""

    # -- randomness ----------------------------------------------------------------------
    @property
    def random(self) -> bool:
        """Whether the step draws anything (a call then needs a key)."""

    @property
    def sample_targets(self) -> tuple[str, ...]:
        """The targets its sampler reads (``("boxes",)``), empty for most steps."""

    def draw(self, key: jax.Array, meta: Meta) -> Params:
        """One sample's params (the batch's for batch-level steps); traced. An op also takes
        ``overrides`` (a policy's values) and ``targets`` (for ``sample_targets``)."""

    # -- application ---------------------------------------------------------------------
    @property
    def kwargs(self) -> dict[str, Any]:
        """The step's configured parameter values (empty for composites)."""

    @property
    def declared(self) -> Mapping[str, Param]:
        """The step's declared parameters (``Param`` by name; empty for composites)."""

    def run(self, image: jax.Array, params: Params) -> jax.Array:
        """The step on one HWC image with its params; deterministic."""

    def run_checked(self, image: jax.Array, params: Params, where: str) -> jax.Array:
        """:meth:`run` as an element of a composite (``where`` names it in messages), checking
        what it takes and gives."""

    def run_batch(self, inputs: tuple[jax.Array, ...],
                  params: Params) -> jax.Array | tuple[jax.Array, jax.Array]:
        """A batch-level step on ``(images[, labels])`` with the batch's params."""

    @property
    def pads_exactly(self) -> bool:
        """Whether a batch padded with copies gives its real samples the same bits."""

    # -- geometry and targets ------------------------------------------------------------
    @property
    def geometric(self) -> bool:
        """Whether the step may move pixels."""

    @property
    def follow(self) -> Follow:
        """How targets follow a batch-level step (an ``augjax.Follow``)."""

    def matrix(self, params: Params, meta: Meta) -> jax.Array:
        """One sample's forward 3x3 matrix."""

    def stages(self, params: Params,
               meta: Meta) -> tuple[tuple[jax.Array, tuple[int, int]], ...]:
        """One sample's geometry for boxes and keypoints, stage by stage."""

    def run_masks(self, mask: jax.Array, params: Params) -> jax.Array:
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

    def elements(self) -> tuple[Step, ...]:
        """The steps inside this one."""

    def program(self) -> tuple[tuple[Step, ...], int]:
        """The steps a call runs, and the chain position of the first."""


class BaseStep:
    """The defaults ``BoundOp`` and composites share (their public calls:
    :class:`augjax.calls.StepCalls`)."""

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

    def elements(self) -> tuple[Step, ...]:
        """The steps inside this one (empty for ops and policies)."""
        return ()

    def program(self) -> tuple[tuple[Step, ...], int]:
        """The steps a call runs, and the chain position of the first."""
        return (self,), 0

    # -- targets (masks, boxes, keypoints) ---------------------------------------------------
    @property
    def geometric(self) -> bool:
        """Whether the step may move pixels (so boxes and keypoints must follow its matrix)."""
        return any(el.geometric for el in self.elements())

    def stages(self, params: Params,
               meta: Meta) -> tuple[tuple[jax.Array, tuple[int, int]], ...]:
        """One sample's geometry for boxes and keypoints, stage by stage: ``((matrix, (height,
        width)), ...)``, each box clamped to its stage's size (torchvision moves boxes op by op).
        Default: the step's one matrix, or nothing for a step that moves no pixel."""
        if not self.geometric:
            return ()
        out = self.after(Structure(meta.height, meta.width, meta.channels, meta.dtype))
        return ((self.matrix(params, meta), (out.height, out.width)),)

    def run_masks(self, mask: jax.Array, params: Params) -> jax.Array:
        """The step on one mask, encoded as an HWC uint8 image whose last channel is 255
        inside the image (see :mod:`augjax._runtime.targets.follow`); the same sampling as the
        image, nearest, and zero where pixels come from outside. Steps that move no pixel return it
        unchanged.

        Raises:
            InputError: the step moves pixels in a way masks cannot follow.
        """
        if not self.geometric:
            return mask
        raise InputError(f"{self.name}: masks cannot follow this step (it moves pixels and "
                         f"declares no mask rule)", op=self.name, argument="masks")
