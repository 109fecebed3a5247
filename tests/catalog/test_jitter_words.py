"""color_jitter's CPU form on uint8 images (``augjax/catalog/_jitter.py``): the stages pass one
uint32 word per pixel. Its pixels against the form it replaced (three float32 planes from stage
to stage, the same adjustments), over every RGB triple, and the compiled program's shape."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from augjax.catalog import _jitter
from augjax.catalog._tv_color import hue_planes
from augjax.catalog.color import JITTER_NAMES, color_jitter
from augjax.kernels.boundary import boundary_compiler_options

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU's form")


def _planes_form(image, seq, factors, active):
    """The CPU form before the words: each stage a ``lax.switch`` branch on three float32
    planes (the same adjustments: torchvision's, as ``_jitter`` computes them)."""
    dtype = image.dtype

    def adjust(which):
        if not active[which]:
            return lambda q: q
        if which == 3:
            return lambda q: hue_planes(*q, factors[3], dtype)
        return lambda q: _jitter._generic(q, jnp.int32(which), factors[which], None, dtype)

    branches = [adjust(w) for w in range(4)]
    x = image.astype(jnp.float32)
    p = (x[..., 0], x[..., 1], x[..., 2])
    for j in range(sum(active)):
        p = jax.lax.switch(seq[j], branches, p)
    return jnp.clip(jnp.floor(jnp.stack(p, -1)), 0, 255).astype(dtype)


def _every_rgb() -> np.ndarray:
    """The 2^24 RGB triples as 16 images of 1024 x 1024."""
    v = np.arange(2**24, dtype=np.uint32)
    rgb = np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], -1).astype(np.uint8)
    return rgb.reshape(16, 1024, 1024, 3)


@pytest.mark.parametrize("kwargs", [
    dict(brightness=0.4, saturation=0.7, hue=0.015),  # the YOLO recipe's
    dict(brightness=0.5, contrast=0.5, saturation=0.5, hue=0.3),
    dict(saturation=0.9),
])
def test_words_equal_the_float_planes_on_every_rgb_triple(kwargs):
    """Bitwise, for each image's own order and factors: contrast's and saturation's gray
    multiply-adds as LLVM contracted them before (computed once for the three channels they
    moved about one level in a million)."""
    x = _every_rgb()
    op = color_jitter.bind(**kwargs)
    params = op.sample(x, key=jax.random.key(7))
    active = tuple(n in params for n in JITTER_NAMES)
    factors = jnp.stack([jnp.asarray(params[n], jnp.float32) if n in params else
                         jnp.full(16, z, jnp.float32)
                         for n, z in zip(JITTER_NAMES, (1.0, 1.0, 1.0, 0.0))], 1)

    def former(images, order, factors):
        def one(a):
            image, o, f = a
            seq = o[jnp.argsort(~jnp.asarray(active)[o], stable=True)]
            return _planes_form(image, seq, f, active)
        return jax.lax.map(one, (images, order, factors))

    want = jax.jit(former, compiler_options=boundary_compiler_options())(
        x, params["order"], factors)
    np.testing.assert_array_equal(np.asarray(op.apply(x, params=params)), np.asarray(want))


def test_cpu_stages_pass_words():
    """The compiled program's per-image stages (``lax.switch`` branches) take and give one
    uint32 word per pixel, not three float32 planes."""
    op = color_jitter.bind(brightness=0.4, saturation=0.7, hue=0.015)
    x = jnp.zeros((2, 24, 32, 3), jnp.uint8)
    params = op.sample(x, key=jax.random.key(0))
    text = jax.jit(lambda x, p: op.apply(x, params=p),
                   compiler_options=boundary_compiler_options()).lower(x, params).compile(
                   ).as_text()
    results = re.findall(r"= (\S+) conditional\(", text)
    assert len(results) == 3 and set(results) == {"(u32[24,32]{1,0})"}, results
