"""Targets that follow the image: masks, boxes and keypoints (torchvision v2 ``tv_tensors``).

A call takes them as keywords, ``op(images, key=k, masks=m, boxes=b, keypoints=p)``, and then
returns a dict ``{"images", "labels"?, "masks"?, "boxes"?, "boxes_valid"?, "keypoints"?,
"keypoints_valid"?}``. They run inside the same compiled program as the images (on arrays one
jitted call, in DALI the same ``jax_function``), with the same params, step by step:

- **masks** ``(N, H, W)`` or ``(N, H, W, K)``, integer or bool (class or instance ids): every
  op that moves pixels runs its own kernel on them with ``interpolation="nearest"`` (and
  ``antialias=False``), so a mask pixel goes exactly where the image pixel goes. The ids are
  carried as their bytes (an int32 mask is four uint8 channels), so any value is exact, plus one
  channel that is 255 inside the image (an op that declares ``channels=`` gets them in groups
  of its largest declared count, zero-padded): pixels that come from outside (rotation corners,
  padding) get ``mask_fill`` (default 0; torchvision's ``fill={tv_tensors.Mask: v}``). Colour ops
  and erasing leave masks unchanged; ``cutmix`` pastes the partner's mask with its box, ``mixup``
  keeps the mask of the image with the larger weight (see :mod:`augjax.catalog.mix`).
- **boxes** ``(N, M, 4)`` XYXY in pixel *edges* (pixel ``j`` spans ``[j, j + 1]``, a box over the
  whole image is ``(0, 0, W, H)``), as torchvision: each op's forward matrix moves the 4 corners,
  the box becomes their enclosing box, clamped to ``[0, W] x [0, H]``; a box is flagged invalid
  (``boxes_valid``) once it fails torchvision's ``SanitizeBoundingBoxes`` rule (``min_size=1``,
  ``min_area=1``) after a geometric op, and stays invalid. ``boxes_valid=`` takes an ``(N, M)``
  bool mask or ``(N,)`` counts (the first ``count`` boxes are real); default all valid.
  ``boxes_format=`` / ``boxes_normalized=`` take other layouts (converted to pixel XYXY once
  before the first op and back once after the last: :mod:`augjax._runtime.targets.boxes`; rotated
  boxes travel as corners and follow torchvision's rotated-box kernels:
  :mod:`augjax._runtime.targets.rotated`);
  ``sanitize=`` (:class:`augjax.Sanitize`) sets the rule's ``min_size`` / ``min_area``, adds
  ``min_visibility`` (the fraction of a box's area left inside, multiplied over the stages) and
  ``valid_first`` (valid boxes first, with ``boxes_count`` and ``boxes_index``).
- **keypoints** ``(N, K, 2)`` x, y in pixel *indices* (pixel ``j``'s centre at ``j``, as augjax's
  matrices and torchvision's keypoint flips): moved by the forward matrix, not clamped, flagged
  invalid (``keypoints_valid``) once outside ``[0, W) x [0, H)`` (torchvision's
  ``SanitizeKeyPoints`` rule), and they stay invalid. Grouped keypoints ``(N, G, K, 2)`` (with
  ``keypoints_valid`` ``(N, G, K)`` as visibility) move as ``(N, G * K, 2)``.

Outputs: masks in their dtype and rank, boxes and keypoints float32, validity bool. Steps move
boxes one by one, and composites stage by stage (a chain per op, a policy per layer), as
torchvision's transforms do; a box that fails the rule at any stage stays invalid.

Against torchvision 0.29 on the same params (``tests/targets/test_torchvision.py``; 24 x 32
images, flips, rotate, affine, shears, translations, perspective, resized / random / center
crops, resize): masks equal pixel for pixel (nearest ties as in :mod:`augjax.kernels.warp`),
boxes within 5e-6 pixel (float32 matrices; torchvision float64), keypoints equal for flips,
crops and whole-pixel shifts. Differences:

- keypoints: torchvision's affine, perspective and resize kernels treat keypoints as pixel
  edges (rotation about ``(W/2, H/2)``, resize ``x * scale``) while its flips treat them as pixel
  indices (``W - 1 - x``); augjax uses indices throughout, so after rotations, affine warps,
  perspective and resizes its keypoints differ from torchvision's by up to 0.62 pixel (rotate
  +-60 deg), 0.58 (resized crop), 0.40 (affine), 0.37 (perspective), 0.11 (shear): exactly
  torchvision's result on ``p + 0.5``, minus 0.5;
- validity: augjax clamps boxes after every op; torchvision's ``resized_crop`` does not clamp
  after its resize, so float32 scales leave ``x2 = 28.000002`` on a 28-wide canvas and its own
  ``SanitizeBoundingBoxes`` then drops full-width boxes (4 of 5 in one test sample) that augjax
  keeps valid (the test compares with ``ClampBoundingBoxes`` + ``SanitizeBoundingBoxes``);
- masks in ``center_crop``'s zero padding get ``mask_fill`` (torchvision: 0 always); a scalar
  ``fill`` of an op never reaches masks (torchvision applies a non-dict ``fill`` to masks too);
- resizes sample masks with torchvision's legacy nearest (source index ``floor(dst * in /
  out)``), half an output pixel up-left of the centre-aligned geometry the boxes follow, as
  torchvision does; so a mask pixel's centre may lie up to 0.5 pixel outside its moved box
  there, and through a chain of warps up to about 0.5 pixel per further warp.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.meta import Meta
from augjax._core.step import Structure
from augjax._core.targets import HOOK, REFUSE, Sanitize
from augjax._runtime.targets import boxes as _boxes
from augjax._runtime.targets import rotated as _rotated
from augjax._runtime.targets.masks import decode_masks, encode_masks
from augjax._runtime.targets.inputs import (TargetSpec, _default_validity, _rotated_refused,
                                           check_target_shapes)
from augjax.errors import InputError

__all__ = ["follow_targets", "gated", "move_boxes", "move_keypoints", "sanitize_boxes"]

_F32 = jnp.float32

# -- masks ---------------------------------------------------------------------------------------
def _transform(m: jax.Array, xy: jax.Array) -> jax.Array:
    x, y = xy[..., 0], xy[..., 1]
    den = m[2, 0] * x + m[2, 1] * y + m[2, 2]
    return jnp.stack([(m[0, 0] * x + m[0, 1] * y + m[0, 2]) / den,
                      (m[1, 0] * x + m[1, 1] * y + m[1, 2]) / den], axis=-1)


def sanitize_boxes(boxes: jax.Array, h: int, w: int) -> jax.Array:
    """torchvision ``SanitizeBoundingBoxes`` (``min_size=1``, ``min_area=1``) on XYXY boxes."""
    return _boxes.box_rule(boxes, h, w)


def move_boxes(m: jax.Array, boxes: jax.Array, valid: jax.Array, h: int,
               w: int) -> tuple[jax.Array, jax.Array]:
    """One sample's XYXY ``boxes`` (M, 4) through the forward matrix ``m`` to an output of
    ``h`` x ``w``: the enclosing box of the 4 moved corners, clamped; validity updated."""
    x1, y1, x2, y2 = (boxes[:, i] for i in range(4))
    corners = jnp.stack([jnp.stack([x1, y1], -1), jnp.stack([x2, y1], -1),
                         jnp.stack([x2, y2], -1), jnp.stack([x1, y2], -1)], axis=1)
    moved = _transform(m, corners - 0.5) + 0.5  # edges -> pixel centres -> edges
    lo, hi = moved.min(axis=1), moved.max(axis=1)
    out = jnp.concatenate([lo, hi], axis=-1)
    out = jnp.clip(out, 0.0, jnp.array([w, h, w, h], _F32))
    return out, valid & sanitize_boxes(out, h, w)


def move_keypoints(m: jax.Array, points: jax.Array, valid: jax.Array, h: int,
                   w: int) -> tuple[jax.Array, jax.Array]:
    """One sample's keypoints (K, 2) through ``m``; flagged once outside ``[0, w) x [0, h)``."""
    out = _transform(m, points)
    inside = (out[:, 0] >= 0) & (out[:, 0] < w) & (out[:, 1] >= 0) & (out[:, 1] < h)
    return out, valid & inside


def point_stages(step: Any, params: Any, meta: Meta) -> tuple[tuple[Any, tuple[int, int]], ...]:
    """A step's stages for boxes and keypoints (see ``Step.stages``): an op gives its matrix
    (or nothing, or refuses, by its ``targets`` rule); a composite its own stages."""
    return step.stages(params, meta)


def gated(stages: Sequence[Any], on: jax.Array) -> tuple[Any, ...]:
    """``stages`` where ``on``, identity matrices elsewhere."""
    eye = jnp.eye(3, dtype=_F32)
    return tuple((jnp.where(on, m, eye), size) for m, size in stages)


# -- the pass over a program's steps -------------------------------------------------------------
def follow_targets(steps: Sequence[Any], params: Sequence[Any], spec: TargetSpec,
                   arrays: Sequence[Any], shape: tuple[int, int, int, int], dtype: Any,
                   name: str, inner: bool = False) -> tuple[jax.Array, ...]:
    """The targets after ``steps`` with ``params`` (traced): ``arrays`` in ``spec.names`` order
    for a batch of HWC ``shape`` and ``dtype``; returns the same names, moved (``inner``: boxes
    left as pixel XYXY, rotated ones as corners, for a sampler that reads them)."""
    n, h, w, c = shape
    t = _default_validity(name, dict(zip(spec.names, arrays)), n)
    check_target_shapes(name, t, n, h, w, spec.boxes_format)
    mask_dtype, mask_rank = None, 0
    if "masks" in t:
        mask_dtype, mask_rank = t["masks"].dtype, t["masks"].ndim
        t["masks"] = encode_masks(t["masks"])
    for key in ("boxes", "keypoints"):
        if key in t:
            t[key] = t[key].astype(_F32)
    groups = t["keypoints"].shape[1:-1] if "keypoints" in t else ()
    if len(groups) == 2:  # grouped (N, G, K, 2): moved as (N, G * K, 2)
        t["keypoints"] = t["keypoints"].reshape(n, -1, 2)
        t["keypoints_valid"] = t["keypoints_valid"].reshape(n, -1)
    rule = spec.sanitize
    if spec.boxes_format in _rotated.ROTATED and rule is None:
        rule = Sanitize()  # rotated boxes always follow a rule's path (their own validity)
    if "boxes" in t and not spec.plain:
        t["boxes"] = _boxes.to_xyxy(t["boxes"], spec.boxes_format, spec.boxes_normalized, h, w)
        if rule is not None and rule.min_visibility > 0:
            t["boxes_seen"] = jnp.ones(t["boxes"].shape[:2], _F32)
    dtype = jnp.dtype(dtype)
    given = t.get("boxes")  # still this object after the steps: none moved the boxes
    for step, p in zip(steps, params):
        (h2, w2, c2, dtype2, _) = step.after(Structure(h, w, c, dtype.name))
        if step.level == "batch":
            t = _batch_targets(step, p, t, rule, (h, w), h2, w2, spec.boxes_format)
        else:
            if "masks" in t:
                t["masks"] = jax.vmap(step.run_masks)(t["masks"], p)
            if "boxes" in t or "keypoints" in t:
                t = _move_points(step, p, t, Meta(h, w, c, dtype.name), n, rule)
        h, w, c, dtype = h2, w2, c2, jnp.dtype(dtype2)
    t = _unmoved_validity(t, given, rule, n, h, w)
    if "masks" in t:
        t["masks"] = decode_masks(t["masks"], mask_dtype, mask_rank, spec.mask_fill)
    if len(groups) == 2:  # (a batch hook may have made more groups of K: mosaic)
        g = t["keypoints"].shape[1] // groups[1]
        t["keypoints"] = t["keypoints"].reshape(n, g, groups[1], 2)
        t["keypoints_valid"] = t["keypoints_valid"].reshape(n, g, groups[1])
    if "boxes" in t and not spec.plain:
        t.pop("boxes_seen", None)
        if inner:
            return tuple(t.get(k) for k in spec.outputs)
        t["boxes"] = _boxes.from_xyxy(t["boxes"], spec.boxes_format, spec.boxes_normalized, h, w)
        if rule is not None and rule.valid_first:
            (t["boxes"], t["boxes_valid"], t["boxes_count"],
             t["boxes_index"]) = _boxes.valid_first(t["boxes"], t["boxes_valid"])
    return tuple(t[k] for k in spec.outputs)


def _unmoved_validity(t: dict[str, Any], given: Any, rule: Any, n: int, h: int,
                     w: int) -> dict[str, Any]:
    """The validity of boxes that no step moved (a colour-only chain): what an identity
    geometric op gives them under the call's rule (a NaN box, one outside the image or below
    the rule's size is invalid), their coordinates kept as given (colour ops do not clamp)."""
    if "boxes" not in t or t["boxes"] is not given:
        return t
    eye = jnp.broadcast_to(jnp.eye(3, dtype=_F32), (n, 3, 3))
    return {**t, "boxes_valid": _move_points_by(eye, t, rule, h, w)["boxes_valid"]}


def move_boxes_by(rule: Any, m: jax.Array, boxes: jax.Array, valid: jax.Array, seen: Any,
                  h: int, w: int) -> tuple[jax.Array, jax.Array, Any]:
    """:func:`move_boxes` under a :class:`augjax.Sanitize` rule: ``(boxes, valid, seen)``,
    ``seen`` (the fraction of each box's area still inside, or None when not tracked) times
    this stage's visible fraction."""
    x1, y1, x2, y2 = (boxes[:, i] for i in range(4))
    corners = jnp.stack([jnp.stack([x1, y1], -1), jnp.stack([x2, y1], -1),
                         jnp.stack([x2, y2], -1), jnp.stack([x1, y2], -1)], axis=1)
    moved = _transform(m, corners - 0.5) + 0.5
    raw = jnp.concatenate([moved.min(axis=1), moved.max(axis=1)], axis=-1)
    out = jnp.clip(raw, 0.0, jnp.array([w, h, w, h], _F32))
    valid = valid & _boxes.box_rule(out, h, w, rule.min_size, rule.min_area)
    if seen is not None:
        seen = seen * _boxes.visible_fraction(raw, out)
        valid = valid & (seen >= rule.min_visibility)
    return out, valid, seen


def _move_points(step: Any, p: Any, t: dict[str, Any], meta: Meta, n: int,
                 rule: Any = None) -> dict[str, Any]:
    sizes = [size for _, size in point_stages(step, jax.tree_util.tree_map(lambda v: v[0], p),
                                              meta)] if n else []
    if not sizes:
        return t
    ms = jax.vmap(lambda q: tuple(m for m, _ in point_stages(step, q, meta)), axis_size=n)(p)
    t = dict(t)
    for m, (h, w) in zip(ms, sizes):
        if "boxes" in t:
            t = _move_points_by(m, t, rule, h, w)
        if "keypoints" in t:
            t["keypoints"], t["keypoints_valid"] = jax.vmap(
                lambda a, k, v, h=h, w=w: move_keypoints(a, k, v, h, w))(
                    m, t["keypoints"], t["keypoints_valid"])
    if "boxes" in t and _drops_boxes(step, p):  # a sampler that saw the boxes drops some
        t["boxes_valid"] = t["boxes_valid"] & p["boxes_valid"]
    return t


def _move_points_by(m: jax.Array, t: dict[str, Any], rule: Any, h: int,
                    w: int) -> dict[str, Any]:
    """``t`` with its boxes moved by the matrices ``m`` ``(N, 3, 3)`` to an ``h`` x ``w``
    output, under the call's rule."""
    t = dict(t)
    if t["boxes"].shape[-1] == 8:  # rotated: corners (N, M, 8)
        t["boxes"], t["boxes_valid"], seen = jax.vmap(
            lambda a, b, v, s: _rotated.move_by(rule, a, b, v, s, h, w))(
                m, t["boxes"], t["boxes_valid"], t.get("boxes_seen"))
        if seen is not None:
            t["boxes_seen"] = seen
    elif rule is not None:
        t["boxes"], t["boxes_valid"], seen = jax.vmap(
            lambda a, b, v, s: move_boxes_by(rule, a, b, v, s, h, w))(
                m, t["boxes"], t["boxes_valid"], t.get("boxes_seen"))
        if seen is not None:
            t["boxes_seen"] = seen
    else:
        t["boxes"], t["boxes_valid"] = jax.vmap(
            lambda a, b, v: move_boxes(a, b, v, h, w))(m, t["boxes"], t["boxes_valid"])
    return t


def _drops_boxes(step: Any, p: Any) -> bool:
    """Whether ``step``'s params carry a ``boxes_valid`` of its own: an op whose sampler reads
    the boxes (``sample_targets``) may flag some invalid (``random_iou_crop``: those whose
    centre lies outside its crop)."""
    return ("boxes" in step.sample_targets and isinstance(p, Mapping)
            and "boxes_valid" in p)


def _batch_targets(step: Any, params: Any, t: dict[str, Any], sanitize: Any,
                   size: tuple[int, int], h: int, w: int,
                   boxes_format: str = "xyxy") -> dict[str, Any]:
    """The targets after a batch-level step (input ``size``, output ``h`` x ``w``), by its
    ``batch`` hook.

    A points hook gets the boxes (and ``boxes_seen`` where ``min_visibility`` is tracked) and
    keypoints and may return more of them than came (``mosaic``: four tiles' boxes, ``M ->
    4M``); it returns boxes clamped to the output with its own validity (and ``boxes_seen``
    for its boxes, times the fraction each kept). The call's :class:`augjax.Sanitize` rule is
    then applied here, as after a geometric op."""
    rule = step.follow
    for kind, present in (("masks", "masks" in t),
                          ("points", "boxes" in t or "keypoints" in t)):
        mode = rule.masks if kind == "masks" else rule.points
        if present and mode == REFUSE:
            what = "masks" if kind == "masks" else ("boxes" if "boxes" in t else "keypoints")
            raise InputError(f"{step.name}: {what} cannot follow this op"
                             f"{': ' + rule.reason if rule.reason else ''}", op=step.name,
                             argument=what)
    if rule.points == HOOK and "boxes" in t and t["boxes"].shape[-1] != 4:
        raise _rotated_refused(step.name, boxes_format)  # (a step inside a composite)
    hooked = {k: v for k, v in t.items() if
              (k == "masks" and rule.masks == HOOK) or (k != "masks" and rule.points == HOOK)}
    if not hooked:
        return t
    out = dict(t)
    sizes = {"sizes": (size, (h, w))} if rule.sizes else {}
    out.update(rule.batch(hooked, params, **step.kwargs, **sizes))
    if rule.points == HOOK and "boxes" in hooked:
        min_size, min_area = (1.0, 1.0) if sanitize is None else (sanitize.min_size,
                                                                  sanitize.min_area)
        out["boxes_valid"] = out["boxes_valid"] & _boxes.box_rule(out["boxes"], h, w,
                                                                  min_size, min_area)
        if "boxes_seen" in out:
            out["boxes_valid"] = out["boxes_valid"] & (out["boxes_seen"]
                                                       >= sanitize.min_visibility)
    return out
