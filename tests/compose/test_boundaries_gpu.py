"""Chains on a CUDA GPU: XLA:GPU emits no ``opt-barrier`` (JAX 0.11.2 on an H200: "INTERNAL:
Unsupported instruction opcode: opt-barrier" for any program compiled with the barrier expander
off), so the apply programs there compile with XLA's own options and hold no barrier; a step's
output that a resample or a batch step would compute again for each read is kept behind a
Triton call that does nothing (``augjax.kernels.pallas.kept_in_place``): every chain compiles
and runs, whatever kinds of step it joins. Run on the GPU machine:
``pytest -m gpu tests/compose/test_boundaries_gpu.py``."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import images

import augjax
from augjax import compose
from augjax._runtime.execution.program import apply_program

ops = augjax.ops
pytestmark = pytest.mark.gpu

PAIRS = [
    (ops.affine.bind(degrees=20), ops.rotate.bind(degrees=30)),  # two resamples
    (ops.hue.bind(), ops.affine.bind(degrees=20)),  # pointwise into a resample
    (ops.random_resized_crop.bind(size=40), ops.rotate.bind(degrees=30)),
    (ops.hue.bind(), ops.saturation.bind()),  # both mix a pixel's channels
    (ops.normalize.bind(), ops.rotate.bind(degrees=30)),  # widening
    (ops.random_crop.bind(size=40), ops.rotate.bind(degrees=30)),  # a crop
    (ops.rotate.bind(degrees=30), ops.flip.bind(p=0.5)),  # a move after a resample
    (ops.flip.bind(p=0.5, horizontal=False, vertical=True), ops.cutmix.bind(num_classes=10)),  # into a batch-level step
    (ops.mixup.bind(num_classes=10), ops.normalize.bind()),  # out of one
    (ops.hue.bind(), ops.center_crop.bind(size=40)),  # a heavy step into a crop
    (ops.saturation.bind(), ops.center_crop.bind(size=40)),  # a light one
]
IDS = ["affine+rotate", "hue+affine", "rrc+rotate", "hue+saturation", "normalize+rotate",
       "crop+rotate", "rotate+flip", "vflip+cutmix", "mixup+normalize", "hue+center_crop",
       "saturation+center_crop"]
#: The pairs whose first step's output is kept in memory on a GPU (fusion.GPU_KEPT): a step
#: that resamples or mixes a pixel's channels (hue, saturation: OTHER by their jaxprs) read by
#: another such step, or a step of many operations a value (fusion.HEAVY: hue) read by a crop.
KEPT = {"affine+rotate", "hue+affine", "rrc+rotate", "hue+saturation", "hue+center_crop"}


def _gpu(x):
    return jax.device_put(x, jax.devices("gpu")[0])


@pytest.mark.parametrize("first, second, pair", [(*p, i) for p, i in zip(PAIRS, IDS)], ids=IDS)
def test_a_chain_compiles_on_the_gpu_and_equals_its_ops_in_turn(first, second, pair):
    """The apply program compiles (no barrier in it; the no-op Triton call between the steps
    of the pairs of :data:`KEPT` only) and each op of the chain computes what it computes
    alone: values within one level of the two ops' applies in turn (XLA:GPU may contract a
    multiply-add inside a fusion that the ops alone round apart)."""
    x = _gpu(images(4, 48, 48))
    labels = _gpu(np.arange(4, dtype=np.int32) % 10)
    chain = compose(first, second)
    batch = "labels" in first.spec.inputs or "labels" in second.spec.inputs
    args = (x, labels) if batch else (x,)
    params = chain.sample(*args, key=jax.random.key(3))
    program = apply_program(tuple(chain), "HWC")
    text = program._top.lower(x, labels if batch else None, params).compile().as_text()
    assert "opt-barrier" not in text
    assert ("_nothing" in text) == (pair in KEPT)
    out = chain.apply(*args, params=params)
    both = np.asarray(out[0] if batch else out, np.float64)
    y = labels
    for op, p in zip((first, second), params):
        mixes = "labels" in op.spec.inputs
        res = compose(op).apply(*((x, y) if mixes else (x,)), params=[p])
        x, y = res if mixes else (res, y)
    np.testing.assert_allclose(both, np.asarray(x, np.float64), atol=1.0, rtol=0)
