"""Fusion boundaries on a CUDA GPU (augjax._runtime.fusion.fused_on_gpu): a resampling step
reads a resample or a pointwise step from memory (XLA:GPU fused the producer into each of the
consumer's taps: affine + rotate 1.81x the two ops alone on an H200, B=256); cheap producers
stay fused. Read from the optimised HLO of the apply program as augjax compiles it; no timing.
Run on the GPU machine: ``pytest -m gpu tests/compose/test_boundaries_gpu.py``."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import images

import augjax
from augjax import compose
from augjax._runtime.program import apply_program

ops = augjax.ops
pytestmark = pytest.mark.gpu


def _compiled_text(chain, x, labels=None):
    x = jax.device_put(x, jax.devices("gpu")[0])
    params = chain.sample(*((x,) if labels is None else (x, labels)), key=jax.random.key(1))
    program = apply_program(tuple(chain), "HWC")
    return program._top.lower(x, labels, params).compile().as_text()


@pytest.mark.parametrize("first, second, bounded", [
    (ops.affine.bind(degrees=20), ops.rotate.bind(degrees=30), True),  # two resamples
    (ops.hue.bind(), ops.affine.bind(degrees=20), True),  # pointwise into a resample
    (ops.random_resized_crop.bind(size=40), ops.rotate.bind(degrees=30), True),
    (ops.hue.bind(), ops.saturation.bind(), False),  # both pointwise: fused
    (ops.normalize.bind(), ops.rotate.bind(degrees=30), False),  # widening: recomputed
    (ops.random_crop.bind(size=40), ops.rotate.bind(degrees=30), False),  # a crop: moved
    (ops.rotate.bind(degrees=30), ops.flip.bind(p=0.5), False),  # a move after a resample
], ids=["affine+rotate", "hue+affine", "rrc+rotate", "hue+saturation", "normalize+rotate",
        "crop+rotate", "rotate+flip"])
def test_a_resample_reads_an_expensive_producer_from_memory(first, second, bounded):
    text = _compiled_text(compose(first, second), images(2, 48, 48))
    assert text.count(" opt-barrier(") == bounded, text[-3000:]


@pytest.mark.parametrize("first, second", [
    (ops.affine.bind(degrees=20), ops.rotate.bind(degrees=30)),
    (ops.hue.bind(), ops.affine.bind(degrees=20)),
])
def test_a_bounded_chain_equals_its_ops_one_after_another(first, second):
    """With the boundary, each op of the chain computes what it computes alone: the chain's
    apply equals the two ops' applies in turn, bitwise, on the GPU."""
    x = jax.device_put(images(4, 48, 48), jax.devices("gpu")[0])
    chain = compose(first, second)
    params = chain.sample(x, key=jax.random.key(3))
    both = np.asarray(chain.apply(x, params=params))
    one = compose(first).apply(x, params=[params[0]])
    two = np.asarray(compose(second).apply(one, params=[params[1]]))
    np.testing.assert_array_equal(both, two)
