"""Volume intensity ops, as batchgeneratorsv2's transforms in nnU-Net's default pipeline
(``nnunetv2/training/nnUNetTrainer/nnUNetTrainer.py`` ``get_training_transforms``). Each op is
applied to a volume with probability ``p`` (nnU-Net's ``RandomTransform(apply_probability)``);
values are per channel where batchgeneratorsv2 has ``synchronize_channels=False``. Masks and
keypoints are unchanged. Factor ranges below 1 and above 1 are drawn as batchgeneratorsv2's
``BGContrast``: half the time below 1, half above (:func:`~augjax.catalog.volume_params.contrast_draw`).

- ``volume_noise``: ``x + std * N(0, 1)``, ``std`` uniform in ``std`` (one per volume; nnU-Net's
  ``noise_variance=(0, 0.1)`` is used as the standard deviation, as batchgeneratorsv2 does);
- ``volume_blur``: a separable gaussian (SciPy's ``gaussian_filter``: ``truncate=4``, mode
  ``"reflect"``), sigma uniform in ``sigma`` per channel and axis, each channel with
  probability ``p_per_channel``;
- ``volume_brightness``: ``x * m`` per channel;
- ``volume_contrast``: ``(x - mean) * f + mean`` per channel, clipped to the channel's
  original range with ``preserve_range``;
- ``volume_gamma``: on ``-x`` with probability ``p_invert``: ``((x - min) / range) ** gamma *
  range + min``, mean and std restored with ``retain_stats``;
- ``volume_lowres``: per channel (probability ``p_per_channel``) down to ``round(n * scale)``
  voxels by nearest and back up by linear interpolation, one ``scale`` for the three axes
  (:func:`augjax.kernels.volume_axes.lowres_matrix`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax.catalog import volume_params as vp
from augjax.errors import ParamError
from augjax.kernels import fields, volume_axes
from augjax.volumes import VolumeMeta, VolumeOp

__all__ = ["volume_blur", "volume_brightness", "volume_contrast", "volume_gamma",
           "volume_lowres", "volume_noise", "noise_field"]


def _checker(pairs: tuple[str, ...] = (), probabilities: tuple[str, ...] = ("p",),
             flags: tuple[str, ...] = ()):
    def check(op: str, c: dict[str, Any]) -> dict[str, Any]:
        out = {k: vp.probability(op, k, c[k]) for k in probabilities}
        out.update({k: vp.pair(op, k, c[k], 0.0) for k in pairs})
        for k in flags:
            if not isinstance(c[k], bool):
                raise ParamError(f"{op}: parameter '{k}' expects a bool, got {c[k]!r}",
                                    op=op, param=k)
            out[k] = c[k]
        return out

    return check


def _coin(key: jax.Array, p: float) -> jax.Array:
    return jax.random.bernoulli(jax.random.fold_in(key, 0x51), p)


# -- noise ------------------------------------------------------------------------------------

def _noise_sample(key, meta, *, mask, p, std):
    k_std, k_field = jax.random.split(key)
    return {"apply": _coin(key, p), "std": vp.uniform(k_std, std), "field": k_field}


def noise_field(params: dict[str, jax.Array], meta: VolumeMeta) -> jax.Array:
    """One volume's standard normal field ``(D, H, W, C)`` from its ``params["field"]`` key:
    drawn by the kernel, so a volume that draws no noise (skipped on the CPU) never draws it.
    One 32-bit word per value (:func:`augjax.kernels.fields.normal`: half the hashes of
    ``jax.random.normal`` under JAX's default ``jax_threefry_partitionable``, the same values
    under either setting)."""
    return fields.normal(params["field"], (*meta.spatial, meta.channels))


def _noise(volume, params, meta, **_):
    x = volume.astype(jnp.float32)
    return jnp.where(params["apply"], x + params["std"] * noise_field(params, meta), x)


volume_noise = VolumeOp("volume_noise", _noise, _noise_sample, {"p": 0.1, "std": (0.0, 0.1)},
                        check=_checker(("std",)),
                        doc="Additive gaussian noise (batchgeneratorsv2 GaussianNoiseTransform).",
                        active=lambda p: p["apply"])


# -- blur -------------------------------------------------------------------------------------

def _blur_sample(key, meta, *, mask, p, sigma, p_per_channel):
    k_sigma, k_channel = jax.random.split(key)
    chosen = jax.random.bernoulli(k_channel, p_per_channel, (meta.channels,)) & _coin(key, p)
    return {"sigma": jnp.where(chosen[:, None], vp.uniform(k_sigma, sigma, (meta.channels, 3)),
                               0.0)}


def _blur(volume, params, meta, *, sigma, **_):
    r = volume_axes.max_radius(sigma, 4.0)
    mats = tuple(jax.vmap(lambda s, n=n: volume_axes.gaussian_matrix(n, s, r))(
        params["sigma"][:, axis]) for axis, n in enumerate(meta.spatial))
    return volume_axes.separable(volume, mats)


volume_blur = VolumeOp("volume_blur", _blur, _blur_sample,
                       {"p": 0.2, "sigma": (0.5, 1.0), "p_per_channel": 0.5},
                       check=_checker(("sigma",), ("p", "p_per_channel")),
                       doc="A separable 3D gaussian blur (batchgeneratorsv2 GaussianBlurTransform).",
                       active=lambda p: jnp.any(p["sigma"] > 0))


# -- brightness, contrast -----------------------------------------------------------------------

def _factor_sample(name):
    def sample(key, meta, *, mask, p, **config):
        lo, hi = config[name]
        f = vp.contrast_draw(key, lo, hi, (meta.channels,))
        return {name: jnp.where(_coin(key, p), f, 1.0)}

    return sample


def _brightness(volume, params, meta, **_):
    return volume.astype(jnp.float32) * params["multiplier"]


volume_brightness = VolumeOp("volume_brightness", _brightness, _factor_sample("multiplier"),
                             {"p": 0.15, "multiplier": (0.75, 1.25)},
                             check=_checker(("multiplier",)),
                             doc="Multiplicative brightness per channel "
                                 "(batchgeneratorsv2 MultiplicativeBrightnessTransform).",
                             active=lambda p: jnp.any(p["multiplier"] != 1.0))


def _contrast(volume, params, meta, *, preserve_range, **_):
    x = volume.astype(jnp.float32)
    mean = jnp.mean(x, axis=(0, 1, 2))
    out = (x - mean) * params["factor"] + mean
    if preserve_range:
        out = jnp.clip(out, jnp.min(x, axis=(0, 1, 2)), jnp.max(x, axis=(0, 1, 2)))
    return out


volume_contrast = VolumeOp("volume_contrast", _contrast, _factor_sample("factor"),
                           {"p": 0.15, "factor": (0.75, 1.25), "preserve_range": True},
                           check=_checker(("factor",), flags=("preserve_range",)),
                           doc="Contrast around each channel's mean "
                               "(batchgeneratorsv2 ContrastTransform).",
                           active=lambda p: jnp.any(p["factor"] != 1.0))


# -- gamma ------------------------------------------------------------------------------------

def _gamma_sample(key, meta, *, mask, p, gamma, p_invert, **_):
    k_gamma, k_invert = jax.random.split(key)
    on = _coin(key, p)
    return {"apply": on, "gamma": vp.contrast_draw(k_gamma, *gamma, (meta.channels,)),
            "invert": jax.random.bernoulli(k_invert, p_invert)}


def _gamma(volume, params, meta, *, retain_stats, **_):
    x = volume.astype(jnp.float32)
    sign = jnp.where(params["invert"], -1.0, 1.0)
    y = x * sign
    axes = (0, 1, 2)
    mean, std = jnp.mean(y, axis=axes), jnp.std(y, axis=axes)
    low = jnp.min(y, axis=axes)
    span = jnp.max(y, axis=axes) - low
    y = (jnp.maximum(y - low, 0.0) / jnp.maximum(span, 1e-7)) ** params["gamma"] * span + low
    if retain_stats:
        y = (y - jnp.mean(y, axis=axes)) * (std / jnp.maximum(jnp.std(y, axis=axes), 1e-7)) + mean
    return jnp.where(params["apply"], y * sign, x)


volume_gamma = VolumeOp("volume_gamma", _gamma, _gamma_sample,
                        {"p": 0.3, "gamma": (0.7, 1.5), "p_invert": 0.0, "retain_stats": True},
                        check=_checker(("gamma",), ("p", "p_invert"), ("retain_stats",)),
                        doc="Gamma on the channel's range, optionally inverted, stats retained "
                            "(batchgeneratorsv2 GammaTransform).",
                        active=lambda p: p["apply"])


# -- low resolution ---------------------------------------------------------------------------

def _lowres_sample(key, meta, *, mask, p, scale, p_per_channel):
    k_scale, k_channel = jax.random.split(key)
    chosen = jax.random.bernoulli(k_channel, p_per_channel, (meta.channels,)) & _coin(key, p)
    return {"scale": jnp.where(chosen, vp.uniform(k_scale, scale, (meta.channels,)), 1.0)}


def _lowres(volume, params, meta, **_):
    mats = []
    for n in meta.spatial:
        m = jnp.clip(jnp.round(n * params["scale"]), 1, n)
        mats.append(jax.vmap(lambda mm, n=n: volume_axes.lowres_matrix(n, mm))(m))
    return volume_axes.separable(volume, tuple(mats))


volume_lowres = VolumeOp("volume_lowres", _lowres, _lowres_sample,
                         {"p": 0.25, "scale": (0.5, 1.0), "p_per_channel": 0.5},
                         check=_checker(("scale",), ("p", "p_per_channel")),
                         doc="Low-resolution simulation: nearest down, linear up "
                             "(batchgeneratorsv2 SimulateLowResolutionTransform).",
                         active=lambda p: jnp.any(p["scale"] != 1.0))
