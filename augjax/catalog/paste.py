"""Pasting ops for detection and segmentation: batch-level, each output built from several
samples of the batch, with their boxes and masks (YOLO's ``mosaic``, Ghiasi et al.'s
``copy_paste``). Images are HWC, uint8 (0..255) or float32 in [0, 1]. Neither op exists in
torchvision; the anchors are Ultralytics YOLO's ``Mosaic`` (and kornia's ``RandomMosaic``,
albumentations' ``Mosaic``) and "Simple Copy-Paste" (Ghiasi et al., CVPR 2021).

Targets (``masks=``, ``boxes=``, ``keypoints=`` of a call) follow through each op's ``batch``
hook (:class:`augjax.Follow`), and their count grows: ``mosaic`` returns the boxes and
keypoints of its four tiles (``M -> 4 M``, tile by tile), ``copy_paste`` its own boxes and
masks then the partner's (``M -> 2 M``). ``boxes_valid`` says which survive; the call's
:class:`augjax.Sanitize` rule applies after the op as after a geometric one. Per-box labels are
not targets: :func:`mosaic_box_labels` and :func:`copy_paste_box_labels` give the labels of the
returned boxes from the op's params (``op.sample``, then ``op.apply``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax._core.targets import Follow
from augjax.catalog._mosaic_rows import fits, mosaic_rows
from augjax.catalog._mosaic_windows import mosaic_windows
from augjax.catalog._mosaic_tiles import inside, tile_offset, tile_source
from augjax.catalog.erase import uniforms
from augjax.errors import InputError
from augjax.kernels.pixels import is_int
from augjax.kernels.platform import platform_dependent
from augjax.kernels.warp import check_fill, uniform_int

__all__ = ["mosaic", "copy_paste", "mosaic_box_labels", "copy_paste_box_labels",
           "mosaic_gather", "partners"]

_F32 = jnp.float32


def take(a: jax.Array, index: jax.Array) -> jax.Array:
    """``a[index]`` along the batch axis (an empty batch gives an empty result: XLA refuses a
    gather from an axis of size 0)."""
    if a.shape[0] == 0:
        return jnp.zeros(index.shape + a.shape[1:], a.dtype)
    return a[index]


def partners(u: jax.Array, n: int) -> jax.Array:
    """Sample ``i``'s partners ``(i + o) mod n`` with offsets ``o`` uniform in ``[1, n)`` from
    uniforms ``u`` ``(n, k)``: other samples of the batch (itself when ``n == 1``)."""
    if n == 1:
        return jnp.zeros(u.shape, jnp.int32)
    offset = uniform_int(u, 1, n)
    return (jnp.arange(n, dtype=jnp.int32)[:, None] + offset) % n


# ---------------------------------------------------------------------------------------------
# mosaic


def _mosaic_size(h: int, w: int, *, size, **_) -> tuple[int, int]:
    return (h, w) if size is None else tuple(size)


def _mosaic_sample(key, meta, params, *, size, center_range, p, **_):
    """``tiles`` ((N, 4) int32: the sample shown in the top-left, top-right, bottom-left and
    bottom-right tile; -1: none) and ``center`` ((N, 2) int32: the mosaic centre, row and
    column, in output pixels). Draws: ``u = jax.random.uniform(key, (6 N,))`` as ``uniforms``
    ``coin`` (N,), ``center`` (N, 2) and ``partner`` (N, 3): sample ``i`` is a mosaic where
    ``coin < p``; its centre on YOLO's 2s x 2s canvas is ``floor(s * U(center_range))`` per
    axis (``s`` the output side), in the output ``that - s // 2``; its partners are
    :func:`partners`. Elsewhere: ``tiles = (i, -1, -1, -1)``, ``center = (H, W)`` (the image
    alone, at the top left)."""
    n, h, w = meta.batch, meta.height, meta.width
    oh, ow = _mosaic_size(h, w, size=size)
    u = uniforms(key, coin=(n,), center=(n, 2), partner=(n, 3))
    lo, hi = center_range
    side = jnp.array([oh, ow], _F32)
    center = jnp.floor(side * (lo + (hi - lo) * u["center"])) - jnp.array([oh // 2, ow // 2],
                                                                         _F32)
    on = u["coin"] < p
    own = jnp.arange(n, dtype=jnp.int32)[:, None]
    tiles = jnp.concatenate([own, partners(u["partner"], n)], axis=1)
    tiles = jnp.where(on[:, None], tiles, jnp.concatenate([own, jnp.full((n, 3), -1)], 1))
    center = jnp.where(on[:, None], center, jnp.array([h, w], _F32))
    return {"tiles": tiles.astype(jnp.int32), "center": center.astype(jnp.int32)}


def _tile_geometry(center: jax.Array, h: int, w: int) -> jax.Array:
    """Each tile's offset (dx, dy) in the output, ``(N, 4, 2)`` float32: the input pixel
    ``(x, y)`` of tile ``q`` lands at ``(x + dx, y + dy)`` (:func:`tile_offset`)."""
    yc, xc = center[:, :1].astype(_F32), center[:, 1:].astype(_F32)
    dx = tile_offset(jnp.array([False, True, False, True]), xc, w)
    dy = tile_offset(jnp.array([False, False, True, True]), yc, h)
    return jnp.stack([dx, dy], axis=-1)


def mosaic_gather(x: jax.Array, tiles: jax.Array, center: jax.Array, oh: int, ow: int,
                  fill: jax.Array) -> jax.Array:
    """The mosaic of ``x`` (N, H, W, C): output pixel ``(y, x)`` lies in tile ``q = 2 [y >= yc]
    + [x >= xc]`` and shows sample ``tiles[q]``'s pixel ``(y - dy_q, x - dx_q)``, or ``fill``
    where that is outside the image or the tile is -1, ``(N, oh, ow, C)``
    (:mod:`augjax.catalog._mosaic_tiles`). On the CPU, for an
    output at least twice the input's width (YOLO's 2s canvas), whole tile rows are copied
    sample by sample (:mod:`augjax.catalog._mosaic_rows`); on a TPU each tile is one window
    of its image (:mod:`augjax.catalog._mosaic_windows`); elsewhere one gather of pixels.
    The values are the same."""
    n, h, w, _ = x.shape
    if n == 0:
        return jnp.zeros((0, oh, ow) + x.shape[3:], x.dtype)
    value = jnp.broadcast_to(fill.astype(x.dtype), x.shape[3:])
    forms = {"tpu": lambda *a: _windows(*a, oh, ow)} if x.ndim == 4 else {}
    if fits(h, w, oh, ow):
        forms["cpu"] = lambda *a: _rows(*a, oh, ow)
    return platform_dependent(x, tiles, center, value,
                              default=lambda *a: _gather(*a[:3], oh, ow, a[3]), **forms)


def _with_gather_derivative(form, doc: str):
    """``form`` (a mosaic form that computes the pixel gather's values) with the pixel gather's
    derivative (the same function: its transpose sums each input pixel's weights in the order
    it did)."""

    @functools.partial(jax.custom_jvp, nondiff_argnums=(4, 5))
    def fn(x, tiles, center, fill, oh, ow):
        return form(x, tiles, center, fill, oh=oh, ow=ow)

    @fn.defjvp
    def _jvp(oh, ow, primals, tangents):
        x, tiles, center, fill = primals
        _, tangent = jax.jvp(lambda v, f: _gather(v, tiles, center, oh, ow, f), (x, fill),
                             (tangents[0], tangents[3]))
        return fn(x, tiles, center, fill, oh, ow), tangent

    fn.__doc__ = doc
    return fn


_rows = _with_gather_derivative(
    mosaic_rows, ":func:`augjax.catalog._mosaic_rows.mosaic_rows` with the gather's derivative.")
_windows = _with_gather_derivative(
    mosaic_windows,
    ":func:`augjax.catalog._mosaic_windows.mosaic_windows` with the gather's derivative.")


def _gather(x: jax.Array, tiles: jax.Array, center: jax.Array, oh: int, ow: int,
            fill: jax.Array) -> jax.Array:
    """:func:`mosaic_gather` as one gather of pixels (any shapes, any platform)."""
    n, h, w, _ = x.shape
    bottom, r = tile_source(jnp.arange(oh)[None, :], center[:, :1], h)  # (N, oh)
    right, c = tile_source(jnp.arange(ow)[None, :], center[:, 1:], w)  # (N, ow)
    q = 2 * bottom[:, :, None].astype(jnp.int32) + right[:, None, :].astype(jnp.int32)
    src = jnp.take_along_axis(tiles, q.reshape(n, -1), axis=1).reshape(n, oh, ow)
    ok = (src >= 0) & inside(r, h)[:, :, None] & inside(c, w)[:, None, :]
    out = x[jnp.maximum(src, 0), jnp.clip(r, 0, h - 1)[:, :, None],
            jnp.clip(c, 0, w - 1)[:, None, :]]
    return jnp.where(ok[..., None], out, fill.astype(x.dtype))


def _mosaic_targets(targets, params, *, sizes, **_):
    """How targets follow ``mosaic``: masks are tiled as the pixels (``mask_fill`` where no
    tile shows); boxes and keypoints of the four tiles are shifted into the output and
    concatenated tile by tile (tile ``q``'s box ``m`` at ``q M + m``: ``(N, 4 M, 4)``, and
    ``(N, 4 K, 2)`` keypoints). A box is clipped to its tile's quadrant and to the output (its
    visible part: the quadrant shows that tile), a keypoint is valid while it lies there;
    boxes and keypoints of a tile that is not shown (-1) are invalid."""
    tiles, center = params["tiles"], params["center"]
    (h, w), (oh, ow) = sizes
    out = {}
    if "masks" in targets:
        m = targets["masks"]
        out["masks"] = mosaic_gather(m, tiles, center, oh, ow, jnp.zeros((m.shape[-1],), m.dtype))
    offset = _tile_geometry(center, h, w)  # (N, 4, 2)
    yc, xc = center[:, 0].astype(_F32), center[:, 1].astype(_F32)
    inf = jnp.full_like(xc, jnp.inf)
    # each tile's quadrant within the output: x in [x_lo, x_hi], y in [y_lo, y_hi], (N, 4)
    x_lo = jnp.maximum(jnp.stack([-inf, xc, -inf, xc], 1), 0.0)
    x_hi = jnp.minimum(jnp.stack([xc, inf, xc, inf], 1), float(ow))
    y_lo = jnp.maximum(jnp.stack([-inf, -inf, yc, yc], 1), 0.0)
    y_hi = jnp.minimum(jnp.stack([yc, yc, inf, inf], 1), float(oh))
    n = tiles.shape[0]
    if "boxes" in targets:
        src = jnp.maximum(tiles, 0)
        raw = take(targets["boxes"], src) + jnp.tile(offset, (1, 1, 2))[:, :, None, :]  # (N,4,M,4)
        lo = jnp.stack([x_lo, y_lo], -1)[:, :, None, :]
        hi = jnp.stack([x_hi, y_hi], -1)[:, :, None, :]
        lo2, hi2 = jnp.concatenate([lo, lo], -1), jnp.concatenate([hi, hi], -1)
        box = jnp.clip(jnp.minimum(jnp.maximum(raw, lo2), hi2), 0.0,
                       jnp.array([ow, oh, ow, oh], _F32))
        m = raw.shape[2]
        out["boxes"] = box.reshape(n, 4 * m, 4)
        ok = take(targets["boxes_valid"], src) & (tiles >= 0)[:, :, None]
        out["boxes_valid"] = ok.reshape(n, 4 * m)
        if "boxes_seen" in targets:
            area = (raw[..., 2] - raw[..., 0]) * (raw[..., 3] - raw[..., 1])
            kept = (box[..., 2] - box[..., 0]) * (box[..., 3] - box[..., 1])
            frac = jnp.where(area > 0, kept / jnp.where(area > 0, area, 1.0), 0.0)
            out["boxes_seen"] = (take(targets["boxes_seen"], src) * frac).reshape(n, 4 * m)
    if "keypoints" in targets:
        src = jnp.maximum(tiles, 0)
        pts = take(targets["keypoints"], src) + offset[:, :, None, :]  # (N, 4, K, 2)
        x, y = pts[..., 0], pts[..., 1]
        inside = ((x >= x_lo[..., None]) & (x < x_hi[..., None]) & (y >= y_lo[..., None])
                  & (y < y_hi[..., None]))
        ok = take(targets["keypoints_valid"], src) & (tiles >= 0)[:, :, None] & inside
        k = pts.shape[2]
        out["keypoints"] = pts.reshape(n, 4 * k, 2)
        out["keypoints_valid"] = ok.reshape(n, 4 * k)
    return out


def mosaic_box_labels(labels: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
    """The labels of ``mosaic``'s output boxes: per-box ``labels`` ``(N, M, ...)`` of the
    input, by the op's ``params`` (``mosaic.sample``) -> ``(N, 4 M, ...)`` (tile by tile; a
    tile that is not shown gives its own sample's labels, on boxes that are invalid)."""
    labels = jnp.asarray(labels)
    src = jnp.maximum(jnp.asarray(params["tiles"]), 0)
    out = take(labels, src)
    return out.reshape(labels.shape[0], -1, *labels.shape[2:])


def _check_mosaic(*, center_range, **_) -> None:
    if not center_range[0] <= center_range[1]:
        raise ValueError(f"expected center_range[0] <= center_range[1], got {center_range}")


@op(
    "mosaic",
    params={
        "size": Param(None, kind="size", low=1, optional=True,
                      doc="output (height, width), YOLO's s; None: the input's"),
        "center_range": Param((0.5, 1.5), kind="pair", low=0.0, high=2.0,
                              doc="range of the mosaic centre on the 2s canvas, a multiple of "
                                  "the output side (YOLO: (0.5, 1.5))"),
        "fill": Param(0.0, kind="floats", low=0.0, high=1.0,
                      doc="value where no tile shows, a fraction of the range (YOLO: "
                          "114/255)"),
        "p": Param(1.0, low=0.0, high=1.0, neutral=0.0,
                   doc="probability that a sample becomes a mosaic"),
    },
    level="batch",
    geometric=True,
    sample=_mosaic_sample,
    output_size=_mosaic_size,
    check=_check_mosaic,
    targets=Follow(masks="hook", points="hook", batch=_mosaic_targets, sizes=True),
    reference="Ultralytics YOLO Mosaic (n=4) with its final crop; kornia RandomMosaic",
)
def mosaic(images, params, *, size, center_range, fill, p):
    """Combines each image with three others of the batch into a 2 x 2 mosaic (YOLO).

    Ultralytics' 4-image mosaic: sample ``i`` (top left) and three partners (other samples of
    the batch, drawn per sample) are placed around a centre ``(yc, xc)`` on a 2s x 2s canvas,
    each image's corner at the centre (top left: its bottom-right corner, and so on); the
    centre is uniform in ``center_range * s`` per axis, and the output is the canvas's middle
    s x s window (YOLO's ``random_perspective`` border crop, without its affine jitter), so
    the four tiles take random shares of it. ``s`` is ``size`` (default the input's); the
    images are placed at their size (YOLO resizes each to s first: resize before, if
    needed). Pixels no tile shows get ``fill``. With probability ``1 - p`` a sample is its
    own image at the top left (``fill`` beyond it when ``size`` is larger).

    Targets: masks are tiled as the pixels; boxes and keypoints of all four tiles come along,
    ``M -> 4 M`` (tile by tile), clipped to their tile's quadrant of the output; a box that
    keeps less than the call's ``sanitize`` rule asks (default: 1 pixel wide and high) is
    invalid (``boxes_valid``). :func:`mosaic_box_labels` gives the labels of the returned
    boxes.

    Params: ``tiles`` ((N, 4) int32, the sample in the top-left, top-right, bottom-left and
    bottom-right tile; -1: none), ``center`` ((N, 2) int32, row and column of the centre in
    output pixels).
    """
    n, h, w, _ = images.shape
    oh, ow = _mosaic_size(h, w, size=size)
    value = check_fill(fill, images, "mosaic")
    if is_int(images.dtype):
        value = jnp.clip(jnp.round(value), 0.0, 255.0)
    return mosaic_gather(images, params["tiles"], params["center"], oh, ow, value)


# ---------------------------------------------------------------------------------------------
# copy_paste


def _fail(argument: str, expected: str, got: str) -> InputError:
    return InputError(f"copy_paste: argument '{argument}' expects {expected}, got {got}",
                      op="copy_paste", argument=argument)


def box_pixels(boxes: jax.Array, h: int, w: int) -> jax.Array:
    """``(N, H, W, M)`` bool: the pixels whose centre lies in each XYXY box (``x1 <= x + 0.5 <
    x2`` and the same for y)."""
    ys, xs = jnp.arange(h, dtype=_F32) + 0.5, jnp.arange(w, dtype=_F32) + 0.5
    b = boxes[:, None, None, :, :]
    in_x = (xs[None, None, :, None] >= b[..., 0]) & (xs[None, None, :, None] < b[..., 2])
    in_y = (ys[None, :, None, None] >= b[..., 1]) & (ys[None, :, None, None] < b[..., 3])
    return in_x & in_y


def _instances(targets, n: int, h: int, w: int) -> tuple[jax.Array, jax.Array]:
    """The instances a sampler sees: ``(inside, exists)``, ``(N, H, W, M)`` bool pixels of each
    instance (masks' nonzero channels, else the boxes' pixels, else the whole image as one
    instance) and ``(N, M)`` bool (valid box, and some pixel)."""
    masks, boxes = targets.get("masks"), targets.get("boxes")
    has_boxes = boxes is not None and boxes.shape[1] > 0
    if masks is not None:
        if masks.ndim != 4:
            raise _fail("masks", "per-instance masks (N, H, W, M): channel m nonzero inside "
                        "instance m", f"{masks.dtype} {tuple(masks.shape)}")
        if has_boxes and masks.shape[-1] != boxes.shape[1]:
            raise _fail("masks", f"one channel per box ({boxes.shape[1]} boxes)",
                        f"{masks.shape[-1]} channels")
        inside = masks != 0
    elif has_boxes:
        inside = box_pixels(boxes, h, w)
    else:
        inside = jnp.ones((n, h, w, 1), bool)
    exists = inside.any(axis=(1, 2))
    if has_boxes:
        exists &= targets["boxes_valid"]
    return inside, exists


def _copy_paste_sample(key, meta, params, *, p, instance_p, targets, **_):
    """``perm`` ((N,) int32: each sample's partner, :func:`partners`), ``pasted`` ((N, M)
    bool: the partner's instances pasted) and ``paste`` ((N, H, W) bool: the pixels they
    cover). Draws: ``uniforms(key, coin=(N,), partner=(N, 1), instance=(N, M))``; a sample
    pastes where ``coin < p``, instance ``m`` where ``instance < instance_p`` and it exists
    (valid box, nonempty mask)."""
    n, h, w = meta.batch, meta.height, meta.width
    inside, exists = _instances(targets, n, h, w)
    m = inside.shape[-1]
    u = uniforms(key, coin=(n,), partner=(n, 1), instance=(n, m))
    perm = partners(u["partner"], n)[:, 0]
    pasted = (u["coin"] < p)[:, None] & (u["instance"] < instance_p) & take(exists, perm)
    paste = (take(inside, perm) & pasted[:, None, None, :]).any(axis=-1)
    return {"perm": perm, "pasted": pasted, "paste": paste}


def _extent(inside: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The XYXY box (pixel edges) of each instance's pixels ``(N, H, W, M)``: ``(N, M, 4)``
    float32 (zeros where it has none), and ``(N, M)`` bool: some pixel is left."""
    _, h, w, _ = inside.shape
    rows, cols = inside.any(axis=2), inside.any(axis=1)  # (N, H, M), (N, W, M)
    y1 = jnp.argmax(rows, axis=1)
    y2 = h - jnp.argmax(rows[:, ::-1], axis=1)
    x1 = jnp.argmax(cols, axis=1)
    x2 = w - jnp.argmax(cols[:, ::-1], axis=1)
    left = rows.any(axis=1)
    box = jnp.stack([x1, y1, x2, y2], axis=-1).astype(_F32)
    return jnp.where(left[..., None], box, 0.0), left


def _copy_paste_targets(targets, params, *, sizes, **_):
    """How targets follow ``copy_paste``: the sample's own masks are cut where the paste
    covers them (0 there), the partner's pasted instances' masks are appended (``(N, H, W,
    2 M)``); the own boxes that the paste overlaps are recomputed from their visible pixels
    (invalid when none is left), the partner's boxes of the pasted instances are appended
    (``(N, 2 M, 4)``, valid where pasted). Without masks an own instance is its box's pixels
    (:func:`box_pixels`). Keypoints are refused."""
    if "keypoints" in targets:
        raise InputError("copy_paste: keypoints cannot follow this op (pasted instances carry "
                         "no keypoint rule); drop them or add them after the paste",
                         op="copy_paste", argument="keypoints")
    perm, pasted, paste = params["perm"], params["pasted"], params["paste"]
    (h, w), _ = sizes
    out = {}
    own = None
    if "masks" in targets:
        enc = targets["masks"]  # (N, H, W, M * bytes + 1): the ids' bytes, then 'inside'
        m = pasted.shape[1]
        ids, flag = enc[..., :-1], enc[..., -1:]
        per = ids.reshape(*ids.shape[:3], m, ids.shape[-1] // max(m, 1))  # (N, H, W, M, bytes)
        own = (per != 0).any(axis=-1) & (flag >= 128)
        kept = jnp.where(paste[..., None], jnp.zeros_like(ids), ids)
        chosen = jnp.repeat(pasted, per.shape[-1], axis=1)[:, None, None, :]
        new = jnp.where(chosen & paste[..., None], take(ids, perm), jnp.zeros_like(ids))
        flag = jnp.where(paste[..., None], jnp.full_like(flag, 255), flag)
        out["masks"] = jnp.concatenate([kept, new, flag], axis=-1)
    if "boxes" in targets:
        boxes, valid = targets["boxes"], targets["boxes_valid"]
        if own is None:
            own = box_pixels(boxes, h, w)
        touched = (own & paste[..., None]).any(axis=(1, 2))
        extent, left = _extent(own & ~paste[..., None])
        new_boxes = jnp.where(touched[..., None], extent, boxes)
        out["boxes"] = jnp.concatenate([new_boxes, take(boxes, perm)], axis=1)
        out["boxes_valid"] = jnp.concatenate([valid & (left | ~touched),
                                              take(valid, perm) & pasted], axis=1)
        if "boxes_seen" in targets:
            seen = targets["boxes_seen"]
            area = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
            now = (new_boxes[..., 2] - new_boxes[..., 0]) * (new_boxes[..., 3] - new_boxes[..., 1])
            frac = jnp.where(area > 0, jnp.minimum(now / jnp.where(area > 0, area, 1.0), 1.0), 0.0)
            out["boxes_seen"] = jnp.concatenate([seen * frac, take(seen, perm)], axis=1)
    return out


def copy_paste_box_labels(labels: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
    """The labels of ``copy_paste``'s output boxes: per-box ``labels`` ``(N, M, ...)``, by the
    op's ``params`` (``copy_paste.sample``) -> ``(N, 2 M, ...)``: own, then the partner's."""
    labels = jnp.asarray(labels)
    return jnp.concatenate([labels, labels[jnp.asarray(params["perm"])]], axis=1)


@op(
    "copy_paste",
    params={
        "p": Param(1.0, low=0.0, high=1.0, neutral=0.0,
                   doc="probability that a sample gets instances pasted"),
        "instance_p": Param(0.5, low=0.0, high=1.0,
                            doc="probability that each of the partner's instances is pasted"),
    },
    level="batch",
    geometric=True,
    sample=_copy_paste_sample,
    sample_targets=("boxes", "masks"),
    targets=Follow(masks="hook", points="hook", batch=_copy_paste_targets, sizes=True,
                   reason="pasted instances carry no keypoint rule"),
    reference="Ghiasi et al. 2021, Simple Copy-Paste (one partner image, a random subset of "
              "its instances)",
)
def copy_paste(images, params, *, p, instance_p):
    """Pastes a random subset of a partner's instances onto each image (Simple Copy-Paste).

    Each sample's partner is another sample of the batch (drawn per sample); with probability
    ``p`` each of the partner's instances (masks' channels, see below) is pasted with
    probability ``instance_p``: the pixels of its mask are copied onto the image, in place
    (Ghiasi et al. paste without blending; for their large-scale jitter of both images, put
    ``scale_jitter`` before this op: the partner is then jittered on its own). The instances
    come from the call's ``masks=`` ``(N, H, W, M)`` (channel ``m`` nonzero inside instance
    ``m``; ``boxes=`` then has ``M`` boxes, one per channel), else from ``boxes=`` (each box's
    pixels: box copy-paste), else each image is one instance (the whole partner is pasted with
    probability ``p * instance_p``; a call without targets, as ``random_iou_crop`` takes the
    whole image as the one box).

    Targets: the own masks lose the pasted pixels, the pasted instances' masks are appended
    (``M -> 2 M`` channels); the own boxes that the paste overlaps are recomputed from their
    visible pixels (invalid when nothing is left), the partner's boxes of the pasted
    instances are appended (``M -> 2 M``, valid where pasted); :func:`copy_paste_box_labels`
    gives the labels of the returned boxes. Masks must use ``mask_fill=0`` (the default):
    instance pixels are the nonzero ones. Keypoints are refused.

    Params: ``perm`` ((N,) int32, the partner), ``pasted`` ((N, M) bool, the partner's
    instances pasted), ``paste`` ((N, H, W) bool, the pixels taken from the partner: what the
    kernel reads).
    """
    paste = params["paste"][..., None]
    return jnp.where(paste, take(images, params["perm"]), images)
