"""The pipeline a user writes (readers -> decoder -> resize -> augjax ops), on real JPEG files."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import augjax

NUM_CLASSES = 3


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("jpegs")
    rng = np.random.default_rng(0)
    for c in range(NUM_CLASSES):
        (root / f"class{c}").mkdir()
        for i in range(4):
            arr = rng.integers(0, 256, (40 + 3 * i, 50, 3), dtype=np.uint8)
            Image.fromarray(arr).save(root / f"class{c}" / f"{i}.jpg", quality=90)
    return str(root)


def _train_pipe(root, seed, checkpoint=None):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=8, num_threads=2, device_id=None, seed=seed,
                  enable_checkpointing=True)
    def train_pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, size=(32, 32))
        plain = images
        images = augjax.ops.flip(images, p=0.5)
        images = augjax.ops.color_jitter(images, brightness=0.4, contrast=0.4, saturation=0.4,
                                         hue=0.1)
        images, soft_labels = augjax.ops.mixup(images, labels, alpha=0.2,
                                               num_classes=NUM_CLASSES)
        return images, soft_labels, labels, plain

    p = train_pipe(checkpoint=checkpoint) if checkpoint else train_pipe()
    p.build()
    return p


def _outs(p):
    return [np.array(o.as_tensor()) for o in p.run()]


@pytest.mark.slow
def test_user_pipeline_runs_and_labels_are_soft(jpeg_root):
    p = _train_pipe(jpeg_root, 7)
    for _ in range(3):
        images, soft, labels, plain = _outs(p)
        assert images.shape == (8, 32, 32, 3) and images.dtype == np.uint8
        assert soft.shape == (8, NUM_CLASSES) and soft.dtype == np.float32
        np.testing.assert_allclose(soft.sum(1), 1.0, rtol=1e-6)
        # Each row mixes the sample's own label and its partner's (the reversed batch).
        lab = labels.reshape(-1)
        for i in range(8):
            support = set(np.nonzero(soft[i] > 1e-6)[0])
            assert support <= {lab[i], lab[7 - i]}
        assert not np.array_equal(images, plain)


def test_user_pipeline_reproducible_and_checkpointable(jpeg_root):
    a, b = _train_pipe(jpeg_root, 7), _train_pipe(jpeg_root, 7)
    for _ in range(2):
        for u, v in zip(_outs(a), _outs(b)):
            np.testing.assert_array_equal(u, v)
    cp = a.checkpoint()
    expected = [_outs(a) for _ in range(2)]
    restored = _train_pipe(jpeg_root, 7, checkpoint=cp)
    for exp in expected:
        for u, v in zip(exp, _outs(restored)):
            np.testing.assert_array_equal(u, v)
