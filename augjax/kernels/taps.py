"""Cross-correlation of one HWC image with a 2D kernel whose nonzero cells are few (a motion
blur's line: at most three cells per row or column of the kernel), reflect-101 borders.

- :func:`correlate_taps` reads every cell, as shifted views of the padded image summed in
  row-major order (XLA fuses the views into one loop; on a CPU 17x faster than XLA's grouped
  convolution with a per-image kernel, and 1.3x faster on an H200).
- :func:`nonzero_taps` lists a kernel's nonzero cells in the same order.
- :func:`filter_taps` is the filter an op calls: the correlation in the image's dtype (uint8
  rounded half to even). On CUDA a uint8 image goes through the Pallas kernel of
  :mod:`augjax.kernels._taps_pallas`, which reads only the nonzero cells; elsewhere, for float
  images and in programs partitioned over several devices, :func:`correlate_taps`.

The two forms add the same products in the same order (the zero cells :func:`correlate_taps`
adds are exact zeros); compilers may still contract a product and its sum differently, so a
uint8 value can differ by one level where the sum lies within rounding of a half.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.partition import partitioned
from augjax.kernels.platform import platform_dependent
from augjax.kernels.filters import pad_reflect
from augjax.kernels.pixels import is_int, to_dtype

__all__ = ["correlate_taps", "filter_taps", "nonzero_taps"]


def correlate_taps(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """``sum_{u, v} kernel[u, v] * padded[i + u, j + v]`` for an ``(H, W, C)`` image (any
    dtype; the products are float32) and a ``(kh, kw)`` kernel (odd sizes, values may be
    traced), reflect-101 borders, same-size float32 output (scipy ``ndimage.correlate`` with
    ``mode="mirror"``). Column shifts are taken on the ``(H, W * C)`` view.

    The same values as :func:`augjax.kernels.correlate` (one grouped convolution) up to
    rounding: faster for small kernels and per-image kernels under ``vmap`` (7x7 at B=16 on a
    CPU: 11 against 133 ms; 31x31: 1.2 against 1.8 s), but one view per cell, so a large
    kernel compiles slowly (63x63: 16 s on a CPU); for large fixed kernels use
    :func:`~augjax.kernels.correlate`."""
    kh, kw = kernel.shape
    h, w, c = x.shape
    padded = pad_reflect(x, kh // 2, kw // 2)
    flat = padded.reshape(h + kh - 1, (w + kw - 1) * c)
    kernel = jnp.asarray(kernel, jnp.float32)
    out = None
    for u in range(kh):
        rows = jax.lax.slice_in_dim(flat, u, u + h, axis=0)
        for v in range(kw):
            view = jax.lax.slice_in_dim(rows, v * c, (v + w) * c, axis=1)
            term = view.astype(jnp.float32) * kernel[u, v]
            out = term if out is None else out + term
    return out.reshape(h, w, c)


def nonzero_taps(kernel: jax.Array, max_taps: int):
    """A kernel's nonzero cells in row-major order: ``(count, dy, dx, weights)`` with ``count``
    an int32 scalar (at most ``max_taps``), ``dy``, ``dx`` ``(max_taps,)`` int32 offsets from
    the kernel's centre and ``weights`` ``(max_taps,)`` float32; entries past ``count`` are
    other cells of weight zero. The caller bounds the nonzero cells by ``max_taps``."""
    kh, kw = kernel.shape
    flat = jnp.asarray(kernel, jnp.float32).reshape(-1)
    order = jnp.argsort(flat == 0, stable=True)[:max_taps]
    count = jnp.minimum(jnp.sum(flat != 0), max_taps).astype(jnp.int32)
    dy = (order // kw - kh // 2).astype(jnp.int32)
    dx = (order % kw - kw // 2).astype(jnp.int32)
    return count, dy, dx, flat[order]


def filter_taps(image: jax.Array, kernel: jax.Array, max_taps: int) -> jax.Array:
    """:func:`correlate_taps` of ``image`` with ``kernel`` (at most ``max_taps`` nonzero
    cells), returned in the image's dtype (uint8 clamped and rounded half to even)."""

    def xla(x, k):
        return to_dtype(correlate_taps(x, k), x.dtype, rounding="round")

    if not is_int(image.dtype) or partitioned() or not _pallas_available():
        return xla(image, kernel)

    def pallas(x, k):
        from augjax.kernels._taps_pallas import taps_kernel

        return taps_kernel(x, *nonzero_taps(k, max_taps), reach=max(k.shape) // 2)

    return platform_dependent(image, kernel, cpu=xla, cuda=pallas, default=xla)


def _pallas_available() -> bool:
    from augjax.kernels._taps_pallas import AVAILABLE

    return AVAILABLE
