"""Geometric ops on HWC images (augjax moves CHW data to HWC around the kernels)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._param import Param
from augjax._spec import op

__all__ = ["flip"]


@op(
    "flip",
    params={
        "p": Param(0.5, low=0.0, high=1.0, neutral=0.0, doc="probability of each flip"),
        "horizontal": Param(True, doc="mirror left-right (the width axis)"),
        "vertical": Param(False, doc="mirror top-bottom (the height axis)"),
    },
    reference="torchvision.transforms.v2.RandomHorizontalFlip / RandomVerticalFlip",
)
def flip(key, image, *, p, horizontal, vertical):
    """Mirrors each image with probability ``p``.

    ``horizontal`` mirrors the width axis (torchvision RandomHorizontalFlip), ``vertical`` the
    height axis (RandomVerticalFlip). With both, each axis gets its own coin, as two torchvision
    transforms in a row would.
    """
    k_h, k_v = jax.random.split(key)
    if horizontal:
        image = jnp.where(jax.random.bernoulli(k_h, p), image[:, ::-1], image)
    if vertical:
        image = jnp.where(jax.random.bernoulli(k_v, p), image[::-1], image)
    return image
