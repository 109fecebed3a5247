"""Colour ops on RGB images (uint8 0..255 or float32 0..1), torchvision semantics."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._param import Param
from augjax._spec import op
from augjax.catalog._pixels import to_dtype
from augjax.catalog._tv_color import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
)

__all__ = ["color_jitter", "factor_range"]


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
        raise ValueError(f"the range ({lo:g}, {hi:g}) must be increasing within [{low:g}, {high:g}]")
    return (float(lo), float(hi))


def _jitter_param(doc: str, *, hue: bool = False) -> Param:
    if hue:
        check = lambda v: factor_range(v, center=0.0, low=-0.5, high=0.5, clip=False)  # noqa: E731
    else:
        check = lambda v: factor_range(v)  # noqa: E731
    return Param(0.0, kind="float_or_pair", low=-0.5 if hue else 0.0, high=0.5 if hue else None,
                 neutral=0.0, validate=check, doc=doc)


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
)
def color_jitter(key, image, *, brightness, contrast, saturation, hue):
    """Randomly changes brightness, contrast, saturation and hue, in a random order per sample.

    Same as torchvision ColorJitter: each factor is drawn uniformly from its range (a number x
    means [max(0, 1-x), 1+x], hue x means [-x, x]); the four adjustments run in a random order;
    an adjustment whose range is exactly its neutral value is skipped. uint8 images are truncated
    to whole levels after each adjustment, as torchvision does.
    """
    dtype = image.dtype
    x = image.astype(jnp.float32)
    k_perm, k_b, k_c, k_s, k_h = jax.random.split(key, 5)
    adjust = [adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue]
    ranges = [brightness, contrast, saturation, hue]
    neutral = [1.0, 1.0, 1.0, 0.0]
    active = [i for i in range(4) if ranges[i] != (neutral[i], neutral[i])]
    if not active:
        return image
    factors = [
        jax.random.uniform(k, (), minval=r[0], maxval=r[1])
        for k, r in zip((k_b, k_c, k_s, k_h), ranges)
    ]
    order = jax.random.permutation(k_perm, 4)
    for slot in range(4):
        # Every active adjustment is computed and the one this sample has at this slot is
        # selected: branch-free, so each sample can have its own order under vmap.
        out = x
        for i in active:
            out = jnp.where(order[slot] == i, adjust[i](x, factors[i], dtype), out)
        x = out
    return to_dtype(x, dtype)
