"""The torchvision transforms :func:`augjax.from_torchvision` converts only together with the one
right after them: SSD's and LSJ's, whose output size varies per sample in torchvision and is
fixed by what follows them in the pipeline. augjax's op of each does both in one step (a batch
keeps one shape):

- ``RandomIoUCrop``, then ``Resize((h, w))``: :func:`augjax.ops.random_iou_crop` with
  ``size=(h, w)`` (the crop resized once, as torchvision's resize of the crop).
- ``RandomZoomOut``, then ``Resize((h, w))``: :func:`augjax.ops.random_zoom_out` with
  ``size=(h, w)`` (the canvas never built: each tap reads the image or the fill).
- ``ScaleJitter``, then the detection reference's ``FixedSizeCrop(size, fill)``
  (``references/detection/transforms.py``, copied into a user's project, so it is recognised
  by its class name and attributes, not its module): :func:`augjax.ops.scale_jitter`.

Each op is tested against torchvision's pair on the same drawn values in ``tests/targets``.
"""

from __future__ import annotations

from typing import Any, Callable

from augjax.interop._tv_common import _fail, _fill, _mode, _name, _size


def _fixed_size(t: Any) -> tuple[int, int] | None:
    """A ``Resize``'s output ``(h, w)`` when it is one size for every image, else None."""
    size = getattr(t, "size", None)
    if getattr(t, "max_size", None) is not None or not isinstance(size, (list, tuple)):
        return None
    size = _size(size)
    return size if isinstance(size, tuple) and len(size) == 2 else None


def _iou_crop(t: Any, resize: Any, state: dict) -> Any:
    import augjax.ops as ops

    return ops.random_iou_crop.bind(
        size=_fixed_size(resize), min_scale=float(t.min_scale), max_scale=float(t.max_scale),
        min_aspect_ratio=float(t.min_aspect_ratio), max_aspect_ratio=float(t.max_aspect_ratio),
        sampler_options=tuple(float(v) for v in t.options), trials=int(t.trials),
        interpolation=_mode(resize, nearest="random_iou_crop"),
        antialias=bool(resize.antialias))


def _zoom_out(t: Any, resize: Any, state: dict) -> Any:
    import augjax.ops as ops

    return ops.random_zoom_out.bind(
        size=_fixed_size(resize), fill=_fill(t, state, nearest="random_zoom_out"),
        side_range=tuple(float(v) for v in t.side_range), p=float(t.p),
        interpolation=_mode(resize, nearest="random_zoom_out"),
        antialias=bool(resize.antialias))


def _scale_jitter(t: Any, crop: Any, state: dict) -> Any:
    import augjax.ops as ops

    if getattr(crop, "padding_mode", "constant") != "constant":
        raise _fail(crop, f"padding_mode={crop.padding_mode!r} is not available (augjax pads "
                    "with fill)", argument="padding_mode", nearest="scale_jitter")
    th, tw = (int(v) for v in t.target_size)
    return ops.scale_jitter.bind(
        # torchvision's ScaleJitter reads target_size as (width, height) in its scale:
        # r = min(target_size[1] / H, target_size[0] / W); augjax's is (height, width)
        target_size=(tw, th), scale_range=tuple(float(v) for v in t.scale_range),
        size=(int(crop.crop_height), int(crop.crop_width)),
        fill=_fill(crop, state, nearest="scale_jitter"),
        interpolation=_mode(t, nearest="scale_jitter"), antialias=bool(t.antialias))


def _is_resize(t: Any) -> bool:
    return _name(t) == "Resize" and _fixed_size(t) is not None


def _is_fixed_size_crop(t: Any) -> bool:
    return _name(t) == "FixedSizeCrop" and all(
        hasattr(t, a) for a in ("crop_height", "crop_width", "fill"))


#: transform name -> (what must come right after it, in words; the test of that transform;
#: the converter of the pair).
PAIRS: dict[str, tuple[str, Callable[[Any], bool], Callable[[Any, Any, dict], Any]]] = {
    "RandomIoUCrop": ("a Resize((h, w)) of one size", _is_resize, _iou_crop),
    "RandomZoomOut": ("a Resize((h, w)) of one size", _is_resize, _zoom_out),
    "ScaleJitter": ("the detection reference's FixedSizeCrop(size, fill)",
                    _is_fixed_size_crop, _scale_jitter),
}

#: augjax's op of each.
OPS = {"RandomIoUCrop": "random_iou_crop", "RandomZoomOut": "random_zoom_out",
       "ScaleJitter": "scale_jitter"}


def convert_pair(t: Any, after: Any, state: dict) -> Any:
    """The one step of ``t`` and the transform ``after`` it (None: the end of its container);
    refused, naming what must follow, when ``after`` is not that."""
    name = _name(t)
    partner, fits, convert = PAIRS[name]
    if after is None or not fits(after):
        came = "nothing" if after is None else _name(after)
        if came == "Resize":  # of the shorter side, or with max_size: a size per image
            size = getattr(after, "size", None)
            came += (f"(size={None if size is None else _size(size)!r}, max_size="
                     f"{getattr(after, 'max_size', None)!r}), a size per image")
        raise _fail(t, f"its output size differs per image, so it converts only with "
                    f"{partner} right after it in the same container (augjax's {OPS[name]} "
                    f"does both in one step, one shape per batch); came {came}",
                    nearest=f"{OPS[name]}(size=...)")
    return convert(t, after, state)
