"""Targets (masks, boxes, keypoints): properties over ops, chains, policies, mixing and DALI."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax import ops
from augjax.chain import compose, random_apply, random_choice, some_of
from helpers import run_dali, seeds

N, H, W = 6, 24, 32


def _instances(seed: int = 0, n: int = N, h: int = H, w: int = W, count: int = 4):
    """Images, instance masks (id j+1 fills box j; later boxes overwrite earlier ones, so each
    box encloses its id's pixels) and their boxes."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, h, w, 3), dtype=np.uint8)
    masks = np.zeros((n, h, w), np.int32)
    boxes = np.zeros((n, count, 4), np.float32)
    for i in range(n):
        for j in range(count):
            x1, y1 = rng.integers(0, w - 3), rng.integers(0, h - 3)
            x2, y2 = rng.integers(x1 + 2, w + 1), rng.integers(y1 + 2, h + 1)
            masks[i, y1:y2, x1:x2] = j + 1
            boxes[i, j] = (x1, y1, x2, y2)
    return x, masks, boxes


def _assert_boxes_enclose_masks(out, count: int = 4, tol: float = 1e-3):
    masks, boxes = np.asarray(out["masks"]), np.asarray(out["boxes"])
    for i in range(masks.shape[0]):
        for j in range(count):
            ys, xs = np.nonzero(masks[i] == j + 1)
            if not len(xs):
                continue
            x1, y1, x2, y2 = boxes[i, j]
            # pixel (x, y) spans [x, x + 1]: its centre x + 0.5 lies inside the moved box
            assert (xs + 0.5 >= x1 - tol).all() and (xs + 0.5 <= x2 + tol).all(), (i, j)
            assert (ys + 0.5 >= y1 - tol).all() and (ys + 0.5 <= y2 + tol).all(), (i, j)


SINGLE = [
    (ops.rotate.bind(degrees=(-45.0, 45.0)), 1e-3),
    (ops.affine.bind(degrees=30.0, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=10.0), 1e-3),
    (ops.perspective.bind(p=1.0), 1e-3),
    (ops.shear_x.bind(convention="pil"), 1e-3),
    (ops.translate_y.bind(convention="pil", translate=(-0.3, 0.3)), 1e-3),
    (ops.flip.bind(vertical=True), 1e-3),
    (ops.rot90.bind(k=3), 1e-3),
    (ops.random_crop.bind(size=(20, 28), padding=3), 1e-3),
    (ops.center_crop.bind(size=(30, 18)), 1e-3),
    # Resizes sample masks with torchvision's (legacy) nearest, source index floor(dst * in /
    # out): up to half an output pixel up-left of the centre-aligned geometry boxes follow.
    (ops.random_resized_crop.bind(size=(20, 20), scale=(0.3, 1.0)), 0.5 + 1e-3),
]


@pytest.mark.fast_tier("center_crop")
@pytest.mark.parametrize("op,tol", SINGLE, ids=[op.name for op, _ in SINGLE])
def test_a_box_encloses_its_moved_mask(op, tol):
    """One warp: every mask pixel whose (nearest) source pixel is in the instance has its
    centre inside the moved box, exactly (the source point lies in the source box)."""
    x, m, b = _instances(1)
    out = op(x, key=jax.random.key(2), masks=m, boxes=b)
    assert out["images"].shape[1:3] == out["masks"].shape[1:3]
    _assert_boxes_enclose_masks(out, tol=tol)


@pytest.mark.slow
def test_a_box_encloses_its_mask_through_a_chain():
    """Through a chain a mask pixel may reach half a pixel past the box per further warp
    (the previous warp's pixels are squares around centres inside the box): torchvision's
    masks and boxes drift apart the same way."""
    chain = compose(random_apply(ops.rotate, 0.7), random_choice([ops.shear_y, ops.flip]),
                    some_of([ops.translate_x, ops.brightness, ops.rot90.bind(k=2)], (1, 2)),
                    ops.random_crop.bind(size=(20, 28), padding=3))
    x, m, b = _instances(1)
    out = chain(x, key=jax.random.key(2), masks=m, boxes=b)
    _assert_boxes_enclose_masks(out, tol=1.0)


@pytest.mark.slow
def test_policies_carry_targets():
    x, m, b = _instances(3)
    policy = augjax.policies.rand_augment(n=2, m=9)
    params = policy.sample(x, key=jax.random.key(5))
    out = policy.apply(x, params=params, masks=m, boxes=b)
    called = policy(x, key=jax.random.key(5), masks=m, boxes=b)
    for name in out:
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(called[name]))
    _assert_boxes_enclose_masks(out)
    # Samples whose chosen ops all keep pixels in place keep their targets bitwise.
    geometric = np.array([op is not None and op.geometric for op in policy.bound])
    moved = (geometric[np.asarray(params["op"])] & np.asarray(params["applied"])).any(axis=1)
    assert moved.any() and (~moved).any()
    still = ~moved
    np.testing.assert_array_equal(np.asarray(out["masks"])[still], m[still])
    np.testing.assert_array_equal(np.asarray(out["boxes"])[still], b[still])
    # A moved sample's masks equal the chosen geometric ops applied one after the other.
    for i in np.nonzero(moved)[0][:2]:
        mi, bi = m[i:i + 1], b[i:i + 1]
        for layer in range(params["op"].shape[1]):
            j = int(params["op"][i, layer])
            op = policy.bound[j]
            if op is None or not params["applied"][i, layer] or not op.geometric:
                continue
            p = jax.tree_util.tree_map(lambda v: v[i:i + 1, layer], params["branches"][j])
            step = op.apply(x[i:i + 1], params=p, masks=mi, boxes=bi)
            mi, bi = np.asarray(step["masks"]), np.asarray(step["boxes"])
        np.testing.assert_array_equal(np.asarray(out["masks"])[i], mi[0])
        np.testing.assert_allclose(np.asarray(out["boxes"])[i], bi[0], atol=1e-4)


@pytest.mark.slow
def test_trivial_augment_carries_masks():
    x, m, b = _instances(4)
    out = augjax.policies.trivial_augment_wide()(x, key=jax.random.key(1), masks=m, boxes=b)
    _assert_boxes_enclose_masks(out)


@pytest.mark.fast_tier("op0", "op1", "op4")
@pytest.mark.parametrize("op", [ops.flip.bind(p=1.0), ops.rot90.bind(k=1),
                                ops.translate_x.bind(translate=0.25),
                                ops.random_crop.bind(size=(20, 20), padding=2),
                                ops.center_crop.bind(size=(16, 30))])
def test_keypoints_stay_on_their_pixel(op):
    """A keypoint on a pixel centre lands on the centre of the output pixel that holds that
    pixel's id, for ops that move whole pixels."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (N, H, W, 3), dtype=np.uint8)
    ids = np.broadcast_to(np.arange(H * W, dtype=np.int32).reshape(H, W) + 1, (N, H, W))
    kp = np.stack([rng.integers(0, W, (N, 20)), rng.integers(0, H, (N, 20))], -1)
    out = op(x, key=jax.random.key(3), masks=ids, keypoints=kp.astype(np.float32))
    got, valid = np.asarray(out["keypoints"]), np.asarray(out["keypoints_valid"])
    masks = np.asarray(out["masks"])
    assert valid.any()
    for i in range(N):
        for j in np.nonzero(valid[i])[0]:
            gx, gy = got[i, j]
            assert gx == round(gx) and gy == round(gy)
            assert masks[i, int(gy), int(gx)] == ids[i, kp[i, j, 1], kp[i, j, 0]]
        # invalid keypoints are the ones whose pixel left the image
        for j in np.nonzero(~valid[i])[0]:
            assert not (masks[i] == ids[i, kp[i, j, 1], kp[i, j, 0]]).any()


def test_colour_and_erasing_leave_targets_untouched():
    x, m, b = _instances(5)
    b[0, 0] = (-5, -5, 40, 30)  # even boxes beyond the image are not clamped by colour ops
    kp = np.full((N, 3, 2), 7.0, np.float32)
    kp[:, 0] = (-3.0, 50.0)
    chain = compose(ops.brightness, ops.contrast, ops.grayscale,
                    ops.random_erasing.bind(p=1.0), ops.normalize)
    out = chain(x, key=jax.random.key(0), masks=m, boxes=b, keypoints=kp)
    assert not np.array_equal(np.asarray(out["images"]), x)
    np.testing.assert_array_equal(np.asarray(out["masks"]), m)
    np.testing.assert_array_equal(np.asarray(out["boxes"]), b)
    np.testing.assert_array_equal(np.asarray(out["keypoints"]), kp)
    assert np.asarray(out["boxes_valid"]).all() and np.asarray(out["keypoints_valid"]).all()


@pytest.mark.slow
def test_chain_equals_its_ops_in_sequence_and_replays():
    x, m, b = _instances(6)
    kp = np.random.default_rng(1).uniform(0, 20, (N, 5, 2)).astype(np.float32)
    chain = compose(ops.rotate.bind(degrees=(-30.0, 30.0)), ops.brightness,
                    ops.random_resized_crop.bind(size=(16, 16)), ops.flip)
    key = jax.random.key(9)
    params = chain.sample(x, key=key)
    out = chain(x, key=key, masks=m, boxes=b, keypoints=kp)
    replay = chain.apply(x, params=params, masks=m, boxes=b, keypoints=kp)
    again = chain(x, key=key, masks=m, boxes=b, keypoints=kp)
    for name in out:
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(replay[name]))
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(again[name]))
    state = {"images": x, "masks": m, "boxes": b, "keypoints": kp,
             "boxes_valid": np.ones((N, 4), bool), "keypoints_valid": np.ones((N, 5), bool)}
    for step, p in zip(chain.steps, params):
        state = step.apply(state["images"], params=p, masks=state["masks"],
                           boxes=state["boxes"], keypoints=state["keypoints"],
                           boxes_valid=state["boxes_valid"],
                           keypoints_valid=state["keypoints_valid"])
    for name in out:
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(state[name]), name)


@pytest.mark.fast_tier("uint8-255")
@pytest.mark.parametrize("dtype,fill", [(np.uint8, 255), (np.int16, -7), (np.uint16, 60000),
                                        (np.int32, -1), (np.bool_, 1)])
def test_mask_dtypes_ranks_and_fill(dtype, fill):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (N, H, W, 3), dtype=np.uint8)
    info = np.iinfo(dtype) if dtype != np.bool_ else None
    lo, hi = (0, 2) if info is None else (info.min, info.max)
    m = rng.integers(lo, hi, (N, H, W, 2), endpoint=info is not None).astype(dtype)
    op = ops.rotate.bind(degrees=(30.0, 40.0), interpolation="bilinear")
    out = op(x, key=jax.random.key(0), masks=m, mask_fill=fill)
    got = np.asarray(out["masks"])
    assert got.dtype == np.dtype(dtype) and got.shape == m.shape
    ref = np.asarray(op(x, key=jax.random.key(0), masks=m[..., 0], mask_fill=fill)["masks"])
    np.testing.assert_array_equal(got[..., 0], ref)
    # every pixel holds a value of the input or the fill (nearest: nothing is blended) ...
    values = set(np.unique(m).tolist()) | {np.array(fill).astype(dtype).item()}
    assert set(np.unique(got).tolist()) <= values
    # ... and the corners, which come from outside after a 30-40 degree turn, hold the fill
    assert (got[:, 0, 0] == np.array(fill).astype(dtype)).all()


def test_cutmix_pastes_the_partner_mask_and_mixup_keeps_the_dominant_one():
    x, m, _ = _instances(7)
    y = np.arange(N, dtype=np.int32) % 3
    perm = np.arange(N - 1, -1, -1, dtype=np.int32)
    box = np.array([[2, 3, 10, 12]] * N, np.int32)
    cut = {"lam": np.full(N, 0.5, np.float32), "use_cutmix": np.ones(N, bool), "box": box,
           "perm": perm}
    out = ops.cutmix.apply(x, y, params=cut, masks=m, num_classes=3)
    expected = m.copy()
    expected[:, 2:12, 3:15] = m[perm][:, 2:12, 3:15]
    np.testing.assert_array_equal(np.asarray(out["masks"]), expected)
    assert out["labels"].shape == (N, 3)
    lam = np.array([0.3, 0.7, 1.0, 0.5, 0.2, 0.9], np.float32)
    mix = dict(cut, lam=lam, use_cutmix=np.zeros(N, bool))
    out = ops.mixup.apply(x, y, params=mix, masks=m, num_classes=3)
    expected = np.where((lam < 0.5)[:, None, None], m[perm], m)
    np.testing.assert_array_equal(np.asarray(out["masks"]), expected)


@pytest.mark.slow
def test_dali_chain_carries_targets_in_one_crossing(monkeypatch):
    import augjax.dali as bridge

    x, m, b = _instances(8)
    s = seeds(N, seed=3)
    chain = compose(ops.flip, ops.rotate.bind(degrees=(-20.0, 20.0)),
                    ops.random_resized_crop.bind(size=(16, 16)), ops.brightness)
    calls, sources = [], []
    original = bridge.apply_dali

    def counting(*args, **kwargs):
        calls.append(args[0])
        out = original(*args, **kwargs)
        sources.extend(node.source for node in out.values())
        return out

    monkeypatch.setattr(bridge, "apply_dali", counting)

    def build(im, mk, bx, sd):
        out = chain(im, masks=mk, boxes=bx, seeds=sd)
        return out["images"], out["masks"], out["boxes"], out["boxes_valid"]

    (img, masks, boxes, valid), = run_dali(build, x, m, b, s, layouts=["HWC", None, None, None])
    assert len(calls) == 1 and len({id(src) for src in sources}) == 1  # one jax_function
    ref = chain(x, key=augjax.keys_from_seeds(s), masks=m, boxes=b)
    np.testing.assert_array_equal(img, np.asarray(ref["images"]))
    np.testing.assert_array_equal(masks, np.asarray(ref["masks"]))
    np.testing.assert_array_equal(boxes, np.asarray(ref["boxes"]))
    np.testing.assert_array_equal(valid, np.asarray(ref["boxes_valid"]))


@pytest.mark.slow
def test_box_counts_and_validity_pass_through():
    x, m, b = _instances(9)
    counts = np.array([4, 3, 2, 1, 0, 4], np.int32)
    out = ops.flip(x, key=jax.random.key(0), boxes=b, boxes_valid=counts)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]),
                                  np.arange(4)[None, :] < counts[:, None])
    # a box pushed out of the image is flagged, and stays flagged after it could come back
    far = np.tile(np.array([[[28.0, 2.0, 32.0, 10.0]]], np.float32), (N, 1, 1))
    chain = compose(ops.translate_x.bind(translate=0.5), ops.translate_x.bind(translate=-0.5))
    out = chain(x, key=jax.random.key(0), boxes=far)
    assert not np.asarray(out["boxes_valid"]).any()


@pytest.mark.slow
def test_a_partial_batch_runs_padded_with_its_targets(monkeypatch):
    """A smaller batch reuses the compiled program (padded); its targets are cut back with the
    images and equal the larger batch's rows for the same per-sample keys."""
    import augjax._runtime.execution.padding as padding

    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "1")  # the default, which conftest turns off
    x, m, b = _instances(10)
    keys = jax.random.split(jax.random.key(4), N)
    chain = compose(ops.rotate, ops.random_resized_crop.bind(size=(12, 12)))
    full = chain(x, key=keys, masks=m, boxes=b)
    padded = []
    original = padding.layout
    monkeypatch.setattr(padding, "layout", lambda n, size: padded.append((n, size)) or
                        original(n, size))
    part = chain(x[:4], key=keys[:4], masks=m[:4], boxes=b[:4])
    assert padded == [(4, N)]  # the batch of 6's program ran, padded
    for name in full:
        assert part[name].shape[0] == 4
        np.testing.assert_array_equal(np.asarray(part[name]), np.asarray(full[name])[:4], name)
