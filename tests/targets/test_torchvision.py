"""Masks, boxes and keypoints against torchvision v2 (``tv_tensors``) on the same params.

Each test draws params with ``op.sample``, applies them with ``op.apply(..., masks=, boxes=,
keypoints=)``, and runs torchvision's functional on ``tv_tensors.Mask`` / ``BoundingBoxes`` /
``KeyPoints`` with those exact values, sample by sample.

Conventions (documented in :mod:`augjax._runtime.targets.follow`): boxes are in pixel edges, as
torchvision's; keypoints are pixel indices (pixel j's centre at j), as torchvision's keypoint
flips and clamps, whereas torchvision's affine/perspective/resize keypoint kernels treat them as
edges. So keypoints equal torchvision's exactly for flips and crops, and elsewhere equal
torchvision's applied to ``p + 0.5`` minus 0.5; the raw difference is measured below.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")
tv = pytest.importorskip("torchvision")
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

import augjax  # noqa: E402
from augjax import ops  # noqa: E402

N, H, W = 6, 24, 32
BOX_TOL = 1e-4  # pixels: float32 matrices (torchvision: float64); measured <= 5e-6
#: Nearest sampling may pick the other pixel at exact half-pixel ties (float rounding order,
#: see augjax.kernels.warp): two pixels of 768 allowed; measured 0 on these batches.
TIE = 2.0 / (H * W)


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (N, H, W, 3), dtype=np.uint8)
    masks = np.zeros((N, H, W), np.int32)
    boxes = np.zeros((N, 5, 4), np.float32)
    for i in range(N):
        for j in range(5):
            x1, y1 = rng.integers(0, W - 4), rng.integers(0, H - 4)
            x2, y2 = rng.integers(x1 + 2, W + 1), rng.integers(y1 + 2, H + 1)
            masks[i, y1:y2, x1:x2] = (j + 1) * 70000  # ids beyond uint8 and uint16
            boxes[i, j] = (x1, y1, x2, y2)
    keypoints = np.stack([rng.uniform(0, W - 1, (N, 7)), rng.uniform(0, H - 1, (N, 7))],
                         -1).astype(np.float32)
    return images, masks, boxes, keypoints


def _tv(fn, masks, boxes, keypoints, **kwargs):
    """torchvision ``fn`` on one sample's Mask, BoundingBoxes and KeyPoints (of an H x W
    image)."""
    size = (H, W)
    m = fn(tv_tensors.Mask(torch.from_numpy(np.asarray(masks).astype(np.int64))), **kwargs)
    b = fn(tv_tensors.BoundingBoxes(torch.from_numpy(np.asarray(boxes)), format="XYXY",
                                    canvas_size=size), **kwargs)
    k_raw = fn(tv_tensors.KeyPoints(torch.from_numpy(np.asarray(keypoints)), canvas_size=size),
               **kwargs)
    k_edge = fn(tv_tensors.KeyPoints(torch.from_numpy(np.asarray(keypoints) + 0.5),
                                     canvas_size=size), **kwargs)
    # Validity: ClampBoundingBoxes then SanitizeBoundingBoxes (min_size=1). The clamp matters
    # for resized_crop, whose float32 scale leaves x2 = 28.000002 on a 28-wide canvas unclamped
    # (torchvision's own sanitize would then drop a box that spans the whole width).
    valid = F._misc._get_sanitize_bounding_boxes_mask(
        F.clamp_bounding_boxes(b).as_subclass(torch.Tensor),
        format=tv_tensors.BoundingBoxFormat.XYXY,
        canvas_size=b.canvas_size, min_size=1.0, min_area=1.0)
    return (m.numpy(), b.as_subclass(torch.Tensor).numpy(), k_raw.as_subclass(torch.Tensor).numpy(),
            k_edge.as_subclass(torch.Tensor).numpy() - 0.5, valid.numpy(), b.canvas_size)


def _compare(name, out, refs, *, exact_keypoints, mask_tol=0.0):
    """Asserts augjax's targets against torchvision's per sample; returns measured numbers."""
    stats = {"mask_mismatch": 0.0, "box_err": 0.0, "kp_err": 0.0, "kp_raw_err": 0.0}
    for i, (m, b, k_raw, k_conv, valid, size) in enumerate(refs):
        got_m = np.asarray(out["masks"][i])
        mismatch = float(np.mean(got_m != m))
        stats["mask_mismatch"] = max(stats["mask_mismatch"], mismatch)
        assert mismatch <= mask_tol, f"{name} sample {i}: {mismatch:.4f} of mask pixels differ"
        assert got_m.shape == tuple(size)
        box_err = float(np.abs(np.asarray(out["boxes"][i]) - b).max())
        stats["box_err"] = max(stats["box_err"], box_err)
        assert box_err <= BOX_TOL, f"{name} sample {i}: boxes differ by {box_err}"
        np.testing.assert_array_equal(np.asarray(out["boxes_valid"][i]), valid,
                                      err_msg=f"{name} sample {i}: box validity")
        k = np.asarray(out["keypoints"][i])
        ref = k_raw if exact_keypoints else k_conv
        kp_err = float(np.abs(k - ref).max())
        stats["kp_err"] = max(stats["kp_err"], kp_err)
        stats["kp_raw_err"] = max(stats["kp_raw_err"], float(np.abs(k - k_raw).max()))
        assert kp_err <= BOX_TOL, f"{name} sample {i}: keypoints differ by {kp_err}"
        inside = (k[:, 0] >= 0) & (k[:, 0] < size[1]) & (k[:, 1] >= 0) & (k[:, 1] < size[0])
        np.testing.assert_array_equal(np.asarray(out["keypoints_valid"][i]), inside)
    return stats


def _run(op, key=0, **config):
    x, m, b, k = _data(key)
    params = op.sample(x, key=jax.random.key(key), **config)
    out = op.apply(x, params=params, masks=m, boxes=b, keypoints=k, **config)
    called = op(x, key=jax.random.key(key), masks=m, boxes=b, keypoints=k, **config)
    for name in out:  # the call equals apply(sample) for targets too
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(called[name]))
    return x, m, b, k, jax.tree_util.tree_map(np.asarray, params), out


def _sample(params, i):
    return {k: v[i] for k, v in params.items()}


@pytest.mark.fast_tier("horizontal")
@pytest.mark.parametrize("axis", ["horizontal", "vertical"])
def test_flip(axis):
    op = ops.flip.bind(horizontal=axis == "horizontal", vertical=axis == "vertical", p=0.5)
    _, m, b, k, params, out = _run(op, 3)
    fn = F.horizontal_flip if axis == "horizontal" else F.vertical_flip
    refs = [_tv(fn if params[axis][i] else (lambda t: t), m[i], b[i], k[i]) for i in range(N)]
    assert params[axis].any() and not params[axis].all()
    _compare("flip", out, refs, exact_keypoints=True)


def test_rotate():
    _, m, b, k, params, out = _run(ops.rotate.bind(degrees=(-60.0, 60.0)), 1)
    refs = [_tv(F.rotate, m[i], b[i], k[i], angle=float(params["degrees"][i]))
            for i in range(N)]
    stats = _compare("rotate", out, refs, exact_keypoints=False, mask_tol=TIE)
    assert stats["kp_raw_err"] > 0.05  # the documented keypoint convention difference


@pytest.mark.slow
def test_affine():
    op = ops.affine.bind(degrees=40.0, translate=(0.2, 0.2), scale=(0.7, 1.3),
                         shear=(-20.0, 20.0, -10.0, 10.0))
    _, m, b, k, params, out = _run(op, 2)
    refs = [_tv(F.affine, m[i], b[i], k[i], angle=float(params["degrees"][i]),
                translate=[float(v) for v in params["translate"][i]],
                scale=float(params["scale"][i]), shear=[float(v) for v in params["shear"][i]])
            for i in range(N)]
    _compare("affine", out, refs, exact_keypoints=False, mask_tol=TIE)


@pytest.mark.fast_tier("x")
@pytest.mark.parametrize("axis", ["x", "y"])
def test_shear(axis):
    op = getattr(ops, f"shear_{axis}").bind(shear=(-0.3, 0.3))
    _, m, b, k, params, out = _run(op, 4)
    refs = []
    for i in range(N):
        deg = math.degrees(math.atan(float(params["shear"][i])))
        refs.append(_tv(F.affine, m[i], b[i], k[i], angle=0.0, translate=[0.0, 0.0], scale=1.0,
                        shear=[deg, 0.0] if axis == "x" else [0.0, deg], center=[0, 0]))
    _compare(f"shear_{axis}", out, refs, exact_keypoints=False, mask_tol=TIE)


@pytest.mark.fast_tier("x")
@pytest.mark.parametrize("axis", ["x", "y"])
def test_translate(axis):
    op = getattr(ops, f"translate_{axis}").bind(translate=(-0.4, 0.4))
    _, m, b, k, params, out = _run(op, 5)
    refs = []
    for i in range(N):
        px = int(float(params["translate"][i]) * (W if axis == "x" else H))
        refs.append(_tv(F.affine, m[i], b[i], k[i], angle=0.0,
                        translate=[px, 0] if axis == "x" else [0, px], scale=1.0,
                        shear=[0.0, 0.0]))
    # A pure whole-pixel shift: keypoints agree in both conventions.
    _compare(f"translate_{axis}", out, refs, exact_keypoints=True)


@pytest.mark.slow
def test_perspective():
    _, m, b, k, params, out = _run(ops.perspective.bind(distortion_scale=0.6, p=1.0), 6)
    start = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
    refs = [_tv(F.perspective, m[i], b[i], k[i], startpoints=start,
                endpoints=params["endpoints"][i].astype(int).tolist()) for i in range(N)]
    # torchvision solves the homography in float64 least squares, augjax in float32 closed form.
    _compare("perspective", out, refs, exact_keypoints=False, mask_tol=TIE)


@pytest.mark.slow
def test_random_resized_crop():
    op = ops.random_resized_crop.bind(size=(20, 28), scale=(0.2, 1.0))
    _, m, b, k, params, out = _run(op, 7)
    refs = []
    for i in range(N):
        top, left, h, w = (int(v) for v in params["box"][i])
        refs.append(_tv(F.resized_crop, m[i], b[i], k[i], top=top, left=left,
                        height=h, width=w, size=[20, 28]))
    _compare("random_resized_crop", out, refs, exact_keypoints=False)


def test_resize_by_a_full_box_crop():
    """A resize is a resized crop of the whole image (F.resize on the same targets)."""
    x, m, b, k = _data(8)
    params = {"box": np.tile(np.array([0, 0, H, W], np.int32), (N, 1))}
    out = ops.random_resized_crop.apply(x, params=params, masks=m, boxes=b, keypoints=k,
                                        size=(40, 20))
    refs = [_tv(F.resize, m[i], b[i], k[i], size=[40, 20]) for i in range(N)]
    _compare("resize", out, refs, exact_keypoints=False)


def test_random_crop_with_padding():
    op = ops.random_crop.bind(size=(26, 34), padding=4)
    _, m, b, k, params, out = _run(op, 9)
    refs = []
    for i in range(N):
        top, left = (int(v) for v in params["offset"][i])
        refs.append(_tv(F.crop, m[i], b[i], k[i], top=top, left=left, height=26,
                        width=34))
    assert (params["offset"] < 0).any()  # some windows start in the padding
    _compare("random_crop", out, refs, exact_keypoints=True)


@pytest.mark.parametrize("size", [(16, 20), (30, 40)])
def test_center_crop(size):
    _, m, b, k, _, out = _run(ops.center_crop.bind(size=size), 0)
    refs = [_tv(F.center_crop, m[i], b[i], k[i], output_size=list(size))
            for i in range(N)]
    _compare("center_crop", out, refs, exact_keypoints=True)
