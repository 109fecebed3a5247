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

:func:`warp_affine_pil` is the other convention: PIL's ``Image.transform(..., Image.AFFINE)``
(what timm's geometric ops call), with PIL's edge rule (an output pixel whose source point falls
outside the image takes the fill; samples next to the edge are clamped, not blended with the
fill) and its truncating uint8 bilinear; :func:`pil_rotate_coefficients` gives
``Image.rotate``'s data.

Everything here is trace-safe in the transform's parameters (angles, shears, shifts, crop boxes
may be traced scalars) and works on one image; augjax vmaps it over the batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from augjax.errors import InputError
from augjax.kernels.pixels import bound, is_int

__all__ = [
    "INTERPOLATIONS",
    "check_fill",
    "exact_div",
    "inverse_affine_matrix",
    "warp_affine",
    "perspective_coefficients",
    "pil_rotate_coefficients",
    "warp_affine_pil",
    "warp_perspective",
    "resize_weights",
    "resize_taps",
    "resize_crop",
    "uniform_int",
]

#: The interpolation modes the warps support (torchvision's tensor kernels support these two).
INTERPOLATIONS = ("nearest", "bilinear")

_F32 = jnp.float32


def uniform_int(u: jax.Array, low, high) -> jax.Array:
    """Integers uniform in ``[low, high)`` (elementwise, like ``randint``) from uniform draws
    ``u`` in [0, 1): ``low + floor(u * (high - low))``, int32. One vectorised uniform draw per
    kernel compiles far faster on XLA CPU than one ``jax.random.randint`` per value."""
    low = jnp.asarray(low, _F32)
    high = jnp.asarray(high, _F32)
    return jnp.minimum(low + jnp.floor(u * (high - low)), high - 1.0).astype(jnp.int32)


def check_fill(fill, image: jax.Array, op: str) -> jax.Array | None:
    """The fill as a float32 ``(C,)`` vector in ``image``'s scale (``None`` stays ``None``).

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
    vec = jnp.asarray([float(v) * scale for v in values], _F32)
    return jnp.broadcast_to(vec, (c,))


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


def exact_div(a: jax.Array, b: float) -> jax.Array:
    """``a / b`` for a float32 array ``a`` and a static number ``b``, as a true division.

    XLA (seen on CPU) rewrites a division by a constant or by a broadcast scalar into a
    multiplication by the reciprocal, which is off by one ulp for some values (0.2 / 10);
    torchvision divides exactly, and one ulp moves legacy-nearest resize indices
    (``floor(i * scale)`` at whole numbers) and nearest sampling at half-pixel ties. The divisor
    is therefore made an elementwise runtime value: ``0 * a`` cannot be folded under IEEE rules
    (it is NaN for infinite ``a``), so XLA keeps an elementwise division (correctly rounded on
    CPU; GPU division accuracy is the backend's).
    """
    return a / (b + 0.0 * a)


def _unnormalize(g: jax.Array, size: int) -> jax.Array:
    # grid_sample, align_corners=False (ATen GridSamplerKernel: (g + 1) * size / 2 - 0.5).
    return (g + 1.0) * (size / 2.0) - 0.5


def warp_affine(image: jax.Array, matrix: jax.Array, interpolation: str,
                fill: jax.Array | None) -> jax.Array:
    """torchvision ``affine_image``: samples ``image`` (H, W, C) through the inverse ``matrix``
    (from :func:`inverse_affine_matrix`); same output size."""
    h, w = image.shape[:2]
    m = jnp.asarray(matrix, _F32)
    # _affine_grid: base grid centred on the image, theta rows divided by (W/2, H/2).
    xs = jnp.arange(w, dtype=_F32) - (w - 1) / 2.0
    ys = jnp.arange(h, dtype=_F32)[:, None] - (h - 1) / 2.0
    rx, ry = exact_div(m[:3], 0.5 * w), exact_div(m[3:], 0.5 * h)
    gx = xs * rx[0] + ys * rx[1] + rx[2]
    gy = xs * ry[0] + ys * ry[1] + ry[2]
    return sample(image, _unnormalize(gx, w), _unnormalize(gy, h), interpolation, fill)


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
    m = start @ _adjugate(end)
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
    rx, ry = exact_div(c[0:3], 0.5 * w), exact_div(c[3:6], 0.5 * h)
    g1x = xs * rx[0] + ys * rx[1] + rx[2]
    g1y = xs * ry[0] + ys * ry[1] + ry[2]
    g2 = xs * c[6] + ys * c[7] + 1.0
    gx, gy = g1x / g2 - 1.0, g1y / g2 - 1.0
    return sample(image, _unnormalize(gx, w), _unnormalize(gy, h), interpolation, fill)


def sample(image: jax.Array, x: jax.Array, y: jax.Array, interpolation: str,
           fill: jax.Array | None) -> jax.Array:
    """Samples ``image`` (H, W, C) at source coordinates ``x``, ``y`` (Ho, Wo), with torchvision's
    fill rule (``fill`` a ``(C,)`` vector, or ``None`` for zero padding); returns (Ho, Wo, C) in the
    image's dtype."""
    h, w, ch = image.shape
    flat = image.reshape(h * w, ch)

    def tap(ix, iy):
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        row = jnp.clip(iy, 0, h - 1).astype(jnp.int32)
        return flat[row * w + jnp.clip(ix, 0, w - 1).astype(jnp.int32)], inside

    if interpolation == "nearest":
        # Gathers in the image's dtype: a pixel is copied, or replaced by the fill (rounded to the
        # dtype as torchvision's final round does), so no float copy of the image is needed.
        value, inside = tap(jnp.round(x), jnp.round(y))  # nearbyint: half to even, as ATen
        outside = jnp.zeros((), image.dtype) if fill is None else _cast(fill, image.dtype)
        return jnp.where(inside[..., None], value, outside)
    x0, y0 = jnp.floor(x), jnp.floor(y)
    e_w = x - x0  # weight of the east column
    e_s = y - y0  # weight of the south row
    weights = ((1.0 - e_s) * (1.0 - e_w), (1.0 - e_s) * e_w, e_s * (1.0 - e_w), e_s * e_w)
    value = mask = 0.0
    for (dx, dy), wt in zip(((0, 0), (1, 0), (0, 1), (1, 1)), weights, strict=True):
        v, inside = tap(x0 + dx, y0 + dy)
        wt = jnp.where(inside, wt, 0.0)
        value = value + v.astype(_F32) * wt[..., None]
        mask = mask + wt
    out = value if fill is None else (value - fill) * mask[..., None] + fill
    return _cast(out, image.dtype)


def _cast(x: jax.Array, dtype) -> jax.Array:
    if is_int(dtype):
        return jnp.clip(jnp.round(x), 0.0, 255.0).astype(dtype)
    return x.astype(dtype)


def resize_weights(out_size: int, in_size: int, start, length, interpolation: str,
                   antialias: bool) -> jax.Array:
    """The ``(out_size, in_size)`` matrix that resizes the window ``[start, start + length)`` of
    an axis of ``in_size`` pixels to ``out_size`` pixels, as ATen's ``interpolate`` does
    (align_corners=False); ``start`` and ``length`` may be traced.

    ``"bilinear"``: triangle filter at the output centres ``scale * (i + 0.5)``, widened by
    ``scale`` when downscaling with ``antialias`` (ATen ``_upsample_bilinear2d_aa``, PIL), taps
    outside the window dropped and the rest renormalised (the same as clamping at the edges).
    ``"nearest"``: ATen's legacy nearest, source ``min(floor(i * scale), length - 1)``.
    """
    return window_weights(out_size, 0, out_size, in_size, start, length, interpolation,
                          antialias)


def window_weights(rows: int, offset, out_size, in_size: int, start, length,
                   interpolation: str, antialias: bool) -> jax.Array:
    """Rows ``offset .. offset + rows - 1`` of :func:`resize_weights` for an output of
    ``out_size`` pixels, where ``offset`` and ``out_size`` may be traced (images of different
    sizes): a ``(rows, in_size)`` matrix whose rows outside ``[0, out_size)`` are zero (the
    padding of a crop window that leaves the resized image)."""
    length = jnp.asarray(length, _F32)
    if isinstance(out_size, (int, float)):
        scale = exact_div(length, float(out_size))  # ATen: (float)input_size / output_size
    else:
        scale = length / jnp.asarray(out_size, _F32)
    i = jnp.arange(rows, dtype=_F32)[:, None] + jnp.asarray(offset, _F32)
    j = jnp.arange(in_size, dtype=_F32)[None, :] - jnp.asarray(start, _F32)
    inside = (j >= 0) & (j < length) & (i >= 0) & (i < jnp.asarray(out_size, _F32))
    if interpolation == "nearest":
        src = jnp.minimum(jnp.floor(i * scale), length - 1.0)
        return ((j == src) & inside).astype(_F32)
    invscale = jnp.where(scale >= 1.0, 1.0 / scale, 1.0) if antialias else 1.0
    center = scale * (i + 0.5)
    wt = jnp.maximum(0.0, 1.0 - jnp.abs((j - center + 0.5) * invscale))
    wt = jnp.where(inside, wt, 0.0)
    return wt / jnp.maximum(wt.sum(axis=1, keepdims=True), 1e-30)


def resize_taps(out_size: int, in_size: int, start, length, interpolation: str,
                antialias: bool) -> tuple[jax.Array, jax.Array]:
    """The nonzero entries of :func:`resize_weights`' rows: ``(index, weight)``, each
    ``(out_size, K)``, with ``resize_weights(...)[o, index[o, k]] == weight[o, k]`` (the same
    float32 values; taps beyond a row's support have weight 0 and an index clamped into the
    axis). ``K`` is static: 1 for nearest, ``ceil(2 s) + 1`` for bilinear, where ``s`` is the
    filter's half-width, 1, or with ``antialias`` the largest shrink factor ``in_size /
    out_size`` when that exceeds 1."""
    length = jnp.asarray(length, _F32)
    start_f = jnp.asarray(start, _F32)
    scale = exact_div(length, float(out_size))
    i = jnp.arange(out_size, dtype=_F32)[:, None]
    if interpolation == "nearest":
        src = jnp.minimum(jnp.floor(i * scale), length - 1.0) + start_f
        return jnp.clip(src, 0, in_size - 1).astype(jnp.int32), jnp.ones_like(src)
    widest = max(in_size / out_size, 1.0) if antialias else 1.0
    taps = math.ceil(2.0 * widest) + 1  # taps in (c - s, c + s), from floor(c - s)
    invscale = jnp.where(scale >= 1.0, 1.0 / scale, 1.0) if antialias else 1.0
    center = scale * (i + 0.5)
    # The first tap, floor(center - 0.5 - half), in integers: float rounding (which XLA may
    # contract differently in each fusion) must not move the taps that the weights describe.
    n = jnp.asarray(length).astype(jnp.int32)
    o2 = 2 * out_size
    widen = jnp.maximum(n, out_size) if antialias else out_size  # half * out_size
    first = jnp.floor_divide(n * (2 * jnp.arange(out_size, dtype=jnp.int32) + 1) - out_size
                             - 2 * widen, o2)
    j = first[:, None] + jnp.arange(taps, dtype=jnp.int32)[None, :]
    jf = j.astype(_F32)
    wt = jnp.maximum(0.0, 1.0 - jnp.abs((jf - center + 0.5) * invscale))
    wt = jnp.where((jf >= 0) & (jf < length), wt, 0.0)
    wt = wt / jnp.maximum(wt.sum(axis=1, keepdims=True), 1e-30)
    return jnp.clip(j + jnp.asarray(start).astype(jnp.int32), 0, in_size - 1), wt


def _taps_pass(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int) -> jax.Array:
    """``out[o] = sum_k weight[o, k] * x[index[o, k]]`` along ``axis`` of float ``x``."""
    out = None
    for k in range(index.shape[1]):
        shape = [1] * x.ndim
        shape[axis] = index.shape[0]
        term = jnp.take(x, index[:, k], axis=axis) * weight[:, k].reshape(shape)
        out = term if out is None else out + term
    return out


def resize_crop(image: jax.Array, box, size: tuple[int, int], interpolation: str,
                antialias: bool) -> jax.Array:
    """torchvision ``resized_crop``: crops ``box = (top, left, height, width)`` (traced ints) of
    ``image`` (H, W, C) and resizes it to ``size`` (static). Width pass first, then height; uint8
    images are rounded between the passes as ATen's native uint8 kernel does. Each pass gathers
    its few taps per output (:func:`resize_taps`) instead of multiplying by the dense
    :func:`resize_weights` matrix."""
    h, w, _ = image.shape
    top, left, ch, cw = box
    iy, wy = resize_taps(size[0], h, top, ch, interpolation, antialias)
    ix, wx = resize_taps(size[1], w, left, cw, interpolation, antialias)
    x = _taps_pass(image.astype(_F32), ix, wx, axis=1)
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)  # ATen uint8 passes round half up
    x = _taps_pass(x, iy, wy, axis=0)
    if is_int(image.dtype):
        return jnp.clip(jnp.floor(x + 0.5), 0.0, 255.0).astype(image.dtype)
    return x.astype(image.dtype)



# ---------------------------------------------------------------------------------------------
# PIL's affine transform (Pillow libImaging/Geometry.c), for references that warp with PIL


def pil_rotate_coefficients(angle, height: int, width: int) -> jax.Array:
    """PIL ``Image.rotate(angle)``'s affine data ``(a, b, c, d, e, f)`` (float32, trace-safe):
    the output-to-input map of a counter-clockwise rotation by ``angle`` degrees about the
    image centre ``(width / 2, height / 2)`` (PIL's corner coordinates), with PIL's
    ``round(cos, 15)``: exact zeros and ones at multiples of 90 degrees.

    PIL reduces the angle modulo 360 and takes ``-radians(angle)``; here the angle is reduced
    to (-180, 180] (exactly, in float32) before the radians so that the float32 sine and cosine
    stay close to PIL's float64 ones.
    """
    m = jnp.mod(jnp.asarray(angle, _F32), 360.0)
    r = jnp.deg2rad(jnp.where(m > 180.0, m - 360.0, m))
    quarter = [m == q for q in (0.0, 90.0, 180.0, 270.0)]
    cos = jnp.select(quarter, [1.0, 0.0, -1.0, 0.0], jnp.cos(r)).astype(_F32)
    sin = jnp.select(quarter, [0.0, 1.0, 0.0, -1.0], jnp.sin(r)).astype(_F32)
    a, b, d, e = cos, -sin, sin, cos  # cos(-t), sin(-t), -sin(-t), cos(-t)
    cx, cy = width / 2.0, height / 2.0
    c = (a * -cx + b * -cy) + cx
    f = (d * -cx + e * -cy) + cy
    return jnp.stack([a, b, c, d, e, f])


def _fix(*terms: jax.Array) -> jax.Array:
    """PIL's 16.16 fixed point ``floor(v * 65536 + 0.5)`` of ``v = sum(terms)`` (float32
    scalars), int32: each term is split into a whole number of 1/65536 units and a fraction
    (both exact in float32), so the sum is not rounded at the scale of ``v``."""
    whole = jnp.int32(0)
    frac = jnp.float32(0.0)
    for t in terms:
        scaled = jnp.asarray(t, _F32) * 65536.0  # exact: a power of two
        fl = jnp.floor(scaled)
        whole = whole + fl.astype(jnp.int32)
        frac = frac + (scaled - fl)
    return whole + jnp.floor(frac + 0.5).astype(jnp.int32)


def _pil_nearest_index(a: jax.Array, h: int, w: int) -> tuple[jax.Array, jax.Array]:
    """The source column and row of every output pixel under PIL's nearest-neighbour affine
    transform (``ImagingTransformAffine``), -1 where the source point falls outside."""
    ys = jnp.arange(h, dtype=jnp.int32)[:, None]
    xs = jnp.arange(w, dtype=jnp.int32)[None, :]
    # Fixed point (affine_fixed): x_in = (A2 + y A1 + x A0) >> 16, an arithmetic shift (floor).
    a0, a1, a3, a4 = (_fix(a[i]) for i in (0, 1, 3, 4))
    a2 = _fix(a[2], a[0] * 0.5, a[1] * 0.5)
    a5 = _fix(a[5], a[3] * 0.5, a[4] * 0.5)
    fx = jnp.right_shift(a2 + ys * a1 + xs * a0, 16)
    fy = jnp.right_shift(a5 + ys * a4 + xs * a3, 16)
    # Floating point (ImagingScaleAffine when a1 = a3 = 0, and the fallback when a corner lies
    # beyond the fixed-point range): COORD(a2 + a0 (x + 0.5) + a1 (y + 0.5)), floor for x >= 0.
    xf = ys.astype(_F32) + 0.5
    xc = xs.astype(_F32) + 0.5
    gx = jnp.floor((a[2] + a[1] * xf) + a[0] * xc)
    gy = jnp.floor((a[5] + a[4] * xf) + a[3] * xc)
    gx = jnp.clip(gx, -1.0, w).astype(jnp.int32)
    gy = jnp.clip(gy, -1.0, h).astype(jnp.int32)
    corners = [(0.0, 0.0), (float(w), float(h)), (0.0, float(h)), (float(w), 0.0)]
    fits = jnp.all(jnp.stack([
        (jnp.abs(cx * a[0] + cy * a[1] + a[2]) < 32768.0)
        & (jnp.abs(cx * a[3] + cy * a[4] + a[5]) < 32768.0) for cx, cy in corners]))
    use_fixed = fits & ~((a[1] == 0.0) & (a[3] == 0.0))
    return jnp.where(use_fixed, fx, gx), jnp.where(use_fixed, fy, gy)


def _split_products(c: jax.Array, n: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``c * n`` for a float32 scalar ``c`` and whole numbers ``n`` (below 2**15) as an int32
    whole part and a float32 fraction, without rounding the product: ``c`` is cut into its top
    12 significant bits and the rest (by masking its bits) and ``n`` into multiples of 256 and
    the rest, so each partial product is exact in float32 (and stays exact if XLA fuses it into
    a multiply-add)."""
    bits = jax.lax.bitcast_convert_type(c, jnp.uint32)
    c_hi = jax.lax.bitcast_convert_type(bits & jnp.uint32(0xFFFFF000), _F32)
    c_lo = c - c_hi  # exact: the masked-off bits
    n_lo = jnp.mod(n, 256.0)
    n_hi = n - n_lo
    whole = jnp.zeros(n.shape, jnp.int32)
    frac = jnp.zeros(n.shape, _F32)
    for p in (c_hi * n_hi, c_hi * n_lo, c_lo * n_hi, c_lo * n_lo):
        fl = jnp.floor(p)
        whole = whole + fl.astype(jnp.int32)
        frac = frac + (p - fl)
    return whole, frac


def _pil_source(cx: jax.Array, cy: jax.Array, c0: jax.Array, h: int, w: int, size: int):
    """One source coordinate of PIL's bilinear sampling, ``u = cx (x + 0.5) + cy (y + 0.5) +
    c0 - 0.5`` at every output pixel, as ``(floor(u), u - floor(u), inside)``: the whole part
    exactly and the fraction to about 1e-7 pixel (PIL computes it in float64; a float32 sum
    of the terms would be off by up to ``ulp(size)``), and whether ``u + 0.5`` lies in
    ``[0, size)``."""
    nx = 2.0 * jnp.arange(w, dtype=_F32) + 1.0  # x + 0.5 = n / 2
    ny = 2.0 * jnp.arange(h, dtype=_F32) + 1.0
    xi, xf = _split_products(cx * 0.5, nx)
    yi, yf = _split_products(cy * 0.5, ny)
    c0 = jnp.asarray(c0, _F32)
    ci = jnp.floor(c0)
    whole = yi[:, None] + xi[None, :] + ci.astype(jnp.int32)
    frac = (yf[:, None] + xf[None, :]) + ((c0 - ci) - 0.5)
    carry = jnp.floor(frac)
    whole = whole + carry.astype(jnp.int32)
    frac = frac - carry
    lo = (whole >= 0) | ((whole == -1) & (frac >= 0.5))  # u + 0.5 >= 0
    hi = (whole < size - 1) | ((whole == size - 1) & (frac < 0.5))  # u + 0.5 < size
    return whole, frac, lo & hi


def warp_affine_pil(image: jax.Array, coeffs, resample: str,
                    fill: jax.Array | None) -> jax.Array:
    """PIL ``image.transform(size, Image.AFFINE, coeffs, resample, fillcolor=fill)`` of one HWC
    ``image`` (uint8 or float32; same output size), trace-safe in ``coeffs``.

    ``coeffs`` ``(a, b, c, d, e, f)`` map an output point to the input point ``(a x + b y + c,
    d x + e y + f)`` in PIL's coordinates (the image spans ``[0, W] x [0, H]``, pixel ``j``'s
    centre at ``j + 0.5``), sampled at output pixel centres. Sampling follows Pillow's
    ``libImaging/Geometry.c``:

    - ``"nearest"``: the pixel that contains the source point; PIL computes it in 16.16 fixed
      point (``affine_fixed``) unless the map is a pure scale/shift (``a1 = a3 = 0``:
      ``ImagingScaleAffine``, floating point), and both are reproduced.
    - ``"bilinear"``: an output pixel whose source point lies outside ``[0, W) x [0, H)`` takes
      the fill; otherwise the four neighbours of ``source - 0.5`` are blended with edge samples
      clamped to the image (``XCLIP``/``YCLIP``: no blending with the fill), and uint8 results
      are truncated (``(UINT8)v``), float32 kept.

    ``fill`` is a ``(C,)`` vector in the image's scale (:func:`check_fill`; rounded for uint8 as
    PIL's integer ``fillcolor``), or ``None`` for zeros (PIL's default).

    Precision: PIL computes in float64, this in float32. Nearest picks use PIL's own 16.16
    integers (each coefficient rounded to 1/65536 from its float32 value without further
    rounding), so they match PIL bitwise for coefficients given in float32 (shifts, shears);
    a rotation's float32 sine and cosine can land on the other side of a 1/65536 rounding
    boundary than PIL's float64 ones, which moves a few picks (none seen in the tests). Bilinear
    source coordinates are split into whole pixels and a fraction accurate to about 1e-7 pixel,
    but the blend itself is float32: a uint8 value whose exact result is a whole level (frequent
    with simple coefficients: a shear of 0.3 repeats the same fractions) can be truncated one
    level lower or higher than PIL's float64 value is (measured at 224x224: 0.9% of pixels for
    a y-shear of 0.3, under 0.2% for rotations, none for whole and half-pixel shifts; never
    more than one level). float32 images keep the blend (PIL mode "F"), within about 1e-5.
    """
    h, w, ch = image.shape
    a = jnp.asarray(coeffs, _F32)
    outside = (jnp.zeros((ch,), _F32) if fill is None
               else jnp.asarray(fill, _F32)).astype(_F32)
    flat = image.reshape(h * w, ch)
    if resample == "nearest":
        ix, iy = _pil_nearest_index(a, h, w)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        value = flat[jnp.clip(iy, 0, h - 1) * w + jnp.clip(ix, 0, w - 1)]
        return jnp.where(inside[..., None], value, _cast(outside, image.dtype))
    if resample != "bilinear":
        raise ValueError(f"warp_affine_pil: resample must be 'nearest' or 'bilinear', "
                         f"got {resample!r}")
    ix, fx, inside_x = _pil_source(a[0], a[1], a[2], h, w, w)
    iy, fy, inside_y = _pil_source(a[3], a[4], a[5], h, w, h)
    inside = inside_x & inside_y
    x0, y0 = ix.astype(_F32), iy.astype(_F32)
    dx, dy = fx[..., None], fy[..., None]
    c0 = jnp.clip(x0, 0, w - 1).astype(jnp.int32)
    c1 = jnp.clip(x0 + 1.0, 0, w - 1).astype(jnp.int32)
    r0 = jnp.clip(y0, 0, h - 1).astype(jnp.int32) * w
    r1 = jnp.clip(y0 + 1.0, 0, h - 1).astype(jnp.int32) * w

    def row(r):
        left, right = flat[r + c0].astype(_F32), flat[r + c1].astype(_F32)
        return left + (right - left) * dx  # BILINEAR(v, a, b, d)

    top, bottom = row(r0), row(r1)
    value = top + (bottom - top) * dy
    if is_int(image.dtype):
        value = jnp.clip(jnp.floor(value), 0.0, 255.0)  # (UINT8)v of a value >= 0
        outside = jnp.clip(jnp.round(outside), 0.0, 255.0)
    return jnp.where(inside[..., None], value, outside).astype(image.dtype)
