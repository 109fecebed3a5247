"""``color_twist``: DALI's colour twist (one 3x3 colour matrix per sample), for DALI users.

DALI's ``fn.color_twist`` changes brightness, contrast, saturation and hue with one affine map
per sample: saturation and hue act in YIQ space (a scaling and a rotation of the I/Q plane),
brightness and contrast scale around half the range. It is not torchvision's ColorJitter (fixed
order, linear saturation/hue instead of HSV, no per-stage clamping); use ``color_jitter`` for
that. Applied as three multiply-adds per output channel (no einsum), it is one elementwise pass.

Params (``op.sample``; float32, one value per sample): ``brightness``, ``contrast``,
``saturation``, ``hue`` (degrees), each drawn by augjax from its range (a number is used as is).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.param import Param
from augjax.calls import op
from augjax.kernels.pixels import is_int, mix_channels

__all__ = ["color_twist", "twist_matrix"]

#: DALI's RGB -> YIQ matrix (``dali/operators/image/color/color_twist.h``) and its exact
#: inverse: DALI 2.4 inverts it (probed: the identity twist is the identity, and ``saturation=0``
#: gives ``inv(RGB2YIQ) @ diag(1, 0, 0) @ RGB2YIQ`` to 1e-7, not the rounded 3-digit inverse
#: that older DALI versions hard-coded).
_RGB2YIQ64 = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
RGB2YIQ = _RGB2YIQ64.astype(np.float32)
YIQ2RGB = np.linalg.inv(_RGB2YIQ64).astype(np.float32)


def twist_matrix(brightness, contrast, saturation, hue, half_range: float):
    """DALI's per-sample map: ``M = b c * YIQ2RGB @ H(hue) @ S(saturation) @ RGB2YIQ`` and the
    offset ``(h - h c) b`` with ``h`` half the range (128 for uint8, 0.5 for float), products
    taken left to right in float32 as DALI does. ``hue`` is in degrees."""
    f32 = jnp.float32
    rad = jnp.asarray(hue, f32) * f32(math.pi / 180.0)
    cos, sin = jnp.cos(rad), jnp.sin(rad)
    one, zero = jnp.ones((), f32), jnp.zeros((), f32)
    hue_m = jnp.stack([jnp.stack([one, zero, zero]), jnp.stack([zero, cos, sin]),
                       jnp.stack([zero, -sin, cos])])
    s = jnp.asarray(saturation, f32)
    sat_m = jnp.diag(jnp.stack([one, s, s]))
    bc = jnp.asarray(brightness, f32) * jnp.asarray(contrast, f32)
    m = bc * jnp.asarray(YIQ2RGB)
    for right in (hue_m, sat_m, jnp.asarray(RGB2YIQ)):
        m = jnp.matmul(m, right, precision=jax.lax.Precision.HIGHEST)
    half = f32(half_range)
    offset = (half - half * jnp.asarray(contrast, f32)) * jnp.asarray(brightness, f32)
    return m, offset


def _param(default: float, doc: str, low: float | None = 0.0) -> Param:
    return Param(default, kind="float_or_pair", low=low, neutral=default, doc=doc)


@op(
    "color_twist",
    params={
        "brightness": _param(1.0, "brightness factor; a pair (lo, hi) is drawn per sample"),
        "contrast": _param(1.0, "contrast factor around half the range; a pair is drawn"),
        "saturation": _param(1.0, "saturation factor in YIQ; a pair is drawn per sample"),
        "hue": _param(0.0, "hue rotation in degrees (DALI's unit); a pair is drawn", low=None),
        "clip": Param(False, doc="clamp float results to [0, 1] (DALI does not; uint8 results "
                                 "always saturate to 0..255)"),
    },
    channels=(3,),
    reference="nvidia.dali.fn.color_twist",
)
def color_twist(image, params, *, clip):
    """DALI ``fn.color_twist``: one affine colour map per sample (see the module docstring).

    ``out = M @ rgb + offset`` with ``M`` and ``offset`` from :func:`twist_matrix`; uint8 results
    are rounded to the nearest level and saturated to 0..255, as DALI converts; float32 results
    are not clamped (DALI does not clamp floats either) unless ``clip=True``. Each parameter is
    a number (that value) or a pair ``(lo, hi)`` drawn uniformly per sample, as
    ``fn.random.uniform(range=...)`` gives DALI. Matches DALI's CPU operator to 1 level (float32
    rounding of the matrix product). Params: ``brightness``, ``contrast``, ``saturation``,
    ``hue`` (degrees).
    """
    b, c, s, h = (params[n] for n in ("brightness", "contrast", "saturation", "hue"))
    m, offset = twist_matrix(b, c, s, h, 128.0 if is_int(image.dtype) else 0.5)
    out = mix_channels(image.astype(jnp.float32), m, offset)
    if is_int(image.dtype):
        return jnp.clip(jnp.round(out), 0, 255).astype(image.dtype)
    return (jnp.clip(out, 0.0, 1.0) if clip else out).astype(image.dtype)
