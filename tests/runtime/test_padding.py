"""Partial batches run padded to a compiled size (augjax._runtime.padding): no new trace, and the real
samples' results are bitwise those of an unpadded call, on arrays and in DALI; DALI's JAX
iterator at an epoch end with ``augjax.dali.trim_epoch``."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
import augjax._runtime.padding as _padding
from augjax import ops

NUM_CLASSES = 10


def sample_chain():
    return augjax.compose(
        ops.flip.bind(p=0.5),
        augjax.rand_augment(n=2, m=9, ops=["Rotate", "Posterize", "Contrast"]),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
        ops.random_erasing.bind(p=0.5),
    )


IMAGENET_STD = (0.229, 0.224, 0.225)


def mixing_chain(mode: str = "batch"):
    return augjax.compose(
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, saturation=0.4),
        ops.normalize.bind(chw=True),
        ops.mixup_cutmix.bind(num_classes=NUM_CLASSES, cutmix_alpha=1.0, mode=mode),
    )


def batch(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, 16, 16, 3), dtype=np.uint8)
    y = rng.integers(0, NUM_CLASSES, n).astype(np.int32)
    return x, y


@pytest.fixture(autouse=True)
def _padded_batches(monkeypatch):
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "1")  # the default, which conftest turns off


def unpadded(monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setenv("AUGJAX_PAD_BATCHES", "0")
        return fn()


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_layout_keeps_mirror_pairs(n):
    size = 11
    source, position = _padding.layout(n, size)
    assert sorted(set(position.tolist())) == sorted(position.tolist())  # distinct positions
    assert (source[position] == np.arange(n)).all()
    for j in range(n):  # real sample j's partner position holds real sample n-1-j
        assert source[size - 1 - position[j]] == n - 1 - j


def test_smaller_array_batch_does_not_retrace_and_matches_unpadded(monkeypatch):
    chain = sample_chain()
    x, _ = batch(12)
    keys = jax.random.split(jax.random.key(3), 12)
    chain(x, key=keys)
    before = augjax.trace_count()
    padded = {n: np.asarray(chain(x[:n], key=keys[:n])) for n in (7, 4, 1)}
    assert augjax.trace_count() == before
    for n, out in padded.items():
        reference = unpadded(monkeypatch, lambda n=n: np.asarray(chain(x[:n], key=keys[:n])))
        np.testing.assert_array_equal(out, reference)
    assert augjax.trace_count() == before + 3  # the references did compile


@pytest.mark.parametrize("n", [5, 6])
def test_mixing_chain_padded_matches_unpadded(monkeypatch, n):
    chain = mixing_chain("batch")
    x, y = batch(12, seed=n)
    chain(x, y, key=jax.random.key(0))
    before = augjax.trace_count()
    out, soft = chain(x[:n], y[:n], key=jax.random.key(5))
    assert augjax.trace_count() == before
    ref, ref_soft = unpadded(monkeypatch, lambda: chain(x[:n], y[:n], key=jax.random.key(5)))
    out, ref = np.asarray(out), np.asarray(ref)
    np.testing.assert_array_equal(np.asarray(soft), np.asarray(ref_soft))
    # On CPU the colour jitter (a compute-bound op) runs in chunks of 8 samples when the batch
    # is larger: the padded batch rounds a few values one uint8 level differently than the
    # unpadded one (docs/RELIABILITY.md); the mixing itself is the same.
    level = 1.0 / (255 * min(IMAGENET_STD))
    np.testing.assert_allclose(out, ref, atol=1.01 * level, rtol=0)
    assert (out != ref).mean() < 1e-3


def test_mixing_per_sample_mode_pairs_only_real_samples():
    chain = augjax.compose(ops.mixup.bind(alpha=1.0, num_classes=NUM_CLASSES, mode="elem",
                                          label_smoothing=0.0))
    n = 5
    # constant images whose values identify the sample: 10, 20, ...; labels 0..n-1
    x = np.broadcast_to((10 * np.arange(1, 13, dtype=np.uint8))[:, None, None, None],
                        (12, 4, 4, 3)).copy()
    y = np.arange(12, dtype=np.int32) % NUM_CLASSES
    chain(x, y, key=jax.random.key(0))
    before = augjax.trace_count()
    out, soft = chain(x[:n], y[:n], key=jax.random.key(1))
    assert augjax.trace_count() == before
    soft = np.asarray(soft)
    for i in range(n):
        support = set(np.flatnonzero(soft[i] > 0).tolist())
        assert support <= {i, n - 1 - i}, (i, support)
        np.testing.assert_allclose(soft[i].sum(), 1.0, rtol=1e-6)
        lo, hi = sorted((10 * (i + 1), 10 * (n - i)))
        assert lo <= np.asarray(out)[i].min() and np.asarray(out)[i].max() <= hi


def test_unknown_batch_level_op_is_not_padded():
    @augjax.op("swap_halves", level="batch", random=False)
    def swap_halves(images, params):
        """Rolls the batch by half its length (pairs depend on the batch size)."""
        return jnp.roll(images, images.shape[0] // 2, axis=0)

    x, _ = batch(8)
    swap_halves(x)
    before = augjax.trace_count()
    out = swap_halves(x[:3])
    assert augjax.trace_count() == before + 1  # compiled for 3, not padded to 8
    np.testing.assert_array_equal(np.asarray(out), np.roll(x[:3], 1, axis=0))
    assert not _padding.paddable((swap_halves.bind(),))


def test_dali_external_source_smaller_batch_does_not_retrace(monkeypatch):
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import fn, pipeline_def, types

    chain = mixing_chain("batch")
    x, y = batch(8, seed=1)
    seeds = np.random.default_rng(2).integers(0, 2**31 - 1, (8, 2), dtype=np.int32)
    sizes = [8, 3, 8, 3]

    def source(info):
        n = sizes[info.iteration]
        return list(x[:n]), list(y[:n, None]), list(seeds[:n])

    @pipeline_def(batch_size=8, num_threads=1, device_id=None, exec_dynamic=True)
    def pipe():
        images, labels, s = fn.external_source(source, num_outputs=3, batch=True,
                                               batch_info=True, layout=["HWC", "", ""],
                                               dtype=[types.UINT8, types.INT32, types.INT32])
        return chain(images, labels, seeds=s)

    p = pipe()
    p.build()
    p.run()  # batch of 8: compiles
    before = augjax.trace_count()
    images, soft = p.run()  # batch of 3
    assert augjax.trace_count() == before
    got = np.array(images.as_tensor())
    got_soft = np.array(soft.as_tensor())
    assert got.shape[0] == 3
    keys = augjax.keys_from_seeds(jnp.asarray(seeds[:3]))
    ref, ref_soft = unpadded(monkeypatch, lambda: chain(x[:3], y[:3], key=keys))
    np.testing.assert_array_equal(got, np.asarray(ref))
    np.testing.assert_array_equal(got_soft, np.asarray(ref_soft))


def test_dali_jax_iterator_epoch_end_with_trim_epoch():
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import fn, pipeline_def
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy
    from nvidia.dali.plugin.jax import DALIGenericIterator

    files = sorted(str(p) for p in (Path(augjax.__file__).parent / "data" / "images")
                   .glob("*.jpg"))
    chain = augjax.compose(ops.flip.bind(p=0.5), ops.color_jitter.bind(brightness=0.4))

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=0)
    def pipe():
        jpegs, labels = fn.readers.file(files=files, labels=list(range(len(files))),
                                        random_shuffle=True, pad_last_batch=True, name="reader")
        images = fn.resize(fn.decoders.image(jpegs, device="cpu"), size=[24, 24])
        return chain(images), labels

    it = DALIGenericIterator([pipe()], ["images", "labels"], reader_name="reader",
                             last_batch_policy=LastBatchPolicy.FILL, auto_reset=True)
    traces = []
    for _ in range(2):
        seen, shapes = [], []
        for b in augjax.dali.trim_epoch(it):
            shapes.append(b["images"].shape[0])
            assert b["labels"].shape[0] == b["images"].shape[0]
            seen.extend(np.asarray(b["labels"]).ravel().tolist())
            traces.append(augjax.trace_count())
        assert sorted(seen) == list(range(len(files)))  # each sample once per epoch
        assert shapes == [3] * (len(files) // 3) + ([len(files) % 3] if len(files) % 3 else [])
    assert len(set(traces)) == 1  # the epoch end compiled nothing
