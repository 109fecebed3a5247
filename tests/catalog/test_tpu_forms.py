"""The TPU's forms of the histogram, table, window and block ops against the
forms the CPU runs, on the CPU: equalize, autocontrast, the policies' tone family, mosaic and
shot_noise bit for bit, pixelate bit for bit on uint8 (float32 sums in another order: within
float32 rounding). A TPU form is what ``platform_dependent`` picks under ``only_platform("tpu")``
(a program compiled for a TPU); the programs lowered for a TPU hold no scatter and no gather
of the image's size. The TPU runs the ops in tests/tpu/test_parity.py."""

from __future__ import annotations

import contextlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax.catalog import Tone, member
from augjax.kernels import level_products as L
from augjax.kernels.platform import only_platform
from augjax.policies._families import FAMILIES

from test_contrib_ops import blur, noise  # the pack, from its installed copy or its source

KEY = jax.random.key(3)
#: (N, H, W, C): odd sizes, one and three channels.
SHAPES = [(3, 23, 17, 3), (3, 17, 19, 1)]  # >= 256 pixels: equalize acts
DTYPES = [np.uint8, np.float32]


@contextlib.contextmanager
def tpu_forms():
    """Traces inside pick the TPU's branches; the caches are cleared on the way in and out (a
    jitted function's cached trace does not know the platform it was traced for)."""
    jax.clear_caches()
    try:
        with only_platform("tpu"):
            yield
    finally:
        jax.clear_caches()


def both(fn, *args):
    """``fn(*args)`` in the CPU's form and in the TPU's, as NumPy arrays."""
    cpu = jax.tree.map(np.asarray, jax.jit(fn)(*args))
    with tpu_forms():
        tpu = jax.tree.map(np.asarray, jax.jit(fn)(*args))
    return cpu, tpu


def skewed(shape, dtype, seed=0):
    """Images with uneven histograms (equalize changes them), one channel of one image
    constant (PIL leaves it), one nearly so (a single other pixel)."""
    rng = np.random.default_rng(seed)
    x = (rng.integers(0, 256, shape) ** 2 // 255).astype(np.uint8)
    x[0, ..., 0] = 77
    x[-1, ..., -1] = 200
    x[-1, 0, 0, -1] = 3
    return x if dtype == np.uint8 else (x / np.float32(255)).astype(np.float32)


def assert_bitwise(cpu, tpu):
    np.testing.assert_array_equal(np.asarray(tpu).view(np.uint8), np.asarray(cpu).view(np.uint8))


def test_level_products_equal_numpy():
    rng = np.random.default_rng(1)
    q = rng.integers(-3, 260, (2, 5, 7, 3)).astype(np.int32)
    counts = np.asarray(L.histogram_product(jnp.asarray(q), 200, jnp.array([True, False])))
    want = np.stack([np.bincount(q[0, ..., c][(q[0, ..., c] >= 0) & (q[0, ..., c] < 200)],
                                 minlength=200) for c in range(3)], 1)
    np.testing.assert_array_equal(counts[0], want)
    assert not counts[1].any()
    x = rng.integers(0, 256, (5, 7, 3)).astype(np.uint8)
    lut = rng.integers(0, 256, (256, 3)).astype(np.uint8)
    np.testing.assert_array_equal(np.asarray(L.lookup_product(jnp.asarray(x), jnp.asarray(lut))),
                                  lut[x, np.arange(3)])
    table = (rng.standard_normal((256, 4)) * 10.0 ** rng.uniform(-20, 20, (256, 4)))
    table = table.astype(np.float32)
    idx = rng.integers(0, 256, (300,)).astype(np.int32)
    assert_bitwise(table[idx], L.rows_product(jnp.asarray(idx), jnp.asarray(table)))


@pytest.mark.parametrize("dtype", DTYPES, ids=["uint8", "float32"])
@pytest.mark.parametrize("shape", SHAPES, ids=["3ch", "1ch"])
def test_equalize_and_autocontrast(shape, dtype):
    x = jnp.asarray(skewed(shape, dtype))
    cpu, tpu = both(lambda v: (augjax.ops.equalize.apply(v, params={}),
                               augjax.ops.autocontrast.apply(v, params={})), x)
    assert not np.array_equal(cpu[0], np.asarray(x))  # the histograms were uneven
    for a, b in zip(cpu, tpu):
        assert_bitwise(a, b)


def test_policy_tone_family():
    """The policies' tone family (one table per sample, the statistics only where read)."""
    x = jnp.asarray(skewed((4, 23, 17, 3), np.uint8, seed=2))
    ops = (augjax.ops.equalize, augjax.ops.autocontrast, augjax.ops.posterize)
    items = [(op.bind(), {"bits": jnp.float32(3)}, member(op, Tone)) for op in ops]
    pos = jnp.asarray([0, 1, 2, 0], jnp.int32)
    chosen = jnp.asarray([True, True, True, False])
    fn = jax.vmap(lambda im, p, c: FAMILIES["tone"](im, items, p, c))
    cpu, tpu = both(fn, x, pos, chosen)
    assert_bitwise(cpu, tpu)


@pytest.mark.parametrize("dtype", DTYPES, ids=["uint8", "float32"])
@pytest.mark.parametrize("shape", SHAPES, ids=["3ch", "1ch"])
def test_pixelate(shape, dtype):
    x = jnp.asarray(skewed(shape, dtype))
    block = jnp.asarray([1, 4, 3][:shape[0]], jnp.float32)
    params = {"block": block, "applied": jnp.ones(shape[0], bool)}
    cpu, tpu = both(lambda v: blur.pixelate.apply(v, params=params), x)
    if dtype == np.uint8:  # whole-number sums: exact in any order
        assert_bitwise(cpu, tpu)
    else:  # float32 sums in another order: within float32 rounding
        np.testing.assert_allclose(tpu, cpu, rtol=4e-7, atol=0)
    assert_bitwise(cpu[0], x[0])  # a block of 1


@pytest.mark.parametrize("dtype", DTYPES, ids=["uint8", "float32"])
def test_mosaic(dtype):
    """Centres beyond every edge, tiles of -1, an output larger and smaller than the input;
    masks follow the same form."""
    x = jnp.asarray(skewed((4, 7, 9, 3), dtype))
    masks = jnp.asarray(np.random.default_rng(4).integers(0, 2, (4, 7, 9, 2)), bool)
    tiles = jnp.asarray([[0, 1, 2, 3], [1, -1, 3, 0], [2, 3, -1, 1], [3, 0, 1, -1]], jnp.int32)
    out = []
    for size, center in (((7, 9), [[3, 4], [-2, 12], [9, -1], [0, 0]]),
                         ((12, 5), [[6, 2], [13, 6], [-8, -6], [12, 5]])):
        params = {"tiles": tiles, "center": jnp.asarray(center, jnp.int32)}
        out.append(both(lambda v, m: augjax.ops.mosaic.apply(v, params=params, size=size,
                                                             fill=0.3, masks=m), x, masks))
    for cpu, tpu in out:
        jax.tree.map(assert_bitwise, cpu, tpu)


def test_shot_noise(monkeypatch):
    """uint8 (float images draw per value, elementwise): the CDF table's rows read by
    products in chunks of 128 values (a partial last chunk), a factor of 0 (the identity),
    and a batch with a rate above the widest table's (the per-value loop)."""
    monkeypatch.setattr(noise, "PRODUCT_CHUNK_BYTES", 1)
    x = jnp.asarray(skewed((4, 9, 13, 3), np.uint8))
    u = jnp.asarray(np.random.default_rng(5).random((4, 9, 13, 3), dtype=np.float32))
    factors = jnp.asarray([[20.0, 0.0, 3.5, 60.0], [0.3, 1.0, 0.0, 8.0]], jnp.float32)
    fn = jax.vmap(lambda f: noise.shot_noise.apply(x, params={"factor": f, "events_u": u}))
    cpu, tpu = both(fn, factors)  # one program per form for both batches
    assert_bitwise(cpu, tpu)
    assert not np.array_equal(cpu[0, 0], x[0]) and np.array_equal(cpu[0, 1], x[1])


def _gathers(text: str) -> list[int]:
    """The element counts of the results of the gathers and scatters in StableHLO text."""
    sizes = []
    for line in text.splitlines():
        if re.search(r"stablehlo\.(gather|scatter)|\"stablehlo\.(gather|scatter)\"", line):
            shape = re.findall(r"-> tensor<([0-9x]+)x[a-z]", line)
            sizes.append(int(np.prod([int(d) for d in shape[-1].split("x")])) if shape else -1)
    return sizes


@pytest.mark.parametrize("name", ["equalize", "autocontrast", "pixelate", "mosaic",
                                  "shot_noise"])
def test_tpu_programs_hold_no_pixel_gather(name):
    """Lowered for a TPU (StableHLO, on this CPU): no scatter or gather whose result has the
    image's number of values (equalize keeps one of C values: each channel's top level)."""
    x = jnp.asarray(skewed((2, 9, 13, 3), np.uint8))
    op = {"pixelate": blur.pixelate, "shot_noise": noise.shot_noise}.get(name)
    op = op or getattr(augjax.ops, name)
    with tpu_forms():
        text = jax.jit(lambda v: op(v, key=KEY)).trace(x).lower(
            lowering_platforms=("tpu",)).as_text()
    assert all(0 <= s < 9 * 13 for s in _gathers(text)), _gathers(text)
    cpu = jax.jit(lambda v: op(v, key=KEY)).trace(x).lower(lowering_platforms=("cpu",))
    assert any(s >= 9 * 13 or s < 0 for s in _gathers(cpu.as_text()))  # the CPU's do
