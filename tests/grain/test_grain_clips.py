"""augjax.grain with clips, said by ``layout=``: a record's clip (T, H, W, C) and its
per-frame masks through RandomMap, a batch of clips through BatchAugment, each equal to the
chain's call on ``augjax.Clips`` with the keys the image path uses (one draw per clip); a
record of another rank, and a layout that is not a clip's, are typed errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import augjax
import augjax.grain as ag

N, T, H, W = 3, 4, 12, 16
RNG = np.random.default_rng(0)
CLIPS = RNG.integers(0, 256, (N, T, H, W, 3), dtype=np.uint8)
MASKS = RNG.integers(0, 3, (N, T, H, W)).astype(np.int32)
CHAIN = augjax.compose(augjax.ops.random_crop.bind(size=(8, 8)), augjax.ops.flip.bind(p=0.5),
                       augjax.ops.brightness.bind(factor=(0.5, 1.5)))


def _seeds(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**30, size=(1, 2), dtype=np.int32)


def test_random_map_runs_a_clip_per_record_with_one_draw_per_clip():
    record = {"image": CLIPS[1], "masks": MASKS[1], "id": np.int64(1)}
    out = ag.RandomMap(CHAIN, layout="FHWC").random_map(record, np.random.default_rng(5))
    ref = CHAIN(augjax.Clips(CLIPS[1][None]), key=augjax.keys_from_seeds(_seeds(5)),
                masks=MASKS[1][None])
    np.testing.assert_array_equal(out["image"], np.asarray(ref["images"])[0])
    np.testing.assert_array_equal(out["masks"], np.asarray(ref["masks"])[0])
    assert out["image"].shape == (T, 8, 8, 3) and out["id"] == 1
    # one draw per clip: masks that name each pixel's place come out the same in every frame
    places = np.broadcast_to(np.arange(H * W, dtype=np.int32).reshape(H, W), (T, H, W))
    moved = ag.RandomMap(CHAIN, layout="FHWC").random_map(
        {"image": CLIPS[1], "masks": places}, np.random.default_rng(5))["masks"]
    assert all(np.array_equal(moved[0], moved[t]) for t in range(T))
    assert len(np.unique(moved[0])) == 64  # a crop of 8 x 8 distinct places
    # channels-first clips, and the transform pickled as grain sends it to a worker
    chw = ag.RandomMap(CHAIN, layout="FCHW")
    again = pickle.loads(pickle.dumps(chw))
    rec = {"image": np.moveaxis(CLIPS[2], -1, 1)}
    a = chw.random_map(rec, np.random.default_rng(7))["image"]
    b = again.random_map(rec, np.random.default_rng(7))["image"]
    ref = CHAIN(augjax.Clips(rec["image"][None], layout="FCHW"),
                key=augjax.keys_from_seeds(_seeds(7)))
    np.testing.assert_array_equal(a, np.asarray(ref)[0])
    np.testing.assert_array_equal(a, b)


def test_batch_augment_runs_clip_batches():
    aug = ag.BatchAugment(CHAIN, seed=11, layout="FHWC")
    index = np.arange(N, dtype=np.int64) + 4
    out = aug({"image": CLIPS, "masks": MASKS, "index": index})
    keys = augjax.keys_from_seeds(aug.seeds(index))
    ref = CHAIN(augjax.Clips(CLIPS), key=keys, masks=MASKS)
    np.testing.assert_array_equal(np.asarray(out["image"]), np.asarray(ref["images"].array))
    np.testing.assert_array_equal(np.asarray(out["masks"]), np.asarray(ref["masks"]))
    # a batch's clips do not depend on the batch they came in
    half = aug({"image": CLIPS[1:], "masks": MASKS[1:], "index": index[1:]})
    np.testing.assert_array_equal(np.asarray(half["image"]), np.asarray(out["image"])[1:])


def test_clip_layouts_and_ranks_are_checked():
    with pytest.raises(augjax.InputError, match=r"argument 'layout' expects None .* got 'DHWC'"):
        ag.RandomMap(CHAIN, layout="DHWC")
    with pytest.raises(augjax.InputError, match=r"BatchAugment: argument 'layout' expects None "
                                                r"\(images \(H, W, C\)\), an image layout "
                                                r"\('HWC', 'CHW'\), or a clip layout .* got 'DHWC'"):
        ag.BatchAugment(CHAIN, layout="DHWC")
    with pytest.raises(augjax.InputError, match=r"layout 'FHWC' expects one clip of rank 4"):
        ag.RandomMap(CHAIN, layout="FHWC").random_map({"image": CLIPS[0, 0]},
                                                      np.random.default_rng(0))
