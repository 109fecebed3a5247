"""A chain inside the caller's ``jax.jit`` on a CUDA GPU (``pytest -m gpu``): the boundaries
between its steps survive the caller's compile (on CUDA a boundary is a Triton call that does
nothing, ``augjax.kernels.pallas.kept_in_place``: no fusion crosses a custom call), read from
the compiled HLO, and the values are the chain's own call's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax

pytestmark = pytest.mark.gpu
ops = augjax.ops


def _triton_calls(text: str) -> int:
    return sum("custom-call(" in line and "triton" in line for line in text.splitlines())


@pytest.mark.parametrize("name", ["rrc+rotate", "affine+rotate"])
def test_caller_jit_keeps_the_boundaries_on_the_gpu(name):
    first = {"rrc+rotate": ops.random_resized_crop.bind(size=40),
             "affine+rotate": ops.affine.bind(degrees=20)}[name]
    chain = augjax.compose(first, ops.rotate.bind(degrees=30), ops.flip.bind(p=0.5))
    x = jax.device_put(np.random.default_rng(0).integers(0, 256, (8, 48, 56, 3), np.uint8),
                       jax.devices("gpu")[0])
    key = jax.random.key(3)
    own = np.asarray(chain(x, key=key))
    texts, values = {}, {}
    for form, jit in (("caller", jax.jit), ("augjax", augjax.jit)):
        exe = jit(lambda a, k: chain(a, key=k)).lower(x, key).compile()
        texts[form], values[form] = exe.as_text(), np.asarray(exe(x, key))
    kept = {form: _triton_calls(text) for form, text in texts.items()}
    assert kept["caller"] >= 1 and kept["caller"] == kept["augjax"], kept
    for form, got in values.items():  # one uint8 level: a caller may round a fused sum apart
        d = np.abs(got.astype(np.int32) - own.astype(np.int32))
        assert d.max() <= 1 and (d > 0).mean() < 1e-3, (form, d.max(), (d > 0).mean())


def test_a_jitted_training_step_takes_the_chain_on_the_gpu():
    chain = augjax.compose(ops.random_resized_crop.bind(size=32), ops.flip.bind(p=0.5),
                           ops.normalize.bind())
    x = jax.device_put(np.random.default_rng(1).integers(0, 256, (4, 40, 40, 3), np.uint8),
                       jax.devices("gpu")[0])

    @jax.jit
    def step(w, images, key):
        def loss(w):
            return jnp.mean((chain(images, key=key) * w) ** 2)
        return jax.value_and_grad(loss)(w)

    value, grad = step(jnp.float32(2.0), x, jax.random.key(0))
    ref = np.asarray(chain(x, key=jax.random.key(0)), np.float64)
    np.testing.assert_allclose(float(value), np.mean((ref * 2) ** 2), rtol=1e-4)
    np.testing.assert_allclose(float(grad), np.mean(2 * ref ** 2 * 2), rtol=1e-4)
