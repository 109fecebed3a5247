"""Volumes on the GPU (``pytest -m gpu``): the batched form the GPU runs (every volume computed,
a select keeps the drawn ones) leaves a volume that drew nothing bit for bit as it was, and a
chain on the GPU gives the CPU's output for the same key: the same draws (the sampler's
threefry bits), images within float rounding of the CPU's, masks (nearest) equal but for the
voxels whose sample point sits within rounding of a cell boundary."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax

pytestmark = pytest.mark.gpu
vol = augjax.volume_ops
RNG = np.random.default_rng(3)
X = RNG.random((4, 24, 20, 16, 1)).astype(np.float32)
MASKS = (RNG.random((4, 24, 20, 16)) > 0.7).astype(np.int32)
CHAINS = {
    "every": lambda: vol.chain(
        vol.affine.bind(rotate=0.5, scale=0.2, p_elastic=1.0, sigma=(3.0, 4.0),
                        magnitude=(20.0, 40.0)),
        vol.noise.bind(p=1.0), vol.blur.bind(p=1.0, p_per_channel=1.0),
        vol.brightness.bind(p=1.0), vol.contrast.bind(p=1.0),
        vol.lowres.bind(p=1.0, p_per_channel=1.0), vol.gamma.bind(p=1.0),
        vol.flip.bind(p=0.5), name="every"),
    "nnunet": lambda: augjax.recipes.nnunet(),
}


def _on(device, chain, key):
    out = chain(augjax.Volumes(jax.device_put(X, device)), key=key,
                masks=jax.device_put(MASKS, device))
    images, masks = out["images"].array, out["masks"]
    assert next(iter(images.devices())).platform == device.platform
    return np.asarray(images), np.asarray(masks)


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_chain_on_the_gpu_is_the_cpus(name, seed):
    chain, key = CHAINS[name](), jax.random.key(seed)
    gpu_images, gpu_masks = _on(jax.devices("gpu")[0], chain, key)
    cpu_images, cpu_masks = _on(jax.devices("cpu")[0], chain, key)
    assert np.isfinite(gpu_images).all()
    scale = max(1.0, float(np.abs(cpu_images).max()))
    np.testing.assert_allclose(gpu_images, cpu_images, rtol=0, atol=2e-4 * scale)
    assert set(np.unique(gpu_masks)) <= set(np.unique(MASKS))
    assert (gpu_masks != cpu_masks).mean() < 1e-3, (gpu_masks != cpu_masks).sum()


@pytest.mark.parametrize("name", ["noise", "blur", "contrast", "gamma", "lowres", "affine"])
def test_a_volume_that_drew_nothing_is_unchanged_on_the_gpu(name):
    steps = {"noise": vol.noise.bind(p=0.5), "blur": vol.blur.bind(p=0.5, p_per_channel=1.0),
             "contrast": vol.contrast.bind(p=0.5), "gamma": vol.gamma.bind(p=0.5),
             "lowres": vol.lowres.bind(p=0.5, p_per_channel=1.0),
             "affine": vol.affine.bind(rotate=0.4, p_rotation=0.5, p=1.0)}
    step, gpu = steps[name], jax.devices("gpu")[0]
    x, m = jax.device_put(X, gpu), jax.device_put(MASKS, gpu)
    for seed in range(8):  # a key whose draws hold both kinds of volume
        params = step.sample(x, key=jax.random.key(seed))
        active = np.asarray(jax.vmap(step.op.active)(params))
        if active.any() and not active.all():
            break
    else:
        pytest.fail(f"{name}: no key among 8 drew both kinds of volume")
    out = step.apply(x, params=params, masks=m)
    images, masks = np.asarray(out["images"]), np.asarray(out["masks"])
    for i in np.flatnonzero(~active):
        assert np.array_equal(images[i], X[i]) and np.array_equal(masks[i], MASKS[i]), i
    for i in np.flatnonzero(active):
        assert not np.array_equal(images[i], X[i]), i
