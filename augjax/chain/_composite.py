"""Composite: the base of every step that combines ops and decides per sample (random_apply,
random_choice, some_of, nested chains, the policies).

A composite is a frozen dataclass (hashable by value, so it keys the compile caches: building
the same policy twice reuses the compiled program). It runs as ONE sample-level step of the
program: augjax vmaps :meth:`Composite.sample` over the batch with each sample's key, and the
composite picks its ops per sample with ``lax.switch`` / ``jnp.where``; under ``vmap`` a switch
on a per-sample index becomes a select, so one compiled program serves every sample's choice.

Subclasses implement :meth:`plan` (the sample's decisions, a dict of arrays: what tests and
users inspect with :meth:`explain`), :meth:`apply` (the image given the plan), and the
structure methods (:meth:`elements`, :meth:`size_after`, :meth:`dtype_after`,
:meth:`struct_after`, :meth:`layout_effect`).
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Any, ClassVar

import jax

from augjax._dispatch import apply_steps
from augjax._inputs import LAYOUT_AXES, as_array
from augjax._keys import op_keys, sample_keys
from augjax._spec import OpSpec
from augjax.chain._element import leaf_layouts
from augjax.errors import InputError

__all__ = ["Composite"]


class Composite:
    """Base class of composite steps. Call one like an op: ``step(images, key=...)`` on arrays,
    ``step(node)`` inside a DALI ``@pipeline_def`` (one ``jax_function`` operator)."""

    #: The name used in configs (``to_dict``) and messages.
    kind: ClassVar[str] = "composite"

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

    # -- per-sample program ------------------------------------------------------------------
    def plan(self, key: jax.Array, height: int, width: int) -> dict[str, Any]:
        """The sample's random decisions (arrays), drawn from ``key``."""
        return {}

    def apply(self, plan: dict[str, Any], key: jax.Array, image: jax.Array) -> jax.Array:
        """The output for one HWC image, given the sample's plan and key."""
        raise NotImplementedError

    def sample(self, key: jax.Array, image: jax.Array) -> jax.Array:
        """Applies the step to one HWC image with its key (what augjax vmaps)."""
        self.struct_after(tuple(image.shape), image.dtype)
        return self.apply(self.plan(key, image.shape[0], image.shape[1]), key, image)

    def describe(self, key: jax.Array, height: int, width: int) -> dict[str, Any]:
        """The plan plus, for composites of ops, what each element decides (nested)."""
        return self.plan(key, height, width)

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
            kernel=self.sample,
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

    def __call__(
        self,
        images: Any,
        *,
        key: Any = None,
        seeds: Any = None,
        seed: int | None = None,
        device: str | None = None,
        layout: str = "HWC",
    ) -> Any:
        """Applies the step to a batch: same call keywords as an op (see ``augjax.ops.flip``)."""
        return apply_steps(
            (self,), (images,), name=self.name, inputs_decl=("images",),
            outputs_decl=("images",), key=key, seeds=seeds, seed=seed, device=device,
            layout=layout,
        )

    def explain(self, images: Any, *, key: Any, layout: str = "HWC") -> dict[str, Any]:
        """The per-sample decisions this step takes on ``images`` with ``key`` (the same draws
        as ``self(images, key=key)``): a dict of arrays with a leading batch axis.

        Args:
            images: the batch (or just its shape ``(N, H, W, C)`` / ``(N, C, H, W)``).
            key: as for a call: one key, or one key per sample.
            layout: ``"HWC"`` or ``"CHW"``.
        """
        return explain_steps((self,), images, key=key, layout=layout, start=0)[0]

    def to_dict(self) -> dict[str, Any]:
        """The step as a JSON-ready dict (see :func:`augjax.to_dict`)."""
        from augjax._config import to_dict

        return to_dict(self)


def _batch_shape(images: Any, layout: str, name: str) -> tuple[int, int, int]:
    if isinstance(images, tuple) and all(isinstance(d, int) for d in images):
        shape = images
    else:
        shape = tuple(as_array(images, name, "images").shape)
    if len(shape) != 4 or layout not in LAYOUT_AXES:
        raise InputError(
            f"{name}: explain expects a batch (N, H, W, C) or (N, C, H, W) and layout 'HWC' or "
            f"'CHW', got shape {shape} and layout {layout!r}",
            op=name,
            argument="images",
        )
    ah, aw, _ = LAYOUT_AXES[layout]
    return shape[0], shape[ah], shape[aw]


@functools.lru_cache(maxsize=256)
def _describer(step: Any, height: int, width: int):
    def describe(keys):
        return jax.vmap(lambda k: step.describe(k, height, width))(keys)

    return jax.jit(describe)


def explain_steps(
    steps: tuple[Any, ...], images: Any, *, key: Any, layout: str, start: int
) -> list[dict[str, Any]]:
    """The decisions of each step of a chain (``{}`` for plain ops), as the program draws them."""
    from augjax.chain._element import size_after

    name = steps[0].name if len(steps) == 1 else "compose"
    n, h, w = _batch_shape(images, layout, name)
    keys = sample_keys(key, n, name)
    out = []
    for pos, step in enumerate(steps, start):
        if isinstance(step, Composite):
            out.append(_describer(step, h, w)(op_keys(keys, pos)))
        else:
            out.append({})
        h, w = size_after(step, h, w)
    return out
