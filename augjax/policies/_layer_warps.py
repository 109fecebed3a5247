"""The warps of :mod:`augjax.policies._layer_kernel`, for one tile of pixels of one image.

Each follows its XLA form operation by operation, so that the pixels are the op's own:

- :func:`warp_torchvision`: :func:`augjax.kernels.warp.warp_affine`'s source coordinates, from
  the per-image grid coefficients, then ``sample`` (nearest or bilinear, zero padding or a
  fill) by :func:`augjax.kernels.sample_pallas.sample_pixels`;
- :func:`warp_pil`: :func:`augjax.kernels.warp_pil.warp_affine_pil` (PIL's fixed-point nearest
  picks, its clamped bilinear with split products, the fill outside), and
  :func:`augjax.catalog._warp_params.exact_paths` (``Image.rotate``'s copies and turns).

The per-image scalars they read (``par`` float32, ``ipar`` int32) are computed by XLA before
the kernel (:func:`augjax.policies._fused.warp_params`), as the XLA forms compute them.
"""

from __future__ import annotations

import jax.numpy as jnp

from augjax.catalog import EXACT_NONE, exact_source
from augjax.kernels.pallas import gather, round_half_even, to_uint8
from augjax.kernels.sample_pallas import sample_pixels

__all__ = ["warp_pil", "warp_torchvision"]


def _position(p, w: int):
    i = p // w
    return i, p - i * w


def warp_torchvision(x_ref, par, fill_ref, p, *, h, w, c, interpolation, fill):
    """``warp_affine`` + ``sample`` for the tile's pixels ``p``; ``par[0:6]`` the grid
    coefficients ``rx``, ``ry`` (the inverse matrix's rows divided by ``W / 2``, ``H / 2``)."""
    i, j = _position(p, w)
    xs = j.astype(jnp.float32) - (w - 1) / 2.0
    ys = i.astype(jnp.float32) - (h - 1) / 2.0
    gx = xs * par[0] + ys * par[1] + par[2]
    gy = xs * par[3] + ys * par[4] + par[5]
    sx = (gx + 1.0) * (w / 2.0) - 0.5
    sy = (gy + 1.0) * (h / 2.0) - 0.5
    return sample_pixels(x_ref, fill_ref, sx, sy, h=h, w=w, c=c, interpolation=interpolation,
                         fill=fill)


def _split_products(c_hi, c_lo, index):
    """``warp_pil._split_products`` of ``c = c_hi + c_lo`` and ``n = 2 index + 1``."""
    n = 2 * index + 1
    n_lo = (n & 255).astype(jnp.float32)
    n_hi = n.astype(jnp.float32) - n_lo
    whole = jnp.zeros(index.shape, jnp.int32)
    frac = jnp.zeros(index.shape, jnp.float32)
    for prod in (c_hi * n_hi, c_hi * n_lo, c_lo * n_hi, c_lo * n_lo):
        fl = jnp.floor(prod)
        whole = whole + fl.astype(jnp.int32)
        frac = frac + (prod - fl)
    return whole, frac


def _pil_source(split_x, split_y, c0, i, j, size: int):
    """``warp_pil._pil_source``: ``(floor(u), frac(u), inside)`` at the pixels ``(i, j)``;
    ``split_x`` (``split_y``) the halved column (row) coefficient's two parts."""
    xi, xf = _split_products(*split_x, j)
    yi, yf = _split_products(*split_y, i)
    ci = jnp.floor(c0)
    whole = yi + xi + ci.astype(jnp.int32)
    frac = (yf + xf) + ((c0 - ci) - 0.5)
    carry = jnp.floor(frac)
    whole = whole + carry.astype(jnp.int32)
    frac = frac - carry
    lo = (whole >= 0) | ((whole == -1) & (frac >= 0.5))
    hi = (whole < size - 1) | ((whole == size - 1) & (frac < 0.5))
    return whole, frac, lo & hi


def _pil_warp(x_ref, par, ipar, fill_ref, i, j, *, h, w, c, interpolation, fill):
    a = par[:6]
    if interpolation == "nearest":
        fx = jnp.right_shift(ipar[2] + i * ipar[1] + j * ipar[0], 16)
        fy = jnp.right_shift(ipar[5] + i * ipar[4] + j * ipar[3], 16)
        xf = i.astype(jnp.float32) + 0.5
        xc = j.astype(jnp.float32) + 0.5
        gx = jnp.floor((a[2] + a[1] * xf) + a[0] * xc)
        gy = jnp.floor((a[5] + a[4] * xf) + a[3] * xc)
        gx = jnp.clip(gx, -1.0, w).astype(jnp.int32)
        gy = jnp.clip(gy, -1.0, h).astype(jnp.int32)
        fixed = ipar[6] != 0
        ix, iy = jnp.where(fixed, fx, gx), jnp.where(fixed, fy, gy)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        src = (jnp.clip(iy, 0, h - 1) * w + jnp.clip(ix, 0, w - 1)) * c
        out = []
        for k in range(c):
            outside = jnp.uint8(0) if not fill else to_uint8(fill_ref[k])
            out.append(jnp.where(inside, gather(x_ref, src + k), outside))
        return tuple(out)
    ix, fx, inside_x = _pil_source((par[8], par[9]), (par[10], par[11]), a[2], i, j, w)
    iy, fy, inside_y = _pil_source((par[12], par[13]), (par[14], par[15]), a[5], i, j, h)
    inside = inside_x & inside_y
    x0, y0 = ix.astype(jnp.float32), iy.astype(jnp.float32)
    c0 = jnp.clip(x0, 0, w - 1).astype(jnp.int32)
    c1 = jnp.clip(x0 + 1.0, 0, w - 1).astype(jnp.int32)
    r0 = jnp.clip(y0, 0, h - 1).astype(jnp.int32) * w
    r1 = jnp.clip(y0 + 1.0, 0, h - 1).astype(jnp.int32) * w
    out = []
    for k in range(c):
        def row(r, k=k):
            left = gather(x_ref, (r + c0) * c + k).astype(jnp.float32)
            right = gather(x_ref, (r + c1) * c + k).astype(jnp.float32)
            return left + (right - left) * fx

        top, bottom = row(r0), row(r1)
        value = jnp.clip(jnp.floor(top + (bottom - top) * fy), 0.0, 255.0)
        outside = jnp.float32(0.0) if not fill else jnp.clip(round_half_even(fill_ref[k]),
                                                             0.0, 255.0)
        out.append(jnp.where(inside, value, outside).astype(jnp.uint8))
    return tuple(out)


def warp_pil(x_ref, par, ipar, fill_ref, p, *, h, w, c, interpolation, fill, exact):
    """``warp_affine_pil`` (then ``exact_paths`` where ``exact``) for the tile's pixels ``p``:
    ``par[0:6]`` PIL's affine data, ``par[8:16]`` the halved coefficients ``a0, a1, a3, a4``
    each as ``split_coefficient``'s two parts; ``ipar[0:6]`` the fixed-point data, ``ipar[6]``
    whether PIL takes it, ``ipar[7]`` the exact-path code."""
    i, j = _position(p, w)
    warped = _pil_warp(x_ref, par, ipar, fill_ref, i, j, h=h, w=w, c=c,
                       interpolation=interpolation, fill=fill)
    if not exact:
        return warped
    code = ipar[7]
    rows, cols = exact_source(i, j, code, h, w)
    src = (rows * w + cols) * c
    return tuple(jnp.where(code == EXACT_NONE, v, gather(x_ref, src + k))
                 for k, v in enumerate(warped))
