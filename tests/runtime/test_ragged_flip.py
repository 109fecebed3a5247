"""A flip right after a list's ragged prefix is folded into the read
(``augjax._runtime.ragged.flip``): the chain's result keeps its bits.

References: each image alone through the same chain with its own key (the uniform-batch path,
where the flip is its own step), and the list read with the flip left to the chain (the path
before), compared bitwise; NumPy's ``flip`` for the mirrored taps.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from helpers import ragged_targets
from augjax._runtime.ragged import read as ragged_read

SIZES = [(40, 56), (57, 33), (48, 48), (9, 70), (70, 12), (31, 45), (64, 50), (36, 36)]


def _images(dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in SIZES]
    return out if dtype == np.uint8 else [(x / 255.0).astype(np.float32) for x in out]


def _targets(seed=1):
    masks, boxes, points = ragged_targets(SIZES, seed)
    return {"masks": masks, "boxes": boxes, "keypoints": points, "mask_fill": 9}


def _keys(seed):
    return jax.random.split(jax.random.key(seed), len(SIZES))


def _np(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


CHAINS = {
    "rrc+hflip": [augjax.ops.random_resized_crop.bind(size=(24, 20), scale=(0.3, 1.0)),
                  augjax.ops.flip.bind(p=0.5)],
    "rrc_nearest+both": [augjax.ops.random_resized_crop.bind(size=24, interpolation="nearest"),
                         augjax.ops.flip.bind(p=0.5, vertical=True)],
    "resize+crop+hflip+rotate": [augjax.ops.resize.bind(size=36),
                                 augjax.ops.center_crop.bind(size=32),
                                 augjax.ops.flip.bind(p=0.5), augjax.ops.rotate.bind(degrees=20)],
}


@pytest.mark.fast_tier("rrc_nearest+both-uint8", "rrc_nearest+both-float32")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("case", sorted(CHAINS))
def test_the_folded_flip_keeps_the_chains_bits(case, dtype, monkeypatch):
    """Images, masks, boxes and keypoints: bitwise those of the list read with the flip left to
    the chain (its own program after the read), over keys that flip some samples and not
    others on each axis the op flips."""
    chain = augjax.compose(CHAINS[case])
    images, targets = _images(dtype), _targets()
    drawn = []
    draw = ragged_read.draw_flips

    def spy(*args, **kwargs):
        out = draw(*args, **kwargs)
        drawn.append(out[1])
        return out

    monkeypatch.setattr(ragged_read, "draw_flips", spy)
    folded = [_np(chain(images, key=_keys(s), **kw)) for s in (0, 1) for kw in ({}, targets)]
    assert len(drawn) == 4  # each call folded its flip into the read
    flips = np.concatenate(drawn)
    vertical = next(s for s in CHAINS[case] if s.name == "flip").kwargs["vertical"]
    for axis in ((0, 1) if vertical else (1,)):
        assert flips[:, axis].any() and not flips[:, axis].all()
    monkeypatch.setattr(ragged_read, "flip_after", lambda *a: None)
    before = [_np(chain(images, key=_keys(s), **kw)) for s in (0, 1) for kw in ({}, targets)]
    for a, b in zip(folded, before):
        assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)


@pytest.mark.slow
def test_the_folded_flip_equals_each_image_alone():
    """The list with a flip after its crop: each sample's image and mask are bitwise those of
    the image alone through the chain (the flip its own step there), its boxes and keypoints
    within 2e-4 (alone, the window's matrix comes from static sizes)."""
    chain = augjax.compose(CHAINS["rrc+hflip"])
    images, targets = _images(), _targets()
    keys = _keys(3)
    out = _np(chain(images, key=keys, **targets))
    flipped = np.asarray(chain.sample(images, key=keys)[1]["horizontal"])
    assert flipped.any() and not flipped.all()
    for i in range(len(images)):
        m = len(targets["boxes"][i])
        alone = _np(chain(images[i][None], key=keys[i:i + 1], masks=targets["masks"][i][None],
                          boxes=targets["boxes"][i][None], boxes_valid=np.ones((1, m), bool),
                          keypoints=targets["keypoints"][i][None], mask_fill=9))
        np.testing.assert_array_equal(out["images"][i], alone["images"][0])
        np.testing.assert_array_equal(out["masks"][i], alone["masks"][0])
        np.testing.assert_allclose(out["boxes"][i][:m], alone["boxes"][0], atol=2e-4)
        k = len(targets["keypoints"][i])
        np.testing.assert_allclose(out["keypoints"][i][:k], alone["keypoints"][0], atol=2e-4)
        np.testing.assert_array_equal(out["boxes_valid"][i][:m], alone["boxes_valid"][0])


def test_flip_taps_mirror_the_read():
    """``flip_taps`` and ``read_by_taps(flip=)``: the read of a box with mirrored taps is the
    read mirrored (NumPy's flip), pixels outside the resampled box included (their fill)."""
    from augjax.kernels.window import read_window_taps

    rng = np.random.default_rng(4)
    image = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    box, size, anchor = np.array([2, 3, 20, 25]), np.array([14, 33]), np.array([-2, 3])
    out, fill = (16, 28), np.array([10.0, 20.0, 30.0], np.float32)

    def read(flip):
        return np.asarray(jax.jit(lambda: read_window_taps(
            image, box, size, anchor, out, fill, "bilinear", True, (5, 5),
            flip=None if flip is None else np.array(flip)))())

    plain = read(None)
    assert (plain == [10, 20, 30]).all(-1).any()  # some fill in view
    for flip, axes in (([False, False], ()), ([False, True], (1,)), ([True, False], (0,)),
                       ([True, True], (0, 1))):
        np.testing.assert_array_equal(read(flip), np.flip(plain, axes) if axes else plain)
