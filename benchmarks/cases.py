"""What the benchmarks compare: each augjax op with the parameters it is timed with, its peer
in DALI (native operators, or DALI's ``auto_aug`` augmentations) and in torchvision, the
policies and their DALI peers, and the timm-style training recipe in augjax, DALI and timm.

A peer is the nearest operator of the other library doing the same kind of work, not a bitwise
equal one (its label says where the work differs). An op without a peer is timed alone.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

CLASSES = 1000
SIZE = 224
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
JITTER = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)
#: The same ranges as DALI's color_twist rows (hue 0.1 turns = 36 degrees).
TWIST = dict(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-36.0, 36.0))
TIMM_RAND = "rand-m9-mstd0.5-inc1"
#: The 3-op space of "RandAugment over 3 ops" (its cost against the whole space: n, not the
#: space, should set the cost).
THREE_OPS = ("Identity", "Brightness", "Rotate")

#: Parameters each op is timed with; an op missing here (a new op, a plugin's) gets the
#: conformance kit's example parameters (defaults, moved away from neutral).
OP_PARAMS: dict[str, dict[str, Any]] = {
    "affine": dict(degrees=(-30.0, 30.0)),
    "center_crop": dict(size=200),
    "random_crop": dict(size=200),
    "random_resized_crop": dict(size=SIZE),
    "color_jitter": JITTER,
    "color_twist": TWIST,
    "normalize": dict(mean=MEAN, std=STD, chw=True),
    "mixup": dict(alpha=0.8, num_classes=CLASSES),
    "cutmix": dict(alpha=1.0, num_classes=CLASSES),
    "mixup_cutmix": dict(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=CLASSES),
    "random_erasing": dict(p=1.0),
}

def op_names() -> list[str]:
    """Every registered op (core and installed packs), sorted."""
    import augjax

    return sorted(augjax.list_ops())


def bound_op(name: str):
    """``name`` bound to :data:`OP_PARAMS` (or the kit's example parameters)."""
    from augjax._plugins.registry import REGISTRY
    from augjax.testing._examples import example_params

    spec = REGISTRY.get(name)
    params = OP_PARAMS.get(name)
    if params is None:
        params = example_params(spec)
    return spec.bind(**params)


def op_chain(name: str):
    """The op as a one-step chain (takes labels when the op mixes)."""
    import augjax

    return augjax.compose(bound_op(name))


def takes_labels(chain) -> bool:
    return "labels" in chain.inputs


# ---------------------------------------------------------------------------------------------
# DALI peers


def _uniform(lo: float, hi: float, **kw):
    from nvidia.dali import fn

    return fn.random.uniform(range=[lo, hi], **kw)


def _auto_aug(name: str, bin_: int = 9, **kw):
    """DALI's ``auto_aug`` augmentation ``name`` at a fixed magnitude bin (of 31)."""
    from nvidia.dali.auto_aug import augmentations as A
    from nvidia.dali.auto_aug.core import signed_bin

    aug = getattr(A, name)

    def body(x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return aug(x, magnitude_bin=signed_bin(bin_), num_magnitude_bins=31, **kw)
    return body


def dali_peers(device: str) -> dict[str, tuple[str, Callable]]:
    """op name -> (peer label, ``body(images)`` of DALI operators), on ``device``'s data."""
    import numpy as np
    from nvidia.dali import fn, types

    s = SIZE
    coin = fn.random.coin_flip
    mean255 = [255 * m for m in MEAN]
    std255 = [255 * v for v in STD]

    def color_twist(x):
        return fn.color_twist(x, brightness=_uniform(0.6, 1.4), contrast=_uniform(0.6, 1.4),
                              saturation=_uniform(0.6, 1.4), hue=_uniform(-36.0, 36.0))

    def rotation(x):
        return fn.warp_affine(x, matrix=fn.transforms.rotation(angle=_uniform(-30, 30),
                                                               center=[s / 2, s / 2]),
                              fill_value=0, inverse_map=False)

    peers = {
        "flip": ("DALI flip", lambda x: fn.flip(x, horizontal=coin())),
        "rot90": ("DALI rotate by 0/90/180/270", lambda x: fn.rotate(
            x, angle=fn.random.uniform(values=[0.0, 90.0, 180.0, 270.0]),
            interp_type=types.INTERP_NN)),
        "rotate": ("DALI rotate", lambda x: fn.rotate(
            x, angle=_uniform(-30, 30), keep_size=True, interp_type=types.INTERP_NN,
            fill_value=0)),
        "affine": ("DALI warp_affine (rotation)", rotation),
        "shear_x": ("DALI auto_aug shear_x (bin 9 of 31)", _auto_aug("shear_x")),
        "shear_y": ("DALI auto_aug shear_y", _auto_aug("shear_y")),
        "translate_x": ("DALI auto_aug translate_x", _auto_aug("translate_x", shape=[s, s])),
        "translate_y": ("DALI auto_aug translate_y", _auto_aug("translate_y", shape=[s, s])),
        "perspective": ("DALI warp_perspective", lambda x: fn.experimental.warp_perspective(
            x, matrix=[1.0, 0.05, 0.0, 0.02, 1.0, 0.0, 0.0001, 0.0001, 1.0])),
        "random_resized_crop": ("DALI random_resized_crop",
                                lambda x: fn.random_resized_crop(x, size=(s, s))),
        "random_crop": ("DALI crop (random anchor)", lambda x: fn.crop(
            x, crop=(200, 200), crop_pos_x=_uniform(0, 1), crop_pos_y=_uniform(0, 1))),
        "center_crop": ("DALI crop", lambda x: fn.crop(x, crop=(200, 200))),
        "color_jitter": ("DALI color_twist (one matrix, not torchvision's 4 steps)", color_twist),
        "color_twist": ("DALI color_twist", color_twist),
        "brightness": ("DALI brightness", lambda x: fn.brightness(
            x, brightness=_uniform(0.6, 1.4))),
        "contrast": ("DALI contrast", lambda x: fn.contrast(x, contrast=_uniform(0.6, 1.4))),
        "saturation": ("DALI saturation", lambda x: fn.saturation(
            x, saturation=_uniform(0.6, 1.4))),
        "hue": ("DALI hue", lambda x: fn.hue(x, hue=_uniform(-36.0, 36.0))),
        "grayscale": ("DALI color_space_conversion to GRAY (1 channel out)",
                      lambda x: fn.color_space_conversion(x, image_type=types.RGB,
                                                          output_type=types.GRAY)),
        "invert": ("DALI auto_aug invert", _auto_aug("invert")),
        "solarize": ("DALI auto_aug solarize", _auto_aug("solarize")),
        "solarize_add": ("DALI auto_aug solarize_add", _auto_aug("solarize_add")),
        "posterize": ("DALI auto_aug posterize", _auto_aug("posterize")),
        "equalize": ("DALI equalize", lambda x: fn.experimental.equalize(x)),
        "autocontrast": ("DALI auto_aug auto_contrast", _auto_aug("auto_contrast")),
        "sharpness": ("DALI auto_aug sharpness", _auto_aug("sharpness")),
        "normalize": ("DALI crop_mirror_normalize (float CHW)", lambda x: fn.crop_mirror_normalize(
            x, dtype=types.FLOAT, output_layout="CHW", mean=mean255, std=std255)),
        "to_float": ("DALI cast to float (not scaled)", lambda x: fn.cast(x, dtype=types.FLOAT)),
        "random_erasing": ("DALI erase (random anchor)", lambda x: fn.erase(
            x, anchor=_uniform(0, s - 80, shape=[2]), shape=[80, 80], axis_names="HW",
            fill_value=0)),
        "cutout": ("DALI erase (random anchor)", lambda x: fn.erase(
            x, anchor=_uniform(0, s - 16, shape=[2]), shape=[16, 16], axis_names="HW",
            fill_value=0)),
        "gaussian_blur": ("DALI gaussian_blur", lambda x: fn.gaussian_blur(
            x, window_size=5, sigma=_uniform(0.1, 2.0))),
        "box_blur": ("DALI filter (3x3 box)", lambda x: fn.experimental.filter(
            x, np.full((3, 3), 1 / 9, np.float32))),
        "gaussian_noise": ("DALI noise.gaussian", lambda x: fn.noise.gaussian(x, stddev=25.5)),
        "shot_noise": ("DALI noise.shot", lambda x: fn.noise.shot(x, factor=20.0)),
        "salt_and_pepper": ("DALI noise.salt_and_pepper",
                            lambda x: fn.noise.salt_and_pepper(x, prob=0.05)),
        "jpeg": ("DALI jpeg_compression_distortion (quality 50..100)",
                 lambda x: fn.jpeg_compression_distortion(
                     x, quality=_uniform(50, 101, dtype=types.INT32))),
        "grid_mask": ("DALI grid_mask", lambda x: fn.grid_mask(x, tile=100, ratio=0.5)),
        "water": ("DALI water", lambda x: fn.water(x)),
        "sphere": ("DALI sphere", lambda x: fn.sphere(x)),
    }
    if device == "gpu":  # DALI's median blur has no CPU operator
        peers["median_blur"] = ("DALI median_blur", lambda x: fn.experimental.median_blur(x))
    return peers


# ---------------------------------------------------------------------------------------------
# torchvision peers (v2 functional on uint8 NCHW tensors, batch-wide parameters)


def torchvision_peers() -> dict[str, tuple[str, Callable]]:
    """op name -> (label, ``f(x)`` on a uint8 NCHW torch tensor)."""
    import torch
    import torchvision.transforms.v2.functional as F

    def erase(x):
        return F.erase(x, 72, 72, 80, 80, torch.zeros((), dtype=x.dtype, device=x.device))

    return {
        "flip": ("torchvision hflip", F.horizontal_flip),
        "rotate": ("torchvision rotate", lambda x: F.rotate(x, 20.0)),
        "affine": ("torchvision affine", lambda x: F.affine(
            x, angle=20.0, translate=[0, 0], scale=1.0, shear=[0.0, 0.0])),
        "perspective": ("torchvision perspective", lambda x: F.perspective(
            x, [[0, 0], [223, 0], [223, 223], [0, 223]],
            [[10, 5], [213, 0], [223, 218], [5, 223]])),
        "random_resized_crop": ("torchvision resized_crop", lambda x: F.resized_crop(
            x, 20, 20, 150, 180, [SIZE, SIZE], antialias=True)),
        "center_crop": ("torchvision center_crop", lambda x: F.center_crop(x, [200, 200])),
        "brightness": ("torchvision adjust_brightness", lambda x: F.adjust_brightness(x, 1.2)),
        "contrast": ("torchvision adjust_contrast", lambda x: F.adjust_contrast(x, 1.2)),
        "saturation": ("torchvision adjust_saturation", lambda x: F.adjust_saturation(x, 1.2)),
        "hue": ("torchvision adjust_hue", lambda x: F.adjust_hue(x, 0.05)),
        "color_jitter": ("torchvision 4 colour adjustments", lambda x: F.adjust_hue(
            F.adjust_saturation(F.adjust_contrast(F.adjust_brightness(x, 1.1), 1.1), 1.1), 0.05)),
        "grayscale": ("torchvision rgb_to_grayscale", lambda x: F.rgb_to_grayscale(x, 3)),
        "invert": ("torchvision invert", F.invert),
        "solarize": ("torchvision solarize", lambda x: F.solarize(x, 128)),
        "posterize": ("torchvision posterize", lambda x: F.posterize(x, 4)),
        "equalize": ("torchvision equalize", F.equalize),
        "autocontrast": ("torchvision autocontrast", F.autocontrast),
        "sharpness": ("torchvision adjust_sharpness", lambda x: F.adjust_sharpness(x, 1.5)),
        "gamma": ("torchvision adjust_gamma", lambda x: F.adjust_gamma(x, 1.2)),
        "gaussian_blur": ("torchvision gaussian_blur", lambda x: F.gaussian_blur(x, [5, 5], [1.0])),
        "normalize": ("torchvision to float + normalize", lambda x: F.normalize(
            F.to_dtype(x, torch.float32, scale=True), list(MEAN), list(STD))),
        "random_erasing": ("torchvision erase", erase),
        "jpeg": ("torchvision jpeg (quality 75)", lambda x: F.jpeg(x, 75)),
        "elastic_transform": ("torchvision elastic_transform", lambda x: F.elastic_transform(
            x, torch.zeros((1, SIZE, SIZE, 2), device=x.device))),
    }


# ---------------------------------------------------------------------------------------------
# kornia peers (float images in [0, 1]: each call converts the uint8 NCHW batch and back, as a
# uint8 pipeline must; per-sample parameters where kornia's augmentation draws them)


def kornia_peers() -> dict[str, tuple[str, Callable]]:
    """op name -> (label, ``f(x)`` on a uint8 NCHW torch tensor), for the ops kornia has that
    torchvision has not (or only batch-wide), with :data:`OP_PARAMS`' settings."""
    import kornia.augmentation as KA
    import kornia.filters as KF

    def floats(f):  # f: a kornia function or augmentation module on float images in [0, 1]
        def run(x):
            return (f(x.float() / 255.0).clamp(0.0, 1.0) * 255.0).round().to(x.dtype)
        return run

    return {
        "motion_blur": ("kornia RandomMotionBlur (per sample)", floats(
            KA.RandomMotionBlur(7, 90.0, 0.0, border_type="reflect", p=1.0))),
        "median_blur": ("kornia median_blur 3x3", floats(lambda v: KF.median_blur(v, (3, 3)))),
        "box_blur": ("kornia box_blur 3x3", floats(lambda v: KF.box_blur(v, (3, 3)))),
        "gaussian_blur": ("kornia RandomGaussianBlur (per-sample sigma)", floats(
            KA.RandomGaussianBlur((5, 5), (0.1, 2.0), p=1.0))),
        "elastic_transform": ("kornia RandomElasticTransform (per sample)", floats(
            KA.RandomElasticTransform((41, 41), (5.0, 5.0), (50.0 / SIZE, 50.0 / SIZE),
                                      p=1.0))),  # torchvision's kernel for sigma 5
        "gaussian_noise": ("kornia RandomGaussianNoise", floats(
            KA.RandomGaussianNoise(mean=0.0, std=0.1, p=1.0))),
        "salt_and_pepper": ("kornia RandomSaltAndPepperNoise", floats(
            KA.RandomSaltAndPepperNoise(amount=0.05, salt_vs_pepper=0.5, p=1.0))),
        "sharpness": ("kornia RandomSharpness (per sample)", floats(
            KA.RandomSharpness(0.4, p=1.0))),
        "equalize": ("kornia RandomEqualize", floats(KA.RandomEqualize(p=1.0))),
        "channel_dropout": ("kornia RandomChannelDropout", floats(
            KA.RandomChannelDropout(num_drop_channels=1, fill_value=0.0, p=1.0))),
    }


# ---------------------------------------------------------------------------------------------
# policies


def augjax_policies() -> dict[str, Any]:
    """name -> augjax policy (one composite step)."""
    import augjax

    P = augjax.policies
    return {
        "rand_augment": P.rand_augment(n=2, m=9),
        "rand_augment_3ops": P.rand_augment(n=2, m=9, ops=THREE_OPS),
        # timm's recipe string (PIL's warp convention)
        "rand_augment_timm": P.from_timm("rand-m9-mstd0.5-inc1"),
        "trivial_augment_wide": P.trivial_augment_wide(),
        "auto_augment": P.auto_augment(),
        "augmix": P.augmix(),
    }


def dali_policies() -> dict[str, tuple[str, Callable]]:
    """policy name -> (label, body) of DALI's ``auto_aug`` (needs ``enable_conditionals``)."""
    def rand(x):
        from nvidia.dali.auto_aug import rand_augment

        return rand_augment.rand_augment(x, n=2, m=9)

    def trivial(x):
        from nvidia.dali.auto_aug import trivial_augment

        return trivial_augment.trivial_augment_wide(x)

    def auto(x):
        from nvidia.dali.auto_aug import auto_augment

        return auto_augment.auto_augment(x)

    return {"rand_augment": ("DALI auto_aug rand_augment(n=2, m=9)", rand),
            "trivial_augment_wide": ("DALI auto_aug trivial_augment_wide", trivial),
            "auto_augment": ("DALI auto_aug auto_augment (ImageNet)", auto)}


# ---------------------------------------------------------------------------------------------
# the timm-style recipe


def augjax_recipe():
    """flip, timm's rand-m9-mstd0.5-inc1, colour jitter, normalize to float CHW, random erasing,
    mixup/cutmix (timm's ImageNet alphas), as one augjax chain."""
    import augjax

    ops = augjax.ops
    return augjax.compose(
        ops.flip.bind(p=0.5),
        augjax.from_timm(TIMM_RAND, img_size=SIZE, mean=MEAN),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
        ops.normalize.bind(mean=MEAN, std=STD, chw=True),
        ops.random_erasing.bind(p=0.25),
        ops.mixup_cutmix.bind(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=CLASSES),
    )


def dali_recipe(x):
    """DALI's nearest native recipe: flip, auto_aug rand_augment(n=2, m=9), color_twist,
    crop_mirror_normalize to float CHW (no erasing, no mixing: DALI has neither)."""
    from nvidia.dali import fn, types
    from nvidia.dali.auto_aug import rand_augment

    x = fn.flip(x, horizontal=fn.random.coin_flip())
    x = rand_augment.rand_augment(x, n=2, m=9)
    x = fn.color_twist(x, brightness=_uniform(0.6, 1.4), contrast=_uniform(0.6, 1.4),
                       saturation=_uniform(0.6, 1.4))
    return fn.crop_mirror_normalize(x, dtype=types.FLOAT, output_layout="CHW",
                                    mean=[255 * m for m in MEAN], std=[255 * v for v in STD])


def timm_transform():
    """timm's per-image training transforms of the recipe (PIL in, float CHW tensor out)."""
    from timm.data import rand_augment_transform
    from timm.data.random_erasing import RandomErasing
    from torchvision import transforms as T

    hparams = dict(translate_const=int(SIZE * 0.45),
                   img_mean=tuple(round(255 * m) for m in MEAN))
    return T.Compose([
        T.RandomHorizontalFlip(),
        rand_augment_transform(TIMM_RAND, hparams),
        T.ColorJitter(0.4, 0.4, 0.4),
        T.ToTensor(),
        T.Normalize(MEAN, STD),
        RandomErasing(0.25, mode="const", device="cpu"),
    ])


def timm_mixup():
    from timm.data import Mixup

    return Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=CLASSES)
