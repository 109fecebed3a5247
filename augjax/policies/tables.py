"""Every policy table in one place: op spaces (a reference's name -> augjax op and what the
reference does differently from the op's own magnitude map) and the AutoAugment sub-policies
of torchvision 0.29, timm 1.0 and DALI 2.4 ``auto_aug``.

Magnitudes have one source: each op declares its map on its parameter (``Param(magnitude=...,
signed=...)``, the torchvision RandAugment map where the op is one of its primitives); an
entry here gives only :func:`over`, the fields a reference changes (its range, float32
``linspace`` rounding, quantization, clipping), or a full map where the reference uses the
parameter differently (timm's Desaturate). Policies resolve entries against the registered ops
when they are built.

Transcribed from ``torchvision/transforms/v2/_auto_augment.py`` (``_AUGMENTATION_SPACE`` of
RandAugment, TrivialAugmentWide, AutoAugment, AugMix; ``AutoAugment._get_policies``),
``timm/data/auto_augment.py`` (``LEVEL_TO_ARG``, ``NAME_TO_OP``, ``_RAND_*``,
``auto_augment_policy_*``, ``_AUGMIX_TRANSFORMS``) and ``nvidia/dali/auto_aug``
(``get_rand_augment_suite``, ``get_rand_augment_non_monotonic_suite``,
``get_trivial_augment_wide_suite``); ``tests/compose/test_policies.py`` checks them against those
packages' own tables.

Scales: torchvision and DALI index ``num_magnitude_bins`` bins (level ``i`` is
``t = i / (bins - 1)``; AutoAugment and AugMix use 10 bins); timm's levels run 0..10
(``t = level / 10``). See :mod:`augjax.policies._magnitude` for the value formula.
"""

from __future__ import annotations

from typing import Any

from augjax.policies._magnitude import PolicyOp, linear

__all__ = [
    "DALI_RAND_AUGMENT",
    "DALI_RAND_AUGMENT_NON_MONOTONIC",
    "DALI_TRIVIAL_AUGMENT_WIDE",
    "TIMM_AUGMIX",
    "TIMM_HPARAMS",
    "TIMM_POLICIES",
    "TIMM_RAND",
    "TIMM_RAND_3A",
    "TIMM_RAND_INCREASING",
    "TIMM_RAND_WEIGHTED_0",
    "TIMM_RAND_WEIGHTED_3A",
    "TV_AUGMIX",
    "TV_AUGMIX_PARTIAL",
    "TV_AUTO_AUGMENT",
    "TV_POLICIES",
    "TV_RAND_AUGMENT",
    "TV_TRIVIAL_AUGMENT_WIDE",
    "over",
    "space",
    "timm_ops",
]

def over(**fields: Any) -> tuple[tuple[str, Any], ...]:
    """The fields of an op's declared magnitude map that a reference changes (None: the op's
    own)."""
    return tuple(sorted((k, v) for k, v in fields.items() if v is not None))


def _geo(name: str, op: str, param: str, mag, **fixed) -> PolicyOp:
    return PolicyOp(name, op, param, mag, tuple(sorted(fixed.items())), geometric=True)


def _op(name: str, op: str | None, param: str | None = None, mag=None, **fixed) -> PolicyOp:
    return PolicyOp(name, op, param, mag, tuple(sorted(fixed.items())))


# -------------------------------------------------------------------------------------------
# torchvision (float32 linspace tables, f32=True)


def _tv_space(*, shear: float | None = None, translate=("rel", None), rotate: float | None = None,
              enhance: float | None = None, posterize: tuple | None = None,
              identity: bool = True, invert: bool = False, enhance_ops: bool = True,
              enhance_last: bool = False):
    """A torchvision op space, in float32 ``linspace`` tables: each op's declared map (the
    ranges of torchvision's RandAugment) with the ranges given here (None: the op's own).
    ``translate`` is ("rel", fraction of the side) or ("px", max)."""
    kind, amount = translate
    post = (None, None) if posterize is None else tuple(map(float, posterize))
    per = {"rel": "width", "px": None}[kind]
    tx = over(end=amount, quantize="trunc", f32=True, per=per)
    ty = over(end=amount, quantize="trunc", f32=True, per=None if per is None else "height")
    enh = over(end=enhance, f32=True)
    ops = [_op("Identity", None)] if identity else []
    ops += [
        _geo("ShearX", "shear_x", "shear", over(end=shear, f32=True)),
        _geo("ShearY", "shear_y", "shear", over(end=shear, f32=True)),
        _geo("TranslateX", "translate_x", "translate", tx, relative=False),
        _geo("TranslateY", "translate_y", "translate", ty, relative=False),
        _geo("Rotate", "rotate", "degrees", over(end=rotate, f32=True)),
    ]
    enhance = [_op("Brightness", "brightness", "factor", enh),
               _op("Color", "saturation", "factor", enh),
               _op("Contrast", "contrast", "factor", enh),
               _op("Sharpness", "sharpness", "factor", enh)] if enhance_ops else []
    if not enhance_last:
        ops += enhance
    ops += [
        _op("Posterize", "posterize", "bits",
            over(start=post[0], end=post[1], quantize="round", f32=True)),
        _op("Solarize", "solarize", "threshold", over(start=1.0, end=0.0, times=255.0, f32=True)),
        _op("AutoContrast", "autocontrast"),
        _op("Equalize", "equalize"),
    ]
    if invert:
        ops.append(_op("Invert", "invert"))
    return tuple(ops + (enhance if enhance_last else []))


#: torchvision RandAugment (31 bins by default): the ops' own ranges.
TV_RAND_AUGMENT = _tv_space()
#: torchvision TrivialAugmentWide: wider ranges, 32 px translations.
TV_TRIVIAL_AUGMENT_WIDE = _tv_space(shear=0.99, translate=("px", 32.0), rotate=135.0,
                                    enhance=0.99, posterize=(8, 2))
#: torchvision AutoAugment's space (10 bins): RandAugment's ranges, Invert, no Identity.
TV_AUTO_AUGMENT = _tv_space(identity=False, invert=True)
#: torchvision AugMix, all_ops=True (10 bins; translations up to a third of the side).
TV_AUGMIX = _tv_space(translate=("rel", 1.0 / 3.0), posterize=(4, 0), identity=False,
                      enhance_last=True)
#: torchvision AugMix, all_ops=False: without the enhance ops.
TV_AUGMIX_PARTIAL = _tv_space(translate=("rel", 1.0 / 3.0), posterize=(4, 0), identity=False,
                              enhance_ops=False)

#: AutoAugment's ImageNet sub-policies as timm's ``"original"`` lists them: ((name,
#: probability, level), ...), with a level for the ops without a magnitude too (unused).
#: torchvision's ``"imagenet"`` is the same table, its ``Posterize`` timm's
#: ``PosterizeOriginal`` and None where an op takes no magnitude.
_ORIGINAL = (
    (("PosterizeOriginal", 0.4, 8), ("Rotate", 0.6, 9)),
    (("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)),
    (("Equalize", 0.8, 8), ("Equalize", 0.6, 3)),
    (("PosterizeOriginal", 0.6, 7), ("PosterizeOriginal", 0.6, 6)),
    (("Equalize", 0.4, 7), ("Solarize", 0.2, 4)),
    (("Equalize", 0.4, 4), ("Rotate", 0.8, 8)),
    (("Solarize", 0.6, 3), ("Equalize", 0.6, 7)),
    (("PosterizeOriginal", 0.8, 5), ("Equalize", 1.0, 2)),
    (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
    (("Equalize", 0.6, 8), ("PosterizeOriginal", 0.4, 6)),
    (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
    (("Rotate", 0.4, 9), ("Equalize", 0.6, 2)),
    (("Equalize", 0.0, 7), ("Equalize", 0.8, 8)),
    (("Invert", 0.6, 4), ("Equalize", 1.0, 8)),
    (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
    (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
    (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
    (("Sharpness", 0.4, 7), ("Invert", 0.6, 8)),
    (("ShearX", 0.6, 5), ("Equalize", 1.0, 9)),
    (("Color", 0.4, 0), ("Equalize", 0.6, 3)),
    (("Equalize", 0.4, 7), ("Solarize", 0.2, 4)),
    (("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)),
    (("Invert", 0.6, 4), ("Equalize", 1.0, 8)),
    (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
    (("Equalize", 0.8, 8), ("Equalize", 0.6, 3)),
)


def _renamed(policy, names: dict[str, str], levels: bool = True):
    """``policy`` with its ops renamed by ``names``; ``levels=False``: None for the level of
    an op without a magnitude (torchvision's form of a table)."""
    return tuple(tuple((names.get(n, n), p, m if levels or n not in _NO_MAGNITUDE else None)
                       for n, p, m in sub) for sub in policy)


_NO_MAGNITUDE = ("AutoContrast", "Equalize", "Invert")

#: torchvision AutoAugment sub-policies: ((name, probability, bin or None), ...), 10 bins.
TV_POLICIES = {
    "imagenet": _renamed(_ORIGINAL, {"PosterizeOriginal": "Posterize"}, levels=False),
    "cifar10": (
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
        (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
        (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
        (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ),
    "svhn": (
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ),
}

# -------------------------------------------------------------------------------------------
# DALI auto_aug (float64 numpy tables; translations in pixels by default, use_shape=False)


def _dali_space(*, shear: float, translate_px: float, rotate: float, enhance, posterize,
                solarize, monotonic: bool = True):
    if monotonic:
        enh = over(start=float(enhance[0]), end=float(enhance[1]))
    else:
        enh = over(start=float(enhance[0]), end=float(enhance[1]), signed=False, plus=0.0)
    post = over(start=float(posterize[0]), end=float(posterize[1]), quantize="round",
                clip=(1.0, 8.0))
    t = over(end=translate_px)
    return (
        _geo("translate_x", "translate_x", "translate", t, relative=False),
        _geo("translate_y", "translate_y", "translate", t, relative=False),
        _geo("shear_x", "shear_x", "shear", over(end=shear)),
        _geo("shear_y", "shear_y", "shear", over(end=shear)),
        _geo("rotate", "rotate", "degrees", over(end=rotate)),
        _op("brightness", "brightness", "factor", enh),
        _op("contrast", "contrast", "factor", enh),
        _op("color", "saturation", "factor", enh),
        _op("sharpness", "sharpness", "factor", enh),
        _op("posterize", "posterize", "bits", post),
        _op("solarize", "solarize", "threshold",
            over(start=float(solarize[0]), end=float(solarize[1]))),
        _op("equalize", "equalize"),
        _op("auto_contrast", "autocontrast"),
        _op("identity", None),
    )


#: DALI ``get_rand_augment_suite()`` (monotonic magnitudes).
DALI_RAND_AUGMENT = _dali_space(shear=0.3, translate_px=100.0, rotate=30.0, enhance=(0.0, 0.9),
                                posterize=(8, 4), solarize=(256, 0))
#: DALI ``get_rand_augment_non_monotonic_suite()`` (AutoAugment-style ranges).
DALI_RAND_AUGMENT_NON_MONOTONIC = _dali_space(
    shear=0.3, translate_px=100.0, rotate=30.0, enhance=(0.1, 1.9), posterize=(0, 4),
    solarize=(0, 256), monotonic=False)
#: DALI ``get_trivial_augment_wide_suite()``.
DALI_TRIVIAL_AUGMENT_WIDE = _dali_space(shear=0.99, translate_px=32.0, rotate=135.0,
                                        enhance=(0.01, 0.99), posterize=(8, 2), solarize=(256, 0))

# -------------------------------------------------------------------------------------------
# timm (float64 Python arithmetic, levels 0..10)

#: timm's default hparams: ``translate_const`` (abs, px), ``translate_pct`` (rel), fill
#: ``img_mean`` in uint8 levels, as timm gives it (:func:`augjax.policies.from_timm` divides it
#: by 255: augjax fills are fractions of the range).
TIMM_HPARAMS = {"translate_const": 250, "translate_pct": 0.45, "img_mean": (128, 128, 128)}

#: Kernel size used for timm's GaussianBlur (radius up to 2.0: 2 * ceil(3 * 2.0) + 1).
TIMM_BLUR_KERNEL = 13


def timm_ops(translate_const: float = 250, translate_pct: float = 0.45) -> dict[str, PolicyOp]:
    """timm's ``NAME_TO_OP`` + ``LEVEL_TO_ARG`` as augjax ops, for the given hparams.

    The geometric ops sample as PIL does (``convention="pil"``: fractional shifts, edge samples
    clamped, outside points filled), and the translations are negated (``times=-1``) so that a
    positive timm magnitude moves the content left/up, as timm's ``translate_*`` do."""
    enh = over(end=1.8, signed=False, plus=0.1)
    enh_inc = over(bounds=(0.1, None))
    # timm's positive translate moves the content left/up (PIL's (1, 0, px, 0, 1, 0));
    # augjax's moves it right/down: times=-1 keeps timm's direction for the same sign draw.
    abs_t = over(end=float(translate_const), times=-1.0)
    rel_t = over(end=float(translate_pct), times=-1.0)
    pil = {"convention": "pil"}
    bits = dict(start=0.0, end=4.0, quantize="trunc")
    threshold = dict(start=0.0, end=256.0, quantize="trunc", clip=(None, 256.0))
    ops = [
        _op("AutoContrast", "autocontrast"),
        _op("Equalize", "equalize"),
        _op("Invert", "invert"),
        _geo("Rotate", "rotate", "degrees", over(), **pil),
        _op("Posterize", "posterize", "bits", over(**bits)),
        _op("PosterizeIncreasing", "posterize", "bits", over(**bits, times=-1.0, plus=4.0)),
        _op("PosterizeOriginal", "posterize", "bits", over(**bits, plus=4.0)),
        _op("Solarize", "solarize", "threshold", over(**threshold)),
        _op("SolarizeIncreasing", "solarize", "threshold",
            over(**threshold, times=-1.0, plus=256.0)),
        _op("SolarizeAdd", "solarize_add", "addition",
            over(quantize="trunc", clip=(None, 128.0)), threshold=128.0),
        _op("Color", "saturation", "factor", enh),
        _op("ColorIncreasing", "saturation", "factor", enh_inc),
        _op("Contrast", "contrast", "factor", enh),
        _op("ContrastIncreasing", "contrast", "factor", enh_inc),
        _op("Brightness", "brightness", "factor", enh),
        _op("BrightnessIncreasing", "brightness", "factor", enh_inc),
        _op("Sharpness", "sharpness", "factor", enh),
        _op("SharpnessIncreasing", "sharpness", "factor", enh_inc),
        _geo("ShearX", "shear_x", "shear", over(), **pil),
        _geo("ShearY", "shear_y", "shear", over(), **pil),
        _geo("TranslateX", "translate_x", "translate", abs_t, relative=False, **pil),
        _geo("TranslateY", "translate_y", "translate", abs_t, relative=False, **pil),
        _geo("TranslateXRel", "translate_x", "translate", rel_t, relative=True, **pil),
        _geo("TranslateYRel", "translate_y", "translate", rel_t, relative=True, **pil),
        _op("Desaturate", "saturation", "factor",
            linear(0.5, 1.0, clip=(0.5, 1.0), times=-1.0, plus=1.0, bounds=(0.0, 1.0))),
        _op("GaussianBlur", "gaussian_blur", "sigma", over(clip=(0.1, 2.0)),
            kernel_size=TIMM_BLUR_KERNEL),
        _op("GaussianBlurRand", "gaussian_blur", "sigma",
            over(start=0.0, end=1.0, clip=(0.0, 1.0), times=2.0, draw_from=0.1),
            kernel_size=TIMM_BLUR_KERNEL),
    ]
    return {o.name: o for o in ops}


#: timm ``_RAND_TRANSFORMS`` (``inc0``).
TIMM_RAND = ("AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize",
             "SolarizeAdd", "Color", "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY",
             "TranslateXRel", "TranslateYRel")
#: timm ``_RAND_INCREASING_TRANSFORMS`` (``inc1``): the ops with an increasing form take it.
TIMM_RAND_INCREASING = tuple(f"{n}Increasing" if n in ("Posterize", "Solarize", "Color",
                             "Contrast", "Brightness", "Sharpness") else n for n in TIMM_RAND)
#: timm ``_RAND_3A`` (``t3a``).
TIMM_RAND_3A = ("SolarizeIncreasing", "Desaturate", "GaussianBlur")
#: timm ``_RAND_WEIGHTED_3A`` (``t3aw``): weighted choice without replacement.
TIMM_RAND_WEIGHTED_3A = {
    "SolarizeIncreasing": 6, "Desaturate": 6, "GaussianBlur": 6, "Rotate": 3, "ShearX": 2,
    "ShearY": 2, "PosterizeIncreasing": 1, "AutoContrast": 1, "ColorIncreasing": 1,
    "SharpnessIncreasing": 1, "ContrastIncreasing": 1, "BrightnessIncreasing": 1,
    "Equalize": 1, "Invert": 1,
}
#: timm ``_RAND_WEIGHTED_0`` (``tweights``): weighted choice without replacement.
TIMM_RAND_WEIGHTED_0 = {
    "Rotate": 3, "ShearX": 2, "ShearY": 2, "TranslateXRel": 1, "TranslateYRel": 1,
    "ColorIncreasing": 0.25, "SharpnessIncreasing": 0.25, "AutoContrast": 0.25,
    "SolarizeIncreasing": 0.05, "SolarizeAdd": 0.05, "ContrastIncreasing": 0.05,
    "BrightnessIncreasing": 0.05, "Equalize": 0.05, "PosterizeIncreasing": 0.05,
    "Invert": 0.05,
}
#: timm ``_AUGMIX_TRANSFORMS``.
TIMM_AUGMIX = ("AutoContrast", "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing",
               "SharpnessIncreasing", "Equalize", "Rotate", "PosterizeIncreasing",
               "SolarizeIncreasing", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel")

_V0 = (
    (("Equalize", 0.8, 1), ("ShearY", 0.8, 4)),
    (("Color", 0.4, 9), ("Equalize", 0.6, 3)),
    (("Color", 0.4, 1), ("Rotate", 0.6, 8)),
    (("Solarize", 0.8, 3), ("Equalize", 0.4, 7)),
    (("Solarize", 0.4, 2), ("Solarize", 0.6, 2)),
    (("Color", 0.2, 0), ("Equalize", 0.8, 8)),
    (("Equalize", 0.4, 8), ("SolarizeAdd", 0.8, 3)),
    (("ShearX", 0.2, 9), ("Rotate", 0.6, 8)),
    (("Color", 0.6, 1), ("Equalize", 1.0, 2)),
    (("Invert", 0.4, 9), ("Rotate", 0.6, 0)),
    (("Equalize", 1.0, 9), ("ShearY", 0.6, 3)),
    (("Color", 0.4, 7), ("Equalize", 0.6, 0)),
    (("Posterize", 0.4, 6), ("AutoContrast", 0.4, 7)),
    (("Solarize", 0.6, 8), ("Color", 0.6, 9)),
    (("Solarize", 0.2, 4), ("Rotate", 0.8, 9)),
    (("Rotate", 1.0, 7), ("TranslateYRel", 0.8, 9)),
    (("ShearX", 0.0, 0), ("Solarize", 0.8, 4)),
    (("ShearY", 0.8, 0), ("Color", 0.6, 4)),
    (("Color", 1.0, 0), ("Rotate", 0.6, 2)),
    (("Equalize", 0.8, 4), ("Equalize", 0.0, 8)),
    (("Equalize", 1.0, 4), ("AutoContrast", 0.6, 2)),
    (("ShearY", 0.4, 7), ("SolarizeAdd", 0.6, 7)),
    (("Posterize", 0.8, 2), ("Solarize", 0.6, 10)),
    (("Solarize", 0.6, 8), ("Equalize", 0.6, 1)),
    (("Color", 0.8, 6), ("Rotate", 0.4, 5)),
)


#: timm AutoAugment policies: ((name, probability, level 0..10), ...).
TIMM_POLICIES = {
    "v0": _V0,
    "v0r": _renamed(_V0, {"Posterize": "PosterizeIncreasing"}),
    "original": _ORIGINAL,
    "originalr": _renamed(_ORIGINAL, {"PosterizeOriginal": "PosterizeIncreasing"}),
    "3a": ((("Solarize", 1.0, 5),), (("Desaturate", 1.0, 10),), (("GaussianBlurRand", 1.0, 10),)),
}


def space(ops: tuple[PolicyOp, ...] | dict[str, PolicyOp], names=None) -> tuple[PolicyOp, ...]:
    """The entries of ``ops`` named ``names`` (all of them when None), in that order."""
    table = ops if isinstance(ops, dict) else {o.name: o for o in ops}
    return tuple(table[n] for n in (names if names is not None else table))
