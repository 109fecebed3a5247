"""Per-sample randomness under every JAX key implementation (threefry2x32, rbg, unsafe_rbg):
sample ``i`` of a batch depends only on (key, i) and the op's parameters, on arrays, in views and
clips, in DALI (seeds) and in grain.

JAX's batching rule for ``rbg``/``unsafe_rbg`` keys under ``vmap`` draws every sample's bits from
the first key (jax-ml/jax#19085, #20094), so augjax draws from Threefry keys only: a key of
another implementation is hashed into one (docs/guide/reproducibility.md, "Key
implementations"). The reference here is that rule written out independently
(:func:`_threefry_of`) and the properties themselves: a batch's first half equals the call on
the first half (one key), its second half equals the call on the second half with those
samples' keys (one key per sample), and samples differ from each other.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import run_dali

import augjax
from augjax import ops
from augjax.errors import InputError

IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")
N, H, W = 16, 12, 12
HALF = N // 2

CHAIN = augjax.compose(ops.flip.bind(p=0.5), ops.rotate.bind(degrees=(-30.0, 30.0)),
                       ops.brightness.bind(factor=(0.5, 1.5)))
STEPS = {
    "flip": ops.flip.bind(p=0.5),
    "rotate": ops.rotate.bind(degrees=(-30.0, 30.0)),
    "chain": CHAIN,
    "rand_augment": augjax.rand_augment(n=2, m=9),
}


def _images(n=N, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, H, W, 3), dtype=np.uint8)


def _eq(a, b, msg=""):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=msg)


def _threefry_of(key):
    """The documented rule, written out: a key's data words ``w`` (any implementation) become
    the Threefry key ``fold_in(... fold_in(wrap_key_data(w[0:2]), w[2]) ..., w[-1])``."""
    words = jax.random.key_data(key).reshape(-1, jax.random.key_data(key).shape[-1])
    out = []
    for w in np.asarray(words):
        k = jax.random.wrap_key_data(jnp.asarray(w[:2]), impl="threefry2x32")
        for extra in w[2:]:
            k = jax.random.fold_in(k, int(extra))
        out.append(jax.random.key_data(k))
    data = jnp.stack(out).reshape(key.shape + (2,))
    return jax.random.wrap_key_data(data, impl="threefry2x32")


@contextlib.contextmanager
def _default_impl(impl):
    """``jax_default_prng_impl`` for the whole process (DALI's and augjax's own threads too)."""
    before = jax.config.jax_default_prng_impl
    jax.config.update("jax_default_prng_impl", impl)
    try:
        yield
    finally:
        jax.config.update("jax_default_prng_impl", before)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", list(STEPS))
def test_sample_i_depends_only_on_the_key_and_i(name, impl):
    step, x = STEPS[name], _images()
    rule = impl != "threefry2x32"  # the rule itself (threefry keys: the recorded bits)
    if name != "rand_augment":  # (one key: the same handling, two more programs for the policy)
        key = jax.random.key(11, impl=impl)
        full = step(x, key=key)
        _eq(step(x[:HALF], key=key), full[:HALF], "one key: the first half's own call")
        if rule:
            _eq(full, step(x, key=_threefry_of(key)))
    keys = jax.random.split(jax.random.key(12, impl=impl), N)
    each = step(x, key=keys)
    _eq(step(x[HALF:], key=keys[HALF:]), each[HALF:], "one key per sample: the second half")
    if rule:
        _eq(each, step(x, key=_threefry_of(keys)))


@pytest.mark.parametrize("impl", IMPLS)
def test_samples_draw_independently(impl):
    key = jax.random.key(5, impl=impl)
    x = np.repeat(_images(1), N, axis=0)
    degrees = np.asarray(ops.rotate.sample(x, key=key, degrees=(-30.0, 30.0))["degrees"])
    assert len(set(degrees.tolist())) == N, degrees
    flipped = np.asarray(ops.flip.sample(x, key=key, p=0.5)["horizontal"])
    assert 0 < flipped.sum() < N, flipped
    out = np.asarray(CHAIN(x, key=key))
    assert len({o.tobytes() for o in out}) == N
    other = np.asarray(CHAIN(x, key=jax.random.key(6, impl=impl)))
    assert not np.array_equal(out, other)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_sample_then_apply_is_the_call(impl):
    x, key = _images(), jax.random.key(3, impl=impl)
    for step in (CHAIN, STEPS["rand_augment"]):
        _eq(step.apply(x, params=step.sample(x, key=key)), step(x, key=key))


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_views_and_clips_hold_the_rule(impl):
    x = _images()
    views = augjax.views({"a": (2, CHAIN)})
    key = jax.random.key(8, impl=impl)
    full, half = views(x, key=key)["a"], views(x[:HALF], key=key)["a"]
    _eq(half, full[:HALF])
    assert len({v.tobytes() for v in np.asarray(full).reshape(2 * N, -1)}) == 2 * N
    _eq(full, views(x, key=_threefry_of(key))["a"])
    keys = jax.random.split(key, N)
    _eq(views(x[HALF:], key=keys[HALF:])["a"], views(x, key=keys)["a"][HALF:])
    clips = np.random.default_rng(1).integers(0, 256, (4, 3, H, W, 3), dtype=np.uint8)
    for per_frame in (False, True):
        def run(c, key):
            return CHAIN(augjax.Clips(c), key=key, per_frame=per_frame).array

        out = run(clips, key)
        _eq(run(clips[:2], key), out[:2])
        _eq(out, run(clips, _threefry_of(key)))
        each = run(clips, keys[:4])
        _eq(run(clips[2:], keys[2:4]), each[2:])


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_legacy_keys_under_another_default_impl(impl):
    x = _images()
    typed = CHAIN(x, key=jax.random.key(2, impl=impl))
    with _default_impl(impl):
        raw = jax.random.PRNGKey(2)
        assert raw.shape == (4,)
        _eq(CHAIN(x, key=raw), typed)
        _eq(CHAIN(x[:HALF], key=raw), typed[:HALF])
        raws = jax.random.key_data(jax.random.split(jax.random.key(2), N))
        _eq(CHAIN(x, key=raws), CHAIN(x, key=jax.random.wrap_key_data(raws, impl=impl)))
        # a Threefry key's data stays a Threefry key
        threefry = CHAIN(x, key=np.array([0, 2], np.uint32))
    _eq(threefry, CHAIN(x, key=jax.random.key(2)))


def test_legacy_key_of_another_shape_names_the_fix():
    raw = np.zeros(4, np.uint32)  # rbg key data, but the default implementation is threefry
    with pytest.raises(InputError, match=r"wrap_key_data\(key, impl='rbg'\)"):
        ops.flip(_images(2), key=raw, p=0.5)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_keys_from_seeds_do_not_depend_on_the_default_impl(impl):
    seeds = augjax.index_seeds(np.arange(N), epoch=1, seed=3)
    want = jax.random.key_data(augjax.keys_from_seeds(seeds))
    with _default_impl(impl):
        keys = augjax.keys_from_seeds(seeds)
    assert str(jax.random.key_impl(keys)) == "threefry2x32"
    _eq(jax.random.key_data(keys), want)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_dali_pipeline_under_another_default_impl(impl):
    pytest.importorskip("nvidia.dali", reason="DALI is not installed")
    x = _images(6)
    s = augjax.index_seeds(np.arange(6), seed=9)
    ref = CHAIN(x, key=augjax.keys_from_seeds(s))  # threefry, the default
    with _default_impl(impl):
        (out,), = run_dali(lambda im, sd: CHAIN(im, seeds=sd), x, s, layouts=["HWC", None])
    _eq(out, ref)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_grain_batch_augment_under_another_default_impl(impl):
    pytest.importorskip("grain", reason="grain is not installed")
    import augjax.grain as ag

    x = _images(6)
    ref = CHAIN(x, key=augjax.keys_from_seeds(augjax.index_seeds(np.arange(6), 0, 4)))
    with _default_impl(impl):
        aug = ag.BatchAugment(CHAIN, seed=4, epoch_size=6)
        first = aug({"image": x[:4], "index": np.arange(4)})["image"]
        rest = aug({"image": x[4:], "index": np.arange(4, 6)})["image"]
        record = ag.RandomMap(CHAIN).random_map({"image": x[3]}, np.random.default_rng(5))
    _eq(np.concatenate([np.asarray(first), np.asarray(rest)]), ref)
    seeds = np.random.default_rng(5).integers(0, 2**30, size=(1, 2), dtype=np.int32)
    _eq(record["image"], np.asarray(CHAIN(x[3:4], key=augjax.keys_from_seeds(seeds)))[0])


def test_per_sample_keys_do_not_depend_on_the_threefry_partitionable_flag():
    """The other Threefry split numbers the keys by the batch size too: augjax splits the
    partitionable way under either setting (the draws from a sample's key follow the flag)."""
    x, step = _images(), STEPS["rotate"]
    key = jax.random.key(4)
    with jax.threefry_partitionable(False):
        _eq(step(x[:HALF], key=key), step(x, key=key)[:HALF])
