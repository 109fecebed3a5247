"""from_torchvision's pairs (augjax/interop/_tv_pairs.py): RandomIoUCrop or RandomZoomOut with the
Resize((h, w)) right after it, ScaleJitter with the detection reference's FixedSizeCrop. The
converted chain replays torchvision's own draws (recorded while torchvision runs the pipeline)
through the converted op's ``apply`` and equals torchvision's output within 1 level (ATen's
uint8 fixed-point resize weights); alone, each is refused naming what must follow it."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

import augjax

H, W = 36, 48


class FixedSizeCrop:
    """torchvision's references/detection/transforms.py FixedSizeCrop (images only): a crop at
    one drawn fraction of the room along both axes, then padding below and to the right."""

    def __init__(self, size, fill=0, padding_mode="constant"):
        self.crop_height, self.crop_width = size
        self.fill, self.padding_mode = fill, padding_mode
        self.drawn = []

    def __call__(self, img):
        _, height, width = F.get_dimensions(img)
        nh, nw = min(height, self.crop_height), min(width, self.crop_width)
        top = left = 0
        if (nh, nw) != (height, width):
            r = torch.rand(1)
            top = int(max(height - self.crop_height, 0) * r)
            left = int(max(width - self.crop_width, 0) * r)
            img = F.crop(img, top, left, nh, nw)
        self.drawn.append((top, left))
        return F.pad(img, [0, 0, self.crop_width - nw, self.crop_height - nh], fill=self.fill)


def _record(transform):
    seen = []
    make = transform.make_params

    def recording(flat_inputs):
        seen.append(make(flat_inputs))
        return seen[-1]

    transform.make_params = recording
    return seen


def _images(seed, n=1):
    return np.random.default_rng(seed).integers(0, 256, (n, H, W, 3), dtype=np.uint8)


def _tv(x):
    return tv_tensors.Image(torch.from_numpy(np.ascontiguousarray(x[0])).permute(2, 0, 1))


def _close(ours, theirs, tol=1):
    """Within ``tol`` levels (uint8; float32: ``tol`` of 1e-5)."""
    ours, theirs = np.asarray(ours)[0], theirs.permute(1, 2, 0).numpy()
    if ours.dtype == np.float32:
        np.testing.assert_allclose(ours, theirs, atol=tol * 1e-5)
        return
    d = np.abs(ours.astype(int) - theirs.astype(int))
    assert d.max() <= tol, (d.max(), (d > 1).sum(), d.shape)


def _one_step(pipeline):
    chain = augjax.from_torchvision(pipeline, dtype="uint8")
    assert len(chain) == 1
    return chain[0]


@pytest.mark.parametrize("seed", range(4))
def test_iou_crop_then_resize_replays_torchvisions_crop(seed):
    crop = v2.RandomIoUCrop(min_scale=0.4, sampler_options=[0.0, 0.3, 0.5, 1.0], trials=30)
    pipeline = v2.Compose([crop, v2.Resize((30, 40))])
    step = _one_step(pipeline)
    assert step.name == "random_iou_crop" and step.kwargs["size"] == (30, 40)
    assert step.kwargs["sampler_options"] == (0.0, 0.3, 0.5, 1.0)
    assert (step.kwargs["min_scale"], step.kwargs["trials"]) == (0.4, 30)
    x = _images(seed)
    boxes = np.array([[[4, 6, 30, 28], [20, 10, 44, 34]]], np.float32)
    seen = _record(crop)
    torch.manual_seed(seed)
    out, _ = pipeline(_tv(x), tv_tensors.BoundingBoxes(torch.from_numpy(boxes[0]),
                                                       format="XYXY", canvas_size=(H, W)))
    p = seen[0]
    box = [p["top"], p["left"], p["height"], p["width"]] if p else [0, 0, H, W]
    ours = step.apply(x, params={"box": np.array([box], np.int32),
                                 "min_iou": np.zeros(1, np.float32),
                                 "boxes_valid": np.ones((1, 2), bool)})
    _close(ours, out)


@pytest.mark.parametrize("seed", range(3))
def test_zoom_out_then_resize_replays_torchvisions_canvas(seed):
    zoom = v2.RandomZoomOut(fill=(120, 60, 200), side_range=(1.0, 3.0), p=1.0)
    pipeline = v2.Compose([zoom, v2.Resize((32, 40))])
    step = _one_step(pipeline)
    assert step.name == "random_zoom_out" and step.kwargs["size"] == (32, 40)
    np.testing.assert_allclose(step.kwargs["fill"], np.array([120, 60, 200]) / 255)
    x = _images(10 + seed)
    seen = _record(zoom)
    torch.manual_seed(seed)
    theirs = pipeline(_tv(x))
    left, top, right, bottom = seen[0]["padding"]
    canvas = np.array([[top, left, top + H + bottom, left + W + right]], np.int32)
    _close(step.apply(x, params={"canvas": canvas}), theirs)


@pytest.mark.parametrize("target", [(48, 48), (40, 56)])
def test_scale_jitter_then_fixed_size_crop_replays_torchvisions_draws(target):
    """A target size that is not square too: torchvision's ScaleJitter reads it as (width,
    height) in its scale, min(target[1] / H, target[0] / W); the conversion keeps that."""
    jitter = v2.ScaleJitter(target_size=target, scale_range=(0.3, 2.0))
    crop = FixedSizeCrop((44, 52), fill=90)
    pipeline = v2.Compose([jitter, crop])
    step = _one_step(pipeline)
    assert step.name == "scale_jitter" and step.kwargs["size"] == (44, 52)
    assert step.kwargs["target_size"] == (target[1], target[0])
    float_crop = FixedSizeCrop((44, 52), fill=90 / 255)
    float_pipeline = v2.Compose([jitter, float_crop])
    float_step = augjax.from_torchvision(float_pipeline, dtype="float32")[0]
    assert float_step.kwargs == step.kwargs  # the fill read in each pipeline's own values
    for seed in range(6):
        x = _images(20 + seed)
        seen = _record(jitter)
        torch.manual_seed(seed)
        theirs = pipeline(_tv(x))
        # the scale augjax draws from the same uniform gives torchvision's resized size
        u = seen[-1]["size"]
        params = {"resized": np.array([u], np.int32),
                  "offset": np.array([crop.drawn[-1]], np.int32)}
        # ATen's uint8 antialiased resize rounds to uint8 between its two passes (a few
        # pixels 2 levels off at a strong shrink); in float32 the two agree to float rounding
        _close(step.apply(x, params=params), theirs, tol=2)
        torch.manual_seed(seed)
        theirs = float_pipeline(tv_tensors.Image(torch.from_numpy(x[0] / np.float32(255))
                                                 .permute(2, 0, 1)))
        assert float_crop.drawn[-1] == crop.drawn[-1]
        _close(float_step.apply(x / np.float32(255), params=params), theirs)
        r = min(step.kwargs["target_size"][0] / H, step.kwargs["target_size"][1] / W)
        lo, hi = int(H * r * 0.3), int(H * r * 2.0) + 1
        assert lo <= u[0] <= hi  # the conversion's target_size bounds torchvision's draw


@pytest.mark.parametrize("pipeline, came", [
    (v2.Compose([v2.RandomIoUCrop(), v2.RandomHorizontalFlip()]), "RandomHorizontalFlip"),
    (v2.RandomIoUCrop(), "nothing"),
    (v2.Compose([v2.RandomZoomOut(), v2.Resize(30)]), "Resize(size=30, max_size=None), a size per image"),
    (v2.Compose([v2.ScaleJitter((64, 64))]), "nothing"),
    (v2.Compose([v2.ScaleJitter((64, 64)), FixedSizeCrop((64, 64), padding_mode="edge")]),
     None),
])
def test_alone_each_is_refused_naming_what_must_follow(pipeline, came):
    with pytest.raises(augjax.UnsupportedTransformError) as info:
        augjax.from_torchvision(pipeline, dtype="uint8")
    message = str(info.value)
    if came is None:
        assert info.value.argument == "padding_mode", message
        return
    assert f"came {came}" in message and "right after it" in message, message
    assert info.value.nearest.endswith("(size=...)"), info.value.nearest


def test_a_pair_inside_a_container_converts_as_a_pair():
    inner = v2.Compose([v2.RandomZoomOut(p=1.0), v2.Resize((20, 20))])
    chain = augjax.from_torchvision(v2.Compose([inner, v2.RandomHorizontalFlip()]),
                                    dtype="uint8")
    assert [s.name for s in chain] == ["random_zoom_out", "flip"]
    assert np.asarray(chain(_images(3, n=4), key=jax.random.key(0))).shape == (4, 20, 20, 3)
    # applied by chance, the pair changes the size for some samples only: torchvision's
    # per-sample shapes cannot be one batch, and the call says so
    maybe = augjax.from_torchvision(v2.RandomApply([inner], p=0.5), dtype="uint8")
    with pytest.raises(augjax.InputError, match="alternatives give different outputs"):
        maybe(_images(3, n=4), key=jax.random.key(0))


@pytest.mark.parametrize("fill, image_value, warns", [
    ({tv_tensors.Mask: 255}, 0, True),  # no Image, no "others": torchvision fills 0
    ({tv_tensors.Image: (120, 60, 200), "others": 0}, (120, 60, 200), False),
    ({tv_tensors.Image: (120, 60, 200), tv_tensors.Mask: 0}, (120, 60, 200), False),
    ({"others": 90}, 90, True),  # "others" fills masks too
])
def test_a_per_type_fill_is_read_as_torchvision_reads_it(fill, image_value, warns):
    """Found by a user trial (PyTorch): a dict's only value was taken for the images whatever
    its key ({Mask: 255} filled the image with 255 where torchvision fills 0), and {Image: mean,
    "others": 0} (torchvision's own SSD preset's kind) was refused."""
    import warnings

    zoom = v2.RandomZoomOut(fill=fill, side_range=(3.0, 3.0), p=1.0)
    x = np.full((1, 16, 16, 3), 7, np.uint8)
    theirs = zoom(_tv(x))
    assert theirs[:, 0, 0].tolist() == list(np.broadcast_to(image_value, 3))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        step = _one_step(v2.Compose([zoom, v2.Resize((48, 48))]))
    said = [str(w.message) for w in seen if issubclass(w.category, augjax.AugjaxWarning)]
    assert bool(said) == warns and all("mask_fill=" in m for m in said), said
    out = np.asarray(step.apply(x, params={"canvas": np.array([[0, 0, 48, 48]], np.int32)}))
    np.testing.assert_array_equal(out[0, -1, -1], np.broadcast_to(image_value, 3))
