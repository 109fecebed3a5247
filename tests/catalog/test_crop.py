"""Crop ops against torchvision.transforms.v2 (CPU tensors).

- random_resized_crop: the boxes ``op.sample`` draws against a float64 transcription of
  torchvision's ``make_params`` loop fed with the same uniform draws (the sampler's documented
  draw layout), and their distribution against torchvision's own sampler; the resize of a
  sampled (or given) box against ``F.resized_crop`` on that box: nearest exact, bilinear <= 1e-5
  on float32 and <= 1 level on uint8 (ATen's uint8 kernel uses fixed-point weights; augjax
  rounds between the two passes as ATen does).
- random_crop: every output equals a window of torchvision's ``F.pad`` result, and the windows
  are uniform over the positions.
- center_crop: equal to ``F.center_crop``.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
import scipy.stats
import torch
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as F
from helpers import images, run_dali, seeds

import augjax
from augjax import Meta
from augjax.errors import InputError, ParamError

H, W = 24, 32


def tv(img: np.ndarray, fn, **kw) -> np.ndarray:
    t = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))
    return fn(t, **kw).numpy().transpose(1, 2, 0)


def hook_keys(keys: jax.Array) -> jax.Array:
    """The key a single op's ``sample`` hook gets for each sample: the op's key is
    ``fold_in(sample_key, 0)`` (chain position 0) and its hook gets ``fold_in(op_key, 1)``
    (the draw order ``augjax._core.spec`` documents)."""
    return jax.vmap(lambda k: jax.random.fold_in(jax.random.fold_in(k, 0), 1))(keys)


def rrc_uniforms(keys: jax.Array):
    """The uniform draws behind each sample's box, as the sampler documents them:
    ``u = uniform(hook_key, (22,))``: areas ``u[:10]``, ratios ``u[10:20]``, top, left."""
    u = np.asarray(jax.vmap(lambda k: jax.random.uniform(k, (22,)))(hook_keys(keys)), np.float64)
    return u[:, :10], u[:, 10:20], u[:, 20], u[:, 21]


def rrc_boxes(keys, h, w, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)) -> np.ndarray:
    """``random_resized_crop.sample``'s boxes ``(N, 4)`` for images of ``h`` x ``w``."""
    probe = np.zeros((len(keys), h, w, 1), np.uint8)
    params = augjax.ops.random_resized_crop.sample(probe, key=keys, size=8, scale=scale,
                                                   ratio=ratio)
    assert set(params) == {"box"} and params["box"].dtype == np.int32
    return np.asarray(params["box"])


# ---------------------------------------------------------------------------------------------
# random_resized_crop: the box


def tv_make_params(u_area, u_ratio, u_top, u_left, h, w, scale, ratio):
    """torchvision RandomResizedCrop.make_params in float64, with its draws replaced by the given
    uniforms (randint(0, n) -> floor(u * n)). Also returns whether an attempt up to the chosen one
    had sqrt(...) within 1e-4 of a .5 rounding tie (float32 may round those the other way), and
    whether the box is the fallback."""
    area = h * w
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    near_tie = False
    for t in range(10):
        target_area = area * (scale[0] + (scale[1] - scale[0]) * float(u_area[t]))
        aspect = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * float(u_ratio[t]))
        sw, sh = math.sqrt(target_area * aspect), math.sqrt(target_area / aspect)
        near_tie |= min(abs(sw % 1 - 0.5), abs(sh % 1 - 0.5)) < 1e-4
        cw, ch = int(round(sw)), int(round(sh))
        if 0 < cw <= w and 0 < ch <= h:
            return (int(u_top * (h - ch + 1)), int(u_left * (w - cw + 1)), ch, cw), near_tie, False
    in_ratio = w / h
    if in_ratio < min(ratio):
        cw, ch = w, int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        ch, cw = h, int(round(h * max(ratio)))
    else:
        cw, ch = w, h
    return ((h - ch) // 2, (w - cw) // 2, ch, cw), near_tie, True


@pytest.mark.fast_tier("40-12-scale3-ratio3-fallbacks3")
@pytest.mark.parametrize("h,w,scale,ratio,fallbacks", [
    (24, 32, (0.08, 1.0), (3 / 4, 4 / 3), (0, 0.01)),  # ImageNet defaults
    (20, 60, (0.3, 0.6), (0.9, 1.1), (0.1, 0.4)),  # wide: attempts fail, some samples fall back
    (32, 32, (0.9, 1.0), (3.0, 4.0), (1, 1)),  # nothing fits: fallback, the ratio clamped
    (40, 12, (0.9, 1.0), (2.0, 3.0), (1, 1)),  # the fallback of a tall image keeps the width
])
def test_rrc_box_matches_torchvision_make_params(h, w, scale, ratio, fallbacks):
    keys = jax.random.split(jax.random.key(0), 500)
    boxes = rrc_boxes(keys, h, w, scale, ratio)
    draws = rrc_uniforms(keys)
    ties = fell_back = 0
    for i, box in enumerate(boxes):
        ref, near_tie, fallback = tv_make_params(*(d[i] for d in draws), h, w, scale, ratio)
        fell_back += fallback
        if tuple(box) != ref:
            assert near_tie, (i, tuple(box), ref)
            ties += 1
    assert ties <= 2
    assert fallbacks[0] <= fell_back / len(boxes) <= fallbacks[1]
    assert (boxes[:, 2] <= h).all() and (boxes[:, 3] <= w).all()
    assert (boxes[:, 0] + boxes[:, 2] <= h).all() and (boxes[:, 1] + boxes[:, 3] <= w).all()


def test_rrc_box_distribution_matches_torchvision_sampler():
    n, h, w = 2000, 24, 32
    ours = rrc_boxes(jax.random.split(jax.random.key(1), n), h, w)
    torch.manual_seed(0)
    t = T.RandomResizedCrop(8)
    probe = torch.zeros(3, h, w)
    theirs = np.array([[p["top"], p["left"], p["height"], p["width"]]
                       for p in (t.make_params([probe]) for _ in range(n))])
    for col in range(4):  # top, left, height, width
        assert scipy.stats.ks_2samp(ours[:, col], theirs[:, col]).pvalue > 1e-3, col


# ---------------------------------------------------------------------------------------------
# random_resized_crop: the resize


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interp,antialias", [("bilinear", True), ("bilinear", False),
                                              ("nearest", True)])
@pytest.mark.parametrize("size", [(12, 12), (40, 30)])  # mostly shrinking; mostly enlarging
def test_rrc_matches_torchvision_resized_crop(size, interp, antialias, dtype):
    n = 6
    x = images(n, H, W, dtype=dtype, seed=1)
    keys = jax.random.split(jax.random.key(2), n)
    kw = dict(size=size, interpolation=interp, antialias=antialias)
    out = np.asarray(augjax.ops.random_resized_crop(x, key=keys, **kw))
    assert out.shape == (n, *size, 3) and out.dtype == x.dtype
    boxes = np.asarray(augjax.ops.random_resized_crop.sample(x, key=keys, **kw)["box"])
    off_by_one = 0
    for i in range(n):
        top, left, h, w = (int(v) for v in boxes[i])
        ref = tv(x[i], F.resized_crop, top=top, left=left, height=h, width=w, size=list(size),
                 interpolation=F.InterpolationMode(interp), antialias=antialias)
        diff = np.abs(out[i].astype(np.float64) - ref)
        if interp == "nearest":
            np.testing.assert_array_equal(out[i], ref)
        elif dtype == np.float32:
            assert diff.max() <= 1e-5
        else:
            assert diff.max() <= 1.0
            off_by_one += (diff > 0).sum()
    assert off_by_one <= 0.05 * out.size


def test_rrc_full_box_same_size_is_the_identity():
    x = images(3, H, W, dtype=np.float32, seed=2)
    out = augjax.ops.random_resized_crop(x, key=jax.random.key(0), size=(H, W), scale=(1.0, 1.0),
                                         ratio=(W / H, W / H))
    np.testing.assert_array_equal(out, x)


@pytest.mark.fast_tier("float32-True-size0")
@pytest.mark.parametrize("size,scale,ratio", [
    ((12, 12), (0.08, 1.0), (3 / 4, 4 / 3)),  # mostly shrinking
    ((40, 30), (0.08, 1.0), (3 / 4, 4 / 3)),  # mostly enlarging
    ((17, 29), (0.02, 0.5), (0.3, 3.0)),  # small boxes of very different aspect ratios
], ids=["size0", "size1", "size2"])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
def test_rrc_bicubic_matches_torchvision_resized_crop(dtype, antialias, size, scale, ratio):
    """``interpolation="bicubic"`` is ``F.resized_crop(..., InterpolationMode.BICUBIC,
    antialias=antialias)`` on the drawn boxes (ATen's ``_upsample_bicubic2d_aa`` with
    antialias, ``upsample_bicubic2d`` without). Measured (16 noise images each): float32
    within 9e-7; uint8 within 1 level, 0.33% to 0.63% of the values off by one (ATen's
    16-bit fixed-point weights against float32 ones; a uint8 result is clamped after each
    pass, as ATen's is)."""
    n = 16
    x = images(n, H, W, dtype=dtype, seed=1)
    keys = jax.random.split(jax.random.key(2), n)
    kw = dict(size=size, scale=scale, ratio=ratio, interpolation="bicubic", antialias=antialias)
    out = np.asarray(augjax.ops.random_resized_crop(x, key=keys, **kw))
    assert out.shape == (n, *size, 3) and out.dtype == x.dtype
    boxes = np.asarray(augjax.ops.random_resized_crop.sample(x, key=keys, **kw)["box"])
    diff = np.stack([np.abs(out[i].astype(np.float64) - tv(
        x[i], F.resized_crop, top=int(t), left=int(l), height=int(h), width=int(w),
        size=list(size), interpolation=F.InterpolationMode.BICUBIC, antialias=antialias))
        for i, (t, l, h, w) in enumerate(boxes)])
    if dtype == np.float32:
        assert diff.max() <= 1e-5, diff.max()
    else:
        assert diff.max() <= 1 and (diff > 0).mean() <= 0.01, (diff.max(), (diff > 0).mean())
    bilinear = np.asarray(augjax.ops.random_resized_crop(x, key=keys, **{
        **kw, "interpolation": "bilinear"}))
    assert not np.array_equal(out, bilinear)


@pytest.mark.slow
@pytest.mark.parametrize("antialias", [True, False])
def test_rrc_bicubic_of_any_box_is_within_two_levels_on_uint8(antialias):
    """Boxes of every size from 1 pixel up (64 noise images), resized bicubic to a smaller and
    a larger size: float32 within 1e-5 of torchvision, uint8 within 2 levels. Measured: uint8
    0.38% to 0.86% of the values 1 off, and 2 on 9 to 14 values of 291k (3e-5 to 5e-5), all
    in enlarged boxes: ATen's width pass (16-bit fixed-point weights) is one level off ours
    here and there, as for bilinear, and where two taps of one output are, the height pass's
    cubic weights (their absolute values sum to more than 1, and one exceeds 1 near the box's
    edges) carry the two past the final rounding."""
    rng = np.random.default_rng(3)
    n = 64
    x = images(n, H, W, dtype=np.uint8, seed=4)
    hs, ws = rng.integers(1, H + 1, n), rng.integers(1, W + 1, n)
    tops = (rng.random(n) * (H - hs + 1)).astype(int)
    lefts = (rng.random(n) * (W - ws + 1)).astype(int)
    boxes = np.stack([tops, lefts, hs, ws], 1).astype(np.int32)
    for dtype in (np.uint8, np.float32):
        xd = x if dtype == np.uint8 else (x / 255.0).astype(np.float32)
        for size in [(9, 11), (37, 41)]:
            out = np.asarray(augjax.ops.random_resized_crop.apply(
                xd, params={"box": boxes}, size=size, interpolation="bicubic",
                antialias=antialias))
            diff = np.stack([np.abs(out[i].astype(np.float64) - tv(
                xd[i], F.resized_crop, top=int(t), left=int(l), height=int(h), width=int(w),
                size=list(size), interpolation=F.InterpolationMode.BICUBIC,
                antialias=antialias)) for i, (t, l, h, w) in enumerate(boxes)])
            if dtype == np.float32:
                assert diff.max() <= 1e-5, (size, diff.max())
            else:
                assert diff.max() <= 2 and (diff > 1).mean() <= 2e-4, (size, diff.max())
                assert (diff > 0).mean() <= 0.02, (size, (diff > 0).mean())


@pytest.mark.parametrize("antialias", [True, False])
def test_rrc_bicubic_full_box_same_size_is_the_identity(antialias):
    """A box resized to its own size reads each pixel with weight 1 (the cubic is 0 at the
    other integers): the identity, bitwise, on both dtypes."""
    for dtype in (np.uint8, np.float32):
        x = images(3, H, W, dtype=dtype, seed=2)
        out = augjax.ops.random_resized_crop(x, key=jax.random.key(0), size=(H, W),
                                             scale=(1.0, 1.0), ratio=(W / H, W / H),
                                             interpolation="bicubic", antialias=antialias)
        np.testing.assert_array_equal(out, x)


def test_bicubic_is_offered_by_the_resizes_only():
    """``random_resized_crop`` and ``resize`` resample bicubic; the warps, the detection crops
    and zooms keep their two modes (:data:`augjax.kernels.warp.INTERPOLATIONS`)."""
    from augjax.kernels.resize import RESIZE_INTERPOLATIONS
    from augjax.kernels.warp import INTERPOLATIONS

    assert RESIZE_INTERPOLATIONS == ("nearest", "bilinear", "bicubic")
    for name in ("random_resized_crop", "resize"):
        assert getattr(augjax.ops, name).params["interpolation"].choices == RESIZE_INTERPOLATIONS
    for name in ("rotate", "affine", "perspective", "random_iou_crop", "random_zoom_out",
                 "scale_jitter"):
        spec = getattr(augjax.ops, name)
        assert spec.params["interpolation"].choices == INTERPOLATIONS, name
    with pytest.raises(ParamError, match="rotate: parameter 'interpolation'"):
        augjax.ops.rotate.bind(degrees=10.0, interpolation="bicubic")


# ---------------------------------------------------------------------------------------------
# random_crop


def windows(padded: np.ndarray, out: np.ndarray) -> list[tuple[int, int]]:
    """The (top, left) positions where ``out`` is a window of ``padded``."""
    ch, cw = out.shape[:2]
    return [(t, l) for t in range(padded.shape[0] - ch + 1) for l in range(padded.shape[1] - cw + 1)
            if np.array_equal(padded[t:t + ch, l:l + cw], out)]


def tv_fill(fill, dtype):
    """torchvision's fill for augjax's (a fraction of the range): ``fill * 255`` for uint8."""
    scale = 255.0 if dtype == np.uint8 else 1.0
    return [v * scale for v in fill] if isinstance(fill, tuple) else fill * scale


@pytest.mark.fast_tier("float32-constant-padding1-fill1")
@pytest.mark.parametrize("pad_mode,padding,fill", [
    ("constant", 4, 0.0), ("constant", (2, 3), (10 / 255, 20 / 255, 30 / 255)),
    ("constant", 1, 0.6), ("edge", (1, 2, 3, 4), 0.0), ("reflect", 3, 0.0),
    ("symmetric", (3, 1), 0.0),
])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_random_crop_is_a_window_of_torchvision_pad(pad_mode, padding, fill, dtype):
    """``fill`` is a fraction of the range (one config for both dtypes); torchvision gets
    ``fill * 255`` for uint8 (0.6 is 153, a whole level, so torchvision's cast is exact)."""
    n, size = 6, (H, W)  # CIFAR style: pad, then crop back to the input size
    x = images(n, H, W, dtype=dtype, seed=3)
    kw = dict(size=size, padding=padding, fill=fill, pad_mode=pad_mode)
    out = np.asarray(augjax.ops.random_crop(x, key=jax.random.key(3), **kw))
    offsets = np.asarray(augjax.ops.random_crop.sample(x, key=jax.random.key(3), **kw)["offset"])
    tv_padding = [padding] if isinstance(padding, int) else list(padding)
    pad_left, pad_top = (tv_padding * 2)[:2]  # p, (left/right, top/bottom), (left, top, ...)
    tv_fill_ = tv_fill(fill, dtype)
    for i in range(n):
        padded = tv(x[i], F.pad, padding=tv_padding, fill=tv_fill_, padding_mode=pad_mode)
        top, left = offsets[i] + (pad_top, pad_left)  # the sampled window, in the padded image
        np.testing.assert_array_equal(out[i], padded[top:top + H, left:left + W])
    assert len({tuple(o) for o in offsets}) > 1


def test_random_crop_fill_between_levels_rounds_for_uint8():
    """A fraction between two uint8 levels (0.5 -> 127.5) is rounded to the nearest level
    (half to even: 128), where torchvision's cast truncates; float32 keeps it exactly."""
    x8 = np.full((2, 4, 4, 3), 9, np.uint8)
    size = (12, 12)  # padding 4 on each side: the crop is the whole padded image
    out8 = np.asarray(augjax.ops.random_crop(x8, key=jax.random.key(0), size=size, padding=4,
                                             fill=(0.5, 0.2, 1.0)))
    outf = np.asarray(augjax.ops.random_crop(x8.astype(np.float32) / 255, key=jax.random.key(0),
                                             size=size, padding=4, fill=(0.5, 0.2, 1.0)))
    border = np.ones(size, bool)
    border[4:8, 4:8] = False
    np.testing.assert_array_equal(out8[:, border], np.broadcast_to([128, 51, 255], (2, 128, 3)))
    np.testing.assert_array_equal(outf[:, border],
                                  np.broadcast_to(np.float32([0.5, 0.2, 1.0]), (2, 128, 3)))
    np.testing.assert_array_equal(out8[:, 4:8, 4:8], x8)


def test_random_crop_positions_are_uniform():
    n = 1200
    x = np.arange(4 * 5, dtype=np.float32).reshape(1, 4, 5, 1).repeat(n, 0) + 1
    out = np.asarray(augjax.ops.random_crop(x, key=jax.random.key(4), size=(3, 3), padding=1))
    offsets = np.asarray(augjax.ops.random_crop.sample(x, key=jax.random.key(4), size=(3, 3),
                                                       padding=1)["offset"])
    padded = np.pad(x[0], ((1, 1), (1, 1), (0, 0)))
    pos = [windows(padded, o) for o in out]
    assert all(len(p) == 1 for p in pos)
    np.testing.assert_array_equal(np.array([p[0] for p in pos]), offsets + 1)
    counts = np.bincount([t * 5 + l for ((t, l),) in pos], minlength=4 * 5)
    assert scipy.stats.chisquare(counts).pvalue > 1e-3


def test_random_crop_pad_if_needed_matches_torchvision():
    x = images(4, 10, 12, seed=5)
    out = np.asarray(augjax.ops.random_crop(x, key=jax.random.key(5), size=(16, 14),
                                            pad_if_needed=True, fill=7 / 255))
    offsets = np.asarray(augjax.ops.random_crop.sample(x, key=jax.random.key(5), size=(16, 14),
                                                       pad_if_needed=True)["offset"])
    for i in range(4):
        # torchvision pads the shortfall (6 rows, 2 columns) on both sides.
        padded = tv(x[i], F.pad, padding=[2, 6, 2, 6], fill=7.0)
        top, left = offsets[i] + (6, 2)
        np.testing.assert_array_equal(out[i], padded[top:top + 16, left:left + 14])


def test_random_crop_errors():
    x = images(2, 10, 12)
    k = jax.random.key(0)
    with pytest.raises(InputError, match=r"random_crop: the crop size \(16, 12\) is larger than "
                                         r"the image \(10, 12\)"):
        augjax.ops.random_crop(x, key=k, size=(16, 12))
    with pytest.raises(InputError, match="random_crop: a per-channel fill needs pad_mode="):
        augjax.ops.random_crop(x, key=k, size=8, padding=2, fill=(0.1, 0.2, 0.3),
                               pad_mode="edge")
    with pytest.raises(ParamError, match=r"random_crop: parameter 'fill' expects .*\[0, 1\]"):
        augjax.ops.random_crop(x, key=k, size=8, padding=2, fill=7.0)  # uint8 levels by mistake
    with pytest.raises(ParamError, match="random_crop: parameter 'padding'"):
        augjax.ops.random_crop(x, key=k, size=8, padding=(1, 2, 3))
    with pytest.raises(ParamError, match="random_crop: parameter 'padding'"):
        augjax.ops.random_crop(x, key=k, size=8, padding=1.5)
    with pytest.raises(ParamError, match="random_crop: parameter 'size' is required"):
        augjax.ops.random_crop(x, key=k)


# ---------------------------------------------------------------------------------------------
# center_crop


@pytest.mark.parametrize("size", [(10, 10), (13, 17), (24, 32), (30, 20), (31, 41), 9])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_center_crop_matches_torchvision(size, dtype):
    x = images(2, H, W, dtype=dtype, seed=6)
    out = np.asarray(augjax.ops.center_crop(x, size=size))
    want = (size, size) if isinstance(size, int) else size
    for i in range(2):
        np.testing.assert_array_equal(out[i], tv(x[i], F.center_crop, output_size=list(want)))


def test_center_crop_chw():
    x = images(2, 9, 11, dtype=np.float32, seed=7)
    chw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    out = np.asarray(augjax.ops.center_crop(chw, size=(4, 7), layout="CHW"))
    np.testing.assert_array_equal(out, F.center_crop(torch.from_numpy(chw), [4, 7]).numpy())


# ---------------------------------------------------------------------------------------------
# DALI, layouts, randomness, errors

CROPS = [("random_resized_crop", dict(size=(12, 10))),
         ("random_crop", dict(size=(20, 28), padding=2, pad_mode="reflect")),
         ("center_crop", dict(size=(15, 15)))]


@pytest.mark.slow
@pytest.mark.parametrize("dtype,layout", [(np.uint8, "HWC"), (np.float32, "CHW")])
def test_dali_path_equals_array_path(dtype, layout):
    x = images(4, H, W, dtype=dtype, seed=8)
    if layout == "CHW":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    s = seeds(4, seed=5)

    def build(imgs, sd):
        outs = []
        for name, params in CROPS:
            extra = {} if name == "center_crop" else {"seeds": sd}
            outs.append(getattr(augjax.ops, name)(imgs, layout=layout, **extra, **params))
        return tuple(outs)

    (outs,) = run_dali(build, x, s, layouts=[layout, None])
    keys = augjax.keys_from_seeds(s)
    for (name, params), got in zip(CROPS, outs, strict=True):
        extra = {} if name == "center_crop" else {"key": keys}
        want = np.asarray(getattr(augjax.ops, name)(x, layout=layout, **extra, **params))
        if name == "random_resized_crop" and layout == "HWC":
            # HWC: DALI's fn.resize resamples augjax's windows (docs/guide/ragged.md): it differs
            # on the output's border, where it repeats the box's edge pixel
            d = np.abs(got.astype(np.float64) - want.astype(np.float64))
            assert d.max() <= 16 and d[:, 1:-1, 1:-1].max() <= 1, (d.max(), d[:, 1:-1, 1:-1])
            continue
        np.testing.assert_array_equal(got, want, err_msg=name)
        h, w = params["size"]
        assert got.shape == ((4, 3, h, w) if layout == "CHW" else (4, h, w, 3))


@pytest.mark.gpu
def test_dali_gpu_path_equals_array_path():
    x, s = images(4, H, W, seed=9), seeds(4, seed=6)
    name, params = CROPS[0]
    (outs,) = run_dali(lambda im, sd: getattr(augjax.ops, name)(im, seeds=sd, **params), x, s,
                       layouts=["HWC", None], device="gpu")
    np.testing.assert_array_equal(
        outs[0], augjax.ops.random_resized_crop(x, key=augjax.keys_from_seeds(s), **params))


@pytest.mark.parametrize("name,params", CROPS[:2])
def test_chw_equals_hwc_and_keys_reproduce(name, params):
    spec = getattr(augjax.ops, name)
    x = images(4, H, W, dtype=np.float32, seed=10)
    k = jax.random.key(11)
    a = np.asarray(spec(x, key=k, **params))
    b = np.asarray(spec(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), key=k, layout="CHW",
                        **params))
    np.testing.assert_array_equal(a, b.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(a, spec(x, key=jax.random.key(11), **params))
    assert not np.array_equal(a, spec(x, key=jax.random.key(12), **params))


@pytest.mark.parametrize("params,match", [
    (dict(size=(8, 8), scale=(1.0, 0.5)), "random_resized_crop: parameter 'scale' .*low > high"),
    (dict(size=(8, 8), ratio=(0.0, 1.0)), "random_resized_crop: parameter 'ratio' .*\\(0, inf\\).*must be > 0"),
    (dict(size=(0, 8)), "random_resized_crop: parameter 'size'"),
    (dict(size=8, interpolation="lanczos"), "random_resized_crop: parameter 'interpolation'"),
    (dict(), "random_resized_crop: parameter 'size' is required"),
])
def test_rrc_bad_params(params, match):
    with pytest.raises(ParamError, match=match):
        augjax.ops.random_resized_crop(images(1, 8, 8), key=jax.random.key(0), **params)


def test_output_size_is_declared():
    for name, params in CROPS:
        bound = getattr(augjax.ops, name).bind(**params)
        assert bound.spec.output_size(H, W, **bound.kwargs) == params["size"]




# ---------------------------------------------------------------------------------------------
# sample / apply: the public params


@pytest.mark.fast_tier(
    "random_resized_crop-params0-uint8-HWC", "random_crop-params1-float32-CHW",
    "center_crop-params2-uint8-HWC")
@pytest.mark.parametrize("dtype,layout", [(np.uint8, "HWC"), (np.float32, "CHW")])
@pytest.mark.parametrize("name,params", CROPS)
def test_sample_then_apply_is_the_call_bitwise(name, params, dtype, layout):
    spec = getattr(augjax.ops, name)
    x = images(5, H, W, dtype=dtype, seed=12)
    if layout == "CHW":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    k = jax.random.key(13)
    sampled = spec.sample(x, key=k, layout=layout, **params)
    fields = {"random_resized_crop": {"box": (4,)}, "random_crop": {"offset": (2,)},
              "center_crop": {}}[name]
    assert {f: tuple(v.shape) for f, v in sampled.items()} == {f: (5, *s)
                                                               for f, s in fields.items()}
    assert all(v.dtype == np.int32 for v in sampled.values())
    called = spec(x, key=k, layout=layout, **params) if spec.random else spec(x, layout=layout,
                                                                               **params)
    np.testing.assert_array_equal(spec.apply(x, params=sampled, layout=layout, **params), called)


@pytest.mark.parametrize("interp", ["nearest", "bilinear", "bicubic"])
def test_rrc_apply_with_an_exact_box_is_torchvision_resized_crop(interp):
    x = images(3, H, W, dtype=np.float32, seed=14)
    boxes = np.array([[0, 0, H, W], [3, 5, 10, 20], [20, 30, 4, 2]], np.int32)
    out = np.asarray(augjax.ops.random_resized_crop.apply(
        x, params={"box": boxes}, size=(9, 11), interpolation=interp))
    for i, (top, left, h, w) in enumerate(boxes):
        ref = tv(x[i], F.resized_crop, top=int(top), left=int(left), height=int(h), width=int(w),
                 size=[9, 11], interpolation=F.InterpolationMode(interp), antialias=True)
        np.testing.assert_allclose(out[i], ref, atol=0 if interp == "nearest" else 1e-5)
    same = augjax.ops.random_resized_crop.apply(x, params={"box": np.tile([0, 0, H, W], (3, 1))},
                                                size=(H, W))
    np.testing.assert_array_equal(same, x)  # the whole image at its own size: the identity


def test_random_crop_apply_with_an_edited_offset():
    x = images(2, H, W, seed=15)
    kw = dict(size=(10, 12), padding=(2, 3))  # left/right 2, top/bottom 3
    offsets = np.array([[-3, -2], [5, 7]], np.int32)
    out = np.asarray(augjax.ops.random_crop.apply(x, params={"offset": offsets}, **kw))
    padded = np.pad(x, ((0, 0), (3, 3), (2, 2), (0, 0)))
    np.testing.assert_array_equal(out[0], padded[0, :10, :12])  # the padded image's corner
    np.testing.assert_array_equal(out[1], x[1, 5:15, 7:19])  # a window of the image itself


def _forward(spec, params, i, config):
    bound = spec.bind(**config)
    meta = Meta(H, W, 3, "float32")
    one = {k: v[i] for k, v in params.items()}
    return np.asarray(spec.matrix(one, meta, **bound.kwargs), np.float64)


@pytest.mark.parametrize("name,params", CROPS[1:] + [("center_crop", dict(size=(30, 40)))])
def test_crop_matrix_maps_each_input_pixel_to_where_it_lands(name, params):
    """random_crop / center_crop: input pixel (x, y) is output pixel M @ (x, y, 1) wherever
    that lies inside the output (a pure translation)."""
    spec = getattr(augjax.ops, name)
    x = images(3, H, W, dtype=np.float32, seed=16)
    sampled = spec.sample(x, key=jax.random.key(17), **params)
    out = np.asarray(spec.apply(x, params=sampled, **params))
    oh, ow = out.shape[1:3]
    for i in range(3):
        m = _forward(spec, sampled, i, params)
        np.testing.assert_array_equal(m[:2, :2], np.eye(2))
        hits = 0
        for y in range(H):
            for x_ in range(W):
                u, v = (m @ (x_, y, 1.0))[:2]
                if 0 <= u < ow and 0 <= v < oh:
                    np.testing.assert_array_equal(out[i, int(v), int(u)], x[i, y, x_])
                    hits += 1
        assert hits > 0


def test_rrc_matrix_maps_the_box_onto_the_output():
    """The box's outer edges (pixel centres +-0.5) land on the output's edges."""
    params = dict(size=(12, 10))
    spec = augjax.ops.random_resized_crop
    sampled = spec.sample(images(4, H, W), key=jax.random.key(18), **params)
    for i in range(4):
        top, left, h, w = np.asarray(sampled["box"][i], np.float64)
        m = _forward(spec, sampled, i, params)
        corners = m @ np.array([[left - 0.5, left + w - 0.5], [top - 0.5, top + h - 0.5],
                                [1.0, 1.0]])
        np.testing.assert_allclose(corners[:2], [[-0.5, 10 - 0.5], [-0.5, 12 - 0.5]], atol=1e-4)


@pytest.mark.fast_tier("random_crop-params1")
@pytest.mark.parametrize("name,params", CROPS)
def test_apply_is_differentiable_in_the_image(name, params):
    spec = getattr(augjax.ops, name)
    x = jax.numpy.asarray(images(2, H, W, dtype=np.float32, seed=19))
    sampled = spec.sample(x, key=jax.random.key(20), **params)
    grad = jax.grad(lambda v: spec.apply(v, params=sampled, **params).sum())(x)
    g = np.asarray(grad)
    assert np.isfinite(g).all() and g.sum() > 0
    if name == "center_crop":  # a plain crop: each pixel is kept once or dropped
        assert set(np.unique(g)) <= {0.0, 1.0}
