"""``examples/recipes_detection.py``: the SSD and LSJ recipes through a DALI CPU pipeline (JPEG
decode included) and on arrays, against their torchvision v2 counterparts on the same JPEGs.

The data: 16 painted 240x320 JPEGs (gray photos, 1 to 3 objects each in pure red, green or blue,
one per class; ``examples/sample_dataset.py``). After a recipe, each object is found again by
its colour in the output image (no target machinery involved): its pixels' extent is the true
box. Measured for augjax and for torchvision (the colour step of SSD is left out there, as it
would change the colours; the full recipe is checked for DALI == arrays and determinism):

- the mean IoU of each kept box with its object's true extent;
- invalid-but-visible: objects with at least ``VISIBLE`` pixels in the output whose box was
  dropped (torchvision) or flagged invalid (augjax), a fraction of the visible objects;
- valid-but-invisible: kept boxes whose object has no pixel left, a fraction of the kept boxes.

Both libraries draw differently (same recipe, other random streams), so the comparison is
statistical: augjax's IoU at least torchvision's minus ``IOU_MARGIN``, its rates at most
torchvision's plus ``RATE_MARGIN`` (each rate's standard error over these ~100 objects is about
0.03). Seen (2026-12-04): LSJ IoU 0.92 (DALI) / 0.90 (arrays) against torchvision's 0.89; SSD
0.91 against 0.94, a gap that comes from the zoom-out: augjax resizes the zoomed-out canvas
back to the input's size before the IoU crop resizes again, so small objects' edges blur
more (without the zoom-out, 96 samples: augjax 0.959, torchvision 0.951; with it: 0.921,
0.937). ``IOU_MARGIN`` covers that documented difference.
"""

from __future__ import annotations

import numpy as np
import pytest

from example_modules import load_example

pytest.importorskip("nvidia.dali.plugin.jax")
pytest.importorskip("PIL")
torch = pytest.importorskip("torch")
pytest.importorskip("torchvision.transforms.v2")

pytestmark = pytest.mark.slow  # two chains compiled per path (about a minute on 2 cores)

B, S, N, HW = 8, 128, 16, (240, 320)
#: pixels of an object's colour that make it visible; below this a dropped box is no error
VISIBLE = 16
IOU_MARGIN = 0.03
RATE_MARGIN = 0.08


@pytest.fixture(scope="module")
def rec():
    return load_example("recipes_detection")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("painted")
    out = load_example("sample_dataset").make_dataset(root, sizes=(HW,) * N, gray=True)
    out["root"] = root
    return out


def _object_pixels(image: np.ndarray, cls: int) -> np.ndarray:
    """Where ``image`` (H, W, 3) uint8 has the colour of class ``cls`` (1 red, 2 green, 3
    blue): that channel above 128 and both others below 100 (gray and the mean fill never)."""
    x = image.astype(np.int32)
    own = x[..., cls - 1]
    others = np.delete(x, cls - 1, axis=-1)
    return (own > 128) & (others.max(axis=-1) < 100)


def _extent(pixels: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(pixels)
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    lt, rb = np.maximum(a[:2], b[:2]), np.minimum(a[2:], b[2:])
    inter = np.prod(np.clip(rb - lt, 0, None))
    area = lambda r: np.prod(np.clip(r[2:] - r[:2], 0, None))  # noqa: E731
    return float(inter / (area(a) + area(b) - inter))


class Score:
    """The three measures over many (image, {class: kept box or None}) samples."""

    def __init__(self):
        self.ious, self.visible, self.invalid_visible = [], 0, 0
        self.kept, self.valid_invisible = 0, 0

    def add(self, image: np.ndarray, objects: dict[int, np.ndarray | None]) -> None:
        for cls, box in objects.items():
            pixels = _object_pixels(image, cls)
            count = int(pixels.sum())
            if count >= VISIBLE:
                self.visible += 1
                self.invalid_visible += box is None
            if box is not None:
                self.kept += 1
                if count == 0:
                    self.valid_invisible += 1
                else:
                    self.ious.append(_iou(np.asarray(box, np.float64), _extent(pixels)))

    def add_batch(self, images, boxes, valid, classes) -> None:
        for i in range(len(images)):
            self.add(images[i], {int(c): (boxes[i, j] if valid[i, j] else None)
                                 for j, c in enumerate(classes[i]) if c >= 0})

    @property
    def iou(self) -> float:
        return float(np.mean(self.ious))

    @property
    def invalid_visible_rate(self) -> float:
        return self.invalid_visible / max(self.visible, 1)

    @property
    def valid_invisible_rate(self) -> float:
        return self.valid_invisible / max(self.kept, 1)

    def __repr__(self) -> str:
        return (f"IoU {self.iou:.3f} over {len(self.ious)} boxes, invalid-but-visible "
                f"{self.invalid_visible}/{self.visible}, valid-but-invisible "
                f"{self.valid_invisible}/{self.kept}")


def _kwargs(name: str) -> dict:
    return {"photometric": False} if name == "ssd" else {}


def _torchvision_score(rec, name, data, seeds) -> Score:
    from torchvision import tv_tensors
    from torchvision.io import decode_jpeg, read_file

    score = Score()
    transform = rec.torchvision_recipe(name, S, **_kwargs(name))
    for seed in seeds:
        torch.manual_seed(seed)
        for path, boxes, classes in zip(data["images"], data["boxes"], data["classes"]):
            image = tv_tensors.Image(decode_jpeg(read_file(path)))
            target = {"boxes": tv_tensors.BoundingBoxes(torch.as_tensor(boxes), format="XYXY",
                                                        canvas_size=HW),
                      "labels": torch.as_tensor(classes)}
            out, t = transform(image, target)
            kept = {int(c): b for b, c in zip(t["boxes"].numpy(), t["labels"].numpy())}
            score.add(out.permute(1, 2, 0).numpy(), {int(c): kept.get(int(c)) for c in classes})
    return score


def _dali_batches(rec, name, root, batches, seed=0, **kwargs):
    p = rec.build_pipeline(root, name, batch_size=B, size=S, max_boxes=3, seed=seed,
                           shuffle=False, **kwargs)
    return [rec.to_numpy(p.run()) for _ in range(batches)]


def _arrays_batches(rec, name, data, keys, **kwargs):
    import jax
    from PIL import Image

    images = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in data["images"]])
    boxes, classes, count = rec.padded(data["boxes"], data["classes"], 3)
    out = []
    for k in keys:
        for s in range(0, N, B):
            sl = slice(s, s + B)
            got = rec.run_arrays(name, images[sl], boxes[sl], count[sl],
                                 jax.random.key(k * 100 + s), S, **kwargs)
            out.append((*got, classes[sl]))
    return out


@pytest.mark.parametrize("name", ["ssd", "lsj"])
def test_boxes_follow_the_painted_objects_as_well_as_torchvisions(rec, data, name):
    tv = _torchvision_score(rec, name, data, seeds=range(4))
    dali, arrays = Score(), Score()
    for batch in _dali_batches(rec, name, data["root"], 4, **_kwargs(name)):
        dali.add_batch(*batch)
    for batch in _arrays_batches(rec, name, data, range(2), **_kwargs(name)):
        arrays.add_batch(*batch)
    print(f"\n{name} torchvision: {tv}\n{name} augjax DALI: {dali}\n{name} augjax arrays: "
          f"{arrays}")
    assert tv.visible > 40 and dali.visible > 40 and arrays.visible > 40
    for ours in (dali, arrays):
        assert ours.iou >= tv.iou - IOU_MARGIN
        assert ours.invalid_visible_rate <= tv.invalid_visible_rate + RATE_MARGIN
        assert ours.valid_invisible_rate <= tv.valid_invisible_rate + RATE_MARGIN


@pytest.mark.parametrize("name", ["ssd", "lsj"])
def test_dali_equals_arrays_and_the_same_seed_gives_the_same_batches(rec, data, name):
    """SSD: DALI == arrays bitwise on the pipeline's seeds; LSJ: the same flags, boxes within
    1e-3 px and the images within DALI's resampling (its window is read by fn.resize +
    fn.slice)."""
    import augjax

    first = _dali_batches(rec, name, data["root"], 1, seed=3, replay=True)[0]
    again = _dali_batches(rec, name, data["root"], 1, seed=3)[0]
    other = _dali_batches(rec, name, data["root"], 1, seed=4)[0]
    images, boxes, valid, classes, seeds, decoded, boxes_in, count = first
    for a, b in zip(first[:4], again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(images, other[0])
    assert images.shape == (B, S, S, 3) and rec.check_batch(images, boxes, valid, classes) == []
    replay = rec.run_arrays(name, decoded, boxes_in, count, augjax.keys_from_seeds(seeds), S)
    if name == "ssd":
        for a, b in zip((images, boxes, valid), replay):
            np.testing.assert_array_equal(a, b)
    else:  # scale_jitter's window in DALI: DALI's fn.resize and fn.slice (the same params;
        # the window's matrix composed in float32 elsewhere: boxes within an ulp or so)
        d = np.abs(images.astype(int) - replay[0].astype(int))
        assert d.mean() < 0.5 and np.percentile(d, 99.9) <= 2, (d.mean(), d.max())
        np.testing.assert_allclose(boxes, replay[1], atol=1e-3)
        np.testing.assert_array_equal(valid, replay[2])
    twice = rec.run_arrays(name, decoded, boxes_in, count, augjax.keys_from_seeds(seeds), S)
    for a, b in zip(replay, twice):
        np.testing.assert_array_equal(a, b)
    assert valid.any() and (count > 0).all()


def test_the_torchvision_fixed_size_crop_is_the_references(rec):
    """The rebuilt FixedSizeCrop on a known draw: crop at int(r * (H - size)) along both axes,
    mean padding below and to the right, boxes moved and clamped."""
    from torchvision import tv_tensors

    crop = rec._fixed_size_crop(8)
    image = tv_tensors.Image(torch.arange(10 * 6 * 3, dtype=torch.uint8).reshape(3, 10, 6))
    boxes = tv_tensors.BoundingBoxes(torch.tensor([[1.0, 1.0, 5.0, 9.0]]), format="XYXY",
                                     canvas_size=(10, 6))
    torch.manual_seed(0)
    r = float(torch.rand(1))
    torch.manual_seed(0)
    out, out_boxes = crop(image, boxes)
    top = int((10 - 8) * r)
    assert out.shape == (3, 8, 8)
    np.testing.assert_array_equal(out[:, :, :6].numpy(), image[:, top:top + 8].numpy())
    for c, m in enumerate(rec.MEAN):
        assert (out[c, :, 6:] == int(m)).all()
    np.testing.assert_allclose(out_boxes.numpy(),
                               [[1.0, max(1.0 - top, 0.0), 5.0, min(9.0 - top, 8.0)]])


def test_lsj_takes_jpegs_of_different_sizes_in_dali(rec, tmp_path):
    """LSJ from JPEGs of 6 sizes (scale_jitter's window for images of different sizes): boxes
    follow the painted objects as torchvision's do on the same JPEGs, and the images equal the
    arrays path on the decoded list within DALI's resampling (fn.resize, antialiased)."""
    import augjax

    sizes = load_example("sample_dataset").SIZES * 2
    data = load_example("sample_dataset").make_dataset(tmp_path, sizes=sizes, gray=True)
    p = rec.build_pipeline(tmp_path, "lsj", batch_size=B, size=S, max_boxes=3, shuffle=False,
                           replay=True)
    ours = Score()
    for it in range(2):
        outs = p.run()
        images, boxes, valid, classes, seeds = (np.stack([np.asarray(o.at(i)) for i in
                                                          range(len(o))]) for o in outs[:5])
        decoded = [np.asarray(outs[5].at(i)) for i in range(B)]
        assert len({d.shape for d in decoded}) > 3 and images.shape == (B, S, S, 3)
        assert rec.check_batch(images, boxes, valid, classes) == []
        ours.add_batch(images, boxes, valid, classes)
        if it == 0:
            replay = np.asarray(rec.lsj(S)(decoded, key=augjax.keys_from_seeds(seeds)))
            d = np.abs(replay.astype(int) - images.astype(int))
            assert d.mean() < 0.5 and np.percentile(d, 99.9) <= 2, (d.mean(), d.max())
    data_tv = {k: data[k][:2 * B] for k in ("images", "boxes", "classes")}
    tv = Score()
    from torchvision import tv_tensors
    from torchvision.io import decode_jpeg, read_file

    transform = rec.torchvision_lsj(S)
    torch.manual_seed(0)
    for path, bx, cls in zip(data_tv["images"], data_tv["boxes"], data_tv["classes"]):
        image = tv_tensors.Image(decode_jpeg(read_file(path)))
        target = {"boxes": tv_tensors.BoundingBoxes(torch.as_tensor(bx), format="XYXY",
                                                    canvas_size=tuple(image.shape[-2:])),
                  "labels": torch.as_tensor(cls)}
        out, t = transform(image, target)
        kept = {int(c): b for b, c in zip(t["boxes"].numpy(), t["labels"].numpy())}
        tv.add(out.permute(1, 2, 0).numpy(), {int(c): kept.get(int(c)) for c in cls})
    print(f"\nlsj, 6 sizes: torchvision {tv}\naugjax DALI {ours}")
    assert ours.visible > 15 and tv.visible > 15
    assert ours.iou >= tv.iou - IOU_MARGIN
    assert ours.invalid_visible_rate <= tv.invalid_visible_rate + RATE_MARGIN
    assert ours.valid_invisible_rate <= tv.valid_invisible_rate + RATE_MARGIN
