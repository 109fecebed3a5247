"""Conversions at the ends of a chain: uint8 <-> float32 and the final normalization.

They are deterministic and elementwise, so inside a chain they fuse with the ops before them
into the same compiled pass (the cast-normalize costs no extra trip through memory). They draw
nothing: their params are empty (``op.sample`` returns ``{}``, ``op.apply(x, params={})`` is
the call).
"""

from __future__ import annotations

import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax.kernels.pixels import bound, is_int

__all__ = ["normalize", "to_float", "to_uint8"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_SCALE = "mean and std in the 0..1 scale, as torchvision's: 0..255 levels divided by 255"


@op(
    "normalize",
    params={
        "mean": Param(IMAGENET_MEAN, per_channel=True, usual=(0, 1), doc=_SCALE),
        "std": Param(IMAGENET_STD, per_channel=True, low=0.0, low_exclusive=True, doc="0..1 scale"),
        "chw": Param(False, doc="return channels-first (N, C, H, W) whatever the input layout"),
    },
    output_dtype="float32",
    output_layout=lambda **p: "CHW" if p["chw"] else None,
    reference="torchvision.transforms.v2.Normalize after ToDtype(float32, scale=True)",
)
def normalize(image, params, *, mean, std, chw):
    """Returns ``(x - mean) / std`` as float32, uint8 input first divided by 255.

    torchvision semantics: ``mean`` and ``std`` are in the 0..1 scale (ImageNet's by default),
    so uint8 and float images in [0, 1] give the same result. Computed as one multiply-add per
    value, ``x * (1 / (255 std)) + (-mean / std)`` with the constants folded in float64, which is
    within 1e-6 of the two-step formula. ``chw=True`` makes the output channels-first (a
    normalize at the end of a chain fuses the cast, the normalization and the transpose); with
    ``chw=False`` the output keeps the input's layout.
    """
    scale = jnp.asarray([1.0 / (bound(image.dtype) * s) for s in std], jnp.float32)
    offset = jnp.asarray([-m / s for m, s in zip(mean, std)], jnp.float32)
    return image.astype(jnp.float32) * scale + offset


@op("to_float", output_dtype="float32",
    reference="torchvision.transforms.v2.ToDtype(torch.float32, scale=True)")
def to_float(image, params):
    """Converts uint8 levels to float32 in [0, 1]; float32 input is returned as is.

    Computed as ``x * (1 / 255)``, bit for bit torchvision's ``ToDtype(float32, scale=True)``
    (within two float32 ulps of the exact ``x / 255``; XLA would turn the division into this
    product anyway).
    """
    if not is_int(image.dtype):
        return image
    return image.astype(jnp.float32) * jnp.float32(1.0 / 255.0)


@op("to_uint8", output_dtype="uint8",
    reference="torchvision.transforms.v2.ToDtype(torch.uint8, scale=True), rounded")
def to_uint8(image, params):
    """Converts float32 in [0, 1] to uint8 levels: ``round(clip(x, 0, 1) * 255)``.

    Rounds to the nearest level (halves to even), so ``to_uint8(to_float(x)) == x``. This
    deviates from torchvision's ``ToDtype(uint8, scale=True)``, which truncates
    ``x * 255.999``: the two differ by at most one level. Values outside [0, 1] are clipped;
    uint8 input is returned as is.
    """
    if is_int(image.dtype):
        return image
    return jnp.round(jnp.clip(image, 0.0, 1.0) * 255.0).astype(jnp.uint8)
