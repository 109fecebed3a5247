"""The step of each torchvision transform :func:`augjax.from_torchvision` converts one by one
(every transform but the containers ``Compose``, ``RandomApply``, ``RandomChoice`` and
``RandomOrder``, which ``augjax.interop.torchvision`` converts by recursion), and the helpers
they share (:mod:`augjax.interop._tv_common`); the dtype and scale converters are in
:mod:`augjax.interop._tv_dtypes`."""

from __future__ import annotations

from typing import Any, Callable

from augjax.interop._tv_common import (_dtype, _fail, _fill, _is_v1, _mode, _name, _no_center,
                                       _p, _size)
from augjax.interop._tv_dtypes import DTYPE_STEPS


# ---------------------------------------------------------------------------------------------
# one function per transform: (transform, state) -> augjax step (None: nothing to do)


def _random_resized_crop(t, state):
    import augjax.ops as ops
    from augjax.kernels.resize import RESIZE_INTERPOLATIONS

    return ops.random_resized_crop.bind(
        size=_size(t.size), scale=tuple(map(float, t.scale)), ratio=tuple(map(float, t.ratio)),
        interpolation=_mode(t, nearest="random_resized_crop", allowed=RESIZE_INTERPOLATIONS),
        antialias=bool(t.antialias))


def _random_crop(t, state):
    import augjax.ops as ops

    padding = None
    if t.padding is not None:
        padding = _padding(t)
    return ops.random_crop.bind(size=_size(t.size), padding=padding,
                                pad_if_needed=bool(t.pad_if_needed),
                                fill=_fill(t, state, nearest="random_crop"),
                                pad_mode=str(t.padding_mode))


def _pad(t, state):
    import augjax.ops as ops

    return ops.pad.bind(padding=_padding(t, as_given=True),
                        fill=_fill(t, state, nearest="pad"), pad_mode=str(t.padding_mode))


def _padding(t, as_given: bool = False) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)``: v2's ``RandomCrop`` keeps the padding as
    torch.nn.functional.pad's ``[left, right, top, bottom]``; v1 and ``Pad`` (``as_given``) as
    given (one number, ``(left/right, top/bottom)`` or ``(left, top, right, bottom)``)."""
    if not (_is_v1(t) or as_given):
        left, right, top, bottom = (int(v) for v in t.padding)
        return left, top, right, bottom
    pad = t.padding
    values = [int(pad)] if isinstance(pad, (int, float)) else [int(v) for v in pad]
    if len(values) == 1:
        return (values[0],) * 4
    if len(values) == 2:
        return values[0], values[1], values[0], values[1]
    if len(values) == 4:
        return tuple(values)
    raise _fail(t, f"padding={pad!r} (expects 1, 2 or 4 numbers)", argument="padding",
                nearest="random_crop")


def _center_crop(t, state):
    import augjax.ops as ops

    return ops.center_crop.bind(size=_size(t.size))


def _resize(t, state):
    import augjax.ops as ops
    from augjax.kernels.resize import RESIZE_INTERPOLATIONS

    if getattr(t, "size", None) is None:
        raise _fail(t, "size=None (max_size only) is not available", argument="size",
                    nearest="resize")
    return ops.resize.bind(size=_size(t.size), max_size=t.max_size,
                           interpolation=_mode(t, nearest="resize",
                                               allowed=RESIZE_INTERPOLATIONS),
                           antialias=bool(t.antialias))


def _hflip(t, state):
    import augjax.ops as ops

    return ops.flip.bind(p=float(t.p), horizontal=True, vertical=False)


def _vflip(t, state):
    import augjax.ops as ops

    return ops.flip.bind(p=float(t.p), horizontal=False, vertical=True)


def _rotation(t, state):
    import augjax.ops as ops

    if t.expand:
        raise _fail(t, "expand=True is not available (augjax keeps the image size)",
                    argument="expand", nearest="rotate")
    _no_center(t, "rotate")
    return ops.rotate.bind(degrees=tuple(map(float, t.degrees)),
                           interpolation=_mode(t, nearest="rotate"),
                           fill=_fill(t, state, nearest="rotate"))


def _affine(t, state):
    import augjax.ops as ops

    _no_center(t, "affine")
    return ops.affine.bind(
        degrees=tuple(map(float, t.degrees)),
        translate=None if t.translate is None else tuple(map(float, t.translate)),
        scale=None if t.scale is None else tuple(map(float, t.scale)),
        shear=None if t.shear is None else tuple(map(float, t.shear)),
        interpolation=_mode(t, nearest="affine"), fill=_fill(t, state, nearest="affine"))


def _perspective(t, state):
    import augjax.ops as ops

    return ops.perspective.bind(distortion_scale=float(t.distortion_scale), p=float(t.p),
                                interpolation=_mode(t, nearest="perspective"),
                                fill=_fill(t, state, nearest="perspective"))


def _color_jitter(t, state):
    import augjax.ops as ops

    # torchvision keeps each range as (min, max), or None when it is off (augjax's 0)
    cfg = {name: getattr(t, name) for name in ("brightness", "contrast", "saturation", "hue")}
    return ops.color_jitter.bind(**{k: 0.0 if v is None else tuple(map(float, v))
                                    for k, v in cfg.items()})


def _grayscale(t, state):
    import augjax.ops as ops

    if int(t.num_output_channels) != 3:
        raise _fail(t, f"num_output_channels={t.num_output_channels} is not available (augjax's "
                    "grayscale keeps 3 channels)", argument="num_output_channels",
                    nearest="grayscale")
    return ops.grayscale


def _random_grayscale(t, state):
    import augjax.ops as ops

    return ops.random_grayscale.bind(p=float(t.p))


def _gaussian_blur(t, state):
    import augjax.ops as ops

    kx, ky = (int(k) for k in t.kernel_size)  # torchvision: (width, height)
    return ops.gaussian_blur.bind(kernel_size=(ky, kx),
                                  sigma=tuple(map(float, t.sigma)))


def _random_erasing(t, state):
    import augjax.ops as ops

    value = t.value
    if value is None or isinstance(value, str):  # v2 keeps value="random" as None
        if value not in (None, "random"):
            raise _fail(t, f"value={value!r}", argument="value", nearest="random_erasing")
        value, mode, fill = "random", "pixel", None
    else:
        mode = "const"
        values = [float(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
        uint8 = any(values) and _dtype(t, state, "value", value, "random_erasing") == "uint8"
        scale = 255.0 if uint8 else 1.0
        fill = tuple(v / scale for v in values)
        if not all(0.0 <= v <= 1.0 for v in fill):
            fill = _standardised_fill(t, state, fill, values)
        fill = fill[0] if len(fill) == 1 else fill
    if mode == "pixel" and _dtype(t, state, "value", value, "random_erasing") == "uint8":
        raise _fail(t, "value='random' on uint8 images (torchvision draws normal values, which "
                    "only float images hold)", argument="value", nearest="random_erasing")
    lo, hi = (float(v) for v in t.ratio)
    spec = {"p": float(t.p), "min_area": float(t.scale[0]), "max_area": float(t.scale[1]),
            "min_aspect": lo, "max_aspect": hi, "mode": mode, "fill": fill}
    if mode == "pixel":
        # torchvision writes N(0, 1) values where it erases: after Normalize (its reference
        # scripts' place) they are standardised values. augjax's random_erasing writes
        # mean + std * z in [0, 1], which its Normalize makes z: it runs just before that
        # Normalize, with its mean and std (the container puts it there).
        if state.get("normalize") is None:
            raise _fail(t, "value='random' where no Normalize comes right before it: "
                        "torchvision writes N(0, 1) values into the image, which are "
                        "standardised values only after a Normalize; augjax converts "
                        "RandomErasing(value='random') placed right after a Normalize "
                        "(torchvision's reference scripts' order)", argument="value",
                        nearest="random_erasing(mode='pixel', mean=, std=) before normalize")
        mean, std = state["normalize"]
        spec.update(mean=mean, std=std)
        state["erase_before"] = True
    return ops.random_erasing.bind(**spec)


def _standardised_fill(t, state, values, given):
    """A constant ``value`` outside [0, 1] (``values`` in augjax's 0..1 scale of the fill,
    ``given`` as the transform holds them): right after a Normalize it is a standardised value
    (``-1``), written by the same erasing just before that Normalize as ``value * std + mean``,
    which the Normalize maps back (to float rounding); refused elsewhere, or where that value
    leaves [0, 1]."""
    shown = given[0] if len(given) == 1 else tuple(given)
    if state.get("normalize") is None:
        raise _fail(t, f"value={shown!r} outside the image's values (0..1 on float, 0..255 on "
                    "uint8) where no Normalize comes right before it (a standardised value "
                    "converts right after a Normalize)", argument="value",
                    nearest="random_erasing")
    mean, std = state["normalize"]
    n = max(len(values), len(mean), len(std))

    def pick(seq, i):
        return seq[0] if len(seq) == 1 else seq[i]

    fill = tuple(pick(values, i) * pick(std, i) + pick(mean, i) for i in range(n))
    if not all(0.0 <= v <= 1.0 for v in fill):
        raise _fail(t, f"value={shown!r} after Normalize is {tuple(round(v, 4) for v in fill)} "
                    "before it, outside [0, 1], where augjax erases (before the Normalize)",
                    argument="value", nearest="random_erasing")
    state["erase_before"] = True
    return fill


def _sanitize_boxes(t, state):
    """``SanitizeBoundingBoxes``: augjax flags the boxes it would remove (``boxes_valid``, by
    the call's ``sanitize=`` rule, whose default is torchvision's ``min_size=1, min_area=1``)
    instead of dropping them (arrays keep their shapes): nothing to add to the chain."""
    size, area = float(t.min_size), float(getattr(t, "min_area", 1.0))
    if (size, area) != (1.0, 1.0):
        raise _fail(t, f"min_size={size:g}, min_area={area:g}: augjax's rule is the call's: pass "
                    f"sanitize=augjax.Sanitize(min_size={size:g}, min_area={area:g}) when "
                    "calling the chain (boxes_valid says which boxes it would remove)",
                    argument="min_size", nearest="the targets' boxes_valid")
    return None


def _policy_common(t, state, nearest):
    fill = t.fill
    return {"interpolation": _mode(t, nearest=nearest),
            "fill": "default" if fill is None else _fill(t, state, nearest=nearest)}


def _rand_augment(t, state):
    from augjax.policies import rand_augment

    return rand_augment(n=int(t.num_ops), m=t.magnitude,
                        num_magnitude_bins=int(t.num_magnitude_bins), style="torchvision",
                        **_policy_common(t, state, "rand_augment"))


def _trivial_augment(t, state):
    from augjax.policies import trivial_augment_wide

    return trivial_augment_wide(num_magnitude_bins=int(t.num_magnitude_bins),
                                style="torchvision",
                                **_policy_common(t, state, "trivial_augment_wide"))


def _auto_augment(t, state):
    from augjax.policies import auto_augment

    policy = getattr(t.policy, "value", t.policy)
    return auto_augment(str(policy), **_policy_common(t, state, "auto_augment"))


def _augmix(t, state):
    from augjax.policies import augmix

    return augmix(severity=int(t.severity), width=int(t.mixture_width),
                  depth=int(t.chain_depth), alpha=float(t.alpha), all_ops=bool(t.all_ops),
                  style="torchvision", **_policy_common(t, state, "augmix"))


def _cutmix(t, state):
    import augjax.ops as ops

    return ops.cutmix.bind(alpha=float(t.alpha), num_classes=_classes(t), correct_lam=True)


def _mixup(t, state):
    import augjax.ops as ops

    return ops.mixup.bind(alpha=float(t.alpha), num_classes=_classes(t))


def _classes(t):
    if getattr(t, "num_classes", None) is None:
        raise _fail(t, "num_classes=None (taken from one-hot labels) is not available: give "
                    "num_classes", argument="num_classes", nearest=_name(t).lower())
    return int(t.num_classes)


def _on_p(op_name: str, **fixed):
    def convert(t, state):
        import augjax.ops as ops

        values = {k: (getattr(t, src) if isinstance(src, str) else src(t))
                  for k, src in fixed.items()}
        step = getattr(ops, op_name)
        return _p(step.bind(**values) if values else step, float(t.p))

    return convert


def _solarize(t, state):
    import augjax.ops as ops

    # torchvision's threshold is in the image's own values; augjax's in uint8 levels
    threshold = float(t.threshold)
    dtype = _dtype(t, state, "threshold", t.threshold, "solarize")
    if dtype == "float32" and threshold > 1.0:
        raise _fail(t, f"threshold={t.threshold!r} on float32 images (0..1): torchvision "
                    "refuses a threshold above the dtype's maximum", argument="threshold",
                    nearest="solarize")
    levels = threshold if dtype == "uint8" else threshold * 255.0
    return _p(ops.solarize.bind(threshold=levels), float(t.p))


def _sharpness(t, state):
    import augjax.ops as ops

    return _p(ops.sharpness.bind(factor=float(t.sharpness_factor)), float(t.p))


def _jpeg(t, state):
    import augjax.ops as ops

    if state["dtype"] == "float32":  # torchvision's encode_jpeg takes uint8 images only
        raise _fail(t, "torchvision encodes uint8 images only (its JPEG raises on the float "
                    "images this pipeline holds here): put JPEG before ToDtype(..., "
                    "scale=True)", argument="dtype", nearest="jpeg")
    lo, hi = (int(q) for q in t.quality)  # torchvision keeps [lo, hi] (a number as [q, q])
    return ops.jpeg.bind(quality=(lo, hi))


def _channel_permutation(t, state):
    import augjax.ops as ops

    return ops.channel_permute


def _photometric_distort(t, state):
    import augjax.ops as ops

    ranges = {name: tuple(map(float, getattr(t, name)))
              for name in ("brightness", "contrast", "saturation", "hue")}
    return ops.random_photometric_distort.bind(p=float(t.p), **ranges)


def _gaussian_noise(t, state):
    import augjax.ops as ops
    from augjax.errors import OpNotFoundError

    try:  # augjax-contrib's op; mean and sigma on the [0, 1] scale for both dtypes, as here
        noise = ops.gaussian_noise
    except OpNotFoundError:
        raise _fail(t, "augjax's gaussian_noise comes with augjax-contrib, which is not "
                    "installed", nearest="gaussian_noise (augjax-contrib)") from None
    return noise.bind(mean=float(t.mean), sigma=float(t.sigma), clip=bool(t.clip))


#: torchvision class name -> the step converting it (the containers aside).
STEPS: dict[str, Callable[[Any, dict], Any]] = {
    "RandomResizedCrop": _random_resized_crop,
    "RandomCrop": _random_crop,
    "Pad": _pad,
    "CenterCrop": _center_crop,
    "Resize": _resize,
    "RandomHorizontalFlip": _hflip,
    "RandomVerticalFlip": _vflip,
    "RandomRotation": _rotation,
    "RandomAffine": _affine,
    "RandomPerspective": _perspective,
    "ColorJitter": _color_jitter,
    "Grayscale": _grayscale,
    "RandomGrayscale": _random_grayscale,
    "GaussianBlur": _gaussian_blur,
    "RandomErasing": _random_erasing,
    "SanitizeBoundingBoxes": _sanitize_boxes,
    "ClampBoundingBoxes": lambda t, state: None,  # every geometric op clamps augjax's boxes
    "RandAugment": _rand_augment,
    "TrivialAugmentWide": _trivial_augment,
    "AutoAugment": _auto_augment,
    "AugMix": _augmix,
    "CutMix": _cutmix,
    "MixUp": _mixup,
    "RandomInvert": _on_p("invert"),
    "RandomPosterize": _on_p("posterize", bits=lambda t: int(t.bits)),
    "RandomSolarize": _solarize,
    "RandomAutocontrast": _on_p("autocontrast"),
    "RandomEqualize": _on_p("equalize"),
    "RandomAdjustSharpness": _sharpness,
    "JPEG": _jpeg,
    "RandomChannelPermutation": _channel_permutation,
    "RandomPhotometricDistort": _photometric_distort,
    "GaussianNoise": _gaussian_noise,
    **DTYPE_STEPS,
}
