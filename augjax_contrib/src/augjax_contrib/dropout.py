"""Dropout ops on HWC images: a rotated grid of dropped squares, dropped channels, dropped pixels.

Images are uint8 (0..255) or float32 in [0, 1]; dropped values take a fill given as a fraction of
the dtype's maximum (0 = black).

Params (``op.sample``; per sample, float32 unless stated): ``grid_mask``: ``tile`` (a whole
number), ``ratio``, ``angle``, ``shift_x``, ``shift_y``, ``applied`` (bool); ``channel_dropout``:
``count`` (a whole number), ``channel_u`` ((C,) uniform: the dropped channels are the ``count``
with the smallest draws), ``applied`` (bool); ``pixel_dropout``: ``prob``, ``drop_u`` ((H, W, C')
uniform, C' = C per channel, else 1: dropped where ``drop_u < prob``). augjax draws the
per-sample values (a range uniformly, an integer range as whole numbers, a number as is); the
fields come from the op's ``sample`` key ``k``: ``applied = uniform(k, ()) < p`` (grid_mask),
``u = uniform(k, (1 + C,))`` with ``applied = u[0] < p`` and ``channel_u = u[1:]``
(channel_dropout), ``drop_u = uniform(k, (H, W, C'))`` (pixel_dropout).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax import Param, op
from augjax.errors import InputError
from augjax.kernels import is_int
from augjax_contrib._common import API, coin, pixel_grid, uniform

__all__ = ["grid_mask", "channel_dropout", "pixel_dropout"]

_P = Param(1.0, low=0.0, high=1.0, neutral=0.0, doc="probability of applying the op to a sample")


def _fill_value(fill: float, dtype) -> jax.Array:
    return jnp.asarray(round(fill * 255.0) if is_int(dtype) else fill, dtype)


@op(
    "grid_mask",
    params={
        "tile": Param(100, kind="int_or_pair", low=1, high=100000,
                      doc="tile side in pixels (square + gap), or an inclusive range"),
        "ratio": Param(0.5, kind="float_or_pair", low=0.0, high=1.0, neutral=0.0,
                       doc="dropped square side / tile side, or a range"),
        "angle": Param(0.0, kind="float_or_pair", low=-100.0, high=100.0,
                       doc="grid rotation in radians, or a range"),
        "shift_x": Param(0.0, kind="float_or_pair", doc="grid x shift after rotation (pixels)"),
        "shift_y": Param(0.0, kind="float_or_pair", doc="grid y shift after rotation (pixels)"),
        "p": _P,
    },
    sample=coin,
    reference="nvidia.dali.fn.grid_mask",
    api_version=API,
)
def grid_mask(image, params, *, p):
    """Zeroes squares laid out on a rotated, shifted grid (GridMask, arXiv:2001.04086).

    DALI ``fn.grid_mask(tile, ratio, angle, shift_x, shift_y)`` semantics: pixel ``(x, y)`` is
    mapped to ``u = (x cos a - y sin a - shift_x) / tile``, ``v = (x sin a + y cos a - shift_y) /
    tile``, and zeroed when ``frac(u) < ratio`` and ``frac(v) < ratio``. Beyond DALI, every
    parameter may be a range drawn per sample (``tile`` as inclusive integers) and ``p`` applies
    the mask to a fraction of the samples. Computed in float32 per pixel; DALI's CPU kernel
    accumulates the coordinates along a row, so pixels whose ``frac`` lies within about ``1e-5``
    of ``ratio`` or of 0 can land on the other side. Params: ``tile``, ``ratio``, ``angle``,
    ``shift_x``, ``shift_y``, ``applied`` (bool, ``uniform < p``).
    """
    t, r, a = params["tile"], params["ratio"], params["angle"]
    x, y = pixel_grid(image.shape[0], image.shape[1])
    ca, sa = jnp.cos(a), jnp.sin(a)
    u = (x * ca - y * sa - params["shift_x"]) / t
    v = (x * sa + y * ca - params["shift_y"]) / t
    keep = (u - jnp.floor(u) >= r) | (v - jnp.floor(v) >= r) | ~params["applied"]
    return jnp.where(keep[..., None], image, jnp.zeros((), image.dtype))


def _channel_draws(key, meta, params, *, count, p, **config):
    c = meta.channels
    high = count[1] if isinstance(count, tuple) else count
    if high >= c:
        raise InputError(
            f"channel_dropout: argument 'images' has {c} channel(s), but parameter 'count' "
            f"may drop {high}; at least one channel must remain",
            op="channel_dropout",
            argument="images",
        )
    u = jax.random.uniform(key, (1 + c,), jnp.float32)
    return {"channel_u": u[1:], "applied": u[0] < p}


@op(
    "channel_dropout",
    params={
        "count": Param(1, kind="int_or_pair", low=0, high=64,
                       doc="number of channels to drop, or an inclusive range"),
        "fill": Param(0.0, low=0.0, high=1.0, doc="value of dropped channels (fraction of max)"),
        "p": _P,
    },
    sample=_channel_draws,
    reference="albumentations.ChannelDropout (channel_drop_range, fill)",
    api_version=API,
)
def channel_dropout(image, params, *, fill, p):
    """Sets ``count`` randomly chosen channels of each image to ``fill``.

    albumentations ``ChannelDropout(channel_drop_range=count, fill=fill, p=p)`` semantics: the
    number of channels is drawn uniformly from the inclusive range, the channels uniformly
    without replacement; at least one channel must survive. Deviations: ``fill`` is a fraction
    of the maximum (albumentations takes pixel units) and ``p`` defaults to 1 (0.5 there).
    Params: ``count`` (a whole number), ``channel_u`` ((C,) uniform; the dropped channels are
    the ``count`` channels with the smallest draws, a uniformly random subset), ``applied``
    (bool, ``uniform < p``).

    Raises:
        InputError: when the image has no more channels than the largest count.
    """
    rank = jnp.argsort(jnp.argsort(params["channel_u"])).astype(jnp.float32)
    drop = (rank < params["count"]) & params["applied"]
    return jnp.where(drop, _fill_value(fill, image.dtype), image)


def _drop_field(key, meta, params, *, per_channel, **config):
    return {"drop_u": uniform(key, (meta.height, meta.width, meta.channels if per_channel else 1))}


@op(
    "pixel_dropout",
    params={
        "prob": Param(0.01, kind="float_or_pair", low=0.0, high=1.0, neutral=0.0,
                      doc="probability of dropping each pixel, or a range per sample"),
        "per_channel": Param(False, doc="drop channel values independently"),
        "fill": Param(0.0, low=0.0, high=1.0, doc="value of dropped pixels (fraction of max)"),
    },
    sample=_drop_field,
    reference="albumentations.PixelDropout (dropout_prob, per_channel, drop_value)",
    api_version=API,
)
def pixel_dropout(image, params, *, per_channel, fill):
    """Sets each pixel (or each channel value) to ``fill`` with probability ``prob``.

    albumentations ``PixelDropout(dropout_prob=prob, per_channel=per_channel, drop_value=fill)``
    with ``p=1``. Deviations: ``fill`` is a fraction of the maximum (albumentations takes pixel
    units, or ``None`` for random values, not offered here); ``prob`` may be a range.
    Params: ``prob``, ``drop_u`` ((H, W, C') uniform, C' = C per channel, else 1): dropped where
    ``drop_u < prob``.
    """
    drop = params["drop_u"] < params["prob"]
    return jnp.where(drop, _fill_value(fill, image.dtype), image)
