"""Images of different sizes on arrays: a list of HWC images through the crop ops and resize.

References: torchvision v2 (``F.resized_crop``, ``F.resize``, ``F.center_crop``, ``F.pad`` +
``F.crop``) on the windows augjax draws, and torchvision's ``RandomResizedCrop.get_params``
loop re-run in float64 on augjax's uniform draws.
"""

from __future__ import annotations

import math
import re

import jax
import numpy as np
import pytest
from helpers import abs_diff, hwc_to_torch, torch_to_hwc

import augjax
from augjax.errors import InputError, InputTypeError

torch = pytest.importorskip("torch")
F = pytest.importorskip("torchvision.transforms.v2.functional")

#: (height, width) of the test images: portrait, landscape, square, tiny, very wide and tall.
SIZES = [(40, 56), (57, 33), (48, 48), (9, 70), (70, 12), (31, 45), (64, 50)]
SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)


def _images(dtype=np.uint8, sizes=SIZES):
    rng = np.random.default_rng(0)
    out = []
    for h, w in sizes:
        yy, xx = np.mgrid[:h, :w]
        smooth = np.stack([yy * 255 / h, xx * 255 / w, (yy + xx) * 127 / (h + w)], -1)
        img = np.clip(smooth + rng.normal(0, 20, (h, w, 3)), 0, 255).astype(np.uint8)
        out.append(img if dtype == np.uint8 else (img / 255.0).astype(np.float32))
    return out


_tv, _np, _diff = hwc_to_torch, torch_to_hwc, abs_diff


def _get_params_reference(u, h, w):
    """torchvision ``RandomResizedCrop.get_params`` (float64), with augjax's documented draws
    in place of torch's: ``u[:10]`` areas, ``u[10:20]`` log-ratios, ``u[20]``/``u[21]`` the
    top/left placement (``randint(0, H - h + 1)`` as ``floor(u * (H - h + 1))``)."""
    area = h * w
    log_ratio = (math.log(RATIO[0]), math.log(RATIO[1]))
    for t in range(10):
        target = area * (SCALE[0] + (SCALE[1] - SCALE[0]) * u[t])
        aspect = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * u[10 + t])
        cw = round(math.sqrt(target * aspect))
        ch = round(math.sqrt(target / aspect))
        if 0 < cw <= w and 0 < ch <= h:
            return (int(u[20] * (h - ch + 1)), int(u[21] * (w - cw + 1)), ch, cw)
    in_ratio = w / h
    if in_ratio < min(RATIO):
        cw, ch = w, round(w / min(RATIO))
    elif in_ratio > max(RATIO):
        ch, cw = h, round(h * max(RATIO))
    else:
        cw, ch = w, h
    return ((h - ch) // 2, (w - cw) // 2, ch, cw)


def test_rrc_windows_follow_torchvision_get_params_on_each_true_size():
    op = augjax.ops.random_resized_crop.bind(size=16)
    sizes = SIZES * 30
    images = [np.zeros((h, w, 3), np.uint8) for h, w in sizes]
    keys = jax.random.split(jax.random.key(3), len(images))
    boxes = np.asarray(op.sample(images, key=keys)["box"])
    # The sampler's key: sample key -> op position 0 -> the sample hook's fold_in(., 1).
    u = np.asarray(jax.vmap(lambda k: jax.random.uniform(
        jax.random.fold_in(jax.random.fold_in(k, 0), 1), (22,)))(keys), np.float64)
    want = np.array([_get_params_reference(u[i], h, w) for i, (h, w) in enumerate(sizes)])
    # float32 vs float64 can move round(sqrt(.)) by one where it lies within rounding of .5
    close = np.abs(boxes - want).max(1) <= 1
    assert close.all() and (boxes == want).all(1).mean() > 0.99, (boxes[~close], want[~close])


def test_rrc_windows_satisfy_scale_and_ratio_or_are_the_fallback():
    op = augjax.ops.random_resized_crop.bind(size=16, scale=(0.2, 0.9), ratio=(0.5, 2.0))
    rng = np.random.default_rng(1)
    sizes = [(int(h), int(w)) for h, w in rng.integers(5, 400, (400, 2))]
    images = [np.zeros((h, w, 1), np.uint8) for h, w in sizes]
    boxes = np.asarray(op.sample(images, key=jax.random.key(5))["box"])
    fallback = 0
    for (h, w), (top, left, bh, bw) in zip(sizes, boxes):
        assert 0 <= top and top + bh <= h and 0 <= left and left + bw <= w and bh > 0 and bw > 0
        ok_scale = 0.2 * h * w - (bh + bw) <= bh * bw <= 0.9 * h * w + (bh + bw)  # rounding
        ok_ratio = 0.5 - 1.0 / bh - 1e-6 <= bw / bh <= 2.0 + 1.0 / bh + 1e-6
        if not (ok_scale and ok_ratio):
            # torchvision's fallback: centred, the whole image or its ratio clamped into range
            fallback += 1
            assert (top, left) == ((h - bh) // 2, (w - bw) // 2)
            assert bh == h or bw == w
    assert fallback < 0.2 * len(sizes)


def test_rrc_window_distribution_matches_the_reference_algorithm():
    # The float64 reference on independent NumPy draws gives the expected distribution.
    op = augjax.ops.random_resized_crop.bind(size=16)
    n = 3000
    for h, w in [(300, 400), (200, 150)]:
        boxes = np.asarray(op.sample((n, h, w, 1), key=jax.random.key(7))["box"])
        ref = np.array([_get_params_reference(u, h, w)
                        for u in np.random.default_rng(h).random((n, 22))])
        for b in (boxes, ref):
            assert (b[:, 0] >= 0).all() and (b[:, 0] + b[:, 2] <= h).all()
            assert (b[:, 1] >= 0).all() and (b[:, 1] + b[:, 3] <= w).all()
        area, ref_area = (b[:, 2] * b[:, 3] / (h * w) for b in (boxes, ref))
        ratio, ref_ratio = (np.log(b[:, 3] / b[:, 2]) for b in (boxes, ref))
        # standard errors: area ~0.005, log-ratio ~0.003 at n=3000
        assert abs(area.mean() - ref_area.mean()) < 0.025
        assert abs(area.std() - ref_area.std()) < 0.02
        assert abs(ratio.mean() - ref_ratio.mean()) < 0.015
        assert abs(np.mean(boxes[:, 0] / np.maximum(h - boxes[:, 2], 1))
                   - np.mean(ref[:, 0] / np.maximum(h - ref[:, 2], 1))) < 0.03


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_rrc_on_a_list_matches_torchvision_and_the_single_image_path(dtype):
    images = _images(dtype)
    keys = jax.random.split(jax.random.key(0), len(images))
    op = augjax.ops.random_resized_crop.bind(size=(20, 24))
    out = np.asarray(op(images, key=keys))
    assert out.shape == (len(images), 20, 24, 3) and out.dtype == dtype
    boxes = np.asarray(op.sample(images, key=keys)["box"])
    tol = 1.0 if dtype == np.uint8 else 1e-5
    for i, img in enumerate(images):
        t, l, h, w = (int(v) for v in boxes[i])
        ref = _np(F.resized_crop(_tv(img), t, l, h, w, [20, 24], antialias=True))
        assert _diff(out[i], ref).max() <= tol
    # Same key, same window, same pixels as the image alone (float32: 1 ulp). The list is read
    # through dense window weights, the image alone through taps: on the CPU the sums round
    # alike; on CUDA (seen on an H200) a uint8 value can round to the other level.
    on_cpu = jax.default_backend() == "cpu"
    for i in (0, 3):
        alone = np.asarray(op(images[i][None], key=keys[i:i + 1]))[0]
        assert _diff(out[i], alone).max() <= (
            (0 if on_cpu else 1) if dtype == np.uint8 else 1e-6)


@pytest.mark.slow
def test_timm_eval_transform_on_a_list_matches_torchvision():
    images = _images()
    chain = augjax.compose([augjax.ops.resize.bind(size=40), augjax.ops.center_crop.bind(
        size=36)])
    out = np.asarray(chain(images))
    assert out.shape == (len(images), 36, 36, 3)
    for i, img in enumerate(images):
        ref = _np(F.center_crop(F.resize(_tv(img), [40], antialias=True), [36]))
        assert _diff(out[i], ref).max() <= 1


def test_random_crop_with_padding_on_a_list_is_torchvision_pad_then_crop():
    images = _images()
    op = augjax.ops.random_crop.bind(size=(32, 30), padding=4, pad_if_needed=True,
                                     fill=128 / 255)
    keys = jax.random.split(jax.random.key(2), len(images))
    out = np.asarray(op(images, key=keys))
    offsets = np.asarray(op.sample(images, key=keys)["offset"])
    for i, img in enumerate(images):
        h, w = img.shape[:2]
        # torchvision RandomCrop: padding, then pad_if_needed's shortfall on both sides
        top = left = 4
        dh, dw = max(32 - (h + 8), 0), max(30 - (w + 8), 0)
        padded = F.pad(_tv(img), [left + dw, top + dh, left + dw, top + dh], fill=128)
        t, l = offsets[i] + np.array([top + dh, left + dw])
        assert 0 <= t <= padded.shape[1] - 32 and 0 <= l <= padded.shape[2] - 30
        np.testing.assert_array_equal(out[i], _np(F.crop(padded, int(t), int(l), 32, 30)))
    for i in (1, 4):
        alone = np.asarray(op(images[i][None], key=keys[i:i + 1]))[0]
        np.testing.assert_array_equal(out[i], alone)


def test_center_crop_on_a_list_pads_like_torchvision():
    images = _images()
    out = np.asarray(augjax.ops.center_crop(images, size=(45, 47)))
    for i, img in enumerate(images):
        np.testing.assert_array_equal(out[i], _np(F.center_crop(_tv(img), [45, 47])))


@pytest.mark.fast_tier("nearest-size1-None")
@pytest.mark.parametrize("size,max_size", [(32, None), ((30, 41), None), (24, 40)])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_resize_matches_torchvision(size, max_size, interpolation):
    img = _images(sizes=[(57, 33)])[0]
    mode = {"bilinear": F.InterpolationMode.BILINEAR,
            "nearest": F.InterpolationMode.NEAREST}[interpolation]
    ref = _np(F.resize(_tv(img), [size] if isinstance(size, int) else list(size),
                       interpolation=mode, max_size=max_size, antialias=True))
    out = np.asarray(augjax.ops.resize(img[None], size=size, max_size=max_size,
                                       interpolation=interpolation))[0]
    assert out.shape == ref.shape
    assert _diff(out, ref).max() <= (1 if interpolation == "bilinear" else 0)


@pytest.mark.fast_tier("uint8-True-size0", "float32-False-size1")
@pytest.mark.parametrize("size,max_size", [
    ((20, 14), None),  # shrinking, the aspect ratio changed
    (80, None),  # enlarging by one int, the other side follows
    ((45, 70), None),  # enlarging one side, shrinking the other
    (24, 36),  # shrinking, capped
], ids=["size0", "size1", "size2", "size3"])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
def test_resize_bicubic_matches_torchvision(dtype, antialias, size, max_size):
    """``resize(interpolation="bicubic")`` is ``F.resize(..., InterpolationMode.BICUBIC)`` on
    images of 57 x 33 and 40 x 56. Measured: float32 within 5e-7 (no clamp: bicubic leaves
    [0, 1] near edges, as torchvision's does); uint8 within 1 level, at most 1.1% of the values
    off by one (clamped to 0..255 after each pass, as ATen's uint8 kernel)."""
    imgs = _images(dtype, sizes=[(57, 33), (40, 56)])
    mode = F.InterpolationMode.BICUBIC
    for img in imgs:
        ref = _np(F.resize(_tv(img), [size] if isinstance(size, int) else list(size),
                           interpolation=mode, max_size=max_size, antialias=antialias))
        out = np.asarray(augjax.ops.resize(img[None], size=size, max_size=max_size,
                                           interpolation="bicubic", antialias=antialias))[0]
        assert out.shape == ref.shape and out.dtype == img.dtype
        diff = _diff(out, ref)
        if dtype == np.float32:
            assert diff.max() <= 1e-5, diff.max()
        else:
            assert diff.max() <= 1 and (diff > 0).mean() <= 0.02, (diff.max(),
                                                                   (diff > 0).mean())


@pytest.mark.parametrize("antialias", [True, False])
def test_resize_bicubic_overshoots_floats_and_clamps_uint8(antialias):
    """A step from 0 to the top of the range, enlarged: bicubic rings past both ends. float32
    keeps the overshoot (below 0, above 1: torchvision does not clamp floats), uint8 is
    clamped to 0..255 (ATen's uint8 kernel after each pass); both as torchvision."""
    step = np.zeros((6, 8, 3), np.uint8)
    step[:, 4:] = 255
    step[3:, :, 1] = 255 - step[3:, :, 1]
    for img in (step, (step / 255.0).astype(np.float32)):
        ref = _np(F.resize(_tv(img), [13, 21], interpolation=F.InterpolationMode.BICUBIC,
                           antialias=antialias))
        out = np.asarray(augjax.ops.resize(img[None], size=(13, 21), interpolation="bicubic",
                                           antialias=antialias))[0]
        if img.dtype == np.float32:
            assert out.min() < -0.03 and out.max() > 1.03, (out.min(), out.max())
            assert _diff(out, ref).max() <= 1e-5
        else:
            assert out.min() == 0 and out.max() == 255
            assert _diff(out, ref).max() <= 1


@pytest.mark.fast_tier("uint8-True", "float32-False")
@pytest.mark.parametrize("dtype, antialias", [(np.uint8, True), (np.float32, False)],
                         ids=["uint8-True", "float32-False"])  # (each compiles ~20 programs)
def test_bicubic_on_a_list_is_each_image_as_a_batch_of_one(dtype, antialias):
    """A list of images of different sizes resampled ``"bicubic"`` (the ragged reader,
    :func:`augjax.kernels.window.window_taps`: the batch path's taps and weights) equals, image
    by image, the same op on a batch of that image alone with the same key: boxes shrunk and
    enlarged (``random_resized_crop`` to 20 x 24 and 64 x 72; ``resize`` to 16 x 18 and 80 x
    90 of 40 x 56 .. 90 x 78 images: the largest is shrunk 5.6x by 16 x 18 and both shrunk and
    enlarged by 80 x 90), uint8 clamped after each pass. The standard of bilinear lists: the
    two programs may round a weight apart (XLA fuses them differently), so float32 within 1e-6
    (measured 4e-7, bilinear 2.4e-7) and uint8 within 1 level on a few values (measured on 8
    images: bicubic up to 11 of 259200, bilinear 150).

    Suite time: the largest image was 150 x 120 (a 192-pixel canvas; 90 x 78 takes a 128 one:
    the same reader, taps and clamps, ~40% less compile), and the list's bilinear output is
    compiled for one size per op (that the list honours ``interpolation`` at every size follows
    from each image equalling its batch of one, whose bicubic is torchvision's:
    test_resize_bicubic_matches_torchvision, tests/views/test_views.py's
    test_recipes_resize_bicubic_on_request)."""
    images = _images(dtype, sizes=[(40, 56), (57, 33), (9, 70), (90, 78)])
    keys = jax.random.split(jax.random.key(3), len(images))
    rrc, resize = augjax.ops.random_resized_crop, augjax.ops.resize
    for op, size, against_bilinear in ((rrc, (20, 24), False), (rrc, (64, 72), True),
                                       (resize, (16, 18), False), (resize, (80, 90), True)):
        f = op.bind(size=size, interpolation="bicubic", antialias=antialias)
        out = np.asarray(f(images, key=keys))
        assert out.shape == (len(images), *size, 3) and out.dtype == dtype
        if against_bilinear:
            bilinear = np.asarray(op.bind(size=size, antialias=antialias)(images, key=keys))
            assert not np.array_equal(out, bilinear)
        for i, img in enumerate(images):
            alone = np.asarray(f(img[None], key=keys[i:i + 1]))[0]
            diff = _diff(out[i], alone)
            if dtype == np.float32:
                assert diff.max() <= 1e-6, (op.name, size, i, diff.max())
            else:
                assert diff.max() <= 1 and (diff > 0).mean() <= 0.002, (
                    op.name, size, i, diff.max(), (diff > 0).mean())


def test_bicubic_on_a_list_clamps_uint8_and_keeps_float_overshoot():
    """A step from 0 to the top of the range in images of two sizes, enlarged bicubic on a
    list: uint8 is clamped to 0..255 after each pass (as the batch path and ATen), float32
    keeps the overshoot; each image as a batch of it alone, and within 1 level / 1e-5 of
    torchvision's ``F.resize(BICUBIC)``."""
    steps = []
    for h, w in ((6, 8), (7, 10)):
        step = np.zeros((h, w, 3), np.uint8)
        step[:, w // 2:] = 255
        step[h // 2:, :, 1] = 255 - step[h // 2:, :, 1]
        steps.append(step)
    for imgs in (steps, [(s / 255.0).astype(np.float32) for s in steps]):
        out = np.asarray(augjax.ops.resize(imgs, size=(13, 21), interpolation="bicubic"))
        for i, img in enumerate(imgs):
            alone = np.asarray(augjax.ops.resize(img[None], size=(13, 21),
                                                 interpolation="bicubic"))[0]
            ref = _np(F.resize(_tv(img), [13, 21], interpolation=F.InterpolationMode.BICUBIC,
                               antialias=True))
            if img.dtype == np.float32:
                assert out[i].min() < -0.03 and out[i].max() > 1.03
                assert _diff(out[i], alone).max() <= 1e-6 and _diff(out[i], ref).max() <= 1e-5
            else:
                assert out[i].min() == 0 and out[i].max() == 255
                assert _diff(out[i], alone).max() <= 1 and _diff(out[i], ref).max() <= 1


@pytest.mark.slow
def test_resize_to_a_size_on_a_list_returns_one_batch():
    images = _images()
    out = np.asarray(augjax.ops.resize(images, size=(21, 23)))
    assert out.shape == (len(images), 21, 23, 3)
    for i, img in enumerate(images):
        assert _diff(out[i], _np(F.resize(_tv(img), [21, 23], antialias=True))).max() <= 1


@pytest.mark.slow
def test_a_chain_starting_with_a_crop_takes_a_list():
    images = _images()
    keys = jax.random.split(jax.random.key(4), len(images))
    chain = augjax.compose([augjax.ops.random_resized_crop.bind(size=16),
                            augjax.ops.flip.bind(p=0.5), augjax.ops.brightness.bind(
                                factor=(0.8, 1.2))])
    out = np.asarray(chain(images, key=keys))
    alone = np.asarray(chain(images[4][None], key=keys[4:5]))[0]
    np.testing.assert_array_equal(out[4], alone)
    rrc, flip, bright = chain.sample(images, key=keys)
    np.testing.assert_array_equal(rrc["box"], augjax.ops.random_resized_crop.sample(
        images, size=16, key=keys)["box"])
    for params in (flip, bright):
        assert all(np.shape(v)[0] == len(images) for v in params.values())


def test_images_of_different_sizes_into_an_op_that_cannot_take_them():
    with pytest.raises(InputError, match=r"flip: .*different sizes.*random_resized_crop"):
        augjax.ops.flip(_images(), key=jax.random.key(0))
    chain = augjax.compose([augjax.ops.flip.bind(), augjax.ops.center_crop.bind(size=8)])
    with pytest.raises(InputError, match=r"flip: .*center_crop"):
        chain(_images(), key=jax.random.key(0))


def test_resize_to_a_shorter_side_needs_a_crop_on_a_list():
    with pytest.raises(InputError, match=r"resize: .*size=\(height, width\).*center_crop"):
        augjax.ops.resize(_images(), size=32)


def test_bad_lists_are_refused():
    images = _images()
    with pytest.raises(InputTypeError, match="one array per image"):
        augjax.ops.center_crop([img.tolist() for img in images], size=8)
    with pytest.raises(InputError, match="one dtype and channel count"):
        augjax.ops.center_crop([images[0], images[1][..., :1]], size=8)
    with pytest.raises(InputError, match="layout 'HWC'"):
        augjax.ops.center_crop(images, size=8, layout="CHW")
    with pytest.raises(InputError, match="pad_mode"):
        augjax.ops.random_crop(images, size=8, padding=2, pad_mode="reflect",
                               key=jax.random.key(0))


def test_a_list_is_checked_as_a_batch_is_for_its_first_op():
    """A list of one size passes check_list: its images are checked as a batch of them would
    be (dtype, channels-first images, channel count, float range), never run as garbage."""
    import warnings

    from augjax.errors import InputRangeWarning

    image = _images()[0]
    crop = augjax.compose(augjax.ops.random_resized_crop.bind(size=8), augjax.ops.flip.bind())
    key = jax.random.key(0)
    for bad in (image.astype(np.uint16) * 256, image.astype(np.int32), image.astype(np.int64)):
        with pytest.raises(InputError, match=rf"random_resized_crop: argument 'images' expects "
                                             rf"dtype uint8 or float32, got {bad.dtype}") as err:
            crop([bad, bad], key=key)
        assert err.value.argument == "images"
        with pytest.raises(InputError, match="expects dtype uint8 or float32"):  # as a batch
            crop(bad[None], key=key)
    chw = np.ascontiguousarray(np.moveaxis(image, -1, 0))
    with pytest.raises(InputError, match=r"as a list expects \(H, W, C\) images, got image 0 "
                                         rf"of shape {re.escape(str(chw.shape))}.*"
                                         r"channels-first.*moveaxis"):
        crop([chw], key=key)
    chw2 = np.ascontiguousarray(np.moveaxis(_images()[1], -1, 0))
    with pytest.raises(InputError, match=r"channels-first \(C, H, W\) images: transpose each"):
        crop([chw, chw2], key=key)  # of different sizes: the list's own check says it
    with pytest.raises(InputError, match=r"gray \(H, W\) images: image\[\.\.\., None\]"):
        crop([image[..., 0], _images()[1][..., 0]], key=key)
    gray_only = augjax.compose(augjax.ops.random_resized_crop.bind(size=8),
                               augjax.ops.color_jitter.bind(brightness=0.2))
    with pytest.raises(InputError, match="expects 3 channels"):  # a later op's channels
        gray_only([image[..., :1]], key=key)
    with pytest.warns(InputRangeWarning, match=r"random_resized_crop: argument 'images' "
                                               r"expects float images in \[0, 1\]"):
        crop([image.astype(np.float32), image.astype(np.float32)[:5]], key=key)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputRangeWarning)
        out = crop([image / 255.0], key=key)  # float64 in [0, 1]: JAX's float32, no warning
    assert out.dtype == np.float32


@pytest.mark.gpu
def test_crops_and_nearest_resizes_of_a_list_on_the_gpu_equal_the_cpu():
    """Copies and nearest indices come from divisions of traced sizes; on CUDA XLA's float32
    division is not correctly rounded (``n / n`` under 1 moved every pixel after the first),
    so they go through ``augjax.kernels.division.exact_div``."""
    images = _images(sizes=SIZES + [(33, 37), (41, 47), (55, 61)])
    keys = jax.random.split(jax.random.key(1), len(images))
    ops = [augjax.ops.random_crop.bind(size=(20, 24), padding=3, pad_if_needed=True),
           augjax.ops.center_crop.bind(size=(30, 28)),
           augjax.ops.resize.bind(size=(29, 43), interpolation="nearest")]
    for op in ops:
        out = {}
        for dev in (jax.devices("cpu")[0], jax.devices("gpu")[0]):
            with jax.default_device(dev):
                out[dev.platform] = np.asarray(op(images, key=jax.device_put(keys, dev)))
        np.testing.assert_array_equal(out["gpu"], out["cpu"], err_msg=repr(op))


def test_a_list_does_not_depend_on_the_lists_run_before(monkeypatch):
    """A list of images gives the same bits whatever lists the chain ran before, with the
    partial-batch policy on (a user trial: a list of one after a list of 8, padded to it,
    came out 1 level off at 224^2 on every image; lists run at their own length now)."""
    monkeypatch.delenv("AUGJAX_PAD_BATCHES")  # (conftest turns padding off)
    photos = list(augjax.data.sample_images(None))
    keys = augjax.keys_from_seeds(augjax.index_seeds(np.arange(len(photos)), 0, 1))

    def chain():  # a new, equal chain: nothing of the first one's runs is reused
        return augjax.compose(augjax.ops.random_resized_crop.bind(size=224),
                              augjax.ops.flip.bind(p=0.5))

    fresh = [np.asarray(chain()([p], key=keys[i:i + 1])) for i, p in enumerate(photos[:3])]
    later = chain()
    later(photos, key=keys)  # a longer list first
    for i, p in enumerate(photos[:3]):
        np.testing.assert_array_equal(np.asarray(later([p], key=keys[i:i + 1])), fresh[i],
                                      err_msg=f"image {i}")


def test_a_list_of_one_image_for_a_chain_without_a_crop_names_the_batch_of_one():
    x = _images(sizes=[(20, 30)])
    with pytest.raises(augjax.InputError, match=r"flip: argument 'images' holds a list of one "
                                                r"image.*np\.asarray\(image\)\[None\]"):
        augjax.ops.flip(x, key=jax.random.key(0))
    with pytest.raises(augjax.InputError) as err:  # two images: the crop only
        augjax.ops.flip(x + _images(sizes=[(9, 9)]), key=jax.random.key(0))
    assert "[None]" not in str(err.value) and "random_resized_crop" in str(err.value)
    np.testing.assert_array_equal(  # the batch of one it names runs
        np.asarray(augjax.ops.flip(np.asarray(x[0])[None], key=jax.random.key(0), p=1.0))[0],
        x[0][:, ::-1])


@pytest.mark.parametrize("case, match", [
    ("gray", r"image 1 is gray \(H, W\) among color images: np\.repeat\(image\[\.\.\., None\], "
             r"3, axis=-1\)"),
    ("rgba", r"image 1 has 4 channels \(RGBA\) among RGB images: image\[\.\.\., :3\]"),
    ("dtypes", r"dtypes \['float32', 'uint8'\]; convert every image to one dtype"),
    # uint16 images of 0..255 levels (the hint reads the values: 8-bit levels, not /65535)
    ("uint16", r"expects dtype uint8 or float32, got uint16 \(its values are 0\.\.\d+, 8-bit "
               r"levels: image\.astype\(np\.uint8\)"),
])
def test_a_list_with_an_odd_image_names_it_and_the_fix(case, match):
    x = _images(sizes=[(20, 30), (16, 18)])
    x[1] = {"gray": x[1][..., 0], "rgba": np.concatenate([x[1], x[1][..., :1]], -1),
            "dtypes": x[1].astype(np.float32) / 255, "uint16": x[1].astype(np.uint16)}[case]
    if case == "uint16":
        x[0] = x[0].astype(np.uint16)
    with pytest.raises(augjax.InputError, match=match):
        augjax.ops.random_resized_crop(x, size=8, key=jax.random.key(0))


def test_an_object_array_of_images_is_told_to_be_a_list():
    x = _images(sizes=[(20, 30), (16, 18)])
    packed = np.empty(2, dtype=object)
    packed[0], packed[1] = x
    views = augjax.views({"v": (2, augjax.ops.random_resized_crop.bind(size=8))})
    for call in (lambda: augjax.ops.random_resized_crop(packed, size=8, key=jax.random.key(0)),
                 lambda: views(packed, key=jax.random.key(0))):
        with pytest.raises(augjax.InputTypeError, match=r"a NumPy array of dtype object \(2,\): "
                                                        r"a list of images of different sizes "
                                                        r"goes as a Python list, list\(x\)"):
            call()
    assert views(list(packed), key=jax.random.key(0))["v"].shape == (2, 2, 8, 8, 3)


def test_a_list_of_images_of_one_size_for_a_chain_without_a_crop_names_np_stack():
    """Found by user trials (PyTorch, grain): the error said "different sizes" of a list whose
    images are all one size."""
    x = _images(sizes=[(20, 30)] * 3)
    with pytest.raises(augjax.InputError) as err:
        augjax.ops.flip(x, key=jax.random.key(0))
    message = str(err.value)
    assert "a list of 3 images of one size (20, 30, 3)" in message, message
    assert "np.stack(images)" in message and "holds images of different sizes" not in message
    with pytest.raises(augjax.InputError) as err:  # of different sizes: no np.stack
        augjax.ops.flip(x + _images(sizes=[(9, 9)]), key=jax.random.key(0))
    assert "np.stack" not in str(err.value) and "holds images of different sizes" in str(
        err.value)
    np.testing.assert_array_equal(  # the batch it names runs
        np.asarray(augjax.ops.flip(np.stack(x), key=jax.random.key(0), p=1.0)),
        np.stack(x)[:, :, ::-1])
