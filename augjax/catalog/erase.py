"""Erasing ops: rectangles of an image replaced by a fill (timm RandomErasing, DeVries cutout).

Images are HWC, uint8 (0..255) or float32 in [0, 1]. Fill values are given as fractions of the
range, in [0, 1], whatever the dtype: they are multiplied by 255 and rounded for uint8 images, so
one configuration serves both dtypes. Both ops are sample level and branch-free: each sample's
boxes are drawn by the op's sampler and applied as masks (``jnp.where``), so one compiled
program serves every sample of a batch.

Params (``op.sample``; one value per sample, leading axis N). ``random_erasing``: ``applied``
(bool: the sample is erased), ``count`` (int32: how many of its boxes are used), ``box``
((max_count, 4) int32: top, left, height, width of each box), ``found`` ((max_count,) bool:
one of the box's 10 attempts fit; a box without one is skipped), and for ``mode="rand"`` /
``"pixel"`` ``noise`` (float32 standard normal values: ``(max_count, C)`` one colour per box,
``(H, W, C)`` one per pixel). ``cutout``: ``applied`` (bool) and ``box`` ((count, 4) int32 top,
left, height, width of each hole, before clipping at the border: ``top`` may be negative).
``op.apply(x, params=...)`` erases exactly the given boxes; ``applied=False`` is the identity.

Targets (:mod:`augjax._runtime.targets.follow`): erasing moves no pixel, so masks, boxes and
keypoints are returned unchanged (an erased region keeps its mask ids, as torchvision's
RandomErasing leaves ``tv_tensors.Mask`` alone).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax.errors import ParamError
from augjax.kernels import fields
from augjax.kernels.pixels import bound, is_int
from augjax.kernels.warp import uniform_int

__all__ = ["random_erasing", "cutout", "box_mask", "row_box_mask", "uniforms", "IMAGENET_MEAN",
           "IMAGENET_STD"]

#: timm's ``IMAGENET_DEFAULT_MEAN`` / ``IMAGENET_DEFAULT_STD`` (fractions of the range).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: timm's RandomErasing tries this many boxes before giving up on one.
ATTEMPTS = 10


def _fail(op_name: str, param: str, msg: str) -> ParamError:
    return ParamError(f"{op_name}: parameter '{param}' {msg}", op=op_name, param=param)


def per_channel(values: tuple[float, ...], channels: int, op_name: str, param: str) -> jax.Array:
    """A per-channel vector ``(C,)`` from one value or one value per channel.

    Raises:
        ParamError: the number of values is neither 1 nor ``channels``.
    """
    if len(values) not in (1, channels):
        raise _fail(op_name, param, f"expects 1 value or one per channel ({channels}), got "
                                    f"{len(values)} values {values!r} for images of {channels} "
                                    f"channels")
    return jnp.broadcast_to(jnp.asarray(values, jnp.float32), (channels,))


def box_mask(height: int, width: int, top: jax.Array, left: jax.Array, h: jax.Array,
             w: jax.Array) -> jax.Array:
    """Boolean ``(..., H, W)`` mask of the boxes ``[top, top + h) x [left, left + w)``
    (each argument ``(...)``; boxes may reach past the border, the mask is clipped)."""
    rows = jnp.arange(height)
    cols = jnp.arange(width)
    in_r = (rows >= top[..., None]) & (rows < (top + h)[..., None])
    in_c = (cols >= left[..., None]) & (cols < (left + w)[..., None])
    return in_r[..., :, None] & in_c[..., None, :]


def row_box_mask(height: int, width: int, channels: int, top: jax.Array, left: jax.Array,
                 h: jax.Array, w: jax.Array) -> jax.Array:
    """:func:`box_mask` over images seen as rows of ``width * channels`` values, ``(..., H,
    W*C)``: value ``j`` of a row is pixel ``j // C``. A kernel that selects in this view has
    an innermost loop of ``W*C`` values, which XLA:CPU vectorises; over ``(..., W, C)`` the
    innermost loop had ``C`` (3) iterations and ran one value at a time (mixup on B=16 224^2
    float32: 0.9 -> 0.5 ms, with normalize fused into it 2.2 -> 0.5 ms)."""
    rows = jnp.arange(height)
    cols = jnp.arange(width * channels) // channels
    in_r = (rows >= top[..., None]) & (rows < (top + h)[..., None])
    in_c = (cols >= left[..., None]) & (cols < (left + w)[..., None])
    return in_r[..., :, None] & in_c[..., None, :]


def uniforms(key: jax.Array, **shapes: tuple[int, ...]) -> dict[str, jax.Array]:
    """Named arrays of U[0, 1) draws, all from one ``jax.random.uniform`` call (each random
    call costs ~0.25 s of XLA compile time on CPU; one call serves every draw of an op)."""
    sizes = [math.prod(shape) for shape in shapes.values()]
    flat = jax.random.uniform(key, (sum(sizes),))
    out, start = {}, 0
    for (name, shape), size in zip(shapes.items(), sizes):
        out[name] = flat[start:start + size].reshape(shape)
        start += size
    return out


# -- random_erasing ----------------------------------------------------------------------------
def _aspect_logs(min_aspect: float, max_aspect: float | None) -> tuple[float, float]:
    return (math.log(min_aspect), math.log(max_aspect or 1.0 / min_aspect))


def _erasing_sample(key, meta, params, *, p, min_area, max_area, min_aspect, max_aspect, mode,
                    min_count, max_count, **_):
    """One sample's random_erasing params (see the module docstring), timm's ``_erase`` draws.

    Draws: ``k_u, k_noise = jax.random.split(key)``; ``u = jax.random.uniform(k_u, (2 + 22 M,))``
    with ``M = max_count or min_count`` holds, in order, the apply coin, the count draw, the
    area draws ``(M, 10)``, the log-aspect draws ``(M, 10)``, then the top ``(M,)`` and left
    ``(M,)`` draws; ``noise = jax.random.normal(k_noise, (M, C))`` for ``"rand"``,
    :func:`augjax.kernels.fields.normal` ``(k_noise, (H, W, C))`` for ``"pixel"`` (one hash per
    value: ``jax.random.normal``'s values with ``jax_threefry_partitionable`` off, under either
    setting; a third of ``jax.random.normal``'s time on the CPU under its default)."""
    height, width = meta.height, meta.width
    m = max_count or min_count
    shape = (m, ATTEMPTS)
    k_u, k_noise = jax.random.split(key)
    u = uniforms(k_u, apply=(), count=(), area=shape, aspect=shape, top=(m,), left=(m,))
    count = uniform_int(u["count"], min_count, m + 1)
    area = min_area + u["area"] * (max_area - min_area)
    lo, hi = _aspect_logs(min_aspect, max_aspect)
    aspect = jnp.exp(lo + u["aspect"] * (hi - lo))
    target = area * (height * width) / count
    hs = jnp.round(jnp.sqrt(target * aspect)).astype(jnp.int32)  # Python round: half to even
    ws = jnp.round(jnp.sqrt(target / aspect)).astype(jnp.int32)
    fits = (ws < width) & (hs < height)
    first = jnp.argmax(fits, axis=1)  # timm keeps the first attempt that fits
    h = jnp.take_along_axis(hs, first[:, None], 1)[:, 0]
    w = jnp.take_along_axis(ws, first[:, None], 1)[:, 0]
    top = uniform_int(u["top"], 0, jnp.maximum(height - h + 1, 1))  # timm randint(0, H - h)
    left = uniform_int(u["left"], 0, jnp.maximum(width - w + 1, 1))
    out = {"applied": u["apply"] < p, "count": count,
           "box": jnp.stack([top, left, h, w], axis=-1), "found": jnp.any(fits, axis=1)}
    if mode == "rand":
        out["noise"] = jax.random.normal(k_noise, (m, meta.channels))
    elif mode == "pixel":
        out["noise"] = fields.normal(k_noise, (height, width, meta.channels))
    return out


def _check_erasing(min_area, max_area, min_count, max_count) -> None:
    if min_area > max_area:
        raise _fail("random_erasing", "min_area",
                    f"must be <= max_area ({max_area:g}), got {min_area:g}")
    if max_count is not None and max_count < min_count:
        raise _fail("random_erasing", "max_count",
                    f"must be >= min_count ({min_count}) or None, got {max_count}")


@op(
    "random_erasing",
    params={
        "p": Param(0.5, low=0.0, high=1.0, neutral=0.0, aliases={"probability": "timm"},
                   doc="probability that a sample is erased (timm 'probability')"),
        "min_area": Param(0.02, low=0.0, high=1.0, aliases={"scale": "torchvision"},
                          doc="smallest erased fraction of the image"),
        "max_area": Param(1 / 3, low=0.0, high=1.0, aliases={"scale": "torchvision"},
                          doc="largest erased fraction of the image"),
        "min_aspect": Param(0.3, low=0.0, low_exclusive=True, aliases={"ratio": "torchvision"},
                            doc="smallest box aspect (height / width), > 0"),
        "max_aspect": Param(None, kind="float", low=0.0, low_exclusive=True, optional=True,
                            aliases={"ratio": "torchvision"},
                            doc="largest aspect, > 0; None means 1 / min_aspect"),
        "mode": Param("const", choices=("const", "rand", "pixel"),
                      doc="fill: constant, one random colour per box, random per pixel"),
        "min_count": Param(1, low=1, doc="fewest boxes per erased sample"),
        "max_count": Param(None, kind="int", low=1, optional=True,
                           doc="most boxes (uniform count in [min_count, max_count]); None = min"),
        "fill": Param(None, kind="floats", low=0.0, high=1.0, optional=True,
                      aliases={"value": "torchvision"},
                      doc="const colour in [0, 1] (one or per channel); None = mean"),
        "mean": Param(IMAGENET_MEAN, kind="floats", low=0.0, high=1.0,
                      doc="normalisation mean the fills are defined against"),
        "std": Param(IMAGENET_STD, kind="floats", low=0.0, low_exclusive=True,
                     doc="normalisation std (> 0) the random fills are defined against"),
    },
    sample=_erasing_sample,
    check=lambda **p: _check_erasing(p["min_area"], p["max_area"], p["min_count"],
                                     p["max_count"]),
    reference="timm.data.random_erasing.RandomErasing",
)
def random_erasing(image, params, *, p, min_area, max_area, min_aspect, max_aspect, mode,
                   min_count, max_count, fill, mean, std):
    """Erases random rectangles of each sample with probability ``p`` (timm RandomErasing).

    Boxes follow timm's ``_erase``: the sample is erased with probability ``p``; it gets
    ``count`` boxes, uniform in ``[min_count, max_count]``; for each box, up to 10 attempts draw
    a target area ``U(min_area, max_area) * H * W / count`` and an aspect ``exp(U(log
    min_aspect, log max_aspect))`` (``max_aspect=None`` means ``1 / min_aspect``), giving
    ``h = round(sqrt(area * aspect))`` and ``w = round(sqrt(area / aspect))``; the first attempt
    with ``h < H`` and ``w < W`` is placed with its top-left corner uniform over the positions
    where it fits; a box with no fitting attempt is skipped. Later boxes are drawn over earlier
    ones. As in timm, ``min_aspect > max_aspect`` is allowed (the log-aspect is uniform between
    the two); ``min_area > max_area`` raises ParamError. ``p`` is timm's ``probability``.

    Fills. timm runs on images already normalised with ``(x - mean) / std``, where 'const' writes
    0 and 'rand'/'pixel' write standard normal noise. Here images are uint8 or in [0, 1], and
    the fills are defined so that after that same normalisation the erased pixels hold what
    timm writes: 'const' writes ``fill`` (default ``mean``, i.e. 0 once normalised); 'rand'
    writes one colour ``mean + std * z`` per box, 'pixel' one per pixel, ``z ~ N(0, 1)`` per
    channel. ``mean`` and ``std`` default to timm's ImageNet constants; pass those of your
    normalisation. Deviations: the noise is clipped to the image range [0, 1] (a standard normal
    value below ``-mean / std`` or above ``(1 - mean) / std`` is clipped; about 2-3% of values
    with the ImageNet constants), and uint8 images round it to whole levels. timm's
    ``num_splits`` (leave the first part of a batch clean) is a batch concept and is not
    offered: apply the op to a slice instead. Sizes are computed in float32 (timm float64): a
    box side can differ when ``sqrt(...)`` lies within ~1e-6 of a half integer.

    Params: ``applied`` (bool), ``count`` (int32), ``box`` ((max_count, 4) int32 top, left,
    height, width), ``found`` ((max_count,) bool), and ``noise`` (standard normal ``z``:
    ``(max_count, C)`` for 'rand', ``(H, W, C)`` for 'pixel'). Box ``b`` is erased where
    ``applied``, ``b < count`` and ``found[b]``.
    """
    _check_erasing(min_area, max_area, min_count, max_count)
    height, width, channels = image.shape
    box = params["box"]
    n_boxes = box.shape[0]
    if mode == "const" and fill is not None:  # mean and std are not used
        values = per_channel(fill, channels, "random_erasing", "fill")
        values = jnp.broadcast_to(values, (n_boxes, 1, 1, channels))
    else:
        mu = per_channel(mean, channels, "random_erasing", "mean")
        sigma = per_channel(std, channels, "random_erasing", "std")
        if mode == "const":
            z = jnp.zeros((1, 1, 1, channels))
        elif mode == "rand":
            z = params["noise"][:, None, None, :]
        else:
            z = params["noise"][None]
        values = jnp.broadcast_to(mu + sigma * z, (n_boxes,) + z.shape[1:])
    values = jnp.clip(values, 0.0, 1.0) * bound(image.dtype)
    if is_int(image.dtype):
        values = jnp.round(values)
    values = values.astype(image.dtype)
    active = params["applied"] & (jnp.arange(n_boxes) < params["count"]) & params["found"]
    # Rows of W*C values (row_box_mask): XLA:CPU's loop over them vectorises; over (H, W, C)
    # its innermost loop had C (3) iterations, one value at a time.
    masks = row_box_mask(height, width, channels, box[:, 0], box[:, 1], box[:, 2], box[:, 3])
    masks = masks & active[:, None, None]
    rows = values.shape[1]  # 1 (one colour per box) or H (one per pixel)
    fills = jnp.broadcast_to(values, (n_boxes, rows, width, channels)).reshape(
        n_boxes, rows, width * channels)
    out = image.reshape(height, width * channels)
    for b in range(n_boxes):  # in order: a later box is drawn over an earlier one
        out = jnp.where(masks[b], fills[b], out)
    return out.reshape(image.shape)


# -- cutout ------------------------------------------------------------------------------------
def _cutout_sample(key, meta, params, *, size, count, p, **_):
    """One sample's cutout params: ``u = jax.random.uniform(key, (1 + 2 count,))`` holds the
    apply coin, then the centres' rows ``(count,)`` and columns ``(count,)``, each uniform over
    the pixels (``randint(0, H)``); a hole's box starts ``size // 2`` before its centre."""
    u = uniforms(key, apply=(), y=(count,), x=(count,))
    cy = uniform_int(u["y"], 0, meta.height)
    cx = uniform_int(u["x"], 0, meta.width)
    box = jnp.stack([cy - size[0] // 2, cx - size[1] // 2, jnp.full((count,), size[0]),
                     jnp.full((count,), size[1])], axis=-1).astype(jnp.int32)
    return {"applied": u["apply"] < p, "box": box}


@op(
    "cutout",
    params={
        "size": Param(16, kind="size", low=0, neutral=0, aliases={"length": "Cutout"},
                      doc="hole side in pixels (int, or (height, width))"),
        "count": Param(1, low=1, aliases={"n_holes": "Cutout", "num_holes": "albumentations"},
                       doc="number of holes per sample"),
        "p": Param(1.0, low=0.0, high=1.0, neutral=0.0, doc="probability that a sample is cut"),
        "fill": Param(0.0, kind="floats", low=0.0, high=1.0,
                      doc="hole colour in [0, 1] (one or per channel)"),
    },
    sample=_cutout_sample,
    reference="DeVries & Taylor 2017 Cutout (uoguelph-mlrg/Cutout), albumentations CoarseDropout",
)
def cutout(image, params, *, size, count, p, fill):
    """Cuts ``count`` holes of ``size`` pixels out of each sample, with probability ``p``.

    DeVries & Taylor Cutout: each hole's centre is uniform over the pixels
    (``randint(0, H)``, ``randint(0, W)``), the hole is clipped at the image border, holes may
    overlap, and they are filled with ``fill`` (a fraction of the range, one value or one per
    channel; 0 is black). Deviations: the hole spans rows ``[cy - size // 2, cy - size // 2 +
    size)``, exactly ``size`` rows before clipping (timm's ``rand_bbox`` convention); the
    reference's ``[cy - size // 2, cy + size // 2)`` is one row shorter for odd sizes and
    identical for even ones. DeVries applies the mask to normalised tensors, where 0 is the mean
    colour: pass ``fill=mean`` for that. ``p`` (default 1, as DeVries) is the per-sample
    probability, as albumentations' ``p``; albumentations CoarseDropout draws holes inside the
    image (no clipping) with random sizes, which this op does not do.

    Params: ``applied`` (bool: the sample is cut) and ``box`` ((count, 4) int32 top, left,
    height, width of each hole before clipping).
    """
    height, width, channels = image.shape
    value = per_channel(fill, channels, "cutout", "fill") * bound(image.dtype)
    if is_int(image.dtype):
        value = jnp.round(value)
    box = params["box"]
    mask = jnp.any(box_mask(height, width, box[:, 0], box[:, 1], box[:, 2], box[:, 3]), axis=0)
    return jnp.where((mask & params["applied"])[..., None], value.astype(image.dtype), image)
