"""Inverse-mapping warps (affine, perspective, elastic) of one HWC image, torchvision-exact (the
crop-resizes are :mod:`augjax.kernels.resize`'s).

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

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

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
from augjax.kernels.pixels import bound, to_dtype
from augjax.kernels.products import matmul

__all__ = [
    "INTERPOLATIONS",
    "check_fill",
    "elastic",
    "exact_div",
    "inverse_affine_matrix",
    "warp_affine",
    "perspective_coefficients",
    "warp_perspective",
    "uniform_int",
    "sample",
    "remap",
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
