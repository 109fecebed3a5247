"""Noise ops on HWC images: Gaussian, shot (Poisson) and salt-and-pepper noise.

Images are uint8 (0..255) or float32 in [0, 1]. Parameters are given on one scale for both
dtypes (as torchvision ``GaussianNoise`` does): ``sigma=0.1`` is 0.1 on float images and 25.5
levels on uint8 ones. Every draw comes from the op's key, split as each docstring states, so a
sample's noise depends only on its key and the image shape, never on the pixel values. A range
``(low, high)`` maps a draw ``u`` in [0, 1) to ``low + u (high - low)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from augjax import Param, op

from augjax_contrib._common import (
    is_int,
    normal,
    peak,
    poisson,
    to_dtype,
    span,
    to_float,
    uniform,
    uniforms,
)

__all__ = ["gaussian_noise", "shot_noise", "salt_and_pepper"]


@op(
    "gaussian_noise",
    params={
        "mean": Param(0.0, low=-1.0, high=1.0, neutral=0.0,
                      doc="mean of the noise, on the [0, 1] scale"),
        "sigma": Param(0.1, kind="float_or_pair", low=0.0, high=10.0, neutral=0.0,
                       doc="standard deviation on the [0, 1] scale, or a range per sample"),
        "clip": Param(True, doc="clamp the result to the valid range"),
    },
    reference="torchvision.transforms.v2.GaussianNoise (torchvision 0.29)",
)
def gaussian_noise(key, image, *, mean, sigma, clip):
    """Adds Gaussian noise ``mean + sigma * z`` to every pixel and channel.

    torchvision 0.29 ``GaussianNoise(mean, sigma, clip)`` semantics. Float images:
    ``image + mean + sigma * z``, clamped to [0, 1] when ``clip``. uint8 images:
    ``image + trunc(255 * mean + 255 * sigma * z)`` in integers (the noise is truncated toward
    zero, as ``.to(torch.int16)`` does), clamped to 0..255 when ``clip``, otherwise wrapped
    modulo 256 as torchvision's uint8 cast does. Draws: ``k_sigma, k_z = split(key)``;
    ``z = jax.random.normal(k_z, image.shape)``; a ``sigma`` range uses
    ``uniform(k_sigma, (1,))`` (torchvision has a fixed sigma).
    """
    k_sigma, k_z = jax.random.split(key)
    s = span(uniforms(k_sigma, 1)[0], sigma)
    z = normal(k_z, image.shape)
    if is_int(image.dtype):
        noise = jnp.trunc(jnp.float32(mean * 255.0) + z * (s * 255.0)).astype(jnp.int32)
        out = image.astype(jnp.int32) + noise
        out = jnp.clip(out, 0, 255) if clip else jnp.bitwise_and(out, 255)
        return out.astype(image.dtype)
    out = image + (jnp.float32(mean) + z * s)
    return (jnp.clip(out, 0.0, 1.0) if clip else out).astype(image.dtype)


@op(
    "shot_noise",
    params={
        "factor": Param(20.0, kind="float_or_pair", low=0.0, high=1000.0, neutral=0.0,
                        doc="intensity of one event in uint8 levels (0 = identity), or a range"),
    },
    reference="nvidia.dali.fn.noise.shot",
)
def shot_noise(key, image, *, factor):
    """Replaces each value ``v`` by ``factor * Poisson(v / factor)`` (photon shot noise).

    DALI ``fn.noise.shot`` semantics on uint8 images: ``out = poisson(max(0, v / factor)) *
    factor``, rounded and saturated to 0..255; ``factor = 0`` is the identity. ``factor`` is in
    uint8 levels for both dtypes: float images are scaled by 255 before and after (DALI applies
    ``factor`` to raw float values), and clamped to [0, 1]. Draws: ``k_factor, k_events =
    split(key)``; ``factor`` from ``uniform(k_factor, (1,))``; events
    ``jax.random.poisson(k_events, lam, image.shape)``. That sampler rejects candidates by float
    comparisons that XLA's CPU and GPU backends round differently, so the same key gives other
    draws on CPU and GPU (3.4 % of values on an H200); on one backend it is reproducible, and the
    DALI path equals the array path bitwise.
    """
    k_factor, k_events = jax.random.split(key)
    f = span(uniforms(k_factor, 1)[0], factor)
    scale = 255.0 / peak(image.dtype)
    v = to_float(image) * scale
    lam = jnp.maximum(v / jnp.maximum(f, 1e-6), 0.0)
    events = poisson(k_events, lam).astype(jnp.float32)
    out = jnp.where(f > 0, events * f, v) / scale
    return to_dtype(out, image.dtype)


@op(
    "salt_and_pepper",
    params={
        "prob": Param(0.05, kind="float_or_pair", low=0.0, high=1.0, neutral=0.0,
                      doc="probability of a value being replaced, or a range per sample"),
        "salt_vs_pepper": Param(0.5, low=0.0, high=1.0,
                                doc="probability that a replaced value becomes salt"),
        "per_channel": Param(False, doc="draw the noise per channel instead of per pixel"),
        "salt": Param(1.0, low=0.0, high=1.0, doc="salt value, as a fraction of the maximum"),
        "pepper": Param(0.0, low=0.0, high=1.0, doc="pepper value, as a fraction of the maximum"),
    },
    reference="nvidia.dali.fn.noise.salt_and_pepper",
)
def salt_and_pepper(key, image, *, prob, salt_vs_pepper, per_channel, salt, pepper):
    """Replaces random pixels (or channel values) with salt (white) or pepper (black).

    DALI ``fn.noise.salt_and_pepper`` semantics: each value is replaced with probability
    ``prob``; a replaced value is salt with probability ``salt_vs_pepper``, else pepper; with
    ``per_channel=False`` one draw per pixel covers all its channels. ``salt``/``pepper`` are
    fractions of the dtype's maximum (uint8: rounded ``255 * salt``); DALI's defaults are the
    same for uint8, but its float pepper default is -1.0, here 0.0 (float images are in [0, 1]).
    Draws: ``k_prob, k_field = split(key)``; ``prob`` from ``uniform(k_prob, (1,))``;
    ``v = uniform(k_field, (2,) + shape)`` with ``shape = (H, W, C)`` per channel or
    ``(H, W, 1)``; ``hit = v[0] < prob``, ``is_salt = v[1] < salt_vs_pepper``.
    """
    k_prob, k_field = jax.random.split(key)
    h, w, c = image.shape
    v = uniform(k_field, (2, h, w, c if per_channel else 1))
    hit = v[0] < span(uniforms(k_prob, 1)[0], prob)
    is_salt = v[1] < salt_vs_pepper
    top = peak(image.dtype)
    salt_v = jnp.asarray(round(salt * top) if is_int(image.dtype) else salt, image.dtype)
    pepper_v = jnp.asarray(round(pepper * top) if is_int(image.dtype) else pepper, image.dtype)
    return jnp.where(hit, jnp.where(is_salt, salt_v, pepper_v), image)
