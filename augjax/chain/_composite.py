"""Composite: the base of every step that combines ops and decides per sample (random_apply,
random_choice, some_of, nested chains, the policies).

A composite is a frozen dataclass (hashable by value, so it keys the compile caches: building
the same policy twice reuses the compiled program). It runs as ONE sample-level step of the
program, params-first like an op: :meth:`Composite.draw` gives one sample's params (its own
decisions and, nested, every element's params), :meth:`Composite.run` applies them to one
image, deterministically; augjax vmaps both over the batch. The composite picks its ops per
sample with ``lax.switch`` / ``jnp.where``; under ``vmap`` a switch on a per-sample index
becomes a select, so one compiled program serves every sample's choice.

On a batch, :meth:`Composite.sample` returns the params (a pytree with a leading axis N) and
:meth:`Composite.apply` replays them: record a batch's augmentation, inspect or edit a field,
and apply it again.

Subclasses implement :meth:`draw`, :meth:`run`, and the structure methods (:meth:`elements`,
:meth:`after`); the rest of the :class:`augjax._core.step.Step` protocol has its composite
answer here (sample level, random, every layout its ops take).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, ClassVar

import jax

from augjax._core.declaration import LAYOUTS
from augjax._core.meta import Meta
from augjax._core.step import BaseStep, Structure
from augjax.calls import StepCalls
from augjax._core.targets import Follow
from augjax.chain._config import KINDS, Node, to_dict
from augjax.chain._element import leaf_layouts
from augjax.errors import InputError

__all__ = ["Composite"]


class Composite(StepCalls, BaseStep):
    """Base class of composite steps. Call one like an op: ``step(images, key=...)`` on arrays,
    ``step(node)`` inside a DALI ``@pipeline_def`` (one ``jax_function`` operator);
    ``step.sample`` / ``step.apply`` record and replay its decisions."""

    #: The name used in configs (``to_dict``) and messages.
    kind: ClassVar[str] = "composite"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:  # a concrete kind: configs read it through KINDS
            KINDS[cls.kind] = cls

    # -- config ------------------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """The step's config node (without ``type``); see :mod:`augjax.chain._config`."""
        raise NotImplementedError

    @classmethod
    def from_config(cls, node: Node) -> Composite:
        """Rebuilds the step from its config node (validated)."""
        raise NotImplementedError

    # -- structure ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The step's name in messages."""
        return self.kind

    def elements(self) -> tuple[Any, ...]:
        """The ops / composites inside this step (empty for policies, whose ops are tables)."""
        return ()

    def after(self, structure: Structure) -> Structure:
        """What the step makes of one sample of ``structure`` (default: the same); raises
        InputError when the step cannot act on such a sample (alternatives that disagree)."""
        return structure

    level = "sample"  # a composite decides per sample (batch-level ops stay at the top)
    random = True
    dtypes = ("uint8", "float32")
    channels = None
    compute_bound = False
    sample_targets = ()
    declared = MappingProxyType({})
    follow = Follow()
    ragged = False  # (a chain's first op may be: the runtime reads a chain's steps)
    pads_exactly = True  # per sample: a padded batch's real samples keep their bits

    @property
    def layouts(self) -> tuple[str, ...]:
        """The layouts every op inside takes (their intersection)."""
        return leaf_layouts(self.elements()) if self.elements() else LAYOUTS

    def window(self, params: Any, height: Any, width: Any) -> Any:
        raise InputError(f"{self.name}: takes no images of different sizes", op=self.name)

    def run_batch(self, inputs: tuple[Any, ...], params: Any) -> Any:
        raise InputError(f"{self.name}: runs per sample, not on a batch", op=self.name)

    # -- per-sample program (the Step contract, shared with ops) -------------------------------
    def draw(self, key: jax.Array, meta: Meta) -> dict[str, Any]:
        """One sample's params (arrays) drawn from ``key`` for an input described by ``meta``."""
        return {}

    def run(self, image: jax.Array, params: dict[str, Any]) -> jax.Array:
        """The output for one HWC image given its params (deterministic)."""
        raise NotImplementedError

    def run_checked(self, image: jax.Array, params: Any, where: str) -> jax.Array:
        """:meth:`run` as an element of a composite (its own elements check themselves)."""
        return self.run(image, params)

    def matrix(self, params: dict[str, Any], meta: Meta) -> jax.Array:
        """One sample's forward 3x3 matrix (the geometric part of the step).

        Raises:
            InputError: the step has no single matrix (AugMix mixes several chains).
        """
        raise InputError(f"{self.name}: has no single geometric matrix, so it cannot be "
                         f"inverted", op=self.name)

    # -- as a step of the program ------------------------------------------------------------
    @property
    def kwargs(self) -> dict[str, Any]:
        """A composite has no kernel parameters of its own."""
        return {}

    def explain(self, images: Any, *, key: Any, layout: str = "HWC") -> Any:
        """Alias of :meth:`sample` (the per-sample decisions, as arrays)."""
        return self.sample(images, key=key, layout=layout)

    def to_dict(self) -> dict[str, Any]:
        """The step as a JSON-ready dict (see :func:`augjax.to_dict`)."""
        return to_dict(self)
