"""Reproducibility, bitwise: the same pipeline seed gives the same batches

- in two pipelines of one process, run side by side;
- in another process (a subprocess builds the same pipeline; the arrays path too);
- after a DALI checkpoint taken mid-epoch and restored into a new pipeline;
- whatever the prefetch depth (1 or 3) and the executor (dynamic, legacy async pipelined,
  synchronous non-pipelined).

The pipeline is a realistic one: a shuffling file reader over the bundled sample images, the
DALI decoder, a resize to a uniform size, then one augjax chain (flip, colour jitter, random
erasing, mixup on the reader's labels) fused into one ``jax_function``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import augjax

IMAGES = sorted(str(p) for p in (Path(augjax.__file__).parent / "data" / "images").glob("*.jpg"))
BATCH = 3  # 8 files: epochs end mid-batch, checkpoints land mid-epoch
SIZE = 32
NUM_CLASSES = len(IMAGES)


def chain():
    """The augjax chain of the test pipeline."""
    ops = augjax.ops
    return augjax.compose(
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.random_erasing.bind(p=0.5),
        ops.mixup.bind(alpha=0.4, num_classes=NUM_CLASSES, mode="elem"),
    )


def make_pipeline(seed: int, *, prefetch_queue_depth: int = 2, checkpoint: str | None = None,
                  **executor):
    """The test pipeline: reader (shuffled) -> decode -> resize -> augjax chain."""
    from nvidia.dali import fn, pipeline_def

    aug = chain()

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=seed,
                  prefetch_queue_depth=prefetch_queue_depth, enable_checkpointing=True,
                  **executor)
    def pipe():
        jpegs, labels = fn.readers.file(files=IMAGES, labels=list(range(NUM_CLASSES)),
                                        random_shuffle=True, name="reader")
        images = fn.decoders.image(jpegs, device="cpu")
        images = fn.resize(images, size=[SIZE, SIZE])
        return aug(images, labels)

    p = pipe(checkpoint=checkpoint) if checkpoint is not None else pipe()
    p.build()
    return p


def run(p, iterations: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for _ in range(iterations):
        images, soft = p.run()
        out.append((np.array(images.as_tensor()), np.array(soft.as_tensor())))
    return out


def digest(batches) -> str:
    h = hashlib.sha256()
    for images, soft in batches:
        h.update(images.tobytes())
        h.update(soft.tobytes())
    return h.hexdigest()


def array_digest() -> str:
    """The same chain on arrays with a fixed key (no DALI)."""
    x = np.random.default_rng(0).integers(0, 256, (4, SIZE, SIZE, 3), dtype=np.uint8)
    labels = np.arange(4, dtype=np.int32)
    images, soft = chain()(x, labels, key=jax.random.key(42))
    return digest([(np.asarray(images), np.asarray(soft))])


def assert_same(a, b, what: str):
    assert len(a) == len(b)
    for t, ((ia, sa), (ib, sb)) in enumerate(zip(a, b)):
        np.testing.assert_array_equal(ia, ib, err_msg=f"{what}: images of iteration {t}")
        np.testing.assert_array_equal(sa, sb, err_msg=f"{what}: labels of iteration {t}")


@pytest.fixture(scope="module")
def reference():
    """Five iterations of the default pipeline, seed 1234."""
    return run(make_pipeline(1234), 5)


@pytest.mark.slow
def test_the_pipeline_actually_augments(reference):
    images, soft = reference[0]
    assert images.shape == (BATCH, SIZE, SIZE, 3) and soft.shape == (BATCH, NUM_CLASSES)
    other = run(make_pipeline(4321), 5)
    assert digest(other) != digest(reference), "a different seed gave the same batches"
    assert not np.array_equal(reference[0][0], reference[1][0])


def test_two_pipelines_with_the_same_seed_give_the_same_batches(reference):
    a, b = make_pipeline(1234), make_pipeline(1234)
    interleaved_a, interleaved_b = [], []
    for _ in range(5):
        interleaved_a += run(a, 1)
        interleaved_b += run(b, 1)
    assert_same(interleaved_a, reference, "pipeline a")
    assert_same(interleaved_b, reference, "pipeline b")


@pytest.mark.fast_tier("3")
@pytest.mark.parametrize("depth", [1, 3])
def test_prefetch_depth_does_not_change_the_batches(reference, depth):
    assert_same(run(make_pipeline(1234, prefetch_queue_depth=depth), 5), reference,
                f"prefetch_queue_depth={depth}")


@pytest.mark.parametrize(
    "executor",
    [{"exec_dynamic": True}, {"exec_dynamic": False},
     {"exec_dynamic": False, "exec_async": False, "exec_pipelined": False}],
    ids=["dynamic", "legacy-async-pipelined", "synchronous"],
)
def test_the_executor_does_not_change_the_batches(reference, executor):
    assert_same(run(make_pipeline(1234, **executor), 5), reference, str(executor))


def test_checkpoint_restore_mid_epoch_continues_the_same_stream(reference):
    p = make_pipeline(1234)
    head = run(p, 2)  # 6 of 8 samples: mid-epoch
    checkpoint = p.checkpoint()
    tail = run(p, 3)
    assert_same(head + tail, reference, "uninterrupted")
    restored = make_pipeline(1234, checkpoint=checkpoint)
    assert_same(run(restored, 3), tail, "restored from the checkpoint")


@pytest.mark.slow
def test_another_process_gives_the_same_batches(reference):
    code = (
        "import sys; sys.path[:0] = sys.argv[1:3]; import test_reproducibility as t; "
        "print(t.digest(t.run(t.make_pipeline(1234), 5))); print(t.array_digest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "7"}  # a different hash seed than this process
    here = Path(__file__).parent
    done = subprocess.run([sys.executable, "-c", code, str(here), str(here.parent)],
                          capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    dali_hash, array_hash = done.stdout.split()[-2:]
    assert dali_hash == digest(reference)
    assert array_hash == array_digest()
