"""Clips in a DALI CPU pipeline: sequences (samples (T, H, W, C), layout "FHWC") through one
jax_function, equal to the array path with the pipeline's seeds."""

from __future__ import annotations

import numpy as np
import pytest

import augjax
from augjax import ops

pytest.importorskip("nvidia.dali", reason="DALI is not installed")

N, T, H, W = 3, 4, 20, 16


def _pipe(batch, body, labels=None):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=N, num_threads=1, device_id=None, seed=2)
    def pipe():
        seqs = fn.external_source(source=lambda: list(batch), batch=True, layout="FHWC")
        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32, seed=7)
        if labels is None:
            return body(seqs, seeds), seeds
        lab = fn.external_source(source=lambda: list(labels), batch=True)
        out, soft = body(seqs, seeds, lab)
        return out, soft, seeds

    p = pipe()
    p.build()
    return p


@pytest.mark.parametrize("per_frame", [False, True])
def test_dali_sequences_equal_arrays(per_frame):
    batch = np.random.default_rng(0).integers(0, 256, (N, T, H, W, 3), dtype=np.uint8)
    ra = augjax.rand_augment(n=2, m=9)
    p = _pipe(batch, lambda s, seeds: ra(s, seeds=seeds, layout="FHWC", per_frame=per_frame))
    for _ in range(2):
        out, seeds = p.run()
        assert out.layout() == "FHWC"
        out, seeds = np.array(out.as_tensor()), np.array(seeds.as_tensor())
        ref = ra(batch, key=augjax.keys_from_seeds(seeds), per_frame=per_frame)
        np.testing.assert_array_equal(out, np.asarray(ref))
    if not per_frame:  # one draw per clip: identical frames stay identical
        same = np.repeat(batch[:, :1], T, axis=1)
        out, _ = _pipe(same, lambda s, seeds: ra(s, seeds=seeds, layout="FHWC")).run()
        out = np.array(out.as_tensor())
        for t in range(1, T):
            np.testing.assert_array_equal(out[:, t], out[:, 0])


def test_dali_sequences_mixup_whole_clips():
    batch = np.random.default_rng(1).integers(0, 256, (N, T, H, W, 3), dtype=np.uint8)
    labels = np.arange(N, dtype=np.int32).reshape(N, 1)
    mix = ops.mixup.bind(alpha=1.0, num_classes=4)
    p = _pipe(batch, lambda s, seeds, lab: mix(s, lab, seeds=seeds, layout="FHWC"), labels)
    out, soft, seeds = (np.array(o.as_tensor()) for o in p.run())
    ref, ref_soft = mix(batch, labels, key=augjax.keys_from_seeds(seeds))
    np.testing.assert_array_equal(out, np.asarray(ref))
    np.testing.assert_allclose(soft, np.asarray(ref_soft))
