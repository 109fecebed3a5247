"""The enhance ops' pixels, each composed once: contrast (and the blends it shares a form with)
and sharpness.

torchvision's ``adjust_brightness``, ``adjust_contrast`` and ``adjust_saturation`` blend the image
with a *degenerate* image ``d``: ``x * f + d * (1 - f)``, clamped and, for uint8, truncated to
whole levels (:func:`~augjax.kernels.pixels.blend`); ``d`` is 0 (:data:`ZERO`), the mean of
the image's blend gray (:data:`MEAN`: contrast, :func:`contrast_mean`) or that gray
(:data:`GRAY`: saturation). ``adjust_sharpness`` steps towards a smoothed copy instead:
``x + (1 - f) * (smooth - x)`` inside the image, the one-pixel border kept (:data:`SMOOTH`,
:func:`sharpen`).

Every form of these ops composes them with these functions: the ops' kernels
(:mod:`augjax.catalog.color`, :mod:`augjax.catalog.tone`), ``random_photometric_distort``
(:func:`augjax.catalog._tv_color.adjust_contrast`), ColorJitter's XLA and Pallas forms
(:mod:`augjax.catalog._jitter`, :mod:`augjax.catalog._jitter_kernel`), and a policy layer's
families (:mod:`augjax.policies._families`; its Pallas forms :mod:`augjax.policies._layer_kernel`
and :func:`augjax.kernels.histogram_pallas.stats_kernel`). As in
:mod:`augjax.kernels.grid_sample`, they are elementwise in their array arguments (plain ``jnp``
arithmetic, which Pallas lowers as it is): a form calls them on a whole image, on its channel
planes or on a tile's values, and each computes the same operations in the same order. What
stays a form's own is how it reads the values (a 3x3 window from shifted views of a padded
image, or from a Pallas ref) and how it reduces the gray to its mean (in one pass, a pass
before the blend, or tile by tile): the mean is an argument wherever a form reduces it itself.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.pixels import blend, is_int, mean_gray, planes_gray
from augjax.kernels.warp_pil import split_coefficient

__all__ = ["GRAY", "MEAN", "SMOOTH", "ZERO", "contrast", "contrast_mean", "degenerate",
           "sharpen", "sharpen_step", "smoothed"]

#: The degenerate images' codes: ColorJitter's adjustment index (brightness 0, contrast 1,
#: saturation 2) and the policy blend family's kind (:class:`augjax.catalog.Blend`).
ZERO, MEAN, GRAY, SMOOTH = range(4)


def contrast_mean(planes, dtype) -> jax.Array:
    """Contrast's degenerate value: the mean of the image's blend gray (floored for integer
    ``dtype``; a one-channel image's own plane), the image given as its channel planes, each
    the whole image's (:func:`~augjax.kernels.pixels.mean_gray`)."""
    return mean_gray(planes_gray(planes, dtype), dtype)


def contrast(x: jax.Array, mean: jax.Array, factor: jax.Array, dtype) -> jax.Array:
    """torchvision ``adjust_contrast``'s pixels: ``x`` (any array of the image's float32
    values: the image, a channel plane, a tile's, a level ramp) blended with the image's
    ``mean`` (:func:`contrast_mean`, or a form's own reduction of the same gray), clamped,
    truncated for integer ``dtype`` (float32)."""
    return blend(x, mean, factor, dtype)


def degenerate(kind: jax.Array, gray: jax.Array | None = None,
               mean: jax.Array | None = None) -> jax.Array:
    """The degenerate image of the (traced) ``kind``: 0 for :data:`ZERO`, ``mean`` for
    :data:`MEAN`, ``gray`` for :data:`GRAY`, by selects, for the stage that blends any of
    them (ColorJitter's generic stage, the policy blend family); a kind whose value is None
    is not among the choices (0 stands there)."""
    d = jnp.float32(0.0)
    if mean is not None:
        d = jnp.where(kind == MEAN, mean, d)
    if gray is not None:
        d = jnp.where(kind == GRAY, gray, d)
    return d


def smoothed(centre, window, dtype, rnd=jnp.round):
    """Sharpness's smoothed value: ``(4 centre + sum(window)) / 13`` with ``window`` the 3x3
    neighbourhood's 9 values (the centre's among them, zero outside the image) in row order,
    summed in that order, rounded by ``rnd`` (half to even) for integer ``dtype``."""
    total = 4.0 * centre
    for v in window:
        total = total + v
    smooth = total * (1.0 / 13.0)
    return rnd(smooth) if is_int(dtype) else smooth


def sharpen_step(cf, a, dtype):
    """Sharpness's step ``(1 - factor) * (smooth - x)`` from ``cf = 1 - factor`` (float32) and
    ``a = smooth - x``; for integer ``dtype`` as :func:`sharpen` explains: the two exact partial
    products of ``cf``'s :func:`~augjax.kernels.warp_pil.split_coefficient`."""
    if not is_int(dtype):
        return cf * a
    c_hi, c_lo = split_coefficient(cf)
    return c_hi * a + c_lo * a


def sharpen(x, window, border, factor, dtype, rnd=jnp.round):
    """torchvision ``adjust_sharpness``'s pixels, unclamped: ``x + (1 - factor) * (smooth -
    x)`` with ``smooth`` the :func:`smoothed` value of ``x``'s 3x3 ``window`` (rounded by
    ``rnd`` for integer ``dtype``), and ``x`` itself where ``border`` (the one-pixel border).

    uint8: the product is rounded to float32 before the sum, as torchvision computes it, in a
    form no compiler can change: XLA contracts a product and a sum into one multiply-add in
    some programs and not in others, and one rounding more or less moves a truncated level
    (the op alone and a policy layer that computes it among other blends would differ). The
    difference ``smooth - x`` is a whole number of at most 9 bits, so splitting ``1 - factor``
    into its top 12 significant bits and the rest makes both partial products exact, and their
    sum is the product rounded once, contracted or not (:func:`sharpen_step`).
    """
    step = sharpen_step(jnp.asarray(1.0 - factor, jnp.float32),
                        smoothed(x, window, dtype, rnd) - x, dtype)
    return jnp.where(border, x, x + step)
