"""ColorJitter's random-order kernel, arranged so each sample's own order costs one hue pass.

torchvision applies the active adjustments (brightness 0, contrast 1, saturation 2, hue 3) in a
random order. Under vmap every sample has its own order, so a literal translation computes every
adjustment at every slot and selects (16 evaluations, 4 of them the costly HSV round trip).
Brightness, contrast and saturation share one form, ``f * x + (1 - f) * other`` with ``other`` =
0, the grayscale mean, or the grayscale image, so one "generic" stage computes any of them with
per-sample selectors. Hue runs exactly once, between the generic stages before it and those after
it: ``A - 1`` pre stages, one hue pass, ``A - 1`` post stages for ``A`` active adjustments, each
stage switched off (the identity, exactly) where the sample has fewer stages on that side.

Contrast blends with the mean grayscale of the image *as it is when contrast runs*, a reduction
over the whole image, and any generic stage may be contrast for some sample. Two schedules give
the same arithmetic (XLA may still contract multiply-adds differently: 1 ulp in float32, rarely a
uint8 level), and the backend picks one (``lax.platform_dependent``):

- "one pass" (CPU): each generic stage takes its own mean, ``2A - 2`` chained reductions. Cheap
  where the image sits in cache and arithmetic is the cost.
- "two passes" (GPU): contrast runs once per sample and no stage before it is contrast, so a
  first pass over the image runs the stages before contrast and reduces to the mean, and a
  second pass applies every stage with it. Two reads of the image instead of ``2A - 1``, at the
  price of computing the stages before contrast twice.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.catalog._pixels import gray, is_int, requantize
from augjax.catalog._tv_color import adjust_hue

__all__ = ["jitter"]

_HUE = 3


def _gray(x: jax.Array, dtype) -> jax.Array:
    g = gray(x)
    return jnp.floor(g) if is_int(dtype) else g


def _generic(x: jax.Array, which: jax.Array, factor: jax.Array, mean: jax.Array | None, dtype
             ) -> jax.Array:
    """Brightness (``which`` 0), contrast (1, with ``mean``, or this image's own mean if None)
    or saturation (2)."""
    g = _gray(x, dtype)
    other = jnp.where(which == 1, jnp.mean(g) if mean is None else mean, g)
    other = jnp.where(which == 0, 0.0, other)
    return requantize(x * factor + other[..., None] * (1.0 - factor), dtype)


def _stages(x: jax.Array, seq: jax.Array, factors: jax.Array, n_active: int, hue: bool,
            mean: jax.Array | None, end: jax.Array | None, dtype) -> jax.Array:
    """The adjustments ``seq[0], ..., seq[end - 1]`` (``end`` traced; None for all), contrast
    with ``mean`` (None: each stage's own mean)."""

    def upto(pos):
        return True if end is None else pos < end

    if not hue:
        for j in range(n_active):
            x = jnp.where(upto(j), _generic(x, seq[j], factors[seq[j]], mean, dtype), x)
        return x
    p = jnp.argmax(seq == _HUE)
    for j in range(n_active - 1):  # stages before hue: seq[0], ..., seq[p-1]
        which = seq[j]
        x = jnp.where((j < p) & upto(j), _generic(x, which, factors[which], mean, dtype), x)
    x = jnp.where(upto(p), adjust_hue(x, factors[_HUE], dtype), x) if end is not None else (
        adjust_hue(x, factors[_HUE], dtype))
    for j in range(n_active - 1):  # stages after hue: seq[p+1], ...
        which = seq[jnp.minimum(p + 1 + j, 3)]
        on = (j < n_active - 1 - p) & upto(p + 1 + j)
        x = jnp.where(on, _generic(x, which, factors[which], mean, dtype), x)
    return x


def jitter(x: jax.Array, order: jax.Array, factors: jax.Array, active: tuple[bool, ...], dtype,
           schedule: str = "auto") -> jax.Array:
    """Applies the active adjustments to float32 ``x`` in ``order`` (a permutation of 0..3).

    Args:
        x: one image, float32 in the dtype's scale.
        order: the sample's permutation of (brightness, contrast, saturation, hue).
        factors: the four sampled factors (hue: the shift in turns).
        active: which adjustments are on (static).
        dtype: the input dtype (uint8 values are truncated after each adjustment).
        schedule: "one_pass", "two_pass", or "auto" (one pass on CPU, two passes elsewhere).
    """
    act = jnp.asarray(active)
    n_active = sum(active)
    # The active ops in this sample's order, inactive ones moved (stably) to the end.
    seq = order[jnp.argsort(~act[order], stable=True)]
    hue = active[_HUE]

    def one_pass(x):
        return _stages(x, seq, factors, n_active, hue, None, None, dtype)

    def two_pass(x):  # pass 1: the image as contrast sees it, its mean; pass 2: everything
        before = _stages(x, seq, factors, n_active, hue, jnp.float32(0.0),
                         jnp.argmax(seq == 1), dtype)
        mean = jnp.mean(_gray(before, dtype))
        return _stages(x, seq, factors, n_active, hue, mean, None, dtype)

    if not active[1] or schedule == "one_pass":
        return one_pass(x)
    if schedule == "two_pass":
        return two_pass(x)
    return jax.lax.platform_dependent(x, cpu=one_pass, default=two_pass)
