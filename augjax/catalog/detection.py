"""Detection ops on HWC images (torchvision v2 semantics, each ending in one fixed size so a
batch keeps one shape): ``random_iou_crop`` (SSD's ``RandomIoUCrop``; its sampler declares
``sample_targets=("boxes",)`` and reads each sample's boxes as the ops before it moved them),
``random_zoom_out`` (``RandomZoomOut``) and ``scale_jitter`` (``ScaleJitter`` with the detection
reference's ``FixedSizeCrop``: large-scale jitter). Boxes, keypoints and masks follow each by its
``matrix`` and kernel (:mod:`augjax._runtime.targets.follow`).

Params (``op.sample``; one value per sample, leading axis N): ``random_iou_crop``: ``box`` ((4,)
int32: top, left, height, width of the crop in input pixels; the whole image where no crop was
taken), ``min_iou`` (the drawn option) and ``boxes_valid`` ((M,) bool: the boxes whose centre
lies inside the crop; one outside is flagged invalid after the op, where torchvision zeroes it
for ``SanitizeBoundingBoxes`` to drop); ``random_zoom_out``: ``canvas``; ``scale_jitter``:
``resized`` and ``offset`` (see each op). ``op.apply(x, params=..., boxes=...)`` replays them.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from augjax._core.meta import Window
from augjax._core.param import Param
from augjax.calls import op
from augjax.catalog._by_image import (MIN_SIDE, by_image, crop_branching, jitter_branching,
                                      zoom_branching)
from augjax.kernels.matrix import crop_resize_matrix
from augjax.kernels.partition import partitioned
from augjax.kernels.pixels import is_int
from augjax.kernels.platform import platform_dependent
from augjax.kernels.window import (CHUNK, read_taps, read_window_taps, taps_from_first,
                                   taps_needed)
from augjax.kernels.resize import (canvas_taps, crop_taps, resize_canvas, resize_crop,
                                   window_weights)
from augjax.kernels.warp import INTERPOLATIONS, check_fill

__all__ = ["random_iou_crop", "random_zoom_out", "scale_jitter", "iou_crop_box",
           "IOU_OPTIONS"]

#: torchvision's default ``sampler_options`` (minimum IoU; 1.0 leaves the image as it is).
IOU_OPTIONS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)

_F32 = jnp.float32


def box_iou(boxes: jax.Array, crop: jax.Array) -> jax.Array:
    """torchvision ``box_iou`` of XYXY ``boxes`` (M, 4) with one XYXY ``crop`` (4,), float32."""
    area1 = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    area2 = (crop[2] - crop[0]) * (crop[3] - crop[1])
    lt = jnp.maximum(boxes[:, :2], crop[:2])
    rb = jnp.minimum(boxes[:, 2:], crop[2:])
    wh = jnp.clip(rb - lt, 0.0)
    inter = wh[:, 0] * wh[:, 1]
    return inter / (area1 + area2 - inter)


def _one_round(u_option, u_scale, u_pos, boxes, valid, h: int, w: int, *, min_scale,
               max_scale, min_aspect_ratio, max_aspect_ratio, sampler_options):
    """One option and its trials: ``(box, within, min_iou, decided)`` (see
    :func:`iou_crop_box`); ``decided``: a trial was accepted, or the option takes no crop."""
    options = jnp.asarray(sampler_options, _F32)
    idx = jnp.minimum(jnp.floor(u_option * len(sampler_options)).astype(jnp.int32),
                      len(sampler_options) - 1)
    min_iou = options[idx]
    r = min_scale + (max_scale - min_scale) * u_scale  # (T, 2) float32, as torch.rand(2)
    new_w = jnp.floor(w * r[:, 0])
    new_h = jnp.floor(h * r[:, 1])
    aspect = new_w / jnp.maximum(new_h, 1.0)
    ok = (new_h > 0) & (min_aspect_ratio <= aspect) & (aspect <= max_aspect_ratio)
    left = jnp.floor((w - new_w) * u_pos[:, 0])
    top = jnp.floor((h - new_h) * u_pos[:, 1])
    right, bottom = left + new_w, top + new_h
    ok &= (left != right) & (top != bottom)
    cx = 0.5 * (boxes[:, 0] + boxes[:, 2])
    cy = 0.5 * (boxes[:, 1] + boxes[:, 3])
    within = ((left[:, None] < cx) & (cx < right[:, None]) & (top[:, None] < cy)
              & (cy < bottom[:, None]) & valid)  # (T, M)
    crops = jnp.stack([left, top, right, bottom], axis=-1)
    ious = jax.vmap(lambda c: box_iou(boxes, c))(crops)  # (T, M)
    best = jnp.max(jnp.where(within, ious, -jnp.inf), axis=-1, initial=-jnp.inf)
    ok &= within.any(axis=-1) & (best >= min_iou)
    first = jnp.argmax(ok)
    take = ok.any() & (min_iou < 1.0)
    box = jnp.where(take, jnp.stack([top[first], left[first], new_h[first], new_w[first]]),
                    jnp.array([0.0, 0.0, h, w], _F32)).astype(jnp.int32)
    kept = jnp.where(take, within[first], valid) if boxes.shape[0] else valid
    return box, kept, min_iou, take | (min_iou >= 1.0)


def iou_crop_box(u_option, u_scale, u_pos, boxes, valid, h: int, w: int, *, min_scale,
                 max_scale, min_aspect_ratio, max_aspect_ratio, sampler_options):
    """torchvision ``RandomIoUCrop.make_params``, branch-free, from given uniform draws.

    ``R`` rounds of ``T`` trials: ``u_option`` (R,), ``u_scale`` and ``u_pos`` (R, T, 2). Round
    ``k`` picks the option ``sampler_options[floor(u_option[k] * len)]`` (a value >= 1 takes no
    crop); its trial ``t`` takes ``r = min_scale + (max_scale - min_scale) * u_scale[k, t]``
    (``new_w = int(W * r[0])``, ``new_h = int(H * r[1])``) and ``u = u_pos[k, t]`` (``left =
    int((W - new_w) * u[0])``, ``top = int((H - new_h) * u[1])``). A trial is accepted as
    torchvision accepts it: aspect ratio ``new_w / new_h`` within the limits, a non-empty crop,
    at least one valid box whose centre lies strictly inside it, and the largest IoU of those
    boxes with the crop ``>=`` the option. Everything is computed at once; the first round that
    decides (an accepted trial, its first; or the no-crop option) wins, as torchvision's loop
    (which draws a new option when a round's trials all fail). When no round decides, the image
    is left as it is (torchvision would keep drawing).

    Returns ``(box, within, min_iou)``: int32 ``(top, left, height, width)``, the (M,) boxes
    whose centre lies inside the crop (the valid ones where no crop is taken) and the option
    of the deciding round (of the last round when none decides).
    """
    conf = dict(min_scale=min_scale, max_scale=max_scale, min_aspect_ratio=min_aspect_ratio,
                max_aspect_ratio=max_aspect_ratio, sampler_options=sampler_options)
    box, kept, min_iou, decided = jax.vmap(
        lambda a, b, c: _one_round(a, b, c, boxes, valid, h, w, **conf))(
            jnp.asarray(u_option), jnp.asarray(u_scale), jnp.asarray(u_pos))
    k = jnp.where(decided.any(), jnp.argmax(decided), decided.shape[0] - 1)
    found = decided.any()
    box = jnp.where(found, box[k], jnp.array([0, 0, h, w], jnp.int32))
    return box, jnp.where(found, kept[k], valid), min_iou[k]


def _iou_sample(key, meta, params, *, targets, trials, rounds, min_scale, max_scale,
                min_aspect_ratio, max_aspect_ratio, sampler_options, **_):
    """One sample's ``box``, ``boxes_valid`` and ``min_iou``: ``u = jax.random.uniform(key,
    (R, 1 + 4T))`` holds per round the option draw ``u[:, 0]``, the trials' scale draws
    ``u[:, 1:1+2T]`` and their position draws ``u[:, 1+2T:]`` (each ``(R, T, 2)``, see
    :func:`iou_crop_box`)."""
    t, r = trials, rounds
    u = jax.random.uniform(key, (r, 1 + 4 * t))
    boxes, valid = targets["boxes"], targets["boxes_valid"]
    if boxes.shape[0] == 0:  # a call without boxes: the whole image is the one box
        boxes = jnp.array([[0.0, 0.0, meta.width, meta.height]], _F32)
        valid = jnp.ones((1,), jnp.bool_)
    box, within, min_iou = iou_crop_box(
        u[:, 0], u[:, 1:1 + 2 * t].reshape(r, t, 2), u[:, 1 + 2 * t:].reshape(r, t, 2),
        boxes, valid, meta.height, meta.width, min_scale=min_scale, max_scale=max_scale,
        min_aspect_ratio=min_aspect_ratio, max_aspect_ratio=max_aspect_ratio,
        sampler_options=sampler_options)
    within = within[:targets["boxes"].shape[0]]
    return {"box": box, "boxes_valid": within, "min_iou": min_iou}


def _iou_matrix(params, meta, *, size, **_):
    top, left, h, w = (params["box"][i] for i in range(4))
    return crop_resize_matrix(top, left, h, w, size[0], size[1])


def _output_size(h: int, w: int, *, size, **_) -> tuple[int, int]:
    return tuple(size)


def _check(*, min_scale, max_scale, min_aspect_ratio, max_aspect_ratio, sampler_options,
           **_) -> None:
    if not 0.0 < min_scale <= max_scale <= 1.0:
        raise ValueError(f"expected 0 < min_scale <= max_scale <= 1, got {min_scale}, "
                         f"{max_scale}")
    if not 0.0 < min_aspect_ratio <= max_aspect_ratio:
        raise ValueError(f"expected 0 < min_aspect_ratio <= max_aspect_ratio, got "
                         f"{min_aspect_ratio}, {max_aspect_ratio}")
    if not sampler_options:
        raise ValueError("sampler_options must hold at least one minimum IoU")


@op(
    "random_iou_crop",
    params={
        "size": Param(None, kind="size", low=1, required=True,
                      doc="output (height, width) the crop is resized to, or one int"),
        "min_scale": Param(0.3, low=0.0, doc="smallest crop side, a fraction of the image's"),
        "max_scale": Param(1.0, low=0.0, high=1.0, doc="largest crop side, a fraction"),
        "min_aspect_ratio": Param(0.5, low=0.0, low_exclusive=True,
                                  doc="smallest crop width / height"),
        "max_aspect_ratio": Param(2.0, low=0.0, low_exclusive=True,
                                  doc="largest crop width / height"),
        "sampler_options": Param(IOU_OPTIONS, kind="floats",
                                 doc="minimum IoU options (one drawn per sample; >= 1: no crop)"),
        "trials": Param(40, low=1, high=1000, doc="crops tried per option (all at once)"),
        "rounds": Param(8, low=1, high=100, doc="options drawn per sample (torchvision draws "
                                                 "until one decides; all at once)"),
        "interpolation": Param("bilinear", choices=INTERPOLATIONS,
                               doc="'bilinear' or 'nearest' resize of the crop"),
        "antialias": Param(True, doc="widen the bilinear filter when shrinking"),
    },
    sample=_iou_sample,
    sample_targets=("boxes",),
    matrix=_iou_matrix,
    output_size=_output_size,
    check=_check,
    reference="torchvision.transforms.v2.RandomIoUCrop (then Resize(size))",
)
def random_iou_crop(image, params, *, size, min_scale, max_scale, min_aspect_ratio,
                    max_aspect_ratio, sampler_options, trials, rounds, interpolation, antialias):
    """Crops a box that overlaps the sample's boxes by a drawn minimum IoU (SSD), resized.

    torchvision RandomIoUCrop: a minimum IoU is drawn from ``sampler_options`` (``1.0``: no
    crop); of ``trials`` random crops (sides ``[min_scale, max_scale]`` of the image's, aspect
    ratio within ``[min_aspect_ratio, max_aspect_ratio]``), the first that holds the centre of a
    valid box and whose IoU with one such box reaches the minimum is taken; when none is, a new
    option is drawn (``rounds`` of them, all computed at once). Boxes whose centre lies outside
    the crop become invalid. The crop is then resized to ``size`` (torchvision's SSD recipe
    resizes after the crop). Differences: after ``rounds`` undecided options (rare: a round
    fails about half the time with 40 trials) the image is left as it is (torchvision keeps
    drawing), and so is a sample whose boxes are all invalid (torchvision loops); a call
    without boxes crops as if the whole image were the one box (the crop's area is then at
    least the drawn IoU times the image's; torchvision refuses such a call).

    Params: ``box`` ((4,) int32 top, left, height, width), ``min_iou`` (float32, the drawn
    option), ``boxes_valid`` ((M,) bool: centre inside the crop).
    """
    config = (image.shape[:2], size, interpolation, antialias)
    if partitioned() or min(*image.shape[:2], *size) < MIN_SIDE:  # a loop would serialize a
        # batch laid out over several devices; a tiny image gains nothing (MIN_SIDE)
        return _iou_all(image, params["box"], None, config)
    return platform_dependent(image, params["box"], jnp.float32(0.0), cpu=_iou_by_image(config),
                              default=lambda *a: _iou_all(*a, config))


def _iou_all(image, box, _, config):
    """Every sample resampled with every tap over every row (the form under ``vmap``)."""
    _, size, interpolation, antialias = config
    return resize_crop(image, tuple(box[i] for i in range(4)), size, interpolation, antialias)


@functools.cache
def _iou_by_image(config):
    hw, size, interpolation, antialias = config

    def taps_of(b):
        return crop_taps(hw, tuple(b[i] for i in range(4)), size, interpolation, antialias)

    return by_image(crop_branching, taps_of, lambda *a: _iou_all(*a, config))


# ---------------------------------------------------------------------------------------------
# random_zoom_out


def _canvas_shape(h: int, w: int, side_range) -> tuple[int, int]:
    """The largest canvas a zoom-out can draw: ``int(side * H)`` x ``int(side * W)``."""
    return int(h * side_range[1]), int(w * side_range[1])


def _zoom_sample(key, meta, params, *, p, side_range, **_):
    """One sample's ``canvas`` ((4,) int32: top, left of the image on the canvas, canvas
    height, width; ``(0, 0, H, W)`` where not applied): ``u = jax.random.uniform(key, (4,))``,
    ``u[0] < p`` applies it, ``r = side_range[0] + u[1] * (side_range[1] - side_range[0])``
    (``canvas = (int(H * r), int(W * r))``), ``left = int((cw - W) * u[2])``, ``top = int((ch -
    H) * u[3])``, as torchvision's ``RandomZoomOut.make_params``."""
    h, w = meta.height, meta.width
    u = jax.random.uniform(key, (4,))
    r = side_range[0] + u[1] * (side_range[1] - side_range[0])
    cw, ch = jnp.floor(w * r), jnp.floor(h * r)
    left, top = jnp.floor((cw - w) * u[2]), jnp.floor((ch - h) * u[3])
    on = u[0] < p
    canvas = jnp.where(on, jnp.stack([top, left, ch, cw]), jnp.array([0.0, 0.0, h, w], _F32))
    return {"canvas": canvas.astype(jnp.int32)}


def _zoom_size(h: int, w: int, *, size, **_) -> tuple[int, int]:
    return (h, w) if size is None else tuple(size)


def _zoom_matrix(params, meta, *, size, **_):
    top, left, ch, cw = (params["canvas"][i] for i in range(4))
    oh, ow = _zoom_size(meta.height, meta.width, size=size)
    return crop_resize_matrix(-top, -left, ch, cw, oh, ow)


@op(
    "random_zoom_out",
    params={
        "fill": Param(0.0, kind="floats", low=0.0, high=1.0,
                      doc="canvas value, a fraction of the range (one or one per channel)"),
        "side_range": Param((1.0, 4.0), kind="pair", low=1.0,
                            doc="range of the canvas side, a multiple of the image's"),
        "p": Param(0.5, low=0.0, high=1.0, neutral=0.0, doc="probability of zooming out"),
        "size": Param(None, kind="size", low=1, optional=True,
                      doc="output (height, width) the canvas is resized to; None: the input's"),
        "interpolation": Param("bilinear", choices=INTERPOLATIONS,
                               doc="'bilinear' or 'nearest' resize of the canvas"),
        "antialias": Param(True, doc="widen the bilinear filter when shrinking"),
    },
    sample=_zoom_sample,
    matrix=_zoom_matrix,
    output_size=_zoom_size,
    reference="torchvision.transforms.v2.RandomZoomOut (then Resize(size))",
)
def random_zoom_out(image, params, *, fill, side_range, p, size, interpolation, antialias):
    """Places the image on a larger canvas of ``fill`` (SSD's zoom out), resized to ``size``.

    torchvision RandomZoomOut: with probability ``p`` the canvas is ``side`` times the image
    (``side ~ U(side_range)``), the image at a uniform position on it; then the canvas is
    resized to ``size`` (the input's size by default) as torchvision's recipes resize after it,
    so a batch keeps one shape. The canvas is never built: each resampling tap reads the image
    or ``fill`` (:func:`augjax.kernels.resize.resize_canvas`), so the cost follows the output.
    On the CPU a batch runs image by image: a sample left alone is copied and the others read
    only the taps that weigh something (the same bits as every tap of every sample).

    Params: ``canvas`` ((4,) int32 top, left of the image on the canvas, canvas height, width).
    """
    h, w, c = image.shape
    value = check_fill(fill, image, "random_zoom_out")
    if is_int(image.dtype):
        value = jnp.clip(jnp.round(value), 0.0, 255.0)
    config = (_canvas_shape(h, w, side_range), _zoom_size(h, w, size=size), interpolation,
              antialias)
    if partitioned() or min(h, w, *config[1]) < MIN_SIDE:  # a loop would serialize a batch
        # laid out over several devices; a tiny image gains nothing (MIN_SIDE)
        return _zoom_all(image, params["canvas"], value, config)
    return platform_dependent(image, params["canvas"], value, cpu=_zoom_by_image(config),
                              default=lambda *a: _zoom_all(*a, config))


def _zoom_all(image, canvas, value, config):
    """Every sample resampled with every tap (the form under ``vmap``)."""
    bound, out, interpolation, antialias = config
    return resize_canvas(image, (canvas[0], canvas[1]), (canvas[2], canvas[3]), bound, out,
                         value, interpolation, antialias)


@functools.cache
def _zoom_by_image(config):
    bound, out, interpolation, antialias = config

    def taps_of(c):
        return canvas_taps((c[2], c[3]), bound, out, interpolation, antialias)

    return by_image(zoom_branching, taps_of, lambda *a: _zoom_all(*a, config))


# ---------------------------------------------------------------------------------------------
# scale_jitter (large-scale jitter: resize by a random scale, then crop / pad to a fixed size)


def _jitter_sample(key, meta, params, *, target_size, scale_range, size, **_):
    """One sample's ``resized`` ((2,) int32: the image's size after the jitter, height, width)
    and ``offset`` ((2,) int32: top, left of the output window in the resized image):
    ``u = jax.random.uniform(key, (2,))``, ``scale = lo + u[0] * (hi - lo)``, ``r = min(th / H,
    tw / W) * scale`` (torchvision ``ScaleJitter``: ``(int(H * r), int(W * r))``); the window's
    top and left are ``int(max(h' - oh, 0) * u[1])`` and ``int(max(w' - ow, 0) * u[1])`` (one
    draw for both, as torchvision's detection reference ``FixedSizeCrop``)."""
    h, w = meta.height, meta.width
    oh, ow = _jitter_size(h, w, target_size=target_size, size=size)
    u = jax.random.uniform(key, (2,))
    scale = scale_range[0] + u[0] * (scale_range[1] - scale_range[0])
    if isinstance(h, int) and isinstance(w, int):
        r = min(target_size[0] / h, target_size[1] / w) * scale
    else:  # an image of its own size (traced): the same float32 quotients
        r = jnp.minimum(target_size[0] / h, target_size[1] / w) * scale
    nh, nw = jnp.floor(h * r), jnp.floor(w * r)
    top = jnp.floor(jnp.maximum(nh - oh, 0.0) * u[1])
    left = jnp.floor(jnp.maximum(nw - ow, 0.0) * u[1])
    return {"resized": jnp.stack([nh, nw]).astype(jnp.int32),
            "offset": jnp.stack([top, left]).astype(jnp.int32)}


def _jitter_size(h: int, w: int, *, target_size, size, **_) -> tuple[int, int]:
    return tuple(target_size if size is None else size)


def _jitter_window(params, h, w, *, target_size, size, fill, **_):
    """Images of different sizes: the whole image resized to ``resized``, the output window at
    ``offset`` in it, ``fill`` beyond (DALI's ``fn.resize`` then ``fn.slice`` in a pipeline)."""
    return Window(size=params["resized"], anchor=params["offset"],
                  out=_jitter_size(h, w, target_size=target_size, size=size), fill=tuple(fill))


def _jitter_matrix(params, meta, **_):
    nh, nw = (params["resized"][i].astype(_F32) for i in range(2))
    top, left = (params["offset"][i].astype(_F32) for i in range(2))
    sx, sy = nw / meta.width, nh / meta.height
    zero, one = jnp.float32(0.0), jnp.float32(1.0)
    return jnp.stack([jnp.stack([sx, zero, 0.5 * sx - 0.5 - left]),
                      jnp.stack([zero, sy, 0.5 * sy - 0.5 - top]),
                      jnp.stack([zero, zero, one])])


@op(
    "scale_jitter",
    params={
        "target_size": Param(None, kind="size", low=1, required=True,
                             doc="(height, width) whose fit sets the base scale"),
        "scale_range": Param((0.1, 2.0), kind="pair", low=0.0, low_exclusive=True,
                             doc="range of the scale drawn per sample, times the base scale"),
        "size": Param(None, kind="size", low=1, optional=True,
                      doc="output (height, width), cropped or padded to; None: target_size"),
        "fill": Param(0.0, kind="floats", low=0.0, high=1.0,
                      doc="padding value, a fraction of the range (one or one per channel)"),
        "interpolation": Param("bilinear", choices=INTERPOLATIONS,
                               doc="'bilinear' or 'nearest' resize"),
        "antialias": Param(True, doc="widen the bilinear filter when shrinking"),
    },
    sample=_jitter_sample,
    matrix=_jitter_matrix,
    ragged=_jitter_window,
    output_size=_jitter_size,
    reference="torchvision.transforms.v2.ScaleJitter, then the detection reference's "
              "FixedSizeCrop(size)",
)
def scale_jitter(image, params, *, target_size, scale_range, size, fill, interpolation,
                 antialias):
    """Resizes by a random scale, then crops or pads to a fixed size (large-scale jitter).

    torchvision ScaleJitter: ``r = min(th / H, tw / W) * U(scale_range)`` and a resize to
    ``(int(H * r), int(W * r))``; then torchvision's detection reference ``FixedSizeCrop(size)``
    (the LSJ recipe of Mask R-CNN / DETR training): a random window of ``size`` where the
    resized image is larger (one draw places it along both axes), ``fill`` below and to the
    right where it is smaller. Only the output window of the resized image is computed (a
    resize to a traced size, its rows from the offset on), so the batch keeps one shape. As a
    chain's first op it takes images of different sizes (``ragged=``: each drawn from its own
    size; in DALI ``fn.resize`` and ``fn.slice`` read them, see docs/guide/ragged.md).

    Params: ``resized`` ((2,) int32 height, width after the jitter), ``offset`` ((2,) int32 top,
    left of the window in the resized image).

    The resample reads each output pixel's few nonzero taps
    (:func:`augjax.kernels.window.read_window_taps`, as the ragged read does), summed in order:
    elementwise arithmetic, which gives the same bits on every x86-64 CPU. The dense weight
    matrices multiplied by XLA:CPU's dot (before 2026-12-06) summed in an order that depends on
    the CPU's vector width (another float32 result on an AVX2-only AMD EPYC than with AVX-512)
    and computed every zero weight: at the default scale range a row reads at most
    ``ceil(2 / (0.1 r)) + 1`` taps of its ``H`` pixels. On the CPU a batch runs image by
    image, each reading only its taps that weigh something, from the image's transpose for the
    width pass (:func:`augjax.catalog._by_image.jitter_branching`): the same sums, the same
    bits in less time than the dense products took (``benchmarks/scale_jitter_taps.py``, 2-core
    CPU: 224^2 B=16 0.4x uint8, 0.9x float32; 640^2 -> 1024^2 B=4 0.2x), except for a
    shrink to a few pixels (the kit's 8x10 from 224^2: 1.2-2.4x, every tap 30-60x).
    """
    h, w, _ = image.shape
    oh, ow = _jitter_size(h, w, target_size=target_size, size=size)
    value = check_fill(fill, image, "scale_jitter")
    least = min(target_size[0] / h, target_size[1] / w) * scale_range[0]  # the smallest r
    # The widest shrink of an axis: its size over the smallest resized size (one less for the
    # float32 rounding of r), at least one pixel.
    taps = tuple(taps_needed(n / max(1.0, math.floor(n * least) - 1.0), interpolation, antialias)
                 for n in (h, w))
    config = ((h, w), (oh, ow), interpolation, antialias, taps)
    p = jnp.concatenate([params["resized"], params["offset"]])
    if interpolation == "nearest" or partitioned():  # one tap; a loop would serialize a
        # batch laid out over several devices
        return _jitter_all(image, p, value, config)
    return platform_dependent(image, p, value, cpu=_jitter_by_image(config),
                              tpu=lambda *a: _jitter_dense(*a, config),
                              default=lambda *a: _jitter_all(*a, config))


def _jitter_dense(image, p, value, config):
    """The TPU's form: dense weight matrices (:func:`augjax.kernels.resize.window_weights`, the
    taps' weights with every zero) multiplied at full float32 precision on the MXU, one per
    axis (a B=256 batch of 224^2 on a TPU v5e: 1.3 ms; its strong shrinks' taps, every tap
    compared into a matrix, 48.8 ms). Within a level of the CPU's taps (the TPU parity test)."""
    (h, w), (oh, ow), interpolation, antialias, _ = config
    nh, nw, top, left = p[0], p[1], p[2], p[3]
    wy = window_weights(oh, top, nh, h, 0, h, interpolation, antialias)  # (oh, h)
    wx = window_weights(ow, left, nw, w, 0, w, interpolation, antialias)  # (ow, w)
    x = jnp.einsum("ow,hwc->hoc", wx, image.astype(_F32), precision="highest")
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)  # ATen's uint8 passes round half up
    x = jnp.einsum("oh,hwc->owc", wy, x, precision="highest")
    inside = ((jnp.arange(oh) < nh - top)[:, None] & (jnp.arange(ow) < nw - left)[None, :])
    if is_int(image.dtype):
        x = jnp.clip(jnp.floor(x + 0.5), 0.0, 255.0)
        value = jnp.clip(jnp.round(value), 0.0, 255.0)
    return jnp.where(inside[..., None], x, value).astype(image.dtype)


def _jitter_all(image, p, value, config):
    """Every sample resampled with every tap (the form under ``vmap``; ``p``: ``resized``
    then ``offset``)."""
    hw, out, interpolation, antialias, taps = config
    box = jnp.array([0, 0, *hw], jnp.int32)
    return read_window_taps(image, box, p[:2], p[2:], out, value, interpolation, antialias, taps)


@functools.cache
def _jitter_by_image(config):
    """The CPU form: :func:`augjax.catalog._by_image.by_image` of ``jitter_branching`` over
    the images' transposes, the taps computed for the batch as :func:`_jitter_all` computes
    them (the same weights)."""
    hw, out, interpolation, antialias, taps = config

    def taps_of(p):
        box = jnp.array([0, 0, *hw], jnp.int32)
        iy, wy, ix, wx = read_taps(hw, box, p[:2], p[2:], out, interpolation, antialias, taps)
        # Moved to the first columns, a row's nonzero taps (at most the axis's pixels) fit in
        # the first min(taps, pixels); beyond CHUNK, as many as a multiple of CHUNK (the
        # columns added weigh 0 and read the row's first pixel, as taps_from_first's).
        moved = []
        for index, weight, n in ((iy, wy, hw[0]), (ix, wx, hw[1])):
            index, weight = taps_from_first(index, weight)
            index, weight = index[:, :n], weight[:, :n]
            pad = -weight.shape[1] % CHUNK if max(taps) > CHUNK else 0
            index = jnp.concatenate([index, jnp.repeat(index[:, :1], pad, axis=1)], axis=1)
            weight = jnp.pad(weight, ((0, 0), (0, pad)))
            moved += [index, weight]
        return tuple(moved)

    form = by_image(jitter_branching, taps_of,
                    lambda c, p, v: _jitter_all(jnp.swapaxes(c, 0, 1), p, v, config))
    return lambda image, p, value: form(jnp.swapaxes(image, 0, 1), p, value)
