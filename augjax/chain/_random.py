"""The random containers: :func:`random_apply` (an element with probability ``p``),
:func:`random_choice` (one of several, by weight) and :func:`some_of` (``n`` of several, in
their order). Each decides per sample from its own key (the scheme of
:mod:`augjax.chain._containers`), branch-free, and runs as one program with the chain.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.param import F32_MAX, kernel_number, show_value
from augjax._core.step import Structure
from augjax._runtime.execution.keys import decision_key
from augjax._runtime.targets.follow import gated
from augjax._runtime.execution.values import Lifted, fill, kinds, lift
from augjax.chain._composite import Composite
from augjax.chain._config import Node, encode, json_value
from augjax.chain._element import as_sample_element, draw_element
from augjax.chain._containers import _check_layouts, check_same_outputs, compose
from augjax.errors import ParamError
from augjax.kernels.products import matmul


def _probability(owner: str, name: str, p: Any) -> float:
    try:
        value = kernel_number(p)
    except (TypeError, ValueError) as err:
        detail = f" ({err})"
    else:
        detail = "" if 0.0 <= value <= 1.0 else " (outside [0, 1])"
    if detail:
        raise ParamError(f"{owner}: parameter '{name}' expects a number in [0, 1], got "
                         f"{show_value(p)}{detail}", op=owner, param=name)
    return value


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

    def after(self, structure: Structure) -> Structure:
        return check_same_outputs(self.name, [self.op], structure, include_input=True)

    def draw(self, key, meta):
        return {"applied": jax.random.bernoulli(decision_key(key), self.p),
                "op": draw_element(self.op, key, meta)}

    def run(self, image, params):
        out = self.op.run_checked(image, params["op"], f"{self.name}/{self.op.name}")
        return jnp.where(params["applied"], out, image)

    def run_masks(self, mask, params):
        return jnp.where(params["applied"], self.op.run_masks(mask, params["op"]), mask)

    def stages(self, params, meta):
        return gated(self.op.stages(params["op"], meta), params["applied"])

    def matrix(self, params, meta):
        m = self.op.matrix(params["op"], meta)
        return jnp.where(params["applied"], m, jnp.eye(3, dtype=jnp.float32))

    # -- p (and the op's values) as program arguments (augjax._runtime.execution.values) -----------
    def lift(self) -> tuple[RandomApply, tuple[Any, ...]]:
        """``(skeleton, (p, *the op's values))``: a new probability compiles nothing (the coin
        is ``bernoulli(key, p)`` either way)."""
        (inner,), (values,) = lift([self.op])
        skeleton = copy.copy(self)
        object.__setattr__(skeleton, "op", inner)
        object.__setattr__(skeleton, "p", Lifted("float"))
        return skeleton, (self.p, *values)

    def with_values(self, values: tuple[Any, ...]) -> RandomApply:
        """The skeleton with ``p`` and the op's values traced (inside a program's trace)."""
        filled = copy.copy(self)
        object.__setattr__(filled, "p", values[0])
        object.__setattr__(filled, "op", fill([self.op], [tuple(values[1:])])[0])
        object.__setattr__(filled, "skeleton", self)  # holds traced values: not a cache key
        return filled

    def marker_kinds(self) -> list[str]:
        """The kinds of this skeleton's values: ``p``'s, then the op's."""
        own = [self.p.kind] if isinstance(self.p, Lifted) else []
        return own + kinds(self.op)


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
    ws, detail = tuple(weights), ""
    try:
        values = tuple(kernel_number(w) for w in ws)
    except (TypeError, ValueError) as err:  # the draw normalises them in float32
        values, detail = (), f" ({err})"
    if not detail and len(ws) != n:
        detail = f" ({len(ws)} given)"
    if not detail and (min(values) < 0 or sum(values) <= 0):
        detail = " (negative, or all 0)"
    if not detail and sum(values) > F32_MAX:
        detail = " (their sum is not finite in float32, the kernels' dtype; scale them down)"
    if detail:
        raise ParamError(
            f"{owner}: parameter 'weights' expects {n} finite numbers >= 0 (one per op) with a "
            f"positive sum, got {show_value(weights)}{detail}",
            op=owner,
            param="weights",
        )
    return values


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

    def after(self, structure: Structure) -> Structure:
        return check_same_outputs(self.name, self.ops, structure, include_input=False)

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
            (lambda x, el=el, p=p: el.run_checked(x, p, f"{self.name}/{el.name}"))
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
        ms = jnp.stack([el.matrix(p, meta) for el, p in zip(self.ops, params["ops"])])
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


def each_keeps(owner: str, ops: Sequence[Any], structure: Structure) -> Structure:
    """``structure``, checked to be what each of ``ops`` keeps (the containers that may apply
    any of them, in any number: some_of, random_order)."""
    for el in ops:
        check_same_outputs(owner, [el], structure, include_input=True)
    return structure


def draw_each(ops: Sequence[Any], key: jax.Array, meta: Any) -> tuple[Any, ...]:
    """Each op's params, op ``j`` drawn from ``fold_in(key, j)`` (some_of, random_order)."""
    return tuple(draw_element(el, jax.random.fold_in(key, j), meta) for j, el in enumerate(ops))


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

    def after(self, structure: Structure) -> Structure:
        return each_keeps(self.name, self.ops, structure)

    def draw(self, key, meta):
        k_count, k_pick = jax.random.split(decision_key(key))
        total = len(self.ops)
        lo, hi = self.n
        count = jax.random.randint(k_count, (), lo, hi + 1) if lo < hi else jnp.int32(lo)
        rank = jnp.argsort(jax.random.uniform(k_pick, (total,)))  # a uniform random order
        chosen = jnp.zeros(total, bool).at[rank].set(jnp.arange(total) < count)
        return {"applied": chosen, "count": jnp.asarray(count, jnp.int32),
                "ops": draw_each(self.ops, key, meta)}

    def run(self, image, params):
        for j, el in enumerate(self.ops):
            out = el.run_checked(image, params["ops"][j], f"{self.name}/{el.name}")
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
            out.extend(gated(el.stages(params["ops"][j], meta), params["applied"][j]))
        return tuple(out)

    def matrix(self, params, meta):
        m = jnp.eye(3, dtype=jnp.float32)
        for j, el in enumerate(self.ops):
            mj = el.matrix(params["ops"][j], meta)
            m = matmul(jnp.where(params["applied"][j], mj, jnp.eye(3, dtype=jnp.float32)), m)
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
