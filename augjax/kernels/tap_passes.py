"""A separable resampling pass: a resize, a crop resized and a canvas read (zoom out, scale
jitter's pad) sum a few weighted taps per output along each axis (:func:`taps_pass`,
:func:`canvas_pass`), on a CPU and a GPU each tap a gather of rows or columns. A TPU gathers
slowly and multiplies matrices fast (its MXU): there the pass is ``M @ x`` along the axis, ``M[o, i]`` the sum of the weights of output ``o``'s taps that read
input ``i`` (a tap read twice, at a clamped edge, adds its weights). At ``Precision.HIGHEST``
(float32 products, :mod:`augjax.kernels.products`) the values are the taps' sums up to float32
rounding in another order: uint8 outputs within one level of the CPU's (the TPU parity test).
Other platforms keep the taps (their bits do not change).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.platform import platform_dependent
from augjax.kernels.products import HIGHEST

__all__ = ["canvas_pass", "canvas_product", "taps_gathered", "canvas_gathered", "matrix_pass",
           "taps_matrix", "taps_pass", "taps_product"]


def taps_matrix(index: jax.Array, weight: jax.Array, n: int) -> jax.Array:
    """``(O, n)`` float32: ``M[o, i] = sum_k weight[o, k] * (index[o, k] == i)``; taps outside
    ``0 .. n - 1`` weigh nothing. ``O * K * n`` compares: cheap for the few taps of a resize
    (a random resized crop 1.3 ms a B=256 batch on a TPU v5e, 32.8 with gathered taps), dear
    for a strong shrink's many (scale jitter's: 48.8 ms; built from the taps' run of
    consecutive indices instead, a gather of ``O * n`` weights, the crop took 10.8 ms)."""
    hit = index[:, :, None] == jnp.arange(n, dtype=index.dtype)
    return jnp.sum(jnp.where(hit, weight[:, :, None].astype(jnp.float32), 0.0), axis=1)


def taps_product(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int) -> jax.Array:
    """``out[o] = sum_k weight[o, k] * x[index[o, k]]`` along ``axis``, as one matrix product
    (float32 out)."""
    return matrix_pass(x, taps_matrix(index, weight, x.shape[axis]), axis)


def matrix_pass(x: jax.Array, m: jax.Array, axis: int) -> jax.Array:
    """``out[o] = sum_i m[o, i] * x[i]`` along ``axis``: one matrix product at
    ``Precision.HIGHEST`` (float32 out; :func:`taps_product`'s, and any pass given its
    ``(O, n)`` matrix, such as augjax-contrib pixelate's block sums)."""
    out = jnp.tensordot(m, x.astype(jnp.float32), axes=((1,), (axis,)), precision=HIGHEST)
    return jnp.moveaxis(out, 0, axis)


def canvas_product(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int,
                   fill: jax.Array) -> jax.Array:
    """:func:`taps_product` where taps outside ``x`` along ``axis`` read ``fill`` (broadcast
    against ``x`` with ``axis`` of length 1)."""
    n = x.shape[axis]
    outside = (index < 0) | (index >= n)
    off = jnp.sum(jnp.where(outside, weight, 0.0), axis=1).astype(jnp.float32)
    shape = [1] * x.ndim
    shape[axis] = index.shape[0]
    return taps_product(x, index, weight, axis) + off.reshape(shape) * fill


def taps_pass(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int) -> jax.Array:
    """``out[o] = sum_k weight[o, k] * x[index[o, k]]`` along ``axis`` of float ``x``: a
    gather per tap; on a TPU one matrix product (:func:`taps_product`)."""
    return platform_dependent(x, index, weight, tpu=lambda *a: taps_product(*a, axis),
                              default=lambda *a: taps_gathered(*a, axis))


def taps_gathered(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int) -> jax.Array:
    """:func:`taps_pass` on a CPU or GPU: a gather per tap, summed in tap order."""
    out = None
    for k in range(index.shape[1]):
        shape = [1] * x.ndim
        shape[axis] = index.shape[0]
        term = jnp.take(x, index[:, k], axis=axis) * weight[:, k].reshape(shape)
        out = term if out is None else out + term
    return out


def canvas_pass(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int,
                fill: jax.Array) -> jax.Array:
    """:func:`taps_pass` where ``index`` may fall off ``x`` along ``axis`` (onto the canvas
    around it): those taps read ``fill`` (broadcast against ``x`` with ``axis`` of length 1)."""
    return platform_dependent(x, index, weight, fill,
                              tpu=lambda *a: canvas_product(*a[:3], axis, a[3]),
                              default=lambda *a: canvas_gathered(*a[:3], axis, a[3]))


def canvas_gathered(x: jax.Array, index: jax.Array, weight: jax.Array, axis: int,
                    fill: jax.Array) -> jax.Array:
    """:func:`canvas_pass` on a CPU or GPU: a gather per tap, ``fill`` off ``x``."""
    n = x.shape[axis]
    out = None
    for k in range(index.shape[1]):
        shape = [1] * x.ndim
        shape[axis] = index.shape[0]
        src = index[:, k]
        inside = ((src >= 0) & (src < n)).reshape(shape)
        term = jnp.where(inside, jnp.take(x, jnp.clip(src, 0, n - 1), axis=axis), fill)
        term = term * weight[:, k].reshape(shape)
        out = term if out is None else out + term
    return out
