"""copy_paste: against a NumPy reference on the params the op drew (pixels bitwise, masks and
boxes exactly), its properties (boxes equal their visible masks' extents, the drawn subset,
validity), box-only and target-free calls, replay, DALI == arrays, and bad input errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax.catalog.paste import copy_paste, copy_paste_box_labels
from augjax.errors import InputError

N, H, W, M = 6, 12, 16, 3


def _data(seed=0, n=N):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    masks = np.zeros((n, H, W, M), np.uint8)
    boxes = np.zeros((n, M, 4), np.float32)
    for i in range(n):
        for j in range(M):
            x1, y1 = rng.integers(0, W - 4), rng.integers(0, H - 4)
            x2, y2 = rng.integers(x1 + 3, W + 1), rng.integers(y1 + 3, H + 1)
            blob = rng.random((y2 - y1, x2 - x1)) < 0.7
            blob[0, 0] = blob[-1, -1] = True  # the box is the mask's extent
            masks[i, y1:y2, x1:x2, j] = blob * (j + 1)
            boxes[i, j] = (x1, y1, x2, y2)
    return x, masks, boxes


def _extent(pix):
    ys, xs = np.nonzero(pix)
    if len(ys) == 0:
        return None
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float32)


def reference(x, masks, boxes, valid, perm, pasted):
    """Simple Copy-Paste on given partners and subsets, written from the paper's description."""
    n = len(x)
    out_x, out_m = x.copy(), np.zeros(masks.shape[:3] + (2 * M,), masks.dtype)
    out_b, out_v = np.zeros((n, 2 * M, 4), np.float32), np.zeros((n, 2 * M), bool)
    for i in range(n):
        j = perm[i]
        alpha = np.zeros((H, W), bool)
        for k in range(M):
            if pasted[i, k]:
                alpha |= masks[j, ..., k] != 0
        out_x[i][alpha] = x[j][alpha]
        for k in range(M):
            own = masks[i, ..., k] != 0
            out_m[i, ..., k] = np.where(alpha, 0, masks[i, ..., k])
            if (own & alpha).any():
                e = _extent(own & ~alpha)
                out_b[i, k] = 0 if e is None else e
                out_v[i, k] = valid[i, k] and e is not None
            else:
                out_b[i, k], out_v[i, k] = boxes[i, k], valid[i, k]
            out_m[i, ..., M + k] = masks[j, ..., k] if pasted[i, k] else 0
            out_b[i, M + k] = boxes[j, k]
            out_v[i, M + k] = valid[j, k] and pasted[i, k]
        w_, h_ = out_b[i, :, 2] - out_b[i, :, 0], out_b[i, :, 3] - out_b[i, :, 1]
        out_v[i] &= (w_ >= 1) & (h_ >= 1) & (w_ * h_ >= 1)
    return out_x, out_m, out_b, out_v


@pytest.mark.fast_tier("float32")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_matches_the_numpy_reference(dtype):
    x, masks, boxes = _data()
    if dtype == np.float32:
        x = x.astype(np.float32) / 255.0
    valid = np.ones((N, M), bool)
    valid[0, 1] = False
    key = jax.random.key(2)
    op = copy_paste.bind(p=0.9, instance_p=0.6)
    params = op.sample(x, key=key, masks=masks, boxes=boxes, boxes_valid=valid)
    out = op(x, key=key, masks=masks, boxes=boxes, boxes_valid=valid)
    perm, pasted = np.asarray(params["perm"]), np.asarray(params["pasted"])
    assert pasted.any() and not pasted.all()
    assert (perm != np.arange(N)).all()
    assert not pasted[perm == 0, 1].any()  # an invalid instance is never pasted
    rx, rm, rb, rv = reference(x, masks, boxes, valid, perm, pasted)
    np.testing.assert_array_equal(np.asarray(out["images"]), rx)
    np.testing.assert_array_equal(np.asarray(out["masks"]), rm)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]), rv)
    np.testing.assert_array_equal(np.asarray(out["boxes"])[rv], rb[rv])


def test_boxes_equal_the_visible_masks_extents():
    """Boxes made from the masks stay the extents of the returned masks (own, cut, and
    pasted); an instance with nothing left is invalid."""
    x, masks, boxes = _data(seed=3, n=8)
    for seed in range(3):
        out = copy_paste(x, key=jax.random.key(seed), masks=masks, boxes=boxes, instance_p=0.8)
        b, v, mk = (np.asarray(out[k]) for k in ("boxes", "boxes_valid", "masks"))
        assert mk.shape == (8, H, W, 2 * M) and b.shape == (8, 2 * M, 4)
        for i in range(8):
            for k in range(2 * M):
                e = _extent(mk[i, ..., k] != 0)
                if v[i, k]:
                    np.testing.assert_array_equal(b[i, k], e)
                else:
                    assert e is None or k >= M  # own: nothing left; pasted: not chosen
                    if k >= M:
                        assert e is None


@pytest.mark.slow
def test_box_only_and_target_free_calls():
    x, _, boxes = _data(seed=4)
    key = jax.random.key(5)
    params = copy_paste.sample(x, key=key, boxes=boxes, instance_p=1.0)
    out = copy_paste(x, key=key, boxes=boxes, instance_p=1.0)
    perm = np.asarray(params["perm"])
    ys, xs = np.mgrid[0:H, 0:W] + 0.5
    for i in range(N):
        b = boxes[perm[i]]
        region = np.zeros((H, W), bool)
        for x1, y1, x2, y2 in b:
            region |= (xs >= x1) & (xs < x2) & (ys >= y1) & (ys < y2)
        np.testing.assert_array_equal(np.asarray(params["paste"])[i], region)
        np.testing.assert_array_equal(np.asarray(out["images"])[i],
                                      np.where(region[..., None], x[perm[i]], x[i]))
    np.testing.assert_array_equal(np.asarray(out["boxes"])[:, M:], boxes[perm])
    # without targets each image is one instance: pasted whole, or not at all
    got = np.asarray(copy_paste(x, key=key, instance_p=0.5))
    q = copy_paste.sample(x, key=key, instance_p=0.5)
    whole = np.asarray(q["pasted"])[:, 0]
    np.testing.assert_array_equal(got, np.where(whole[:, None, None, None],
                                                x[np.asarray(q["perm"])], x))


@pytest.mark.slow
def test_replay_same_key_labels_and_p0():
    x, masks, boxes = _data(seed=1)
    key = jax.random.key(9)
    a = copy_paste(x, key=key, masks=masks, boxes=boxes)
    b = copy_paste(x, key=key, masks=masks, boxes=boxes)
    params = copy_paste.sample(x, key=key, masks=masks, boxes=boxes)
    c = copy_paste.apply(x, params=params, masks=masks, boxes=boxes)
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]))
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(c[k]))
    labels = np.arange(N * M).reshape(N, M)
    np.testing.assert_array_equal(np.asarray(copy_paste_box_labels(labels, params)),
                                  np.concatenate([labels, labels[params["perm"]]], 1))
    none = copy_paste(x, key=key, masks=masks, boxes=boxes, p=0.0)
    np.testing.assert_array_equal(np.asarray(none["images"]), x)
    np.testing.assert_array_equal(np.asarray(none["masks"])[..., :M], masks)
    np.testing.assert_array_equal(np.asarray(none["boxes"])[:, :M], boxes)
    assert not np.asarray(none["boxes_valid"])[:, M:].any()


def test_dali_cpu_pipeline_equals_the_arrays_path():
    pytest.importorskip("nvidia.dali.plugin.jax")
    from helpers import run_dali, seeds

    x, masks, boxes = _data(seed=6, n=4)
    s = seeds(4, seed=3)

    def build(im, mk, bx, sd):
        out = copy_paste(im, masks=mk, boxes=bx, seeds=sd)
        return out["images"], out["masks"], out["boxes"], out["boxes_valid"]

    got, = run_dali(build, x, masks, boxes, s, layouts=["HWC", None, None, None])
    ref = copy_paste(x, key=augjax.keys_from_seeds(s), masks=masks, boxes=boxes)
    for g, k in zip(got, ("images", "masks", "boxes", "boxes_valid")):
        np.testing.assert_array_equal(g, np.asarray(ref[k]))


def test_bad_input_errors():
    x, masks, boxes = _data(n=2)
    key = jax.random.key(0)
    with pytest.raises(InputError, match="copy_paste: argument 'masks' expects per-instance"):
        copy_paste(x, key=key, masks=masks[..., 0])
    with pytest.raises(InputError, match="copy_paste: argument 'masks' expects one channel per "
                                         "box"):
        copy_paste(x, key=key, masks=masks[..., :2], boxes=boxes)
    with pytest.raises(InputError, match="copy_paste: keypoints cannot follow"):
        copy_paste(x, key=key, boxes=boxes, keypoints=np.zeros((2, 4, 2), np.float32))
    with pytest.raises(augjax.ParamError, match="copy_paste.*instance_p"):
        copy_paste(x, key=key, instance_p=1.5)
