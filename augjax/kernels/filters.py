"""Padding and linear filtering of one HWC image: reflect-101 and edge padding, 2D and separable
cross-correlation, torchvision's 1D Gaussian kernel.

Borders are reflect-101 (``dcb|abcd|cba``: torch ``pad(mode="reflect")``, scipy
``mode="mirror"``, OpenCV ``BORDER_REFLECT_101``) unless a function says otherwise; pads may be
larger than the image (the reflection repeats). Pad widths and kernel sizes are static; kernel
values (a Gaussian's sigma, a motion line's angle) may be traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "reflect_index",
    "pad_reflect",
    "pad_edge",
    "correlate",
    "correlate_separable",
    "gaussian_kernel1d",
]


def reflect_index(index, n: int):
    """Maps any integer index into ``[0, n)`` by reflection without repeating the edge
    (reflect-101), for pads of any size (the pattern repeats with period ``2n - 2``). NumPy in,
    NumPy out; JAX arrays give JAX arrays."""
    if n == 1:
        return index * 0
    period = 2 * n - 2
    m = index % period
    return np.minimum(m, period - m) if isinstance(m, np.ndarray) else jnp.minimum(m, period - m)


def pad_reflect(x: jax.Array, ph: int, pw: int) -> jax.Array:
    """Pads an ``(H, W, C)`` image by ``ph`` rows and ``pw`` columns on each side, reflect-101."""
    h, w = x.shape[0], x.shape[1]
    rows = reflect_index(np.arange(-ph, h + ph), h)
    cols = reflect_index(np.arange(-pw, w + pw), w)
    return x[rows][:, cols]


def pad_edge(x: jax.Array, ph: int, pw: int) -> jax.Array:
    """Pads an ``(H, W, C)`` image by repeating its border pixels (OpenCV ``BORDER_REPLICATE``,
    scipy ``mode="nearest"``)."""
    h, w = x.shape[0], x.shape[1]
    rows = np.clip(np.arange(-ph, h + ph), 0, h - 1)
    cols = np.clip(np.arange(-pw, w + pw), 0, w - 1)
    return x[rows][:, cols]


def correlate(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """2D cross-correlation of a float ``(H, W, C)`` image with one ``(kh, kw)`` kernel (odd
    sizes) applied to every channel, reflect-101 borders, same-size output (torch ``conv2d``
    after ``pad(mode="reflect")``; scipy ``ndimage.correlate(mode="mirror")``)."""
    kh, kw = kernel.shape
    padded = pad_reflect(x, kh // 2, kw // 2)
    c = x.shape[-1]
    rhs = jnp.broadcast_to(jnp.asarray(kernel, jnp.float32)[:, :, None, None], (kh, kw, 1, c))
    out = jax.lax.conv_general_dilated(
        padded[None],
        rhs,
        window_strides=(1, 1),
        padding="VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=c,
        precision=jax.lax.Precision.HIGHEST,
    )
    return out[0]


def correlate_separable(x: jax.Array, k_rows: jax.Array, k_cols: jax.Array) -> jax.Array:
    """Separable correlation: ``k_cols`` along the width, then ``k_rows`` along the height
    (reflect-101 borders); :func:`correlate` with ``outer(k_rows, k_cols)`` up to rounding."""
    x = correlate(x, jnp.asarray(k_cols)[None, :])
    return correlate(x, jnp.asarray(k_rows)[:, None])


def gaussian_kernel1d(size: int, sigma) -> jax.Array:
    """torchvision's 1D Gaussian (``_get_gaussian_kernel1d``): ``exp(-t^2 / (2 sigma^2))`` at
    ``t = -(size-1)/2 .. (size-1)/2``, normalised to sum 1; ``sigma`` may be traced."""
    t = jnp.arange(size, dtype=jnp.float32) - (size - 1) / 2.0
    logits = -((t / jnp.asarray(sigma, jnp.float32)) ** 2) / 2.0
    return jax.nn.softmax(logits)
