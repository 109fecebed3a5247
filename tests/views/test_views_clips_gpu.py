"""Views and clips on the GPU (``pytest -m gpu``): the DALI GPU pipeline of views equals the
GPU array path bitwise (both run the one fused program), also on decoded JPEGs of different
sizes (``ragged=True``, nvJPEG decode): windows, draws and copied pixels bitwise, resampled views
within DALI's resampling tolerance; and clips equal the image path."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import abs_diff, write_jpegs

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


def test_dali_gpu_ragged_views_equal_gpu_arrays(tmp_path):
    from nvidia.dali import fn, pipeline_def, types

    sizes = [(30, 40), (40, 30), (24, 36), (36, 26)]
    root = write_jpegs(tmp_path, sizes)
    views = augjax.views({
        "crops": (2, augjax.compose(ops.random_crop.bind(size=(20, 20), pad_if_needed=True),
                                    ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.5, 1.5)))),
        "rrc": [augjax.compose(ops.random_resized_crop.bind(size=(12, 12), scale=(0.25, 1.0)),
                               ops.flip.bind(p=0.5))],
    })

    @pipeline_def(batch_size=len(sizes), num_threads=2, device_id=0, seed=5)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=True, seed=1)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
        seeds = augjax.dali.sample_seeds(device="cpu")
        out = views(images, seeds=seeds, ragged=True)
        return images, seeds, out["crops"], out["rrc"]

    p = pipe()
    p.build()
    gpu = jax.devices("gpu")[0]
    for _ in range(2):
        images, seeds, crops, rrc = p.run()
        images = [np.array(images.as_cpu()[i]) for i in range(len(sizes))]
        assert len({im.shape for im in images}) == len(sizes)  # decoded at their own sizes
        keys = augjax.keys_from_seeds(np.array(seeds.as_tensor()))
        want = views([jax.device_put(im, gpu) for im in images], key=keys)
        crops = np.array(crops.as_cpu().as_tensor())
        assert crops.shape == (len(sizes), 2, 20, 20, 3)
        np.testing.assert_array_equal(crops, np.asarray(want["crops"]))
        d = abs_diff(np.array(rrc.as_cpu().as_tensor()), np.asarray(want["rrc"]))
        assert d.max() <= 1.3 * 16 + 1 and d.mean() <= 0.5, (d.max(), d.mean())
