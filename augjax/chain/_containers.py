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
import math
import numbers
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax._runtime.targets import gated, point_stages
from augjax.chain._composite import Composite
from augjax.chain._config import Node, encode, json_value
from augjax.chain._element import (
    as_element,
    as_sample_element,
    decision_key,
    draw_element,
    dtype_after,
    element_matrix,
    layout_effect,
    meta_after,
    run_element,
    size_after,
    struct_after,
)
from augjax.errors import InputError, ParamError

__all__ = [
    "Chain",
    "RandomApply",
    "RandomChoice",
    "SomeOf",
    "check_same_outputs",
    "compose",
    "random_apply",
    "random_choice",
    "some_of",
]


def _fmt_struct(struct: tuple[tuple[int, ...], Any]) -> str:
    return f"{jnp.dtype(struct[1]).name} {tuple(struct[0])}"


def check_same_outputs(owner: str, elements: Sequence[Any], shape: tuple[int, ...], dtype: Any,
                       *, include_input: bool) -> tuple[tuple[int, ...], Any]:
    """The common output structure of alternative ``elements`` for one image (and the input's,
    when not applying is one of the alternatives).

    Raises:
        InputError: the alternatives give different shapes or dtypes.
    """
    structs = [(el.name, struct_after(el, shape, dtype)) for el in elements]
    if include_input:
        structs.insert(0, ("(not applied)", (tuple(shape), jnp.dtype(dtype))))
    first = structs[0][1]
    if any(s != first for _, s in structs):
        listing = ", ".join(f"{n} -> {_fmt_struct(s)}" for n, s in structs)
        raise InputError(
            f"{owner}: on a {_fmt_struct((shape, dtype))} image (HWC) the alternatives give "
            f"different outputs ({listing}); every alternative of a per-sample choice must give "
            f"the same shape and dtype (put size- or dtype-changing ops outside the choice)",
            op=owner,
            argument="images",
        )
    return first


def _check_layouts(owner: str, elements: Sequence[Any], *, optional: bool) -> str | None:
    effects = {layout_effect(el) for el in elements}
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
        out.extend(el.steps if isinstance(el, Chain) else (el,))
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
        if isinstance(self.start, bool) or not isinstance(self.start, int) or self.start < 0:
            raise ParamError(f"compose: argument 'start' expects an int >= 0, got {self.start!r}",
                             op="compose", param="start")

    @property
    def name(self) -> str:
        return "compose"

    @property
    def inputs(self) -> tuple[str, ...]:
        """``("images", "labels")`` when an op of the chain mixes labels, else ``("images",)``."""
        labels = any("labels" in s.spec.inputs for s in self.steps)
        return ("images", "labels") if labels else ("images",)

    @property
    def outputs(self) -> tuple[str, ...]:
        """``("images", "labels")`` when an op of the chain outputs labels."""
        labels = any("labels" in s.spec.outputs for s in self.steps)
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

    def size_after(self, height: int, width: int) -> tuple[int, int]:
        for el in self.steps:
            height, width = size_after(el, height, width)
        return (height, width)

    def dtype_after(self) -> str | None:
        out = None
        for el in self.steps:
            out = dtype_after(el) or out
        return out

    def struct_after(self, shape, dtype):
        for el in self.steps:
            shape, dtype = struct_after(el, shape, dtype)
        return tuple(shape), jnp.dtype(dtype)

    def layout_effect(self) -> str | None:
        out = None
        for el in self.steps:
            out = layout_effect(el) or out
        return out

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
            image = run_element(el, image, p, "compose")
        return image

    def run_masks(self, mask, params):
        for el, p in zip(self.steps, params["steps"]):
            mask = el.run_masks(mask, p)
        return mask

    def stages(self, params, meta):
        out = []
        for el, p in zip(self.steps, params["steps"]):
            out.extend(point_stages(el, p, meta))
            meta = meta_after(el, meta)
        return tuple(out)

    def matrix(self, params, meta):
        m = jnp.eye(3, dtype=jnp.float32)
        for el, p in zip(self.steps, params["steps"]):
            m = element_matrix(el, p, meta) @ m
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
        A :class:`Chain`. Op ``j`` draws from ``fold_in(sample_key, start + j)``.
    """
    return Chain(_flatten(ops), start)


#: Alias of :func:`compose`.
Sequential = compose


def _probability(owner: str, name: str, p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ParamError(f"{owner}: parameter '{name}' expects a number in [0, 1], got {p!r}",
                         op=owner, param=name)
    return float(p)


@dataclasses.dataclass(frozen=True)
class RandomApply(Composite):
    """Applies an op (or a chain) to each sample with probability ``p`` (build with
    :func:`random_apply`). The op gets the composite's key, the coin comes from
    ``decision_key``: ``random_apply(op, 1.0)`` is ``op``."""

    op: Any
    p: float = 0.5
    kind = "random_apply"

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", _probability(self.kind, "p", self.p))
        _check_layouts(self.kind, [self.op], optional=True)

    @property
    def name(self) -> str:
        return f"random_apply({self.op.name})"

    def to_config(self):
        return {"op": encode(self.op), "p": self.p}

    @classmethod
    def from_config(cls, node: Node):
        node.keys(("op",), ("p",))
        return random_apply(node.child("op"), node.get("p", 0.5))

    def elements(self):
        return (self.op,)

    def struct_after(self, shape, dtype):
        return check_same_outputs(self.name, [self.op], shape, dtype, include_input=True)

    def draw(self, key, meta):
        return {"applied": jax.random.bernoulli(decision_key(key), self.p),
                "op": draw_element(self.op, key, meta)}

    def run(self, image, params):
        out = run_element(self.op, image, params["op"], self.name)
        return jnp.where(params["applied"], out, image)

    def run_masks(self, mask, params):
        return jnp.where(params["applied"], self.op.run_masks(mask, params["op"]), mask)

    def stages(self, params, meta):
        return gated(point_stages(self.op, params["op"], meta), params["applied"])

    def matrix(self, params, meta):
        m = element_matrix(self.op, params["op"], meta)
        return jnp.where(params["applied"], m, jnp.eye(3, dtype=jnp.float32))


def random_apply(op: Any, p: float = 0.5) -> RandomApply:
    """Applies ``op`` to each sample with probability ``p`` (torchvision ``RandomApply``).

    Args:
        op: an op, a composite, or a list of ops (applied together, as one chain).
        p: probability of applying it, per sample.
    """
    if isinstance(op, (list, tuple)):
        op = compose(*op)
    return RandomApply(as_sample_element(op, "random_apply", "op"), p)


def _weights(owner: str, weights: Any, n: int) -> tuple[float, ...] | None:
    if weights is None:
        return None
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise ParamError(f"{owner}: parameter 'weights' expects {n} numbers, got {weights!r}",
                         op=owner, param="weights")
    ws = tuple(weights)
    ok = len(ws) == n and all(
        isinstance(w, numbers.Real) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
        for w in ws
    )
    if not ok or sum(ws) <= 0:
        raise ParamError(
            f"{owner}: parameter 'weights' expects {n} finite numbers >= 0 (one per op) with a "
            f"positive sum, got {weights!r}",
            op=owner,
            param="weights",
        )
    return tuple(float(w) for w in ws)


@dataclasses.dataclass(frozen=True)
class RandomChoice(Composite):
    """Applies one op per sample, picked with ``weights`` (build with :func:`random_choice`).
    Every op gets the composite's key: ``random_choice([op])`` is ``op``."""

    ops: tuple[Any, ...]
    weights: tuple[float, ...] | None = None
    kind = "random_choice"

    def __post_init__(self) -> None:
        if not self.ops:
            raise ParamError("random_choice: argument 'ops' is empty", op=self.kind, param="ops")
        object.__setattr__(self, "weights", _weights(self.kind, self.weights, len(self.ops)))
        _check_layouts(self.kind, self.ops, optional=False)

    @property
    def name(self) -> str:
        return "random_choice"

    def to_config(self):
        return {"ops": [encode(s) for s in self.ops], "weights": json_value(self.weights)}

    @classmethod
    def from_config(cls, node: Node):
        node.keys(("ops",), ("weights",))
        return random_choice(node.children("ops"), node.get("weights"))

    def elements(self):
        return self.ops

    def size_after(self, height, width):
        return size_after(self.ops[0], height, width)

    def dtype_after(self):
        kinds = {dtype_after(el) for el in self.ops}
        return kinds.pop() if len(kinds) == 1 else None

    def struct_after(self, shape, dtype):
        return check_same_outputs(self.name, self.ops, shape, dtype, include_input=False)

    def layout_effect(self):
        return layout_effect(self.ops[0])

    def draw(self, key, meta):
        k = decision_key(key)
        n = len(self.ops)
        if self.weights is None:
            index = jax.random.randint(k, (), 0, n)
        else:
            p = jnp.asarray(self.weights, jnp.float32)
            index = jax.random.choice(k, n, p=p / p.sum())
        return {"index": index.astype(jnp.int32),
                "ops": tuple(draw_element(el, key, meta) for el in self.ops)}

    def run(self, image, params):
        branches = [
            (lambda x, el=el, p=p: run_element(el, x, p, self.name))
            for el, p in zip(self.ops, params["ops"])
        ]
        if len(branches) == 1:
            return branches[0](image)
        return jax.lax.switch(params["index"], branches, image)

    def run_masks(self, mask, params):
        branches = [(lambda x, el=el, p=p: el.run_masks(x, p))
                    for el, p in zip(self.ops, params["ops"])]
        if len(branches) == 1:
            return branches[0](mask)
        return jax.lax.switch(params["index"], branches, mask)

    def matrix(self, params, meta):
        ms = jnp.stack([element_matrix(el, p, meta) for el, p in zip(self.ops, params["ops"])])
        return ms[params["index"]]


def random_choice(ops: Sequence[Any], weights: Sequence[float] | None = None) -> RandomChoice:
    """Applies one of ``ops`` per sample (torchvision ``RandomChoice``), branch-free.

    Args:
        ops: the alternatives (ops, composites, chains); each must give the same output shape
            and dtype.
        weights: relative weights (normalised), default uniform.
    """
    if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence):
        raise ParamError(f"random_choice: argument 'ops' expects a list of ops, got {ops!r}",
                         op="random_choice", param="ops")
    els = tuple(as_sample_element(op, "random_choice", f"ops[{i}]") for i, op in enumerate(ops))
    return RandomChoice(els, None if weights is None else tuple(weights))


def _count(n: Any, total: int) -> tuple[int, int]:
    pair = n if isinstance(n, (list, tuple)) else (n, n)
    ok = len(pair) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in pair)
    if not ok or not 0 <= pair[0] <= pair[1] <= total:
        raise ParamError(
            f"some_of: parameter 'n' expects an int or an (min, max) pair of ints with "
            f"0 <= min <= max <= {total} (the number of ops), got {n!r}",
            op="some_of",
            param="n",
        )
    return (int(pair[0]), int(pair[1]))


@dataclasses.dataclass(frozen=True)
class SomeOf(Composite):
    """Applies ``n`` distinct ops per sample, in their listed order (build with
    :func:`some_of`). Op ``j`` gets the key ``fold_in(k, j)``."""

    ops: tuple[Any, ...]
    n: tuple[int, int] = (1, 1)
    kind = "some_of"

    def __post_init__(self) -> None:
        if not self.ops:
            raise ParamError("some_of: argument 'ops' is empty", op=self.kind, param="ops")
        object.__setattr__(self, "n", _count(self.n, len(self.ops)))
        _check_layouts(self.kind, self.ops, optional=True)

    @property
    def name(self) -> str:
        return "some_of"

    def to_config(self):
        return {"ops": [encode(s) for s in self.ops], "n": list(self.n)}

    @classmethod
    def from_config(cls, node: Node):
        node.keys(("ops",), ("n",))
        return some_of(node.children("ops"), node.get("n", 1))

    def elements(self):
        return self.ops

    def struct_after(self, shape, dtype):
        for el in self.ops:
            check_same_outputs(self.name, [el], shape, dtype, include_input=True)
        return tuple(shape), jnp.dtype(dtype)

    def draw(self, key, meta):
        k_count, k_pick = jax.random.split(decision_key(key))
        total = len(self.ops)
        lo, hi = self.n
        count = jax.random.randint(k_count, (), lo, hi + 1) if lo < hi else jnp.int32(lo)
        rank = jnp.argsort(jax.random.uniform(k_pick, (total,)))  # a uniform random order
        chosen = jnp.zeros(total, bool).at[rank].set(jnp.arange(total) < count)
        return {"applied": chosen, "count": jnp.asarray(count, jnp.int32),
                "ops": tuple(draw_element(el, jax.random.fold_in(key, j), meta)
                             for j, el in enumerate(self.ops))}

    def run(self, image, params):
        for j, el in enumerate(self.ops):
            out = run_element(el, image, params["ops"][j], self.name)
            image = jnp.where(params["applied"][j], out, image)
        return image

    def run_masks(self, mask, params):
        for j, el in enumerate(self.ops):
            out = el.run_masks(mask, params["ops"][j])
            mask = jnp.where(params["applied"][j], out, mask)
        return mask

    def stages(self, params, meta):
        out = []
        for j, el in enumerate(self.ops):
            out.extend(gated(point_stages(el, params["ops"][j], meta), params["applied"][j]))
        return tuple(out)

    def matrix(self, params, meta):
        m = jnp.eye(3, dtype=jnp.float32)
        for j, el in enumerate(self.ops):
            mj = element_matrix(el, params["ops"][j], meta)
            m = jnp.where(params["applied"][j], mj, jnp.eye(3, dtype=jnp.float32)) @ m
        return m


def some_of(ops: Sequence[Any], n: int | tuple[int, int] = 1) -> SomeOf:
    """Applies ``n`` distinct ops, chosen uniformly per sample, in their listed order
    (albumentations ``SomeOf``; imgaug's ``(min, max)`` count).

    Args:
        ops: the candidate ops; each must keep the image's shape and dtype.
        n: how many, or a ``(min, max)`` pair (the count is uniform in it, per sample).
    """
    if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence):
        raise ParamError(f"some_of: argument 'ops' expects a list of ops, got {ops!r}",
                         op="some_of", param="ops")
    els = tuple(as_sample_element(op, "some_of", f"ops[{i}]") for i, op in enumerate(ops))
    return SomeOf(els, n)
