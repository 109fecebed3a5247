"""A chain inside the caller's ``jax.jit``: its fusion boundaries kept, its bits unchanged.

augjax's own programs keep an optimisation barrier between a chain's steps (XLA:CPU compiled
with the barrier expander off); a caller's ``jax.jit`` expands barriers, so there the
boundaries are conditionals (``augjax.kernels.embedded``), and ``augjax.jit`` compiles the
caller's step with augjax's options. Read from the compiled HLO.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax.kernels.embedded import kept_by_branch

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="the boundaries read here are XLA:CPU's")


@pytest.fixture(scope="module")
def chain():
    return augjax.compose(
        augjax.ops.random_resized_crop.bind(size=40),
        augjax.ops.flip.bind(p=0.5),
        augjax.ops.brightness.bind(factor=(0.6, 1.4)),
        augjax.ops.normalize.bind(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)))


@pytest.fixture(scope="module")
def images():
    return jnp.asarray(np.random.default_rng(0).integers(0, 256, (4, 48, 56, 3), np.uint8))


def _count(text: str, opcode: str) -> int:
    return len(re.findall(rf"= \S+ {re.escape(opcode)}\(", text))


@pytest.fixture(scope="module")
def compiled(chain, images):
    """The step ``chain(x, key=k)`` compiled by ``jax.jit`` and by ``augjax.jit``: (the
    executable, its HLO) each, and the chain's own call."""
    key = jax.random.key(3)
    out = {"own": np.asarray(chain(images, key=key))}
    for name, jit in (("caller", jax.jit), ("augjax", augjax.jit)):
        exe = jit(lambda x, k: chain(x, key=k)).lower(images, key).compile()
        out[name] = (np.asarray(exe(images, key)), exe.as_text())
    return out


def test_caller_jit_keeps_boundaries_as_conditionals(compiled):
    values, text = compiled["caller"]
    _, own = compiled["augjax"]
    assert _count(text, "opt-barrier") == 0  # the caller's options expand barriers
    # the sampler's params and each kept output between steps: a conditional each, beyond
    # those the chain's own programs hold (the sampler's)
    assert _count(text, "conditional") >= _count(own, "conditional") + 2, text[:2000]
    np.testing.assert_array_equal(values, compiled["own"])


def test_augjax_jit_compiles_as_augjax_does(compiled):
    values, text = compiled["augjax"]
    assert _count(text, "opt-barrier") >= 2, text[:2000]
    assert "__ynn_fusion" not in text  # the options that keep bits CPU-independent
    np.testing.assert_array_equal(values, compiled["own"])


def test_augjax_jit_is_jax_jit_otherwise():
    @augjax.jit(static_argnums=1, compiler_options={"xla_cpu_enable_fast_math": False})
    def step(x, scale):
        return x * scale

    x = jnp.arange(6.0)
    np.testing.assert_array_equal(np.asarray(step(x, 2.0)), np.arange(6.0) * 2.0)
    assert step.__name__ == "step"
    with pytest.raises(augjax.InputTypeError, match="augjax.jit: argument 'fun'"):
        augjax.jit(3)


def test_kept_by_branch_is_the_identity_under_vmap_and_grad():
    x = jnp.linspace(-2.0, 2.0, 24).reshape(2, 3, 4)

    def f(v):
        return jnp.sum(jnp.sin(kept_by_branch(v * 3.0)) ** 2)

    def plain(v):
        return jnp.sum(jnp.sin(v * 3.0) ** 2)

    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f))(x)),
                                  np.asarray(jax.jit(jax.vmap(plain))(x)))
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(f))(x)),
                               np.asarray(jax.grad(plain)(x)), rtol=1e-6)
    # under vmap the conditional takes the whole batch (a batched predicate would be a select)
    text = jax.jit(jax.vmap(lambda v: kept_by_branch(v) + 1.0)).lower(x).compile().as_text()
    assert _count(text, "conditional") == 1
    # integer, boolean and key leaves, and empty arrays
    tree = {"i": jnp.arange(6, dtype=jnp.uint8), "b": jnp.ones(3, bool),
            "k": jax.random.key(0), "e": jnp.zeros((0, 2))}
    out = jax.jit(kept_by_branch)(tree)
    for name in ("i", "b", "e"):
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(tree[name]))
    assert jnp.array_equal(jax.random.key_data(out["k"]), jax.random.key_data(tree["k"]))
