"""Partial batches run padded to a compiled size (augjax._runtime.execution.padding): no new trace,
and the real samples' results are bitwise those of an unpadded call, on arrays and in DALI; DALI's
JAX iterator at an epoch end with ``augjax.dali.trim_epoch``."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import fresh_programs

import augjax
import augjax._runtime.execution.padding as _padding
from augjax import ops

NUM_CLASSES = 10


def sample_chain():
    return augjax.compose(
        ops.flip.bind(p=0.5),
        augjax.rand_augment(n=2, m=9, ops=["Rotate", "Posterize", "Contrast"]),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
        ops.random_erasing.bind(p=0.5),
    )


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
    # These tests count traces and compiles: programs come from tracing, not the store.
    monkeypatch.setenv("AUGJAX_PROGRAM_CACHE", "0")


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


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 6])
def test_mixing_chain_padded_matches_unpadded(monkeypatch, n):
    chain = mixing_chain("batch")
    x, y = batch(12, seed=n)
    chain(x, y, key=jax.random.key(0))
    before = augjax.trace_count()
    out, soft = chain(x[:n], y[:n], key=jax.random.key(5))
    assert augjax.trace_count() == before
    ref, ref_soft = unpadded(monkeypatch, lambda: chain(x[:n], y[:n], key=jax.random.key(5)))
    np.testing.assert_array_equal(np.asarray(soft), np.asarray(ref_soft))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


@pytest.mark.slow
def test_mixing_per_sample_mode_runs_its_own_program_and_pairs_only_real_samples():
    """Per-pair/per-sample draws are shaped by the true batch size: such a chain is not padded
    (a padded batch would draw other values than the batch alone)."""
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
    assert augjax.trace_count() == before + 1
    assert not _padding.paddable(chain.steps)
    soft = np.asarray(soft)
    for i in range(n):
        support = set(np.flatnonzero(soft[i] > 0).tolist())
        assert support <= {i, n - 1 - i}, (i, support)
        np.testing.assert_allclose(soft[i].sum(), 1.0, rtol=1e-6)
        lo, hi = sorted((10 * (i + 1), 10 * (n - i)))
        assert lo <= np.asarray(out)[i].min() and np.asarray(out)[i].max() <= hi


def test_unknown_batch_level_op_is_not_padded():
    @augjax.op("swap_halves", level="batch")
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


@pytest.mark.slow
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
    for epoch in range(2):
        seen, shapes = [], []
        for b in augjax.dali.trim_epoch(it):
            shapes.append(b["images"].shape[0])
            assert b["labels"].shape[0] == b["images"].shape[0]
            seen.extend(np.asarray(b["labels"]).ravel().tolist())
            if epoch == 0:
                traces.append(augjax.trace_count())
        assert sorted(seen) == list(range(len(files)))  # each sample once per epoch
        assert shapes == [3] * (len(files) // 3) + ([len(files) % 3] if len(files) % 3 else [])
    # The first epoch's end compiled nothing (the second's, a size that recurs, compiles the
    # size's own program behind: test_a_recurring_size_...).
    assert len(set(traces)) == 1


# -- the policies (AUGJAX_PARTIAL_BATCHES) ---------------------------------------------------
def simple_chain():
    return augjax.compose(ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.6, 1.4)))


@pytest.fixture
def padded_sizes(monkeypatch):
    """The sizes the calls were padded to, in fresh programs (each test traces its own)."""
    fresh_programs()
    sizes: list[int] = []
    real = _padding._padded

    def spy(program, steps, args, n, size):
        sizes.append(size)
        return real(program, steps, args, n, size)

    monkeypatch.setattr(_padding, "_padded", spy)
    return sizes


def backend_compiles() -> list[str]:
    """XLA compiles from now on (JAX's monitoring events), as a growing list."""
    events: list[str] = []

    def listen(event, duration, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    return events


def test_a_recurring_size_pads_once_then_runs_its_own_program_compiled_behind(padded_sizes):
    chain = simple_chain()
    x, _ = batch(16)
    chain(x, key=jax.random.key(0))
    steps = []
    compiles = backend_compiles()
    for i in range(4):
        before, seen, done = augjax.trace_count(), len(padded_sizes), len(compiles)
        jax.block_until_ready(chain(x[:5], key=jax.random.key(i)))
        if i == 1:
            _padding.wait_compiles()
        steps.append((padded_sizes[seen:], augjax.trace_count() - before,
                      len(compiles) - done))
    assert steps[0][:2] == ([16], 0)  # first: padded, nothing traced
    assert steps[1][:2] == ([16], 1)  # second: padded; its own program traced behind
    assert steps[2] == ([], 0, 0)  # third on: its own program, nothing left to compile
    assert steps[3] == ([], 0, 0)
    assert not _padding._threads


def test_a_thread_local_jax_setting_compiles_the_recurring_size_in_the_callers_thread(
        padded_sizes):
    chain = simple_chain()
    x, _ = batch(16)
    with jax.default_matmul_precision("highest"):  # this thread's own setting
        chain(x, key=jax.random.key(0))
        chain(x[:5], key=jax.random.key(1))
        before = augjax.trace_count()
        chain(x[:5], key=jax.random.key(2))  # its second batch: compiled here, unpadded
        assert augjax.trace_count() == before + 1
        chain(x[:5], key=jax.random.key(3))
        assert augjax.trace_count() == before + 1
    assert padded_sizes == [16]


def test_buckets_run_every_size_at_the_next_power_of_two(monkeypatch, padded_sizes):
    monkeypatch.setenv(_padding.ENV, "buckets")
    assert [_padding.bucket(n) for n in (1, 2, 3, 5, 8, 9, 16, 17)] == [1, 2, 4, 8, 8, 16, 16, 32]
    chain = simple_chain()
    x, _ = batch(16)
    traces = []
    for n in (5, 7, 8, 6, 3, 16, 12):
        before = augjax.trace_count()
        chain(x[:n], key=jax.random.key(n))
        traces.append(augjax.trace_count() - before)
    assert padded_sizes == [8, 8, 8, 4, 16]
    assert traces == [1, 0, 0, 0, 1, 1, 0]  # programs of 8, 4 and 16 only


def test_pad_keeps_padding_a_recurring_size(monkeypatch, padded_sizes):
    monkeypatch.setenv(_padding.ENV, "pad")
    chain = simple_chain()
    x, _ = batch(16)
    chain(x, key=jax.random.key(0))
    before = augjax.trace_count()
    for i in range(3):
        chain(x[:5], key=jax.random.key(i))
    _padding.wait_compiles()
    assert augjax.trace_count() == before
    assert padded_sizes == [16, 16, 16]


@pytest.mark.parametrize("env", [{_padding.ENV: "off"}, {"AUGJAX_PAD_BATCHES": "0"}])
def test_off_compiles_every_size(monkeypatch, padded_sizes, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    chain = simple_chain()
    x, _ = batch(16)
    chain(x, key=jax.random.key(0))
    before = augjax.trace_count()
    chain(x[:5], key=jax.random.key(1))
    assert augjax.trace_count() == before + 1
    assert padded_sizes == []


def test_an_unknown_policy_is_an_input_error(monkeypatch):
    monkeypatch.setenv(_padding.ENV, "sometimes")
    x, _ = batch(4)
    with pytest.raises(augjax.errors.InputError, match="AUGJAX_PARTIAL_BATCHES.*recurring.*"
                                                       "'sometimes'"):
        simple_chain()(x, key=jax.random.key(0))


@pytest.mark.fast_tier("pad-1")
@pytest.mark.parametrize("policy, traces", [("recurring", 1), ("pad", 1), ("buckets", 1)])
def test_warmup_compiles_the_size_it_is_given(monkeypatch, padded_sizes, policy, traces):
    """``augjax.warmup`` of a smaller size after a larger one compiles that size's program
    (under ``buckets``, its bucket's): the pipeline's batches of that size then run it."""
    monkeypatch.setenv(_padding.ENV, policy)
    chain = simple_chain()
    assert augjax.warmup(chain, (16, 16, 16, 3)) == 1
    assert augjax.warmup(chain, (5, 16, 16, 3)) == traces
    assert padded_sizes == ([8] if policy == "buckets" else [])


def test_a_first_partial_batch_with_one_key_compiles_only_two_gathers(padded_sizes):
    """A chain of per-sample ops called with one key runs the full batches' program itself
    (the real samples first): no sampler for per-sample keys; the gathers in and out only."""
    chain = simple_chain()
    x, _ = batch(16)
    chain(x, key=jax.random.key(0))
    key, part = jax.random.key(1), jnp.asarray(x[:5])  # their own compiles come first
    compiles = backend_compiles()
    before = augjax.trace_count()
    out = chain(part, key=key)
    assert augjax.trace_count() == before and padded_sizes == [16]
    assert len(compiles) <= 2  # (0 when an earlier test compiled the same gathers)
    with _padding.no_padding():
        np.testing.assert_array_equal(np.asarray(out),
                                      np.asarray(chain(x[:5], key=jax.random.key(1))))


def test_without_the_partitionable_threefry_one_key_is_split_before_padding(padded_sizes):
    chain = simple_chain()
    x, _ = batch(16)
    with jax.threefry_partitionable(False):  # split(key, 16)[:5] != split(key, 5) then
        chain(x, key=jax.random.key(0))
        out = chain(x[:5], key=jax.random.key(1))
        with _padding.no_padding():
            ref = chain(x[:5], key=jax.random.key(1))
    assert padded_sizes == [16]
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
