"""Dropout ops on HWC images: a rotated grid of dropped squares, dropped channels, dropped pixels.

Images are uint8 (0..255) or float32 in [0, 1]; dropped values take a fill given as a fraction of
the dtype's maximum (0 = black). Every draw comes from the op's key as each docstring states:
scalar parameters from one draw ``u = uniform(key, (n,))``, where a range maps to
``low + u_i (high - low)``, an integer range to ``low + floor(u_i (high - low + 1))`` and the
``p`` coin is ``u_i < p``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from augjax import Param, op
from augjax.errors import InputError

from augjax_contrib._common import (
    int_pair,
    is_int,
    pixel_grid,
    span,
    span_int,
    uniform,
    uniforms,
)

__all__ = ["grid_mask", "channel_dropout", "pixel_dropout"]

_P = Param(1.0, low=0.0, high=1.0, neutral=0.0, doc="probability of applying the op to a sample")


def _fill_value(fill: float, dtype) -> jax.Array:
    return jnp.asarray(round(fill * 255.0) if is_int(dtype) else fill, dtype)


@op(
    "grid_mask",
    params={
        "tile": Param(100, kind="float_or_pair", low=1, high=100000, validate=int_pair,
                      doc="tile side in pixels (square + gap), or an inclusive range"),
        "ratio": Param(0.5, kind="float_or_pair", low=0.0, high=1.0, neutral=0.0,
                       doc="dropped square side / tile side, or a range"),
        "angle": Param(0.0, kind="float_or_pair", low=-100.0, high=100.0,
                       doc="grid rotation in radians, or a range"),
        "shift_x": Param(0.0, kind="float_or_pair", doc="grid x shift after rotation (pixels)"),
        "shift_y": Param(0.0, kind="float_or_pair", doc="grid y shift after rotation (pixels)"),
        "p": _P,
    },
    reference="nvidia.dali.fn.grid_mask",
)
def grid_mask(key, image, *, tile, ratio, angle, shift_x, shift_y, p):
    """Zeroes squares laid out on a rotated, shifted grid (GridMask, arXiv:2001.04086).

    DALI ``fn.grid_mask(tile, ratio, angle, shift_x, shift_y)`` semantics: pixel ``(x, y)`` is
    mapped to ``u = (x cos a - y sin a - shift_x) / tile``, ``v = (x sin a + y cos a - shift_y) /
    tile``, and zeroed when ``frac(u) < ratio`` and ``frac(v) < ratio``. Beyond DALI, every
    parameter may be a range drawn per sample (``tile`` as inclusive integers) and ``p`` applies
    the mask to a fraction of the samples. Computed in float32 per pixel; DALI's CPU kernel
    accumulates the coordinates along a row, so pixels whose ``frac`` lies within about ``1e-5``
    of ``ratio`` or of 0 can land on the other side. Draws: ``u = uniform(key, (6,))`` for tile,
    ratio, angle, shift_x, shift_y, coin.
    """
    d = uniforms(key, 6)
    t = span_int(d[0], tile).astype(jnp.float32)
    r = span(d[1], ratio)
    a = span(d[2], angle)
    x, y = pixel_grid(image.shape[0], image.shape[1])
    ca, sa = jnp.cos(a), jnp.sin(a)
    u = (x * ca - y * sa - span(d[3], shift_x)) / t
    v = (x * sa + y * ca - span(d[4], shift_y)) / t
    keep = (u - jnp.floor(u) >= r) | (v - jnp.floor(v) >= r) | (d[5] >= p)
    return jnp.where(keep[..., None], image, jnp.zeros((), image.dtype))


@op(
    "channel_dropout",
    params={
        "count": Param(1, kind="float_or_pair", low=0, high=64, validate=int_pair,
                       doc="number of channels to drop, or an inclusive range"),
        "fill": Param(0.0, low=0.0, high=1.0, doc="value of dropped channels (fraction of max)"),
        "p": _P,
    },
    reference="albumentations.ChannelDropout (channel_drop_range, fill)",
)
def channel_dropout(key, image, *, count, fill, p):
    """Sets ``count`` randomly chosen channels of each image to ``fill``.

    albumentations ``ChannelDropout(channel_drop_range=count, fill=fill, p=p)`` semantics: the
    number of channels is drawn uniformly from the inclusive range, the channels uniformly
    without replacement; at least one channel must survive. Deviations: ``fill`` is a fraction
    of the maximum (albumentations takes pixel units) and ``p`` defaults to 1 (0.5 there).
    Draws: ``u = uniform(key, (2 + C,))``: ``u[0]`` the count, ``u[1]`` the coin, and the
    dropped channels are the ``count`` channels with the smallest ``u[2:]`` (a uniformly random
    subset).

    Raises:
        InputError: when the image has no more channels than the largest count.
    """
    c = image.shape[-1]
    high = count[1] if isinstance(count, tuple) else count
    if high >= c:
        raise InputError(
            f"channel_dropout: argument 'images' has {c} channel(s), but parameter 'count' "
            f"may drop {high}; at least one channel must remain",
            op="channel_dropout",
            argument="images",
        )
    u = uniforms(key, 2 + c)
    rank = jnp.argsort(jnp.argsort(u[2:]))
    drop = (rank < span_int(u[0], count)) & (u[1] < p)
    return jnp.where(drop, _fill_value(fill, image.dtype), image)


@op(
    "pixel_dropout",
    params={
        "prob": Param(0.01, kind="float_or_pair", low=0.0, high=1.0, neutral=0.0,
                      doc="probability of dropping each pixel, or a range per sample"),
        "per_channel": Param(False, doc="drop channel values independently"),
        "fill": Param(0.0, low=0.0, high=1.0, doc="value of dropped pixels (fraction of max)"),
    },
    reference="albumentations.PixelDropout (dropout_prob, per_channel, drop_value)",
)
def pixel_dropout(key, image, *, prob, per_channel, fill):
    """Sets each pixel (or each channel value) to ``fill`` with probability ``prob``.

    albumentations ``PixelDropout(dropout_prob=prob, per_channel=per_channel, drop_value=fill)``
    with ``p=1``. Deviations: ``fill`` is a fraction of the maximum (albumentations takes pixel
    units, or ``None`` for random values, not offered here); ``prob`` may be a range.
    Draws: ``k_prob, k_drop = split(key)``; ``prob`` from ``uniform(k_prob, (1,))``;
    ``drop = uniform(k_drop, shape) < prob`` with ``shape = (H, W, C)`` per channel or
    ``(H, W, 1)``.
    """
    k_prob, k_drop = jax.random.split(key)
    h, w, c = image.shape
    drop = uniform(k_drop, (h, w, c if per_channel else 1)) < span(uniforms(k_prob, 1)[0], prob)
    return jnp.where(drop, _fill_value(fill, image.dtype), image)

