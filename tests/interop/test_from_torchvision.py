"""augjax.from_torchvision against torchvision v2 on CPU tensors.

Deterministic transforms: the converted chain's output equals torchvision's within 1 level
(uint8) or 1e-5 (float). Random transforms: torchvision's own draws (its ``make_params``,
recorded while torchvision runs) are replayed through the converted op's ``apply``, and the
outputs agree within 1 level; RandAugment and TrivialAugmentWide replay torchvision's chosen ops,
signs and magnitude bins through the converted policy's ``apply``; AutoAugment and AugMix convert
to the same configuration as augjax's own policy (tested against torchvision in
tests/compose/test_policies.py). The errors name the transform, the setting and the nearest op.
"""

from __future__ import annotations

import subprocess
import sys

import jax
import numpy as np
import pytest
import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

import augjax

H, W = 40, 52


def _image(seed=0, n=1):
    return np.random.default_rng(seed).integers(0, 256, (n, H, W, 3), dtype=np.uint8)


def _tv(x):
    return torch.from_numpy(np.ascontiguousarray(x[0])).permute(2, 0, 1).contiguous()


def _np(t):
    return t.permute(1, 2, 0).numpy()


def _step(transform, **kw):
    kw.setdefault("dtype", "uint8")  # the tests' images
    chain = augjax.from_torchvision(transform, **kw)
    assert isinstance(chain, augjax.Chain) and len(chain) == 1
    return chain[0]


def _run_recording(transform, *inputs, seed=0):
    """torchvision's output and the params its make_params drew for it."""
    seen = []
    make = transform.make_params

    def recording(flat_inputs):
        params = make(flat_inputs)
        seen.append(params)
        return params

    transform.make_params = recording
    torch.manual_seed(seed)
    out = transform(*inputs)
    assert len(seen) == 1
    return out, seen[0]


def _close(ours, theirs, tol=1):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64)).max()
    assert diff <= tol, diff


# --- deterministic -------------------------------------------------------------------------

DETERMINISTIC = {
    "CenterCrop": v2.CenterCrop((24, 30)),
    "Resize-short-side": v2.Resize(30),
    "Resize-hw-nearest": v2.Resize((20, 64), interpolation=v2.InterpolationMode.NEAREST),
    "Resize-max-size": v2.Resize(30, max_size=36, antialias=False),
    "Grayscale": v2.Grayscale(3),
    "RandomHorizontalFlip": v2.RandomHorizontalFlip(p=1.0),
    "RandomVerticalFlip": v2.RandomVerticalFlip(p=1.0),
    "RandomInvert": v2.RandomInvert(p=1.0),
    "RandomPosterize": v2.RandomPosterize(3, p=1.0),
    "RandomSolarize": v2.RandomSolarize(100, p=1.0),
    "RandomAutocontrast": v2.RandomAutocontrast(p=1.0),
    "RandomEqualize": v2.RandomEqualize(p=1.0),
    "Compose-ToImage-ToDtype": v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)]),
    "Compose-ToImage-RGB-Flip": v2.Compose([v2.ToImage(), v2.RGB(),
                                            v2.RandomHorizontalFlip(p=1.0)]),
    "ToDtype-Normalize": v2.Compose([v2.ToDtype(torch.float32, scale=True),
                                     v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]),
    "ToDtype-there-and-back": v2.Compose([v2.ToDtype(torch.float32, scale=True),
                                          v2.ToDtype(torch.uint8, scale=True)]),
}


@pytest.mark.fast_tier("Compose-ToImage-ToDtype")
@pytest.mark.parametrize("name", list(DETERMINISTIC))
def test_deterministic_transforms_match_torchvision(name):
    transform = DETERMINISTIC[name]
    x = _image(1)
    theirs = _np(transform(_tv(x)))
    ours = np.asarray(augjax.from_torchvision(transform, dtype="uint8")(
        x, key=augjax.keys_from_seeds(np.zeros((1, 2), np.int32))))[0]
    _close(ours, theirs, tol=1e-5 if theirs.dtype == np.float32 else 1)


def test_to_tensor_is_the_float_conversion_of_a_decoded_image():
    from PIL import Image

    x = _image(2)
    theirs = v2.ToTensor()(Image.fromarray(x[0])).permute(1, 2, 0).numpy()  # PIL -> float CHW
    ours = np.asarray(augjax.from_torchvision(v2.Compose([v2.ToTensor()]))(x))[0]
    _close(ours, theirs, tol=1e-6)


def test_resize_without_antialias_on_uint8_photos_is_within_two_levels():
    """``Resize(antialias=False)`` on uint8: within 2 levels of torchvision, 2 only on a small
    fraction of values (the statement in docs/MIGRATING.md; noise stays within 1 above)."""
    import augjax.data

    photos = augjax.data.sample_images(64)  # (8, 64, 64, 3) uint8 photos
    for size in ((48, 40), 80):
        t = v2.Resize(size, antialias=False)
        ours = np.asarray(augjax.from_torchvision(t, dtype="uint8")(photos)).astype(int)
        theirs = np.stack([_np(t(_tv(im[None]))) for im in photos]).astype(int)
        diff = np.abs(ours - theirs)
        assert diff.max() <= 2 and (diff > 1).mean() < 1e-3, (size, diff.max())


# --- random: torchvision's draws replayed through apply ---------------------------------------


def _replay(transform, to_params, *, seed=0, tol=1, **kw):
    x = _image(seed)
    theirs, drawn = _run_recording(transform, _tv(x), seed=seed)
    ours = _step(transform, **kw).apply(x, params=to_params(drawn, x))
    _close(np.asarray(ours)[0], _np(theirs), tol)


@pytest.mark.parametrize("seed", range(3))
def test_random_resized_crop(seed):
    _replay(v2.RandomResizedCrop((24, 20), scale=(0.2, 1.0)),
            lambda d, x: {"box": np.array([[d["top"], d["left"], d["height"], d["width"]]])},
            seed=seed)


@pytest.mark.parametrize("antialias", [True, False])
def test_bicubic_random_resized_crop_and_resize(antialias):
    """``interpolation=BICUBIC`` converts for the two resizes (DINO's ``RandomResizedCrop(...,
    interpolation=BICUBIC)``): torchvision's draws replayed, then its own ``Resize``; within 1
    level (measured: 1 on these images, ATen's 16-bit fixed-point weights)."""
    bicubic = v2.InterpolationMode.BICUBIC
    for seed in range(3):
        t = v2.RandomResizedCrop(32, scale=(0.2, 1.0), interpolation=bicubic,
                                 antialias=antialias)
        step = _step(t)
        assert step.name == "random_resized_crop" and step.kwargs["interpolation"] == "bicubic"
        _replay(t, lambda d, x: {"box": np.array([[d["top"], d["left"], d["height"],
                                                   d["width"]]])}, seed=seed)
    x = _image(3)
    for t in (v2.Resize(24, interpolation=bicubic, antialias=antialias),
              v2.Resize((30, 60), interpolation=bicubic, antialias=antialias)):
        step = _step(t)
        assert step.name == "resize" and step.kwargs["interpolation"] == "bicubic"
        _close(np.asarray(augjax.from_torchvision(t, dtype="uint8")(x))[0], _np(t(_tv(x))))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "symmetric"])
def test_random_crop_with_padding(seed, mode):
    t = v2.RandomCrop((36, 50), padding=(3, 5, 2, 1), fill=7, padding_mode=mode)

    def params(d, x):  # torchvision: a window of the padded image; augjax: offset in the input
        left, top = d["padding"][0], d["padding"][1]
        return {"offset": np.array([[d["top"] - top, d["left"] - left]])}

    _replay(t, params, seed=seed)


@pytest.mark.parametrize("seed", range(3))
def test_random_rotation(seed):
    _replay(v2.RandomRotation(40, interpolation=v2.InterpolationMode.BILINEAR, fill=30),
            lambda d, x: {"degrees": np.array([d["angle"]], np.float32)}, seed=seed)


@pytest.mark.parametrize("seed", range(3))
def test_random_affine(seed):
    t = v2.RandomAffine(20, translate=(0.2, 0.1), scale=(0.8, 1.2), shear=(-10, 10, -5, 5),
                        fill=(10, 20, 30))

    def params(d, x):
        return {"degrees": np.array([d["angle"]], np.float32),
                "translate": np.array([d["translate"]], np.float32),
                "scale": np.array([d["scale"]], np.float32),
                "shear": np.array([d["shear"]], np.float32)}

    _replay(t, params, seed=seed)


def _perspective_endpoints(seed, distortion_scale):
    """torchvision RandomPerspective.make_params's eight draws, in its order."""
    torch.manual_seed(seed)
    torch.rand(1)  # the p coin of _RandomApplyTransform.forward
    hh, hw = H // 2, W // 2
    bh, bw = int(distortion_scale * hh) + 1, int(distortion_scale * hw) + 1

    def r(lo, hi):
        return int(torch.randint(lo, hi, size=(1,)))

    tl = [r(0, bw), r(0, bh)]
    tr = [r(W - bw, W), r(0, bh)]
    br = [r(W - bw, W), r(H - bh, H)]
    bl = [r(0, bw), r(H - bh, H)]
    return np.array([[tl, tr, br, bl]], np.float32)


@pytest.mark.parametrize("seed", range(3))
def test_random_perspective(seed):
    t = v2.RandomPerspective(0.6, p=1.0)
    ends = _perspective_endpoints(seed, 0.6)
    x = _image(seed)
    theirs, _ = _run_recording(t, _tv(x), seed=seed)
    ours = _step(t).apply(x, params={"applied": np.array([True]), "endpoints": ends})
    _close(np.asarray(ours)[0], _np(theirs))


@pytest.mark.parametrize("seed", range(4))
def test_color_jitter(seed):
    t = v2.ColorJitter(brightness=0.4, contrast=(0.5, 1.5), saturation=0.4, hue=0.2)

    def params(d, x):
        return {"order": np.array([d["fn_idx"]], np.int32),
                "brightness": np.array([d["brightness_factor"]], np.float32),
                "contrast": np.array([d["contrast_factor"]], np.float32),
                "saturation": np.array([d["saturation_factor"]], np.float32),
                "hue": np.array([d["hue_factor"]], np.float32)}

    _replay(t, params, seed=seed)


def test_color_jitter_with_parts_off():
    t = v2.ColorJitter(saturation=0.5)
    _replay(t, lambda d, x: {"order": np.array([d["fn_idx"]], np.int32),
                             "saturation": np.array([d["saturation_factor"]], np.float32)})


def test_random_grayscale_applied():
    x = _image(2)
    ours = _step(v2.RandomGrayscale(p=1.0)).apply(x, params={"applied": np.array([True])})
    _close(np.asarray(ours)[0], _np(F.rgb_to_grayscale(_tv(x), num_output_channels=3)))


@pytest.mark.parametrize("seed", range(3))
def test_gaussian_blur(seed):
    t = v2.GaussianBlur((5, 7), sigma=(0.3, 2.5))
    # torchvision draws one sigma for both axes
    _replay(t, lambda d, x: {"sigma": np.array([d["sigma"][0]], np.float32)}, seed=seed)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("value", [0, (200, 10, 60)])
def test_random_erasing(seed, value):
    t = v2.RandomErasing(p=1.0, scale=(0.05, 0.3), ratio=(0.5, 2.0), value=value)

    def params(d, x):
        found = not (d["h"] == H and d["w"] == W and d["i"] == 0 and d["j"] == 0)
        return {"applied": np.array([True]), "count": np.array([1], np.int32),
                "found": np.array([[found]]),
                "box": np.array([[[d["i"], d["j"], d["h"], d["w"]]]], np.int32)}

    _replay(t, params, seed=seed)


def test_random_erasing_random_after_normalize_writes_standard_normal_values():
    """torchvision's reference order (ToDtype, Normalize, RandomErasing(value="random")) writes
    N(0, 1) standardised values where it erases; the conversion erases just before the
    Normalize with its mean and std, so the erased values are N(0, 1) after it (clipped where
    mean + std * z leaves [0, 1]: about 2-3%)."""
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    t = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std),
                    v2.RandomErasing(p=1.0, scale=(0.3, 0.5), value="random")])
    chain = augjax.from_torchvision(t, dtype="uint8")
    assert [s.name for s in chain] == ["to_float", "random_erasing", "normalize"]
    assert chain[1].kwargs["mean"] == pytest.approx(mean)
    x = np.full((16, H, W, 3), 128, np.uint8)
    out = np.asarray(chain(x, key=jax.random.key(0)))
    kept = (128 / 255 - np.array(mean)) / np.array(std)
    torch.manual_seed(0)
    theirs = np.stack([_np(t(_tv(x[i:i + 1]))) for i in range(16)])
    for img in (out, theirs):
        erased = img[~np.isclose(img, kept, atol=1e-5).all(axis=-1)]
        assert erased.size > 16 * H * W * 0.2
        assert abs(erased.mean()) < 0.05 and abs(erased.std() - 1.0) < 0.05  # N(0, 1)


@pytest.mark.parametrize("value", [-1.0, (-1.0, 0.0, 1.5)])
def test_random_erasing_a_standardised_value_after_normalize(value):
    """RandomErasing(value=-1) after Normalize writes -1 into the standardised image (torchvision
    accepts it; augjax's fill is in 0..1, where it raised a raw ParamError): converted to the
    same erasing just before the Normalize with value * std + mean, so the erased pixels are
    the value after it (to float rounding) and the others torchvision's Normalize."""
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    t = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std),
                    v2.RandomErasing(p=1.0, scale=(0.2, 0.3), value=value)])
    chain = augjax.from_torchvision(t, dtype="uint8")
    assert [s.name for s in chain] == ["to_float", "random_erasing", "normalize"]
    x = np.full((6, H, W, 3), 128, np.uint8)
    out = np.asarray(chain(x, key=jax.random.key(1)))
    torch.manual_seed(0)
    theirs = np.stack([_np(t(_tv(x[i:i + 1]))) for i in range(6)])
    kept = (128 / 255 - np.array(mean)) / np.array(std)
    want = np.broadcast_to(np.asarray(value, np.float64), (3,))
    for img in (out, theirs):
        is_kept = np.isclose(img, kept, atol=1e-5).all(axis=-1)
        assert np.isclose(img[~is_kept], want, atol=1e-5).all()
        assert 0.2 <= (~is_kept).mean() <= 0.3 + 1e-9


@pytest.mark.parametrize("transforms, match", [
    ([v2.ToDtype(torch.float32, scale=True), v2.RandomErasing(value=-1.0)],
     "no Normalize comes right before it"),
    ([v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5], [0.5]),
      v2.RandomErasing(value=10.0)], r"is \(5.5,\) before it, outside \[0, 1\]"),
], ids=["no-normalize", "out-of-range-before"])
def test_random_erasing_a_value_outside_0_1_elsewhere_is_refused(transforms, match):
    with pytest.raises(augjax.UnsupportedTransformError, match=match) as info:
        augjax.from_torchvision(v2.Compose(transforms), dtype="uint8")
    assert info.value.argument == "value"


@pytest.mark.parametrize("transforms", [
    [v2.RandomErasing(value="random")],
    [v2.Normalize([0.5], [0.5]), v2.RandomHorizontalFlip(), v2.RandomErasing(value="random")],
    [v2.Normalize([0.5], [0.5]), v2.RandomApply([v2.RandomErasing(value="random")])],
], ids=["no-normalize", "not-right-after", "nested"])
def test_random_erasing_random_elsewhere_is_refused(transforms):
    with pytest.raises(augjax.UnsupportedTransformError, match="Normalize") as info:
        augjax.from_torchvision(v2.Compose(transforms), dtype="float32")
    assert info.value.argument == "value"


@pytest.mark.parametrize("which", ["MixUp", "CutMix"])
def test_mixup_and_cutmix_with_torchvisions_draws_and_partners(which):
    n, classes = 4, 5
    x = _image(3, n)
    if which == "MixUp":  # torchvision's MixUp blends float images only
        x = x.astype(np.float32) / 255
    labels = np.array([0, 3, 1, 4])
    t = getattr(v2, which)(alpha=0.7, num_classes=classes)
    batch = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()
    (images, soft), drawn = _run_recording(t, batch, torch.from_numpy(labels), seed=1)
    perm = np.roll(np.arange(n), 1)  # torchvision's partner of i is i - 1
    if which == "MixUp":
        params = {"lam": np.full(n, drawn["lam"], np.float32), "use_cutmix": np.zeros(n, bool),
                  "box": np.zeros((n, 4), np.int32), "perm": perm.astype(np.int32)}
    else:
        x1, y1, x2, y2 = (int(v) for v in drawn["box"])
        params = {"lam": np.full(n, drawn["lam_adjusted"], np.float32),
                  "use_cutmix": np.ones(n, bool),
                  "box": np.tile(np.array([y1, x1, y2 - y1, x2 - x1], np.int32), (n, 1)),
                  "perm": perm.astype(np.int32)}
    out, ours_soft = _step(t).apply(x, labels, params=params)
    _close(np.asarray(out), images.permute(0, 2, 3, 1).numpy())
    np.testing.assert_allclose(np.asarray(ours_soft), soft.numpy(), atol=1e-6)


def test_random_apply_and_random_choice_keep_their_structure():
    chain = augjax.from_torchvision(v2.Compose([
        v2.RandomApply([v2.ColorJitter(0.3), v2.RandomInvert(p=1.0)], p=0.3),
        v2.RandomChoice([v2.RandomHorizontalFlip(p=1.0), v2.RandomVerticalFlip(p=1.0)],
                        p=[0.2, 0.8]),
    ]))
    first, second = chain
    assert first.p == pytest.approx(0.3) and len(first.op) == 2
    assert tuple(second.weights) == pytest.approx((0.2, 0.8))
    x = _image(4)
    flipped = np.asarray(second.apply(x, params=second.sample(x, key=augjax.keys_from_seeds(
        np.array([[0, 9]], np.int32)))))[0]
    assert np.array_equal(flipped, x[0, :, ::-1]) or np.array_equal(flipped, x[0, ::-1])


def test_random_order_applies_every_transform_in_a_drawn_order():
    """RandomOrder is random_order: each sample equals torchvision's transforms applied in the
    order augjax drew for it (all six orders of three that do not commute)."""
    transforms = [v2.RandomInvert(p=1.0), v2.RandomPosterize(3, p=1.0),
                  v2.RandomSolarize(100, p=1.0)]
    chain = augjax.from_torchvision(v2.Compose([v2.RandomOrder(transforms)]), dtype="uint8")
    step = chain[0]
    assert isinstance(step, augjax.chain.RandomOrder) and len(step.ops) == 3
    x = _image(3, 48)
    params = step.sample(x, key=jax.random.key(1))
    ours = np.asarray(step.apply(x, params=params))
    orders = np.asarray(params["order"])
    assert len({tuple(o) for o in orders}) == 6
    for i, order in enumerate(orders):
        theirs = v2.Compose([transforms[j] for j in order])(_tv(x[i:i + 1]))
        np.testing.assert_array_equal(ours[i], _np(theirs))


def test_to_dtype_without_scale_then_normalize_matches_torchvision():
    """ToDtype(float32, scale=False) keeps 0..255 in floats: with the Normalize after it (its
    mean and std in 0..255) the output is torchvision's to float rounding, through crops and
    flips between them; ending unscaled gives torchvision's 0..255 floats."""
    mean, std = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
    x = _image(4)
    key = augjax.keys_from_seeds(np.zeros((1, 2), np.int32))
    for tail in ([v2.RandomHorizontalFlip(p=1.0), v2.CenterCrop(24), v2.Normalize(mean, std)],
                 [v2.Normalize(mean, std)], [v2.CenterCrop(24)], []):
        transform = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32), *tail])
        theirs = _np(transform(_tv(x)))
        ours = np.asarray(augjax.from_torchvision(transform, dtype="uint8")(x, key=key))[0]
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-4)
    # float input: ToDtype(float32, scale=False) does nothing, as torchvision
    f = x.astype(np.float32) / 255
    chain = augjax.from_torchvision(v2.Compose([v2.ToDtype(torch.float32), v2.CenterCrop(24)]),
                                    dtype="float32")
    np.testing.assert_array_equal(np.asarray(chain(f, key=key))[0],
                                  _np(v2.CenterCrop(24)(torch.from_numpy(f[0]).permute(2, 0, 1))))


@pytest.mark.parametrize("transforms, match", [
    ([v2.ToDtype(torch.float32), v2.ColorJitter(0.4)],
     "ColorJitter: it follows ToDtype.*scale=False"),
    ([v2.RandomApply([v2.ToDtype(torch.float32)], p=0.5), v2.Normalize([0.5], [0.5])],
     "RandomApply: a ToDtype.*inside a random branch"),
    ([v2.ToDtype(torch.uint8)], "ToDtype: scale=False to uint8"),
], ids=["reads-values", "by-chance", "to-uint8"])
def test_to_dtype_without_scale_refusals_name_the_transform(transforms, match):
    with pytest.raises(augjax.UnsupportedTransformError, match=match) as info:
        augjax.from_torchvision(v2.Compose(transforms), dtype="uint8")
    assert info.value.argument == "scale"
    with pytest.raises(augjax.UnsupportedTransformError, match="dtype='uint8'"):
        augjax.from_torchvision(v2.Compose([v2.ToDtype(torch.float32)]))


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("transform", [
    v2.Pad(3), v2.Pad([3, 1]), v2.Pad([1, 2, 3, 4], fill=51),
    v2.Pad([2, 5], padding_mode="reflect"), v2.Pad(4, padding_mode="edge"),
    v2.Pad(2, padding_mode="symmetric"),
], ids=["one", "two", "four-fill", "reflect", "edge", "symmetric"])
def test_pad_converts_to_pad(transform, dtype):
    x = _image(7, 2)
    if dtype == "float32":
        x = x.astype(np.float32) / 255
        if transform.fill:  # a float image's fill is read in 0..1
            transform = v2.Pad(transform.padding, fill=0.2, padding_mode=transform.padding_mode)
    ours = np.asarray(augjax.from_torchvision(transform, dtype=dtype)(x, key=jax.random.key(0)))
    theirs = transform(torch.from_numpy(x).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_box_sanitizing_and_clamping_convert_to_the_calls_rule():
    """SanitizeBoundingBoxes with torchvision's defaults is augjax's default rule (the boxes it
    would drop come back flagged in boxes_valid), ClampBoundingBoxes what every geometric op
    does; other limits are refused, naming the call's sanitize=."""
    chain = augjax.from_torchvision(v2.Compose([
        v2.RandomHorizontalFlip(p=1.0), v2.ClampBoundingBoxes(), v2.SanitizeBoundingBoxes()]))
    assert [s.name for s in chain] == ["flip"]
    x = _image(1, 1)
    boxes = np.array([[[1.0, 2.0, 30.0, 20.0], [5.0, 5.0, 5.5, 9.0]]], np.float32)
    out = chain(x, key=jax.random.key(0), boxes=boxes)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]), [[True, False]])  # 0.5 wide
    with pytest.raises(augjax.UnsupportedTransformError,
                       match=r"sanitize=augjax\.Sanitize\(min_size=4, min_area=1\)"):
        augjax.from_torchvision(v2.SanitizeBoundingBoxes(min_size=4))


def test_normalize_on_uint8_is_refused_as_torchvision_raises():
    with pytest.raises(augjax.UnsupportedTransformError, match="Input tensor should be a float"):
        augjax.from_torchvision(v2.Normalize([0.5] * 3, [0.2] * 3), dtype="uint8")
    with pytest.raises(TypeError, match="float"):
        v2.Normalize([0.5] * 3, [0.2] * 3)(torch.zeros(3, 4, 4, dtype=torch.uint8))
    assert len(augjax.from_torchvision(v2.Normalize([0.5] * 3, [0.2] * 3), dtype="float32")) == 1


# --- policies: the same configuration as augjax's own (tested against torchvision in
# tests/compose/test_policies.py)

@pytest.mark.fast_tier("AutoAugment")
@pytest.mark.parametrize("transform, native", [
    (v2.RandAugment(num_ops=3, magnitude=7, num_magnitude_bins=21),
     augjax.rand_augment(n=3, m=7, num_magnitude_bins=21, style="torchvision",
                         interpolation="nearest")),
    (v2.TrivialAugmentWide(num_magnitude_bins=15, interpolation=v2.InterpolationMode.BILINEAR),
     augjax.trivial_augment_wide(num_magnitude_bins=15, interpolation="bilinear")),
    (v2.AutoAugment(v2.AutoAugmentPolicy.SVHN),
     augjax.auto_augment("svhn", interpolation="nearest")),
    (v2.AugMix(severity=2, mixture_width=4, chain_depth=2, alpha=0.5, all_ops=False),
     augjax.augmix(severity=2, width=4, depth=2, alpha=0.5, all_ops=False,
                   interpolation="bilinear")),
], ids=["RandAugment", "TrivialAugmentWide", "AutoAugment", "AugMix"])
def test_policies_convert_to_augjax_policies(transform, native):
    chain = augjax.from_torchvision(transform)
    assert augjax.to_dict(chain[0]) == augjax.to_dict(native)
    x = _image(5, 4)
    key = augjax.keys_from_seeds(augjax.index_seeds(np.arange(4)))
    np.testing.assert_array_equal(np.asarray(chain(x, key=key)),
                                  np.asarray(augjax.compose(native)(x, key=key)))


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("transform, argument, nearest", [
    (v2.RandomRotation(10, expand=True), "expand", "rotate"),
    (v2.RandomAffine(10, center=(3, 4)), "center", "affine"),
    (v2.RandomRotation(10, interpolation=v2.InterpolationMode.BICUBIC), "interpolation",
     "rotate"),
    (v2.Grayscale(1), "num_output_channels", "grayscale"),
    (v2.ToDtype(torch.uint8), "scale", "to_uint8"),
    (v2.ElasticTransform(), None, "elastic_transform (augjax-contrib)"),
    (v2.RandomZoomOut(), None, "random_zoom_out(size=...)"),
    (v2.CutMix(), "num_classes", "cutmix"),
])
def test_unsupported_transforms_name_themselves_and_the_nearest_op(transform, argument, nearest):
    with pytest.raises(augjax.UnsupportedTransformError) as info:
        augjax.from_torchvision(v2.Compose([v2.RandomHorizontalFlip(), transform]))
    err = info.value
    assert err.transform == type(transform).__name__ and err.argument == argument
    assert err.nearest == nearest and type(transform).__name__ in str(err) and nearest in str(err)


def test_converting_imports_no_torch():
    code = ("import sys, augjax, augjax.interop; augjax.from_torchvision; "
            "assert 'torch' not in sys.modules and 'torchvision' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_non_torchvision_object_is_refused():
    with pytest.raises(augjax.UnsupportedTransformError, match="expects torchvision"):
        augjax.from_torchvision(object())
    # a function (what v2.Lambda wraps) is named as one, with what to do instead
    for fn, name in ((lambda x: x, "<lambda>"), (np.fliplr, "fliplr")):
        if not hasattr(fn, "__code__"):
            continue  # (a C function has no code to name)
        with pytest.raises(augjax.UnsupportedTransformError,
                           match=rf"got the Python function \S*{name}; a function's effect cannot "
                                 r"be read: write it as an augjax op"):
            augjax.from_torchvision(v2.Compose([v2.RandomHorizontalFlip(), fn]))



def test_sequential_numpy_dtypes_and_a_list_of_transforms():
    """torch.nn.Sequential (torchvision's scriptable pipeline) converts as a Compose; dtype=
    takes NumPy's and JAX's scalar types as it takes torch's; a plain list is refused with the
    way to convert it (Sequential and np.uint8 were refused)."""
    transforms = [v2.RandomHorizontalFlip(p=1.0), v2.RandomSolarize(128, p=1.0)]
    ref = augjax.config.to_dict(augjax.from_torchvision(v2.Compose(transforms), dtype="uint8"))
    for dtype in (np.uint8, np.dtype(np.uint8), jax.numpy.uint8, torch.uint8):
        chain = augjax.from_torchvision(torch.nn.Sequential(*transforms), dtype=dtype)
        assert augjax.config.to_dict(chain) == ref, dtype
    image = _image()
    ours = np.asarray(augjax.from_torchvision(torch.nn.Sequential(*transforms), dtype=np.uint8)(
        image, key=jax.random.key(0)))
    theirs = torch.nn.Sequential(*transforms)(torch.from_numpy(image[0]).permute(2, 0, 1))
    np.testing.assert_array_equal(ours[0], theirs.permute(1, 2, 0).numpy())
    with pytest.raises(augjax.UnsupportedTransformError, match=r"wrap a list of transforms in "
                                                               r"v2\.Compose"):
        augjax.from_torchvision(transforms)
    with pytest.raises(augjax.UnsupportedTransformError, match="argument 'dtype'"):
        augjax.from_torchvision(v2.Compose(transforms), dtype=np.float64)

def test_fills_follow_the_dtype_through_the_pipeline():
    chain = augjax.from_torchvision(v2.Compose([
        v2.RandomRotation(5, fill=51), v2.ToDtype(torch.float32, scale=True),
        v2.RandomRotation(5, fill=0.25)]), dtype="uint8")
    assert chain[0].kwargs["fill"] == pytest.approx((0.2,))
    assert chain[2].kwargs["fill"] == pytest.approx((0.25,))


def _policy_replay(t, seed):
    """torchvision's chosen ops and signed magnitudes (and magnitude bins), set into the
    converted policy's params: sampled for a batch, a row drawn at torchvision's bin taken, its
    op choice and sign replaced by torchvision's."""
    chosen = []
    run = t._apply_image_or_video_transform  # torchvision applies each chosen op through it

    def recording(image, name, magnitude, *args, **kwargs):
        chosen.append((name, magnitude))
        return run(image, name, magnitude, *args, **kwargs)

    t._apply_image_or_video_transform = recording
    x = _image(seed)
    torch.manual_seed(seed)
    theirs = _np(t(_tv(x)))
    policy = augjax.from_torchvision(t)[0]
    bins = []
    for name, magnitude in chosen:  # the bin torchvision drew, from its own magnitude table
        table = t._AUGMENTATION_SPACE[name][0](t.num_magnitude_bins, H, W)
        # every bin of that value (a posterize table repeats values)
        bins.append(None if table is None or table.ndim == 0 else set(np.flatnonzero(
            np.isclose(np.abs(np.asarray(table, np.float64)), abs(magnitude), atol=1e-6))))
    batch = policy.sample((256, H, W, 3), key=jax.random.key(seed))
    level = np.asarray(batch["level"])
    rows = [r for r in range(256) if all(b is None or int(level[r, i]) in b
                                         for i, b in enumerate(bins))]
    row = rows[0]
    params = {k: np.array(v)[row:row + 1] for k, v in batch.items() if k != "branches"}
    branches = [{k: np.array(v)[row:row + 1] for k, v in b.items()} for b in batch["branches"]]
    drawn_negative = params["negative"].copy()  # how the sampled branch values are signed
    for layer, (name, magnitude) in enumerate(chosen):
        j = policy.op_names.index(name)
        params["op"][0, layer], params["applied"][0, layer] = j, True
        params["negative"][0, layer] = magnitude < 0
        entry = policy.space[j]
        for field, value in branches[j].items():  # the bin's value, negated about the neutral one
            if not entry.magnitude.signed:
                continue
            neutral = augjax.get_op(entry.op).params[field].neutral
            v = value[0, layer]
            positive = 2 * neutral - v if drawn_negative[0, layer] else v
            value[0, layer] = positive if magnitude >= 0 else 2 * neutral - positive
    params["branches"] = branches
    _close(np.asarray(policy.apply(x, params=params))[0], theirs)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_rand_augment_replays_torchvisions_choices(seed):
    _policy_replay(v2.RandAugment(num_ops=2, magnitude=9), seed)


@pytest.mark.fast_tier("4")
@pytest.mark.parametrize("seed", range(8))
def test_trivial_augment_wide_replays_torchvisions_choices(seed):
    _policy_replay(v2.TrivialAugmentWide(), seed)


# --- level-valued settings follow the dtype --------------------------------------------------

@pytest.mark.parametrize("how", ["ToDtype", "dtype="])
def test_solarize_threshold_is_read_in_the_float_pipelines_values(how):
    # torchvision's threshold is in the image's values: 0.6 on float images inverts x >= 0.6
    x = _image(6)
    xf = x.astype(np.float32) / 255
    if how == "ToDtype":
        t = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.RandomSolarize(0.6, p=1.0)])
        chain, ours_in = augjax.from_torchvision(t), x
    else:
        t = v2.RandomSolarize(0.6, p=1.0)
        chain, ours_in = augjax.from_torchvision(t, dtype="float32"), xf
    theirs = _np(t(_tv(x) if how == "ToDtype" else _tv(xf)))
    ours = np.asarray(chain(ours_in, key=jax.random.key(0)))[0]
    inverted = np.mean(np.abs(ours - xf[0]) > 1e-6)
    assert 0.3 < inverted < 0.5, inverted  # ~40% of U[0, 1] values lie above 0.6, not 97%
    _close(ours, theirs, tol=1e-6)


@pytest.mark.parametrize("transform, argument, dtype", [
    (v2.RandomSolarize(0.6), "threshold", torch.float32),
    (v2.RandomRotation(5, fill=51), "fill", torch.uint8),
    (v2.RandomErasing(value=(200, 10, 60)), "value", torch.uint8),
    (v2.RandomErasing(value=0.5), "value", torch.float32),
])
def test_a_value_in_the_images_own_scale_needs_the_dtype(transform, argument, dtype):
    with pytest.raises(augjax.UnsupportedTransformError, match="dtype='uint8'") as info:
        augjax.from_torchvision(v2.Compose([v2.ToImage(), transform]))
    assert info.value.argument == argument and info.value.transform == type(transform).__name__
    # said by the argument, or by a conversion before it: it converts
    assert len(augjax.from_torchvision(transform, dtype=dtype)) == 1
    assert len(augjax.from_torchvision(v2.Compose([v2.ToDtype(dtype, scale=True),
                                                   transform]))) == 2


def test_dtype_free_values_need_no_dtype_and_pil_to_tensor_says_uint8():
    chain = augjax.from_torchvision(v2.Compose([v2.RandomRotation(5, fill=0),
                                                v2.RandomErasing(value=0)]))
    assert len(chain) == 2
    chain = augjax.from_torchvision(v2.Compose([v2.PILToTensor(), v2.RandomRotation(5, fill=51)]))
    assert chain[0].kwargs["fill"] == pytest.approx((0.2,))


def test_a_float_threshold_above_one_is_refused():
    with pytest.raises(augjax.UnsupportedTransformError, match="threshold=100") as info:
        augjax.from_torchvision(v2.RandomSolarize(100), dtype="float32")
    assert info.value.argument == "threshold" and info.value.nearest == "solarize"


def test_a_dtype_set_in_one_random_branch_is_not_known_after_it():
    t = v2.Compose([v2.RandomApply([v2.ToDtype(torch.float32, scale=True)]),
                    v2.RandomSolarize(0.5)])
    with pytest.raises(augjax.UnsupportedTransformError, match="not known") as info:
        augjax.from_torchvision(t, dtype="uint8")
    assert info.value.argument == "threshold"


# --- exact rewrites ---------------------------------------------------------------------------

@pytest.mark.parametrize("transform", [
    v2.RandomAdjustSharpness(2.5, p=1.0), v2.RandomAdjustSharpness(0.2, p=1.0),
    v2.ConvertImageDtype(torch.float32),
], ids=["sharpen", "blur", "ConvertImageDtype"])
def test_exact_rewrites_match_torchvision(transform):
    x = _image(7)
    theirs = _np(transform(_tv(x)))
    ours = np.asarray(augjax.from_torchvision(transform)(x, key=jax.random.key(0)))[0]
    _close(ours, theirs, tol=1e-6 if theirs.dtype == np.float32 else 0)


def test_random_adjust_sharpness_is_a_random_apply_of_sharpness():
    step = _step(v2.RandomAdjustSharpness(2.0, p=0.3))
    assert step.p == pytest.approx(0.3) and step.op.name == "sharpness"
    assert step.op.kwargs["factor"] == pytest.approx(2.0)


@pytest.mark.parametrize("seed", range(2))
def test_jpeg_replays_torchvisions_quality(seed):
    _replay(v2.JPEG((40, 90)), lambda d, x: {"quality": np.array([d["quality"]], np.float32)},
            seed=seed, tol=0)


def test_channel_permutation_replays_torchvisions_permutation():
    _replay(v2.RandomChannelPermutation(),
            lambda d, x: {"perm": np.asarray(d["permutation"], np.int32)[None]}, tol=0)


@pytest.mark.parametrize("seed", range(3))
def test_photometric_distort_replays_torchvisions_draws(seed):
    t = v2.RandomPhotometricDistort(p=0.7)
    names = ("brightness", "contrast", "saturation", "hue")

    def params(d, x):
        perm = d["channel_permutation"]
        return {"on": np.array([[d[f"{n}_factor"] is not None for n in names]]),
                **{n: np.array([1.0 if d[f"{n}_factor"] is None else d[f"{n}_factor"]],
                               np.float32) for n in names},
                "contrast_before": np.array([d["contrast_before"]]),
                "permute": np.array([perm is not None]),
                "perm": np.asarray([0, 1, 2] if perm is None else perm, np.int32)[None]}

    _replay(t, params, seed=seed)


def test_gaussian_noise_replays_torchvisions_noise():
    pytest.importorskip("augjax_contrib")
    x = _image(8).astype(np.float32) / 255
    t = v2.GaussianNoise(mean=0.05, sigma=0.2)
    torch.manual_seed(3)
    z = torch.randn(3, H, W)
    torch.manual_seed(3)
    theirs = _np(t(_tv(x)))
    ours = _step(t).apply(x, params={"sigma": np.array([0.2], np.float32),
                                     "noise": _np(z)[None]})
    _close(np.asarray(ours)[0], theirs, tol=1e-6)


def test_every_torchvision_v2_transform_converts_or_names_what_is_near():
    from augjax.interop import torchvision as tv

    names = {n for n, c in vars(v2).items()
             if isinstance(c, type) and issubclass(c, v2.Transform) and c is not v2.Transform}
    assert names - set(tv.SUPPORTED) - tv._PASS - set(tv.NEAREST) == set()
    for name in ("RandomIoUCrop", "RandomZoomOut", "ScaleJitter", "ConvertBoundingBoxFormat",
                 "ElasticTransform"):
        assert tv.NEAREST[name], name
    with pytest.raises(augjax.UnsupportedTransformError) as info:
        augjax.from_torchvision(v2.RandomIoUCrop())
    assert "random_iou_crop" in str(info.value) and "random_iou_crop" in info.value.nearest


# --- v1 transforms and cycles ---------------------------------------------------------------

def test_v1_transforms_convert_with_a_warning():
    import warnings

    from torchvision import transforms as v1

    with pytest.warns(augjax.TorchvisionV1Warning, match="RandomHorizontalFlip"):
        chain = augjax.from_torchvision(v1.Compose([v1.RandomHorizontalFlip(p=1.0)]))
    x = _image(9)
    np.testing.assert_array_equal(np.asarray(chain(x, key=jax.random.key(0))), x[:, :, ::-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        augjax.from_torchvision(v2.Compose([v2.RandomHorizontalFlip()]))


@pytest.mark.parametrize("padding", [(1, 2, 3, 4), (3, 5), 2])
def test_a_v1_random_crops_padding_is_read_in_v1s_order(padding):
    from torchvision import transforms as v1

    left, top, right, bottom = {1: (padding,) * 4 if isinstance(padding, int) else None,
                                2: tuple(padding) * 2 if not isinstance(padding, int) else None,
                                4: padding}[1 if isinstance(padding, int) else len(padding)]
    x = _image(10)
    # a crop of the whole padded image: torchvision's output is its padding, in its order
    t = v1.RandomCrop((H + top + bottom, W + left + right), padding=padding, fill=9)
    theirs = _np(t(_tv(x)))
    with pytest.warns(augjax.TorchvisionV1Warning):
        step = _step(t)
    ours = step.apply(x, params={"offset": np.array([[-top, -left]])})
    _close(np.asarray(ours)[0], theirs, tol=0)


def test_a_pipeline_that_contains_itself_is_a_typed_error():
    loop = v2.Compose([v2.RandomHorizontalFlip()])
    loop.transforms.append(v2.RandomApply([loop], p=0.5))
    with pytest.raises(augjax.UnsupportedTransformError, match="contains itself") as info:
        augjax.from_torchvision(loop)
    assert info.value.transform == "Compose" and "Compose > RandomApply > Compose" in str(
        info.value)
    twice = v2.RandomHorizontalFlip()  # the same transform twice is no cycle
    assert len(augjax.from_torchvision(v2.Compose([twice, twice]))) == 2


@pytest.mark.parametrize("transform", [v2.RGB(), v2.Compose([v2.ToImage(), v2.RGB()]),
                                       v2.Compose([v2.Identity(), v2.ToPureTensor()])])
def test_a_pipeline_that_converts_to_no_op_is_refused_when_converted(transform):
    """Only transforms that leave the arrays as they are: refused at conversion, naming the
    pipeline (not an empty chain that fails when called)."""
    with pytest.raises(augjax.UnsupportedTransformError, match="converts to no augjax op"):
        augjax.from_torchvision(transform, dtype="uint8")


def test_jpeg_on_float_images_is_refused_as_torchvision_refuses_it():
    pipeline = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.JPEG(50)])
    with pytest.raises(RuntimeError):  # torchvision itself: encode_jpeg takes uint8 only
        pipeline(torch.zeros(3, 8, 8, dtype=torch.uint8))
    with pytest.raises(augjax.UnsupportedTransformError, match="uint8 images only") as err:
        augjax.from_torchvision(pipeline)
    assert err.value.transform == "JPEG" and err.value.nearest == "jpeg"
    augjax.from_torchvision(v2.Compose([v2.JPEG(50), v2.ToDtype(torch.float32, scale=True)]))


def test_temporal_subsampling_is_refused_with_the_frames_to_pick_before_the_chain():
    """UniformTemporalSubsample has no augjax op (augjax augments the frames it is given); its
    refusal says how to pick them before the chain, with torchvision's own indices: the
    expression in the message picks the frames the transform picks."""
    with pytest.raises(augjax.UnsupportedTransformError) as info:
        augjax.from_torchvision(v2.Compose([v2.UniformTemporalSubsample(5),
                                            v2.RandomHorizontalFlip()]))
    err = info.value
    assert err.transform == "UniformTemporalSubsample" and "clips[:, idx]" in str(err)
    expression = str(err).split("idx = ", 1)[1]
    for frames, num_samples in ((16, 5), (8, 3), (29, 27), (31, 23)):
        video = torch.arange(frames, dtype=torch.float32).reshape(frames, 1, 1, 1)
        idx = eval(expression, {"torch": torch, "T": frames, "num_samples": num_samples})
        picked = v2.functional.uniform_temporal_subsample(video, num_samples).flatten()
        assert torch.equal(video.flatten()[idx], picked), (frames, num_samples)
