"""Masks through ops: carried as their bytes plus an inside channel (:func:`encode_masks`,
:func:`decode_masks`), run through an op's own kernel with nearest sampling and no antialias
(:func:`run_op_on_mask`, :func:`mask_config`), in groups of the op's declared channel count
(:func:`channel_groups`). :mod:`augjax._runtime.targets.follow` says how masks follow a chain."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.targets import KEEP
from augjax.errors import InputError

__all__ = ["channel_groups", "decode_masks", "encode_masks", "mask_config", "run_op_on_mask"]


def encode_masks(masks: jax.Array) -> jax.Array:
    """``(N, H, W[, K])`` integer/bool masks as an ``(N, H, W, C)`` uint8 image: each id's bytes,
    then one channel that is 255 inside the image."""
    m = masks if masks.ndim == 4 else masks[..., None]
    if m.dtype == jnp.bool_:
        b = m.astype(jnp.uint8)
    else:
        b = jax.lax.bitcast_convert_type(m, jnp.uint8)
        if b.ndim == 5:
            b = b.reshape(*b.shape[:3], -1)
    inside = jnp.full(b.shape[:3] + (1,), 255, jnp.uint8)
    return jnp.concatenate([b, inside], axis=-1)


def decode_masks(enc: jax.Array, dtype: Any, rank: int, fill: int) -> jax.Array:
    """The masks back from :func:`encode_masks`'s image, ``fill`` where the pixel came from
    outside the image."""
    dtype = jnp.dtype(dtype)
    inside = enc[..., -1] >= 128
    b = enc[..., :-1]
    if dtype == jnp.bool_:
        v = b != 0
    elif dtype.itemsize == 1:
        v = jax.lax.bitcast_convert_type(b, dtype)
    else:
        v = jax.lax.bitcast_convert_type(b.reshape(*b.shape[:3], -1, dtype.itemsize), dtype)
    v = jnp.where(inside[..., None], v, jnp.asarray(fill).astype(dtype))
    return v[..., 0] if rank == 3 else v


def mask_config(spec: Any, config: dict[str, Any]) -> dict[str, Any]:
    out = dict(config)
    if "interpolation" in spec.params:
        out["interpolation"] = "nearest"
    if "antialias" in spec.params:
        out["antialias"] = False
    if "fill" in spec.params:
        p = spec.params["fill"]
        out["fill"] = None if p.optional else ((0.0,) if p.kind == "floats" else 0.0)
    return out


def run_op_on_mask(spec: Any, config: dict[str, Any], mask: jax.Array,
                   params: Any) -> jax.Array:
    """A sample-level op (``spec`` configured with ``config``) on one encoded mask
    ``(H, W, C)`` uint8 by its ``targets`` rule."""
    rule = spec.targets.masks
    if rule == KEEP:
        return mask
    if rule != "kernel":
        raise InputError(f"{spec.name}: masks cannot follow this op"
                         f"{': ' + spec.targets.reason if spec.targets.reason else ''}",
                         op=spec.name, argument="masks")
    config = mask_config(spec, config)
    as_float = "uint8" not in spec.dtypes
    x = mask.astype(jnp.float32) / 255.0 if as_float else mask
    out = jnp.concatenate([spec.run((part,), params, config)
                           for part in channel_groups(x, spec.channels)], axis=-1)
    out = out[..., :mask.shape[-1]]
    if as_float:
        out = jnp.clip(jnp.round(out * 255.0), 0, 255)
    return out.astype(jnp.uint8)


def channel_groups(x: jax.Array, channels: tuple[int, ...] | None) -> list[jax.Array]:
    """The encoded mask as the kernel takes it: whole where the op accepts its channel count,
    else zero-padded to a multiple of the largest declared count and cut into such groups (an
    RGB-only kernel, ``channels=(3,)``, gets the mask's channels three at a time)."""
    c = x.shape[-1]
    if channels is None or c in channels:
        return [x]
    k = max(channels)
    pad = -c % k
    if pad:
        x = jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (pad,), x.dtype)], axis=-1)
    return [x[..., i:i + k] for i in range(0, c + pad, k)]


# -- boxes and keypoints -------------------------------------------------------------------------
