"""Crop-resizes of one HWC image, torchvision-exact: ATen's ``interpolate`` (nearest, bilinear
and bicubic, antialiased or not, ``align_corners=False``) of a window of the image, as weight
matrices (:func:`resize_weights`, :func:`window_weights`: the TPU's dense form) or as each
output pixel's few nonzero taps (:func:`resize_taps`, :func:`crop_taps`: the CPU's and GPU's),
and the SSD zoom-out's canvas read without building it (:func:`resize_canvas`).

The warps (affine, perspective, elastic) and the fill rule are :mod:`augjax.kernels.warp`'s.
Everything here is trace-safe in the window (crop boxes may be traced scalars) and works on
one image; augjax vmaps it over the batch.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from augjax.errors import InputError
from augjax.kernels.boundary import materialize
from augjax.kernels.division import exact_div
from augjax.kernels.pixels import is_int
from augjax.kernels.tap_passes import canvas_pass, taps_pass

__all__ = ["RESIZE_INTERPOLATIONS", "FILTER_SUPPORT", "resize_weights", "window_weights",
           "resize_filter", "bicubic_taps", "resize_taps", "resize_crop", "crop_taps",
           "resample_crop", "resize_canvas", "canvas_taps", "resample_canvas"]

_F32 = jnp.float32

#: The interpolation modes of the resizes (:func:`resize_taps`, :func:`window_weights`: the
#: ops ``resize`` and ``random_resized_crop``): the warps' two and torchvision's bicubic.
RESIZE_INTERPOLATIONS = ("nearest", "bilinear", "bicubic")

#: The half-width in input pixels of each filter of :func:`resize_taps` (and of
#: :func:`augjax.kernels.window.window_taps`) before ``antialias`` widens it by the shrink
#: factor (ATen's ``interp_size / 2``).
FILTER_SUPPORT = {"bilinear": 1, "bicubic": 2}

#: The cubic convolution's ``a``: -0.5 with ``antialias`` (Keys; ATen's
#: ``_upsample_bicubic2d_aa``, as PIL), -0.75 without (ATen's ``upsample_bicubic2d``, as OpenCV).
_CUBIC_AA, _CUBIC = -0.5, -0.75

def resize_weights(out_size: int, in_size: int, start, length, interpolation: str,
                   antialias: bool) -> jax.Array:
    """The ``(out_size, in_size)`` matrix that resizes the window ``[start, start + length)`` of
    an axis of ``in_size`` pixels to ``out_size`` pixels, as ATen's ``interpolate`` does
    (align_corners=False); ``start`` and ``length`` may be traced.

    ``"bilinear"``: triangle filter at the output centres ``scale * (i + 0.5)``, widened by
    ``scale`` when downscaling with ``antialias`` (ATen ``_upsample_bilinear2d_aa``, PIL), taps
    outside the window dropped and the rest renormalised (the same as clamping at the edges).
    ``"bicubic"`` with ``antialias``: the same with the cubic convolution of ``a = -0.5`` (Keys)
    of half-width 2, widened by ``scale`` when downscaling (ATen ``_upsample_bicubic2d_aa``,
    PIL's BICUBIC); without: ATen's ``upsample_bicubic2d`` (OpenCV's), 4 taps ``floor(src) - 1
    .. floor(src) + 2`` at ``src = scale * (i + 0.5) - 0.5`` weighed by the cubic convolution
    of ``a = -0.75``, taps beyond the window clamped to its edge pixels (their weights added
    there), not renormalised. Bicubic weights are negative in the filter's outer lobes: values
    overshoot the input's range (uint8 callers clamp, as ATen does).
    ``"nearest"``: ATen's legacy nearest, source ``min(floor(i * scale), length - 1)``.
    """
    return window_weights(out_size, 0, out_size, in_size, start, length, interpolation,
                          antialias)


def window_weights(rows: int, offset, out_size, in_size: int, start, length,
                   interpolation: str, antialias: bool) -> jax.Array:
    """Rows ``offset .. offset + rows - 1`` of :func:`resize_weights` for an output of
    ``out_size`` pixels, where ``offset`` and ``out_size`` may be traced (images of different
    sizes): a ``(rows, in_size)`` matrix whose rows outside ``[0, out_size)`` are zero (the
    padding of a crop window that leaves the resized image).

    Raises:
        InputError: ``interpolation`` is not one of :data:`RESIZE_INTERPOLATIONS`.
    """
    _check_interpolation(interpolation, "window_weights")
    length = jnp.asarray(length, _F32)
    if isinstance(out_size, (int, float)):
        scale = exact_div(length, float(out_size))  # ATen: (float)input_size / output_size
    else:
        scale = exact_div(length, out_size)
    i = jnp.arange(rows, dtype=_F32)[:, None] + jnp.asarray(offset, _F32)
    j = jnp.arange(in_size, dtype=_F32)[None, :] - jnp.asarray(start, _F32)
    inside = (j >= 0) & (j < length) & (i >= 0) & (i < jnp.asarray(out_size, _F32))
    if interpolation == "nearest":
        src = jnp.minimum(jnp.floor(i * scale), length - 1.0)
        return ((j == src) & inside).astype(_F32)
    if interpolation == "bicubic" and not antialias:
        n = length.astype(jnp.int32)
        out_i = jnp.asarray(out_size).astype(jnp.int32)
        o = jnp.arange(rows, dtype=jnp.int32) + jnp.asarray(offset).astype(jnp.int32)
        index, weight = bicubic_taps(o, out_i, n, scale)
        row_in = ((o >= 0) & (o < out_i))[:, None]
        cols = jnp.arange(in_size, dtype=jnp.int32)[None, :] - jnp.asarray(start).astype(
            jnp.int32)
        dense = jnp.zeros((rows, in_size), _F32)
        for k in range(index.shape[1]):  # a tap clamped onto an edge adds its weight there
            dense = dense + jnp.where((cols == index[:, k:k + 1]) & row_in,
                                      weight[:, k:k + 1], 0.0)
        return dense
    invscale = jnp.where(scale >= 1.0, 1.0 / scale, 1.0) if antialias else 1.0
    center = scale * (i + 0.5)
    wt = resize_filter((j - center + 0.5) * invscale, interpolation)
    wt = jnp.where(inside, wt, 0.0)
    return wt / jnp.maximum(wt.sum(axis=1, keepdims=True), 1e-30)


def _check_interpolation(interpolation: str, op: str) -> None:
    if interpolation not in RESIZE_INTERPOLATIONS:
        raise InputError(f"{op}: argument 'interpolation' expects one of "
                         f"{RESIZE_INTERPOLATIONS}, got {interpolation!r}", op=op,
                         argument="interpolation")


def resize_filter(x: jax.Array, interpolation: str) -> jax.Array:
    """The resize filter at ``x`` (input pixels from the output's centre, divided by the
    antialiasing widening): the triangle (bilinear) or ATen's ``aa_filter`` cubic of ``a =
    -0.5`` (bicubic)."""
    if interpolation == "bicubic":
        x = jnp.abs(x)
        return jnp.where(x < 1.0, _cubic_near(x, _CUBIC_AA),
                         jnp.where(x < 2.0, _cubic_far(x, _CUBIC_AA), 0.0))
    return jnp.maximum(0.0, 1.0 - jnp.abs(x))


def _cubic_near(x: jax.Array, a: float) -> jax.Array:
    """ATen ``cubic_convolution1``: the cubic convolution kernel for ``0 <= x <= 1``."""
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0


def _cubic_far(x: jax.Array, a: float) -> jax.Array:
    """ATen ``cubic_convolution2``: the cubic convolution kernel for ``1 <= x <= 2``."""
    return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a


def bicubic_taps(o: jax.Array, out_size, n, scale) -> tuple[jax.Array, jax.Array]:
    """ATen ``upsample_bicubic2d`` (align_corners=False) for outputs ``o`` (int32 ``(rows,)``)
    of an axis of ``out_size`` pixels resampled from a window of ``n`` (int32, may be traced;
    ``scale`` its float32 ``n / out_size``): ``(index, weight)``, each ``(rows, 4)``, the
    indices into the window clamped to ``[0, n)`` (edge replicate), the weights
    ``get_cubic_upsample_coefficients`` at ``t = src - floor(src)``, ``src = scale * (o + 0.5)
    - 0.5`` (a = -0.75). ``floor(src)`` is computed in integers, ``floor((n (2 o + 1) -
    out_size) / (2 out_size))``, so that float rounding cannot move the taps (where it rounds
    ``src`` across an integer, ``t`` is clipped to 0 or 1, where the cubic is continuous)."""
    src = scale * (o.astype(_F32) + 0.5) - 0.5
    base = jnp.minimum(jnp.floor_divide(n * (2 * o + 1) - out_size, 2 * out_size), n - 1)
    t = jnp.clip(src - base.astype(_F32), 0.0, 1.0)
    x2 = 1.0 - t
    weight = jnp.stack([_cubic_far(t + 1.0, _CUBIC), _cubic_near(t, _CUBIC),
                        _cubic_near(x2, _CUBIC), _cubic_far(x2 + 1.0, _CUBIC)], axis=-1)
    index = base[:, None] + jnp.arange(-1, 3, dtype=jnp.int32)[None, :]
    return jnp.clip(index, 0, n - 1), weight


def resize_taps(out_size: int, in_size: int, start, length, interpolation: str,
                antialias: bool) -> tuple[jax.Array, jax.Array]:
    """The nonzero entries of :func:`resize_weights`' rows: ``(index, weight)``, each
    ``(out_size, K)``, with ``resize_weights(...)[o, index[o, k]] == weight[o, k]`` (the same
    float32 values; taps beyond a row's support have weight 0 and an index clamped into the
    axis; bicubic without ``antialias`` reads an edge pixel once per tap clamped onto it, whose
    weights sum to the matrix's entry). ``K`` is static: 1 for nearest, 4 for bicubic without
    ``antialias``, else ``ceil(2 s) + 1``, where ``s`` is the filter's half-width (1 for
    bilinear, 2 for bicubic), times the largest shrink factor ``in_size / out_size`` with
    ``antialias`` when that exceeds 1 (bicubic from 512 to 224 pixels: 11 taps).

    Raises:
        InputError: ``interpolation`` is not one of :data:`RESIZE_INTERPOLATIONS`.
    """
    _check_interpolation(interpolation, "resize_taps")
    length = jnp.asarray(length, _F32)
    start_f = jnp.asarray(start, _F32)
    scale = exact_div(length, float(out_size))
    i = jnp.arange(out_size, dtype=_F32)[:, None]
    if interpolation == "nearest":
        src = jnp.minimum(jnp.floor(i * scale), length - 1.0) + start_f
        return jnp.clip(src, 0, in_size - 1).astype(jnp.int32), jnp.ones_like(src)
    n = jnp.asarray(length).astype(jnp.int32)
    if interpolation == "bicubic" and not antialias:
        index, weight = bicubic_taps(jnp.arange(out_size, dtype=jnp.int32), out_size, n, scale)
        return jnp.clip(index + jnp.asarray(start).astype(jnp.int32), 0, in_size - 1), weight
    half = FILTER_SUPPORT[interpolation]
    widest = max(in_size / out_size, 1.0) if antialias else 1.0
    taps = math.ceil(2.0 * half * widest) + 1  # taps in (c - s, c + s), from floor(c - s)
    invscale = jnp.where(scale >= 1.0, 1.0 / scale, 1.0) if antialias else 1.0
    center = scale * (i + 0.5)
    # The first tap, floor(center - 0.5 - s), in integers: float rounding (which XLA may
    # contract differently in each fusion) must not move the taps that the weights describe.
    o2 = 2 * out_size
    widen = jnp.maximum(n, out_size) if antialias else out_size  # s * out_size / half
    if half != 1:
        widen = half * widen
    first = jnp.floor_divide(n * (2 * jnp.arange(out_size, dtype=jnp.int32) + 1) - out_size
                             - 2 * widen, o2)
    j = first[:, None] + jnp.arange(taps, dtype=jnp.int32)[None, :]
    jf = j.astype(_F32)
    wt = resize_filter((jf - center + 0.5) * invscale, interpolation)
    wt = jnp.where((jf >= 0) & (jf < length), wt, 0.0)
    wt = wt / jnp.maximum(wt.sum(axis=1, keepdims=True), 1e-30)
    return jnp.clip(j + jnp.asarray(start).astype(jnp.int32), 0, in_size - 1), wt


def resize_crop(image: jax.Array, box, size: tuple[int, int], interpolation: str,
                antialias: bool) -> jax.Array:
    """torchvision ``resized_crop``: crops ``box = (top, left, height, width)`` (traced ints) of
    ``image`` (H, W, C) and resizes it to ``size`` (static). Width pass first, then height; uint8
    images are rounded between the passes as ATen's native uint8 kernel does (and, bicubic,
    clamped to 0..255 there too: it stores the width pass in uint8). Each pass gathers its few
    taps per output (:func:`resize_taps`) instead of multiplying by the dense
    :func:`resize_weights` matrix."""
    return resample_crop(image, crop_taps(image.shape[:2], box, size, interpolation, antialias),
                         clamp=interpolation == "bicubic")


def crop_taps(hw: tuple[int, int], box, size: tuple[int, int], interpolation: str,
              antialias: bool) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """:func:`resize_crop`'s taps ``(iy, wy, ix, wx)`` for an image of ``hw``."""
    top, left, ch, cw = box
    iy, wy = resize_taps(size[0], hw[0], top, ch, interpolation, antialias)
    ix, wx = resize_taps(size[1], hw[1], left, cw, interpolation, antialias)
    return iy, wy, ix, wx


def resample_crop(image: jax.Array, taps, rows: tuple[Any, int] | None = None,
                  clamp: bool = False) -> jax.Array:
    """:func:`resize_crop` by its taps (:func:`crop_taps`), which may be cut to their first
    columns where the others weigh 0 (as :func:`resample_canvas`). ``rows = (r0, n)``: the
    width pass reads only rows ``r0 .. r0 + n`` (``n`` static), which hold every row the height
    taps read: the same values, for fewer rows computed. ``clamp``: an integer image's width
    pass is clamped to 0..255 as well as rounded (bicubic taps, whose negative weights
    overshoot; bilinear and nearest ones stay in range, and their program is left as it was)."""
    iy, wy, ix, wx = taps
    if rows is not None:
        image = jax.lax.dynamic_slice_in_dim(image, rows[0], rows[1], axis=0)
        iy = iy - rows[0]
    x = taps_pass(image.astype(_F32), ix, wx, axis=1)
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)  # ATen uint8 passes round half up
        if clamp:
            x = jnp.clip(x, 0.0, 255.0)  # and store the width pass in uint8
    # The width pass is kept in memory: fused into the height pass, XLA:CPU gathered it again
    # for each height tap (B=16, 256^2 -> 224^2 uint8: 48 -> 6 ms; the same values).
    x = taps_pass(materialize(x), iy, wy, axis=0)
    if is_int(image.dtype):
        return jnp.clip(jnp.floor(x + 0.5), 0.0, 255.0).astype(image.dtype)
    return x.astype(image.dtype)


def resize_canvas(image: jax.Array, place, canvas, bound: tuple[int, int],
                  size: tuple[int, int], value: jax.Array, interpolation: str,
                  antialias: bool) -> jax.Array:
    """:func:`resize_crop` of a canvas of ``value`` holding ``image`` (H, W, C) at ``place =
    (top, left)``: the window ``(0, 0) + canvas`` (traced height, width, at most ``bound``)
    resized to ``size``, without building the canvas. Each tap reads the image where it falls
    on it and ``value`` (one or C values) elsewhere: the same taps, weights and order of sums
    as ``resize_crop`` on the canvas built at its ``bound`` size."""
    taps = canvas_taps(canvas, bound, size, interpolation, antialias)
    return resample_canvas(image, place, taps, value, clamp=interpolation == "bicubic")


def canvas_taps(canvas, bound: tuple[int, int], size: tuple[int, int], interpolation: str,
                antialias: bool) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """:func:`resize_canvas`' taps ``(iy, wy, ix, wx)`` (:func:`resize_taps` of each axis)."""
    iy, wy = resize_taps(size[0], bound[0], 0, canvas[0], interpolation, antialias)
    ix, wx = resize_taps(size[1], bound[1], 0, canvas[1], interpolation, antialias)
    return iy, wy, ix, wx


def resample_canvas(image: jax.Array, place, taps, value: jax.Array,
                    clamp: bool = False) -> jax.Array:
    """:func:`resize_canvas` by its taps (:func:`canvas_taps`). Taps may be cut to their first
    ``K`` columns where the others weigh 0 in every row: each sum then stops before adding
    zeros, the same float32 values (``v + 0.0 == v``). ``clamp``: as
    :func:`resample_crop`'s."""
    h, w, c = image.shape
    top, left = (jnp.asarray(v, jnp.int32) for v in place)
    iy, wy, ix, wx = taps
    fill = jnp.broadcast_to(value.astype(image.dtype).astype(_F32), (c,)).reshape(1, 1, c)
    x = canvas_pass(image.astype(_F32), ix - left, wx, 1, fill)
    line = None  # a canvas row beyond the image, after the width pass: (1, size[1], C)
    for k in range(wx.shape[1]):
        term = fill * wx[:, k].reshape(1, -1, 1)
        line = term if line is None else line + term
    if is_int(image.dtype):
        x, line = jnp.floor(x + 0.5), jnp.floor(line + 0.5)
        if clamp:
            x, line = jnp.clip(x, 0.0, 255.0), jnp.clip(line, 0.0, 255.0)
    x = canvas_pass(materialize(x), iy - top, wy, 0, line)
    if is_int(image.dtype):
        return jnp.clip(jnp.floor(x + 0.5), 0.0, 255.0).astype(image.dtype)
    return x.astype(image.dtype)
