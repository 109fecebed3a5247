"""One element of a chain (a configured op or a composite) applied to ONE image, inside a traced
per-sample function: input checks, the output each element promises, and key derivation.

Key scheme inside composites (the top level is in :mod:`augjax._runtime.keys`): a composite with key
``k`` draws its own decisions (coin, branch, op index, magnitude) from ``decision_key(k)``;
``random_apply`` and ``random_choice`` give their op(s) ``k`` itself, so ``random_apply(op, 1.0)``
and ``random_choice([op])`` draw exactly what ``op`` draws at the same position; sequences
(nested chains, ``some_of``) give their element ``j`` the key ``fold_in(k, j)``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax._runtime.bound import BoundOp
from augjax._runtime.inputs import check_images
from augjax._core.meta import Meta
from augjax._core.spec import OpSpec
from augjax._core.step import Step
from augjax.errors import InputError, OpDefinitionError, ParamError

__all__ = [
    "DECISION_TAG",
    "as_element",
    "as_sample_element",
    "check_op_input",
    "decision_key",
    "draw_element",
    "element_matrix",
    "meta_after",
    "run_element",
    "run_op",
    "dtype_after",
    "layout_effect",
    "leaf_layouts",
    "size_after",
    "struct_after",
]

#: ``fold_in`` tag of a composite's own random decisions (distinct from element positions).
DECISION_TAG = 0x5EEDC401


def decision_key(key: jax.Array) -> jax.Array:
    """The key a composite draws its own decisions from."""
    return jax.random.fold_in(key, DECISION_TAG)


def as_element(x: Any, owner: str, argument: str) -> Any:
    """``x`` as a chain element: an :class:`OpSpec` is bound with its defaults; a BoundOp or a
    composite is kept.

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


def as_sample_element(x: Any, owner: str, argument: str) -> Any:
    """Like :func:`as_element`, and the element must act on each image alone (no batch-level op
    such as mixup, anywhere inside it)."""
    el = as_element(x, owner, argument)
    for leaf in _leaves(el):
        if leaf.spec.level != "sample":
            raise ParamError(
                f"{owner}: argument '{argument}' contains {leaf.name!r}, a batch-level op "
                f"(it mixes the batch); a composite decides per sample, so put {leaf.name!r} at "
                f"the top level of compose(...) (it has its own probability parameter)",
                op=owner,
                param=argument,
            )
    return el


def _leaves(el: Any) -> list[BoundOp]:
    if isinstance(el, BoundOp):
        return [el]
    out: list[BoundOp] = []
    for child in el.elements():
        out.extend(_leaves(child))
    return out


def leaf_layouts(elements: Any) -> tuple[str, ...]:
    """The layouts every op inside ``elements`` accepts (their intersection)."""
    layouts = {"HWC", "CHW"}
    for el in elements:
        for leaf in _leaves(el):
            layouts &= set(leaf.spec.layouts)
    return tuple(x for x in ("HWC", "CHW") if x in layouts)


def size_after(el: Any, height: int, width: int) -> tuple[int, int]:
    """The spatial size of ``el``'s output for an input of ``height`` x ``width``."""
    return el.size_after(height, width)


def dtype_after(el: Any) -> str | None:
    """The dtype ``el`` returns, or None when it returns its input's dtype."""
    return el.dtype_after()


def struct_after(el: Any, shape: tuple[int, ...], dtype: Any) -> tuple[tuple[int, ...], Any]:
    """``(shape, dtype)`` of ``el``'s output for one HWC image of ``shape`` and ``dtype``."""
    return el.struct_after(tuple(shape), dtype)


def layout_effect(el: Any) -> str | None:
    """The layout ``el`` sets on its output (normalize to CHW, ...), or None if it keeps it."""
    return el.layout_effect()


def _check_input(spec: Any, image: jax.Array, where: str) -> None:
    layout = "HWC" if "HWC" in spec.layouts else "CHW"
    h, w, c = image.shape
    shape = (1, h, w, c) if layout == "HWC" else (1, c, h, w)
    check_images(jax.ShapeDtypeStruct(shape, image.dtype), spec, layout, op=where)


def check_op_input(el: BoundOp, image: jax.Array, where: str) -> None:
    """The input checks :func:`run_op` makes (one HWC image the op accepts), without running
    the op."""
    if image.ndim != 3:
        raise InputError(f"{where}: expects one HWC image per sample, got shape {image.shape}")
    _check_input(el.spec, image, where)


def meta_after(el: Any, meta: Meta) -> Meta:
    """The :class:`Meta` of ``el``'s output for an input described by ``meta``."""
    (h, w, c), dtype = struct_after(el, (meta.height, meta.width, meta.channels), meta.dtype)
    return Meta(h, w, c, jnp.dtype(dtype).name, meta.batch)


def draw_element(el: Any, key: jax.Array, meta: Meta, **overrides: Any) -> dict[str, Any]:
    """One sample's params of a chain element (an op, with per-sample ``overrides``, or a
    composite)."""
    if isinstance(el, BoundOp):
        return el.draw(key, meta, overrides or None)
    return el.draw(key, meta)


def element_matrix(el: Any, params: Any, meta: Meta) -> jax.Array:
    """One sample's forward 3x3 matrix of a chain element."""
    return el.matrix(params, meta)


def run_op(el: BoundOp, image: jax.Array, params: dict[str, Any], where: str) -> jax.Array:
    """Runs a sample-level op's kernel on one HWC image with its params, checking the input
    and the promised output."""
    spec = el.spec
    check_op_input(el, image, where)
    out = el.run(image, params)
    expected = struct_after(el, tuple(image.shape), image.dtype)
    if (tuple(out.shape), jnp.dtype(out.dtype)) != expected:
        raise OpDefinitionError(
            f"op {spec.name!r}: the kernel returned {out.dtype} {tuple(out.shape)} for one image, "
            f"but its declaration promises {expected[1]} {expected[0]} (HWC)"
        )
    return out


def run_element(el: Any, image: jax.Array, params: Any, owner: str) -> jax.Array:
    """Applies a chain element to one HWC image with its params."""
    if isinstance(el, BoundOp):
        return run_op(el, image, params, f"{owner}/{el.name}")
    return el.run(image, params)
