"""``examples/pytorch_train.py`` on the CPU: DALI's PyTorch iterator over a pipeline of augjax ops
(with boxes) feeds a torch training step.

Checked: every epoch sees each of the 8 images once, in batches of 3, 3 and the partial 2
(``augjax.dali.trim_epoch`` on the PyTorch iterator cuts the reader's padding, giving the same
tensors as the iterator's own ``LastBatchPolicy.PARTIAL``); NHWC uint8 becomes normalised NCHW
float; the targets come from valid boxes only (against a NumPy reference); the model's
parameters move and the losses are finite; the script runs as a user runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from example_modules import EXAMPLES, load_example

torch = pytest.importorskip("torch")
pytest.importorskip("nvidia.dali.plugin.pytorch")
pytest.importorskip("PIL")



@pytest.fixture(scope="module")
def pt():
    return load_example("pytorch_train")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("shapes")
    load_example("sample_dataset").make_dataset(path)
    return path


def _epochs(pt, root, partial, n=2):
    it = pt.make_iterator(pt.build_pipeline(root, batch_size=3, size=32, seed=5), partial=partial)
    return [[{k: v.clone() for k, v in b.items()} for b in pt.epoch(it, partial=partial)]
            for _ in range(n)]


@pytest.mark.slow
def test_trim_epoch_cuts_the_pytorch_iterators_last_batch_like_partial(pt, root):
    trimmed = _epochs(pt, root, partial=False)
    partial = _epochs(pt, root, partial=True)
    for a_epoch, b_epoch in zip(trimmed, partial):
        assert [len(b["images"]) for b in a_epoch] == [3, 3, 2]
        assert [len(b["images"]) for b in b_epoch] == [3, 3, 2]
        for a, b in zip(a_epoch, b_epoch):
            for k in a:
                assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k
    first, second = trimmed
    assert not torch.equal(first[0]["images"], second[0]["images"])  # a new epoch, new draws
    b = first[-1]
    assert b["images"].shape == (2, 32, 32, 3) and b["images"].dtype == torch.uint8
    assert b["boxes"].shape[:2] == b["boxes_valid"].shape and b["boxes_valid"].dtype == torch.bool
    assert not bool((b["boxes_valid"] & (b["classes"] < 0)).any())  # padding never valid


def test_model_inputs_are_nchw_normalised_and_use_only_valid_boxes(pt):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (2, 5, 5, 3), dtype=np.uint8)
    boxes = np.array([[[0, 0, 4, 4], [1, 1, 2, 2], [0, 0, 5, 5]],
                      [[0, 0, 5, 5], [1, 0, 3, 1], [0, 0, 0, 0]]], np.float32)
    valid = np.array([[False, True, False], [False, False, False]])
    classes = np.array([[3, 2, 1], [1, 2, -1]], np.int32)
    x, labels, target, has = pt.to_model_inputs({
        "images": torch.from_numpy(images), "boxes": torch.from_numpy(boxes),
        "boxes_valid": torch.from_numpy(valid), "classes": torch.from_numpy(classes)})
    want = (images.transpose(0, 3, 1, 2) / 255.0 - np.array(pt.MEAN)[:, None, None]) / np.array(
        pt.STD)[:, None, None]
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-5, atol=1e-5)
    # image 0: the only valid box is the small one (the larger boxes are not valid)
    assert labels.tolist() == [2, 0] and has.tolist() == [True, False]
    np.testing.assert_allclose(target[0].numpy(), np.array([1, 1, 2, 2]) / 5.0)


def test_a_training_step_moves_the_model(pt, root):
    torch.manual_seed(0)
    model = pt.TinyDetector()
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    it = pt.make_iterator(pt.build_pipeline(root, batch_size=3, size=32, seed=5))
    logs = [pt.train_step(model, opt, b) for b in pt.epoch(it)]
    assert [s["n"] for s in logs] == [3, 3, 2] and all(s["finite"] for s in logs)
    assert sum(s["valid_boxes"] for s in logs) > 0
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))


@pytest.mark.slow
def test_the_script_runs_as_a_user_runs_it(root, fork_server, tmp_path):
    # python examples/pytorch_train.py ..., forked from the test process's server
    # (tests/forkrun.py: its NumPy, JAX, augjax, DALI and PyTorch imported once)
    res = fork_server.run([str(EXAMPLES / "pytorch_train.py"), "--root", str(root), "--epochs",
                           "1", "--size", "32"], tmp_path, env=dict(os.environ), timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "batch sizes [3, 3, 2] (8 images)" in res.stdout and "losses finite" in res.stdout


@pytest.mark.gpu
def test_the_script_runs_on_the_gpu(root):
    """The GPU path as a user runs it: decode ("mixed") and augment on GPU 0, DALI's PyTorch
    iterator hands CUDA tensors over, the torch step runs on CUDA."""
    res = subprocess.run([sys.executable, str(EXAMPLES / "pytorch_train.py"), "--device", "gpu",
                          "--root", str(root), "--epochs", "2", "--size", "64"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr[-6000:]
    assert res.stdout.count("batch sizes [3, 3, 2] (8 images)") == 2, res.stdout
    assert "images from cuda:0, step on cuda:0" in res.stdout and "losses finite" in res.stdout
