"""One element of a chain (a configured op or a composite: any :class:`augjax._core.step.Step`)
inside a traced per-sample function: what an element may be, the structure it passes on, and key
derivation. Every element is asked through the Step protocol, whatever its kind.

Key scheme inside composites (the top level is in :mod:`augjax._runtime.execution.keys`): a
composite with key ``k`` draws its own decisions (coin, branch, op index, magnitude) from
``decision_key(k)``; ``random_apply`` and ``random_choice`` give their op(s) ``k`` itself, so
``random_apply(op, 1.0)`` and ``random_choice([op])`` draw exactly what ``op`` draws at the same
position; sequences (nested chains, ``some_of``) give their element ``j`` the key ``fold_in(k, j)``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.declaration import LAYOUTS
from augjax._core.meta import Meta
from augjax._core.spec import OpSpec
from augjax._core.step import Step, Structure
from augjax._runtime.execution.keys import DECISION_TAG, decision_key
from augjax.errors import ParamError

__all__ = [
    "DECISION_TAG",
    "as_element",
    "as_sample_element",
    "decision_key",
    "draw_element",
    "layout_set",
    "leaf_layouts",
    "meta_after",
]


def as_element(x: Any, owner: str, argument: str) -> Any:
    """``x`` as a chain element: an :class:`OpSpec` is bound with its defaults; a step (a
    BoundOp, a chain, a composite: whatever implements the Step protocol) is kept.

    Raises:
        ParamError: ``x`` is none of these.
    """
    if isinstance(x, OpSpec):
        return x.bind()
    if isinstance(x, Step):
        return x
    raise ParamError(
        f"{owner}: argument '{argument}' expects ops (augjax.ops.<name>, augjax.ops.<name>"
        f".bind(...), a chain or a composite such as random_apply), got {type(x).__name__}",
        op=owner,
        param=argument,
    )


def _batch_level(el: Any) -> Any:
    """The first batch-level step inside ``el`` (itself included), or None."""
    if el.level != "sample":
        return el
    return next((b for child in el.elements() if (b := _batch_level(child)) is not None), None)


def as_sample_element(x: Any, owner: str, argument: str) -> Any:
    """Like :func:`as_element`, and the element must act on each image alone (no batch-level op
    such as mixup, anywhere inside it)."""
    el = as_element(x, owner, argument)
    leaf = _batch_level(el)
    if leaf is not None:
        raise ParamError(
            f"{owner}: argument '{argument}' contains {leaf.name!r}, a batch-level op "
            f"(it mixes the batch); a composite decides per sample, so put {leaf.name!r} at "
            f"the top level of compose(...) (it has its own probability parameter)",
            op=owner,
            param=argument,
        )
    return el


def leaf_layouts(elements: Any) -> tuple[str, ...]:
    """The layouts every step in ``elements`` takes (their intersection)."""
    layouts = set(LAYOUTS)
    for el in elements:
        layouts &= set(el.layouts)
    return tuple(x for x in LAYOUTS if x in layouts)


def layout_set(el: Any) -> str | None:
    """The layout ``el`` sets on its output (normalize to CHW), or None where it keeps its
    input's (asked of a sample whose structure is not known: the layout never depends on it)."""
    return el.after(Structure(None, None, None, None, None)).layout


def meta_after(el: Any, meta: Meta) -> Meta:
    """The :class:`Meta` of ``el``'s output for an input described by ``meta``."""
    out = el.after(Structure(meta.height, meta.width, meta.channels, meta.dtype))
    return Meta(out.height, out.width, out.channels, jnp.dtype(out.dtype).name, meta.batch)


def draw_element(el: Any, key: jax.Array, meta: Meta, **overrides: Any) -> dict[str, Any]:
    """One sample's params of a chain element (an op takes per-sample ``overrides``)."""
    return el.draw(key, meta, overrides) if overrides else el.draw(key, meta)
