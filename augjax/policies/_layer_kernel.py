"""A policy layer's pixel work as Pallas (Triton) kernels: each image computes only its own op.

Under ``vmap`` an XLA program cannot branch per sample, so a layer either computes every family
for every image and selects, or gathers each family's images into a sub-batch of static size
(:mod:`augjax.policies._compact`), which costs gathers, scatters back and a conditional whose
predicate the host reads. A Pallas program works on one tile of one image and branches on that
image's choice: one pass over the batch writes every image's output.

Two kernels, both per image (``vmap`` adds the batch to the grid), over tiles of ``block``
pixels read straight from the interleaved uint8 ``(H, W, C)`` image (one strided load per
channel):

- :func:`~augjax.kernels.histogram_pallas.stats_kernel` (equalize's histogram kernel): the
  statistics the tone ops read (equalize's histogram, autocontrast's range, contrast's gray
  sum), each only for the images whose op reads it; the other images' programs return at once.
- :func:`layer_kernel`: per image one of

  - ``KEEP``: a copy (identity, not applied, or an op computed elsewhere);
  - ``TONE``: a per-channel 256-entry table, looked up;
  - ``AFFINE``: torchvision's or PIL's warp (:mod:`augjax.policies._layer_warps`);
  - ``BLEND``: the gray blend (saturation) or sharpness's smoothed copy and formula.

The arithmetic is the XLA forms' own functions on the tile's values (the gray, the blend,
sharpness's :func:`augjax.kernels.enhance.sharpen` on a window read here, the warps'; the
divisions are done by XLA before the kernel: Triton's are not correctly rounded), so the
images are those of the ops alone;
``tests/compose/test_layer_kernel.py`` checks it interpreted on a CPU, and on a GPU against
the XLA layer.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from augjax.kernels import histogram_pallas
from augjax.kernels.pallas import (
    AVAILABLE,
    call,
    gather,
    pl_triton,
    planes,
    round_half_even,
    store_planes,
    tile,
    tile_start,
)
from augjax.kernels.enhance import SMOOTH, sharpen
from augjax.kernels.pixels import mix, planes_gray, to_dtype
from augjax.policies._layer_warps import warp_pil, warp_torchvision

__all__ = ["AFFINE", "AVAILABLE", "BLEND", "KEEP", "TONE", "histogram_pallas", "layer_kernel"]

#: The per-image op codes of :func:`layer_kernel`.
KEEP, TONE, AFFINE, BLEND = range(4)
#: Pixels per program. H200, B=256, RandAugment: tiles of 512 / 1024 / 2048 pixels with 4
#: warps 0.79 / 0.49 / 0.54 ms; 1024 with 8 warps 0.59.
BLOCK = 1024
#: Warps per program.
NUM_WARPS = 4
#: The per-image float parameters of :func:`layer_kernel`: the warp's 6 coefficients, the
#: blend factor and kind, and for PIL's bilinear warp its 4 split coefficients (8 values).
PARAMS = 16
#: The per-image int32 parameters: PIL's fixed-point affine data (6), whether PIL uses it,
#: the exact-path code.
IPARAMS = 8


# --- the layer --------------------------------------------------------------------------------

def _window(x_ref, i, j, k, *, h, w, c):
    """Channel ``k``'s 3x3 window of the tile's pixels (rows ``i``, columns ``j``) in row
    order, read zero outside the image (:func:`augjax.kernels.enhance.smoothed`'s
    ``window``)."""
    window = []
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            ii, jj = i + di, j + dj
            ok = (ii >= 0) & (ii <= h - 1) & (jj >= 0) & (jj <= w - 1)
            src = (jnp.clip(ii, 0, h - 1) * w + jnp.clip(jj, 0, w - 1)) * c + k
            window.append(pl_triton.load(x_ref.at[src], mask=ok, other=0).astype(jnp.float32))
    return window


def _blend(x_ref, par, planes, p, *, h, w, c):
    """``augjax.policies._families._blend`` on uint8 for the gray and smooth kinds."""
    x = [v.astype(jnp.float32) for v in planes]
    f = par[6]
    kind = par[7]

    def gray(_):
        d = planes_gray(x, jnp.uint8)
        return tuple(mix(xk, d, f) for xk in x)

    def sharp(_):
        if h <= 2 or w <= 2:  # sharpness leaves images without an inside unchanged
            return tuple(x)
        i = p // w
        j = p - i * w
        border = (i == 0) | (i == h - 1) | (j == 0) | (j == w - 1)
        return tuple(sharpen(xk, _window(x_ref, i, j, k, h=h, w=w, c=c), border, f, jnp.uint8,
                             round_half_even) for k, xk in enumerate(x))

    v = lax.cond(kind == SMOOTH, sharp, gray, None)
    return tuple(to_dtype(vk, jnp.uint8) for vk in v)


def _layer_kernel(code_ref, par_ref, ipar_ref, lut_ref, fill_ref, x_ref, o_ref, *, h, w, c,
                  block, interpolation, fill, convention, exact):
    pixels = h * w
    start = tile_start(pixels, block)
    p = start + jnp.arange(block, dtype=jnp.int32)
    par = [par_ref[k] for k in range(PARAMS)]

    def keep():
        return tuple(planes(x_ref, start, block, c))

    def tone():
        return tuple(gather(lut_ref, v.astype(jnp.int32) * c + k).astype(jnp.uint8)
                     for k, v in enumerate(planes(x_ref, start, block, c)))

    def affine():
        if convention == "pil":
            ipar = [ipar_ref[k] for k in range(IPARAMS)]
            return warp_pil(x_ref, par, ipar, fill_ref, p, h=h, w=w, c=c,
                             interpolation=interpolation, fill=fill, exact=exact)
        return warp_torchvision(x_ref, par, fill_ref, p, h=h, w=w, c=c,
                                 interpolation=interpolation, fill=fill)

    def blend():
        return _blend(x_ref, par, planes(x_ref, start, block, c), p, h=h, w=w, c=c)

    store_planes(o_ref, start, block, lax.switch(code_ref[0], (keep, tone, affine, blend)))


def layer_kernel(image: jax.Array, code: jax.Array, par: jax.Array, ipar: jax.Array,
                 lut: jax.Array, fill: jax.Array | None, interpolation: str,
                 convention: str = "torchvision", exact: bool = False,
                 interpret: bool = False) -> jax.Array:
    """One policy layer on one uint8 ``(H, W, C)`` image.

    Args:
        image: the image.
        code: int32, ``KEEP``, ``TONE``, ``AFFINE`` or ``BLEND``.
        par: ``(PARAMS,)`` float32: the warp's coefficients (torchvision: ``rx`` and ``ry``,
            the inverse matrix's rows divided by ``W / 2`` and ``H / 2``; PIL: its affine
            data), the blend factor and kind (``GRAY`` or ``SMOOTH`` of
            :mod:`augjax.kernels.enhance`), PIL's split coefficients
            (:func:`augjax.policies._layer_warps.warp_pil`).
        ipar: ``(IPARAMS,)`` int32: PIL's fixed-point data, its use, the exact-path code.
        lut: ``(256, C)`` int32 table (``TONE``).
        fill: the warp's ``(C,)`` float32 fill in uint8 levels (``check_fill``), or None
            (zeros).
        interpolation: the warp's, ``"nearest"`` or ``"bilinear"`` (static).
        convention: the warp's, ``"torchvision"`` or ``"pil"`` (static).
        exact: whether the warp has exact paths (PIL rotate; static).
        interpret: run with Pallas' interpreter (CPU, tests).
    """
    h, w, c = image.shape
    pixels = h * w
    if pixels == 0:
        return image
    block = tile(pixels, BLOCK)
    kernel = functools.partial(_layer_kernel, h=h, w=w, c=c, block=block,
                               interpolation=interpolation, fill=fill is not None,
                               convention=convention, exact=exact)
    fill_arg = jnp.zeros((c,), jnp.float32) if fill is None else fill.astype(jnp.float32)
    out = call(kernel, jax.ShapeDtypeStruct((pixels * c,), image.dtype), (pl.cdiv(pixels, block),),
               (jnp.reshape(code, (1,)).astype(jnp.int32), par.astype(jnp.float32),
                ipar.astype(jnp.int32), lut.reshape(256 * c).astype(jnp.int32), fill_arg,
                image.reshape(pixels * c)), num_warps=NUM_WARPS, interpret=interpret)
    return out.reshape(h, w, c)
