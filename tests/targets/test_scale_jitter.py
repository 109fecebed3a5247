"""scale_jitter (large-scale jitter) against torchvision v2: ScaleJitter's resize, then the
detection reference's FixedSizeCrop (crop at one drawn fraction, pad bottom-right), with the same
drawn values; its scale draw against ScaleJitter.make_params on the same uniform."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from augjax._core.meta import Meta
from augjax.catalog.detection import scale_jitter

torch = pytest.importorskip("torch")
tv2 = pytest.importorskip("torchvision.transforms.v2")
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

H, W = 30, 40
CONF = dict(target_size=(32, 32), scale_range=(0.3, 2.0), size=(32, 32), fill=(0.5,))


def test_the_resized_size_equals_scale_jitters_make_params(monkeypatch):
    rng = np.random.default_rng(0)
    for _ in range(20):
        u = rng.random(2).astype(np.float32)
        with monkeypatch.context() as mp:
            mp.setattr(jax.random, "uniform", lambda key, shape, *a, **k: jax.numpy.asarray(u))
            got = scale_jitter.sampler(jax.random.key(0), Meta(H, W, 3, "uint8"), {},
                                       **{**CONF, "interpolation": "bilinear",
                                          "antialias": True})
        with monkeypatch.context() as mp:
            mp.setattr(torch, "rand", lambda *a, **k: torch.tensor(u[:1]))
            want = tv2.ScaleJitter(target_size=(32, 32), scale_range=(0.3, 2.0)).make_params(
                [tv_tensors.Image(torch.zeros(3, H, W))])["size"]
        assert np.asarray(got["resized"]).tolist() == list(want)


def _fixed_size_crop(x, top, left, oh, ow, fill):
    """torchvision's references/detection FixedSizeCrop with the drawn top and left."""
    h, w = x.canvas_size if isinstance(x, tv_tensors.BoundingBoxes) else x.shape[-2:]
    nh, nw = min(h, oh), min(w, ow)
    if (nh, nw) != (h, w):
        x = F.crop(x, top, left, nh, nw)
    return F.pad(x, [0, 0, ow - nw, oh - nh], fill=fill)


def test_apply_equals_torchvision_resize_then_fixed_size_crop():
    rng = np.random.default_rng(1)
    n = 8
    x = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    boxes = np.tile(np.array([[[2, 3, 20, 15], [10, 0, 40, 30]]], np.float32), (n, 1, 1))
    masks = np.zeros((n, H, W), np.int32)
    masks[:, 5:15, 4:20] = 7
    params = scale_jitter.sample(x, key=jax.random.key(2), **CONF)
    out = scale_jitter.apply(x, params=params, boxes=boxes, masks=masks, **CONF)
    big = 0
    for i in range(n):
        nh, nw = np.asarray(params["resized"][i]).tolist()
        top, left = np.asarray(params["offset"][i]).tolist()
        big += nh > 32 or nw > 32
        img = tv_tensors.Image(torch.from_numpy(x[i]).permute(2, 0, 1))
        want = _fixed_size_crop(F.resize(img, [nh, nw], antialias=True), top, left, 32, 32, 128)
        d = np.abs(np.asarray(out["images"][i]).astype(int)
                   - want.permute(1, 2, 0).numpy().astype(int))
        assert d.max() <= 1, (i, d.max())  # ATen's uint8 fixed-point weights
        bb = tv_tensors.BoundingBoxes(torch.from_numpy(boxes[i]), format="XYXY",
                                      canvas_size=(H, W))
        wb = F.clamp_bounding_boxes(_fixed_size_crop(F.resize(bb, [nh, nw]), top, left, 32,
                                                     32, 0)).numpy()
        np.testing.assert_allclose(np.asarray(out["boxes"][i]), wb, atol=1e-4)
        mk = tv_tensors.Mask(torch.from_numpy(masks[i]))
        wm = _fixed_size_crop(F.resize(mk, [nh, nw],
                                       interpolation=tv2.InterpolationMode.NEAREST),
                              top, left, 32, 32, 0)
        np.testing.assert_array_equal(np.asarray(out["masks"][i]), wm.numpy())
    assert 0 < big < n  # both crops and pads were drawn
