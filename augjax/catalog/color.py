"""Colour ops on RGB images (uint8 0..255 or float32 0..1, HWC kernels), torchvision semantics.

The single adjustments (``brightness``, ``contrast``, ``saturation``, ``hue``) are torchvision's
``adjust_*`` kernels: uint8 images are computed in float32 and truncated back to whole levels, as
``transforms.v2.functional`` does. Their factor is a number (exactly that factor, like
``adjust_brightness(img, factor)``) or a pair ``(lo, hi)`` drawn uniformly per sample. The
factor may also be a traced JAX scalar (policies drive it from a magnitude), so no kernel branches
on its value in Python.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._param import Param
from augjax._spec import op
from augjax.catalog._jitter import jitter
from augjax.catalog._pixels import draw, gray, to_dtype
from augjax.catalog._tv_color import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
)

__all__ = [
    "brightness",
    "channel_permute",
    "color_jitter",
    "contrast",
    "factor_range",
    "grayscale",
    "hue",
    "jitter_apply",
    "jitter_draw",
    "random_grayscale",
    "saturation",
]


def factor_range(value, *, center: float = 1.0, low: float = 0.0, high: float = float("inf"),
                 clip: bool = True) -> tuple[float, float]:
    """torchvision ColorJitter's ``_check_input``: ``x`` means ``[center - x, center + x]`` (the
    lower end clipped at 0 for factors), a pair is taken as is; both must lie in [low, high]."""
    if isinstance(value, tuple):
        lo, hi = value
    else:
        if value < 0:
            raise ValueError("a single number must be non-negative")
        lo, hi = center - value, center + value
        if clip:
            lo = max(lo, 0.0)
    if not low <= lo <= hi <= high:
        raise ValueError(
            f"the range ({lo:g}, {hi:g}) must be increasing within [{low:g}, {high:g}]"
        )
    return (float(lo), float(hi))


# ---------------------------------------------------------------------------------------------
# Single adjustments
# ---------------------------------------------------------------------------------------------

_FACTOR_DOC = "factor (1 = unchanged); a number is used as is, a pair (lo, hi) is drawn per sample"


def _factor(doc: str, name: str) -> Param:
    """The enhance-style factor of brightness/contrast/saturation/sharpness: torchvision
    RandAugment's 31-bin map 1 + linspace(0, 0.9), reflected around 1 by policies."""
    return Param((0.6, 1.4), kind="float_or_pair", low=0.0, neutral=1.0, magnitude=(1.0, 1.9),
                 signed=True, doc=doc,
                 aliases={f"{name}_factor": "torchvision", name: "torchvision ColorJitter"})


def _adjust(fn, key: jax.Array, image: jax.Array, value) -> jax.Array:
    return to_dtype(fn(image.astype(jnp.float32), draw(key, value), image.dtype), image.dtype)


@op("brightness", params={"factor": _factor(_FACTOR_DOC, "brightness")},
    reference="torchvision.transforms.v2.functional.adjust_brightness")
def brightness(key, image, *, factor):
    """Multiplies every pixel by ``factor`` and clamps (torchvision adjust_brightness).

    Same as ``adjust_brightness(img, factor)``; uint8 results are truncated to whole levels, as
    torchvision does. Works on any number of channels.
    """
    return _adjust(adjust_brightness, key, image, factor)


@op("contrast", params={"factor": _factor(_FACTOR_DOC, "contrast")}, channels=(1, 3),
    reference="torchvision.transforms.v2.functional.adjust_contrast")
def contrast(key, image, *, factor):
    """Blends the image with the mean of its grayscale version (torchvision adjust_contrast).

    ``out = factor * x + (1 - factor) * mean(gray(x))``, the mean taken per sample over the
    (for uint8, floored) ITU-R 601-2 luma, clamped and truncated for uint8, as torchvision does;
    PIL ImageEnhance.Contrast rounds the mean to a whole level first (<= 1 level apart).
    One-channel images blend with their own mean.
    """
    return _adjust(adjust_contrast, key, image, factor)


@op("saturation", params={"factor": _factor(_FACTOR_DOC, "saturation")}, channels=(3,),
    reference="torchvision.transforms.v2.functional.adjust_saturation")
def saturation(key, image, *, factor):
    """Blends the image with its grayscale version (torchvision adjust_saturation; RandAugment's
    "Color"): ``factor * x + (1 - factor) * gray(x)``, clamped, truncated for uint8."""
    return _adjust(adjust_saturation, key, image, factor)


@op(
    "hue",
    params={
        "factor": Param((-0.1, 0.1), kind="float_or_pair", low=-0.5, high=0.5, neutral=0.0,
                        aliases={"hue_factor": "torchvision", "hue": "torchvision ColorJitter"},
                        doc="hue shift in turns, in [-0.5, 0.5]; a pair is drawn per sample"),
    },
    channels=(3,),
    reference="torchvision.transforms.v2.functional.adjust_hue",
)
def hue(key, image, *, factor):
    """Rotates the hue by ``factor`` turns in HSV space (torchvision adjust_hue).

    uint8 images go through [0, 1] and back with torchvision's ``trunc(x * 255.999)``. A shift
    of 0 is a round trip through HSV: exact on uint8, within float32 rounding on float images
    (torchvision's kernel behaves the same).
    """
    return _adjust(adjust_hue, key, image, factor)


# ---------------------------------------------------------------------------------------------
# Grayscale and channel order
# ---------------------------------------------------------------------------------------------


def _gray3(image: jax.Array) -> jax.Array:
    g = gray(image.astype(jnp.float32))[..., None]
    return to_dtype(jnp.broadcast_to(g, image.shape), image.dtype)


@op("grayscale", channels=(3,), random=False,
    reference="torchvision.transforms.v2.functional.rgb_to_grayscale(num_output_channels=3)")
def grayscale(image):
    """Replaces RGB by its ITU-R 601-2 luma ``0.2989 R + 0.587 G + 0.114 B``, kept as 3 channels.

    uint8 luma is truncated (torchvision ``rgb_to_grayscale``); PIL ``convert("L")`` rounds it,
    so the two differ by at most one level.
    """
    return _gray3(image)


@op(
    "random_grayscale",
    params={"p": Param(0.1, low=0.0, high=1.0, neutral=0.0,
                       doc="probability that a sample is turned to grayscale")},
    channels=(3,),
    reference="torchvision.transforms.v2.RandomGrayscale",
)
def random_grayscale(key, image, *, p):
    """Turns each sample to 3-channel grayscale with probability ``p`` (torchvision
    RandomGrayscale on RGB input; the same luma as :func:`grayscale`)."""
    return jnp.where(jax.random.bernoulli(key, p), _gray3(image), image)


@op("channel_permute", reference="torchvision.transforms.v2.RandomChannelPermutation")
def channel_permute(key, image):
    """Shuffles the channels of each sample with its own random permutation.

    torchvision RandomChannelPermutation: ``perm = randperm(C)``, output channel ``i`` is input
    channel ``perm[i]``. Works on any number of channels.
    """
    c = image.shape[-1]
    if c == 1:
        return image
    perm = jax.random.permutation(key, c)
    if c > 4:
        return jnp.take(image, perm, axis=-1)
    # A few channels: selects fuse into one elementwise pass (a per-sample gather does not).
    chans = [image[..., j] for j in range(c)]
    out = [jnp.select([perm[i] == j for j in range(c - 1)], chans[:-1], chans[-1])
           for i in range(c)]
    return jnp.stack(out, axis=-1)


# ---------------------------------------------------------------------------------------------
# ColorJitter
# ---------------------------------------------------------------------------------------------

_JITTER_NEUTRAL = (1.0, 1.0, 1.0, 0.0)


def _jitter_param(doc: str, *, hue: bool = False) -> Param:
    if hue:
        check = lambda v: factor_range(v, center=0.0, low=-0.5, high=0.5, clip=False)  # noqa: E731
    else:
        check = lambda v: factor_range(v)  # noqa: E731
    return Param(0.0, kind="float_or_pair", low=-0.5 if hue else 0.0, high=0.5 if hue else None,
                 neutral=0.0, validate=check, doc=doc)


def jitter_draw(key: jax.Array, ranges) -> tuple[list[jax.Array], jax.Array]:
    """The per-sample draws of :func:`color_jitter`: four factors (brightness, contrast,
    saturation, hue), each uniform in its ``(lo, hi)`` range, and the order, a permutation of
    ``0..3``."""
    k_perm, *k_factors = jax.random.split(key, 5)
    factors = [jax.random.uniform(k, (), minval=r[0], maxval=r[1])
               for k, r in zip(k_factors, ranges)]
    return factors, jax.random.permutation(k_perm, 4)


def jitter_apply(image: jax.Array, factors, order: jax.Array,
                 active=(0, 1, 2, 3)) -> jax.Array:
    """Applies the ``active`` adjustments (0 brightness, 1 contrast, 2 saturation, 3 hue) of
    :func:`color_jitter` with the given factors in the given order (a traced permutation is
    fine); returns the input dtype."""
    # One generic stage serves brightness/contrast/saturation and hue runs once, in each
    # sample's own order (see augjax.catalog._jitter); on CUDA a kernel that branches per image
    # (augjax.catalog._jitter_kernel): the same arithmetic as applying the adjustments one by
    # one, at a fraction of the cost.
    mask = tuple(i in active for i in range(4))
    return jitter(image, jnp.asarray(order),
                  jnp.stack([jnp.asarray(f, jnp.float32) for f in factors]), mask)


@op(
    "color_jitter",
    params={
        "brightness": _jitter_param("factor ~ U[max(0, 1-x), 1+x] (or a (min, max) pair)"),
        "contrast": _jitter_param("factor ~ U[max(0, 1-x), 1+x] (or a (min, max) pair)"),
        "saturation": _jitter_param("factor ~ U[max(0, 1-x), 1+x] (or a (min, max) pair)"),
        "hue": _jitter_param("shift ~ U[-x, x] turns, x <= 0.5 (or a pair in [-0.5, 0.5])",
                             hue=True),
    },
    channels=(3,),
    reference="torchvision.transforms.v2.ColorJitter",
    compute_bound=True,
)
def color_jitter(key, image, *, brightness, contrast, saturation, hue):
    """Randomly changes brightness, contrast, saturation and hue, in a random order per sample.

    Same as torchvision ColorJitter: each factor is drawn uniformly from its range (a number x
    means [max(0, 1-x), 1+x], hue x means [-x, x]); the four adjustments run in a random order;
    an adjustment whose range is exactly its neutral value is skipped. uint8 images are truncated
    to whole levels after each adjustment, as torchvision does.
    """
    ranges = (brightness, contrast, saturation, hue)
    active = tuple(i for i in range(4) if ranges[i] != (_JITTER_NEUTRAL[i],) * 2)
    if not active:
        return image
    factors, order = jitter_draw(key, ranges)
    return jitter_apply(image, factors, order, active)
