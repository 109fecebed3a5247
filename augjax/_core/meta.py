"""Meta: what a sampler knows of its input, before any pixel is read."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Meta", "Window"]


class Meta(NamedTuple):
    """What a sampler knows of its input: one image's ``height``, ``width``, ``channels`` and
    ``dtype`` (a NumPy dtype name, "uint8" or "float32"), and ``batch`` (the batch size, for
    batch-level ops; None for per-sample sampling). For images of different sizes (ops that
    declare ``ragged=``) ``height`` and ``width`` are traced int32 scalars, the image's true
    size."""

    height: int
    width: int
    channels: int
    dtype: str
    batch: int | None = None


class Window(NamedTuple):
    """How an op reads one image whose size is not the batch's (images of different sizes).

    Traced per-sample values (``None`` where the op does not do that part):

    - ``box``: int32 ``(4,)`` top, left, height, width of the region the op resamples; ``None``
      with ``size`` given means the whole image.
    - ``size``: int32 ``(2,)`` height, width the region is resampled to (``None``: no
      resampling).
    - ``anchor``: int32 ``(2,)`` top, left of the output window in the (resampled) image,
      negative where it starts in the padding (``None``: the whole image is the output).

    Static: ``out``, the output's ``(height, width)`` when it does not depend on the image's
    size (``None`` otherwise: ``resize`` to a shorter side), and ``fill``, the padding value
    (fractions of the range, one or one per channel).
    """

    box: Any = None
    size: Any = None
    anchor: Any = None
    out: tuple[int, int] | None = None
    fill: tuple[float, ...] = (0.0,)
