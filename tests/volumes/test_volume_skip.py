"""A volume op that a volume did not draw leaves it as it was, bit for bit (batchgeneratorsv2
skips a transform a sample did not draw); on the CPU the op is not computed for it (a loop
over the batch with a real conditional), and the batched form that other platforms run gives
the same bits."""

from __future__ import annotations

import jax
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
