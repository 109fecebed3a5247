"""Reading a window of an image whose true size is smaller than its array (a padded batch of
images of different sizes): crop a box, resample it, crop an output window with padding, as
one separable pass per axis whose weights come from traced sizes (:func:`read_window`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax.kernels.pixels import is_int
from augjax.kernels.warp import check_fill, window_weights

__all__ = ["read_window"]

_F32 = jnp.float32


def read_window(image: jax.Array, height, width, window: Any, out: tuple[int, int],
                interpolation: str = "bilinear", antialias: bool = True,
                op: str = "read_window") -> jax.Array:
    """One sample's output of a crop / resize :class:`augjax._core.meta.Window`.

    ``image`` is ``(H, W, C)``, of which the top-left ``height`` x ``width`` pixels (traced)
    are the image. The window's ``box`` (default: the whole image) is resampled to ``size``
    (default: the box's size, an exact copy) and the ``out`` pixels from ``anchor`` (default
    0) are returned; where they leave the resampled image they hold ``fill``. Bilinear
    resampling is ATen's ``resized_crop`` (width pass, uint8 rounding, height pass); a copy
    uses nearest weights of scale 1, which copy pixels exactly.
    """
    h_pad, w_pad, _ = image.shape
    hh, ww = jnp.asarray(height, jnp.int32), jnp.asarray(width, jnp.int32)
    box = (jnp.stack([0, 0, hh, ww]) if window.box is None else window.box)
    size = box[2:] if window.size is None else window.size
    anchor = jnp.zeros(2, jnp.int32) if window.anchor is None else window.anchor
    mode = interpolation if window.size is not None else "nearest"
    wy = window_weights(out[0], anchor[0], size[0], h_pad, box[0], box[2], mode, antialias)
    wx = window_weights(out[1], anchor[1], size[1], w_pad, box[1], box[3], mode, antialias)
    hi = jax.lax.Precision.HIGHEST
    x = jnp.einsum("ow,hwc->hoc", wx, image.astype(_F32), precision=hi)
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)  # ATen uint8 passes round half up
    x = jnp.einsum("ph,hoc->poc", wy, x, precision=hi)
    rows = anchor[0] + jnp.arange(out[0])
    cols = anchor[1] + jnp.arange(out[1])
    inside = ((rows >= 0) & (rows < size[0]))[:, None] & ((cols >= 0) & (cols < size[1]))[None]
    fill = check_fill(window.fill, image, op)
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)
        fill = jnp.clip(jnp.round(fill), 0.0, 255.0)
    x = jnp.where(inside[..., None], x, fill)
    if is_int(image.dtype):
        x = jnp.clip(x, 0.0, 255.0)
    return x.astype(image.dtype)
