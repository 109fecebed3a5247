"""Every registered sample-level op (contrib included) carries masks as its rule says: ops that
move no pixel return them bitwise, the others give masks of the output's size holding only input
ids or the fill; boxes follow every op with a matrix and are refused by free-form warps."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from tiers import op_sweep

import augjax
from augjax import InputError

N, H, W = 2, 10, 10
_REQUIRED = {"random_resized_crop": {"size": 8}, "random_crop": {"size": 8},
             "center_crop": {"size": 8}, "resize": {"size": (8, 12)},
             "random_iou_crop": {"size": 8}, "scale_jitter": {"target_size": 8},
             "pad": {"padding": (1, 2, 3, 4)}}


def _sample_ops():
    out = []
    for name in augjax.list_ops():
        spec = augjax.get_op(name)
        if spec.level == "sample":
            out.append(name)
    return out


@pytest.mark.parametrize("name", op_sweep(_sample_ops()))
def test_every_op_carries_masks_and_boxes_by_its_rule(name):
    spec = augjax.get_op(name)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (N, H, W, 3), dtype=np.uint8)
    m = rng.integers(0, 4, (N, H, W)).astype(np.int32) * 100000
    boxes = np.tile(np.array([[[1.0, 2.0, 7.0, 9.0]]], np.float32), (N, 1, 1))
    op = spec.bind(**_REQUIRED.get(name, {}))
    refuses = spec.targets.points == "refuse"
    # Masks and boxes in one call (one compiled program for both targets), where boxes follow.
    with_boxes = {} if refuses else {"boxes": boxes}
    out = op(x, key=jax.random.key(1), masks=m, mask_fill=-5, **with_boxes)
    got = np.asarray(out["masks"])
    assert got.shape == out["images"].shape[:3] and got.dtype == m.dtype
    if not spec.geometric:
        np.testing.assert_array_equal(got, m)
    assert set(np.unique(got).tolist()) <= set(np.unique(m).tolist()) | {-5}
    if refuses:
        with pytest.raises(InputError, match=f"{name}: boxes and keypoints cannot follow"):
            op(x, key=jax.random.key(1), boxes=boxes)
        return
    moved = out
    if not spec.geometric:
        np.testing.assert_array_equal(np.asarray(moved["boxes"]), boxes)
    else:  # the op's matrix moves the corners (box math redone in NumPy)
        params = op.sample(x, key=jax.random.key(1), boxes=boxes)  # (samplers that see them)
        # one program for the matrices (eagerly, each of their primitives compiles alone)
        ms = np.asarray(jax.jit(lambda p: augjax.matrices(op, p, (H, W), batch=N))(params),
                        np.float64)
        oh, ow = out["images"].shape[1:3]
        x1, y1, x2, y2 = boxes[0, 0]
        corners = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]]) - 0.5
        for i in range(N):
            p = np.c_[corners, np.ones(4)] @ ms[i].T
            p = p[:, :2] / p[:, 2:] + 0.5
            ref = np.clip(np.r_[p.min(0), p.max(0)], 0, [ow, oh, ow, oh])
            np.testing.assert_allclose(np.asarray(moved["boxes"])[i, 0], ref, atol=1e-4)
