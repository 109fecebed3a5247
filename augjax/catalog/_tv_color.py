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
    # torchvision picks the hue formula with ``maxc == r`` / ``maxc == g``. Compilers may
    # recompute r, g, b in several fused kernels (e.g. after a saturation blend) with different
    # rounding, and an exact equality between two such copies can fail, switching a pixel to the
    # wrong sector. Comparisons between the channels pick the same branch (ties go to r, then g)
    # and stay continuous where the copies differ by an ulp.
    r_max = (r >= g) & (r >= b)
    g_max = ~r_max & (g >= b)
    maxc = jnp.where(r_max, r, jnp.where(g_max, g, b))
    minc = jnp.minimum(jnp.minimum(r, g), b)
    eqc = maxc == minc
    crange = maxc - minc
    s = crange / jnp.where(eqc, 1.0, maxc)
    div = jnp.where(eqc, 1.0, crange)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    h6 = jnp.where(r_max, bc - gc, jnp.where(g_max, 2.0 + rc - bc, 4.0 + gc - rc))
    h = jnp.fmod(h6 / 6.0 + 1.0, 1.0)
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
    # Nested wheres rather than jnp.select (which builds its index with a reduction): they fuse
    # into the surrounding elementwise pass.
    def pick(c0, c1, c2, c3, c4, c5):
        return jnp.where(i == 0, c0, jnp.where(i == 1, c1, jnp.where(
            i == 2, c2, jnp.where(i == 3, c3, jnp.where(i == 4, c4, c5)))))

    r = pick(v, q, p, p, t, v)
    g = pick(t, v, v, q, p, p)
    b = pick(p, p, t, v, v, q)
    return jnp.stack([r, g, b], axis=-1)


def adjust_hue(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """Rotate the hue by ``factor`` turns in HSV space (torchvision adjust_hue)."""
    scale = bound(dtype)
    h, s, v = _rgb_to_hsv(x / scale)
    rgb = _hsv_to_rgb(jnp.mod(h + factor, 1.0), s, v)
    if is_int(dtype):
        return jnp.floor(rgb * (255.0 + 1.0 - 1e-3))  # torchvision to_dtype(float -> uint8)
    return rgb
