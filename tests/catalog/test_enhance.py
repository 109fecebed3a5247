"""Contrast's and sharpness's pixels are composed once (``augjax/kernels/enhance.py``): every
form that computes them gives the op's bits.

Contrast is computed by the op, by ``random_photometric_distort``, by ``color_jitter`` (its
generic stage in the CPU and two-pass forms, its Pallas kernel, interpreted here), by a policy
layer's blend family (float32) and, for uint8 policy layers on a GPU, from the statistics
kernel's gray sum; sharpness by the op, the blend family and the layer's Pallas kernel. Each is
checked here against the op on the same images and factors, and the op against torchvision
(an independent reference). The forms that reduce contrast's mean gray their own way (the
two-pass form's ``jnp.mean``, the Pallas kernel's tile sums) give the same mean where the gray
sum is exact (uint8, small images), and so the same bits; on float32 they are an ulp apart.
The layer kernel's sharpness on whole policies is ``tests/compose/test_layer_kernel.py``'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import images, tv
from torchvision.transforms.v2 import functional as F

import augjax
from augjax.catalog import Blend, member
from augjax.catalog._jitter import jitter
from augjax.catalog.photometric import _select_form
from augjax.kernels.enhance import contrast_mean
from augjax.kernels.pixels import mean_of_sum
from augjax.policies._families import FAMILIES

FACTORS = np.asarray([0.0, 0.4, 1.0, 1.7], np.float32)
#: ``(H, W)``: a gray sum of 32-pixel rows (``mean_gray``'s int32 form) and one that is not.
SHAPES = [(16, 20), (9, 11)]


def _images(dtype, shape):
    return jnp.asarray(images(len(FACTORS), *shape, dtype=dtype, seed=31))


def _family(name: str, x, f):
    """The policy blend family on one image with the chosen member ``name`` among contrast's,
    saturation's and sharpness's (one blend, its degenerate image selected per sample)."""
    names = ("contrast", "saturation", "sharpness")
    items = [(None, {"factor": f}, member(getattr(augjax.ops, n), Blend)) for n in names]
    return FAMILIES["blend"](x, items, jnp.int32(names.index(name)), jnp.bool_(True))


@pytest.mark.fast_tier("uint8")
@pytest.mark.parametrize("dtype, shape", [(np.uint8, SHAPES[0]), (np.float32, SHAPES[1])],
                         ids=["uint8", "float32"])
def test_contrast_in_every_form_gives_the_ops_bits(dtype, shape):
    x = _images(dtype, shape)
    f = jnp.asarray(FACTORS)
    op = np.asarray(augjax.ops.contrast.apply(x, params={"factor": f}))
    for i, fi in enumerate(FACTORS):  # the op is torchvision's adjust_contrast
        ref = tv(F.adjust_contrast, np.asarray(x[i:i + 1]), contrast_factor=float(fi))[0]
        d = np.abs(op[i].astype(np.float64) - ref.astype(np.float64)).max()
        assert d <= (1 if dtype == np.uint8 else 2e-6), (i, d)

    order = jnp.asarray([1, 0, 2, 3], jnp.int32)
    factors = jnp.stack([jnp.ones_like(f), f, jnp.ones_like(f), jnp.zeros_like(f)], 1)
    only = (False, True, False, False)
    on = jnp.asarray([False, True, False, False])
    photometric = {"on": jnp.broadcast_to(on, (len(FACTORS), 4)), "contrast": f,
                   "brightness": f, "saturation": f, "hue": f * 0,
                   "permute": jnp.zeros(len(FACTORS), bool),
                   "perm": jnp.broadcast_to(jnp.arange(3, dtype=jnp.int32), (len(FACTORS), 3))}

    @jax.jit
    def forms(x, f, factors, photometric):
        out = {form: jax.vmap(lambda im, fs, form=form: jitter(im, order, fs, only, form))(
            x, factors) for form in ("cpu", "gpu", "pallas")}
        for before in (True, False):
            p = dict(photometric, contrast_before=jnp.full(len(FACTORS), before))
            out[f"photometric/{before}"] = jax.vmap(_select_form)(x, p)
        out["family"] = jax.vmap(lambda im, fi: _family("contrast", im, fi))(x, f)
        return out

    got = jax.tree.map(np.asarray, forms(x, f, factors, photometric))
    for form, out in got.items():
        assert out.dtype == op.dtype
        if form in ("gpu", "pallas") and dtype == np.float32:  # their own mean: an ulp apart
            np.testing.assert_allclose(out, op, atol=2e-6, rtol=0, err_msg=form)
        else:
            np.testing.assert_array_equal(out, op, err_msg=form)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_statistics_kernels_gray_sum_gives_contrasts_mean(shape):
    """uint8 policy layers on a GPU read contrast's mean from the statistics kernel (tiles of
    the gray summed in int32, interpreted here): the mean of the op's composition, bitwise."""
    from augjax.kernels.histogram_pallas import stats_kernel

    x = _images(np.uint8, shape)
    h, w = shape

    def both(im):
        gray = stats_kernel(im, jnp.int32(4), interpret=True)[3]
        planes = [im[..., k].astype(jnp.float32) for k in range(3)]
        return mean_of_sum(gray, h * w), contrast_mean(planes, jnp.uint8)

    kernel, composed = jax.jit(jax.vmap(both))(x)
    np.testing.assert_array_equal(np.asarray(kernel), np.asarray(composed))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_sharpness_in_the_blend_family_gives_the_ops_bits(dtype):
    x = _images(dtype, SHAPES[0])
    f = jnp.asarray(FACTORS)
    op = np.asarray(augjax.ops.sharpness.apply(x, params={"factor": f}))
    for i, fi in enumerate(FACTORS):  # the op is torchvision's adjust_sharpness
        ref = tv(F.adjust_sharpness, np.asarray(x[i:i + 1]), sharpness_factor=float(fi))[0]
        d = np.abs(op[i].astype(np.float64) - ref.astype(np.float64)).max()
        assert d <= (1 if dtype == np.uint8 else 2e-6), (i, d)
    family = jax.jit(jax.vmap(lambda im, fi: _family("sharpness", im, fi)))(x, f)
    np.testing.assert_array_equal(np.asarray(family), op)
