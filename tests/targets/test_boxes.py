"""Box formats, the boxes' validity rule (``sanitize=``) and grouped keypoints.

References: torchvision v2 (``convert_bounding_box_format``, ``SanitizeBoundingBoxes``,
``tv_tensors.BoundingBoxes`` in each format, grouped ``KeyPoints``), albumentations'
``min_visibility`` (``BboxParams``), and properties (a call in any format equals the XYXY call
converted; grouped keypoints equal the flat ones).
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms import v2  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

import augjax  # noqa: E402
from augjax import InputError, Sanitize, ops  # noqa: E402
from augjax.chain import compose  # noqa: E402
from helpers import run_dali, seeds  # noqa: E402

N, H, W = 6, 24, 32
FORMATS = ("xyxy", "xywh", "cxcywh")
TOL = 1e-4  # pixels (float32)


def _boxes(seed: int, m: int = 8, small: bool = False) -> np.ndarray:
    """(N, m, 4) XYXY pixel boxes inside an H x W image (some thin or tiny with ``small``)."""
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(0, W - 2, (N, m))
    y1 = rng.uniform(0, H - 2, (N, m))
    top = 9.0 if small else W
    x2 = np.minimum(x1 + rng.uniform(0.2, top, (N, m)), W)
    y2 = np.minimum(y1 + rng.uniform(0.2, top, (N, m)), H)
    return np.stack([x1, y1, x2, y2], -1).astype(np.float32)


def _images(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (N, H, W, 3), dtype=np.uint8)


# -- the converter -------------------------------------------------------------------------------
@pytest.mark.parametrize("src,dst", list(itertools.product(FORMATS, FORMATS)))
def test_convert_boxes_matches_torchvision(src, dst):
    xyxy = torch.from_numpy(_boxes(1).reshape(-1, 4).astype(np.float64))
    given = F.convert_bounding_box_format(xyxy, old_format="XYXY", new_format=src.upper())
    ref = F.convert_bounding_box_format(given, old_format=src.upper(), new_format=dst.upper())
    got = augjax.convert_boxes(given.numpy(), src, dst)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, ref.numpy(), rtol=0, atol=1e-12)
    # torchvision's own spellings: upper case and its BoundingBoxFormat enum
    fmt = tv_tensors.BoundingBoxFormat
    again = augjax.convert_boxes(given.numpy(), fmt[src.upper()], dst.upper())
    np.testing.assert_array_equal(again, got)


@pytest.mark.parametrize("fmt", FORMATS)
def test_convert_boxes_normalised_and_jax(fmt):
    b = _boxes(2).reshape(-1, 4).astype(np.float64)
    ref = F.convert_bounding_box_format(torch.from_numpy(b), old_format="XYXY",
                                        new_format=fmt.upper()).numpy()
    got = augjax.convert_boxes(b, "xyxy", fmt + "n", size=(H, W))
    np.testing.assert_allclose(got, ref / [W, H, W, H], rtol=0, atol=1e-12)
    np.testing.assert_allclose(augjax.convert_boxes(got, fmt + "n", "xyxy", size=(H, W)), b,
                               rtol=0, atol=1e-12)
    jitted = jax.jit(lambda x: augjax.convert_boxes(x, "xyxy", fmt + "n", size=(H, W)))
    out = jitted(jax.numpy.asarray(b, jax.numpy.float32))
    assert isinstance(out, jax.Array) and out.dtype == jax.numpy.float32
    np.testing.assert_allclose(np.asarray(out), ref / [W, H, W, H], atol=1e-6)


# -- boxes_format on calls -----------------------------------------------------------------------
CHAIN = compose(ops.flip, ops.affine.bind(degrees=30.0, translate=(0.2, 0.2), scale=(0.8, 1.3)),
                ops.random_resized_crop.bind(size=(20, 28), scale=(0.3, 1.0)))


@pytest.mark.fast_tier("cxcywhn-None")
@pytest.mark.parametrize("fmt,normalized", [("xywh", False), ("cxcywh", False),
                                            ("xyxy", True), ("cxcywhn", None), ("XYWH", True)])
def test_a_call_in_any_format_equals_the_xyxy_call(fmt, normalized):
    x, b = _images(3), _boxes(3)
    key = jax.random.key(5)
    ref = CHAIN(x, key=key, boxes=b)
    norm = normalized or fmt.endswith("n")
    base = fmt.lower().rstrip("n") if fmt.endswith("n") else fmt.lower()
    name = base + ("n" if norm else "")
    given = augjax.convert_boxes(b, "xyxy", name, size=(H, W))
    out = CHAIN(x, key=key, boxes=given, boxes_format=fmt, boxes_normalized=normalized)
    back = augjax.convert_boxes(np.asarray(out["boxes"]), name, "xyxy", size=(20, 28))
    np.testing.assert_allclose(back, np.asarray(ref["boxes"]), rtol=0, atol=TOL)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]), np.asarray(ref["boxes_valid"]))
    np.testing.assert_array_equal(np.asarray(out["images"]), np.asarray(ref["images"]))


@pytest.mark.fast_tier("CXCYWH")
@pytest.mark.parametrize("fmt", ["XYWH", "CXCYWH"])
def test_boxes_in_a_format_against_torchvision(fmt):
    """ops.affine on XYWH / CXCYWH boxes equals torchvision's F.affine on BoundingBoxes of
    that format (same params), in that format."""
    x, b = _images(4), _boxes(4)
    op = ops.affine.bind(degrees=25.0, translate=(0.1, 0.1), scale=(0.8, 1.2))
    params = op.sample(x, key=jax.random.key(2))
    given = augjax.convert_boxes(b, "xyxy", fmt)
    out = op.apply(x, params=params, boxes=given, boxes_format=fmt)
    p = jax.tree_util.tree_map(np.asarray, params)
    for i in range(N):
        tb = tv_tensors.BoundingBoxes(torch.from_numpy(given[i]), format=fmt, canvas_size=(H, W))
        ref = F.affine(tb, angle=float(p["degrees"][i]),
                       translate=[float(v) for v in p["translate"][i]],
                       scale=float(p["scale"][i]), shear=[float(v) for v in p["shear"][i]])
        assert ref.format.value == fmt
        np.testing.assert_allclose(np.asarray(out["boxes"][i]), ref.numpy(), rtol=0, atol=TOL)


# -- sanitize ------------------------------------------------------------------------------------
CROP = ops.random_crop.bind(size=(14, 20))


def _crop_windows(params):
    return [tuple(int(v) for v in np.asarray(params["offset"])[i]) for i in range(N)]


@pytest.mark.fast_tier("3.0-20.0")
@pytest.mark.parametrize("min_size,min_area", [(1.0, 1.0), (2.5, 1.0), (1.0, 12.0),
                                               (3.0, 20.0)])
def test_sanitize_matches_torchvision(min_size, min_area):
    """After a crop, boxes_valid is torchvision's SanitizeBoundingBoxes(min_size, min_area) on
    torchvision's cropped (and clamped) boxes, and valid_first returns exactly the boxes it
    keeps, in its order."""
    x, b = _images(6), _boxes(6, m=12, small=True)
    params = CROP.sample(x, key=jax.random.key(1))
    rule = Sanitize(min_size=min_size, min_area=min_area, valid_first=True)
    out = CROP.apply(x, params=params, boxes=b, sanitize=rule)
    plain = CROP.apply(x, params=params, boxes=b,
                       sanitize=dict(min_size=min_size, min_area=min_area))
    sanitize = v2.SanitizeBoundingBoxes(min_size=min_size, min_area=min_area, labels_getter=None)
    kept_total = 0
    for i, (top, left) in enumerate(_crop_windows(params)):
        tb = tv_tensors.BoundingBoxes(torch.from_numpy(b[i]), format="XYXY", canvas_size=(H, W))
        cropped = F.clamp_bounding_boxes(F.crop(tb, top=top, left=left, height=14, width=20))
        kept = sanitize(cropped).numpy()
        valid = np.asarray(plain["boxes_valid"][i])
        np.testing.assert_allclose(np.asarray(plain["boxes"][i])[valid], kept, atol=TOL)
        count = int(out["boxes_count"][i])
        assert count == len(kept) == valid.sum()
        np.testing.assert_allclose(np.asarray(out["boxes"][i])[:count], kept, atol=TOL)
        assert np.asarray(out["boxes_valid"][i])[:count].all()
        assert not np.asarray(out["boxes_valid"][i])[count:].any()
        index = np.asarray(out["boxes_index"][i])
        assert sorted(index.tolist()) == list(range(b.shape[1]))  # a permutation ...
        assert list(index[:count]) == sorted(index[:count])  # ... stable among the valid
        np.testing.assert_array_equal(np.asarray(out["boxes"][i]),
                                      np.asarray(plain["boxes"][i])[index])
        kept_total += count
    assert 0 < kept_total < N * b.shape[1]  # the rule cut some boxes and kept some


@pytest.mark.slow
def test_the_default_rule_is_todays_rule_bitwise():
    x, b = _images(7), _boxes(7, small=True)
    key = jax.random.key(3)
    ref = CHAIN(x, key=key, boxes=b)
    for rule in (Sanitize(), dict(min_size=1.0, min_area=1)):
        out = CHAIN(x, key=key, boxes=b, sanitize=rule)
        assert set(out) == set(ref)
        for k in ref:
            np.testing.assert_array_equal(np.asarray(out[k]), np.asarray(ref[k]), err_msg=k)


@pytest.mark.parametrize("min_visibility", [0.3731, 0.6])
def test_min_visibility_matches_albumentations(min_visibility):
    A = pytest.importorskip("albumentations")
    x, b = _images(8), _boxes(8, m=10)
    b = np.round(b)  # pixel-aligned boxes, as albumentations' pascal_voc expects
    b[..., 2:] = np.maximum(b[..., 2:], b[..., :2] + 1)
    params = CROP.sample(x, key=jax.random.key(4))
    out = CROP.apply(x, params=params, boxes=b,
                     sanitize=Sanitize(min_visibility=min_visibility))
    dropped = 0
    for i, (top, left) in enumerate(_crop_windows(params)):
        t = A.Compose([A.Crop(x_min=left, y_min=top, x_max=left + 20, y_max=top + 14)],
                      bbox_params=A.BboxParams(format="pascal_voc", min_visibility=min_visibility,
                                               min_area=1, min_width=1, min_height=1,
                                               label_fields=["ids"]))
        kept = t(image=x[i], bboxes=b[i], ids=np.arange(len(b[i])))["ids"]
        valid = np.asarray(out["boxes_valid"][i])
        np.testing.assert_array_equal(np.flatnonzero(valid), np.asarray(kept, int))
        dropped += len(b[i]) - len(kept)
    assert dropped > 0


def test_min_visibility_multiplies_over_a_chain():
    """Two crops (translations): the fraction left is the final area over the input area."""
    x, b = _images(9), _boxes(9, m=10)
    chain = compose(ops.random_crop.bind(size=(20, 26)), ops.random_crop.bind(size=(14, 18)))
    key = jax.random.key(6)
    p1, p2 = (jax.tree_util.tree_map(np.asarray, p) for p in chain.sample(x, key=key))
    out = chain(x, key=key, boxes=b, sanitize=dict(min_visibility=0.5))
    for i in range(N):
        c = b[i].astype(np.float64)
        for p, (h, w) in ((p1, (20, 26)), (p2, (14, 18))):
            top, left = p["offset"][i]
            c = np.clip(c - [left, top, left, top], 0, [w, h, w, h])
        area = lambda z: (z[:, 2] - z[:, 0]) * (z[:, 3] - z[:, 1])  # noqa: E731
        fraction = area(c) / area(b[i].astype(np.float64))
        wide = (c[:, 2] - c[:, 0] >= 1) & (c[:, 3] - c[:, 1] >= 1) & (area(c) >= 1)
        np.testing.assert_array_equal(np.asarray(out["boxes_valid"][i]),
                                      wide & (fraction >= 0.5))


# -- grouped keypoints ---------------------------------------------------------------------------
@pytest.mark.slow
def test_grouped_keypoints_follow_as_flat_ones_and_leave_invisible():
    rng = np.random.default_rng(10)
    x = _images(10)
    kp = np.stack([rng.uniform(0, W - 1, (N, 3, 5)), rng.uniform(0, H - 1, (N, 3, 5))],
                  -1).astype(np.float32)
    visible = rng.random((N, 3, 5)) > 0.2
    key = jax.random.key(8)
    out = CHAIN(x, key=key, keypoints=kp, keypoints_valid=visible)
    flat = CHAIN(x, key=key, keypoints=kp.reshape(N, 15, 2),
                 keypoints_valid=visible.reshape(N, 15))
    assert out["keypoints"].shape == (N, 3, 5, 2) and out["keypoints_valid"].shape == (N, 3, 5)
    np.testing.assert_array_equal(np.asarray(out["keypoints"]).reshape(N, 15, 2),
                                  np.asarray(flat["keypoints"]))
    got, ok = np.asarray(out["keypoints"]), np.asarray(out["keypoints_valid"])
    inside = (got[..., 0] >= 0) & (got[..., 0] < 28) & (got[..., 1] >= 0) & (got[..., 1] < 20)
    # invisible stays invisible; a visible point that left the image becomes invisible
    np.testing.assert_array_equal(ok, visible & inside)
    assert (visible & ~inside).any()


def test_grouped_keypoints_flip_against_torchvision():
    rng = np.random.default_rng(11)
    x = _images(11)
    kp = rng.uniform(0, W - 1, (N, 2, 4, 2)).astype(np.float32)
    out = ops.flip.apply(x, params={"horizontal": np.ones(N, bool), "vertical": np.zeros(N, bool)},
                         keypoints=kp)
    for i in range(N):
        ref = F.horizontal_flip(tv_tensors.KeyPoints(torch.from_numpy(kp[i]), canvas_size=(H, W)))
        assert tuple(ref.shape) == (2, 4, 2)
        np.testing.assert_allclose(np.asarray(out["keypoints"][i]), ref.numpy(), atol=1e-5)


# -- errors --------------------------------------------------------------------------------------
X, B = _images(12), _boxes(12)


@pytest.mark.parametrize("kwargs,argument,text", [
    (dict(boxes=B, boxes_format="xyxyxy"), "boxes_format", "one of xyxy, xywh, cxcywh"),
    (dict(boxes=B, boxes_format="cxcywhr"), "boxes", "(N, M, 5) CXCYWHR"),
    (dict(boxes=B, boxes_format=3), "boxes_format", "a format name"),
    (dict(boxes=B, boxes_normalized="yes"), "boxes_normalized", "a bool"),
    (dict(boxes=B, boxes_format="xywhn", boxes_normalized=False), "boxes_normalized",
     "names normalised boxes"),
    (dict(boxes=B, sanitize=dict(min_sise=2)), "sanitize", "'min_sise'"),
    (dict(boxes=B, sanitize=dict(min_visibility=1.5)), "sanitize", "in [0, 1]"),
    (dict(boxes=B, sanitize=dict(min_area=-1)), "sanitize", ">= 0"),
    (dict(boxes=B, sanitize=0.5), "sanitize", "augjax.Sanitize"),
    (dict(masks=np.zeros((N, H, W), np.int32), sanitize=Sanitize(min_size=2)), "sanitize",
     "boxes= as well"),
    (dict(boxes=augjax.convert_boxes(B, "xyxy", "xywh") * [1, 1, -1, 1], boxes_format="xywh"),
     "boxes", "XYWH boxes (width and height >= 0)"),
    (dict(keypoints=np.zeros((N, 2, 3, 2), np.float32),
          keypoints_valid=np.ones((N, 6), bool)), "keypoints_valid", "bool (6, 2, 3)"),
    (dict(keypoints=np.zeros((N, 1, 2, 3, 2), np.float32)), "keypoints", "(N, G, K, 2)"),
])
def test_bad_box_options_raise_naming_the_argument(kwargs, argument, text):
    with pytest.raises(InputError) as err:
        ops.flip(X, key=jax.random.key(0), **kwargs)
    assert err.value.argument == argument and err.value.op == "flip"
    assert text in str(err.value)


@pytest.mark.parametrize("call,argument", [
    (lambda: augjax.convert_boxes(B, "xyxy", "xywhn"), "size"),
    (lambda: augjax.convert_boxes(B, "xyxy", "xywhn", size=(0, 3)), "size"),
    (lambda: augjax.convert_boxes(B[..., :3], "xyxy", "xywh"), "boxes"),
    (lambda: augjax.convert_boxes("boxes", "xyxy", "xywh"), "boxes"),
    (lambda: augjax.convert_boxes(B, "yxyx", "xywh"), "from_"),
    (lambda: augjax.convert_boxes(B, "xyxy", None), "to"),
])
def test_convert_boxes_errors(call, argument):
    with pytest.raises(InputError) as err:
        call()
    assert err.value.argument == argument and err.value.op == "convert_boxes"


# -- DALI ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_dali_cpu_pipeline_equals_the_arrays_path():
    pytest.importorskip("nvidia.dali")
    rng = np.random.default_rng(13)
    x, b = _images(13), _boxes(13)
    given = augjax.convert_boxes(b, "xyxy", "cxcywhn", size=(H, W)).astype(np.float32)
    kp = rng.uniform(0, W - 1, (N, 2, 3, 2)).astype(np.float32)
    visible = rng.random((N, 2, 3)) > 0.3
    s = seeds(N, seed=5)
    options = dict(boxes_format="cxcywh", boxes_normalized=True,
                   sanitize=Sanitize(min_size=2.0, min_visibility=0.4, valid_first=True))
    names = ("images", "boxes", "boxes_valid", "boxes_count", "boxes_index", "keypoints",
             "keypoints_valid")

    def build(im, bx, k, v, sd):
        out = CHAIN(im, boxes=bx, keypoints=k, keypoints_valid=v, seeds=sd, **options)
        return tuple(out[name] for name in names)

    got, = run_dali(build, x, given, kp, visible, s, layouts=["HWC", None, None, None, None])
    ref = CHAIN(x, key=augjax.keys_from_seeds(s), boxes=given, keypoints=kp,
                keypoints_valid=visible, **options)
    for name, value in zip(names, got):
        np.testing.assert_array_equal(np.asarray(value), np.asarray(ref[name]), err_msg=name)
    assert 0 < np.asarray(ref["boxes_count"]).sum() < b.shape[0] * b.shape[1]


@pytest.mark.slow
def test_dali_ragged_images_take_grouped_keypoints_and_refuse_other_box_formats():
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import fn, pipeline_def

    rng = np.random.default_rng(14)
    sizes = [(30, 40), (24, 50), (36, 28)]
    images = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]
    points = [rng.uniform(0, min(h, w) - 1, (2, 3, 2)).astype(np.float32) for h, w in sizes]
    boxes = [np.array([[2, 3, 12, 14]], np.float32) for _ in sizes]
    rrc = ops.random_resized_crop.bind(size=(16, 16), scale=(0.3, 1.0))

    def make(grouped: bool, **extra):
        @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=3)
        def pipe():
            x = fn.external_source(source=lambda: images, batch=True, layout="HWC")
            k = fn.external_source(source=lambda: points if grouped else
                                   [p.reshape(6, 2) for p in points], batch=True)
            b = fn.external_source(source=lambda: boxes, batch=True)
            out = rrc(x, seed=5, keypoints=k, **({"boxes": b, **extra} if extra else {}))
            return out["keypoints"], out["keypoints_valid"]
        return pipe()

    results = []
    for grouped in (True, False):
        p = make(grouped)
        p.build()
        results.append([np.array(o.as_tensor()) for o in p.run()])
    (kg, vg), (kf, vf) = results
    assert kg.shape == (3, 2, 3, 2) and vg.shape == (3, 2, 3)
    np.testing.assert_array_equal(kg.reshape(3, 6, 2), kf)
    np.testing.assert_array_equal(vg.reshape(3, 6), vf)
    with pytest.raises(InputError) as err:
        make(True, boxes_format="xywh").build()
    assert err.value.argument == "boxes_format"


@pytest.mark.slow
def test_clips_take_box_formats_and_sanitize():
    """Per-frame boxes of clips (N, T, M, 4) in XYWH, with a dict sanitize, equal the batch
    call frame by frame (a flip that always flips)."""
    x = augjax.Clips(np.stack([_images(15)] * 2, axis=1))  # (N, T, H, W, C)
    b = augjax.convert_boxes(np.stack([_boxes(15, small=True), _boxes(16, small=True)], 1),
                             "xyxy", "xywh")
    op = ops.flip.bind(p=1.0)
    rule = dict(min_size=2.0, valid_first=True)
    out = op(x, key=jax.random.key(0), boxes=b, boxes_format="xywh", sanitize=rule)
    assert out["boxes_count"].shape == (N, 2) and out["boxes_index"].shape == b.shape[:3]
    for t in range(2):
        ref = op(x.array[:, t], key=jax.random.key(0), boxes=b[:, t], boxes_format="xywh",
                 sanitize=rule)
        for name in ("boxes", "boxes_valid", "boxes_count", "boxes_index"):
            np.testing.assert_array_equal(np.asarray(out[name][:, t]), np.asarray(ref[name]))
    assert 0 < np.asarray(out["boxes_count"]).sum() < b.shape[0] * b.shape[1] * b.shape[2]
