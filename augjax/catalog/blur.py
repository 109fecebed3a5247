"""Blur ops: the Gaussian blur of torchvision's ``GaussianBlur`` (the self-supervised recipes'
blur, :mod:`augjax.recipes`, and timm's RandAugment ``GaussianBlur`` entries).

Images are uint8 (0..255) or float32 in [0, 1]; the kernel computes in float32 and returns the
input dtype (uint8 rounded half to even, as torchvision's ``round_()``). Borders are reflect-101
(``dcb|abcd|cba``: torch ``pad(mode="reflect")``, scipy ``mode="mirror"``). Kernel sizes are
static (part of the compiled program). The other blurs (box, motion, median, pixelate) come with
the augjax-contrib pack.

Params (``op.sample``; float32, one value per sample): ``gaussian_blur``: ``sigma`` (a range
``(low, high)`` is drawn uniformly, a number is used as is; a policy sets it from its magnitude,
0.1 to 2.0). ``op.apply(x, params={...})`` applies exact values.
"""

from __future__ import annotations

import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax.kernels.filters import correlate_separable, gaussian_kernel1d, odd_size
from augjax.kernels.pixels import to_dtype

__all__ = ["gaussian_blur"]


@op(
    "gaussian_blur",
    params={
        "kernel_size": Param((5, 5), kind="size", low=1, high=99, validate=odd_size,
                             doc="odd kernel size, int or (height, width)"),
        "sigma": Param((0.1, 2.0), kind="float_or_pair", low=1e-3, high=100.0,
                       magnitude=(0.1, 2.0),
                       doc="Gaussian sigma, or a (low, high) range drawn per sample"),
    },
    reference="torchvision.transforms.v2.GaussianBlur",
)
def gaussian_blur(image, params, *, kernel_size):
    """Blurs each image with a Gaussian kernel whose sigma is drawn per sample.

    torchvision ``GaussianBlur(kernel_size, sigma)`` semantics: ``sigma`` is a number or a range
    ``(low, high)`` from which one sigma is drawn uniformly (used for both axes); the 1D kernel is
    ``exp(-t^2 / (2 sigma^2))`` normalised, for ``t = -(k-1)/2 .. (k-1)/2``; borders are padded
    with reflection (reflect-101); uint8 results are rounded. Deviations: torchvision draws one
    sigma per call, augjax one per sample; a pair ``kernel_size`` is ``(height, width)`` here
    (torchvision orders it ``(kx, ky)``); torchvision rejects pads as large as the image, here the
    reflection repeats. Params: ``sigma``.
    """
    ky, kx = (gaussian_kernel1d(k, params["sigma"]) for k in kernel_size)
    x = correlate_separable(image.astype(jnp.float32), ky, kx)
    return to_dtype(x, image.dtype, rounding="round")
