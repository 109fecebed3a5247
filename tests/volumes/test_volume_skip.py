"""A volume op that a volume did not draw leaves it as it was, bit for bit (batchgeneratorsv2
skips a transform a sample did not draw); on the CPU the op is not computed for it (a loop
over the batch with a real conditional), and the batched form that other platforms run gives
the same bits."""

from __future__ import annotations

import functools

import jax
import jax.extend.core
import numpy as np
import pytest

import augjax
from augjax import volumes as vruntime
from augjax.kernels.platform import only_platform

vol = augjax.volume_ops
RNG = np.random.default_rng(0)
X = RNG.random((6, 8, 8, 8, 1)).astype(np.float32)
MASKS = (RNG.random((6, 8, 8, 8)) > 0.6).astype(np.int32)
STEPS = {
    "noise": vol.noise.bind(p=0.5),
    "blur": vol.blur.bind(p=0.5, p_per_channel=1.0),
    "brightness": vol.brightness.bind(p=0.5),
    "contrast": vol.contrast.bind(p=0.5),
    "lowres": vol.lowres.bind(p=0.5, p_per_channel=1.0),
    "gamma": vol.gamma.bind(p=0.5),
    "flip": vol.flip.bind(axes=(0,), p=0.5),
    "affine": vol.affine.bind(rotate=0.4, p_rotation=0.5, p=1.0),
}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_a_volume_that_drew_nothing_is_unchanged_and_the_forms_agree(name):
    step = STEPS[name]
    key = jax.random.key(7)
    params = step.sample(X, key=key)
    active = np.asarray(jax.vmap(step.op.active)(params))
    assert active.any() and not active.all(), active  # both kinds of volume in the batch
    out = step.apply(X, params=params, masks=MASKS)
    images, masks = np.asarray(out["images"]), np.asarray(out["masks"])
    for i in np.flatnonzero(~active):
        assert np.array_equal(images[i], X[i]) and np.array_equal(masks[i], MASKS[i]), i
    for i in np.flatnonzero(active):  # an active volume is the op on it alone
        alone = step.apply(X[i:i + 1], params=jax.tree_util.tree_map(lambda v: v[i:i + 1],
                                                                     params))
        np.testing.assert_array_equal(images[i], np.asarray(alone)[0])
    vruntime._applier.cache_clear()
    try:
        with only_platform("tpu"):  # the batched form (a select), traced on this CPU
            batched = step.apply(X, params=params, masks=MASKS)
    finally:
        vruntime._applier.cache_clear()
    np.testing.assert_array_equal(np.asarray(batched["images"]), images)
    np.testing.assert_array_equal(np.asarray(batched["masks"]), masks)


def _hashes(jaxpr) -> int:
    """The ``threefry2x32`` calls in a jaxpr, its sub-jaxprs (conditionals, loops) included."""
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name == "threefry2x32"
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            count += _hashes(sub)
    return count


def test_the_elastic_field_is_drawn_once_per_volume_whatever_follows_the_image():
    """The affine's sampling coordinates (its elastic field's draw and smoothing: most of the
    op's time) are computed once per volume and read by the image, mask and keypoint kernels
    (``VolumeOp.shared``): the apply program hashes as often with a mask and keypoints as
    without (traced twice, XLA kept both: a mask doubled the op's time)."""
    step = vol.affine.bind(rotate=0.4, p_elastic=1.0, sigma=(2.0, 3.0), magnitude=(1.0, 2.0))
    meta = vruntime._meta(X.shape[1:], X.dtype)
    params = jax.tree_util.tree_map(lambda v: v[0], step.sample(X, key=jax.random.key(3)))
    points = np.zeros((2, 3), np.float32)

    def hashes(mask, pts):
        run = functools.partial(vruntime._one_volume, (step,), meta, True)
        return _hashes(jax.make_jaxpr(run)(X[0], mask, pts, (params,)).jaxpr)

    alone = hashes(None, None)
    assert alone >= 1  # the field is drawn in the apply program
    assert hashes(MASKS[0][..., None], points) == alone
    out = step.apply(X, params=step.sample(X, key=jax.random.key(3)), masks=MASKS,
                     keypoints=np.zeros((6, 2, 3), np.float32))
    assert set(out) == {"images", "masks", "keypoints"}
