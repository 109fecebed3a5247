"""augjax on DALI dynamic-mode batches (``nvidia.dali.experimental.dynamic``, CPU).

Every call takes ``ndd.Batch`` where it takes arrays and gives batches back (or jax.Arrays with
``output="jax"``). References: the array path on the same pixels with the same keys (bitwise),
and a DALI CPU pipeline (``device_id=None``) with ``seed=``: the dynamic call given
``pipeline_seeds`` of that seed gives the pipeline's bits. Tiny images (16 x 16, B=4), the
shapes of one module, so that the programs compile once.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax.dali import dynamic
from augjax.errors import InputError, KeyRequiredError

ndd = pytest.importorskip("nvidia.dali.experimental.dynamic")

B, H, W = 4, 16, 16
KEY = jax.random.key(3)
FLIP = augjax.ops.flip.bind(p=0.5)
CHAIN = augjax.compose([FLIP, augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4,
                                                          saturation=0.4, hue=0.1)])


def _pixels(seed: int = 0, shape=(B, H, W, 3)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def _aligned(x: np.ndarray) -> np.ndarray:
    """A copy of ``x`` at a 64-byte boundary (what DALI's allocator gives; JAX's CPU DLPack
    import copies a buffer less aligned)."""
    raw = np.empty(x.nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    out = raw[off:off + x.nbytes].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _host(batch) -> np.ndarray:
    return np.asarray(ndd.as_tensor(batch))


def test_uniform_batch_in_and_out_equals_the_array_path():
    x = _pixels()
    out = CHAIN(ndd.as_batch(x, layout="HWC"), key=KEY)
    assert isinstance(out, ndd.Batch) and out.layout == "HWC" and out.batch_size == B
    np.testing.assert_array_equal(_host(out), np.asarray(CHAIN(x, key=KEY)))
    arr = CHAIN(ndd.as_batch(x, layout="HWC"), key=KEY, output="jax")
    assert isinstance(arr, jax.Array)
    np.testing.assert_array_equal(np.asarray(arr), _host(out))
    # and the other way: arrays in, batches out
    back = CHAIN(x, key=KEY, output="dali")
    assert isinstance(back, ndd.Batch)
    np.testing.assert_array_equal(_host(back), _host(out))


def test_dlpack_shares_the_buffers_both_ways():
    x = _aligned(_pixels())
    batch = ndd.as_batch(x, layout="HWC")
    arr = dynamic.as_jax(batch)
    assert arr.unsafe_buffer_pointer() == x.ctypes.data  # DALI's view of x, JAX's view of it
    y = FLIP(arr, key=KEY)
    out = dynamic.as_batch(y, "HWC")
    assert out._storage.data_ptr() == y.unsafe_buffer_pointer()
    if _has_torch():
        assert out.torch().data_ptr() == y.unsafe_buffer_pointer()  # and so does PyTorch
    # a batch DALI allocated (an operator's output) reaches JAX without a copy too
    flipped = ndd.flip(batch, horizontal=1).evaluate()
    assert dynamic.as_jax(flipped).unsafe_buffer_pointer() == flipped._storage.data_ptr()


def test_ragged_batch_goes_through_the_list_path():
    x = _pixels(1, (3, 20, 24, 3))
    images = [x[0], np.ascontiguousarray(x[1, :12, :18]), np.ascontiguousarray(x[2, :16, :9])]
    chain = augjax.compose([augjax.ops.random_resized_crop.bind(size=8), FLIP])
    out = chain(ndd.as_batch(images, layout="HWC"), key=KEY)
    assert out.shape == [(8, 8, 3)] * 3 and out.layout == "HWC"
    np.testing.assert_array_equal(_host(out), np.asarray(chain(images, key=KEY)))


def test_ragged_batch_through_views_is_the_list_path():
    """A decoder's batch of different sizes through views (DINO's multi-crop in dynamic mode):
    the views of the list on arrays, bitwise, as the page promises for every call (was "expects
    a DALI batch of one shape"); ``sample`` takes it too."""
    x = _pixels(1, (3, 20, 24, 3))
    images = [x[0], np.ascontiguousarray(x[1, :12, :18]), np.ascontiguousarray(x[2, :16, :9])]
    views = augjax.views({"a": (2, augjax.compose([augjax.ops.random_resized_crop.bind(size=8),
                                                   FLIP]))})
    got = views(ndd.as_batch(images, layout="HWC"), key=KEY)
    assert got["a"].layout == "FHWC" and got["a"].shape == [(2, 8, 8, 3)] * 3
    np.testing.assert_array_equal(_host(got["a"]), np.asarray(views(images, key=KEY)["a"]))
    drawn = views.sample(ndd.as_batch(images, layout="HWC"), key=KEY)
    ref = views.sample(images, key=KEY)
    for a, b in zip(jax.tree_util.tree_leaves(drawn), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_seeds_of_a_pipeline_give_its_bits():
    """The pipeline path (one jax_function, seeds from DALI's RNG op with seed=7) and the
    dynamic path with ``pipeline_seeds(7)``: bitwise, batch after batch."""
    from nvidia.dali import fn, pipeline_def

    batches = [_pixels(10), _pixels(11)]

    @pipeline_def(batch_size=B, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        images = fn.external_source(source=batches, cycle=True, layout="HWC")
        return CHAIN(images, seed=7)

    p = pipe()
    p.build()
    seeds = dynamic.pipeline_seeds(7, B)
    for x in batches:
        (expected,) = p.run()
        out = CHAIN(ndd.as_batch(x, layout="HWC"), seeds=next(seeds))
        np.testing.assert_array_equal(_host(out), np.asarray(expected.as_tensor()))


def test_seed_is_a_dali_rng_stream():
    x = ndd.as_batch(_pixels(), layout="HWC")
    rng = ndd.random.RNG(seed=5)
    same = rng.clone()
    first, second = CHAIN(x, seed=rng), CHAIN(x, seed=rng)
    assert not np.array_equal(_host(first), _host(second))  # the stream advances
    seeds = ndd.random.uniform(batch_size=B, range=[0, 2**30], shape=[2], dtype=ndd.int32,
                               device="cpu", rng=same)
    np.testing.assert_array_equal(_host(first), _host(CHAIN(x, seeds=seeds)))
    with pytest.raises(InputError, match="ndd.random.RNG"):
        CHAIN(x, seed=5)


def test_labels_and_a_policy():
    x, labels = _pixels(), np.arange(B, dtype=np.int32)
    mix = augjax.ops.mixup.bind(alpha=0.4, num_classes=B)
    got, soft = mix(ndd.as_batch(x, layout="HWC"), ndd.as_batch(labels), key=KEY)
    want, want_soft = mix(x, labels, key=KEY)
    np.testing.assert_array_equal(_host(got), np.asarray(want))
    np.testing.assert_array_equal(_host(soft), np.asarray(want_soft))
    policy = augjax.random_choice([FLIP, augjax.ops.invert.bind()])
    out = policy(ndd.as_batch(x, layout="HWC"), key=KEY)
    np.testing.assert_array_equal(_host(out), np.asarray(policy(x, key=KEY)))


def test_sample_and_apply_take_batches():
    x = _pixels()
    batch = ndd.as_batch(x, layout="HWC")
    params = CHAIN.sample(batch, key=KEY)
    out = CHAIN.apply(batch, params=params)
    assert isinstance(out, ndd.Batch)
    np.testing.assert_array_equal(_host(out), np.asarray(CHAIN(x, key=KEY)))


def test_views_and_clips():
    x = _pixels()
    views = augjax.views({"a": (2, FLIP)})
    got = views(ndd.as_batch(x, layout="HWC"), key=KEY)
    assert got["a"].layout == "FHWC" and got["a"].shape == [(2, H, W, 3)] * B
    np.testing.assert_array_equal(_host(got["a"]), np.asarray(views(x, key=KEY)["a"]))
    clips = _pixels(2, (2, 2, H, W, 3))
    out = FLIP(ndd.as_batch(clips, layout="FHWC"), key=KEY, layout="FHWC")
    assert out.layout == "FHWC"
    np.testing.assert_array_equal(_host(out), np.asarray(FLIP(augjax.Clips(clips), key=KEY)))


def test_errors_are_typed():
    x = ndd.as_batch(_pixels(), layout="HWC")
    with pytest.raises(KeyRequiredError, match="dynamic-mode"):
        FLIP(x)
    with pytest.raises(InputError, match="'key' and 'seeds'"):
        FLIP(x, key=KEY, seeds=np.zeros((B, 2), np.int32))
    with pytest.raises(InputError, match="argument 'output'"):
        FLIP(x, key=KEY, output="numpy")
    with pytest.raises(InputError, match="tagged layout 'HWC'"):
        FLIP(x, key=KEY, layout="CHW")
    with pytest.raises(InputError, match="rank 3"):
        FLIP(ndd.as_batch(np.zeros((B, 4, 4, 4, 4, 3), np.uint8)), key=KEY)
    ragged = ndd.as_batch([_pixels(0, (8, 8, 3)), _pixels(0, (6, 8, 3))], layout="HWC")
    with pytest.raises(InputError, match="group 'a' view 0: flip: .* different sizes"):
        augjax.views({"a": (2, FLIP)})(ragged, key=KEY)
    if not any(d.platform == "gpu" for d in jax.devices()):
        with pytest.raises(InputError, match="no GPU backend"):
            dynamic._jax_device("gpu", 0, "flip", "images")
