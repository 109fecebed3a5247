"""augjax.Volumes: the kind in the one front-end table (2D steps per slice, as clips), the volume
ops taking and giving it, and rank-5 plain arrays refused naming it."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax.errors import InputError, InputKindError

KEY = jax.random.key(5)


@pytest.fixture(scope="module")
def vols():
    rng = np.random.default_rng(0)
    return (rng.random((2, 3, 8, 8, 1)).astype(np.float32),
            rng.integers(0, 3, (2, 3, 8, 8)).astype(np.int32))


def test_rank5_plain_array_names_volumes(vols):
    with pytest.raises(InputKindError, match=r"augjax\.Volumes\(x\)") as err:
        augjax.ops.flip(vols[0], key=KEY)
    assert "augjax.Volumes" in err.value.kinds


def test_2d_step_runs_per_slice_as_clips(vols):
    """One draw per volume shared by its slices (the clips path, bitwise); per_frame=True: one
    per slice; masks (N, D, H, W) follow; the result is augjax.Volumes."""
    x, masks = vols
    out = augjax.ops.flip(augjax.Volumes(x), key=KEY, masks=masks)
    ref = augjax.ops.flip(augjax.Clips(x), key=KEY, masks=masks)
    assert isinstance(out["images"], augjax.Volumes) and out["images"].layout == "DHWC"
    np.testing.assert_array_equal(np.asarray(out["images"]), np.asarray(ref["images"]))
    np.testing.assert_array_equal(out["masks"], ref["masks"])
    flipped = [bool(np.array_equal(np.asarray(out["images"])[i], x[i, :, :, ::-1]))
               for i in range(2)]
    for i in range(2):  # every slice of a volume the same way
        assert flipped[i] or np.array_equal(np.asarray(out["images"])[i], x[i])
    per_slice = augjax.ops.flip.sample(augjax.Volumes(x), key=KEY, per_frame=True)
    assert np.asarray(jax.tree_util.tree_leaves(per_slice)[0]).shape[0] == 3  # (D, N)
    plain = augjax.ops.flip(x, key=KEY, layout="DHWC")  # a layout names the kind too
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(out["images"]))
    with pytest.raises(InputError, match="keypoints"):
        augjax.ops.flip(augjax.Volumes(x), key=KEY, keypoints=np.zeros((2, 1, 3), np.float32))


def test_volume_ops_take_and_give_the_kind(vols):
    x, masks = vols
    out = augjax.volume_ops.flip(augjax.Volumes(x), key=KEY, masks=masks)
    assert isinstance(out["images"], augjax.Volumes)
    plain = augjax.volume_ops.flip(x, key=KEY)
    np.testing.assert_array_equal(np.asarray(out["images"]), np.asarray(plain))
    with pytest.raises(InputError, match="layout"):
        augjax.volume_ops.flip(augjax.Clips(x), key=KEY)


def test_volumes_checks_rank_and_layout(vols):
    with pytest.raises(InputError, match=r"rank 5 \(N, D, H, W, C\)"):
        augjax.Volumes(vols[0][0])
    with pytest.raises(InputError, match="'layout'"):
        augjax.Volumes(vols[0], layout="FHWC")
