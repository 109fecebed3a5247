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

Subclasses implement :meth:`draw`, :meth:`run`, and the structure methods
(:meth:`elements`, :meth:`size_after`, :meth:`dtype_after`, :meth:`struct_after`,
:meth:`layout_effect`).
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Any, ClassVar

import jax

from augjax._core.meta import Meta
from augjax._core.spec import OpSpec
from augjax._core.step import Step
from augjax.chain._config import KINDS, Node, to_dict
from augjax.chain._element import leaf_layouts

__all__ = ["Composite"]


class Composite(Step):
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

    def size_after(self, height: int, width: int) -> tuple[int, int]:
        """The output's spatial size for an input of ``height`` x ``width``."""
        return (height, width)

    def dtype_after(self) -> str | None:
        """The output dtype, or None when it is the input's."""
        return None

    def struct_after(self, shape: tuple[int, ...], dtype: Any) -> tuple[tuple[int, ...], Any]:
        """``(shape, dtype)`` of the output for one HWC image; raises InputError when the step
        cannot act on such an image (branches that disagree, for example)."""
        import jax.numpy as jnp

        return tuple(shape), jnp.dtype(dtype)

    def layout_effect(self) -> str | None:
        """The layout this step sets on its output, or None if it keeps the input's."""
        return None

    # -- per-sample program (the Step contract, shared with ops) -------------------------------
    def draw(self, key: jax.Array, meta: Meta) -> dict[str, Any]:
        """One sample's params (arrays) drawn from ``key`` for an input described by ``meta``."""
        return {}

    def run(self, image: jax.Array, params: dict[str, Any]) -> jax.Array:
        """The output for one HWC image given its params (deterministic)."""
        raise NotImplementedError

    def matrix(self, params: dict[str, Any], meta: Meta) -> jax.Array:
        """One sample's forward 3x3 matrix (the geometric part of the step).

        Raises:
            InputError: the step has no single matrix (AugMix mixes several chains).
        """
        from augjax.errors import InputError

        raise InputError(f"{self.name}: has no single geometric matrix, so it cannot be "
                         f"inverted", op=self.name)

    # -- as a step of the program ------------------------------------------------------------
    @property
    def kwargs(self) -> dict[str, Any]:
        """A composite has no kernel parameters of its own (the program calls ``spec.kernel``)."""
        return {}

    @functools.cached_property
    def spec(self) -> OpSpec:
        """The step as an op spec: a sample-level random kernel ``(key, image) -> image``."""
        layouts = leaf_layouts(self.elements()) if self.elements() else ("HWC", "CHW")
        effect = self.layout_effect()
        return OpSpec(
            name=self.name,
            kernel=self.run,
            params=MappingProxyType({}),
            level="sample",
            layouts=layouts,
            random=True,
            output_size=lambda h, w: self.size_after(h, w),
            output_dtype=self.dtype_after(),
            output_layout=(lambda: effect) if effect is not None else None,
            reference="augjax composite",
            doc=self.__doc__ or "",
        )

    def explain(self, images: Any, *, key: Any, layout: str = "HWC") -> Any:
        """Alias of :meth:`sample` (the per-sample decisions, as arrays)."""
        return self.sample(images, key=key, layout=layout)

    def to_dict(self) -> dict[str, Any]:
        """The step as a JSON-ready dict (see :func:`augjax.to_dict`)."""
        return to_dict(self)
