"""Box formats and the boxes' validity rule, at the edges of the targets' pass.

A call's boxes come in one of torchvision v2's ``BoundingBoxFormat`` layouts, ``"xyxy"``
(x1, y1, x2, y2; the default), ``"xywh"`` (x1, y1, width, height) or ``"cxcywh"`` (centre x,
centre y, width, height), in pixels (edges: a box over the whole image is ``(0, 0, W, H)`` in
XYXY) or normalised by the image's width and height (``boxes_normalized=True``, or the format
name with an ``n``: ``"xyxyn"``, ``"xywhn"``, ``"cxcywhn"``, as YOLO-style tools spell them).
Names are case-insensitive, so torchvision's ``"XYWH"`` and its ``BoundingBoxFormat.XYWH`` are
taken too. The targets' pass (:func:`augjax._runtime.targets.follow.follow_targets`) converts them
to pixel XYXY once before the first op and back once after the last (normalised by the output's
size), so no op sees another format. Rotated boxes (``"xywhr"``, ``"cxcywhr"``,
``"xyxyxyxy"``; pixels only) travel as their 4 corners instead
(:mod:`augjax._runtime.targets.rotated`).

:func:`convert_boxes` is the same conversion, public: torchvision's
``convert_bounding_box_format`` arithmetic on floats (``tests/targets/test_boxes.py`` checks it
against torchvision on random boxes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.kinds import torch_hint
from augjax._core.targets import Sanitize
from augjax._runtime.targets.rotated import ROTATED, WIDTH, from_corners, to_corners
from augjax.errors import InputError, InputTypeError

__all__ = ["FORMATS", "parse_format", "parse_sanitize", "to_xyxy", "from_xyxy", "convert_boxes",
           "box_rule", "visible_fraction", "valid_first"]

#: The unrotated formats (torchvision ``BoundingBoxFormat`` names, lower case).
FORMATS = ("xyxy", "xywh", "cxcywh")


def parse_format(fmt: Any, normalized: Any = None, *, op: str = "augjax",
                 argument: str = "boxes_format") -> tuple[str, bool]:
    """``(format, normalised)`` from a format name (any case, an ``n`` suffix for normalised;
    or torchvision's ``BoundingBoxFormat``) and ``boxes_normalized`` (None: from the name).
    Rotated formats (``xywhr``, ``cxcywhr``, ``xyxyxyxy``) are in pixels only.

    Raises:
        InputError: an unknown format, normalised rotated boxes, or a non-bool ``normalized``.
    """
    name = getattr(fmt, "value", fmt)  # torchvision's BoundingBoxFormat is an Enum of str
    if not isinstance(name, str):
        raise InputError(f"{op}: argument '{argument}' expects a format name (one of "
                         f"{', '.join(FORMATS + ROTATED)}, with an 'n' for normalised), got "
                         f"{fmt!r}", op=op, argument=argument)
    low, norm = name.lower(), False
    if low not in FORMATS + ROTATED and low.endswith("n") and low[:-1] in FORMATS + ROTATED:
        low, norm = low[:-1], True
    if low not in FORMATS + ROTATED:
        raise InputError(f"{op}: argument '{argument}' expects one of {', '.join(FORMATS)} "
                         f"(or xyxyn, xywhn, cxcywhn: normalised) or a rotated format "
                         f"({', '.join(ROTATED)}), got {name!r}", op=op, argument=argument)
    if normalized is not None and not isinstance(normalized, (bool, np.bool_)):
        raise InputError(f"{op}: argument 'boxes_normalized' expects a bool, got "
                         f"{normalized!r}", op=op, argument="boxes_normalized")
    if normalized is not None and norm and not normalized:
        raise InputError(f"{op}: argument 'boxes_normalized' is False but boxes_format={name!r} "
                         f"names normalised boxes", op=op, argument="boxes_normalized")
    if low in ROTATED and (norm or normalized):
        where = argument if norm else "boxes_normalized"
        raise InputError(f"{op}: argument '{where}' expects rotated boxes ({low}) in pixels "
                         f"(normalising x by the width and y by the height would change their "
                         f"angles; torchvision has no normalised rotated format), got "
                         f"{name!r} normalised", op=op, argument=where)
    return low, bool(norm or normalized)


def parse_sanitize(value: Any, op: str = "augjax") -> Sanitize | None:
    """A call's ``sanitize=`` as a :class:`Sanitize` (None: the default rule, today's)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"min_size", "min_area", "min_visibility", "valid_first"})
        if unknown:
            raise InputError(f"{op}: argument 'sanitize' takes min_size, min_area, "
                             f"min_visibility and valid_first, got {unknown[0]!r}", op=op,
                             argument="sanitize")
        try:
            value = Sanitize(**value)
        except InputError as err:
            raise InputError(f"{op}: {err}", op=op, argument="sanitize") from None
    if not isinstance(value, Sanitize):
        raise InputError(f"{op}: argument 'sanitize' expects augjax.Sanitize(...) or a dict of "
                         f"its fields, got {type(value).__name__}", op=op, argument="sanitize")
    return None if value == Sanitize() else value


def _xp(boxes: Any) -> Any:
    return np if isinstance(boxes, np.ndarray) else jnp


def _scale(b: Any, h: int, w: int, xp: Any) -> Any:
    return xp.asarray([w, h, w, h], dtype=b.dtype)


def to_xyxy(b: Any, fmt: str, normalized: bool, h: int, w: int) -> Any:
    """Boxes ``(..., 4)`` (float) in ``fmt`` as pixel XYXY for an ``h`` x ``w`` image (rotated
    boxes ``(..., 5 or 8)``: as corners ``(..., 8)``, XYXYXYXY)."""
    if fmt in ROTATED:
        return to_corners(b, fmt)
    xp = _xp(b)
    if normalized:
        b = b * _scale(b, h, w, xp)
    if fmt == "xywh":
        b = xp.concatenate([b[..., :2], b[..., :2] + b[..., 2:]], axis=-1)
    elif fmt == "cxcywh":
        half = b[..., 2:] / 2
        b = xp.concatenate([b[..., :2] - half, b[..., :2] + half], axis=-1)
    return b


def from_xyxy(b: Any, fmt: str, normalized: bool, h: int, w: int) -> Any:
    """Pixel XYXY boxes ``(..., 4)`` (float) of an ``h`` x ``w`` image in ``fmt`` (rotated
    ``fmt``: corners ``(..., 8)`` in it)."""
    if fmt in ROTATED:
        return from_corners(b, fmt)
    xp = _xp(b)
    if fmt == "xywh":
        b = xp.concatenate([b[..., :2], b[..., 2:] - b[..., :2]], axis=-1)
    elif fmt == "cxcywh":
        b = xp.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], axis=-1)
    if normalized:
        b = b / _scale(b, h, w, xp)
    return b


def convert_boxes(boxes: Any, from_: Any, to: Any, size: tuple[int, int] | None = None) -> Any:
    """Converts boxes between formats, as torchvision's ``convert_bounding_box_format``, plus
    normalised forms.

    Args:
        boxes: ``(..., 4)`` boxes (rotated: ``(..., 5)`` or ``(..., 8)``): a NumPy array (NumPy
            out), a ``jax.Array`` (jax out; works under ``jax.jit``) or a nested list.
        from_: their format: ``"xyxy"``, ``"xywh"``, ``"cxcywh"`` (pixels), or ``"xyxyn"``,
            ``"xywhn"``, ``"cxcywhn"`` (normalised by the image's width and height), or a rotated
            one, ``"xywhr"``, ``"cxcywhr"`` (angle in degrees, counter-clockwise) or
            ``"xyxyxyxy"`` (the 4 corners; pixels only); any case, torchvision's
            ``BoundingBoxFormat`` too.
        to: the format wanted, one of the same; rotated and unrotated boxes do not convert
            into each other (as in torchvision: a rotated box has no exact XYXY form).
        size: ``(height, width)`` of the image (torchvision's ``canvas_size``); needed when one
            side is normalised.

    Returns:
        The boxes in ``to``, float (float inputs keep their dtype; integers become float32).

    Raises:
        InputError: a bad format, shape or ``size``, or rotated to unrotated (or back).
    """
    name = "convert_boxes"
    src = parse_format(from_, op=name, argument="from_")
    dst = parse_format(to, op=name, argument="to")
    if (src[0] in ROTATED) != (dst[0] in ROTATED):
        kind = "a rotated" if src[0] in ROTATED else "an unrotated"
        raise InputError(f"{name}: argument 'to' expects {kind} format like from_="
                         f"{src[0]!r} (rotated and unrotated boxes do not convert into each "
                         f"other, as in torchvision), got {dst[0]!r}", op=name, argument="to")
    if isinstance(boxes, (list, tuple)):
        boxes = np.asarray(boxes)
    width = WIDTH[src[0]]
    if not isinstance(boxes, (np.ndarray, jax.Array)):
        raise InputTypeError(f"{name}: argument 'boxes' expects a jax.Array or NumPy array of "
                             f"shape (..., {width}), got {type(boxes).__name__}"
                             f"{torch_hint(boxes, 'boxes')}", op=name,
                             argument="boxes")
    dt = np.dtype(boxes.dtype)
    if boxes.ndim < 1 or boxes.shape[-1] != width or dt == np.bool_ or \
            not np.issubdtype(dt, np.number):
        raise InputError(f"{name}: argument 'boxes' expects numbers of shape (..., {width}) "
                         f"({src[0]}), got {dt.name} {tuple(boxes.shape)}", op=name,
                         argument="boxes")
    if not np.issubdtype(dt, np.floating):
        boxes = boxes.astype(np.float32)
    h = w = 1
    if src[1] or dst[1]:
        ok = (isinstance(size, (tuple, list)) and len(size) == 2
              and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
                      for v in size))
        if not ok:
            raise InputError(f"{name}: argument 'size' expects (height, width) in pixels (for "
                             f"normalised boxes), got {size!r}", op=name, argument="size")
        h, w = int(size[0]), int(size[1])
    if src == dst:
        return boxes.copy() if isinstance(boxes, np.ndarray) else boxes
    return from_xyxy(to_xyxy(boxes, *src, h, w), *dst, h, w)


# -- the validity rule ---------------------------------------------------------------------------
def box_rule(boxes: jax.Array, h: int, w: int, min_size: float = 1.0,
             min_area: float = 1.0) -> jax.Array:
    """torchvision's ``SanitizeBoundingBoxes`` mask on pixel XYXY boxes of an ``h`` x ``w``
    image: wide, high and large enough, and inside ``[0, w] x [0, h]`` (rotated boxes:
    :func:`augjax._runtime.targets.rotated.rule`)."""
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    return ((ws >= min_size) & (hs >= min_size) & (ws * hs >= min_area)
            & jnp.all(boxes >= 0.0, axis=-1)
            & (boxes[..., 0] <= w) & (boxes[..., 2] <= w) & (boxes[..., 1] <= h)
            & (boxes[..., 3] <= h))


def visible_fraction(raw: jax.Array, clamped: jax.Array) -> jax.Array:
    """The part of each box's area (``raw``, XYXY before clamping) that ``clamped`` keeps
    (albumentations' visibility); 0 for a box of no area."""
    area = (raw[..., 2] - raw[..., 0]) * (raw[..., 3] - raw[..., 1])
    kept = (clamped[..., 2] - clamped[..., 0]) * (clamped[..., 3] - clamped[..., 1])
    return jnp.where(area > 0, kept / jnp.where(area > 0, area, 1.0), 0.0)


def valid_first(boxes: jax.Array, valid: jax.Array) -> tuple[jax.Array, ...]:
    """Each sample's boxes ``(N, M, 4)`` with the valid ones first, in their order:
    ``(boxes, valid, count (N,) int32, index (N, M) int32)``."""
    index = jnp.argsort((~valid).astype(jnp.int32), axis=1, stable=True).astype(jnp.int32)
    boxes = jnp.take_along_axis(boxes, index[..., None], axis=1)
    valid = jnp.take_along_axis(valid, index, axis=1)
    return boxes, valid, valid.sum(axis=1, dtype=jnp.int32), index
