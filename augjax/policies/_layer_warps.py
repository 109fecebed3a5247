"""The warps of :mod:`augjax.policies._layer_kernel`, for one tile of pixels of one image.

Each calls its XLA form's per-pixel functions on the tile's pixels, so that the pixels are
the op's own:

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

from augjax.kernels.geometry import EXACT_NONE, exact_source
from augjax.kernels.grid_sample import affine_grid, centred, unnormalize
from augjax.kernels.pallas import gather, round_half_even
from augjax.kernels.sample_pallas import pick_pixels, sample_pixels
from augjax.kernels.warp_pil import (
    pil_bilinear_taps,
    pil_coordinate,
    pil_lerp,
    pil_nearest,
    pil_truncate,
    split_products,
)

__all__ = ["warp_pil", "warp_torchvision"]


def _position(p, w: int):
    i = p // w
    return i, p - i * w


def warp_torchvision(x_ref, par, fill_ref, p, *, h, w, c, interpolation, fill):
    """``warp_affine`` + ``sample`` for the tile's pixels ``p``; ``par[0:6]`` the grid
    coefficients ``rx``, ``ry`` (the inverse matrix's rows divided by ``W / 2``, ``H / 2``)."""
    i, j = _position(p, w)
    gx, gy = affine_grid(centred(j, w), centred(i, h), par[0:3], par[3:6])
    return sample_pixels(x_ref, fill_ref, unnormalize(gx, w), unnormalize(gy, h), h=h, w=w,
                         c=c, interpolation=interpolation, fill=fill)


def _part(c_hi, c_lo, index):
    """``split_products`` of ``c = c_hi + c_lo`` and ``n = 2 index + 1`` (``x + 0.5 = n / 2``)."""
    n = 2 * index + 1
    n_lo = (n & 255).astype(jnp.float32)
    return split_products(c_hi, c_lo, n.astype(jnp.float32) - n_lo, n_lo)


def _pil_warp(x_ref, par, ipar, fill_ref, i, j, *, h, w, c, interpolation, fill):
    a = par[:6]
    if interpolation == "nearest":
        return pick_pixels(x_ref, fill_ref, *pil_nearest(a, ipar[:6], ipar[6] != 0, i, j, h, w),
                           c=c, fill=fill)
    ix, fx, inside_x = pil_coordinate(_part(par[8], par[9], j), _part(par[10], par[11], i),
                                      a[2], w)
    iy, fy, inside_y = pil_coordinate(_part(par[12], par[13], j), _part(par[14], par[15], i),
                                      a[5], h)
    inside = inside_x & inside_y
    taps = pil_bilinear_taps(ix, iy, h, w)
    out = []
    for k in range(c):
        value = pil_truncate(pil_lerp([gather(x_ref, t * c + k).astype(jnp.float32)
                                       for t in taps], fx, fy))
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
