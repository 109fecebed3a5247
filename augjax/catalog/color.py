"""Colour ops on RGB images (uint8 0..255 or float32 0..1, HWC kernels), torchvision semantics.

The single adjustments (``brightness``, ``contrast``, ``saturation``, ``hue``) are torchvision's
``adjust_*`` kernels: uint8 images are computed in float32 and truncated back to whole levels, as
``transforms.v2.functional`` does. Their factor is a number (exactly that factor, like
``adjust_brightness(img, factor)``) or a pair ``(lo, hi)`` drawn uniformly per sample by augjax;
the kernel reads it from ``params["factor"]`` (a policy sets it from a magnitude).

Params (``op.sample``; one value per sample, leading axis N):

- ``brightness``, ``contrast``, ``saturation``, ``hue``: ``factor`` (float32; hue: the shift in
  turns);
- ``random_grayscale``: ``applied`` (bool: the sample is turned to grayscale);
- ``channel_permute``: ``perm`` ((C,) int32: output channel ``i`` is input channel ``perm[i]``);
- ``color_jitter``: one float32 factor per active adjustment, under its name (``brightness``,
  ``contrast``, ``saturation``, ``hue``; an adjustment whose range is its neutral value is
  inactive and has no field), and ``order`` ((4,) int32, a permutation of 0..3: brightness 0,
  contrast 1, saturation 2, hue 3, applied in that order, torchvision's ``fn_idx``).

``grayscale`` draws nothing. Every op is differentiable with respect to float32 images.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax.catalog._fuse import Blend, ImageStats, Tone, fused
from augjax.catalog._hints import compute_bound
from augjax.catalog._jitter import jitter
from augjax.catalog._tv_color import (
    adjust_brightness,
    adjust_hue,
    adjust_saturation,
)
from augjax.kernels.enhance import contrast as contrast_pixels
from augjax.kernels.pixels import gray, to_dtype

__all__ = [
    "JITTER_NAMES",
    "brightness",
    "channel_permute",
    "color_jitter",
    "contrast",
    "factor_range",
    "grayscale",
    "hue",
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

def _tv_names(name: str) -> dict[str, str]:
    """torchvision's names of an adjustment's factor, as ``Param`` aliases."""
    return {f"{name}_factor": "torchvision", name: "torchvision ColorJitter"}


def _adjust(fn, image: jax.Array, factor: jax.Array) -> jax.Array:
    return to_dtype(fn(image.astype(jnp.float32), factor, image.dtype), image.dtype)


@fused(Tone(), Blend("zero"))
@op("brightness", params={"factor": Param.factor(aliases=_tv_names("brightness"))},
    reference="torchvision.transforms.v2.functional.adjust_brightness")
def brightness(image, params):
    """Multiplies every pixel by ``factor`` and clamps (torchvision adjust_brightness).

    Same as ``adjust_brightness(img, factor)``; uint8 results are truncated to whole levels, as
    torchvision does. Works on any number of channels. Params: ``factor``.
    """
    return _adjust(adjust_brightness, image, params["factor"])


def _contrast_levels(values, params, stats):
    """Contrast's blend of ``values`` with the mean gray of the image of ``stats``."""
    x = values.astype(jnp.float32)
    return to_dtype(contrast_pixels(x, stats.gray_mean, params["factor"], values.dtype),
                    values.dtype)


@fused(Tone(_contrast_levels, stats=("gray_mean",)), Blend("mean"))
@op("contrast", params={"factor": Param.factor(aliases=_tv_names("contrast"))}, channels=(1, 3),
    reference="torchvision.transforms.v2.functional.adjust_contrast")
def contrast(image, params):
    """Blends the image with the mean of its grayscale version (torchvision adjust_contrast).

    ``out = factor * x + (1 - factor) * mean(gray(x))``, the mean taken per sample over the
    (for uint8, floored) ITU-R 601-2 luma, clamped and truncated for uint8, as torchvision does;
    PIL ImageEnhance.Contrast rounds the mean to a whole level first (<= 1 level apart).
    One-channel images blend with their own mean. Params: ``factor``.
    """
    return _contrast_levels(image, params, ImageStats(image))


@fused(Blend("gray"))
@op("saturation", params={"factor": Param.factor(aliases=_tv_names("saturation"))}, channels=(3,),
    reference="torchvision.transforms.v2.functional.adjust_saturation")
def saturation(image, params):
    """Blends the image with its grayscale version (torchvision adjust_saturation; RandAugment's
    "Color"): ``factor * x + (1 - factor) * gray(x)``, clamped, truncated for uint8.
    Params: ``factor``."""
    return _adjust(adjust_saturation, image, params["factor"])


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
def hue(image, params):
    """Rotates the hue by ``factor`` turns in HSV space (torchvision adjust_hue).

    uint8 images go through [0, 1] and back with torchvision's ``trunc(x * 255.999)``. A shift
    of 0 is a round trip through HSV: exact on uint8, within float32 rounding on float images
    (torchvision's kernel behaves the same). Deviation: a float pixel outside [0, 1] whose
    largest channel is 0 (a bicubic resample's undershoot, ``[0, -0.01, -0.02]``) comes out
    black where torchvision's division by that 0 gives NaN. Params: ``factor`` (turns).
    """
    return _adjust(adjust_hue, image, params["factor"])


# ---------------------------------------------------------------------------------------------
# Grayscale and channel order
# ---------------------------------------------------------------------------------------------


def _gray3(image: jax.Array) -> jax.Array:
    g = gray(image.astype(jnp.float32))[..., None]
    return to_dtype(jnp.broadcast_to(g, image.shape), image.dtype)


@op("grayscale", channels=(3,),
    reference="torchvision.transforms.v2.functional.rgb_to_grayscale(num_output_channels=3)")
def grayscale(image, params):
    """Replaces RGB by its ITU-R 601-2 luma ``0.2989 R + 0.587 G + 0.114 B``, kept as 3 channels.

    uint8 luma is truncated (torchvision ``rgb_to_grayscale``); PIL ``convert("L")`` rounds it,
    so the two differ by at most one level.
    """
    return _gray3(image)


def _coin_sample(key, meta, params, *, p):
    return {"applied": jax.random.bernoulli(key, p)}


@op(
    "random_grayscale",
    params={"p": Param(0.1, low=0.0, high=1.0, neutral=0.0,
                       doc="probability that a sample is turned to grayscale")},
    channels=(3,),
    sample=_coin_sample,
    reference="torchvision.transforms.v2.RandomGrayscale",
)
def random_grayscale(image, params, *, p):
    """Turns each sample to 3-channel grayscale with probability ``p`` (torchvision
    RandomGrayscale on RGB input; the same luma as :func:`grayscale`). Params: ``applied``
    (bool)."""
    return jnp.where(params["applied"], _gray3(image), image)


def _perm_sample(key, meta, params):
    return {"perm": jax.random.permutation(key, meta.channels).astype(jnp.int32)}


@op("channel_permute", sample=_perm_sample,
    reference="torchvision.transforms.v2.RandomChannelPermutation")
def channel_permute(image, params):
    """Shuffles the channels of each sample with its own random permutation.

    torchvision RandomChannelPermutation: ``perm = randperm(C)``, output channel ``i`` is input
    channel ``perm[i]``. Works on any number of channels. Params: ``perm`` ((C,) int32).
    """
    c = image.shape[-1]
    perm = params["perm"]
    if c == 1:  # one channel: the only permutation
        return image
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

#: color_jitter's adjustments, by their index in ``order``.
JITTER_NAMES = ("brightness", "contrast", "saturation", "hue")
_JITTER_NEUTRAL = (1.0, 1.0, 1.0, 0.0)


def _jitter_param(doc: str, *, hue: bool = False) -> Param:
    # A range, not a per-sample value (kind "floats": a number or a pair): which adjustments
    # run is fixed by the configuration, and the sampler draws the factors of those.
    def check(v):
        if len(v) not in (1, 2):
            raise ValueError("expected a number or a pair (min, max)")
        v = v[0] if len(v) == 1 else v
        if hue:
            return factor_range(v, center=0.0, low=-0.5, high=0.5, clip=False)
        return factor_range(v)

    return Param(0.0, kind="floats", low=-0.5 if hue else 0.0, high=0.5 if hue else None,
                 neutral=0.0, validate=check, doc=doc)


def _active(ranges) -> tuple[str, ...]:
    return tuple(n for n, r, z in zip(JITTER_NAMES, ranges, _JITTER_NEUTRAL) if r != (z, z))


def _jitter_sample(key, meta, params, *, brightness, contrast, saturation, hue):
    """torchvision ``ColorJitter.make_params``: the order, a permutation of the four
    adjustments, and each active adjustment's factor, uniform in its range."""
    ranges = (brightness, contrast, saturation, hue)
    k_order, k_factors = jax.random.split(key)
    u = jax.random.uniform(k_factors, (4,), jnp.float32)
    out = {"order": jax.random.permutation(k_order, 4).astype(jnp.int32)}
    for i, (name, (lo, hi)) in enumerate(zip(JITTER_NAMES, ranges)):
        if name in _active(ranges):
            out[name] = jnp.float32(lo) + u[i] * jnp.float32(hi - lo)
    return out


@compute_bound
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
    sample=_jitter_sample,
    reference="torchvision.transforms.v2.ColorJitter",
)
def color_jitter(image, params, *, brightness, contrast, saturation, hue):
    """Randomly changes brightness, contrast, saturation and hue, in a random order per sample.

    Same as torchvision ColorJitter: each factor is drawn uniformly from its range (a number x
    means [max(0, 1-x), 1+x], hue x means [-x, x]); the four adjustments run in a random order;
    an adjustment whose range is exactly its neutral value is skipped. uint8 images are truncated
    to whole levels after each adjustment, as torchvision does.

    Params: ``order`` ((4,) int32, a permutation of 0..3 = brightness, contrast, saturation,
    hue) and the float32 factor of each active adjustment: ``brightness``, ``contrast``,
    ``saturation``, ``hue`` (turns); an inactive adjustment has no field. ``apply`` runs exactly
    the adjustments that have a field in ``params``, in ``order``.
    """
    del brightness, contrast, saturation, hue  # the params say which adjustments run
    active = tuple(n in params for n in JITTER_NAMES)
    if not any(active):
        return image
    factors = jnp.stack([jnp.asarray(params[n], jnp.float32) if n in params else jnp.float32(z)
                         for n, z in zip(JITTER_NAMES, _JITTER_NEUTRAL)])
    return jitter(image, jnp.asarray(params["order"], jnp.int32), factors, active)
