"""Crop ops on HWC images (uint8 0..255 or float32 0..1), torchvision semantics.

``random_crop``'s ``fill`` is a fraction of the value range in [0, 1], as everywhere in augjax:
multiplied by 255 (and rounded) for uint8 images, used as is for float32 (torchvision takes it
in the image's scale: its uint8 ``fill=128`` is ``fill=128/255`` here).

Every op returns one fixed size for the whole batch (declared through ``output_size``), so a
random crop box differs per sample but the output shape does not: ``random_resized_crop``
resizes its box to ``size`` inside the traced program, with weight matrices built from the
(traced) box.

Params (``op.sample``; one value per sample, leading axis N): ``random_resized_crop``: ``box``
((4,) int32: top, left, height, width of the crop in input pixels); ``random_crop``: ``offset``
((2,) int32: top, left of the window in input pixels, negative where it starts in the
padding); ``center_crop`` draws nothing. ``op.apply(x, params={"box": ...})`` crops exact
boxes. Every op's ``matrix`` maps input pixel coordinates to output ones
(:func:`augjax.kernels.crop_resize_matrix`, :func:`augjax.kernels.translation`).

Targets (:mod:`augjax._runtime.targets.follow`): boxes and keypoints follow that matrix (a
translation and a scale); masks are cropped (and resized with nearest, ``antialias`` off) by the
same kernel, and padding (``random_crop``'s ``padding``, ``center_crop``'s zero padding) gets
``mask_fill`` with ``pad_mode="constant"``, or the mask's own edge/reflection otherwise.
Images of different sizes (``ragged=``): each op draws its params from the image's true size
(traced) and says by its :class:`augjax._core.meta.Window` which box it resamples and which
window it cuts, so a chain can start with it on ``fn.decoders.image`` output or a list of images
(:mod:`augjax._runtime.ragged.prefix`). ``random_crop`` then pads with a constant only.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from augjax._core.meta import Window
from augjax._core.param import Param
from augjax.calls import op
from augjax.errors import InputError
from augjax.kernels.matrix import crop_resize_matrix, translation
from augjax.kernels.pixels import is_int
from augjax.kernels.resize import RESIZE_INTERPOLATIONS, resize_crop
from augjax.kernels.warp import check_fill, uniform_int

__all__ = ["random_resized_crop", "random_crop", "center_crop", "ATTEMPTS"]

#: How many boxes torchvision's RandomResizedCrop tries before its centre-crop fallback.
ATTEMPTS = 10


def _size_param(doc: str) -> Param:
    return Param(None, kind="size", low=1, required=True, doc=doc)


def _output_size(h: int, w: int, *, size, **_) -> tuple[int, int]:
    return tuple(size)


# ---------------------------------------------------------------------------------------------
# random_resized_crop


def _resized_crop_box(u_area, u_ratio, u_top, u_left, h: int, w: int, scale, ratio):
    """torchvision ``RandomResizedCrop.make_params``, branch-free, from given uniform draws.

    ``u_area`` and ``u_ratio`` hold one draw in [0, 1) per attempt; attempt ``t`` proposes the
    area ``H*W * U(scale)`` and the aspect ratio ``exp(U(log ratio))``, rounded to a box
    ``(round(sqrt(A*r)), round(sqrt(A/r)))``; the first attempt that fits is placed at
    ``top = floor(u_top * (H - h + 1))``, ``left = floor(u_left * (W - w + 1))``. When none fits,
    the box is torchvision's central fallback (the whole image, or the largest centred box whose
    aspect ratio is clamped into ``ratio``). ``h`` and ``w`` may be traced (the true size of
    one image of a ragged batch). Returns int32 ``(top, left, height, width)``.
    """
    h, w = jnp.asarray(h, jnp.int32), jnp.asarray(w, jnp.int32)  # traced for ragged batches
    hf, wf = h.astype(jnp.float32), w.astype(jnp.float32)
    area = (h * w).astype(jnp.float32)
    target = area * (scale[0] + (scale[1] - scale[0]) * u_area)
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = jnp.exp(log_lo + (log_hi - log_lo) * u_ratio)
    cw = jnp.round(jnp.sqrt(target * aspect))
    ch = jnp.round(jnp.sqrt(target / aspect))
    fits = (cw > 0) & (cw <= wf) & (ch > 0) & (ch <= hf)
    first = jnp.argmax(fits)
    # Fallback: the whole image, or the largest centred box with its ratio clamped into range.
    in_ratio = wf / hf
    narrow, wide = in_ratio < min(ratio), in_ratio > max(ratio)
    fw = jnp.where(wide, jnp.round(hf * max(ratio)), wf)
    fh = jnp.where(narrow, jnp.round(wf / min(ratio)), hf)
    found = fits.any()
    bh = jnp.where(found, ch[first], fh)
    bw = jnp.where(found, cw[first], fw)
    top = jnp.where(found, jnp.floor(u_top * (hf - bh + 1)), jnp.floor((hf - fh) / 2))
    left = jnp.where(found, jnp.floor(u_left * (wf - bw + 1)), jnp.floor((wf - fw) / 2))
    return jnp.stack([top, left, bh, bw]).astype(jnp.int32)


def _rrc_sample(key, meta, params, *, scale, ratio, **_):
    """One sample's ``box``: ``u = jax.random.uniform(key, (22,))`` holds the attempts' area
    draws ``u[:10]``, their aspect-ratio draws ``u[10:20]``, then the top and left draws
    ``u[20]``, ``u[21]`` (see :func:`_resized_crop_box`)."""
    u = jax.random.uniform(key, (2 * ATTEMPTS + 2,))
    box = _resized_crop_box(u[:ATTEMPTS], u[ATTEMPTS:2 * ATTEMPTS], u[-2], u[-1], meta.height,
                            meta.width, scale, ratio)
    return {"box": box}


def _rrc_window(params, h, w, *, size, **_):
    """The window of one image of a ragged batch. Images of different sizes (a list, a padded
    batch with sizes) are read by :mod:`augjax.kernels.window`'s taps, nearest, bilinear and
    bicubic alike: the taps and weights of a batch of one size."""
    return Window(box=params["box"], size=jnp.asarray(size, jnp.int32), out=tuple(size))


def _rrc_matrix(params, meta, *, size, **_):
    top, left, h, w = (params["box"][i] for i in range(4))
    return crop_resize_matrix(top, left, h, w, size[0], size[1])


@op(
    "random_resized_crop",
    params={
        "size": _size_param("output (height, width), or one int for a square"),
        "scale": Param((0.08, 1.0), kind="pair", low=0.0,
                       doc="range of the box area, as a fraction of the image area"),
        "ratio": Param((3.0 / 4.0, 4.0 / 3.0), kind="pair", low=0.0, low_exclusive=True,
                       doc="range of the box aspect ratio (width / height), drawn log-uniformly"),
        "interpolation": Param("bilinear", choices=RESIZE_INTERPOLATIONS,
                               doc="'bilinear', 'bicubic' or 'nearest' resize of the box"),
        "antialias": Param(True, doc="widen the bilinear or bicubic filter when shrinking "
                                     "(torchvision default)"),
    },
    sample=_rrc_sample,
    matrix=_rrc_matrix,
    ragged=_rrc_window,
    output_size=_output_size,
    reference="torchvision.transforms.v2.RandomResizedCrop",
)
def random_resized_crop(image, params, *, size, scale, ratio, interpolation, antialias):
    """Crops a random box of random area and aspect ratio and resizes it to ``size``.

    torchvision RandomResizedCrop: up to 10 attempts of ``area ~ U(scale) * H * W`` and
    ``log(aspect) ~ U(log ratio)``, the first box that fits is placed uniformly, else a central
    fallback box (the whole image, or the largest centred box whose aspect ratio is clamped
    into ``ratio``). All 10 attempts are evaluated at once and the first fitting one is
    selected, so each sample has its own box without a Python loop. The box is resized as
    ``F.resized_crop`` does: bilinear with ``antialias`` (a triangle filter widened by the
    shrink factor, ATen's ``_upsample_bilinear2d_aa``), bicubic (``InterpolationMode.BICUBIC``,
    DINO's crop: with ``antialias`` ATen's ``_upsample_bicubic2d_aa``, the cubic
    convolution of a = -0.5 widened by the shrink factor, as PIL; without, ATen's
    ``upsample_bicubic2d``, 4 taps of a = -0.75 with the box's edge pixels repeated) or ATen's
    legacy nearest (:func:`augjax.kernels.resize.resize_weights`). Bicubic overshoots: uint8
    results are clamped to 0..255 (after each pass, as ATen's uint8 kernel), float32 ones are
    not (nor are torchvision's): they may leave [0, 1] near edges.

    Params: ``box`` ((4,) int32 top, left, height, width in input pixels); ``apply`` with a
    given box is ``F.resized_crop(img, top, left, height, width, size)``.

    Tolerance against torchvision on the same box: nearest is exact; bilinear and bicubic are
    within 1e-5 on float32; on uint8 bilinear is within 1 level (ATen's uint8 kernel uses
    16-bit fixed-point weights; augjax uses float32 weights and rounds between the width and
    the height pass as ATen does), bicubic within 2 (photos: ~0.25% of the values 1 off, a few
    per million 2, where the width pass is one level off at two taps of an output and the
    cubic's weights, whose absolute values sum to more than 1, carry that past the rounding;
    noise: up to 0.9% and 5e-5). Box sizes are computed in float32 (torchvision: float64), so
    ``round(sqrt(...))`` can differ by one pixel where it lies within float32 rounding of .5.
    Images of different sizes (a list) take all three: each image's crop has the taps and
    weights of a batch of that image alone, its draws and window too; the values may differ by
    one uint8 level (a few per 10,000 values, float32 by ~1e-7), XLA rounding the other
    program's sums in another order (docs/guide/reproducibility.md).
    """
    box = params["box"]
    return resize_crop(image, tuple(box[i] for i in range(4)), size, interpolation, antialias)


# ---------------------------------------------------------------------------------------------
# random_crop


def _padding(value):
    if any(v < 0 or not float(v).is_integer() for v in value):
        raise ValueError("padding must be non-negative integers")
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * 4
    if len(value) == 2:
        return (value[0], value[1], value[0], value[1])
    if len(value) == 4:
        return value
    raise ValueError("expected 1, 2 or 4 integers (left, top, right, bottom)")


def pad(image: jax.Array, left: int, top: int, right: int, bottom: int, mode: str, fill,
        op_name: str) -> jax.Array:
    """torchvision ``F.pad`` on one HWC image (static padding); ``fill`` is a fraction of the
    range (None = 0), rounded to the nearest level for uint8 images."""
    if not any((left, top, right, bottom)):
        return image
    widths = ((top, bottom), (left, right), (0, 0))
    if mode != "constant":
        numpy_mode = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}[mode]
        return jnp.pad(image, widths, mode=numpy_mode)
    h, w, c = image.shape
    value = check_fill(0.0 if fill is None else fill, image, op_name)
    if is_int(image.dtype):
        value = jnp.clip(jnp.round(value), 0.0, 255.0)
    canvas = jnp.broadcast_to(jnp.asarray(value).astype(image.dtype),
                              (h + top + bottom, w + left + right, c))
    return jax.lax.dynamic_update_slice(canvas, image, (top, left, 0))


def _crop_padding(h: int, w: int, size, padding, pad_if_needed: bool):
    """``(left, top, right, bottom)`` padding of an ``h`` x ``w`` image before the window.

    Raises:
        InputError: the (padded) image is smaller than ``size``.
    """
    left, top, right, bottom = padding or (0, 0, 0, 0)
    ch, cw = size
    if pad_if_needed:
        if h + top + bottom < ch:
            diff = ch - (h + top + bottom)
            top, bottom = top + diff, bottom + diff
        if w + left + right < cw:
            diff = cw - (w + left + right)
            left, right = left + diff, right + diff
    ph, pw = h + top + bottom, w + left + right
    if ph < ch or pw < cw:
        raise InputError(
            f"random_crop: the crop size {(ch, cw)} is larger than the "
            f"{'padded ' if padding else ''}image {(ph, pw)}; pass pad_if_needed=True, more "
            f"padding, or a smaller size",
            op="random_crop",
            argument="images",
        )
    return left, top, right, bottom


def _traced_padding(h, w, size, padding, pad_if_needed: bool):
    """:func:`_crop_padding` for a traced image size (a ragged batch): nothing is raised; an
    image smaller than the (padded) crop is read with ``fill`` beyond its padding."""
    left, top, right, bottom = padding or (0, 0, 0, 0)
    if pad_if_needed:
        dh = jnp.maximum(size[0] - (h + top + bottom), 0)
        dw = jnp.maximum(size[1] - (w + left + right), 0)
        top, bottom, left, right = top + dh, bottom + dh, left + dw, right + dw
    return left, top, right, bottom


def _random_crop_sample(key, meta, params, *, size, padding, pad_if_needed, **_):
    """One sample's ``offset``: the window's top-left corner, uniform over the positions of
    the padded image (``uniform_int(jax.random.uniform(key, (2,)), 0, positions)``), given in
    input pixels (the padded image's corner minus the padding)."""
    h, w = meta.height, meta.width
    if isinstance(h, int) and isinstance(w, int):
        left, top, right, bottom = _crop_padding(h, w, size, padding, pad_if_needed)
    else:
        left, top, right, bottom = _traced_padding(h, w, size, padding, pad_if_needed)
    positions = jnp.maximum(jnp.stack([jnp.asarray(h + top + bottom - size[0] + 1),
                                       jnp.asarray(w + left + right - size[1] + 1)]), 1)
    corner = uniform_int(jax.random.uniform(key, (2,)), 0, positions)
    return {"offset": corner - jnp.stack([jnp.asarray(top), jnp.asarray(left)]).astype(jnp.int32)}


def _random_crop_window(params, h, w, *, size, fill, pad_mode, **_):
    if pad_mode != "constant":
        raise InputError(
            f"random_crop: images of different sizes are padded with a constant; argument "
            f"'pad_mode' expects 'constant' for them, got {pad_mode!r}",
            op="random_crop",
            argument="pad_mode",
        )
    return Window(anchor=params["offset"], out=tuple(size), fill=tuple(fill))


def _random_crop_matrix(params, meta, **_):
    return translation(-params["offset"][1], -params["offset"][0])


#: The padding's fill and mode, as random_crop and pad (augjax.catalog.pad) take them.
PAD_FILL = Param(0.0, kind="floats", low=0.0, high=1.0,
                 doc="constant padding value, a fraction of the range in [0, 1] (x255 for "
                     "uint8; torchvision's uint8 128 is 128/255), one or one per channel")
PAD_MODE = Param("constant", choices=("constant", "edge", "reflect", "symmetric"),
                 aliases={"padding_mode": "torchvision"},
                 doc="padding mode (torchvision padding_mode)")


@op(
    "random_crop",
    params={
        "size": _size_param("crop (height, width), or one int for a square"),
        "padding": Param(None, kind="floats", low=0.0, optional=True, validate=_padding,
                         doc="pad first: p, (left/right, top/bottom) or (left, top, right, "
                             "bottom) pixels"),
        "pad_if_needed": Param(False, doc="pad both sides of an axis shorter than the crop"),
        "fill": PAD_FILL,
        "pad_mode": PAD_MODE,
    },
    sample=_random_crop_sample,
    matrix=_random_crop_matrix,
    ragged=_random_crop_window,
    output_size=_output_size,
    reference="torchvision.transforms.v2.RandomCrop",
)
def random_crop(image, params, *, size, padding, pad_if_needed, fill, pad_mode):
    """Crops a random ``size`` window after optional padding (CIFAR ``RandomCrop(32, padding=4)``).

    torchvision RandomCrop: ``padding`` is added first (``pad_mode`` constant with ``fill``,
    edge, reflect or symmetric); with ``pad_if_needed`` an axis shorter than the crop gets the
    shortfall on both sides; the window's top-left corner is uniform over all positions.
    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel), times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``. Deviations:
    reflect/symmetric padding wider than the image follows NumPy (it keeps reflecting), where
    torch raises; a uint8 fill between two levels (``fill * 255`` not whole) is rounded to the
    nearest level, where torchvision's cast of a non-integer uint8 fill truncates.

    Params: ``offset`` ((2,) int32: top, left of the window in input pixels; negative where the
    window starts in the padding). ``apply`` with a given offset crops that window of the padded
    image (an offset outside the padded image is clamped into it).

    Raises:
        InputError: the (padded) image is smaller than ``size``.
    """
    h, w, c = image.shape
    left, top, right, bottom = _crop_padding(h, w, size, padding, pad_if_needed)
    if pad_mode != "constant" and len(fill) > 1:
        raise InputError(
            f"random_crop: a per-channel fill needs pad_mode='constant', got {pad_mode!r}",
            op="random_crop",
            argument="fill",
        )
    x = pad(image, left, top, right, bottom, pad_mode, fill, "random_crop")
    offset = params["offset"]
    return jax.lax.dynamic_slice(x, (offset[0] + top, offset[1] + left, 0), (size[0], size[1], c))


# ---------------------------------------------------------------------------------------------
# center_crop


def _center_offsets(h: int, w: int, size) -> tuple[int, int, int, int]:
    """``(pad_top, pad_left, top, left)``: torchvision CenterCrop's zero padding of axes shorter
    than the crop, and the window's corner in the padded image."""
    ch, cw = size
    pad_t, pad_l = max(ch - h, 0) // 2, max(cw - w, 0) // 2
    ph, pw = max(h, ch), max(w, cw)
    return pad_t, pad_l, int(round((ph - ch) / 2.0)), int(round((pw - cw) / 2.0))


def _center_matrix(params, meta, *, size):
    pad_t, pad_l, top, left = _center_offsets(meta.height, meta.width, size)
    return translation(pad_l - left, pad_t - top)


def _center_window(params, h, w, *, size):
    ch, cw = size
    pad_t, pad_l = jnp.maximum(ch - h, 0) // 2, jnp.maximum(cw - w, 0) // 2
    top = jnp.round((jnp.maximum(h, ch) - ch) / 2.0)  # half to even, as Python's round
    left = jnp.round((jnp.maximum(w, cw) - cw) / 2.0)
    return Window(anchor=jnp.stack([top - pad_t, left - pad_l]).astype(jnp.int32),
                  out=tuple(size))


@op(
    "center_crop",
    params={"size": _size_param("crop (height, width), or one int for a square")},
    matrix=_center_matrix,
    ragged=_center_window,
    output_size=_output_size,
    reference="torchvision.transforms.v2.CenterCrop",
)
def center_crop(image, params, *, size):
    """Crops the central ``size`` window, zero-padding axes shorter than the crop.

    torchvision CenterCrop: the offset is ``round((H - h) / 2)`` (Python rounding, half to
    even); an axis shorter than the crop is first zero-padded by ``(h - H) // 2`` before and the
    rest after. Deterministic: it draws nothing (params are empty).
    """
    h, w, _ = image.shape
    ch, cw = size
    pad_t, pad_l, top, left = _center_offsets(h, w, size)
    if ch > h or cw > w:
        pad_b, pad_r = max(ch - h, 0) - pad_t, max(cw - w, 0) - pad_l
        image = pad(image, pad_l, pad_t, pad_r, pad_b, "constant", 0.0, "center_crop")
    return image[top:top + ch, left:left + cw]
