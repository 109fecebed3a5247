"""``random_photometric_distort``: torchvision v2 ``RandomPhotometricDistort`` (SSD's colour
augmentation) on HWC RGB images, uint8 0..255 or float32 0..1.

Params (``op.sample``; one value per sample, leading axis N): ``on`` ((4,) bool: brightness,
contrast, saturation, hue applied), their factors ``brightness``, ``contrast``, ``saturation``,
``hue`` (float32, drawn whether applied or not), ``contrast_before`` (bool), ``permute``
(bool) and ``perm`` ((C,) int32, output channel ``i`` is input channel ``perm[i]``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax._core.spec import op
from augjax.catalog._hints import compute_bound
from augjax.catalog._tv_color import (adjust_brightness, adjust_contrast, adjust_hue,
                                      adjust_saturation)
from augjax.kernels.pixels import to_dtype

__all__ = ["random_photometric_distort"]

_NAMES = ("brightness", "contrast", "saturation", "hue")


def _sample(key, meta, params, *, brightness, contrast, saturation, hue, p):
    """torchvision ``RandomPhotometricDistort.make_params``: ``u = jax.random.uniform(key,
    (10,))``; adjustment ``i`` (brightness, contrast, saturation, hue) is on where ``u[i] < p``
    with the factor ``lo + u[4 + i] * (hi - lo)``; ``contrast_before = u[8] < 0.5``; the
    channels are permuted where ``u[9] < p``, by ``jax.random.permutation(fold_in(key, 1),
    C)``."""
    u = jax.random.uniform(key, (10,))
    out = {"on": u[:4] < p}
    for i, (name, (lo, hi)) in enumerate(zip(_NAMES, (brightness, contrast, saturation, hue))):
        out[name] = jnp.float32(lo) + u[4 + i] * jnp.float32(hi - lo)
    out["contrast_before"] = u[8] < 0.5
    out["permute"] = u[9] < p
    out["perm"] = jax.random.permutation(jax.random.fold_in(key, 1),
                                         meta.channels).astype(jnp.int32)
    return out


def _check(*, hue, **_) -> None:
    if not -0.5 <= hue[0] <= hue[1] <= 0.5:
        raise ValueError(f"hue must be a range within [-0.5, 0.5], got {hue}")


@compute_bound
@op(
    "random_photometric_distort",
    params={
        "brightness": Param((0.875, 1.125), kind="pair", low=0.0,
                            doc="range of the brightness factor"),
        "contrast": Param((0.5, 1.5), kind="pair", low=0.0, doc="range of the contrast factor"),
        "saturation": Param((0.5, 1.5), kind="pair", low=0.0,
                            doc="range of the saturation factor"),
        "hue": Param((-0.05, 0.05), kind="pair", low=-0.5, high=0.5,
                     doc="range of the hue shift (turns)"),
        "p": Param(0.5, low=0.0, high=1.0, neutral=0.0,
                   doc="probability of each adjustment and of the channel permutation"),
    },
    channels=(3,),
    sample=_sample,
    check=_check,
    reference="torchvision.transforms.v2.RandomPhotometricDistort",
)
def random_photometric_distort(image, params, *, brightness, contrast, saturation, hue, p):
    """Brightness, contrast, saturation and hue each with probability ``p``, contrast before or
    after saturation and hue, then a random channel permutation with probability ``p``.

    torchvision RandomPhotometricDistort (SSD): brightness; contrast (when ``contrast_before``);
    saturation; hue; contrast (otherwise); permute channels. uint8 images are truncated to whole
    levels after each adjustment, as torchvision does. Params: see the module docstring.
    """
    dtype = image.dtype
    on = params["on"]
    x = image.astype(jnp.float32)

    def step(x, i, fn):
        return jnp.where(on[i], fn(x, params[_NAMES[i]], dtype), x)

    before = params["contrast_before"]
    x = step(x, 0, adjust_brightness)
    x = jnp.where(before, step(x, 1, adjust_contrast), x)
    x = step(x, 2, adjust_saturation)
    x = step(x, 3, adjust_hue)
    x = jnp.where(before, x, step(x, 1, adjust_contrast))
    x = jnp.where(params["permute"], jnp.take(x, params["perm"], axis=-1), x)
    return to_dtype(x, dtype)
