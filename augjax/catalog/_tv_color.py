"""torchvision's colour adjustments on one float32 HWC image, as JAX functions.

Each function takes the image as float32 values in the input dtype's scale (0..255 for uint8,
0..1 for float32) plus that dtype, and returns float32 in the same scale, requantized like
torchvision does for uint8 (``transforms.v2.functional.adjust_*_image``, torchvision 0.29).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.catalog._pixels import blend, bound, gray, is_int, requantize

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue"]


def adjust_brightness(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """``x * factor``, clamped (torchvision adjust_brightness)."""
    return requantize(x * factor, dtype)


def _gray_for_blend(x: jax.Array, dtype) -> jax.Array:
    if x.shape[-1] == 1:  # torchvision: a one-channel image is its own grayscale
        return x[..., 0]
    g = gray(x)
    return jnp.floor(g) if is_int(dtype) else g


def adjust_contrast(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """Blend with the mean of the (floored, for uint8) grayscale image; one-channel images blend
    with their own mean."""
    mean = jnp.mean(_gray_for_blend(x, dtype))
    return blend(x, mean, factor, dtype)


def adjust_saturation(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """Blend with the (floored, for uint8) grayscale image."""
    return blend(x, _gray_for_blend(x, dtype)[..., None], factor, dtype)


def _rgb_to_hsv(rgb: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc = jnp.maximum(jnp.maximum(r, g), b)
    minc = jnp.minimum(jnp.minimum(r, g), b)
    eqc = maxc == minc
    crange = maxc - minc
    s = crange / jnp.where(eqc, 1.0, maxc)
    div = jnp.where(eqc, 1.0, crange)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    neq_r = maxc != r
    eq_g = maxc == g
    hr = jnp.where(neq_r, 0.0, bc - gc)
    hg = jnp.where(eq_g & neq_r, 2.0 + rc - bc, 0.0)
    hb = jnp.where(neq_r & ~eq_g, 4.0 + gc - rc, 0.0)
    h = jnp.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return h, s, maxc


def _hsv_to_rgb(h: jax.Array, s: jax.Array, v: jax.Array) -> jax.Array:
    h6 = h * 6.0
    i = jnp.floor(h6)
    f = h6 - i
    i = jnp.mod(i.astype(jnp.int32), 6)
    q = jnp.clip((1.0 - s * f) * v, 0.0, 1.0)
    t = jnp.clip((s * f + (1.0 - s)) * v, 0.0, 1.0)
    p = jnp.clip((1.0 - s) * v, 0.0, 1.0)
    # torchvision's select table: rows R, G, B; columns i = 0..5; entries index (v, p, q, t).
    r = jnp.select([i == 0, i == 1, i == 2, i == 3, i == 4], [v, q, p, p, t], v)
    g = jnp.select([i == 0, i == 1, i == 2, i == 3, i == 4], [t, v, v, q, p], p)
    b = jnp.select([i == 0, i == 1, i == 2, i == 3, i == 4], [p, p, t, v, v], q)
    return jnp.stack([r, g, b], axis=-1)


def adjust_hue(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """Rotate the hue by ``factor`` turns in HSV space (torchvision adjust_hue)."""
    scale = bound(dtype)
    h, s, v = _rgb_to_hsv(x / scale)
    rgb = _hsv_to_rgb(jnp.mod(h + factor, 1.0), s, v)
    if is_int(dtype):
        return jnp.floor(rgb * (255.0 + 1.0 - 1e-3))  # torchvision to_dtype(float -> uint8)
    return rgb
