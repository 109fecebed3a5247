"""Pixel arithmetic shared by the catalog: value bounds, dtype-faithful rounding, grayscale.

Kernels compute in float32 and return the input dtype. For uint8, torchvision converts back to
uint8 after each adjustment by truncation (``tensor.to(torch.uint8)``); :func:`requantize` models
that exactly, so chains of adjustments match torchvision step by step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "bound",
    "invert_levels",
    "is_int",
    "mix_channels",
    "requantize",
    "to_dtype",
    "gray",
    "gray_planes",
    "blend_gray",
    "blend_planes",
    "blend",
    "mean_of_sum",
    "mix",
    "tap_sum",
    "planes_gray",
    "draw",
    "levels_to_scale",
    "to_unit",
    "from_unit",
]

#: ITU-R 601-2 luma weights, as torchvision and PIL use them.
LUMA = (0.2989, 0.587, 0.114)


def is_int(dtype) -> bool:
    """Whether images of this dtype hold integer levels (uint8)."""
    return jnp.issubdtype(dtype, jnp.integer)


def bound(dtype) -> float:
    """The largest pixel value: 255 for uint8, 1 for float images."""
    return 255.0 if is_int(dtype) else 1.0


def invert_levels(image: jax.Array) -> jax.Array:
    """Every level inverted in the image's own dtype: ``255 - x`` for uint8, ``1 - x`` for
    float images (PIL ``ImageOps.invert``)."""
    return jnp.asarray(bound(image.dtype), image.dtype) - image


def mix_channels(x: jax.Array, m: jax.Array, offset: jax.Array) -> jax.Array:
    """A 3x3 colour map of the float32 RGB image ``x`` (HWC): output channel ``i`` is
    ``m[i, 0] r + m[i, 1] g + m[i, 2] b + offset``, as multiply-adds (one elementwise pass, no
    einsum)."""
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    return jnp.stack([m[i, 0] * r + m[i, 1] * g + m[i, 2] * b + offset for i in range(3)], -1)


def requantize(x: jax.Array, dtype) -> jax.Array:
    """Clamps float ``x`` to the valid range and, for integer dtypes, truncates to whole levels
    (torchvision's ``clamp_(0, bound)`` then ``.to(uint8)``); stays float32."""
    x = jnp.clip(x, 0.0, bound(dtype))
    return jnp.floor(x) if is_int(dtype) else x


def to_dtype(x: jax.Array, dtype, *, rounding="floor") -> jax.Array:
    """Float32 ``x`` back to ``dtype``: clamped, and floored (``"floor"``) or rounded half to
    even (``"round"``, or a function that rounds so, where ``jnp.round`` does not lower) for
    uint8."""
    if not is_int(dtype):
        return x.astype(dtype)
    x = jnp.clip(x, 0.0, 255.0)
    if callable(rounding):
        return rounding(x).astype(dtype)
    x = jnp.floor(x) if rounding == "floor" else jnp.round(x)
    return x.astype(dtype)


def gray(x: jax.Array) -> jax.Array:
    """Luma of an ``(..., 3)`` float image, ``(...)``: 0.2989 R + 0.587 G + 0.114 B."""
    return gray_planes(x[..., 0], x[..., 1], x[..., 2])


def gray_planes(r: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    """:func:`gray` of an image given as its three channel planes."""
    return r * LUMA[0] + g * LUMA[1] + b * LUMA[2]


def blend_gray(r: jax.Array, g: jax.Array, b: jax.Array, dtype) -> jax.Array:
    """The grayscale torchvision blends saturation and contrast with: :func:`gray_planes`,
    floored to whole levels for integer dtypes."""
    y = gray_planes(r, g, b)
    return jnp.floor(y) if is_int(dtype) else y


def planes_gray(planes, dtype) -> jax.Array:
    """The gray torchvision blends contrast and saturation with, of an image given as its
    channel planes: :func:`blend_gray` of the first three, or a one-channel image's own plane."""
    if len(planes) == 1:  # torchvision: a one-channel image is its own grayscale
        return planes[0]
    return blend_gray(planes[0], planes[1], planes[2], dtype)


def mean_gray(g: jax.Array, dtype) -> jax.Array:
    """``jnp.mean`` of a blend gray ``g`` (:func:`blend_gray`, any shape) of an image of
    ``dtype``. An integer image's gray is whole levels: their sum is exact in int32, taken in
    rows of 32 (XLA's CPU float reduction of a fused gray is ~10x slower), then scaled by
    ``1 / size`` in float32 as ``jnp.mean`` does."""
    if is_int(dtype) and 0 < g.size and g.size % 32 == 0 and g.size * 255 < 2**31:
        return mean_of_sum(g.astype(jnp.int32).reshape(-1, 32).sum(axis=0).sum(), g.size)
    return jnp.mean(g)


def mean_of_sum(total: jax.Array, size: int) -> jax.Array:
    """The mean of ``size`` values from their exact (integer) ``total``: ``total * (1 /
    size)`` in float32, as ``jnp.mean`` scales (:func:`mean_gray`'s integer form)."""
    return total.astype(jnp.float32) * (np.float32(1) / np.float32(size))


def blend_planes(planes, other, ratio: jax.Array, dtype):
    """:func:`blend` of each channel plane with ``other`` (a plane or a scalar)."""
    return tuple(blend(c, other, ratio, dtype) for c in planes)


def mix(a: jax.Array, b: jax.Array, ratio: jax.Array) -> jax.Array:
    """torchvision ``_blend``'s sum ``ratio * a + (1 - ratio) * b``, computed as ``a * ratio +
    b * (1 - ratio)`` (unclamped)."""
    return a * ratio + b * (1.0 - ratio)


def blend(a: jax.Array, b: jax.Array, ratio: jax.Array, dtype) -> jax.Array:
    """torchvision ``_blend``: :func:`mix`, clamped and requantized."""
    return requantize(mix(a, b, ratio), dtype)


def tap_sum(values, weights) -> jax.Array:
    """``sum_t values[t] * weights[t]`` in tap order (``v_0 w_0``, then ``+ v_t w_t``): the
    sum every form of a correlation computes, so that their values agree."""
    out = values[0] * weights[0]
    for t in range(1, len(values)):
        out = out + values[t] * weights[t]
    return out


def draw(key: jax.Array, value) -> jax.Array:
    """A float_or_pair parameter's value for one sample, as a float32 scalar.

    A pair ``(lo, hi)`` (a Python tuple, validated by :class:`augjax.Param`) is drawn uniformly in
    ``[lo, hi]`` from ``key``; anything else (a number, or a traced JAX scalar that a policy passes)
    is the value itself. Trace-safe: no Python branch on the value.
    """
    if isinstance(value, tuple):
        lo, hi = value
        return jax.random.uniform(key, (), jnp.float32, minval=lo, maxval=hi)
    return jnp.asarray(value, jnp.float32)


def levels_to_scale(value, dtype) -> jax.Array:
    """A value given in uint8 levels (a solarize threshold, an addition) in the image's scale:
    unchanged for uint8, divided by 255 for float images."""
    return value if is_int(dtype) else value * (1.0 / 255.0)


def to_unit(x: jax.Array, dtype) -> jax.Array:
    """float32 values in ``dtype``'s scale to [0, 1] (torchvision ``to_dtype(scale=True)``:
    uint8 levels are multiplied by 1/255)."""
    return x * (1.0 / 255.0) if is_int(dtype) else x


def from_unit(x: jax.Array, dtype) -> jax.Array:
    """float32 values in [0, 1] back to ``dtype`` the torchvision way: uint8 is
    ``trunc(x * (256 - 1e-3))`` (``to_dtype(scale=True)``), float images are returned as float32."""
    if not is_int(dtype):
        return x.astype(dtype)
    return jnp.clip(jnp.floor(x * (255.0 + 1.0 - 1e-3)), 0.0, 255.0).astype(dtype)
