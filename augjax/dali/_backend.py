"""Importing NVIDIA DALI and its JAX plugin, with the install hint when they are missing."""

from __future__ import annotations

from augjax.errors import BackendUnavailableError

__all__ = ["_dali"]


def _dali():
    try:
        from nvidia.dali import fn, types
        from nvidia.dali.plugin.jax import fn as jax_fn
    except ImportError as err:  # pragma: no cover - exercised only without DALI
        raise BackendUnavailableError(
            "augjax: DALI pipelines need NVIDIA DALI with its JAX plugin: "
            "pip install nvidia-dali-cuda120 (CPU, or CUDA 12; nvidia-dali-cuda130 for CUDA 13), "
            "or augjax's extra: pip install '.[dali]' in a checkout of augjax"
        ) from err
    return fn, types, jax_fn
