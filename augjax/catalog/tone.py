"""Tone ops: pointwise level maps, histogram ops and sharpness (uint8 0..255 or float32 0..1).

Semantics are PIL's ``ImageOps``/``ImageEnhance`` and torchvision's ``transforms.v2.functional``
kernels (which follow PIL) on uint8; float images use the same maps in the [0, 1] scale, as
torchvision does. Thresholds and additions are given in uint8 levels (0..255) for both dtypes:
float images use ``value / 255``. Every kernel sees one HWC image and works per channel, so any
number of channels is accepted.

The per-sample parameters (``solarize.threshold``, ``solarize_add.addition``, ``posterize.bits``,
``sharpness.factor``, ``gamma.gamma``) are drawn by augjax (a number is used as is, a pair is a
range) or set by a policy from a magnitude, and reach the kernels as float32 values in
``params``: no kernel branches on them in Python.

Params (``op.sample``; float32, one value per sample): ``solarize``: ``threshold``;
``solarize_add``: ``addition``; ``posterize``: ``bits`` (a whole number); ``sharpness``:
``factor``; ``gamma``: ``gamma``. ``invert``, ``equalize`` and ``autocontrast`` draw nothing.
The histogram arithmetic of ``equalize`` and ``autocontrast`` is public in
:mod:`augjax.kernels.histogram`.
"""

from __future__ import annotations

import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax.catalog._fuse import Blend, ImageStats, Tone, fused
from augjax.kernels.histogram import lookup, map_levels, stretch
from augjax.kernels.pixels import (
    bound,
    from_unit,
    invert_levels,
    is_int,
    to_dtype,
    to_unit,
)
from augjax.kernels.enhance import sharpen

__all__ = [
    "autocontrast",
    "equalize",
    "gamma",
    "invert",
    "posterize",
    "sharpness",
    "sharpness_pixels",
    "solarize",
    "solarize_add",
]


@fused(Tone())
@op("invert", reference="torchvision.transforms.v2.functional.invert")
def invert(image, params):
    """Inverts every level: ``255 - x`` for uint8, ``1 - x`` for float (PIL ImageOps.invert)."""
    return invert_levels(image)


@fused(Tone())
@op(
    "solarize",
    params={
        "threshold": Param((128.0, 255.0), kind="float_or_pair", low=0.0, high=256.0, levels=True,
                           neutral=256.0, magnitude=(255.0, 0.0),
                           doc="levels >= threshold are inverted; 256 changes nothing; a pair "
                               "is drawn per sample"),
    },
    reference="PIL.ImageOps.solarize / torchvision.transforms.v2.functional.solarize",
)
def solarize(image, params):
    """Inverts every level at or above ``threshold`` (PIL ImageOps.solarize).

    ``x >= t ? max - x : x`` with ``t`` in uint8 levels (``t / 255`` on float images); 256 is the
    identity. torchvision RandAugment's magnitude map is ``threshold = 255 * linspace(1, 0)``.
    Params: ``threshold``.
    """
    return jnp.where(image.astype(jnp.float32) >= params["threshold"], invert_levels(image), image)


@fused(Tone())
@op(
    "solarize_add",
    params={
        "addition": Param((0.0, 110.0), kind="float_or_pair", low=0.0, high=255.0, neutral=0.0,
                          magnitude=(0.0, 110.0), levels=True,
                          doc="added below the threshold; a pair is drawn per sample"),
        "threshold": Param(128.0, low=0.0, high=256.0, levels=True, doc="levels below it change"),
    },
    reference="timm.data.auto_augment.solarize_add",
)
def solarize_add(image, params, *, threshold):
    """Adds ``addition`` to every level below ``threshold``, clipped at the maximum.

    timm ``solarize_add`` (AutoAugment/RandAugment "SolarizeAdd"): ``x < t ? min(255, x + a) : x``
    on uint8, the same in the [0, 1] scale on float images (``a / 255``, ``t / 255``). timm's
    magnitude map is ``addition = 110 * level / 10``. A non-whole addition on uint8 is rounded to
    the nearest level after adding (timm only uses whole additions). Params: ``addition``.
    """
    x = image.astype(jnp.float32)
    out = jnp.where(x < threshold, jnp.minimum(x + params["addition"], bound(image.dtype)), x)
    return to_dtype(out, image.dtype, rounding="round")


@fused(Tone())
@op(
    "posterize",
    params={
        "bits": Param((4, 8), kind="int_or_pair", low=0, high=8, neutral=8, magnitude=(8, 4),
                      doc="bits kept per channel, 0..8; a pair (lo, hi) draws a whole number "
                          "in [lo, hi] per sample"),
    },
    reference="PIL.ImageOps.posterize / torchvision.transforms.v2.functional.posterize",
)
def posterize(image, params):
    """Keeps the ``bits`` most significant bits of every level.

    uint8: ``x & (0xFF << (8 - bits))`` (PIL ImageOps.posterize, torchvision). float images:
    torchvision's ``min(floor(x * 2**bits), 2**bits - 1) / 2**bits``, except that ``bits = 8``
    returns the image unchanged as on uint8 (torchvision's float kernel still quantizes to
    1/256 steps there), so 8 is the identity for both dtypes. Params: ``bits`` (float32, a
    whole number; rounded and clipped to 0..8).
    """
    b = jnp.clip(jnp.round(jnp.asarray(params["bits"], jnp.float32)), 0.0, 8.0).astype(jnp.int32)
    if is_int(image.dtype):
        mask = jnp.left_shift(jnp.uint32(255), (8 - b).astype(jnp.uint32)).astype(image.dtype)
        return image & mask
    levels = jnp.exp2(b.astype(jnp.float32))
    quantized = jnp.clip(jnp.floor(image * levels), 0.0, levels - 1.0) / levels
    return jnp.where(b >= 8, image, quantized).astype(image.dtype)


def _equalize_levels(values, params, stats):
    """Equalize's level map of ``values`` by the table of the image of ``stats``."""
    dtype = values.dtype
    q = values if is_int(dtype) else from_unit(values, jnp.uint8)
    lut, valid = stats.equalize
    identity = jnp.arange(lut.shape[0], dtype=lut.dtype)[:, None]
    out = lookup(q, jnp.where(valid, lut, identity).astype(jnp.uint8))  # a uint8 table
    if is_int(dtype):
        return out.astype(dtype)
    return (out.astype(jnp.float32) * (1.0 / 255.0)).astype(dtype)


@fused(Tone(_equalize_levels, stats=("equalize",)))
@op("equalize", reference="PIL.ImageOps.equalize (as torchvision equalize)")
def equalize(image, params):
    """Equalizes the histogram of each channel with PIL's lookup table (PIL ImageOps.equalize).

    Per channel, with ``hist`` the 256-bin histogram and ``step = (pixels - hist[max level]) //
    255``: ``lut[i] = (cumsum(hist)[i - 1] + step // 2) // step``, ``lut[0] = 0``, clipped to
    255 (as torchvision); a channel with ``step = 0`` (one level, or nearly) is left unchanged
    (:func:`augjax.kernels.equalize_lut`). This is PIL's formula, not OpenCV's ``equalizeHist``
    (``round((cdf - cdf_min) * 255 / (pixels - cdf_min))``), which DALI
    ``fn.experimental.equalize`` and so DALI's auto_aug ``equalize`` use: the two tables differ
    by a few levels. Float images are first quantized like torchvision (``trunc(x * 255.999)``)
    and returned as ``level / 255`` (so their gradient is zero).
    """
    return _equalize_levels(image, params, ImageStats(image))


def _autocontrast_levels(values, params, stats):
    """Autocontrast's level map of ``values`` by the range of the image of ``stats``."""
    dtype = values.dtype
    lo, hi = stats.range
    return to_dtype(stretch(values.astype(jnp.float32), lo, hi, dtype), dtype)


@fused(Tone(_autocontrast_levels, stats=("range",)))
@op("autocontrast",
    reference="PIL.ImageOps.autocontrast / torchvision.transforms.v2.functional.autocontrast")
def autocontrast(image, params):
    """Stretches each channel so that its minimum maps to 0 and its maximum to the top level.

    torchvision autocontrast (PIL ImageOps.autocontrast with ``cutoff=0``), bit for bit: per
    sample and channel, ``(x - min) / ((max - min) * (1 / 255))``, clamped, truncated for uint8
    (float images use 1 for 255); a constant channel is left unchanged
    (:func:`augjax.kernels.stretch`). PIL maps through a rounded table: <= 1 level apart.
    uint8 images map each channel's 256 levels once and look the pixels up, every pixel on a
    TPU (:func:`augjax.kernels.histogram.map_levels`; CPU, B=16: 2.7 -> 1.0 ms).
    """
    stats = ImageStats(image)

    def levels(x, lo, hi):
        return _autocontrast_levels(x, params, ImageStats(x, known={"range": (lo, hi)}))

    return map_levels(image, levels, *stats.range)


@fused(Blend("smooth"))
@op("sharpness",
    params={"factor": Param.factor("0 = smoothed, 1 = unchanged, > 1 sharper; a pair is drawn "
                                   "per sample", aliases={"sharpness_factor": "torchvision"})},
    reference="PIL.ImageEnhance.Sharpness / torchvision.transforms.v2.functional.adjust_sharpness")
def sharpness(image, params):
    """Blends the image with a smoothed copy by ``factor`` (PIL ImageEnhance.Sharpness).

    The smoothed copy is the 3x3 kernel ``[[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13`` over the
    interior (rounded to whole levels for uint8) with the one-pixel border kept from the input;
    ``out = x + (1 - factor) * (smooth - x)``, clamped, truncated for uint8: torchvision's
    adjust_sharpness exactly. PIL blends with its own rounding and may differ by one level.
    Images of height or width <= 2 are returned unchanged. Params: ``factor``.
    """
    dtype = image.dtype
    h, w, c = image.shape
    if h <= 2 or w <= 2:
        return image
    rows = image.reshape(h, w * c).astype(jnp.float32)
    out = _sharpness_rows(rows, params["factor"], dtype, c)
    return to_dtype(jnp.clip(out, 0.0, bound(dtype)), dtype).reshape(h, w, c)


def sharpness_pixels(x, factor, dtype):
    """:func:`sharpness`'s pixels of the float32 HWC image ``x`` (values in ``dtype``'s scale),
    unclamped (:func:`augjax.kernels.enhance.sharpen`); ``x`` itself where its height or
    width is <= 2."""
    h, w, c = x.shape
    if h <= 2 or w <= 2:
        return x
    return _sharpness_rows(x.reshape(h, w * c), factor, dtype, c).reshape(h, w, c)


def _sharpness_rows(rows, factor, dtype, c):
    """:func:`augjax.kernels.enhance.sharpen` on the ``(H, W * C)`` rows of an image of ``c``
    channels: each value's 3x3 window read from full-size shifted views of a zero-padded copy
    (a pixel's neighbour is ``c`` values away). On rows, XLA's CPU backend vectorises the pass
    along whole rows, not one over an innermost axis of 3 (CPU, B=16: 6.0 -> 1.2 ms; the same
    values); pad, slices and arithmetic fuse into one elementwise pass."""
    h, wc = rows.shape
    xp = jnp.pad(rows, ((1, 1), (c, c)))
    window = [xp[i:h + i, j * c:wc + j * c] for i in range(3) for j in range(3)]
    r = jnp.arange(h)[:, None]
    col = jnp.arange(wc)[None, :]
    border = (r == 0) | (r == h - 1) | (col < c) | (col >= wc - c)
    return sharpen(rows, window, border, factor, dtype)


@op(
    "gamma",
    params={
        "gamma": Param((0.8, 1.25), kind="float_or_pair", low=0.0, neutral=1.0,
                       doc="exponent (< 1 brightens); a pair is drawn per sample"),
        "gain": Param(1.0, low=0.0, doc="multiplier applied after the power"),
    },
    reference="torchvision.transforms.v2.functional.adjust_gamma",
)
def gamma(image, params, *, gain):
    """Applies ``gain * x ** gamma`` in the [0, 1] scale, clamped (torchvision adjust_gamma).

    uint8 images are scaled by 1/255 and brought back with torchvision's ``trunc(x * 255.999)``.
    Deviation: float inputs are clamped to [0, 1] before the power, so out-of-range values
    give finite results in [0, 1] (torchvision computes ``x ** gamma`` as is: NaN for
    ``x < 0`` and a fractional ``gamma``, and ``x > 1`` raised before its output clamp);
    in-range images are unaffected. Params: ``gamma``.
    """
    dtype = image.dtype
    x = jnp.clip(to_unit(image.astype(jnp.float32), dtype), 0.0, 1.0)
    out = jnp.power(x, params["gamma"])
    out = jnp.clip(out * gain, 0.0, 1.0)
    return from_unit(out, dtype)
