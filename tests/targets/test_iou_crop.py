"""random_iou_crop against torchvision v2 RandomIoUCrop (the same draws fed to its own
make_params, and the same crop through F.crop + F.resize), its IoU property on every output, and
the sampler hook that reads targets (``sample_targets``) on arrays, in chains and in DALI."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import augjax
from augjax import compose
from augjax.catalog.detection import IOU_OPTIONS, box_iou, iou_crop_box, random_iou_crop
from augjax.catalog.geometry import flip
from augjax.errors import OpDefinitionError

torch = pytest.importorskip("torch")
tv2 = pytest.importorskip("torchvision.transforms.v2")
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

H, W, T = 48, 64, 40
CONF = dict(min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
            sampler_options=IOU_OPTIONS)


def _boxes(rng, m):
    x1 = rng.uniform(0, W - 8, m)
    y1 = rng.uniform(0, H - 8, m)
    return np.stack([x1, y1, x1 + rng.uniform(4, W / 2, m).clip(max=W - x1),
                     y1 + rng.uniform(4, H / 2, m).clip(max=H - y1)], -1).astype(np.float32)


class _Exhausted(Exception):
    pass


def _torchvision_params(boxes, u_option, u_scale, u_pos, monkeypatch):
    """RandomIoUCrop.make_params with torch's draws replaced by the given uniforms, in the order
    torchvision consumes them (the position pair only after the aspect check passed); raises
    _Exhausted when it would draw a second option (every trial of the first one failed)."""
    t = tv2.RandomIoUCrop(trials=T)
    state = {"next": ("scale", 0), "round": -1}

    def randint(low, high, size):  # a new round
        state["round"] += 1
        state["next"] = ("scale", 0)
        if state["round"] >= len(u_option):
            raise _Exhausted
        return torch.tensor([int(np.floor(np.float32(u_option[state["round"]]) * high))])

    def rand(n):
        kind, i = state["next"]
        k = state["round"]
        if kind == "pos":
            state["next"] = ("scale", i + 1)
            return torch.tensor(u_pos[k, i])
        r = 0.3 + (1.0 - 0.3) * torch.tensor(u_scale[k, i])  # as make_params computes it
        new_w, new_h = int(W * r[0]), int(H * r[1])
        ok = new_h > 0 and 0.5 <= new_w / new_h <= 2.0
        state["next"] = ("pos", i) if ok else ("scale", i + 1)
        return torch.tensor(u_scale[k, i])

    monkeypatch.setattr(torch, "randint", randint)
    monkeypatch.setattr(torch, "rand", rand)
    img = tv_tensors.Image(torch.zeros(3, H, W))
    bb = tv_tensors.BoundingBoxes(torch.tensor(boxes), format="XYXY", canvas_size=(H, W))
    return t.make_params([img, bb])


@pytest.mark.slow
def test_the_box_equals_torchvisions_for_the_same_draws(monkeypatch):
    rng = np.random.default_rng(0)
    seen = {"crop": 0, "none": 0, "exhausted": 0}
    box_of = jax.jit(functools.partial(iou_crop_box, h=H, w=W, **CONF))
    for case in range(60):
        boxes = _boxes(rng, int(rng.integers(1, 5)))
        rounds = int(rng.integers(1, 4))
        u = rng.random((rounds, 1 + 4 * T)).astype(np.float32)
        u_scale = u[:, 1:1 + 2 * T].reshape(rounds, T, 2)
        u_pos = u[:, 1 + 2 * T:].reshape(rounds, T, 2)
        box, within, min_iou = box_of(u[:, 0], u_scale, u_pos, boxes,
                                      np.ones(len(boxes), bool))
        box, within = np.asarray(box), np.asarray(within)
        with monkeypatch.context() as mp:
            try:
                want = _torchvision_params(boxes, u[:, 0], u_scale, u_pos, mp)
            except _Exhausted:  # torchvision would draw again; augjax leaves the image
                seen["exhausted"] += 1
                assert box.tolist() == [0, 0, H, W], case
                continue
        if not want:  # the 1.0 option: no crop
            seen["none"] += 1
            assert box.tolist() == [0, 0, H, W] and float(min_iou) == 1.0, case
            continue
        seen["crop"] += 1
        assert box.tolist() == [want["top"], want["left"], want["height"], want["width"]], case
        np.testing.assert_array_equal(within, want["is_within_crop_area"].numpy())
    assert seen["crop"] >= 30 and seen["none"] >= 3 and seen["exhausted"] >= 1, seen  # every branch was exercised


@pytest.mark.slow
def test_apply_equals_torchvision_crop_then_resize_with_the_same_box():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (6, H, W, 3), dtype=np.uint8)
    boxes = np.stack([_boxes(rng, 3) for _ in range(6)])
    params = random_iou_crop.sample(x, key=jax.random.key(3), size=(32, 40), boxes=boxes)
    out = random_iou_crop.apply(x, params=params, size=(32, 40), boxes=boxes)
    for i in range(6):
        top, left, h, w = np.asarray(params["box"][i]).tolist()
        img = tv_tensors.Image(torch.from_numpy(x[i]).permute(2, 0, 1))
        bb = tv_tensors.BoundingBoxes(torch.from_numpy(boxes[i]), format="XYXY",
                                      canvas_size=(H, W))
        ci, cb = F.crop(img, top, left, h, w), F.crop(bb, top, left, h, w)
        ri, rb = F.resize(ci, [32, 40], antialias=True), F.resize(cb, [32, 40])
        want = ri.permute(1, 2, 0).numpy()
        d = np.abs(np.asarray(out["images"][i]).astype(int) - want.astype(int))
        assert d.max() <= 1, d.max()  # ATen's uint8 fixed-point weights (see crop.py)
        keep = np.asarray(params["boxes_valid"][i])
        clamped = F.clamp_bounding_boxes(rb).numpy()
        np.testing.assert_allclose(np.asarray(out["boxes"][i])[keep], clamped[keep], atol=1e-4)
        # outside the crop: torchvision zeroes the box, augjax flags it invalid
        assert not np.asarray(out["boxes_valid"][i])[~keep].any()


@pytest.mark.slow
def test_every_output_satisfies_the_iou_it_chose():
    rng = np.random.default_rng(2)
    n = 64
    x = np.zeros((n, H, W, 3), np.uint8)
    boxes = np.stack([_boxes(rng, 4) for _ in range(n)])
    valid = rng.random((n, 4)) < 0.8
    valid[:, 0] = True
    iou = jax.jit(box_iou)  # one program for every crop (a jit per crop traced each again)
    for chain in (random_iou_crop.bind(size=(24, 24)),
                  compose(flip.bind(p=0.5), random_iou_crop.bind(size=(24, 24)))):
        key = jax.random.key(int(rng.integers(1 << 30)))
        params = chain.sample(x, key=key, boxes=boxes, boxes_valid=valid)
        p = params[-1] if isinstance(params, tuple) else params
        seen = boxes.copy()
        if isinstance(params, tuple):  # the sampler saw the flipped boxes
            f = np.asarray(params[0]["horizontal"]).astype(bool)
            if f.any():
                seen[f] = np.stack([W - boxes[f][..., 2], boxes[f][..., 1],
                                    W - boxes[f][..., 0], boxes[f][..., 3]], -1)
        crops = 0
        for i in range(n):
            top, left, h, w = np.asarray(p["box"][i]).tolist()
            iou_min = float(p["min_iou"][i])
            if [top, left, h, w] == [0, 0, H, W]:
                continue
            crops += 1
            crop = np.array([left, top, left + w, top + h], np.float32)
            b = seen[i]
            cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
            inside = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h) & valid[i]
            np.testing.assert_array_equal(np.asarray(p["boxes_valid"][i]), inside)
            ious = np.asarray(iou(b, crop))
            assert inside.any() and ious[inside].max() >= iou_min - 1e-6, (i, ious, iou_min)
            assert 0.5 <= w / h <= 2.0 and 0.3 * W - 1 <= w <= W and 0.3 * H - 1 <= h <= H
        assert crops >= n // 3
        out = chain(x, key=key, boxes=boxes, boxes_valid=valid)
        assert not (np.asarray(out["boxes_valid"]) & ~np.asarray(p["boxes_valid"])).any()


@pytest.mark.slow
def test_a_call_equals_sample_then_apply_and_calls_without_valid_boxes():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (4, H, W, 3), dtype=np.uint8)
    boxes = np.stack([_boxes(rng, 2) for _ in range(4)])
    key = jax.random.key(7)
    called = random_iou_crop(x, key=key, size=(H, W), boxes=boxes)
    params = random_iou_crop.sample(x, key=key, size=(H, W), boxes=boxes)
    replay = random_iou_crop.apply(x, params=params, size=(H, W), boxes=boxes)
    for k in called:
        np.testing.assert_array_equal(np.asarray(called[k]), np.asarray(replay[k]))
    # without boxes the whole image is the one box: the crop covers min_iou of the image
    plain = random_iou_crop.sample(x, key=jax.random.key(8), size=(H, W))
    area = np.prod(np.asarray(plain["box"])[:, 2:], axis=1) / (H * W)
    assert (area >= np.asarray(plain["min_iou"]) - 1e-6).all()
    assert plain["boxes_valid"].shape == (4, 0)
    # boxes all invalid: no box centre to hold, the image is left as it is
    none = random_iou_crop(x, key=key, size=(H, W), boxes=boxes,
                           boxes_valid=np.zeros((4, 2), bool))
    np.testing.assert_array_equal(np.asarray(none["images"]), x)


def test_sample_targets_is_declared_and_checked():
    assert random_iou_crop.sample_targets == ("boxes",)
    assert flip.sample_targets == ()

    def kernel(image, params):
        return image

    def hook(key, meta, params, *, targets):
        return {}

    for bad, match in ((("labels",), "distinct names"), ("boxes", "tuple of names"),
                       (("boxes", "boxes"), "distinct")):
        with pytest.raises(OpDefinitionError, match=match):
            augjax.op("x_bad", sample=hook, sample_targets=bad)(kernel)
    with pytest.raises(OpDefinitionError, match="needs a sample= hook"):
        augjax.op("x_bad", sample_targets=("boxes",))(kernel)


def test_a_pack_sampler_reads_boxes_and_masks():
    """A plugin-style op: its sampler gets each sample's (moved) boxes and masks."""

    def hook(key, meta, params, *, targets):
        b, v = targets["boxes"], targets["boxes_valid"]
        area = ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) * v).sum()
        return {"area": area, "ink": (targets["masks"] > 0).sum()}

    def kernel(image, params):
        return image

    seer = augjax.op("x_seer", sample=hook, sample_targets=("boxes", "masks"))(kernel)
    x = np.zeros((2, 8, 10, 3), np.uint8)
    boxes = np.array([[[0, 0, 2, 3], [1, 1, 5, 5]], [[0, 0, 10, 8], [0, 0, 1, 1]]], np.float32)
    masks = np.zeros((2, 8, 10), np.int32)
    masks[0, :2] = 1
    valid = np.array([[True, False], [True, True]])
    p = seer.sample(x, key=jax.random.key(0), boxes=boxes, boxes_valid=valid, masks=masks)
    np.testing.assert_allclose(np.asarray(p["area"]), [6.0, 81.0])
    np.testing.assert_array_equal(np.asarray(p["ink"]), [20, 0])
    # after a flip that always flips: the sampler sees the moved mask
    p2 = compose(flip.bind(p=1.0), seer).sample(x, key=jax.random.key(0), masks=masks,
                                                boxes=boxes)
    np.testing.assert_array_equal(np.asarray(p2[1]["ink"]), [20, 0])


@pytest.mark.slow
def test_dali_cpu_pipeline_equals_the_arrays_path():
    pytest.importorskip("nvidia.dali.plugin.jax")
    from helpers import run_dali, seeds

    rng = np.random.default_rng(4)
    n = 8
    x = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    boxes = np.stack([_boxes(rng, 3) for _ in range(n)])
    s = seeds(n, seed=9)
    chain = compose(flip.bind(p=0.5), random_iou_crop.bind(size=(32, 32)))

    def build(im, bx, sd):
        out = chain(im, boxes=bx, seeds=sd)
        return out["images"], out["boxes"], out["boxes_valid"]

    (img, bx, valid), = run_dali(build, x, boxes, s, device="cpu", layouts=["HWC", None, None])
    ref = chain(x, key=augjax.keys_from_seeds(s), boxes=boxes)
    np.testing.assert_array_equal(img, np.asarray(ref["images"]))
    np.testing.assert_array_equal(bx, np.asarray(ref["boxes"]))
    np.testing.assert_array_equal(valid, np.asarray(ref["boxes_valid"]))
    assert not (np.asarray(ref["boxes_valid"]).all())  # some box lost its centre


def test_inside_a_composite_it_is_refused_not_blind():
    """A composite draws its ops without targets: the op says so instead of cropping blind."""
    from augjax.errors import InputError

    x = np.zeros((2, H, W, 3), np.uint8)
    boxes = np.tile(np.array([[[4, 4, 30, 30]]], np.float32), (2, 1, 1))
    with pytest.raises(InputError, match="random_iou_crop: its sampler reads the sample's "
                                         "boxes .* cannot be drawn inside a composite"):
        augjax.random_apply(random_iou_crop.bind(size=8), p=0.5)(x, key=jax.random.key(0),
                                                                 boxes=boxes)


@pytest.mark.slow
@pytest.mark.parametrize("dtype,size", [("uint8", (24, 32)), ("float32", (60, 40))])
def test_the_cpu_branch_form_gives_every_taps_bits(dtype, size):
    """On the CPU a batch runs image by image (only the taps that weigh something, the width
    pass only over the rows the height taps read): the bits of every tap over every row for
    every sample under ``vmap`` (the op's form off the CPU), for crops from a tenth of the
    image to all of it (shrunk and enlarged)."""
    from augjax.catalog.detection import _iou_all

    rng = np.random.default_rng(5)
    n = 16
    x = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    x = x if dtype == "uint8" else x.astype(np.float32) / 255.0
    tops, lefts = rng.integers(0, H // 2, n), rng.integers(0, W // 2, n)
    heights = rng.integers(5, H + 1 - tops)
    widths = rng.integers(6, W + 1 - lefts)
    box = np.stack([tops, lefts, heights, widths], 1).astype(np.int32)
    conf = dict(size=size, interpolation="bilinear", antialias=True)
    got = np.asarray(random_iou_crop.apply(x, params={
        "box": box, "min_iou": np.zeros(n, np.float32), "boxes_valid": np.ones((n, 0), bool)},
        **conf))
    config = ((H, W), size, "bilinear", True)
    every = jax.jit(jax.vmap(lambda im, b: _iou_all(im, b, None, config)))
    np.testing.assert_array_equal(got, np.asarray(every(x, box)))
    assert (heights < H // 4).any() and (heights > 3 * H // 4).any()  # few rows and most
