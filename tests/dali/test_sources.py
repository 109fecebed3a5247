"""ShardedSource's forms (batch mode, DALI-side file reads, parallel workers) against the per-sample
form, through real DALI CPU pipelines: the same decoded images, labels, seeds and indices, over an
epoch end, for 1 and 2 shards."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import augjax
from augjax.errors import InputError

BUNDLED = sorted(str(p) for p in (Path(augjax.__file__).parent / "data" / "images").glob("*.jpg"))
FILES = BUNDLED * 3  # 24 files: 3 global batches of 8 per epoch
LABELS = [10 * i for i in range(len(BUNDLED))] * 3
GLOBAL = 8
ITERS = 4  # crosses the end of epoch 0


def run_shards(shards: int, *, mode="sample", read="python", workers=0, iters=ITERS):
    """``iters`` global batches (shards concatenated) of (decoded images, labels, seeds, index),
    restarting every pipeline at the epoch end as DALI's iterators do."""
    from nvidia.dali import fn, pipeline_def, types

    extra = {"py_num_workers": workers, "py_start_method": "spawn"} if workers else {}
    pipes = []
    for s in range(shards):
        src = augjax.ShardedSource(FILES, LABELS, batch_size=GLOBAL // shards, shard_id=s,
                                   num_shards=shards, seed=3, mode=mode, read=read)

        @pipeline_def(batch_size=GLOBAL // shards, num_threads=1, device_id=None, seed=1,
                      **extra)
        def pipe(src=src):
            encoded, label, seeds, index = src.external_source(
                parallel=workers > 0, prefetch_queue_depth=2 if workers else None)
            return fn.decoders.image(encoded, output_type=types.RGB), label, seeds, index

        p = pipe()
        p.build()
        pipes.append(p)
    def run_all():  # every pipeline reaches the epoch end before any is reset
        outs = []
        for p in pipes:
            try:
                outs.append(p.run())
            except StopIteration:
                pass
        return outs if len(outs) == shards else None

    batches = []
    for _ in range(iters):
        outs = run_all()
        if outs is None:
            for p in pipes:
                p.reset()
            outs = run_all()
        batches.append([[np.array(t) for o in outs for t in o[k]] for k in range(4)])
    return batches


@pytest.fixture(scope="module")
def reference():
    return run_shards(1)


def assert_same(got, want):
    assert len(got) == len(want)
    for g_batch, w_batch in zip(got, want):
        for g_out, w_out in zip(g_batch, w_batch):
            assert len(g_out) == len(w_out) == GLOBAL
            for g, w in zip(g_out, w_out):
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)


def test_reference_reads_the_global_order_with_index_seeds(reference):
    """The per-sample form itself: batch t of epoch e is positions [8t, 8t + 8) of order(e),
    each sample the decoded file of its index, its label and index_seeds(index, e)."""
    from PIL import Image

    src = augjax.ShardedSource(FILES, LABELS, batch_size=GLOBAL, seed=3)
    for t, (imgs, labels, seeds, index) in enumerate(reference):
        epoch, it = divmod(t, 3)
        want = src.order(epoch)[it * GLOBAL:(it + 1) * GLOBAL]
        np.testing.assert_array_equal(np.concatenate(index), want)
        np.testing.assert_array_equal(np.concatenate(labels), np.asarray(LABELS)[want])
        np.testing.assert_array_equal(np.stack(seeds),
                                      augjax.index_seeds(want, epoch=epoch, seed=3))
        for img, i in zip(imgs, want):
            with Image.open(FILES[i]) as im:
                pil = np.asarray(im.convert("RGB"), np.int16)
            # Both decode with libjpeg-turbo (bitwise equal here); 1 level allows another build.
            assert img.shape == pil.shape and np.abs(img - pil).max() <= 1
    # Epoch 1 reshuffles: its first batch (reference[3]) is not epoch 0's.
    assert not np.array_equal(np.concatenate(reference[0][3]), np.concatenate(reference[3][3]))


@pytest.mark.parametrize("shards", [1, 2])
@pytest.mark.parametrize("mode,read", [("batch", "python"), ("sample", "dali"),
                                       ("batch", "dali")])
def test_forms_match_per_sample_form_bitwise(reference, shards, mode, read):
    assert_same(run_shards(shards, mode=mode, read=read), reference)


@pytest.mark.slow
@pytest.mark.parametrize("mode,read,shards", [("batch", "python", 2), ("sample", "python", 1)])
def test_parallel_workers_match_per_sample_form_bitwise(reference, mode, read, shards):
    """DALI's parallel external source, 2 spawned workers per pipeline."""
    assert_same(run_shards(shards, mode=mode, read=read, workers=2), reference)


def test_batch_call_equals_stacked_sample_calls():
    kw = {"batch_size": 4, "shard_id": 1, "num_shards": 2, "seed": 5}
    per_sample = augjax.ShardedSource(FILES, LABELS, **kw)
    batched = augjax.ShardedSource(FILES, LABELS, mode="batch", **kw)
    assert batched.batches_per_epoch == 3
    for epoch in (0, 1):
        for it in range(3):
            payload, labels, seeds, index = batched(SimpleNamespace(iteration=it, epoch_idx=epoch))
            samples = [per_sample(SimpleNamespace(iteration=it, idx_in_batch=i, epoch_idx=epoch))
                       for i in range(4)]
            for b, s in zip(payload, samples):
                np.testing.assert_array_equal(b, s[0])
            for k, out in ((1, labels), (2, seeds), (3, index)):
                np.testing.assert_array_equal(out, np.stack([s[k] for s in samples]))
                assert out.dtype == samples[0][k].dtype
        with pytest.raises(StopIteration):
            batched(SimpleNamespace(iteration=3, epoch_idx=epoch))
    paths = augjax.ShardedSource(FILES, LABELS, mode="batch", read="dali", **kw)
    payload = paths(SimpleNamespace(iteration=0, epoch_idx=0))[0]
    index = batched(SimpleNamespace(iteration=0, epoch_idx=0))[3][:, 0]
    assert [bytes(p).decode() for p in payload] == [FILES[i] for i in index]


def test_errors():
    with pytest.raises(InputError, match="'mode' expects one of"):
        augjax.ShardedSource(FILES, LABELS, batch_size=4, mode="batches")
    with pytest.raises(InputError, match="'read' expects one of"):
        augjax.ShardedSource(FILES, LABELS, batch_size=4, read="mmap")
    batched = augjax.ShardedSource(FILES, LABELS, batch_size=4, mode="batch")
    with pytest.raises(InputError, match="expects a BatchInfo.*batch_info=True.*got int"):
        batched(0)  # external_source(batch=True) without batch_info=True passes the iteration
    with pytest.raises(InputError, match="expects a BatchInfo.*got SimpleNamespace"):
        batched(SimpleNamespace(iteration=0, idx_in_batch=0, epoch_idx=0))
    per_sample = augjax.ShardedSource(FILES, LABELS, batch_size=4)
    with pytest.raises(InputError, match="expects a SampleInfo.*use mode='batch'"):
        per_sample(SimpleNamespace(iteration=0, epoch_idx=0))


def test_external_source_argument_errors():
    from nvidia.dali import pipeline_def

    src = augjax.ShardedSource(FILES, LABELS, batch_size=4, mode="batch")
    for kwargs in ({"prefetch_queue_depth": 2}, {"parallel": True, "prefetch_queue_depth": 0}):
        @pipeline_def(batch_size=4, num_threads=1, device_id=None)
        def pipe(kwargs=kwargs):
            return src.external_source(**kwargs)

        with pytest.raises(InputError, match="'prefetch_queue_depth' expects an integer >= 1"):
            pipe()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, exec_pipelined=False,
                  exec_async=False, py_num_workers=2, py_start_method="spawn")
    def sync_pipe():
        return src.external_source(parallel=True)

    with pytest.raises(InputError, match="parallel=True needs a pipeline with exec_pipelined"):
        sync_pipe()
