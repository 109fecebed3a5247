"""Randomness: per-sample keys from DALI seeds, reproducible across pipelines and checkpoints."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import images

import augjax

JITTER = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)


def _pipeline(seed, data, labels, *, op_seed=None, checkpointing=False, checkpoint=None):
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None, seed=seed,
                  enable_checkpointing=checkpointing)
    def pipe():
        x = fn.external_source(source=lambda: data, batch=True, layout="HWC")
        y = fn.external_source(source=lambda: labels, batch=True)
        x = augjax.ops.flip(x, p=0.5, seed=op_seed)
        x = augjax.ops.color_jitter(x, **JITTER)
        return augjax.ops.mixup(x, y, alpha=0.2, num_classes=8)

    p = pipe(checkpoint=checkpoint) if checkpoint is not None else pipe()
    p.build()
    return p


def _run(p, n):
    return [[np.array(o.as_tensor()) for o in p.run()] for _ in range(n)]


DATA = images(8, 10, 12, seed=3)
LABELS = np.arange(8, dtype=np.int32).reshape(8, 1)


@pytest.mark.slow
def test_same_seed_same_batches_bitwise_other_seed_differs():
    a = _run(_pipeline(7, DATA, LABELS), 3)
    b = _run(_pipeline(7, DATA, LABELS), 3)
    c = _run(_pipeline(8, DATA, LABELS), 3)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0][0], c[0][0])
    assert not np.array_equal(a[0][0], a[1][0])  # iterations differ too


@pytest.mark.slow
def test_per_op_seed_pins_that_ops_stream():
    x1 = _run(_pipeline(7, DATA, LABELS, op_seed=123), 1)[0][0]
    x2 = _run(_pipeline(7, DATA, LABELS, op_seed=123), 1)[0][0]
    np.testing.assert_array_equal(x1, x2)


def test_checkpoint_restore_continues_the_same_stream():
    p = _pipeline(11, DATA, LABELS, checkpointing=True)
    _run(p, 2)
    cp = p.checkpoint()
    expected = _run(p, 3)
    restored = _pipeline(11, DATA, LABELS, checkpointing=True, checkpoint=cp)
    got = _run(restored, 3)
    for x, y in zip(expected, got):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


@pytest.mark.slow
def test_array_path_reproducible_from_key():
    k = jax.random.key(5)
    a = augjax.ops.color_jitter(DATA, key=k, **JITTER)
    b = augjax.ops.color_jitter(DATA, key=k, **JITTER)
    c = augjax.ops.color_jitter(DATA, key=jax.random.key(6), **JITTER)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.slow
def test_samples_get_independent_draws():
    x = np.repeat(images(1, 8, 8), 64, axis=0)
    out = np.asarray(augjax.ops.color_jitter(x, key=jax.random.key(0), **JITTER))
    distinct = {out[i].tobytes() for i in range(64)}
    assert len(distinct) == 64


def test_seed_range_gives_positive_distinct_seeds():
    from nvidia.dali import fn, pipeline_def, types

    from augjax._runtime.execution.keys import SEED_HIGH

    @pipeline_def(batch_size=256, num_threads=1, device_id=None, seed=3)
    def pipe():
        return fn.random.uniform(range=[0, SEED_HIGH], shape=[2], dtype=types.INT32)

    p = pipe()
    p.build()
    s = np.array(p.run()[0].as_tensor())
    assert s.min() >= 0 and s.max() <= SEED_HIGH
    assert len(np.unique(s)) > 500


def test_warmup_compiles_before_the_first_batch():
    from nvidia.dali import fn, pipeline_def

    chain = augjax.compose(augjax.ops.flip.bind(p=0.5),
                           augjax.ops.color_jitter.bind(brightness=0.3, hue=0.05))
    x = images(5, 9, 11, seed=8)
    assert augjax.warmup(chain, x.shape, device="cpu") == 1
    assert augjax.warmup(chain, x.shape, device="cpu") == 0  # cached

    @pipeline_def(batch_size=5, num_threads=1, device_id=None, seed=2)
    def pipe():
        return chain(fn.external_source(source=lambda: x, batch=True, layout="HWC"))

    p = pipe()
    p.build()
    before = augjax.trace_count()
    p.run()
    assert augjax.trace_count() == before  # the first batch compiled nothing


def test_program_cache_keys_do_not_depend_on_how_arguments_are_spelled():
    """A program asked for with defaults left out, given positionally or by keyword is one
    program (one trace, one compile): augjax.warmup and the DALI bridge ask differently."""
    from augjax._runtime.execution.program import array_program, seeded_program

    steps = (augjax.ops.flip.bind(p=0.5),)
    a = seeded_program(steps, "HWC", False, True)
    assert seeded_program(steps, "HWC", False, True, 0, False) is a
    assert seeded_program(steps, "HWC", False, True, start=0, partitioned=False) is a
    assert seeded_program(steps, "HWC", False, True, partitioned=True) is not a
    assert array_program(steps, "HWC") is array_program(steps, layout="HWC", start=0)


def test_public_namespace_is_curated():
    names = dir(augjax)
    assert "compose" in names and "warmup" in names and "ShardedSource" in names
    assert not {"Any", "importlib", "annotations", "TYPE_CHECKING"} & set(names)


@pytest.mark.parametrize("form", ["numpy", "list", "jax", "int64"])
def test_keys_from_seeds_are_the_documented_fold_in_of_each_row(form):
    seeds = augjax.index_seeds(np.arange(5), epoch=2, seed=11)
    given = {"numpy": seeds, "list": seeds.tolist(), "jax": jax.numpy.asarray(seeds),
             "int64": seeds.astype(np.int64)}[form]
    keys = augjax.keys_from_seeds(given)
    # The reference: each row on its own, eagerly, as docs/guide/reproducibility.md writes it.
    want = [jax.random.key_data(jax.random.fold_in(
        jax.random.key(np.uint32(s[0]), impl="threefry2x32"), np.uint32(s[1]))) for s in seeds]
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(keys)), np.stack(want))


@pytest.mark.parametrize("bad", [np.zeros((3, 3), np.int32), np.zeros(2, np.int32),
                                 np.zeros((3, 2), np.float32)])
def test_keys_from_seeds_refuse_other_shapes_and_dtypes(bad):
    with pytest.raises(augjax.InputError, match=r"keys_from_seeds: argument 'seeds' expects "
                                                r"integers of shape \(N, 2\)"):
        augjax.keys_from_seeds(bad)
