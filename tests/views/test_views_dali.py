"""Views in a DALI CPU pipeline: one jax_function with one output per group, equal to the array
path with the pipeline's seeds."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax import ops

pytest.importorskip("nvidia.dali", reason="DALI is not installed")

N = 4


def _views():
    def chain(size, scale):
        return augjax.compose(ops.random_resized_crop.bind(size=(size, size), scale=scale),
                              ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.5, 1.5)))

    return augjax.views({"global": [chain(20, (0.4, 1.0)), chain(20, (0.5, 1.0))],
                         "local": (3, chain(10, (0.05, 0.4)))})


def _pipe(batch, views, with_seed_input):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=N, num_threads=1, device_id=None, seed=11)
    def pipe():
        images = fn.external_source(source=lambda: list(batch), batch=True, layout="HWC")
        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32, seed=5)
        out = views(images, seeds=seeds) if with_seed_input else views(images)
        return out["global"], out["local"], seeds

    p = pipe()
    p.build()
    return p


@pytest.mark.slow
def test_dali_views_equal_arrays():
    rng = np.random.default_rng(1)
    batch = rng.integers(0, 256, (N, 32, 28, 3), dtype=np.uint8)
    views = _views()
    p = _pipe(batch, views, True)
    for _ in range(2):
        glob, loc, seeds = (np.array(o.as_tensor()) for o in p.run())
        assert glob.shape == (N, 2, 20, 20, 3) and loc.shape == (N, 3, 10, 10, 3)
        ref = views(batch, key=augjax.keys_from_seeds(seeds))
        np.testing.assert_array_equal(glob, np.asarray(ref["global"]))
        np.testing.assert_array_equal(loc, np.asarray(ref["local"]))
    out = p.run()
    assert out[0].layout() == "FHWC"


def test_dali_views_draw_their_own_seeds_reproducibly():
    batch = np.random.default_rng(2).integers(0, 256, (N, 32, 28, 3), dtype=np.uint8)
    views = _views()
    a, b = _pipe(batch, views, False), _pipe(batch, views, False)
    for _ in range(2):
        for u, v in zip(a.run(), b.run()):
            np.testing.assert_array_equal(np.array(u.as_tensor()), np.array(v.as_tensor()))


def test_dali_views_key_refused():
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=N, num_threads=1, device_id=None)
    def pipe():
        images = fn.external_source(source=lambda: [np.zeros((8, 8, 3), np.uint8)] * N,
                                    batch=True)
        return _views()(images, key=jax.random.key(0))["local"]

    with pytest.raises(augjax.InputError, match="seed="):
        pipe()
