"""Containers: ``compose`` (a chain), ``random_apply``, ``random_choice``, ``some_of``.

A chain is ONE program: on arrays one jitted function, in a DALI pipeline one ``jax_function``
operator whose inputs are the data, one per-sample seed input, and labels only when a mixing op
is in the chain. Op ``j`` of a chain uses the key ``fold_in(sample_key, start + j)`` (``start``
is 0 unless the chain is a slice), exactly as a single op at that position would, so a chain's
output equals applying its ops one at a time: ``chain[j:j+1]`` is op ``j`` alone, keeping its
position and so its draws.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.step import Structure
from augjax.chain._composite import Composite
from augjax.chain._config import Node, encode
from augjax.chain._element import as_element, draw_element, layout_set, meta_after
from augjax.errors import AugjaxWarning, InputError, ParamError
from augjax.kernels.products import matmul

__all__ = ["KEY_DATA_MAX", "Chain", "Sequential", "check_same_outputs", "compose"]

#: The largest value ``jax.random.fold_in`` takes (uint32): a chain position folded into a key.
KEY_DATA_MAX = 2**32 - 1


def _fmt_struct(struct: Structure) -> str:
    return f"{jnp.dtype(struct.dtype).name} {struct.shape}"


def check_same_outputs(owner: str, elements: Sequence[Any], structure: Structure, *,
                       include_input: bool) -> Structure:
    """The common output structure of alternative ``elements`` for one sample (and the input's,
    when not applying is one of the alternatives); only the layout where the input's size is
    not known yet (a DALI pipeline's build).

    Raises:
        InputError: the alternatives give different shapes or dtypes.
    """
    structs = [(el.name, el.after(structure)) for el in elements]
    if include_input:
        structs.insert(0, ("(not applied)", structure))
    first = structs[0][1]
    if structure.height is not None and any(s[:4] != first[:4] for _, s in structs):
        listing = ", ".join(f"{n} -> {_fmt_struct(s)}" for n, s in structs)
        raise InputError(
            f"{owner}: on a {_fmt_struct(structure)} image (HWC) the alternatives give "
            f"different outputs ({listing}); every alternative of a per-sample choice must give "
            f"the same shape and dtype (put size- or dtype-changing ops outside the choice)",
            op=owner,
            argument="images",
        )
    return first


def _check_layouts(owner: str, elements: Sequence[Any], *, optional: bool) -> str | None:
    effects = {layout_set(el) for el in elements}
    if optional:
        effects.add(None)
    if len(effects) > 1:
        raise ParamError(
            f"{owner}: the alternatives set different output layouts "
            f"({', '.join(sorted(map(str, effects)))}); put layout-changing ops (normalize to "
            f"CHW) outside the choice",
            op=owner,
            param="ops",
        )
    return effects.pop()


def _flatten(ops: Sequence[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for i, x in enumerate(ops):
        if isinstance(x, (list, tuple)):
            out.extend(_flatten(x))
            continue
        el = as_element(x, "compose", f"ops[{i}]")
        if getattr(el, "kind", None) == "views":  # refused when built, as random_apply does
            raise InputError(f"views: a Views step runs on its own (images in, a dict of view "
                             f"batches out) and cannot be an element of compose (argument "
                             f"'ops[{i}]'): call it on the images, then run what follows on "
                             f"each group's batch", op="compose", argument=f"ops[{i}]")
        out.extend(el.elements() if el.chained else (el,))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Chain(Composite):
    """Ops applied in order, fused into one program (build with :func:`compose`).

    ``chain(images, key=...)`` on arrays; ``chain(images[, labels])`` inside a DALI
    ``@pipeline_def`` adds ONE ``jax_function`` operator. ``chain[i]`` is the op at position
    ``i``; ``chain[i:j]`` is a chain of those ops that keeps their positions (and so their
    random draws). Nested inside a composite (``random_choice([compose(a, b), c])``), its ops
    take the keys ``fold_in(k, start + j)`` of the composite's key ``k``.
    """

    steps: tuple[Any, ...]
    start: int = 0
    kind = "compose"

    def __post_init__(self) -> None:
        top = KEY_DATA_MAX - max(len(self.steps) - 1, 0)  # op j folds start + j into its key
        if isinstance(self.start, bool) or not isinstance(self.start, int) or \
                not 0 <= self.start <= top:
            raise ParamError(f"compose: argument 'start' expects an int in [0, {top}] (op j's "
                             f"key folds in start + j, a uint32), got {self.start!r}",
                             op="compose", param="start")

    @property
    def name(self) -> str:
        return "compose"

    @property
    def inputs(self) -> tuple[str, ...]:
        """``("images", "labels")`` when an op of the chain mixes labels, else ``("images",)``."""
        labels = any("labels" in s.inputs for s in self.steps)
        return ("images", "labels") if labels else ("images",)

    @property
    def outputs(self) -> tuple[str, ...]:
        """``("images", "labels")`` when an op of the chain outputs labels."""
        labels = any("labels" in s.outputs for s in self.steps)
        return ("images", "labels") if labels else ("images",)

    def to_config(self):
        return {"steps": [encode(s) for s in self.steps], "start": self.start}

    @classmethod
    def from_config(cls, node: Node):
        node.keys(("steps",), ("start",))
        return compose(*node.children("steps"), start=node.get("start", 0))

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            lo, hi, stride = index.indices(len(self.steps))
            if stride != 1:
                raise ParamError("compose: a chain slice must be contiguous (step 1)",
                                 op="compose", param="index")
            return Chain(self.steps[lo:hi], self.start + lo)
        return self.steps[index]

    chained = True

    def program(self) -> tuple[tuple[Any, ...], int]:
        return self.steps, self.start

    def explain(self, images: Any, *, key: Any, layout: str = "HWC") -> tuple[Any, ...]:
        """Alias of :meth:`sample`."""
        return self.sample(images, key=key, layout=layout)

    # As an element inside another composite: a sample-level sequence.
    def elements(self) -> tuple[Any, ...]:
        return self.steps

    def after(self, structure: Structure) -> Structure:
        for el in self.steps:
            structure = el.after(structure)
        return structure

    def _key(self, key: jax.Array, j: int) -> jax.Array:
        return jax.random.fold_in(key, self.start + j)

    def draw(self, key, meta):
        out = []
        for j, el in enumerate(self.steps):
            out.append(draw_element(el, self._key(key, j), meta))
            meta = meta_after(el, meta)
        return {"steps": tuple(out)}

    def run(self, image, params):
        for el, p in zip(self.steps, params["steps"]):
            image = el.run_checked(image, p, f"compose/{el.name}")
        return image

    def run_masks(self, mask, params):
        for el, p in zip(self.steps, params["steps"]):
            mask = el.run_masks(mask, p)
        return mask

    def stages(self, params, meta):
        out = []
        for el, p in zip(self.steps, params["steps"]):
            out.extend(el.stages(p, meta))
            meta = meta_after(el, meta)
        return tuple(out)

    def matrix(self, params, meta):
        m = jnp.eye(3, dtype=jnp.float32)
        for el, p in zip(self.steps, params["steps"]):
            m = matmul(el.matrix(p, meta), m)
            meta = meta_after(el, meta)
        return m


def compose(*ops: Any, start: int = 0) -> Chain:
    """Chains ops into one fused program (torchvision ``Compose``, fused).

    Args:
        *ops: ops (``augjax.ops.flip``, ``augjax.ops.flip.bind(p=0.5)``), composites
            (``random_apply(...)``, policies) or chains; lists are spliced in, and so are
            nested chains (their ops take this chain's positions).
        start: the position of the first op (0 unless reproducing a slice of a longer chain).

    Returns:
        The chain of ``ops``, one :class:`Chain`; its op ``j`` draws from
        ``fold_in(sample_key, start + j)``.
    """
    steps = _flatten(ops)
    _warn_after_normalize(steps)
    return Chain(steps, start)


#: augjax's ops and policies that read float images as values in [0, 1] (they clip to it, or
#: take 0 and 1 as black and white): after ``normalize``, whose output is standardised (mean
#: 0, std 1 per channel), they clip it or read it wrongly.
UNIT_RANGE = frozenset({
    "autocontrast", "brightness", "color_jitter", "color_twist", "contrast", "equalize",
    "gamma", "hue", "invert", "jpeg", "posterize", "random_photometric_distort",
    "salt_and_pepper", "saturation", "sharpness", "shot_noise", "solarize", "solarize_add",
    "to_uint8", "rand_augment", "trivial_augment_wide", "auto_augment", "augmix"})


def _warn_after_normalize(steps: tuple[Any, ...]) -> None:
    """An :class:`AugjaxWarning` for a step of :data:`UNIT_RANGE` after ``normalize``."""
    after = None
    for i, step in enumerate(steps):
        name = getattr(step, "name", None)
        if name == "normalize":
            after = i if after is None else after
        elif after is not None and name in UNIT_RANGE:
            warnings.warn(AugjaxWarning(
                f"compose: {name} (ops[{i}]) comes after normalize (ops[{after}]): it reads "
                f"float images as values in [0, 1] (clipping to it), but normalize's output is "
                f"standardised; put normalize last (or after the colour ops)"), stacklevel=3)
            return


#: Alias of :func:`compose`.
Sequential = compose
