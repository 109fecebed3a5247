"""PIL's affine warp of one HWC image: ``Image.transform(..., Image.AFFINE)`` (what timm's
geometric ops call) and ``Image.rotate``'s coefficients, bit-exact.

PIL's edge rule: an output pixel whose source point falls outside the image takes the fill;
samples next to the edge are clamped, not blended with the fill; uint8 bilinear truncates as
PIL's fixed-point code does. torchvision's convention is :mod:`augjax.kernels.warp`.

Trace-safe in the coefficients; works on one image (augjax vmaps it over the batch).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.pixels import is_int, to_dtype

__all__ = ["fixed_affine", "pil_bilinear_taps", "pil_coordinate", "pil_lerp", "pil_nearest",
           "pil_rotate_coefficients", "pil_truncate", "split_coefficient", "split_products",
           "warp_affine_pil"]

_F32 = jnp.float32


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


def fixed_affine(a: jax.Array, h: int, w: int) -> tuple[jax.Array, jax.Array]:
    """PIL's 16.16 fixed-point form of the affine data ``a`` (``affine_fixed``): the int32
    ``(A0, A1, A2, A3, A4, A5)`` with ``x_in = (A2 + y A1 + x A0) >> 16`` (and ``y_in`` from
    ``A3..A5``), and whether PIL takes it for an ``h`` x ``w`` image (not a pure scale/shift,
    and every corner within the fixed-point range)."""
    a0, a1, a3, a4 = (_fix(a[i]) for i in (0, 1, 3, 4))
    a2 = _fix(a[2], a[0] * 0.5, a[1] * 0.5)
    a5 = _fix(a[5], a[3] * 0.5, a[4] * 0.5)
    corners = [(0.0, 0.0), (float(w), float(h)), (0.0, float(h)), (float(w), 0.0)]
    fits = jnp.all(jnp.stack([
        (jnp.abs(cx * a[0] + cy * a[1] + a[2]) < 32768.0)
        & (jnp.abs(cx * a[3] + cy * a[4] + a[5]) < 32768.0) for cx, cy in corners]))
    use_fixed = fits & ~((a[1] == 0.0) & (a[3] == 0.0))
    return jnp.stack([a0, a1, a2, a3, a4, a5]), use_fixed


def pil_nearest(a, fixed, use_fixed, i: jax.Array, j: jax.Array, h: int, w: int):
    """PIL's nearest-neighbour affine pick (``ImagingTransformAffine``) at output rows ``i`` and
    columns ``j`` (int32, broadcast together): ``(index, inside)``, the source pixel's index
    ``row * w + col`` (clamped) and whether the source point falls inside. ``a``: the float32
    affine data; ``fixed``, ``use_fixed``: :func:`fixed_affine`'s."""
    a0, a1, a2, a3, a4, a5 = (fixed[k] for k in range(6))
    # Fixed point (affine_fixed): x_in = (A2 + y A1 + x A0) >> 16, an arithmetic shift (floor).
    fx = jnp.right_shift(a2 + i * a1 + j * a0, 16)
    fy = jnp.right_shift(a5 + i * a4 + j * a3, 16)
    # Floating point (ImagingScaleAffine when a1 = a3 = 0, and the fallback when a corner lies
    # beyond the fixed-point range): COORD(a2 + a0 (x + 0.5) + a1 (y + 0.5)), floor for x >= 0.
    xf = i.astype(_F32) + 0.5
    xc = j.astype(_F32) + 0.5
    gx = jnp.floor((a[2] + a[1] * xf) + a[0] * xc)
    gy = jnp.floor((a[5] + a[4] * xf) + a[3] * xc)
    gx = jnp.clip(gx, -1.0, w).astype(jnp.int32)
    gy = jnp.clip(gy, -1.0, h).astype(jnp.int32)
    ix, iy = jnp.where(use_fixed, fx, gx), jnp.where(use_fixed, fy, gy)
    inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
    return jnp.clip(iy, 0, h - 1) * w + jnp.clip(ix, 0, w - 1), inside


def split_coefficient(c: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A float32 ``c`` as its top 12 significant bits and the rest (``c_hi + c_lo == c``,
    exactly): a product of either part with a whole number below 2**12 is exact."""
    bits = jax.lax.bitcast_convert_type(c, jnp.uint32)
    c_hi = jax.lax.bitcast_convert_type(bits & jnp.uint32(0xFFFFF000), _F32)
    return c_hi, c - c_hi  # exact: the masked-off bits


def split_products(c_hi, c_lo, n_hi, n_lo) -> tuple[jax.Array, jax.Array]:
    """``c * n`` for a float32 scalar ``c = c_hi + c_lo`` (:func:`split_coefficient`) and whole
    numbers ``n = n_hi + n_lo`` (below 2**15; ``n_lo = n mod 256``, both float32) as an int32
    whole part and a float32 fraction, without rounding the product: each partial product is
    exact in float32 (and stays exact if a compiler fuses it into a multiply-add)."""
    whole = jnp.zeros(jnp.shape(n_hi), jnp.int32)
    frac = jnp.zeros(jnp.shape(n_hi), _F32)
    for p in (c_hi * n_hi, c_hi * n_lo, c_lo * n_hi, c_lo * n_lo):
        fl = jnp.floor(p)
        whole = whole + fl.astype(jnp.int32)
        frac = frac + (p - fl)
    return whole, frac


def pil_coordinate(x_part, y_part, c0, size: int):
    """One source coordinate of PIL's bilinear sampling, ``u = cx (x + 0.5) + cy (y + 0.5) + c0
    - 0.5``, from :func:`split_products` of its column term (``x_part``) and row term
    (``y_part``), broadcast together: ``(floor(u), u - floor(u), inside)``, the whole part
    exactly and the fraction to about 1e-7 pixel (PIL computes it in float64; a float32 sum of
    the terms would be off by up to ``ulp(size)``), and whether ``u + 0.5`` lies in ``[0,
    size)``."""
    (xi, xf), (yi, yf) = x_part, y_part
    ci = jnp.floor(c0)
    whole = yi + xi + ci.astype(jnp.int32)
    frac = (yf + xf) + ((c0 - ci) - 0.5)
    carry = jnp.floor(frac)
    whole = whole + carry.astype(jnp.int32)
    frac = frac - carry
    lo = (whole >= 0) | ((whole == -1) & (frac >= 0.5))  # u + 0.5 >= 0
    hi = (whole < size - 1) | ((whole == size - 1) & (frac < 0.5))  # u + 0.5 < size
    return whole, frac, lo & hi


def pil_bilinear_taps(ix: jax.Array, iy: jax.Array, h: int, w: int) -> tuple[jax.Array, ...]:
    """The pixel indices of PIL's four bilinear neighbours of the whole source coordinates
    ``ix``, ``iy`` (int32), clamped to the image (``XCLIP``/``YCLIP``): north-west, north-east,
    south-west, south-east."""
    x0, y0 = ix.astype(_F32), iy.astype(_F32)
    c0 = jnp.clip(x0, 0, w - 1).astype(jnp.int32)
    c1 = jnp.clip(x0 + 1.0, 0, w - 1).astype(jnp.int32)
    r0 = jnp.clip(y0, 0, h - 1).astype(jnp.int32) * w
    r1 = jnp.clip(y0 + 1.0, 0, h - 1).astype(jnp.int32) * w
    return r0 + c0, r0 + c1, r1 + c0, r1 + c1


def pil_lerp(values, fx, fy):
    """PIL's bilinear blend (``BILINEAR(v, a, b, d)``) of the four float32 neighbour values of
    :func:`pil_bilinear_taps` by the fractions ``fx``, ``fy``: along the rows, then down."""
    nw, ne, sw, se = values
    top = nw + (ne - nw) * fx
    bottom = sw + (se - sw) * fx
    return top + (bottom - top) * fy


def pil_truncate(value):
    """PIL's ``(UINT8)v`` of a bilinear uint8 value: floored and clamped, float32."""
    return jnp.clip(jnp.floor(value), 0.0, 255.0)


def _pil_source(cx: jax.Array, cy: jax.Array, c0: jax.Array, h: int, w: int, size: int):
    """:func:`pil_coordinate` at every output pixel of an ``h`` x ``w`` image."""
    nx = 2.0 * jnp.arange(w, dtype=_F32) + 1.0  # x + 0.5 = n / 2
    ny = 2.0 * jnp.arange(h, dtype=_F32) + 1.0

    def part(c, n):
        n_lo = jnp.mod(n, 256.0)
        return split_products(*split_coefficient(c * 0.5), n - n_lo, n_lo)

    (xi, xf), (yi, yf) = part(cx, nx), part(cy, ny)
    return pil_coordinate((xi[None, :], xf[None, :]), (yi[:, None], yf[:, None]),
                          jnp.asarray(c0, _F32), size)


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
        fixed, use_fixed = fixed_affine(a, h, w)
        index, inside = pil_nearest(a, fixed, use_fixed, jnp.arange(h, dtype=jnp.int32)[:, None],
                                    jnp.arange(w, dtype=jnp.int32)[None, :], h, w)
        outside = to_dtype(outside, image.dtype, rounding="round")
        return jnp.where(inside[..., None], flat[index], outside)
    if resample != "bilinear":
        raise ValueError(f"warp_affine_pil: resample must be 'nearest' or 'bilinear', "
                         f"got {resample!r}")
    ix, fx, inside_x = _pil_source(a[0], a[1], a[2], h, w, w)
    iy, fy, inside_y = _pil_source(a[3], a[4], a[5], h, w, h)
    inside = inside_x & inside_y
    taps = pil_bilinear_taps(ix, iy, h, w)
    value = pil_lerp([flat[t].astype(_F32) for t in taps], fx[..., None], fy[..., None])
    if is_int(image.dtype):
        value = pil_truncate(value)
        outside = jnp.clip(jnp.round(outside), 0.0, 255.0)
    return jnp.where(inside[..., None], value, outside).astype(image.dtype)
