"""Bad targets get an InputError naming the op, the argument, what was expected and what came;
ops that cannot carry a target say so."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import Follow, InputError, OpDefinitionError, Param, op, ops

N, H, W = 3, 12, 16
X = np.zeros((N, H, W, 3), np.uint8)
KEY = jax.random.key(0)
BOXES = np.tile(np.array([[[1.0, 2.0, 8.0, 9.0]]], np.float32), (N, 1, 1))


@pytest.mark.parametrize("argument,value,expected,got", [
    ("masks", np.zeros((N, H), np.int32), "(N, H, W) or (N, H, W, K)", "int32 (3, 12)"),
    ("masks", np.zeros((N, H + 1, W), np.int32), "= (3, 12, 16[, K])", "int32 (3, 13, 16)"),
    ("masks", np.zeros((N, H, W), np.float32), "integer or bool", "float32 (3, 12, 16)"),
    ("masks", np.zeros((N + 1, H, W), np.uint8), "(N, H, W)", "uint8 (4, 12, 16)"),
    ("boxes", np.zeros((N + 1, 2, 4), np.float32), "with N = 3", "float32 (4, 2, 4)"),
    ("boxes", np.zeros((N, 2, 5), np.float32), "(N, M, 4) XYXY", "float32 (3, 2, 5)"),
    ("boxes", np.zeros((N, 4), np.float32), "(N, M, 4) XYXY", "float32 (3, 4)"),
    ("keypoints", np.zeros((N, 2), np.float32), "(N, K, 2)", "float32 (3, 2)"),
    ("keypoints", np.zeros((N, 2, 2), bool), "numbers", "bool (3, 2, 2)"),
])
def test_bad_target_shapes_and_dtypes(argument, value, expected, got):
    with pytest.raises(InputError) as err:
        ops.rotate(X, key=KEY, **{argument: value})
    assert err.value.op == "rotate" and err.value.argument == argument
    msg = str(err.value)
    assert f"argument '{argument}'" in msg and expected in msg and got in msg


@pytest.mark.parametrize("dtype,ids", [(np.int64, (2**32, 2**32 + 7)),
                                       (np.uint32, (7, 2**31)), (np.int64, (-2**31 - 1, 3))])
def test_mask_ids_int32_cannot_hold_are_refused(dtype, ids):
    """Without JAX's x64 mode masks are kept as int32: wider ids would wrap (2**32 read as 0,
    the background), so they are refused, with the range that came; ids int32 holds pass."""
    masks = np.full((N, H, W), ids[0], dtype)
    masks[:, :, : W // 2] = ids[1]
    with pytest.raises(InputError) as err:
        ops.flip(X, key=KEY, masks=masks)
    assert err.value.argument == "masks" and "int32's range" in str(err.value)
    assert f"{min(ids)} to {max(ids)}" in str(err.value)
    fits = np.where(masks == ids[0], 5, 2**31 - 1).astype(dtype)
    out = augjax.compose(ops.flip.bind(p=1.0))(X, key=KEY, masks=fits)
    np.testing.assert_array_equal(np.asarray(out["masks"]), fits[:, :, ::-1])


def test_boxes_must_be_xyxy():
    bad = BOXES.copy()
    bad[1, 0] = (8.0, 2.0, 1.0, 9.0)  # x2 < x1: an XYWH or swapped box
    with pytest.raises(InputError, match=r"argument 'boxes' expects XYXY boxes .* got "
                                         r"boxes\[1, 0\] = \[8.0, 2.0, 1.0, 9.0\]"):
        ops.flip(X, key=KEY, boxes=bad)
    # an invalid (padding) box may hold anything
    out = ops.flip(X, key=KEY, boxes=bad, boxes_valid=np.array([1, 0, 1]))
    assert not np.asarray(out["boxes_valid"])[1, 0]


def test_bad_validity_and_fill():
    with pytest.raises(InputError, match="argument 'boxes_valid' expects bool \\(3, 1\\)"):
        ops.flip(X, key=KEY, boxes=BOXES, boxes_valid=np.ones((N, 2), bool))
    with pytest.raises(InputError, match="argument 'boxes_valid' expects boxes= as well"):
        ops.flip(X, key=KEY, boxes_valid=np.ones((N, 1), bool))
    with pytest.raises(InputError, match="argument 'mask_fill' expects an int"):
        ops.flip(X, key=KEY, masks=np.zeros((N, H, W), np.uint8), mask_fill=0.5)


def test_mixing_ops_refuse_boxes_and_keypoints():
    y = np.arange(N, dtype=np.int32)
    with pytest.raises(InputError, match="mixup: boxes cannot follow this op: mixing two") as e:
        ops.mixup(X, y, key=KEY, num_classes=3, boxes=BOXES)
    assert e.value.argument == "boxes"
    with pytest.raises(InputError, match="cutmix: keypoints cannot follow"):
        ops.cutmix(X, y, key=KEY, num_classes=3, keypoints=np.zeros((N, 2, 2), np.float32))


@op("wobble", params={"fill": Param(0.0, low=0.0, high=1.0, optional=True)},
    geometric=True)
def wobble(image, params, *, fill):
    """A free-form warp without a matrix: rolls each row by its index (nearest)."""
    rows = jnp.arange(image.shape[0])[:, None]
    cols = (jnp.arange(image.shape[1])[None, :] + rows) % image.shape[1]
    return image[rows, cols]


def test_a_warp_without_matrix_carries_masks_and_refuses_points():
    m = np.random.default_rng(0).integers(0, 200, (N, H, W)).astype(np.int32)
    out = wobble(X, masks=m)
    as_image = np.asarray(wobble(m[..., None].astype(np.uint8)))[..., 0]
    np.testing.assert_array_equal(np.asarray(out["masks"]), as_image)
    with pytest.raises(InputError, match="wobble: boxes and keypoints cannot follow this op: "
                                         "it moves pixels without a matrix") as err:
        wobble(X, boxes=BOXES)
    assert err.value.op == "wobble"


@pytest.mark.slow
def test_augmix_with_geometric_ops_refuses_masks():
    policy = augjax.policies.augmix()
    with pytest.raises(InputError, match="augmix: masks cannot follow this step"):
        policy(X, key=KEY, masks=np.zeros((N, H, W), np.uint8))


def test_declaration_errors():
    with pytest.raises(OpDefinitionError, match="masks is one of keep, kernel, hook, refuse"):
        Follow(masks="bilinear")
    with pytest.raises(OpDefinitionError, match="'hook' needs a callable batch="):
        Follow(masks="hook")
    with pytest.raises(OpDefinitionError, match="reserved"):
        op("bad", params={"boxes": Param(1.0)})(lambda image, params, *, boxes: image)
    with pytest.raises(OpDefinitionError, match="targets= must be an augjax.Follow"):
        op("bad", targets="keep")(lambda image, params: image)
