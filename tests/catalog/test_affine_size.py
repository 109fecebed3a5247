"""``affine(size=...)``: only the central window of the warped image is computed. Its pixels,
boxes and masks are those of ``affine`` then ``center_crop(size)`` (the two ops, each checked
against torchvision elsewhere; float32 pixels within one float32 step), and the pixels match torchvision's ``F.affine`` then
``F.center_crop`` on the op's own draws."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch
import torchvision.transforms.v2.functional as F

import augjax
from augjax.errors import InputError

CFG = dict(degrees=20.0, translate=(0.1, 0.1), scale=(0.6, 1.4), shear=(-8.0, 8.0))


def _images(n, h, w, dtype, seed):
    x = np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)
    return x if dtype == np.uint8 else x.astype(np.float32) / 255.0


@pytest.mark.slow
@pytest.mark.parametrize("interp,dtype,hw,size", [
    ("bilinear", np.uint8, (24, 30), (12, 15)), ("bilinear", np.float32, (24, 30), (12, 15)),
    ("nearest", np.uint8, (21, 20), (10, 7)), ("nearest", np.float32, (16, 16), 16)])
def test_affine_size_is_affine_then_center_crop(interp, dtype, hw, size):
    n = 5
    x = _images(n, *hw, dtype, seed=1)
    boxes = np.tile(np.array([[2, 3, 14, 12], [0, 0, 5, 6]], np.float32), (n, 1, 1))
    masks = (np.random.default_rng(2).random((n, *hw)) > 0.5).astype(np.uint8)
    count = np.full((n,), 2, np.int32)
    kw = dict(CFG, interpolation=interp, fill=(0.2, 0.5, 0.9))
    two = augjax.compose([augjax.ops.affine.bind(**kw), augjax.ops.center_crop.bind(size=size)])
    one = augjax.compose([augjax.ops.affine.bind(**kw, size=size)])
    key = jax.random.key(7)
    a = two(x, key=key, boxes=boxes, boxes_valid=count, masks=masks)
    b = one(x, key=key, boxes=boxes, boxes_valid=count, masks=masks)
    if dtype == np.uint8:
        np.testing.assert_array_equal(np.asarray(b["images"]), np.asarray(a["images"]))
    else:  # XLA's code for the smaller output fuses the multiply-adds its own way: 1 ulp
        np.testing.assert_allclose(np.asarray(b["images"]), np.asarray(a["images"]), rtol=0,
                                   atol=2.0 ** -23)
    np.testing.assert_array_equal(np.asarray(b["masks"]), np.asarray(a["masks"]))
    np.testing.assert_array_equal(np.asarray(b["boxes_valid"]), np.asarray(a["boxes_valid"]))
    # the window's shift is folded into the matrix: the same boxes up to float32 rounding
    np.testing.assert_allclose(np.asarray(b["boxes"]), np.asarray(a["boxes"]), atol=1e-4)


def test_affine_size_matches_torchvision_affine_then_center_crop():
    n, (h, w), size = 4, (32, 40), (17, 20)
    x = _images(n, h, w, np.uint8, seed=3)
    keys = jax.random.split(jax.random.key(4), n)
    out = np.asarray(augjax.ops.affine(x, key=keys, interpolation="bilinear", size=size, **CFG))
    assert out.shape == (n, *size, 3)
    p = jax.tree.map(np.asarray, augjax.ops.affine.sample(x, key=keys, **CFG))
    for i in range(n):
        t = torch.from_numpy(np.ascontiguousarray(x[i].transpose(2, 0, 1)))
        ref = F.affine(t, angle=float(p["degrees"][i]),
                       translate=[int(v) for v in p["translate"][i]], scale=float(p["scale"][i]),
                       shear=[float(v) for v in p["shear"][i]],
                       interpolation=F.InterpolationMode.BILINEAR)
        ref = F.center_crop(ref, list(size)).numpy().transpose(1, 2, 0)
        assert np.abs(out[i].astype(int) - ref.astype(int)).max() <= 1  # a .5 rounds either way


def test_affine_size_larger_than_the_image_is_a_typed_error():
    x = _images(2, 10, 12, np.uint8, seed=5)
    with pytest.raises(InputError, match=r"affine: size must be at most the image's size "
                                         r"\(10, 12\), got \(11, 12\)") as err:
        augjax.ops.affine(x, key=jax.random.key(0), size=(11, 12))
    assert err.value.op == "affine" and err.value.argument == "size"
