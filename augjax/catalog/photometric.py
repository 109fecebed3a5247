"""``random_photometric_distort``: torchvision v2 ``RandomPhotometricDistort`` (SSD's colour
augmentation) on HWC RGB images, uint8 0..255 or float32 0..1.

Params (``op.sample``; one value per sample, leading axis N): ``on`` ((4,) bool: brightness,
contrast, saturation, hue applied), their factors ``brightness``, ``contrast``, ``saturation``,
``hue`` (float32, drawn whether applied or not), ``contrast_before`` (bool), ``permute``
(bool) and ``perm`` ((C,) int32, output channel ``i`` is input channel ``perm[i]``).

On the CPU a uint8 batch goes image by image and each adjustment is a real branch
(``lax.cond``): only the adjustments a sample draws run (as selects under ``vmap`` every sample
computed all four, the hue round trip included: 11.0 -> 3.6 CPU-ms per 480x640 image at B=16).
The select form stays off the CPU, where the batch is partitioned over devices, and for float
images (contrast's mean of one image is rounded in another order than a batch's: an ulp);
both forms give the same bits (tests/catalog/test_photometric_distort.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from augjax._core.param import Param
from augjax.calls import op
from augjax.catalog._hints import compute_bound
from augjax.catalog._tv_color import (adjust_brightness, adjust_contrast, adjust_hue,
                                      adjust_saturation)
from augjax.kernels.batching import broadcast_unbatched
from augjax.kernels.partition import partitioned
from augjax.kernels.pixels import is_int, to_dtype
from augjax.kernels.platform import platform_dependent

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
    if partitioned() or not _exact_mean(image):  # partitioned: a loop would serialize a
        return _select_form(image, params)       # batch laid out over several devices
    return platform_dependent(image, params, cpu=_branch_form, default=_select_form)


def _exact_mean(image) -> bool:
    """Whether contrast's mean gray is exact (whole levels summed exactly: ``mean_gray``'s
    int32 rows, or float32 sums under 2**24), so one image's reduction gives the bits of a
    batch's. A float image's mean is rounded, in another order for one image than for a
    batch (an ulp apart): those keep the select form."""
    size = image.shape[0] * image.shape[1]
    return is_int(image.dtype) and (size % 32 == 0 and size * 255 < 2**31
                                    or size * 255 < 2**24)


def _select_form(image, params):
    """Every adjustment computed, kept where the sample drew it (``jnp.where``)."""
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


def _branching(image, params):
    """One image: each adjustment a ``lax.cond`` branch, run only where the sample drew it."""
    dtype = image.dtype
    on = params["on"]

    def step(x, i, fn, when=True):
        return jax.lax.cond(on[i] & when, lambda v: fn(v, params[_NAMES[i]], dtype),
                            lambda v: v, x)

    before = params["contrast_before"]
    x = image.astype(jnp.float32)
    x = step(x, 0, adjust_brightness)
    x = step(x, 1, adjust_contrast, before)
    x = step(x, 2, adjust_saturation)
    x = step(x, 3, adjust_hue)
    x = step(x, 1, adjust_contrast, ~before)
    x = jax.lax.cond(params["permute"], lambda v: jnp.take(v, params["perm"], axis=-1),
                     lambda v: v, x)
    return to_dtype(x, dtype)


@custom_vmap
def _branching_one(image, params):
    return _branching(image, params)


@_branching_one.def_vmap
def _branching_batched(axis_size, in_batched, image, params):
    args = broadcast_unbatched(axis_size, in_batched, (image, params))
    return jax.lax.map(lambda a: _branching(*a), args), True


@jax.custom_jvp
def _branch_form(image, params):
    """:func:`_branching` image by image over a batch (a ``custom_vmap``, which has no
    derivative rule of its own: the select form's derivative, the same function)."""
    return _branching_one(image, params)


@_branch_form.defjvp
def _branch_jvp(primals, tangents):
    image, params = primals
    out = _branch_form(image, params)
    _, tangent = jax.jvp(lambda im: _select_form(im, params), (image,), (tangents[0],))
    return out, tangent
