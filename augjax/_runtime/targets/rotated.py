"""Rotated boxes: torchvision v2's ``XYWHR``, ``CXCYWHR`` and ``XYXYXYXY`` formats, and how they
follow an op's matrix.

Formats (torchvision ``BoundingBoxFormat``, pixels, angle ``r`` in degrees, counter-clockwise
on the screen, where y points down):

- ``"xywhr"``: ``(x1, y1, w, h, r)``, the first corner, the sides, the angle;
- ``"cxcywhr"``: ``(cx, cy, w, h, r)``, the centre instead of the first corner;
- ``"xyxyxyxy"``: the 4 corners ``(x1, y1, x2, y2, x3, y3, x4, y4)``: ``p2 = p1 + w (cos r,
  -sin r)``, ``p4 = p1 + h (sin r, cos r)``, ``p3 = p2 + p4 - p1``.

Inside the targets' pass boxes are corners (``xyxyxyxy``). An op moves them as torchvision's
rotated-box kernels do (``affine``, ``rotate``, ``perspective``, ``resize``, ``crop``, ``pad``):
its forward matrix moves the 4 corners (pixel edges, as the unrotated boxes), the moved
parallelogram becomes a rectangle (``_parallelogram_to_bounding_boxes``: the longest diagonal
kept), and the rectangle is clamped to the output with torchvision's default ``"soft"``
clamping (``_clamp_rotated_bounding_boxes``: the smallest rectangle of the same angle enclosing
the part inside the image). A matrix that mirrors (a flip) swaps the corners' order as
torchvision's flips do, so ``r`` becomes ``-r`` (horizontal) or ``180 - r`` (vertical).

The conversions are torchvision's ``convert_bounding_box_format`` arithmetic; like it, they
never mix rotated and unrotated boxes (a rotated box has no lossless XYXY form).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["ROTATED", "WIDTH", "to_corners", "from_corners", "rectify", "clamp_soft",
           "inside_area", "area", "sides", "rule", "move_corners", "move_by"]

#: The rotated formats and each one's last dimension.
ROTATED = ("xywhr", "cxcywhr", "xyxyxyxy")
WIDTH = {"xyxy": 4, "xywh": 4, "cxcywh": 4, "xywhr": 5, "cxcywhr": 5, "xyxyxyxy": 8}


def _xp(b: Any) -> Any:
    return np if isinstance(b, np.ndarray) else jnp


def _cos_sin(r: Any, xp: Any) -> tuple[Any, Any]:
    rad = r * np.pi / 180.0
    return xp.cos(rad), xp.sin(rad)


def to_corners(b: Any, fmt: str) -> Any:
    """Rotated boxes ``(..., 5 or 8)`` in ``fmt`` as corners ``(..., 8)`` (torchvision's
    ``_cxcywhr_to_xywhr`` and ``_xywhr_to_xyxyxyxy``)."""
    if fmt == "xyxyxyxy":
        return b
    xp = _xp(b)
    x, y, w, h, r = (b[..., i] for i in range(5))
    cos, sin = _cos_sin(r, xp)
    if fmt == "cxcywhr":
        hw, hh = xp.abs(w / 2), xp.abs(h / 2)
        x = x - hw * cos - hh * sin
        y = y + hw * sin - hh * cos
    return xp.stack([x, y, x + w * cos, y - w * sin, x + (w * cos + h * sin),
                     y - (w * sin - h * cos), x + h * sin, y + h * cos], axis=-1)


def from_corners(c: Any, fmt: str) -> Any:
    """Corners ``(..., 8)`` in the rotated ``fmt`` (torchvision's ``_xyxyxyxy_to_xywhr`` and
    ``_xywhr_to_cxcywhr``): ``r`` from the side ``p1 -> p2``, in ``(-180, 180]``."""
    if fmt == "xyxyxyxy":
        return c
    xp = _xp(c)
    x1, y1, x2, y2, x3, y3 = (c[..., i] for i in range(6))
    r = xp.arctan2(y1 - y2, x2 - x1) / np.pi * 180.0
    w = xp.sqrt((x2 - x1) ** 2 + (y2 - y1) ** 2)
    h = xp.sqrt((x3 - x2) ** 2 + (y3 - y2) ** 2)
    if fmt == "cxcywhr":
        cos, sin = _cos_sin(r, xp)
        hw, hh = xp.abs(w / 2), xp.abs(h / 2)
        x1, y1 = x1 + hw * cos + hh * sin, y1 - hw * sin + hh * cos
    return xp.stack([x1, y1, w, h, r], axis=-1)


def area(c: jnp.ndarray) -> jnp.ndarray:
    """Each quadrilateral's area (shoelace, unsigned) from corners ``(..., 8)``."""
    x, y = c[..., 0::2], c[..., 1::2]
    return jnp.abs(jnp.sum(x * jnp.roll(y, -1, axis=-1) - jnp.roll(x, -1, axis=-1) * y,
                           axis=-1)) / 2


def rectify(c: jnp.ndarray) -> jnp.ndarray:
    """torchvision's ``_parallelogram_to_bounding_boxes``: a parallelogram's corners ``(K, 8)``
    as the rectangle that keeps its longest diagonal."""
    x1, y1, x2, y2, x3, y3, x4, y4 = (c[..., i] for i in range(8))
    cx, cy = (x1 + x3) / 2, (y1 + y3) / 2
    wp = jnp.sqrt((x2 - x1) ** 2 + (y2 - y1) ** 2)
    hp = jnp.sqrt((x4 - x1) ** 2 + (y4 - y1) ** 2)
    r12 = jnp.arctan2(y1 - y2, x2 - x1)
    r14 = jnp.arctan2(y1 - y4, x4 - x1)
    r = r12 - r14
    sign = jnp.where(r > np.pi / 2, -1.0, 1.0)
    cos, sin = jnp.cos(r), jnp.sin(r)
    w = jnp.where(wp < hp, wp * sin, wp + hp * cos * sign)
    h = jnp.where(wp > hp, hp * sin, hp + wp * cos * sign)
    r = jnp.where(hp > wp, r14 + np.pi / 2, r12)
    cos, sin = jnp.cos(r), jnp.sin(r)
    return jnp.stack([cx - w / 2 * cos - h / 2 * sin, cy - h / 2 * cos + w / 2 * sin,
                      cx + w / 2 * cos - h / 2 * sin, cy - h / 2 * cos - w / 2 * sin,
                      cx + w / 2 * cos + h / 2 * sin, cy + h / 2 * cos - w / 2 * sin,
                      cx - w / 2 * cos + h / 2 * sin, cy + h / 2 * cos + w / 2 * sin], axis=-1)


# -- torchvision's soft clamp (transforms/v2/functional/_meta.py, 0.29) --------------------------
def _roll_points(c: jnp.ndarray, k: jnp.ndarray) -> jnp.ndarray:
    """Corners ``(K, 8)`` starting at point ``k`` (K,) (``_order_bounding_boxes_points``)."""
    idx = (2 * k[:, None] + jnp.arange(8)[None, :]) % 8
    return jnp.take_along_axis(c, idx, axis=1)


def _first_point(c: jnp.ndarray) -> jnp.ndarray:
    x, y = c[:, 0::2], c[:, 1::2]
    y_max = jnp.max(jnp.abs(y), axis=1, keepdims=True)
    x_max = jnp.max(jnp.abs(x), axis=1, keepdims=True)
    return jnp.argmin(y / y_max + (x / x_max) * 100, axis=1)


def _slopes(c: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    x, y = c[:, 0::2], c[:, 1::2]
    a = (jnp.roll(y, -1, axis=1) - y) / (jnp.roll(x, -1, axis=1) - x)
    return a, y - a * x


def _clip(v: jnp.ndarray, lo: Any, hi: Any) -> jnp.ndarray:
    """``torch.clamp(v, lo, hi)``: ``hi`` wins where ``lo > hi``."""
    return jnp.minimum(jnp.maximum(v, lo), hi)


def _clamp_intercepts(c: jnp.ndarray, orig: jnp.ndarray, height: float) -> jnp.ndarray:
    _, b = _slopes(c)
    _, bm = _slopes(orig)
    b1, b2, b3, b4 = (b[:, i] for i in range(4))
    b1m, b2m, b3m, b4m = (bm[:, i] for i in range(4))
    n1 = _clip(_clip(_clip(b2, b1, b3), 0.0, height), b1m, b3m)
    n4 = _clip(_clip(_clip(b3, b2, b4), 0.0, height), b2m, b4m)
    return jnp.stack([n1, _clip(b2, b2m, b4m), _clip(b3, b1m, b3m), n4], axis=1)


def _clamp_left(c: jnp.ndarray, orig: jnp.ndarray, height: float) -> jnp.ndarray:
    """``_clamp_along_y_axis``: the box kept right of ``x = 0`` (soft mode)."""
    a, _ = _slopes(c)
    b = _clamp_intercepts(c, orig, height)
    x1, y1, x2, y2, x3, y3, x4, y4 = (c[:, i] for i in range(8))
    xs = -(b - jnp.roll(b, 1, axis=1)) / (a - jnp.roll(a, 1, axis=1))
    case_a = jnp.stack([xs, a * xs + b], axis=-1).reshape(c.shape)
    case_b = c.at[:, 0].set(jnp.maximum(x1, 0.0)).at[:, 6].set(jnp.maximum(x4, 0.0))
    cond_a = (x1 < 0) & ~jnp.isnan(case_a).any(axis=1)
    cond_b = jnp.isclose(y1, y2) | jnp.isclose(y3, y4)
    cond_c = ((x1 <= 0) & (x2 <= 0) & (x3 <= 0) & (x4 <= 0)) | jnp.isclose(y1, y4) \
        | jnp.isclose(y2, y3) | (cond_b & jnp.isclose(x1, x2))
    out = jnp.where(cond_a[:, None], case_a, c)
    out = jnp.where(cond_b[:, None], case_b, out)
    return jnp.where(cond_c[:, None], 0.0, out)


def clamp_soft(c: jnp.ndarray, h: int, w: int) -> jnp.ndarray:
    """torchvision's ``clamp_bounding_boxes`` of rotated boxes (``clamping_mode="soft"``, its
    default) on corners ``(K, 8)`` of an ``h`` x ``w`` image: the image's 4 sides in turn (the
    box rotated by 90 degrees between them), each side cutting the box to the smallest
    rectangle of its angle enclosing the part inside; the corners' order as torchvision leaves
    it."""
    def side(i, boxes):  # side i of 4; the box turned by 90 degrees after each
        out, orig = boxes
        height = jnp.where(i % 2 == 0, float(h), float(w))
        width = jnp.where(i % 2 == 0, float(w), float(h))
        k = _first_point(out)
        out, orig = _roll_points(out, k), _roll_points(orig, k)
        out = _clamp_left(out, orig, height)
        out, orig = _roll_points(out, k), _roll_points(orig, k)
        out = jnp.stack([out[:, 1::2], width - out[:, 0::2]], axis=-1).reshape(out.shape)
        orig = jnp.stack([orig[:, 1::2], width - orig[:, 0::2]], axis=-1).reshape(orig.shape)
        return out, orig

    # A loop, not 4 copies of the body: an op's apply with rotated boxes compiles in ~1.6-1.7
    # CPU-s instead of ~2.2 on its first call; corners within float32 rounding (<= 4e-5 px) of
    # the unrolled body's.
    return jax.lax.fori_loop(0, 4, side, (c, c))[0]


# -- area inside the image -----------------------------------------------------------------------
def inside_area(c: jnp.ndarray, h: int, w: int) -> jnp.ndarray:
    """The area of each convex quadrilateral (corners ``(..., 8)``) inside ``[0, w] x [0, h]``,
    by Green's theorem: the integral of ``x dy`` along the box's edges clipped to the image
    (Liang-Barsky), plus ``w`` times the length of the image's right side inside the box (its
    other sides add nothing: ``x = 0`` or ``dy = 0`` there)."""
    x, y = c[..., 0::2], c[..., 1::2]
    xb, yb = jnp.roll(x, -1, axis=-1), jnp.roll(y, -1, axis=-1)
    dx, dy = xb - x, yb - y
    t0, t1 = jnp.zeros_like(x), jnp.ones_like(x)
    ok = jnp.ones(x.shape, bool)
    for p, q in ((-dx, x), (dx, w - x), (-dy, y), (dy, h - y)):
        safe = jnp.where(p == 0, 1.0, p)
        t = q / safe
        ok = ok & ~((p == 0) & (q < 0))
        t0 = jnp.where(p < 0, jnp.maximum(t0, t), t0)
        t1 = jnp.where(p > 0, jnp.minimum(t1, t), t1)
    ok = ok & (t0 < t1)
    xa, ya, xe, ye = x + t0 * dx, y + t0 * dy, x + t1 * dx, y + t1 * dy
    edges = jnp.sum(jnp.where(ok, (xa + xe) / 2 * (ye - ya), 0.0), axis=-1)
    signed = jnp.sum(x * yb - xb * y, axis=-1) / 2
    crosses = ((x - w) * (xb - w) <= 0) & (dx != 0)
    ys = y + (w - x) / jnp.where(dx == 0, 1.0, dx) * dy
    lo = jnp.min(jnp.where(crosses, ys, jnp.inf), axis=-1)
    hi = jnp.max(jnp.where(crosses, ys, -jnp.inf), axis=-1)
    right = jnp.maximum(jnp.minimum(hi, h) - jnp.maximum(lo, 0.0), 0.0)
    return jnp.maximum(jnp.sign(signed) * edges + w * right, 0.0)


# -- an op's move --------------------------------------------------------------------------------
def _transform(m: jnp.ndarray, x: jnp.ndarray, y: jnp.ndarray) -> tuple[Any, Any]:
    den = m[2, 0] * x + m[2, 1] * y + m[2, 2]
    return ((m[0, 0] * x + m[0, 1] * y + m[0, 2]) / den,
            (m[1, 0] * x + m[1, 1] * y + m[1, 2]) / den)


def move_corners(m: jnp.ndarray, c: jnp.ndarray, h: int, w: int) -> tuple[Any, Any]:
    """One sample's rotated boxes (corners ``(M, 8)``) through the forward matrix ``m`` to an
    ``h`` x ``w`` output: ``(moved, clamped)``, both corners ``(M, 8)``: the moved rectangle
    (torchvision's rectified parallelogram; corners swapped where ``m`` mirrors) and the same
    clamped (torchvision's soft clamp)."""
    x, y = _transform(m, c[:, 0::2] - 0.5, c[:, 1::2] - 0.5)  # edges -> pixel centres
    moved = jnp.stack([x + 0.5, y + 0.5], axis=-1).reshape(c.shape)
    det = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]  # < 0: a flip (mirrors the corners' order)
    moved = jnp.where(det < 0, moved[:, jnp.array([2, 3, 0, 1, 6, 7, 4, 5])], moved)
    moved = rectify(moved)
    return moved, clamp_soft(moved, h, w)


def sides(c: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Each rectangle's width ``|p2 - p1|`` and height ``|p3 - p2|`` from corners ``(..., 8)``."""
    return (jnp.hypot(c[..., 2] - c[..., 0], c[..., 3] - c[..., 1]),
            jnp.hypot(c[..., 4] - c[..., 2], c[..., 5] - c[..., 3]))


def rule(c: jnp.ndarray, h: int, w: int, min_size: float = 1.0,
         min_area: float = 1.0) -> jnp.ndarray:
    """The validity of rotated boxes (corners ``(..., 8)``, clamped) in an ``h`` x ``w`` image:
    both sides at least ``min_size`` and at least ``min_area`` of the box inside the image."""
    bw, bh = sides(c)
    return (bw >= min_size) & (bh >= min_size) & (inside_area(c, h, w) >= min_area)


def move_by(sanitize: Any, m: jnp.ndarray, c: jnp.ndarray, valid: jnp.ndarray, seen: Any,
            h: int, w: int) -> tuple[jnp.ndarray, jnp.ndarray, Any]:
    """One sample's rotated boxes (corners ``(M, 8)``) through ``m`` under a
    :class:`augjax.Sanitize` rule: ``(corners, valid, seen)``, as ``move_boxes_by`` does for
    unrotated ones (``seen``: the fraction of each box's area inside, None when not tracked)."""
    moved, out = move_corners(m, c, h, w)
    valid = valid & rule(out, h, w, sanitize.min_size, sanitize.min_area)
    if seen is not None:
        full = area(moved)
        part = inside_area(moved, h, w)
        seen = seen * jnp.where(full > 0, part / jnp.where(full > 0, full, 1.0), 0.0)
        valid = valid & (seen >= sanitize.min_visibility)
    return out, valid, seen
