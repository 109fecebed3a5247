"""``examples/detection.py`` and ``examples/segmentation.py`` on the CPU: JPEGs (and PNG masks)
of 6 different sizes through DALI's decoder into an augjax chain that starts with
``random_resized_crop`` of the ragged batch, with boxes and masks following.

Checked: uniform shapes; boxes inside the image, valid flags sane (padding never valid, every
visible object has a valid box of its class); a box encloses its object's mask; masks aligned
with the image (each class region still has its class colour, and a misaligned mask fails the
same check); the same seed gives the same batches, another seed other ones; the scripts run as a
user runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from example_modules import EXAMPLES, load_example

pytest.importorskip("nvidia.dali.plugin.jax")
pytest.importorskip("PIL")

B, S = 4, 64


@pytest.fixture(scope="module")
def det():
    return load_example("detection")


@pytest.fixture(scope="module")
def seg():
    return load_example("segmentation")


@pytest.fixture(scope="module")
def root(tmp_path_factory, det):
    path = tmp_path_factory.mktemp("shapes")
    data = load_example("sample_dataset").make_dataset(path)
    sizes = set()
    for p in data["images"]:
        from PIL import Image
        sizes.add(Image.open(p).size)
    assert len(sizes) >= 5, sizes
    return path


def _batches(pipe, n=2):
    return [_load_numpy(pipe.run()) for _ in range(n)]


def _load_numpy(outputs):
    return [np.stack([np.asarray(o.at(i)) for i in range(len(o))]) for o in outputs]


@pytest.mark.slow
def test_detection_batches_uniform_with_boxes_inside(det, root):
    pipe = det.build_pipeline(root, batch_size=B, size=S, max_boxes=4, seed=1)
    kept = 0
    for images, boxes, valid, classes in _batches(pipe, 3):
        assert images.shape == (B, S, S, 3) and images.dtype == np.uint8
        assert boxes.shape == (B, 4, 4) and boxes.dtype == np.float32
        assert valid.shape == (B, 4) and valid.dtype == np.bool_
        assert det.check_batch(images, boxes, valid, classes) == []
        assert not np.any(valid & (classes < 0))  # padding is never valid
        kept += int(valid.sum())
    assert kept > 0


def test_detection_check_flags_a_box_outside(det, root):
    # negative control of the check the example prints
    pipe = det.build_pipeline(root, batch_size=B, size=S, max_boxes=4, seed=1)
    images, boxes, valid, classes = _batches(pipe, 1)[0]
    boxes = boxes.copy()
    boxes[0, 0, 2] = S + 3
    assert det.check_batch(images, boxes, valid, classes) == ["a box outside the image"]


@pytest.mark.slow
def test_detection_reproducible_with_a_seed(det, root):
    a = _batches(det.build_pipeline(root, batch_size=B, size=S, max_boxes=4, seed=5))
    b = _batches(det.build_pipeline(root, batch_size=B, size=S, max_boxes=4, seed=5))
    c = _batches(det.build_pipeline(root, batch_size=B, size=S, max_boxes=4, seed=6))
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    assert not all(np.array_equal(u, v) for x, z in zip(a, c) for u, v in zip(x, z))


def test_segmentation_masks_stay_aligned(seg, root):
    # Geometry only, shuffled readers: each class region still has its class colour.
    pipe = seg.build_pipeline(root, batch_size=B, size=S, seed=2, color=False, shuffle=True)
    for images, masks in _batches(pipe, 2):
        assert images.shape == (B, S, S, 3) and masks.shape == (B, S, S, 1)
        assert masks.dtype == np.uint8
        assert set(np.unique(masks)) <= {0, 1, 2, 3, seg.IGNORE}
        assert np.isin(masks, (1, 2, 3)).sum() > 50  # objects are in view
        assert seg.agreement(images, masks) >= 0.98
        # a misaligned mask fails the same check
        assert seg.agreement(images, masks[:, :, ::-1]) < 0.5


@pytest.mark.slow
def test_boxes_enclose_masks_and_visible_objects_keep_their_box(seg, root):
    pipe = seg.build_pipeline(root, batch_size=B, size=S, seed=3, boxes=True, max_boxes=4)
    for images, masks, boxes, valid, classes in _batches(pipe, 2):
        assert boxes.shape == (B, 4, 4) and valid.shape == (B, 4)
        for i in range(B):
            for box, ok, k in zip(boxes[i], valid[i], classes[i]):
                ys, xs = np.nonzero(masks[i, ..., 0] == k)
                if k < 0 or len(xs) == 0:
                    continue
                # pixel centres x + 0.5 inside the box; nearest sampling of the masks and
                # DALI's own resampling in the crop: within 1.5 pixels
                assert ok, (i, k, len(xs))
                assert xs.min() + 0.5 >= box[0] - 1.5 and xs.max() + 0.5 <= box[2] + 1.5
                assert ys.min() + 0.5 >= box[1] - 1.5 and ys.max() + 0.5 <= box[3] + 1.5
                # and is not much larger than the mask's extent (rotations of +-20 degrees
                # enlarge the enclosing box: up to 2.7x seen over 6 seeds)
                extent = (xs.max() + 1 - xs.min()) * (ys.max() + 1 - ys.min())
                assert (box[2] - box[0]) * (box[3] - box[1]) <= 4 * extent + 16


@pytest.mark.slow
def test_scripts_run_as_a_user_runs_them(tmp_path, fork_server):
    # python examples/X.py ..., each in a process forked from the test process's server
    # (tests/forkrun.py: its NumPy, JAX, augjax and DALI imported once)
    out = tmp_path / "boxes.png"
    res = fork_server.run([str(EXAMPLES / "detection.py"), "--batch-size", "4", "--size", "64",
                           "--iters", "2", "--save", str(out)], tmp_path, env=dict(os.environ),
                          timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "batch 1: images (4, 64, 64, 3) uint8, boxes (4, 8, 4)" in res.stdout
    assert "checks ok" in res.stdout and out.stat().st_size > 1000
    res = fork_server.run([str(EXAMPLES / "segmentation.py"), "--batch-size", "4", "--size",
                           "64", "--iters", "2", "--no-color"], tmp_path, env=dict(os.environ),
                          timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "masks (4, 64, 64, 1) uint8" in res.stdout and "checks ok" in res.stdout


@pytest.mark.gpu
def test_scripts_on_the_gpu():
    for script, expect in (("detection.py", "checks ok"),
                           ("segmentation.py", "mask/colour agreement min")):
        extra = ["--no-color"] if script == "segmentation.py" else []
        res = subprocess.run([sys.executable, str(EXAMPLES / script), "--device", "gpu",
                              "--iters", "3", *extra], capture_output=True, text=True,
                             timeout=300, check=False)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        assert expect in res.stdout and "checks ok" in res.stdout, res.stdout[-2000:]
