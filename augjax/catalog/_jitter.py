"""ColorJitter's random-order kernel, arranged so each sample's own order costs one hue pass.

torchvision applies the active adjustments (brightness 0, contrast 1, saturation 2, hue 3) in a
random order. Under vmap every sample has its own order, so a literal translation computes every
adjustment at every slot and selects (16 evaluations, 4 of them the costly HSV round trip).
Brightness, contrast and saturation share one form, ``f * x + (1 - f) * other`` with ``other`` =
0, the grayscale mean, or the grayscale image, so one "generic" stage computes any of them with
per-sample selectors. Hue runs exactly once, between the generic stages before it and those after
it: ``A - 1`` pre stages, one hue pass, ``A - 1`` post stages for ``A`` active adjustments, each
stage switched off (the identity, exactly) where the sample has fewer stages on that side.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.catalog._pixels import gray, is_int, requantize
from augjax.catalog._tv_color import adjust_hue

__all__ = ["jitter"]

_HUE = 3


def _generic(x: jax.Array, which: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    g = gray(x)
    if is_int(dtype):
        g = jnp.floor(g)
    other = jnp.where(which == 1, jnp.mean(g), g)
    other = jnp.where(which == 0, 0.0, other)
    other = other if other.ndim == 0 else other[..., None]
    return requantize(x * factor + other * (1.0 - factor), dtype)


def jitter(x: jax.Array, order: jax.Array, factors: jax.Array, active: tuple[bool, ...], dtype
           ) -> jax.Array:
    """Applies the active adjustments to float32 ``x`` in ``order`` (a permutation of 0..3).

    Args:
        x: one image, float32 in the dtype's scale.
        order: the sample's permutation of (brightness, contrast, saturation, hue).
        factors: the four sampled factors (hue: the shift in turns).
        active: which adjustments are on (static).
        dtype: the input dtype (uint8 values are truncated after each adjustment).
    """
    act = jnp.asarray(active)
    n_active = sum(active)
    # The active ops in this sample's order, inactive ones moved (stably) to the end.
    seq = order[jnp.argsort(~act[order], stable=True)]
    if not active[_HUE]:
        for j in range(n_active):
            x = _generic(x, seq[j], factors[seq[j]], dtype)
        return x
    p = jnp.argmax(seq == _HUE)
    for j in range(n_active - 1):  # stages before hue: seq[0], ..., seq[p-1]
        which = seq[j]
        x = jnp.where(j < p, _generic(x, which, factors[which], dtype), x)
    x = adjust_hue(x, factors[_HUE], dtype)
    for j in range(n_active - 1):  # stages after hue: seq[p+1], ...
        which = seq[jnp.minimum(p + 1 + j, 3)]
        x = jnp.where(j < n_active - 1 - p, _generic(x, which, factors[which], dtype), x)
    return x
