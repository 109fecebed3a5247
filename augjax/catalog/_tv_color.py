"""torchvision's colour adjustments on one float32 HWC image, as JAX functions.

Each function takes the image as float32 values in the input dtype's scale (0..255 for uint8,
0..1 for float32) plus that dtype, and returns float32 in the same scale, requantized like
torchvision does for uint8 (``transforms.v2.functional.adjust_*_image``, torchvision 0.29).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.enhance import contrast, contrast_mean
from augjax.kernels.pixels import blend, bound, is_int, planes_gray, requantize

__all__ = [
    "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "gray_for_blend",
    "gray_planes", "hue_planes",
]


def adjust_brightness(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """``x * factor``, clamped (torchvision adjust_brightness)."""
    return requantize(x * factor, dtype)


def gray_planes(x: jax.Array) -> list[jax.Array]:
    """The channel planes the blend gray reads: the first three (or a one-channel image's)."""
    return [x[..., k] for k in range(min(x.shape[-1], 3))]


def gray_for_blend(x: jax.Array, dtype) -> jax.Array:
    """The (H, W) grayscale contrast and saturation blend with (floored for uint8)."""
    return planes_gray(gray_planes(x), dtype)


def adjust_contrast(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """Blend with the mean of the (floored, for uint8) grayscale image; one-channel images blend
    with their own mean (:func:`augjax.kernels.enhance.contrast`)."""
    return contrast(x, contrast_mean(gray_planes(x), dtype), factor, dtype)


def adjust_saturation(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """Blend with the (floored, for uint8) grayscale image."""
    return blend(x, gray_for_blend(x, dtype)[..., None], factor, dtype)


def _rgb_to_hsv(r: jax.Array, g: jax.Array, b: jax.Array
                ) -> tuple[jax.Array, jax.Array, jax.Array]:
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
    # torchvision divides by maxc: a float pixel out of range with max 0 and a negative channel
    # (a bicubic resample's undershoot) got s = inf and NaN values, which contrast's mean then
    # spread over the whole image. Where maxc is 0 the divisor is 1 (as for gray pixels): every
    # in-range pixel keeps its bits (maxc == 0 there means a black pixel, already eqc).
    s = crange / jnp.where(eqc | (maxc == 0.0), 1.0, maxc)
    div = jnp.where(eqc, 1.0, crange)
    # torchvision: rc, gc, bc = (maxc - r) / div, ... and then bc - gc, 2 + rc - bc, 4 + gc - rc.
    # The difference of two channels divided once is the same value to an ulp of h (uint8 output
    # moves a level on ~1e-4 of pixels), and picking the numerator before the one division costs
    # one division per pixel instead of three (18x faster on XLA:CPU, which vectorises the
    # original form badly: 18.4 -> 1.0 ms for 64 x 224 x 224 on 2 cores).
    num = jnp.where(r_max, g - b, jnp.where(g_max, b - r, r - g))
    h6 = num / div + jnp.where(r_max, 0.0, jnp.where(g_max, 2.0, 4.0))
    # torchvision's fmod(h6 / 6 + 1, 1): the argument lies in [5/6, 11/6], where fmod is the
    # exact y - 1 for y >= 1 (Sterbenz) and y below: the same bits without a remainder, which
    # XLA:CPU computes with a scalar libm call per pixel.
    y = h6 / 6.0 + 1.0
    h = jnp.where(y >= 1.0, y - 1.0, y)
    return h, s, maxc


def _mod1(z: jax.Array) -> jax.Array:
    """``jnp.mod(z, 1.0)`` for ``z`` in [-1, 2), with the same bits (one add, no remainder)."""
    return jnp.where(z < 0.0, z + 1.0, jnp.where(z >= 1.0, z - 1.0, z))


def _hsv_to_rgb(h: jax.Array, s: jax.Array, v: jax.Array
                ) -> tuple[jax.Array, jax.Array, jax.Array]:
    h6 = h * 6.0
    i = jnp.floor(h6)
    f = h6 - i
    i = jnp.where(i >= 6.0, i - 6.0, i)  # torchvision's i % 6 for i in 0..6 (h6 rounds to 6)
    q = jnp.clip((1.0 - s * f) * v, 0.0, 1.0)
    t = jnp.clip((s * f + (1.0 - s)) * v, 0.0, 1.0)
    p = jnp.clip((1.0 - s) * v, 0.0, 1.0)
    # torchvision's select table: rows R, G, B; columns i = 0..5; entries index (v, p, q, t).
    # Nested wheres rather than jnp.select (which builds its index with a reduction): they fuse
    # into the surrounding elementwise pass.
    def pick(c0, c1, c2, c3, c4, c5):
        return jnp.where(i == 0, c0, jnp.where(i == 1, c1, jnp.where(
            i == 2, c2, jnp.where(i == 3, c3, jnp.where(i == 4, c4, c5)))))

    return pick(v, q, p, p, t, v), pick(t, v, v, q, p, p), pick(p, p, t, v, v, q)


def hue_planes(r: jax.Array, g: jax.Array, b: jax.Array, factor: jax.Array, dtype
               ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """:func:`adjust_hue` on the three channel planes of an image (each ``(H, W)``)."""
    unit = 1.0 / bound(dtype)  # torchvision to_dtype(uint8 -> float): .mul_(1 / 255)
    h, s, v = _rgb_to_hsv(r * unit, g * unit, b * unit)
    rgb = _hsv_to_rgb(_mod1(h + factor), s, v)  # h in [0, 1), |factor| <= 0.5
    if is_int(dtype):  # torchvision to_dtype(float -> uint8)
        return tuple(jnp.floor(c * (255.0 + 1.0 - 1e-3)) for c in rgb)
    return rgb


def adjust_hue(x: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """Rotate the hue by ``factor`` turns in HSV space (torchvision adjust_hue)."""
    return jnp.stack(hue_planes(x[..., 0], x[..., 1], x[..., 2], factor, dtype), axis=-1)
