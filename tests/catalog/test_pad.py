"""``pad`` against torchvision v2's ``F.pad`` (uint8 and float32, every padding form and mode),
its targets (boxes move by the padding, masks padded with ``mask_fill``) and its refusals."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch
from torchvision.transforms.v2 import functional as F

import augjax
from augjax.errors import InputError, ParamError

KEY = jax.random.key(0)


def _images(dtype):
    x = np.random.default_rng(0).integers(0, 256, (2, 10, 12, 3), dtype=np.uint8)
    return x if dtype == "uint8" else x.astype(np.float32) / 255


def _torch(x, **kw):
    return F.pad(torch.from_numpy(x).permute(0, 3, 1, 2), **kw).permute(0, 2, 3, 1).numpy()


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("ours, theirs", [
    (dict(padding=3), dict(padding=[3])),
    (dict(padding=(3, 1)), dict(padding=[3, 1])),
    (dict(padding=(1, 2, 3, 4)), dict(padding=[1, 2, 3, 4])),
    (dict(padding=2, fill=0.4), dict(padding=[2], fill=0.4)),  # float32: 0.4; uint8: 102
    (dict(padding=2, fill=(0.2, 0.4, 0.6)), dict(padding=[2], fill=[0.2, 0.4, 0.6])),
    (dict(padding=(4, 1), pad_mode="edge"), dict(padding=[4, 1], padding_mode="edge")),
    (dict(padding=(1, 2, 3, 4), pad_mode="reflect"),
     dict(padding=[1, 2, 3, 4], padding_mode="reflect")),
    (dict(padding=5, pad_mode="symmetric"), dict(padding=[5], padding_mode="symmetric")),
], ids=["one", "two", "four", "fill", "fill-per-channel", "edge", "reflect", "symmetric"])
def test_pad_equals_torchvision(ours, theirs, dtype):
    x = _images(dtype)
    if dtype == "uint8" and "fill" in theirs:  # torchvision reads uint8 fills in 0..255
        fill = np.atleast_1d(theirs["fill"])
        theirs = {**theirs, "fill": [round(float(v) * 255) for v in fill]}
    out = np.asarray(augjax.ops.pad.bind(**ours)(x, key=KEY))
    want = _torch(x, **theirs)
    assert out.dtype == x.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)


def test_pad_moves_boxes_and_keypoints_and_pads_masks_with_mask_fill():
    x = _images("uint8")
    boxes = np.array([[[1.0, 2.0, 5.0, 7.0]]] * 2, np.float32)
    points = np.array([[[3.0, 4.0]]] * 2, np.float32)
    masks = np.random.default_rng(1).integers(1, 4, (2, 10, 12)).astype(np.int32)
    out = augjax.ops.pad.bind(padding=(1, 2, 3, 4))(x, key=KEY, boxes=boxes, keypoints=points,
                                                     masks=masks, mask_fill=9)
    np.testing.assert_allclose(np.asarray(out["boxes"]), boxes + [1.0, 2.0, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(out["keypoints"]), points + [1.0, 2.0])
    want = np.pad(masks, ((0, 0), (2, 4), (1, 3)), constant_values=9)
    np.testing.assert_array_equal(np.asarray(out["masks"]), want)
    edge = augjax.ops.pad.bind(padding=2, pad_mode="edge")(x, key=KEY, masks=masks)
    np.testing.assert_array_equal(np.asarray(edge["masks"]),
                                  np.pad(masks, ((0, 0), (2, 2), (2, 2)), mode="edge"))


def test_pad_refusals_name_the_argument():
    with pytest.raises(ParamError, match="pad: .*'padding'"):
        augjax.ops.pad.bind(padding=(1, 2, 3))
    with pytest.raises(ParamError, match="pad: .*'padding'"):
        augjax.ops.pad.bind(padding=-1)
    with pytest.raises(ParamError, match="pad: .*'padding'"):
        augjax.ops.pad(_images("uint8"), key=KEY)  # required
    with pytest.raises(InputError, match="per-channel fill needs pad_mode='constant'"):
        augjax.ops.pad.bind(padding=1, fill=(0.1, 0.2, 0.3), pad_mode="edge")(
            _images("uint8"), key=KEY)
