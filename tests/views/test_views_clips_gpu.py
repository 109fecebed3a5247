"""Views and clips on the GPU (``pytest -m gpu``): the DALI GPU pipeline of views equals the
GPU array path bitwise (both run the one fused program), and clips equal the image path."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax import ops

pytestmark = pytest.mark.gpu
N = 8


def _views():
    return augjax.recipes.dino(global_size=64, local_size=32, local_count=3)


def test_dali_gpu_views_equal_gpu_arrays():
    from nvidia.dali import fn, pipeline_def, types

    batch = np.random.default_rng(0).integers(0, 256, (N, 80, 72, 3), dtype=np.uint8)
    views = _views()

    @pipeline_def(batch_size=N, num_threads=2, device_id=0, seed=3)
    def pipe():
        images = fn.external_source(source=lambda: list(batch), batch=True, layout="HWC")
        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32, seed=9)
        out = views(images.gpu(), seeds=seeds.gpu())
        return out["global"], out["local"], seeds

    p = pipe()
    p.build()
    glob, loc, seeds = p.run()
    seeds = np.array(seeds.as_tensor())
    ref = views(jax.device_put(batch, jax.devices("gpu")[0]),
                key=augjax.keys_from_seeds(seeds))
    np.testing.assert_array_equal(np.array(glob.as_cpu().as_tensor()), np.asarray(ref["global"]))
    np.testing.assert_array_equal(np.array(loc.as_cpu().as_tensor()), np.asarray(ref["local"]))
    params = views.sample(batch, key=augjax.keys_from_seeds(seeds))
    again = views.apply(jax.device_put(batch, jax.devices("gpu")[0]), params=params)
    np.testing.assert_array_equal(np.asarray(again["local"]), np.asarray(ref["local"]))


def test_gpu_clips_equal_images():
    x = jax.device_put(np.random.default_rng(1).integers(0, 256, (4, 6, 64, 64, 3), np.uint8),
                       jax.devices("gpu")[0])
    key = jax.random.key(0)
    for step in (augjax.rand_augment(n=2, m=9), ops.flip.bind(p=0.5)):
        out = step(augjax.Clips(x), key=key).array
        params = step.sample(x[:, 0], key=key)
        for t in range(x.shape[1]):
            np.testing.assert_array_equal(np.asarray(out[:, t]),
                                          np.asarray(step.apply(x[:, t], params=params)))
        pf = step(augjax.Clips(x), key=key, per_frame=True)
        assert pf.shape == x.shape
