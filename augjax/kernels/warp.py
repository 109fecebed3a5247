"""Inverse-mapping warps (affine, perspective) and crop-resizes of one HWC image, torchvision-exact.

Coordinates follow torchvision's tensor kernels, which sample with ``grid_sample(...,
align_corners=False, padding_mode="zeros")``: pixel ``j`` has its centre at ``j`` and the image
spans ``[-0.5, W - 0.5]``. The source coordinate of each output pixel is computed the way
torchvision computes it in float32 (a normalised grid, then ``(g + 1) * W / 2 - 0.5``), so nearest
sampling picks the same pixel except at exact half-pixel ties (shear 0.2 on the row where
``0.2 * (y + 0.5) = 0.5``): there the pick depends on float32 rounding order, which XLA (it fuses
multiply-adds) and ATen do differently, so such pixels may differ from torchvision, and between
CPU and GPU.

Fill (torchvision ``_apply_grid_transform``): ``fill=None`` is plain zero padding (torchvision's
functional default); otherwise ``fill`` is a fraction of the value range in [0, 1], scaled by 255
for uint8 images (:func:`check_fill`), and a ones "mask" channel is warped with the image; with
nearest sampling a pixel whose mask is below 0.5 takes the fill value, with bilinear sampling the
result is ``mask * (warped - fill) + fill``, so border pixels blend towards the fill by the fraction
of their footprint outside the image. Integer images are rounded half to even at the end.

:func:`augjax.kernels.warp_pil.warp_affine_pil` is the other convention: PIL's ``Image.transform(..., Image.AFFINE)``
(what timm's geometric ops call), with PIL's edge rule (an output pixel whose source point falls
outside the image takes the fill; samples next to the edge are clamped, not blended with the
fill) and its truncating uint8 bilinear; :func:`~augjax.kernels.warp_pil.pil_rotate_coefficients` gives
``Image.rotate``'s data.

Everything here is trace-safe in the transform's parameters (angles, shears, shifts, crop boxes
may be traced scalars) and works on one image; augjax vmaps it over the batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax.kernels.boundary import materialize
from augjax.kernels.partition import partitioned
from augjax.kernels.platform import platform_dependent
from augjax.errors import InputError
from augjax.kernels.division import exact_div
from augjax.kernels.grid_sample import (
    affine_grid,
    bilinear_taps,
    centred,
    elastic_source,
    fill_blend,
    grid_rows,
    nearest_tap,
    unnormalize,
)
from augjax.kernels.pixels import bound, is_int, to_dtype
from augjax.kernels.products import matmul
from augjax.kernels.tap_passes import canvas_pass, taps_pass

__all__ = [
    "INTERPOLATIONS",
    "RESIZE_INTERPOLATIONS",
    "check_fill",
    "elastic",
    "exact_div",
    "inverse_affine_matrix",
    "warp_affine",
    "perspective_coefficients",
    "warp_perspective",
    "resize_weights",
    "resize_taps",
    "resize_filter",
    "bicubic_taps",
    "FILTER_SUPPORT",
    "resize_crop",
    "canvas_taps",
    "crop_taps",
    "resample_canvas",
    "resample_crop",
    "uniform_int",
    "sample",
    "remap",
]

#: The interpolation modes the warps support (torchvision's tensor kernels support these two).
INTERPOLATIONS = ("nearest", "bilinear")

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

_F32 = jnp.float32


def uniform_int(u: jax.Array, low, high) -> jax.Array:
    """Integers uniform in ``[low, high)`` (elementwise, like ``randint``) from uniform draws
    ``u`` in [0, 1): ``low + floor(u * (high - low))``, int32. One vectorised uniform draw per
    kernel compiles far faster on XLA CPU than one ``jax.random.randint`` per value."""
    low = jnp.asarray(low, _F32)
    high = jnp.asarray(high, _F32)
    return jnp.minimum(low + jnp.floor(u * (high - low)), high - 1.0).astype(jnp.int32)


def check_fill(fill, image: jax.Array, op: str) -> np.ndarray | None:
    """The fill as a float32 ``(C,)`` numpy vector in ``image``'s scale (``None`` stays ``None``).

    ``fill`` is a fraction of the value range, in [0, 1] (one value or one per channel; the
    op's Param checks the range at bind time): it is multiplied by 255 for uint8 images and used
    as is for float images, so one configuration serves both dtypes (torchvision's uint8
    ``fill=128`` is ``fill=128/255`` here).

    Raises:
        InputError: the number of values is neither 1 nor the image's channel count.
    """
    if fill is None:
        return None
    values = fill if isinstance(fill, Sequence) else (fill,)
    c = image.shape[-1]
    if len(values) not in (1, c):
        raise InputError(
            f"{op}: parameter 'fill' expects one value or one per channel ({c}), "
            f"got {len(values)} values {tuple(values)!r}",
            op=op,
            argument="fill",
        )
    scale = bound(image.dtype)
    # Scaled in float64 (Python floats), then rounded once to float32: k/255 gives exactly k.
    # numpy, not jnp: a constant of the program, and no eager dispatch on a per-sample call.
    vec = np.asarray([float(v) * scale for v in values], np.float32)
    return np.broadcast_to(vec, (c,))


def inverse_affine_matrix(center, angle, translate, scale, shear) -> jax.Array:
    """torchvision ``_get_inverse_affine_matrix`` in float32, trace-safe: the output-to-input map
    ``(6,)`` in coordinates centred on the image centre.

    Args:
        center: ``(cx, cy)`` relative to the image centre (torchvision's ``center_f``).
        angle: rotation in degrees (torchvision affine convention: positive is clockwise on screen).
        translate: ``(tx, ty)`` in pixels.
        scale: the zoom factor.
        shear: ``(sx, sy)`` in degrees.
    """
    rot = jnp.deg2rad(jnp.asarray(angle, _F32))
    sx = jnp.deg2rad(jnp.asarray(shear[0], _F32))
    sy = jnp.deg2rad(jnp.asarray(shear[1], _F32))
    cx, cy = (jnp.asarray(v, _F32) for v in center)
    tx, ty = (jnp.asarray(v, _F32) for v in translate)
    scale = jnp.asarray(scale, _F32)
    cos_sy, tan_sx = jnp.cos(sy), jnp.tan(sx)
    a = jnp.cos(rot - sy) / cos_sy
    b = -(a * tan_sx + jnp.sin(rot))
    c = jnp.sin(rot - sy) / cos_sy
    d = jnp.cos(rot) - c * tan_sx
    m0, m1, m3, m4 = d / scale, -b / scale, -c / scale, a / scale
    m2 = cx - m0 * (cx + tx) - m1 * (cy + ty)
    m5 = cy - m3 * (cx + tx) - m4 * (cy + ty)
    return jnp.stack([m0, m1, m2, m3, m4, m5])


def warp_affine(image: jax.Array, matrix: jax.Array, interpolation: str,
                fill: jax.Array | None,
                window: tuple[int, int, int, int] | None = None) -> jax.Array:
    """torchvision ``affine_image``: samples ``image`` (H, W, C) through the inverse ``matrix``
    (from :func:`inverse_affine_matrix`); same output size. ``window`` (static ints ``top,
    left, height, width``): only that window of the output is computed: the pixels of slicing the
    whole output (each pixel's source comes from its own index alone), up to float32 rounding
    (XLA's code for another output shape may fuse the multiply-adds otherwise: float32 results
    within one step of the value, uint8 ones measured equal)."""
    h, w = image.shape[:2]
    top, left, oh, ow = (0, 0, h, w) if window is None else window
    m = jnp.asarray(matrix, _F32)
    # _affine_grid: base grid centred on the image, theta rows divided by (W/2, H/2).
    xs = centred(jnp.arange(left, left + ow), w)
    ys = centred(jnp.arange(top, top + oh)[:, None], h)
    rx, ry = grid_rows(m, h, w)
    gx, gy = affine_grid(xs, ys, rx, ry)
    return sample(image, unnormalize(gx, w), unnormalize(gy, h), interpolation, fill)


def _square_to_quad(p: jax.Array) -> jax.Array:
    """Heckbert's projective map of the unit square's corners (0,0), (1,0), (1,1), (0,1) onto the
    quadrilateral ``p`` (4, 2), as a 3x3 matrix; exact for parallelograms too (g = h = 0)."""
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = p
    dx1, dx2, dx3 = x1 - x2, x3 - x2, x0 - x1 + x2 - x3
    dy1, dy2, dy3 = y1 - y2, y3 - y2, y0 - y1 + y2 - y3
    den = dx1 * dy2 - dx2 * dy1
    g = (dx3 * dy2 - dx2 * dy3) / den
    h = (dx1 * dy3 - dx3 * dy1) / den
    return jnp.stack([
        jnp.stack([x1 - x0 + g * x1, x3 - x0 + h * x3, x0]),
        jnp.stack([y1 - y0 + g * y1, y3 - y0 + h * y3, y0]),
        jnp.stack([g, h, jnp.ones_like(g)]),
    ])


def _adjugate(m: jax.Array) -> jax.Array:
    """The adjugate of a 3x3 matrix (its inverse times the determinant)."""
    c = [[m[(i + 1) % 3, (j + 1) % 3] * m[(i + 2) % 3, (j + 2) % 3]
          - m[(i + 1) % 3, (j + 2) % 3] * m[(i + 2) % 3, (j + 1) % 3] for j in range(3)]
         for i in range(3)]
    return jnp.stack([jnp.stack(row) for row in c]).T


def perspective_coefficients(startpoints: jax.Array, endpoints: jax.Array) -> jax.Array:
    """torchvision ``_get_perspective_coeffs``: the 8 coefficients of the map from ``endpoints``
    to ``startpoints`` (each ``(4, 2)`` as (x, y)), float32 and trace-safe.

    torchvision solves the 8x8 linear system in float64; here the same homography is built in
    closed form (unit square to each quadrilateral, one inverted through its adjugate) in
    float32, which is cheap to compile; on the source grid it stays within about 1e-4 pixel of
    the float64 solution at 224x224 (torchvision's float32 rounding of it: about 2e-5).
    """
    start = _square_to_quad(jnp.asarray(startpoints, _F32))
    end = _square_to_quad(jnp.asarray(endpoints, _F32))
    m = matmul(start, _adjugate(end))
    return (m / m[2, 2]).reshape(9)[:8]


def warp_perspective(image: jax.Array, coeffs: jax.Array, interpolation: str,
                     fill: jax.Array | None) -> jax.Array:
    """torchvision ``perspective_image``: output pixel centre ``(x + 0.5, y + 0.5)`` maps to
    ``((c0 x + c1 y + c2) / (c6 x + c7 y + 1), (c3 x + c4 y + c5) / (...))`` in the input."""
    h, w = image.shape[:2]
    c = jnp.asarray(coeffs, _F32)
    xs = jnp.arange(w, dtype=_F32) + 0.5
    ys = jnp.arange(h, dtype=_F32)[:, None] + 0.5
    # _perspective_grid: numerators divided by (W/2, H/2), then / denominator - 1.
    rx, ry = grid_rows(c, h, w)
    g1x = xs * rx[0] + ys * rx[1] + rx[2]
    g1y = xs * ry[0] + ys * ry[1] + ry[2]
    g2 = xs * c[6] + ys * c[7] + 1.0
    gx, gy = g1x / g2 - 1.0, g1y / g2 - 1.0
    return sample(image, unnormalize(gx, w), unnormalize(gy, h), interpolation, fill)


def sample(image: jax.Array, x: jax.Array, y: jax.Array, interpolation: str,
           fill: jax.Array | None) -> jax.Array:
    """Samples ``image`` (H, W, C) at source coordinates ``x``, ``y`` (Ho, Wo), with torchvision's
    fill rule (``fill`` a ``(C,)`` vector, or ``None`` for zero padding); returns (Ho, Wo, C) in the
    image's dtype. XLA fuses the coordinates' arithmetic into the gathers: the form for
    coordinates computed from a few numbers (a matrix, a wave); :func:`remap` for coordinates
    read from arrays."""
    h, w, ch = image.shape
    flat = image.reshape(h * w, ch)
    if interpolation == "nearest":
        # Gathers in the image's dtype: a pixel is copied, or replaced by the fill (rounded to the
        # dtype as torchvision's final round does), so no float copy of the image is needed.
        index, inside = nearest_tap(x, y, h, w)
        outside = (jnp.zeros((), image.dtype) if fill is None
                   else to_dtype(fill, image.dtype, rounding="round"))
        return jnp.where(inside[..., None], flat[index], outside)
    taps, mask = bilinear_taps(x, y, h, w)
    value = 0.0
    for index, wt in taps:
        value = value + flat[index].astype(_F32) * wt[..., None]
    out = value if fill is None else fill_blend(value, fill, mask[..., None])
    return to_dtype(out, image.dtype, rounding="round")


def remap(image: jax.Array, x: jax.Array, y: jax.Array, interpolation: str,
          fill: jax.Array | None) -> jax.Array:
    """:func:`sample` at coordinates held in arrays (a displacement field added to the pixel
    grid, OpenCV's ``remap`` maps): the same pixels. On CUDA a uint8 image takes the Pallas
    kernel of :mod:`augjax.kernels.sample_pallas`, which reads the coordinates and gathers the
    uint8 taps in one pass (H200, B=256, elastic_transform's coordinates: 0.12 ms against
    0.32 for XLA's form with the coordinates' arithmetic; for a rotation XLA's fused form is
    faster, 0.16 against 0.25)."""
    if (image.dtype != jnp.uint8 or image.size == 0 or x.size == 0 or partitioned()
            or not _pallas_available()):
        return sample(image, x, y, interpolation, fill)
    args = (image, x, y) if fill is None else (image, x, y, fill)

    def xla(image, x, y, *fill_v):
        return sample(image, x, y, interpolation, fill_v[0] if fill_v else None)

    def pallas(image, x, y, *fill_v):
        from augjax.kernels.sample_pallas import sample_kernel

        return sample_kernel(image, x, y, interpolation, fill_v[0] if fill_v else None)

    return platform_dependent(*args, cpu=xla, cuda=pallas, default=xla)


def elastic(image: jax.Array, displacement: jax.Array, interpolation: str,
            fill: jax.Array | None, op: str = "elastic") -> jax.Array:
    """torchvision's ``F.elastic(image, displacement)``: :func:`sample` at the identity grid
    of ``grid_sample(align_corners=False)`` plus the ``(H, W, 2)`` displacement (x then y, in
    ``grid_sample`` units: 2 is the image's size), ``g = (2 i + 1) / size - 1 + d``, taken to
    pixels ``((g + 1) * size - 1) / 2``. On CUDA a uint8 image takes a Pallas kernel that
    reads the displacement and samples in one pass (the coordinates are never stored).
    ``op``: the name that errors give (the calling op's)."""
    if image.ndim != 3:
        raise InputError(f"{op}: image must be one (H, W, C) image, got shape {image.shape}",
                         op=op, argument="image")
    h, w = image.shape[0], image.shape[1]
    if displacement.shape != (h, w, 2):
        raise InputError(f"{op}: displacement must be (H, W, 2) = ({h}, {w}, 2) for an "
                         f"image of {image.shape}, got {displacement.shape}", op=op,
                         argument="displacement")
    if interpolation not in INTERPOLATIONS:
        raise InputError(f"{op}: interpolation must be one of {INTERPOLATIONS}, got "
                         f"{interpolation!r}", op=op, argument="interpolation")
    y, x = jnp.meshgrid(jnp.arange(h, dtype=_F32), jnp.arange(w, dtype=_F32), indexing="ij")
    base_x = (2.0 * x + 1.0) / w - 1.0
    base_y = (2.0 * y + 1.0) / h - 1.0

    def xla(image, displacement, *fill_v):
        ix = elastic_source(base_x + displacement[..., 0], w)
        iy = elastic_source(base_y + displacement[..., 1], h)
        return sample(image, ix, iy, interpolation, fill_v[0] if fill_v else None)

    args = (image, displacement) if fill is None else (image, displacement, fill)
    if (image.dtype != jnp.uint8 or image.size == 0 or partitioned()
            or not _pallas_available()):
        return xla(*args)

    def pallas(image, displacement, *fill_v):
        from augjax.kernels.sample_pallas import elastic_kernel

        return elastic_kernel(image, base_x, base_y, displacement, interpolation,
                              fill_v[0] if fill_v else None)

    return platform_dependent(*args, cpu=xla, cuda=pallas, default=xla)


def _pallas_available() -> bool:
    from augjax.kernels.sample_pallas import AVAILABLE

    return AVAILABLE


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
