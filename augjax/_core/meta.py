"""Meta: what a sampler knows of its input, before any pixel is read."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Meta"]


class Meta(NamedTuple):
    """What a sampler knows of its input: one image's ``height``, ``width``, ``channels`` and
    ``dtype`` (a NumPy dtype name, "uint8" or "float32"), and ``batch`` (the batch size, for
    batch-level ops; None for per-sample sampling)."""

    height: int
    width: int
    channels: int
    dtype: str
    batch: int | None = None
