"""Helpers shared by the contrib kernels: pixel ranges, parameter draws, padding, filtering and
sampling. Everything here is plain JAX on one HWC image; augjax vmaps the kernels.

The pack reaches augjax only through its public authoring API (``augjax.op``, ``augjax.Param``,
``augjax.errors``), so these helpers do not borrow augjax's private pixel utilities.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "is_int",
    "peak",
    "to_float",
    "to_dtype",
    "uniforms",
    "span",
    "span_int",
    "uniform",
    "normal",
    "poisson",
    "pair_xy",
    "int_pair",
    "odd_int",
    "odd_size",
    "reflect_index",
    "pad_reflect",
    "pad_edge",
    "pixel_grid",
    "RADIANS",
    "correlate",
    "correlate_separable",
    "gaussian_kernel1d",
    "sample_nearest",
    "sample_bilinear",
]


def is_int(dtype) -> bool:
    """Whether images of this dtype hold integer levels (uint8)."""
    return jnp.issubdtype(dtype, jnp.integer)


def peak(dtype) -> float:
    """The largest pixel value of the dtype's range: 255 for uint8, 1 for float images."""
    return 255.0 if is_int(dtype) else 1.0


def to_float(image: jax.Array) -> jax.Array:
    """The image as float32, values unchanged (uint8 stays on the 0..255 scale)."""
    return image.astype(jnp.float32)


def to_dtype(x: jax.Array, dtype, *, clip: bool = True) -> jax.Array:
    """Float32 ``x`` back to ``dtype``: uint8 is rounded half to even and clamped to 0..255;
    float images are clamped to [0, 1] when ``clip``."""
    if is_int(dtype):
        return jnp.clip(jnp.round(x), 0.0, 255.0).astype(dtype)
    return (jnp.clip(x, 0.0, 1.0) if clip else x).astype(dtype)


def uniforms(key: jax.Array, n: int) -> jax.Array:
    """The ``n`` scalar draws of one sample, ``jax.random.uniform(key, (n,))``: ops draw all
    their scalar parameters at once (one generator call compiles much faster than ``n``)."""
    return jax.random.uniform(key, (n,), jnp.float32)


def span(u: jax.Array, value: float | tuple[float, float]) -> jax.Array:
    """A float32 parameter from a uniform draw ``u``: ``value`` itself, or
    ``low + u * (high - low)`` for a range ``(low, high)``."""
    if isinstance(value, tuple):
        return jnp.float32(value[0]) + u * jnp.float32(value[1] - value[0])
    return jnp.float32(value)


def span_int(u: jax.Array, value: int | tuple[int, int]) -> jax.Array:
    """An int32 parameter from a uniform draw ``u``: ``value`` itself, or
    ``min(low + floor(u * (high - low + 1)), high)`` for an inclusive range ``(low, high)``."""
    if isinstance(value, tuple):
        lo, hi = value
        k = jnp.floor(u * jnp.float32(hi - lo + 1)).astype(jnp.int32)
        return jnp.minimum(jnp.int32(lo) + k, jnp.int32(hi))
    return jnp.int32(value)


def uniform(key: jax.Array, shape: tuple[int, ...], low: float = 0.0,
            high: float = 1.0) -> jax.Array:
    """``jax.random.uniform(key, shape, float32, low, high)``, drawn flat and reshaped: the same
    values (JAX's threefry counts over the flattened shape) at a fraction of the compile time."""
    size = int(np.prod(shape))
    return jax.random.uniform(key, (size,), jnp.float32, low, high).reshape(shape)


def normal(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """``jax.random.normal(key, shape, float32)``, drawn flat and reshaped (see :func:`uniform`)."""
    return jax.random.normal(key, (int(np.prod(shape)),), jnp.float32).reshape(shape)


def poisson(key: jax.Array, lam: jax.Array) -> jax.Array:
    """``jax.random.poisson(key, lam, lam.shape)``, drawn flat and reshaped (see
    :func:`uniform`)."""
    flat = lam.reshape(-1)
    return jax.random.poisson(key, flat, flat.shape).reshape(lam.shape)


def int_pair(value: float | Sequence[float]) -> int | tuple[int, int]:
    """Param normaliser: an integral number, or a pair of them, as int / tuple of ints."""
    if isinstance(value, tuple):
        lo, hi = value
        if not (float(lo).is_integer() and float(hi).is_integer()):
            raise ValueError("the bounds must be integers")
        return (int(lo), int(hi))
    if not float(value).is_integer():
        raise ValueError("not an integer")
    return int(value)


def pair_xy(value: tuple[float, ...]) -> tuple[float, float]:
    """Param normaliser: one number or ``(x, y)``, returned as ``(x, y)`` (not a range)."""
    if len(value) not in (1, 2):
        raise ValueError("expected one number or a pair (x, y)")
    return (value[0], value[-1])


def odd_int(value: int) -> int:
    """Param normaliser: an odd integer."""
    if value % 2 == 0:
        raise ValueError("must be odd")
    return value


def odd_size(value: tuple[int, int]) -> tuple[int, int]:
    """Param normaliser for kernel sizes: both entries odd and positive."""
    if any(v < 1 or v % 2 == 0 for v in value):
        raise ValueError("kernel sizes must be odd and positive")
    return value


def reflect_index(index: np.ndarray | jax.Array, n: int):
    """Maps any integer index into ``[0, n)`` by reflection without repeating the edge
    (``dcb|abcd|cba``: torch ``reflect``, scipy ``mirror``, OpenCV ``BORDER_REFLECT_101``).
    Works for pads of any size (the pattern repeats with period ``2n - 2``)."""
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
    """Pads an ``(H, W, C)`` image by repeating its border pixels (OpenCV BORDER_REPLICATE)."""
    h, w = x.shape[0], x.shape[1]
    rows = np.clip(np.arange(-ph, h + ph), 0, h - 1)
    cols = np.clip(np.arange(-pw, w + pw), 0, w - 1)
    return x[rows][:, cols]


def correlate(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """2D cross-correlation of a float ``(H, W, C)`` image with one ``(kh, kw)`` kernel per
    channel, reflect-101 borders, same-size output (torch ``conv2d`` after ``pad(reflect)``)."""
    kh, kw = kernel.shape
    padded = pad_reflect(x, kh // 2, kw // 2)
    c = x.shape[-1]
    rhs = jnp.broadcast_to(kernel.astype(jnp.float32)[:, :, None, None], (kh, kw, 1, c))
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
    (reflect-101 borders); equal to :func:`correlate` with ``outer(k_rows, k_cols)``."""
    x = correlate(x, k_cols[None, :])
    return correlate(x, k_rows[:, None])


def gaussian_kernel1d(size: int, sigma: jax.Array) -> jax.Array:
    """torchvision's 1D Gaussian: ``exp(-t^2 / (2 sigma^2))`` at ``t = -(size-1)/2 .. (size-1)/2``,
    normalised to sum 1."""
    t = jnp.arange(size, dtype=jnp.float32) - (size - 1) / 2.0
    logits = -((t / sigma) ** 2) / 2.0
    return jax.nn.softmax(logits)


def sample_nearest(img: jax.Array, ix: jax.Array, iy: jax.Array, fill: float) -> jax.Array:
    """Pixel ``(iy, ix)`` (integer arrays) of an ``(H, W, C)`` image, ``fill`` outside."""
    h, w = img.shape[0], img.shape[1]
    inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
    vals = img[jnp.clip(iy, 0, h - 1), jnp.clip(ix, 0, w - 1)]
    return jnp.where(inside[..., None], vals, jnp.float32(fill))


def sample_bilinear(img: jax.Array, x: jax.Array, y: jax.Array, fill: float) -> jax.Array:
    """Bilinear sample of a float ``(H, W, C)`` image at float coordinates where pixel ``(i, j)``
    sits at ``x = j, y = i``; each of the four taps outside the image reads ``fill``."""
    x0 = jnp.floor(x)
    y0 = jnp.floor(y)
    fx = (x - x0)[..., None]
    fy = (y - y0)[..., None]
    x0 = x0.astype(jnp.int32)
    y0 = y0.astype(jnp.int32)
    top = sample_nearest(img, x0, y0, fill) * (1 - fx) + sample_nearest(img, x0 + 1, y0, fill) * fx
    bot = (sample_nearest(img, x0, y0 + 1, fill) * (1 - fx)
           + sample_nearest(img, x0 + 1, y0 + 1, fill) * fx)
    return top * (1 - fy) + bot * fy


def pixel_grid(h: int, w: int) -> tuple[jax.Array, jax.Array]:
    """Float32 column and row indices ``(x, y)`` of every pixel, each ``(H, W)``."""
    y, x = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32),
                        indexing="ij")
    return x, y


RADIANS = math.pi / 180.0
