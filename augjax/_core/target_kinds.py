"""Targets as types: masks, boxes and keypoints that say what they are (torchvision v2's
``tv_tensors.Mask``, ``BoundingBoxes(format=...)`` and ``KeyPoints``).

A target type wraps the array and the options that describe it, so that a call needs no
separate ``boxes_format=`` / ``mask_fill=``: ``step(images, key=k, boxes=augjax.Boxes(b,
format="cxcywh"))``. The call returns each wrapped target as the same type, with the same
options (boxes keep their format), as it returns an :class:`augjax.Clips` for clips: the
array inside is the one the plain keywords give, bit for bit. Plain arrays keep working, and
the two may be mixed in one call.

- :class:`Masks`: ``(N, H, W)`` or ``(N, H, W, K)`` integer masks (clips: ``(N, T, ...)``);
  ``fill``: the id of pixels that come from outside the image (the call's ``mask_fill=``).
- :class:`Boxes`: ``(N, M, 4)`` (rotated: 5 or 8); ``format`` (``"xyxy"``, ``"xywh"``,
  ``"cxcywh"``, ``"xywhr"``, ``"cxcywhr"``, ``"xyxyxyxy"``) and ``normalized`` (the call's
  ``boxes_format=`` / ``boxes_normalized=``).
- :class:`Keypoints`: ``(N, K, 2)`` or grouped ``(N, G, K, 2)``, as ``(x, y)``.

Each is a pytree (its options static), so it passes through ``jax.jit``. Importing this
module imports JAX only to register the pytrees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import jax

from augjax._core.kinds import Wrapped
from augjax.errors import InputError

__all__ = ["Boxes", "Keypoints", "Masks", "Target", "rewrap_targets", "unwrap_targets"]


class Target(Wrapped):
    """A target array and the options that describe it. Subclasses name the call keyword
    they stand for (``keyword``) and map their options to the call's option keywords
    (``options``: attribute name -> keyword, with its default)."""

    keyword: ClassVar[str] = ""
    options: ClassVar[dict[str, tuple[str, Any]]] = {}

    array: Any

    def __init__(self, array: Any, **options: Any) -> None:
        name = f"augjax.{type(self).__name__}"
        if isinstance(array, Target):
            raise InputError(f"{name}: argument 'array' expects an array, got {array!r} (a "
                             f"target type already)", op=name, argument="array")
        if any(c.__module__.split(".")[0] == "torch" for c in type(array).__mro__):
            fmt = getattr(getattr(array, "format", None), "name", None)
            said = (f"; it holds {fmt} boxes: augjax.Boxes(t.numpy(), format={fmt.lower()!r})"
                    if fmt and isinstance(self, Boxes) else "")
            raise InputError(f"{name}: argument 'array' expects a jax.Array or NumPy array, "
                             f"got {type(array).__module__}.{type(array).__qualname__}; "
                             f"convert a torch tensor with t.numpy() (CPU) or "
                             f"jax.dlpack.from_dlpack(t){said}", op=name, argument="array")
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise InputError(f"{name}: unexpected argument(s) {unknown}; it takes "
                             f"{sorted(self.options) or 'no options'}", op=name,
                             argument=unknown[0])
        self.array = array
        for attr, (_, default) in self.options.items():
            setattr(self, attr, options.get(attr, default))

    @property
    def keywords(self) -> dict[str, Any]:
        """The call's option keywords this target stands for (``{"boxes_format": ...}``)."""
        return {kw: getattr(self, attr) for attr, (kw, _) in self.options.items()}

    def tree_flatten(self) -> tuple[tuple[Any], tuple[Any, ...]]:
        return (self.array,), tuple(getattr(self, attr) for attr in self.options)

    @classmethod
    def tree_unflatten(cls, aux: tuple[Any, ...], children: Any) -> Target:
        target = object.__new__(cls)
        target.array = children[0]
        for attr, value in zip(cls.options, aux, strict=True):
            setattr(target, attr, value)
        return target

    def __repr__(self) -> str:
        described = f"shape={self.shape}, dtype={self.dtype}" if self.shape is not None else \
            type(self.array).__name__
        options = "".join(f", {attr}={getattr(self, attr)!r}" for attr in self.options)
        return f"augjax.{type(self).__name__}({described}{options})"


@jax.tree_util.register_pytree_node_class
class Masks(Target):
    """Integer masks that follow the image (nearest sampling); ``fill``: the id of pixels that
    come from outside the image (default 0)."""

    keyword = "masks"
    options = {"fill": ("mask_fill", 0)}


@jax.tree_util.register_pytree_node_class
class Boxes(Target):
    """Boxes in pixels (``normalized=True``: fractions of the image) in ``format``."""

    keyword = "boxes"
    options = {"format": ("boxes_format", "xyxy"), "normalized": ("boxes_normalized", False)}


@jax.tree_util.register_pytree_node_class
class Keypoints(Target):
    """Points ``(x, y)`` in pixels."""

    keyword = "keypoints"
    options = {}


_TYPES = {t.keyword: t for t in (Masks, Boxes, Keypoints)}


def unwrap_targets(name: str, targets: Mapping[str, Any]) -> tuple[dict[str, Any],
                                                                   dict[str, Target]]:
    """A call's target keywords with each target type replaced by its array and options:
    ``(plain keywords, {keyword: the target given})``.

    Raises:
        InputError: a target type given for another keyword (``masks=augjax.Boxes(...)``), a
            target type where none exists (``boxes_valid=augjax.Masks(...)``), or an option
            keyword that disagrees with the type's (``boxes=augjax.Boxes(b,
            format="cxcywh"), boxes_format="xyxy"``).
    """
    plain = dict(targets)
    given: dict[str, Target] = {}
    for keyword, value in targets.items():
        if not isinstance(value, Target):
            continue
        expected = _TYPES.get(keyword)
        if expected is None or not isinstance(value, expected):
            want = f"augjax.{expected.__name__} or an array" if expected else "an array"
            raise InputError(f"{name}: argument '{keyword}' expects {want}, got "
                             f"augjax.{type(value).__name__}", op=name, argument=keyword)
        plain[keyword] = value.array
        for option, setting in value.keywords.items():
            if option in targets and targets[option] != setting:
                raise InputError(
                    f"{name}: argument '{option}' expects {setting!r} (what the augjax."
                    f"{type(value).__name__} given as '{keyword}' says) or nothing, got "
                    f"{targets[option]!r}", op=name, argument=option)
            plain[option] = setting
        given[keyword] = value
    return plain, given


def rewrap_targets(result: Any, given: Mapping[str, Target]) -> Any:
    """A call's result with each target that came as a type returned as that type (same
    options); other entries as they are."""
    if not given or not isinstance(result, dict):
        return result
    out = dict(result)
    for keyword, target in given.items():
        if keyword in out and not _is_node(out[keyword]):
            out[keyword] = type(target).tree_unflatten(target.tree_flatten()[1], (out[keyword],))
    return out


def _is_node(x: Any) -> bool:
    """A DALI ``DataNode`` (a pipeline's output stays a node), decided without importing DALI."""
    return type(x).__module__.startswith("nvidia.dali") and type(x).__name__ == "DataNode"
