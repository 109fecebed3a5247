"""What the composition benchmark compares (``compose.py``): the 20 most used ops, each pair of
them as one chain against the two ops alone, and the ImageNet training chain in augjax and in
the peers that can express it (augmax, dm-pix, kornia).

Every op is configured as the torchvision / timm recipes use it; ``out`` is the side of the
crops and the resize (224 for 256^2 inputs). The ops keep the batch's size except the first
four, so an op sees in a pair the size it sees alone after its partner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: ImageNet's mean and std (torchvision, timm).
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
#: Classes of the labels mixup and cutmix make soft.
CLASSES = 1000
#: How many ops the pair matrix has.
PAIR_OPS_COUNT = 20


def pair_ops(out: int) -> dict[str, Any]:
    """The 20 ops of the pair matrix, by short name: crops and resize, flips, rotate and
    affine, colour jitter and its four parts, grayscale, blur, normalize, erasing, mixup,
    cutmix and RandAugment."""
    import augjax
    from augjax import ops

    return {
        "random_resized_crop": ops.random_resized_crop.bind(size=out),
        "center_crop": ops.center_crop.bind(size=out),
        "random_crop": ops.random_crop.bind(size=out),
        "resize": ops.resize.bind(size=out),
        "flip": ops.flip.bind(p=0.5),
        "vflip": ops.flip.bind(p=0.5, horizontal=False, vertical=True),
        "rotate": ops.rotate.bind(degrees=30),
        "affine": ops.affine.bind(degrees=15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=10),
        "color_jitter": ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4,
                                              hue=0.1),
        "brightness": ops.brightness.bind(factor=(0.6, 1.4)),
        "contrast": ops.contrast.bind(factor=(0.6, 1.4)),
        "saturation": ops.saturation.bind(factor=(0.6, 1.4)),
        "hue": ops.hue.bind(factor=(-0.1, 0.1)),
        "grayscale": ops.random_grayscale.bind(p=0.2),
        "gaussian_blur": ops.gaussian_blur.bind(kernel_size=(5, 5), sigma=(0.1, 2.0)),
        "normalize": ops.normalize.bind(mean=MEAN, std=STD),
        "random_erasing": ops.random_erasing.bind(p=0.5),
        "mixup": ops.mixup.bind(alpha=0.2, num_classes=CLASSES),
        "cutmix": ops.cutmix.bind(alpha=1.0, num_classes=CLASSES),
        "rand_augment": augjax.rand_augment(n=2, m=9),
    }


def imagenet_chain(out: int):
    """The ImageNet training chain in augjax, in torchvision's and timm's order: random
    resized crop, flip, colour jitter, normalize (float32 HWC)."""
    import augjax
    from augjax import ops

    return augjax.compose(
        ops.random_resized_crop.bind(size=out),
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.normalize.bind(mean=MEAN, std=STD),
    )


# -- peers ------------------------------------------------------------------------------------
# Each returns ``run(images) -> images`` for a uint8 NHWC batch of the platform's arrays (a
# jax.Array; kornia takes a torch tensor), with its own randomness advanced per call, or raises
# ImportError when the peer is not installed. Each does what the peer offers for the step:
# augmax has no torchvision jitter (its ColorJitter is brightness, contrast, saturation, hue
# on floats in its own formulas) and normalizes inside its own float pipeline; dm-pix has no
# resized crop (a random crop then a jax.image.resize stands in) and works per image under vmap.


def augmax_imagenet(out: int) -> Callable[[Any], Any]:
    """augmax: ``Chain(ByteToFloat, RandomSizedCrop, HorizontalFlip, ColorJitter(p=1),
    Normalize)`` vmapped over the batch and jitted once (augmax's README form); uint8 in,
    float32 out. augmax's RandomSizedCrop zooms by a random factor in (0.5, 2) rather than
    drawing torchvision's area and ratio, and its jitter works on HSV pixels."""
    import augmax
    import jax
    import jax.numpy as jnp

    chain = augmax.Chain(
        augmax.ByteToFloat(),
        augmax.RandomSizedCrop(out, out),
        augmax.HorizontalFlip(),
        augmax.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1, p=1.0),
        augmax.Normalize(mean=jnp.asarray(MEAN), std=jnp.asarray(STD)),
    )
    fn = jax.jit(jax.vmap(chain))
    state = {"key": jax.random.PRNGKey(0)}  # augmax draws from raw uint32 keys

    def run(images):
        state["key"], sub = jax.random.split(state["key"])
        return fn(jax.random.split(sub, images.shape[0]), images)

    return run


def dm_pix_imagenet(out: int) -> Callable[[Any], Any]:
    """dm-pix: per image (vmapped, jitted) a random crop of a random size resized with
    ``jax.image.resize`` (dm-pix has no resized crop), ``random_flip_left_right``,
    ``random_brightness`` / ``random_contrast`` / ``random_saturation`` / ``random_hue``, then
    ``(x - mean) / std``."""
    import dm_pix as pix
    import jax
    import jax.numpy as jnp

    mean, std = jnp.asarray(MEAN), jnp.asarray(STD)

    def one(key, image):
        k = jax.random.split(key, 7)
        x = image.astype(jnp.float32) / 255.0
        side = image.shape[0] * 7 // 8  # one box size: dm-pix crops take static sizes
        x = pix.random_crop(k[0], x, (side, side, 3))
        x = jax.image.resize(x, (out, out, 3), "bilinear")
        x = pix.random_flip_left_right(k[1], x)
        x = pix.random_brightness(k[2], x, 0.4)
        x = pix.random_contrast(k[3], x, 0.6, 1.4)
        x = pix.random_saturation(k[4], x, 0.6, 1.4)
        x = pix.random_hue(k[5], x, 0.1)
        return (jnp.clip(x, 0.0, 1.0) - mean) / std

    fn = jax.jit(jax.vmap(one))
    state = {"key": jax.random.PRNGKey(0)}

    def run(images):
        state["key"], sub = jax.random.split(state["key"])
        return fn(jax.random.split(sub, images.shape[0]), images)

    return run


def kornia_imagenet(out: int, device: str = "cpu") -> Callable[[Any], Any]:
    """kornia: ``AugmentationSequential(RandomResizedCrop, RandomHorizontalFlip, ColorJitter,
    Normalize)`` on a float32 NCHW tensor (kornia's augmentations take floats; the uint8
    batch is converted inside the call and the output is float32)."""
    import kornia.augmentation as K
    import torch

    seq = K.AugmentationSequential(
        K.RandomResizedCrop((out, out)),
        K.RandomHorizontalFlip(),
        K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1.0),
        K.Normalize(mean=torch.tensor(MEAN), std=torch.tensor(STD)),
    ).to(device)

    def run(images):
        x = images.permute(0, 3, 1, 2).float().div_(255.0)
        with torch.no_grad():
            return seq(x)

    return run


PEERS = {"augmax": augmax_imagenet, "dm_pix": dm_pix_imagenet, "kornia": kornia_imagenet}


# -- the ops alone, where a peer has them ---------------------------------------------------------
# op name -> {peer: make(out, device) -> run(images)}; the augjax op is ``pair_ops(out)[name]``.
# The JAX peers are vmapped per image and jitted, uint8 -> float32 in [0, 1] first (they work on
# floats); kornia takes a float32 NCHW tensor. Each peer keeps its own random draws per call.


def _jax_peer(one, *, floats: bool = True):
    """``run(images)``: ``one(key, image)`` vmapped and jitted, a fresh key per call."""
    import jax
    import jax.numpy as jnp

    fn = jax.jit(jax.vmap(one))
    state = {"key": jax.random.PRNGKey(0)}

    def run(images):
        state["key"], sub = jax.random.split(state["key"])
        x = images.astype(jnp.float32) / 255.0 if floats else images
        return fn(jax.random.split(sub, images.shape[0]), x)

    return run


def _augmax(make_transform):
    def make(out, device="cpu"):
        t = make_transform(out)
        return _jax_peer(lambda key, image: t(key, image))
    return make


def _kornia(make_module):
    def make(out, device="cpu"):
        import torch

        module = make_module(out).to(device)

        def run(images):
            with torch.no_grad():
                return module(images.permute(0, 3, 1, 2).float().div_(255.0))
        return run
    return make


def _pix(fn):
    def make(out, device="cpu"):
        return _jax_peer(lambda key, image: fn(key, image, out))
    return make


def op_peers() -> dict[str, dict[str, Any]]:
    """The ops of the ImageNet chain, rotate and Gaussian blur in augmax, dm-pix and kornia."""
    import augmax
    import dm_pix as pix
    import jax.numpy as jnp
    import kornia.augmentation as K
    import torch

    return {
        "random_resized_crop": {
            "augmax": _augmax(lambda out: augmax.RandomSizedCrop(out, out)),
            "kornia": _kornia(lambda out: K.RandomResizedCrop((out, out))),
        },
        "flip": {
            "augmax": _augmax(lambda out: augmax.HorizontalFlip()),
            "dm_pix": _pix(lambda key, image, out: pix.random_flip_left_right(key, image)),
            "kornia": _kornia(lambda out: K.RandomHorizontalFlip()),
        },
        "color_jitter": {
            "augmax": _augmax(lambda out: augmax.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1.0)),
            "kornia": _kornia(lambda out: K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1.0)),
        },
        "normalize": {
            "augmax": _augmax(lambda out: augmax.Normalize(jnp.asarray(MEAN), jnp.asarray(STD))),
            "kornia": _kornia(lambda out: K.Normalize(torch.tensor(MEAN), torch.tensor(STD))),
        },
        "rotate": {
            "augmax": _augmax(lambda out: augmax.Rotate((-30, 30))),
            "dm_pix": _pix(lambda key, image, out: pix.rotate(
                image, jnp.deg2rad(jax_uniform(key, -30.0, 30.0)), order=0)),
            "kornia": _kornia(lambda out: K.RandomRotation(30.0, p=1.0)),
        },
        "gaussian_blur": {
            "dm_pix": _pix(lambda key, image, out: pix.gaussian_blur(
                image, jax_uniform(key, 0.1, 2.0), 5)),
            "kornia": _kornia(lambda out: K.RandomGaussianBlur((5, 5), (0.1, 2.0), p=1.0)),
        },
    }


def jax_uniform(key, low: float, high: float):
    import jax

    return jax.random.uniform(key, (), minval=low, maxval=high)
