"""Reading a window of an image whose true size is smaller than its array (a padded batch of
images of different sizes, or a canvas holding a cut of each image): crop a box, resample it,
crop an output window with padding, as one separable pass per axis whose weights come from
traced sizes. :func:`read_window` multiplies by the dense weight matrices;
:func:`read_window_taps` gathers their few nonzero taps per output (a static count), so its cost
follows the output and the box's shrink factor, not the array's size. Copies and nearest
sampling give the same values; bilinear and bicubic the same weights (the dense rows' nonzero
entries, and :func:`augjax.kernels.resize.resize_taps`' own), each row's normaliser summed over
its taps, so a uint8 value may round to the neighbouring level against the dense read (and,
rarely, against :func:`augjax.kernels.resize.resize_crop`, where XLA rounds a weight of the
other program differently)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from augjax.kernels.boundary import materialize
from augjax.kernels.division import exact_div
from augjax.kernels.pixels import is_int
from augjax.kernels.platform import platform_dependent
from augjax.kernels.tap_passes import taps_product
from augjax.kernels.resize import FILTER_SUPPORT, bicubic_taps, resize_filter, window_weights
from augjax.kernels.warp import check_fill

__all__ = ["CHUNK", "fill_outside", "flip_taps", "read_by_taps", "read_taps", "read_window",
           "read_window_taps", "sum_taps", "tap_sizes", "taps_from_first", "taps_needed",
           "window_taps"]

_F32 = jnp.float32


def read_window(image: jax.Array, height, width, window: Any, out: tuple[int, int],
                interpolation: str = "bilinear", antialias: bool = True,
                op: str = "read_window") -> jax.Array:
    """One sample's output of a crop / resize :class:`augjax._core.meta.Window`.

    ``image`` is ``(H, W, C)``, of which the top-left ``height`` x ``width`` pixels (traced)
    are the image. The window's ``box`` (default: the whole image) is resampled to ``size``
    (default: the box's size, an exact copy) and the ``out`` pixels from ``anchor`` (default
    0) are returned; where they leave the resampled image they hold ``fill``. Bilinear
    resampling is ATen's ``resized_crop`` (width pass, uint8 rounding, height pass; bicubic
    clamps the rounded width pass to 0..255 as well, as ATen's uint8 kernel stores it); a copy
    uses nearest weights of scale 1, which copy pixels exactly.
    """
    h_pad, w_pad, _ = image.shape
    hh, ww = jnp.asarray(height, jnp.int32), jnp.asarray(width, jnp.int32)
    box = (jnp.stack([0, 0, hh, ww]) if window.box is None else window.box)
    size = box[2:] if window.size is None else window.size
    anchor = jnp.zeros(2, jnp.int32) if window.anchor is None else window.anchor
    mode = interpolation if window.size is not None else "nearest"
    wy = window_weights(out[0], anchor[0], size[0], h_pad, box[0], box[2], mode, antialias)
    wx = window_weights(out[1], anchor[1], size[1], w_pad, box[1], box[3], mode, antialias)
    hi = jax.lax.Precision.HIGHEST
    x = jnp.einsum("ow,hwc->hoc", wx, image.astype(_F32), precision=hi)
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)  # ATen uint8 passes round half up
        if mode == "bicubic":
            x = jnp.clip(x, 0.0, 255.0)  # and store the width pass in uint8
    x = jnp.einsum("ph,hoc->poc", wy, x, precision=hi)
    rows = anchor[0] + jnp.arange(out[0])
    cols = anchor[1] + jnp.arange(out[1])
    inside = ((rows >= 0) & (rows < size[0]))[:, None] & ((cols >= 0) & (cols < size[1]))[None]
    fill = check_fill(window.fill, image, op)
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)
        fill = jnp.clip(jnp.round(fill), 0.0, 255.0)
    x = jnp.where(inside[..., None], x, fill)
    if is_int(image.dtype):
        x = jnp.clip(x, 0.0, 255.0)
    return x.astype(image.dtype)


def taps_needed(widest: float, interpolation: str, antialias: bool) -> int:
    """How many taps per output :func:`window_taps` needs when no box is shrunk by more than
    ``widest`` (input pixels per output pixel): 1 for nearest, 4 for bicubic without
    ``antialias``, else ``ceil(2 s) + 1``, where ``s`` is the filter's half-width
    (:data:`augjax.kernels.resize.FILTER_SUPPORT`: 1 for bilinear, 2 for bicubic), times the
    shrink factor with ``antialias`` when that exceeds 1 (as
    :func:`augjax.kernels.resize.resize_taps`' ``K``)."""
    if interpolation == "nearest":
        return 1
    if interpolation == "bicubic" and not antialias:
        return 4
    half = FILTER_SUPPORT[interpolation]
    return math.ceil(2.0 * half * (max(widest, 1.0) if antialias else 1.0)) + 1


def window_taps(rows: int, offset, out_size, in_size: int, start, length, interpolation: str,
                antialias: bool, taps: int) -> tuple[jax.Array, jax.Array]:
    """The nonzero entries of :func:`augjax.kernels.resize.window_weights`' rows (same arguments,
    ``offset``, ``out_size``, ``start`` and ``length`` may be traced): ``(index, weight)``, each
    ``(rows, taps)``, with the same float32 weights; taps beyond a row's support have weight 0
    and an index clamped into ``[0, in_size)``; rows outside ``[0, out_size)`` weigh 0. ``taps``
    must be at least :func:`taps_needed` for the largest ``length / out_size``. Bicubic takes
    :func:`augjax.kernels.resize.resize_taps`' taps and weights (its helpers, the same float32
    values): with ``antialias`` the cubic of ``a = -0.5`` from the same first tap, without the
    4 taps of :func:`augjax.kernels.resize.bicubic_taps` (``a = -0.75``, taps beyond the box
    clamped onto its edge pixels: one pixel may be read by several taps), then ``taps - 4``
    taps of weight 0."""
    n = jnp.asarray(length, jnp.int32)
    out_i = jnp.asarray(out_size, jnp.int32)
    length_f = n.astype(_F32)
    scale = exact_div(length_f, out_i.astype(_F32))
    o = jnp.arange(rows, dtype=jnp.int32) + jnp.asarray(offset, jnp.int32)
    i = o.astype(_F32)[:, None]
    row_in = ((o >= 0) & (o < out_i))[:, None]
    start = jnp.asarray(start, jnp.int32)
    if interpolation == "nearest":
        src = jnp.minimum(jnp.floor(i * scale), length_f - 1.0)
        index = jnp.clip(src.astype(jnp.int32) + start, 0, in_size - 1)
        return index, row_in.astype(_F32)
    if interpolation == "bicubic" and not antialias:
        index, weight = bicubic_taps(o, out_i, n, scale)
        index = jnp.clip(index + start, 0, in_size - 1)
        weight = jnp.where(row_in, weight, 0.0)
        if taps > 4:  # the rest weigh 0 and read the row's first pixel
            index = jnp.concatenate([index, jnp.repeat(index[:, :1], taps - 4, axis=1)], 1)
            weight = jnp.pad(weight, ((0, 0), (0, taps - 4)))
        return index, weight
    half = FILTER_SUPPORT[interpolation]
    invscale = jnp.where(scale >= 1.0, 1.0 / scale, 1.0) if antialias else 1.0
    center = scale * (i + 0.5)
    # The first tap, floor(center - 0.5 - half), in integers (as resize_taps).
    widen = jnp.maximum(n, out_i) if antialias else out_i  # s * out_size / half
    if half != 1:
        widen = half * widen
    first = jnp.floor_divide(n * (2 * o + 1) - out_i - 2 * widen, 2 * out_i)
    j = first[:, None] + jnp.arange(taps, dtype=jnp.int32)[None, :]
    jf = j.astype(_F32)
    wt = resize_filter((jf - center + 0.5) * invscale, interpolation)
    wt = jnp.where((jf >= 0) & (jf < length_f) & row_in, wt, 0.0)
    wt = wt / jnp.maximum(wt.sum(axis=1, keepdims=True), 1e-30)
    return jnp.clip(j + start, 0, in_size - 1), wt


def tap_sizes(widest: int) -> list[int]:
    """The tap counts an image-by-image read branches on for taps of ``widest`` columns moved
    by :func:`taps_from_first`: 2 (an enlargement's), 3, then powers of two and one and a half
    times them (4, 6, 8, 12, 16, 24, ...) below ``widest``, and ``widest``. A read of ``k`` taps
    takes the first size at least ``k``: at most ~1.5x the taps it needs (those past ``k`` weigh
    0 and add nothing), and ~2 log2(widest) branches to compile, where every other count (the
    sizes before 2026-12-06) compiled ``widest / 2`` of them: a scale jitter to 128^2 from
    0.1x reads up to ~100 taps, 50 branches then, 13 now."""
    steps = {2, 3}
    k = 4
    while k < widest:
        steps |= {k, k + k // 2}
        k *= 2
    return sorted({s for s in steps if s < widest} | {widest})


def taps_from_first(index: jax.Array, weight: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Taps ``(..., rows, taps)`` moved left so that each row starts at its first tap that
    weighs something (its nonzero weights are contiguous: one triangle); the columns freed at
    the end weigh 0 and read the row's first index. The nonzero terms keep their order, so
    :func:`_taps_pass`'s sum over the moved taps has the bits of its sum over the given ones
    (the zeros it skips add nothing), while fewer columns hold them: a bilinear enlargement's
    2 nonzero taps sit in columns 0 and 1 instead of 1 and 2 (the first tap of a row always
    sits one filter half-width before its centre: it weighs 0, or next to nothing)."""
    taps = weight.shape[-1]
    first = jnp.argmax(weight != 0.0, axis=-1)[..., None]
    cols = first + jnp.arange(taps, dtype=first.dtype)
    kept = cols < taps
    cols = jnp.minimum(cols, taps - 1)
    moved_w = jnp.where(kept, jnp.take_along_axis(weight, cols, axis=-1), 0.0)
    moved_i = jnp.take_along_axis(index, cols, axis=-1)
    moved_i = jnp.where(kept & (moved_w != 0.0), moved_i, moved_i[..., :1])
    return moved_i, moved_w


def _taps_pass(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int) -> jax.Array:
    """``out[o] = sum_k weight[o, k] * float32(x[index[o, k]])`` along ``axis``, the taps
    summed in order (as :func:`augjax.kernels.resize.resize_crop`'s passes) onto a zero (a
    value, not a constant XLA would fold): each term is then added to a sum the same way
    wherever the row's first nonzero tap sits (without it, LLVM may fuse the first product
    into the second's addition instead, and a row's bits would depend on its leading zeros),
    so :func:`taps_from_first` keeps the bits. On a TPU one matrix product
    (:func:`augjax.kernels.tap_passes.taps_product`)."""
    return platform_dependent(x, index, weight, tpu=lambda *a: taps_product(*a, axis),
                              default=lambda *a: _taps_in_order(*a, axis))


def _taps_in_order(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int) -> jax.Array:
    shape = [1] * x.ndim
    shape[axis] = index.shape[0]
    out = (weight[:, 0] * 0.0).reshape(shape)
    for k in range(index.shape[1]):
        term = jnp.take(x, index[:, k], axis=axis).astype(_F32) * weight[:, k].reshape(shape)
        out = out + term
    return out


def read_window_taps(image: jax.Array, box, size, anchor, out: tuple[int, int], fill,
                     interpolation: str = "bilinear", antialias: bool = True,
                     taps: tuple[int, int] = (1, 1), flip=None) -> jax.Array:
    """:func:`read_window` through :func:`window_taps`: one sample's ``out`` pixels of the
    ``box`` ``(top, left, height, width)`` of ``image`` ``(H, W, C)`` resampled to ``size``
    (None: the box's size, an exact copy), read from ``anchor``; pixels beyond the resampled
    box hold ``fill`` (in the image's scale, ``(C,)`` or a scalar; rounded for integer images).
    ``taps``: per axis (height, width), from :func:`taps_needed`. Nearest sampling and copies
    gather the pixels themselves (any dtype, exact); bilinear and bicubic round between the
    width and the height pass for integer images, as ATen's uint8 kernel does (bicubic, whose
    negative weights overshoot, clamps there to 0..255 too). ``flip``: bools ``(2,)``
    (traced), the output then mirrored top-bottom where ``flip[0]``, left-right where
    ``flip[1]`` (:func:`flip_taps`)."""
    copy = size is None
    size = box[2:] if copy else size
    mode = "nearest" if copy else interpolation
    t = read_taps(image.shape[:2], box, size, anchor, out, mode, antialias, taps)
    if mode != "nearest":  # as the CPU's image-by-image read moves them: the same sums
        t = (*taps_from_first(t[0], t[1]), *taps_from_first(t[2], t[3]))
    if flip is not None:
        t = flip_taps(t, flip)
    return read_by_taps(image, t, size, anchor, out, fill, "nearest" if copy else interpolation,
                        flip=flip)


def flip_taps(taps, flip) -> tuple[jax.Array, ...]:
    """Taps ``(iy, wy, ix, wx)`` (each ``(rows, K)``, or with leading axes matching
    ``flip``'s) whose read is mirrored: the height taps' rows reversed where ``flip[..., 0]``,
    the width taps' where ``flip[..., 1]``. Each output pixel keeps its taps and their order
    (the same sum, the same bits), written at the mirrored place: the read then equals the
    read followed by a flip of its output (pass the same ``flip`` to :func:`read_by_taps`, whose
    fill mask it mirrors too)."""
    iy, wy, ix, wx = taps
    flip = jnp.asarray(flip)

    def rev(on, a):
        return jnp.where(on[..., None, None], jnp.flip(a, axis=-2), a)

    v, h = flip[..., 0], flip[..., 1]
    return rev(v, iy), rev(v, wy), rev(h, ix), rev(h, wx)


def read_taps(hw: tuple[int, int], box, size, anchor, out: tuple[int, int], mode: str,
              antialias: bool, taps: tuple[int, int]) -> tuple[jax.Array, ...]:
    """:func:`read_window_taps`' taps ``(iy, wy, ix, wx)`` (:func:`window_taps` per axis) of a
    box of an ``hw`` image resampled to ``size`` (its own size for a copy, ``mode``
    "nearest")."""
    iy, wy = window_taps(out[0], anchor[0], size[0], hw[0], box[0], box[2], mode, antialias,
                         taps[0])
    ix, wx = window_taps(out[1], anchor[1], size[1], hw[1], box[1], box[3], mode, antialias,
                         taps[1])
    return iy, wy, ix, wx


def read_by_taps(image: jax.Array, taps, size, anchor, out: tuple[int, int], fill, mode: str,
                 rows: int | None = None, flip=None) -> jax.Array:
    """:func:`read_window_taps` by its taps (:func:`read_taps`). Bilinear and bicubic taps may
    be cut to their first columns where the others weigh 0 (each sum stops before adding
    zeros: the same values); ``rows``: the width pass covers only the image's first ``rows``
    rows (static), which must hold every row the height taps read; ``flip``: the taps are
    mirrored (:func:`flip_taps`), and so is the mask of the pixels that hold ``fill``. Bicubic
    integer images are clamped to 0..255 after the width pass as well as rounded
    (:func:`augjax.kernels.resize.resample_crop`'s ``clamp``)."""
    iy, wy, ix, wx = taps
    if mode == "nearest":
        x = jnp.take(jnp.take(image, ix[:, 0], axis=1), iy[:, 0], axis=0)
    else:
        # The taps gather the image's own dtype, each converted to float32 as it is weighed
        # (exact; gathering uint8 instead of a float32 copy: 4.2 -> 3.3 CPU-ms per 320^2
        # output from 512^2 canvases, 2 shared cores).
        x = _taps_pass(image if rows is None else image[:rows], ix, wx, axis=1)
        if is_int(image.dtype):
            x = jnp.floor(x + 0.5)  # ATen uint8 passes round half up
            if mode == "bicubic":  # and store the width pass in uint8 (resample_crop's clamp)
                x = jnp.clip(x, 0.0, 255.0)
        x = _taps_pass(materialize(x), iy, wy, axis=0)
        if is_int(image.dtype):
            x = jnp.clip(jnp.floor(x + 0.5), 0.0, 255.0)
    return fill_outside(x, image.dtype, size, anchor, out, fill, flip)


#: The taps a loop step of :func:`sum_taps` sums (``chunks``).
CHUNK = 8


def sum_taps(x: jax.Array, index: jax.Array, weight: jax.Array, chunks=None) -> jax.Array:
    """One pass of :func:`read_by_taps` along ``x``'s first axis: ``out[o] = sum_k weight[o,
    k] * float32(x[index[o, k]])`` over the taps ``(rows, K)`` in order, each term reading a
    whole slice ``x[i]`` (contiguous: an image's rows, or its transpose's columns, where a
    tap across the rows of ``(H, W, C)`` gathers ``C`` values a row, ~6x its time per tap on
    a 2-core CPU). The same products summed in the same order as :func:`read_by_taps`' passes:
    the same bits. ``chunks`` (traced): only the first ``chunks * CHUNK`` taps (``K`` a
    multiple of :data:`CHUNK`), ``CHUNK`` at a time in a loop: one compiled step whatever the
    count, each term added to the sum read back from the step before (its first, as there, to
    a zero computed as a value); each sum stops before adding zeros."""
    if chunks is None:
        return _taps_pass(x, index, weight, axis=0)
    shape = (index.shape[0],) + (1,) * (x.ndim - 1)
    start = jnp.broadcast_to((weight[:, 0] * 0.0).reshape(shape), shape[:1] + x.shape[1:])

    def step(j, out):
        i = jax.lax.dynamic_slice_in_dim(index, j * CHUNK, CHUNK, axis=1)
        w = jax.lax.dynamic_slice_in_dim(weight, j * CHUNK, CHUNK, axis=1)
        for k in range(CHUNK):
            out = out + jnp.take(x, i[:, k], axis=0).astype(_F32) * w[:, k].reshape(shape)
        return out

    return jax.lax.fori_loop(0, chunks, step, start)


def fill_outside(x: jax.Array, dtype, size, anchor, out: tuple[int, int], fill,
                 flip=None) -> jax.Array:
    """``x`` (float32 ``out`` pixels read from ``anchor``) with ``fill`` beyond the resampled
    image's ``size``, as ``dtype``; ``flip``: the output was mirrored (:func:`flip_taps`)."""
    rows_o = anchor[0] + jnp.arange(out[0])
    cols = anchor[1] + jnp.arange(out[1])
    if flip is not None:
        rows_o = jnp.where(flip[0], rows_o[::-1], rows_o)
        cols = jnp.where(flip[1], cols[::-1], cols)
    inside = ((rows_o >= 0) & (rows_o < size[0]))[:, None] & ((cols >= 0) & (cols < size[1]))[None]
    fill = jnp.asarray(fill)
    if is_int(dtype) and jnp.issubdtype(fill.dtype, jnp.floating):
        fill = jnp.clip(jnp.round(fill), 0.0, 255.0)
    return jnp.where(inside[..., None], x, fill.astype(x.dtype)).astype(dtype)
