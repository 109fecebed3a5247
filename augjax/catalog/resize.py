"""``resize``: torchvision v2 ``Resize`` on HWC images (uint8 0..255 or float32 0..1).

``size=(h, w)`` resizes every image to ``h`` x ``w``; ``size=s`` (one int) scales the shorter
side to ``s`` and the longer one to ``floor(s * long / short)`` (torchvision's
``_compute_resized_output_size``), capped by ``max_size``. With one int the output size depends
on each image's size: on images of different sizes follow it with ``center_crop`` or
``random_crop`` (timm's eval transform: ``resize(256)`` then ``center_crop(224)``).
Deterministic: it draws nothing.
"""

from __future__ import annotations

import jax.numpy as jnp

from augjax._core.meta import Window
from augjax._core.param import Param
from augjax.calls import op
from augjax.kernels.matrix import crop_resize_matrix
from augjax.kernels.resize import RESIZE_INTERPOLATIONS, resize_crop

__all__ = ["resize", "resized_size"]


def _check_size(value):
    if len(value) not in (1, 2) or not all(float(v).is_integer() for v in value):
        raise ValueError("expected one int (the shorter side) or (height, width)")
    return tuple(int(v) for v in value)


def resized_size(h, w, size: tuple[int, ...], max_size: int | None = None):
    """torchvision's output size for ``size`` (one int: the shorter side; two: exact) of an
    ``h`` x ``w`` image, in integer arithmetic; ``h`` and ``w`` may be traced int32."""
    if len(size) == 2:
        return size
    s = size[0]
    traced = not (isinstance(h, int) and isinstance(w, int))
    minimum, maximum = (jnp.minimum, jnp.maximum) if traced else (min, max)
    short, long = minimum(h, w), maximum(h, w)
    new_short, new_long = s, (s * long) // short
    if max_size is not None:
        over = new_long > max_size
        capped = (max_size * new_short) // new_long
        if traced:
            new_short, new_long = jnp.where(over, capped, new_short), jnp.minimum(new_long,
                                                                                  max_size)
        elif over:
            new_short, new_long = capped, max_size
    if traced:
        portrait = w <= h
        return (jnp.where(portrait, new_long, new_short), jnp.where(portrait, new_short, new_long))
    return (new_long, new_short) if w <= h else (new_short, new_long)


def _output_size(h: int, w: int, *, size, max_size, **_) -> tuple[int, int]:
    return tuple(int(v) for v in resized_size(h, w, size, max_size))


def _matrix(params, meta, *, size, max_size, **_):
    oh, ow = resized_size(meta.height, meta.width, size, max_size)
    return crop_resize_matrix(0, 0, meta.height, meta.width, oh, ow)


def _window(params, h, w, *, size, max_size, **_):
    """The window of one image of a ragged batch, read by :mod:`augjax.kernels.window`'s taps
    (nearest, bilinear or bicubic, as ``random_resized_crop``'s)."""
    out = tuple(size) if len(size) == 2 else None
    return Window(size=jnp.stack(resized_size(h, w, size, max_size)).astype(jnp.int32), out=out)


def _check(*, size, max_size, **_):
    if max_size is not None and (len(size) != 1 or max_size <= size[0]):
        raise ValueError(f"max_size={max_size} needs size to be one int smaller than it, got "
                         f"size={size}")


@op(
    "resize",
    params={
        "size": Param(None, kind="floats", low=1, required=True, validate=_check_size,
                      doc="(height, width), or one int: the shorter side's new length"),
        "max_size": Param(None, kind="int", low=1, optional=True,
                          doc="cap on the longer side when size is one int"),
        "interpolation": Param("bilinear", choices=RESIZE_INTERPOLATIONS,
                               doc="'bilinear', 'bicubic' or 'nearest'"),
        "antialias": Param(True, doc="widen the bilinear or bicubic filter when shrinking "
                                     "(torchvision default)"),
    },
    matrix=_matrix,
    output_size=_output_size,
    check=_check,
    ragged=_window,
    reference="torchvision.transforms.v2.Resize",
)
def resize(image, params, *, size, max_size, interpolation, antialias):
    """Resizes each image to ``size``: (height, width), or one int for the shorter side.

    torchvision v2 ``Resize(size, interpolation, max_size, antialias)``: with one int the
    shorter side becomes ``size`` and the longer ``floor(size * long / short)``, capped by
    ``max_size``; bilinear with ``antialias`` is a triangle filter widened by the shrink
    factor (ATen ``_upsample_bilinear2d_aa``), bicubic (``InterpolationMode.BICUBIC``) ATen's
    ``_upsample_bicubic2d_aa`` with ``antialias`` (cubic of a = -0.5 widened by the shrink
    factor, as PIL) or ``upsample_bicubic2d`` without (4 taps of a = -0.75, edges repeated),
    uint8 results clamped to 0..255 and float32 ones not (they may leave [0, 1], as
    torchvision's do); nearest is ATen's legacy nearest. Tolerance against torchvision: as
    ``random_resized_crop`` (nearest exact; bilinear within 1 uint8 level, 1e-5 in float32;
    ``antialias=False`` on uint8 within 2 levels, 2 on a small fraction of the values; bicubic
    within 1e-5 in float32 and 2 uint8 levels, 2 on a few values per million). In a DALI
    pipeline DALI's ``fn.resize`` resamples (docs/guide/ragged.md, "Images of different
    sizes", gives the difference). Images of different sizes (a list) take all three, each
    image by the taps and weights of a batch of it alone (values within one uint8 level).
    """
    h, w, _ = image.shape
    out = _output_size(h, w, size=size, max_size=max_size)
    return resize_crop(image, (0, 0, h, w), out, interpolation, antialias)
