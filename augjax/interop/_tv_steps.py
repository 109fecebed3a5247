"""The step of each torchvision transform :func:`augjax.from_torchvision` converts one by one
(every transform but the containers ``Compose``, ``RandomApply``, ``RandomChoice`` and
``RandomOrder``, which ``augjax.interop.torchvision`` converts by recursion), and the helpers
they share: the refusal that names the nearest op, the dtype the pipeline is in, fills and
levels in it."""

from __future__ import annotations

from typing import Any, Callable

from augjax.errors import UnsupportedTransformError


def _name(t: Any) -> str:
    return type(t).__name__


def _fail(t: Any, message: str, *, argument: str | None = None,
          nearest: str | None = None) -> UnsupportedTransformError:
    name = _name(t)
    near = f"; nearest augjax op: {nearest}" if nearest else ""
    return UnsupportedTransformError(f"from_torchvision: {name}: {message}{near}",
                                     transform=name, argument=argument, nearest=nearest)


def _mode(t: Any, *, nearest: str, allowed: tuple[str, ...] = ("nearest", "bilinear")) -> str:
    """``t.interpolation``'s name, refused unless in ``allowed`` (the op's modes: the warps'
    two; ``resize`` and ``random_resized_crop`` take ``"bicubic"`` too)."""
    value = getattr(t.interpolation, "value", t.interpolation)
    if value not in allowed:
        names = ", ".join(map(repr, allowed[:-1])) + f" and {allowed[-1]!r}"
        raise _fail(t, f"interpolation={value!r} is not available (augjax has {names})",
                    argument="interpolation", nearest=nearest)
    return value


def _fill(t: Any, state: dict, *, nearest: str) -> Any:
    fill = t.fill
    if isinstance(fill, dict):
        values = set(map(repr, fill.values()))
        if len(values) != 1:
            raise _fail(t, f"a per-type fill {fill!r} is not available", argument="fill",
                        nearest=nearest)
        fill = next(iter(fill.values()))
    if fill is None:
        return 0.0
    values = [float(fill)] if isinstance(fill, (int, float)) else [float(v) for v in fill]
    scale = 255.0 if any(values) and _dtype(t, state, "fill", fill, nearest) == "uint8" else 1.0
    if isinstance(fill, (int, float)):
        return values[0] / scale
    return tuple(v / scale for v in values)


def _dtype(t: Any, state: dict, argument: str, value: Any, nearest: str) -> str:
    """The pipeline's dtype where ``t``'s ``argument`` is read in the image's own values
    (0..255 on uint8, 0..1 on float); refused where the converter cannot know it."""
    if state["dtype"] is None:
        raise _fail(t, f"{argument}={value!r} is in the image's own values (0..255 for uint8, "
                    "0..1 for float) and the pipeline's dtype is not known here: pass "
                    "from_torchvision(..., dtype='uint8') or dtype='float32', or put a "
                    "ToDtype(..., scale=True) or PILToTensor before it", argument=argument,
                    nearest=nearest)
    if state.get("unscaled"):  # ToDtype(float32, scale=False) of uint8: 0..255 in floats
        return "uint8"
    return state["dtype"]


def _no_center(t: Any, nearest: str) -> None:
    if getattr(t, "center", None) is not None:
        raise _fail(t, f"center={t.center!r} is not available (augjax turns about the image "
                    "centre)", argument="center", nearest=nearest)


def _size(size: Any) -> Any:
    size = tuple(int(s) for s in size) if isinstance(size, (list, tuple)) else int(size)
    return size[0] if isinstance(size, tuple) and len(size) == 1 else size


def _p(step: Any, p: float) -> Any:
    from augjax.chain import random_apply

    return step if p >= 1.0 else random_apply(step, p=float(p))


# ---------------------------------------------------------------------------------------------
# one function per transform: (transform, state) -> augjax step (None: nothing to do)


def _random_resized_crop(t, state):
    import augjax.ops as ops
    from augjax.kernels.warp import RESIZE_INTERPOLATIONS

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
    from augjax.kernels.warp import RESIZE_INTERPOLATIONS

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


def _normalize(t, state):
    import augjax.ops as ops

    if state["dtype"] == "uint8" and not state.get("unscaled"):
        raise _fail(t, "on uint8 images: torchvision's Normalize raises there (TypeError: Input "
                    "tensor should be a float tensor); put ToDtype(torch.float32, scale=True) "
                    "before it", argument="dtype", nearest="to_float, normalize")
    state["dtype"] = "float32"
    # after ToDtype(float32, scale=False) the values are 0..255: augjax's are 0..1, so its
    # mean and std are torchvision's / 255 (the same output, to float rounding)
    scale = 255.0 if state.pop("unscaled", False) else 1.0
    mean = tuple(float(m) / scale for m in t.mean)
    std = tuple(float(v) / scale for v in t.std)
    state["normalize"] = (mean, std)  # for a RandomErasing(value="random") right after it
    return ops.normalize.bind(mean=mean, std=std)


def _to_dtype(t, state):
    import augjax.ops as ops

    dtype = t.dtype
    if isinstance(dtype, dict):
        dtypes = {str(v) for v in dtype.values() if v is not None}
        if len(dtypes) != 1:
            raise _fail(t, f"a per-type dtype {dtype!r}", argument="dtype",
                        nearest="to_float / to_uint8")
        dtype = next(v for v in dtype.values() if v is not None)
    name = str(dtype).replace("torch.", "")
    if not getattr(t, "scale", True):  # ConvertImageDtype always scales
        return _unscaled(t, state, name)
    if name == "float32":
        state["dtype"] = "float32"
        return ops.to_float
    if name == "uint8":
        state["dtype"] = "uint8"
        return ops.to_uint8
    raise _fail(t, f"dtype={name}", argument="dtype", nearest="to_float / to_uint8")


#: What may follow ``ToDtype(float32, scale=False)`` (0..255 in floats, augjax's 0..1): steps
#: that move or mix pixels without reading their scale (fills are read in 0..255), the
#: containers around them, and ``Normalize``, which takes the values back to torchvision's.
SCALE_FREE = frozenset({
    "Compose", "RandomApply", "RandomChoice", "RandomOrder", "Sequential",
    "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "RandomCrop",
    "CenterCrop", "Resize", "RandomRotation", "RandomAffine", "RandomPerspective", "CutMix",
    "MixUp", "Normalize", "ToDtype", "ConvertImageDtype"})


def _unscaled(t, state, name):
    """``ToDtype(dtype, scale=False)``: uint8 to float32 keeps 0..255. augjax converts to its
    0..1 floats and remembers the factor: ``Normalize`` divides its mean and std by 255, and a
    pipeline that ends unscaled gets a final ``x * 255`` (``normalize(0, 1/255)``)."""
    import augjax.ops as ops

    if name == "float32" and state["dtype"] == "float32":
        return None  # float to float: nothing to do, scaled or not
    if name == "float32" and state["dtype"] == "uint8":
        state["dtype"], state["unscaled"] = "float32", True
        return ops.to_float
    if name == "float32":
        raise _fail(t, "scale=False keeps uint8 images' 0..255 values in float32, and the "
                    "pipeline's dtype is not known here: pass from_torchvision(..., "
                    "dtype='uint8') (or 'float32'), or use scale=True", argument="scale",
                    nearest="to_float")
    raise _fail(t, f"scale=False to {name} is not available (a cast of 0..1 floats to {name} "
                "truncates them to 0 or 1): augjax images are uint8 0..255 or float32 0..1; "
                "use scale=True", argument="scale", nearest="to_uint8")


def _pil_to_tensor(t, state):
    state["dtype"] = "uint8"  # a PIL image of 8-bit channels: uint8 0..255, as it is
    return None


def _to_tensor(t, state):
    import augjax.ops as ops

    state["dtype"] = "float32"  # ToTensor: uint8 to float32 in [0, 1], as ToDtype(scale=True)
    return ops.to_float


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


def _is_v1(t: Any) -> bool:
    """A transform of ``torchvision.transforms`` (v1), not of ``torchvision.transforms.v2``."""
    module = type(t).__module__ or ""
    return not module.startswith("torchvision.transforms.v2")


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
    "Normalize": _normalize,
    "SanitizeBoundingBoxes": _sanitize_boxes,
    "ClampBoundingBoxes": lambda t, state: None,  # every geometric op clamps augjax's boxes
    "ToDtype": _to_dtype,
    "ConvertImageDtype": _to_dtype,
    "ToTensor": _to_tensor,
    "PILToTensor": _pil_to_tensor,
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
}
