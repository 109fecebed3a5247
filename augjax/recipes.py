"""Ready-made multi-view recipes of self-supervised learning, each with its paper's parameters.

Each returns a :class:`augjax.Views` (see :mod:`augjax.multiview`): call it on a batch of
decoded images (uint8 (N, H, W, 3), any size) with a key, or inside a DALI ``@pipeline_def``.

Sources (read 2026-12-04):

- DINO: Caron et al., "Emerging Properties in Self-Supervised Vision Transformers", ICCV 2021,
  arXiv:2104.14294, and ``facebookresearch/dino`` ``main_dino.py`` (``DataAugmentationDINO``)
  with ``utils.py`` (``GaussianBlur``: PIL radius ~ U(0.1, 2.0); ``Solarization``: PIL
  ``ImageOps.solarize``, threshold 128).
- SimCLR: Chen et al., "A Simple Framework for Contrastive Learning of Visual Representations",
  ICML 2020, arXiv:2002.05709, Appendix A, and ``google-research/simclr`` ``data_util.py``
  (``preprocess_for_train``, ``color_jitter`` with strength s = 1.0, ``random_blur``: kernel
  ``height // 10`` radius, sigma ~ U(0.1, 2.0), p = 0.5).
- BYOL: Grill et al., "Bootstrap Your Own Latent", NeurIPS 2020, arXiv:2006.07733, Table 6
  (Appendix B), and ``google-deepmind/deepmind-research`` ``byol/utils/augmentations.py``
  (``augment_config``: view1 / view2).

Deviations, the same in all three: the resize after the crop is bilinear with antialias by
default (the references resize bicubic: DINO torchvision's ``RandomResizedCrop(...,
interpolation=BICUBIC)``, SimCLR and BYOL TF's ``resize``); ``interpolation="bicubic"`` gives
DINO's resampling (torchvision's antialiased bicubic, :func:`augjax.ops.random_resized_crop`:
ATen's counterpart of PIL's BICUBIC, which DINO's PIL images take), and is the nearer of
augjax's modes to TF's. Bilinear stays the default so that the recipes' outputs do not change;
bicubic takes batches and lists of images of different sizes alike (in DALI, on decoded images
of different sizes, DALI's own cubic resamples, as its linear does for bilinear). The Gaussian
blur is a true Gaussian of ``kernel_size`` taps (23 for 224 views, 9 for DINO's 96 local views,
as SimCLR/BYOL's 10% of the side; DINO uses PIL's box approximation,
whose support for radius 2 is about 13 taps) with sigma drawn per sample; colour jitter is
torchvision's (multiplicative factors, random order: DINO's exactly; SimCLR's ``simclrv2``
implementation; BYOL's factor ranges). With ``normalize=True`` (default) the views end in
ImageNet normalization (float32); ``False`` keeps uint8 views (to show or to normalize later).

:func:`nnunet` is a 3D segmentation recipe (a :class:`augjax.volumes.VolumeChain` over
``augjax.Volumes``), with nnU-Net v2's default probabilities and ranges: MIC-DKFZ/nnUNet
``nnunetv2/training/nnUNetTrainer/nnUNetTrainer.py`` at 0e495086 (2026-07-13), lines 155
(``oversample_foreground_percent = 0.33``), 495-496 (3D: rotation +-30 degrees, mirror axes
(0, 1, 2)) and 739-835 (``get_training_transforms``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from augjax.multiview import Views, views

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "byol", "dino", "nnunet", "simclr", "view_chain"]

#: ImageNet normalization used by the three references.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

def _side(owner: str, name: str, value: Any) -> int:
    """A view's side: an int >= 1 (the recipes' views are square), else ParamError."""
    from augjax.errors import ParamError

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        square = " (the recipe's views are square: one side)" if isinstance(
            value, (tuple, list)) else ""
        raise ParamError(f"{owner}: argument '{name}' expects an int >= 1{square}, got "
                         f"{value!r}", op=owner, param=name)
    return int(value)


def _range(owner: str, name: str, value: Any) -> tuple[float, float]:
    """A crop's area range: ``(min, max)`` with ``0 < min <= max <= 1``, else ParamError."""
    from augjax.errors import ParamError

    try:
        lo, hi = (float(v) for v in value)
        ok = 0.0 < lo <= hi <= 1.0 and not isinstance(value, (str, bytes))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ParamError(f"{owner}: argument '{name}' expects a (min, max) pair of fractions of "
                         f"the image's area with 0 < min <= max <= 1, got {value!r}", op=owner,
                         param=name)
    return (lo, hi)


#: PIL's resampling constants (``Image.NEAREST``, ``BILINEAR``, ``BICUBIC``) by value.
_PIL_MODES = {0: "nearest", 2: "bilinear", 3: "bicubic"}


def _interpolation(owner: str, value: Any) -> str:
    """``"nearest"``, ``"bilinear"`` or ``"bicubic"``, given as such, as torchvision's
    ``InterpolationMode`` (its value) or as PIL's constant (DINO's ``Image.BICUBIC``)."""
    from augjax.errors import ParamError

    if isinstance(value, int) and not isinstance(value, bool) and value in _PIL_MODES:
        return _PIL_MODES[value]
    value = getattr(value, "value", value)  # torchvision's InterpolationMode
    if value not in ("nearest", "bilinear", "bicubic"):
        raise ParamError(f"{owner}: argument 'interpolation' expects 'nearest', 'bilinear' or "
                         f"'bicubic' (or torchvision's InterpolationMode, PIL's Image.BICUBIC), "
                         f"got {value!r}", op=owner, param="interpolation")
    return value


def _flag(owner: str, name: str, value: Any) -> bool:
    from augjax.errors import ParamError

    if not isinstance(value, bool):
        raise ParamError(f"{owner}: argument '{name}' expects True or False, got {value!r}",
                         op=owner, param=name)
    return value


#: The blur's kernel for a view of ``size`` pixels: SimCLR's ``2 * (size // 20) + 1`` (23 at 224).
def _blur_kernel(size: int) -> int:
    return 2 * max(size // 20, 1) + 1


def _maybe(op: Any, p: float) -> list[Any]:
    """``op`` applied with probability ``p`` (always for p=1, never for p=0)."""
    from augjax.chain import random_apply

    if p >= 1.0:
        return [op]
    if p <= 0.0:
        return []
    return [random_apply(op, p=p)]


def _blur(size: int, sigma: tuple[float, float], kernel: int | None = None) -> Any:
    """The views' Gaussian blur: augjax's ``gaussian_blur`` op (:mod:`augjax.catalog.blur`)."""
    from augjax import ops

    return ops.gaussian_blur.bind(kernel_size=kernel or _blur_kernel(size), sigma=tuple(sigma))


def view_chain(*, size: int, scale: tuple[float, float], jitter: tuple[float, ...],
               jitter_p: float, gray_p: float, blur_p: float, solarize_p: float,
               normalize: bool, ratio: tuple[float, float] = (3 / 4, 4 / 3),
               blur_sigma: tuple[float, float] = (0.1, 2.0), blur_kernel: int | None = None,
               interpolation: str = "bilinear") -> Any:
    """One view's chain, the recipes' building block: random resized crop (resized with
    ``interpolation``, antialiased), horizontal flip, colour jitter (``jitter`` = brightness,
    contrast, saturation, hue) with probability ``jitter_p``, grayscale with ``gray_p``,
    Gaussian blur with ``blur_p`` (``blur_kernel`` taps, odd; default SimCLR's 10% of the side:
    23 at 224, 9 at 96, where a sigma of 2 keeps 97.6% of the Gaussian: give 13 or more for
    all of it), solarize (threshold 128) with ``solarize_p``, then ImageNet normalization if
    ``normalize``. Change a recipe by building its views with it: ``augjax.views({"global":
    [view_chain(...), view_chain(...)], "local": (8, view_chain(...))})``."""
    from augjax import ops
    from augjax.chain import compose

    b, c, s, h = jitter
    chain = [
        ops.random_resized_crop.bind(size=(size, size), scale=tuple(scale), ratio=tuple(ratio),
                                     interpolation=interpolation, antialias=True),
        ops.flip.bind(p=0.5),
        *_maybe(ops.color_jitter.bind(brightness=b, contrast=c, saturation=s, hue=h), jitter_p),
        *_maybe(ops.random_grayscale.bind(p=gray_p), 1.0 if gray_p > 0 else 0.0),
        *(_maybe(_blur(size, blur_sigma, blur_kernel), blur_p) if blur_p > 0 else []),
        *_maybe(ops.solarize.bind(threshold=128.0), solarize_p),
    ]
    if normalize:
        chain.append(ops.normalize.bind(mean=IMAGENET_MEAN, std=IMAGENET_STD))
    return compose(*chain)


def dino(*, global_size: int = 224, local_size: int = 96, local_count: int = 8,
         global_scale: tuple[float, float] = (0.4, 1.0),
         local_scale: tuple[float, float] = (0.05, 0.4), normalize: bool = True,
         interpolation: str = "bilinear") -> Views:
    """DINO's multi-crop (``DataAugmentationDINO``): groups ``"global"`` (2 views) and
    ``"local"`` (``local_count`` views).

    Every view: ``RandomResizedCrop`` (global ``global_size``, scale ``global_scale``; local
    ``local_size``, scale ``local_scale``), horizontal flip p=0.5, ``ColorJitter(0.4, 0.4, 0.2,
    0.1)`` p=0.8, grayscale p=0.2; Gaussian blur (sigma ~ U(0.1, 2)) p=1.0 on the first global
    view, p=0.1 on the second, p=0.5 on local views; solarize p=0.2 on the second global view
    only. Defaults are the reference code's (facebookresearch/dino ``main_dino.py``:
    ``--global_crops_scale 0.4 1.``, ``--local_crops_scale 0.05 0.4``,
    ``--local_crops_number 8``; 6 is the other common multi-crop setting, ``local_count=6``);
    ``local_count=0`` disables multi-crop (the ``"global"`` group only), as
    ``--local_crops_number 0`` does. ``interpolation``: the crops' resize, ``"bilinear"``
    (default), ``"bicubic"`` for DINO's exact resampling (its ``RandomResizedCrop(...,
    interpolation=Image.BICUBIC)``, torchvision's antialiased bicubic) or ``"nearest"``."""
    if isinstance(local_count, bool) or not isinstance(local_count, int) or local_count < 0:
        from augjax.errors import ParamError

        raise ParamError(f"dino: argument 'local_count' expects an int >= 0, got "
                         f"{local_count!r}", op="dino", param="local_count")
    global_size, local_size = _side("dino", "global_size", global_size), _side(
        "dino", "local_size", local_size)
    global_scale = _range("dino", "global_scale", global_scale)
    local_scale = _range("dino", "local_scale", local_scale)
    interpolation = _interpolation("dino", interpolation)
    normalize = _flag("dino", "normalize", normalize)
    common = dict(jitter=(0.4, 0.4, 0.2, 0.1), jitter_p=0.8, gray_p=0.2, normalize=normalize,
                  interpolation=interpolation)
    global1 = view_chain(size=global_size, scale=global_scale, blur_p=1.0, solarize_p=0.0,
                         **common)
    global2 = view_chain(size=global_size, scale=global_scale, blur_p=0.1, solarize_p=0.2,
                         **common)
    if local_count == 0:
        return views({"global": [global1, global2]})
    local = view_chain(size=local_size, scale=local_scale, blur_p=0.5, solarize_p=0.0, **common)
    return views({"global": [global1, global2], "local": (local_count, local)})


def simclr(*, size: int = 224, strength: float = 1.0, blur: bool = True,
           normalize: bool = True, interpolation: str = "bilinear") -> Views:
    """SimCLR's two views (group ``"views"``), one distribution for both: random resized crop
    (scale (0.08, 1), ratio (3/4, 4/3)), horizontal flip p=0.5, colour distortion of
    ``strength`` s (``ColorJitter(0.8s, 0.8s, 0.8s, 0.2s)`` p=0.8, grayscale p=0.2), Gaussian
    blur p=0.5 (kernel 10% of the side, sigma ~ U(0.1, 2); ``blur=False`` for CIFAR).
    ``interpolation``: the crops' resize, ``"bilinear"`` (default), ``"bicubic"`` (as the
    reference's TF bicubic resize) or ``"nearest"``."""
    size = _side("simclr", "size", size)
    interpolation = _interpolation("simclr", interpolation)
    normalize = _flag("simclr", "normalize", normalize)
    blur = _flag("simclr", "blur", blur)
    s = float(strength)
    chain = view_chain(size=size, scale=(0.08, 1.0), jitter=(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s),
                       jitter_p=0.8, gray_p=0.2, blur_p=0.5 if blur else 0.0, solarize_p=0.0,
                       normalize=normalize, interpolation=interpolation)
    return views({"views": (2, chain)})


def byol(*, size: int = 224, normalize: bool = True, interpolation: str = "bilinear") -> Views:
    """BYOL's two views (group ``"views"``; Table 6): random resized crop (scale (0.08, 1)),
    horizontal flip p=0.5, ``ColorJitter(0.4, 0.4, 0.2, 0.1)`` p=0.8, grayscale p=0.2; Gaussian
    blur p=1.0 on view 1 and 0.1 on view 2; solarize p=0.0 on view 1 and 0.2 on view 2.
    ``interpolation``: the crops' resize, ``"bilinear"`` (default), ``"bicubic"`` (as the
    reference's TF bicubic resize) or ``"nearest"``."""
    size = _side("byol", "size", size)
    interpolation = _interpolation("byol", interpolation)
    normalize = _flag("byol", "normalize", normalize)
    common = dict(size=size, scale=(0.08, 1.0), jitter=(0.4, 0.4, 0.2, 0.1), jitter_p=0.8,
                  gray_p=0.2, normalize=normalize, interpolation=interpolation)
    view1 = view_chain(blur_p=1.0, solarize_p=0.0, **common)
    view2 = view_chain(blur_p=0.1, solarize_p=0.2, **common)
    return views({"views": [view1, view2]})


def nnunet(patch_size: tuple[int, int, int] | None = None, *,
           rotation: float = 30.0 / 360.0 * 2.0 * math.pi,
           mirror_axes: tuple[int, ...] = (0, 1, 2)) -> Any:
    """nnU-Net v2's default 3D training augmentation as one volume chain (arrays
    ``augjax.Volumes`` ``(N, D, H, W, C)`` float with masks ``(N, D, H, W)``).

    In order (nnUNetTrainer.py lines 739-835; probabilities per volume): a ``patch_size`` patch
    centred on a foreground voxel with probability 0.33, else uniform (when ``patch_size`` is
    given; line 155); rotation uniform in +-``rotation`` about each axis with p 0.2 and one scale
    in (0.7, 1.4) for the three axes with p 0.2, no elastic deformation (``SpatialTransform``,
    p_elastic_deform=0), trilinear images, nearest masks, zero padding; gaussian noise std in
    (0, 0.1), p 0.1; gaussian blur sigma (0.5, 1) per channel (p 0.5) and axis, p 0.2;
    multiplicative brightness (0.75, 1.25), p 0.15; contrast (0.75, 1.25) preserving the range,
    p 0.15; low resolution scale (0.5, 1) per channel (p 0.5), p 0.25; inverted gamma
    (0.7, 1.5) retaining stats, p 0.1; gamma (0.7, 1.5), p 0.3; a flip of each of
    ``mirror_axes`` with p 0.5.

    Deviations: nnU-Net samples a larger initial patch and its spatial transform crops the
    patch's centre; here the patch is cut first and the affine pads with zeros. The scale is
    MONAI's factor on the sampling grid (above 1 shows more of the volume).
    """
    from augjax.catalog.volume_ops import volume_ops as vol

    steps = [vol.crop.bind(size=tuple(patch_size), p_foreground=0.33)] if patch_size else []
    steps += [
        vol.affine.bind(rotate=rotation, p_rotation=0.2, scale=(-0.3, 0.4), p_scaling=0.2,
                        isotropic=True),
        vol.noise.bind(p=0.1, std=(0.0, 0.1)),
        vol.blur.bind(p=0.2, sigma=(0.5, 1.0), p_per_channel=0.5),
        vol.brightness.bind(p=0.15, multiplier=(0.75, 1.25)),
        vol.contrast.bind(p=0.15, factor=(0.75, 1.25), preserve_range=True),
        vol.lowres.bind(p=0.25, scale=(0.5, 1.0), p_per_channel=0.5),
        vol.gamma.bind(p=0.1, gamma=(0.7, 1.5), p_invert=1.0),
        vol.gamma.bind(p=0.3, gamma=(0.7, 1.5), p_invert=0.0),
    ]
    if mirror_axes:
        steps.append(vol.flip.bind(axes=tuple(mirror_axes), p=0.5))
    return vol.chain(*steps, name="nnunet")
