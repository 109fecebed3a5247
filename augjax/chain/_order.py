"""The random order container: :func:`random_order` applies every op, in an order drawn per
sample (torchvision ``RandomOrder``; imgaug's ``SomeOf(random_order=True)`` with every op).

Op ``j`` gets the key ``fold_in(k, j)`` wherever it lands in the order, so its params do not
depend on the order (the scheme of :mod:`augjax.chain._containers`); the order comes from
``decision_key``. Place ``i`` runs the op the order names there (a ``lax.switch``): under
``vmap`` a switch is a select over every op, so ``n`` ops cost ``n * n`` op runs per sample.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from augjax._core.step import Structure
from augjax._runtime.execution.keys import decision_key
from augjax._runtime.targets.follow import gated
from augjax.chain._composite import Composite
from augjax.chain._config import Node, encode
from augjax.chain._containers import _check_layouts
from augjax.chain._element import as_sample_element
from augjax.chain._random import draw_each, each_keeps
from augjax.errors import ParamError
from augjax.kernels.products import matmul

__all__ = ["RandomOrder", "random_order", "MAX_OPS"]

#: The most ops one ``random_order`` takes: its program runs ``n * n`` ops per sample.
MAX_OPS = 8


@dataclasses.dataclass(frozen=True)
class RandomOrder(Composite):
    """Applies every op once per sample, in a uniformly drawn order (build with
    :func:`random_order`). Op ``j`` gets the key ``fold_in(k, j)``: ``random_order([op])`` is
    ``compose(op)``."""

    ops: tuple[object, ...]
    kind = "random_order"

    def __post_init__(self) -> None:
        if not self.ops:
            raise ParamError("random_order: argument 'ops' is empty", op=self.kind, param="ops")
        if len(self.ops) > MAX_OPS:
            raise ParamError(
                f"random_order: argument 'ops' expects at most {MAX_OPS} ops (each place in "
                f"the order runs every op under vmap: n * n op runs per sample), got "
                f"{len(self.ops)}; nest them (random_order of chains) or use some_of",
                op=self.kind, param="ops")
        _check_layouts(self.kind, self.ops, optional=True)

    @property
    def name(self) -> str:
        return "random_order"

    def to_config(self):
        return {"ops": [encode(s) for s in self.ops]}

    @classmethod
    def from_config(cls, node: Node):
        node.keys(("ops",), ())
        return random_order(node.children("ops"))

    def elements(self):
        return self.ops

    def after(self, structure: Structure) -> Structure:
        return each_keeps(self.name, self.ops, structure)

    def draw(self, key, meta):
        n = len(self.ops)
        order = jnp.argsort(jax.random.uniform(decision_key(key), (n,)))  # uniform over n!
        return {"order": order.astype(jnp.int32),
                "ops": draw_each(self.ops, key, meta)}

    def _in_order(self, x, params, run_one):
        branches = [(lambda v, j=j: run_one(j, v)) for j in range(len(self.ops))]
        for place in range(len(self.ops)):
            x = (branches[0](x) if len(branches) == 1
                 else jax.lax.switch(params["order"][place], branches, x))
        return x

    def run(self, image, params):
        return self._in_order(image, params, lambda j, x: self.ops[j].run_checked(
            x, params["ops"][j], f"{self.name}/{self.ops[j].name}"))

    def run_masks(self, mask, params):
        return self._in_order(mask, params,
                              lambda j, x: self.ops[j].run_masks(x, params["ops"][j]))

    def stages(self, params, meta):
        out = []
        for place in range(len(self.ops)):
            for j, el in enumerate(self.ops):
                out.extend(gated(el.stages(params["ops"][j], meta),
                                 params["order"][place] == j))
        return tuple(out)

    def matrix(self, params, meta):
        ms = jnp.stack([el.matrix(p, meta) for el, p in zip(self.ops, params["ops"])])
        m = jnp.eye(3, dtype=jnp.float32)
        for place in range(len(self.ops)):
            m = matmul(ms[params["order"][place]], m)
        return m


def random_order(ops: Sequence[object]) -> RandomOrder:
    """Applies every op in ``ops`` once per sample, in a random order (torchvision
    ``RandomOrder``): each of the ``n!`` orders equally likely, drawn per sample.

    Args:
        ops: the ops (ops, composites, chains); each must keep the image's shape and dtype, and
            at most :data:`MAX_OPS` of them (the program runs ``n * n`` ops per sample).
    """
    if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence):
        raise ParamError(f"random_order: argument 'ops' expects a list of ops, got {ops!r}",
                         op="random_order", param="ops")
    els = tuple(as_sample_element(op, "random_order", f"ops[{i}]") for i, op in enumerate(ops))
    return RandomOrder(els)
