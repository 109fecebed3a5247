"""Exact references where a style is named.

1. ``convention="pil"`` geometric ops against timm's own PIL functions
   (``timm.data.auto_augment.rotate / shear_x / shear_y / translate_*``), with exact values
   through ``op.apply(x, params=...)``, and their matrices by point mapping.
2. torchvision's magnitude bins: every torchvision policy space gives exactly the values
   ``torchvision.transforms.v2``'s ``_AUGMENTATION_SPACE`` gives, as torchvision uses them.

Tolerances: nearest sampling is compared bitwise. Bilinear uint8 results may differ by one
level: PIL interpolates in float64 and truncates (``(UINT8)v``), augjax interpolates in
float32, so where the exact value is a whole level (frequent with simple coefficients such as
a shear of 0.3, whose source fractions repeat) float32 noise can truncate it one level lower
or higher.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import augjax
from augjax._plugins.registry import REGISTRY
from augjax.policies import tables as T
from augjax.policies._magnitude import resolve

aa = pytest.importorskip("timm.data.auto_augment")
tv_aa = pytest.importorskip("torchvision.transforms.v2._auto_augment")

#: uint8 against timm: odd sides wider than high (17x23), a square (32x32), even sides higher
#: than wide (64x48). 31x45 (odd, wider than high, as 17x23) is float32's size
#: (test_pil_convention_matches_pil_float32: the same maps, compared bitwise for nearest);
#: uint8's own rule, PIL's truncation, is the same at every size.
SIZES = [(17, 23), (32, 32), (64, 48)]
RESAMPLE = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR}
FILL = (128, 128, 128)


def _image(h, w, seed):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _f32(v):
    return float(np.float32(v))


# (augjax op, its params, extra op params, timm function, timm's argument). Relative shifts use
# fractions whose product with the side is exact in float32, as timm computes it in float64.
def _cases(h, w):
    return [
        ("rotate", {"degrees": 27.0}, {}, aa.rotate, 27.0),
        ("rotate", {"degrees": -13.5}, {}, aa.rotate, -13.5),
        ("rotate", {"degrees": 3.7}, {}, aa.rotate, _f32(3.7)),
        ("rotate", {"degrees": 90.0}, {}, aa.rotate, 90.0),
        ("rotate", {"degrees": -90.0}, {}, aa.rotate, -90.0),
        ("rotate", {"degrees": 180.0}, {}, aa.rotate, 180.0),
        ("rotate", {"degrees": 0.0}, {}, aa.rotate, 0.0),
        ("shear_x", {"shear": 0.25}, {}, aa.shear_x, 0.25),
        ("shear_x", {"shear": -0.27}, {}, aa.shear_x, _f32(-0.27)),
        ("shear_y", {"shear": 0.3}, {}, aa.shear_y, _f32(0.3)),
        ("shear_y", {"shear": -0.125}, {}, aa.shear_y, -0.125),
        # timm's translate moves content left/up for a positive argument: augjax's -value.
        ("translate_x", {"translate": -0.125}, {}, aa.translate_x_rel, 0.125),
        ("translate_x", {"translate": 0.3125}, {}, aa.translate_x_rel, -0.3125),
        ("translate_y", {"translate": 0.375}, {}, aa.translate_y_rel, -0.375),
        ("translate_y", {"translate": -0.2}, {}, aa.translate_y_rel, _f32(0.2)),
        ("translate_x", {"translate": -7.5}, {"relative": False}, aa.translate_x_abs, 7.5),
        ("translate_y", {"translate": 11.25}, {"relative": False}, aa.translate_y_abs, -11.25),
        ("translate_x", {"translate": 300.0}, {"relative": False}, aa.translate_x_abs, -300.0),
    ]


def _augjax(name, params, extra, x, resample, fill=128 / 255):
    op = getattr(augjax.ops, name)
    p = {k: jnp.asarray([v], jnp.float32) for k, v in params.items()}
    return np.asarray(op.apply(jnp.asarray(x)[None], params=p, convention="pil",
                               interpolation=resample, fill=fill, **extra))[0]


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("resample", ["nearest", "bilinear"])
def test_pil_convention_matches_timm_uint8(size, resample):
    h, w = size
    x = _image(h, w, seed=h * w)
    pil = Image.fromarray(x)
    for name, params, extra, fn, arg in _cases(h, w):
        ref = np.asarray(fn(pil, arg, resample=RESAMPLE[resample], fillcolor=FILL))
        out = _augjax(name, params, extra, x, resample)
        diff = np.abs(out.astype(int) - ref.astype(int))
        if resample == "nearest":
            np.testing.assert_array_equal(out, ref, err_msg=f"{name} {params}")
        else:
            assert diff.max() <= 1, (name, params, diff.max())
            # Not a systematic offset: nearly every value is PIL's exactly (measured: at most
            # 4% of the values, a 3.4 px shift of a 17-row image).
            assert (diff > 0).mean() < 0.06, (name, params, (diff > 0).mean())


@pytest.mark.fast_tier("nearest")
@pytest.mark.parametrize("resample", ["nearest", "bilinear"])
def test_pil_convention_matches_pil_float32(resample):
    """float32 images follow PIL's mode "F" (no truncation), channel by channel."""
    h, w = 31, 45
    x = np.random.default_rng(3).random((h, w, 3), dtype=np.float32)
    for name, params, extra, fn, arg in _cases(h, w):
        out = _augjax(name, params, extra, x, resample, fill=0.25)
        ref = np.stack([np.asarray(fn(Image.fromarray(x[..., c], mode="F"), arg,
                                      resample=RESAMPLE[resample], fillcolor=0.25))
                        for c in range(3)], -1)
        if resample == "nearest":
            np.testing.assert_array_equal(out, ref, err_msg=f"{name} {params}")
        else:
            np.testing.assert_allclose(out, ref, atol=5e-5, err_msg=f"{name} {params}")


def test_pil_convention_edges_differ_from_torchvision_convention():
    """The conventions differ only where the rules differ: a fractional shift, and the border
    (torchvision blends border pixels with the fill by footprint; PIL clamps)."""
    x = _image(32, 32, seed=5)
    p = {"translate": 0.25}  # 8 px: whole pixels, same map in both conventions
    pil = _augjax("translate_x", p, {}, x, "bilinear")
    tv = np.asarray(augjax.ops.translate_x.apply(
        jnp.asarray(x)[None], params={k: jnp.asarray([v], jnp.float32) for k, v in p.items()},
        interpolation="bilinear", fill=128 / 255))[0]
    np.testing.assert_array_equal(pil, tv)
    frac = {"translate": 0.3}  # 9.6 px: torchvision truncates to 9, PIL shifts by 9.6
    assert not np.array_equal(_augjax("translate_x", frac, {}, x, "nearest"), np.asarray(
        augjax.ops.translate_x.apply(jnp.asarray(x)[None],
                                     params={"translate": jnp.asarray([0.3], jnp.float32)},
                                     fill=128 / 255))[0])


@pytest.mark.parametrize("size", [(31, 45), (32, 32)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name,params,extra", [
    ("rotate", {"degrees": 27.0}, {}),
    ("rotate", {"degrees": -90.0}, {}),
    ("shear_x", {"shear": 0.3}, {}),
    ("shear_y", {"shear": -0.25}, {}),
    ("translate_x", {"translate": 0.3}, {}),
    ("translate_y", {"translate": -4.5}, {"relative": False}),
])
def test_pil_convention_matrix_maps_each_pixel_to_where_pil_puts_it(size, name, params, extra):
    """Point mapping against PIL itself: a single lit input pixel at (x, y) (pixel centres at
    whole coordinates) lands, under PIL's bilinear warp, with its mass centred on
    ``M @ (x, y, 1)``."""
    h, w = size
    op = getattr(augjax.ops, name)
    p = {k: jnp.asarray([v], jnp.float32) for k, v in params.items()}
    m = np.asarray(augjax.matrices(op.bind(convention="pil", **extra), p, (h, w)))[0]
    fn = {"rotate": lambda im, v: im.rotate(v, resample=Image.BILINEAR),
          "shear_x": lambda im, v: im.transform(im.size, Image.AFFINE, (1, v, 0, 0, 1, 0),
                                                Image.BILINEAR),
          "shear_y": lambda im, v: im.transform(im.size, Image.AFFINE, (1, 0, 0, v, 1, 0),
                                                Image.BILINEAR)}
    value = float(np.float32(next(iter(params.values()))))
    checked = 0
    for py in range(3, h - 3, 5):
        for px in range(3, w - 3, 7):
            src = np.zeros((h, w), np.float32)
            src[py, px] = 1.0
            im = Image.fromarray(src, mode="F")
            if name.startswith("translate"):
                shift = value * (w if name.endswith("x") else h) if not extra else value
                co = (1, 0, -shift, 0, 1, 0) if name.endswith("x") else (1, 0, 0, 0, 1, -shift)
                out = np.asarray(im.transform(im.size, Image.AFFINE, co, Image.BILINEAR))
            else:
                out = np.asarray(fn[name](im, value))
            q = m @ np.array([px, py, 1.0])
            if not (1 <= q[0] <= w - 2 and 1 <= q[1] <= h - 2):
                continue
            ys, xs = np.mgrid[:h, :w]
            mass = out.sum()
            centre = ((out * xs).sum() / mass, (out * ys).sum() / mass)
            # A rotated bilinear footprint is centred on the point only to about 0.05 px
            # (the grid aliases it); a half-pixel convention error would be 0.5 px.
            tol = 0.1 if name == "rotate" and abs(value) % 90 else 1e-3
            np.testing.assert_allclose(centre, q[:2], atol=tol, err_msg=f"pixel {(px, py)}")
            checked += 1
    assert checked >= 6


# -------------------------------------------------------------------------------------------
# torchvision magnitude bins


_TV_SPACES = [  # (augjax table, torchvision class, number of bins torchvision's policy uses)
    (T.TV_RAND_AUGMENT, tv_aa.RandAugment, 31),
    (T.TV_TRIVIAL_AUGMENT_WIDE, tv_aa.TrivialAugmentWide, 31),
    (T.TV_AUTO_AUGMENT, tv_aa.AutoAugment, 10),  # _get_policies: magnitudes_fn(10, ...)
    (T.TV_AUGMIX, tv_aa.AugMix, 10),  # magnitudes_fn(self._PARAMETER_MAX = 10, ...)
]


def _as_used(name, magnitude):
    """What torchvision's ``_apply_image_or_video_transform`` does with a magnitude (a Python
    float of the float32 bin), as the augjax parameter (float32) it corresponds to."""
    if name.startswith("Translate") or name == "Posterize":
        return float(int(magnitude))
    if name in ("Brightness", "Color", "Contrast", "Sharpness"):
        return _f32(1.0 + magnitude)
    if name == "Solarize":
        # threshold=255.0 * magnitude, compared with uint8 pixels in float32.
        return _f32(255.0 * magnitude)
    return _f32(magnitude)  # ShearX/Y (the factor), Rotate (degrees)


@pytest.mark.parametrize("size", [(224, 224), (187, 333)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("space,cls,bins", _TV_SPACES,
                         ids=["rand_augment", "trivial_augment_wide", "auto_augment", "augmix"])
def test_torchvision_bins_exact(space, cls, bins, size):
    h, w = size
    tv_space = cls._AUGMENTATION_SPACE
    checked = 0
    for entry in space:
        if entry.param is None or tv_space[entry.name][0](bins, h, w) is None:
            continue
        mag = resolve(entry, REGISTRY.get(entry.op)).magnitude
        table = mag.table(bins - 1, bins - 1, h, w)
        ref = tv_space[entry.name][0](bins, h, w)
        signed = tv_space[entry.name][1]
        for i in range(bins):
            want = _as_used(entry.name, float(ref[i]))
            assert float(table[0, i]) == want, (entry.name, i, float(ref[i]), table[0, i])
            if signed:
                neg = _as_used(entry.name, -float(ref[i]))
                assert float(table[1, i]) == neg, (entry.name, i, table[1, i])
            if entry.name == "Solarize":  # the consequence on uint8: which levels invert
                levels = np.arange(256, dtype=np.float32)
                np.testing.assert_array_equal(levels >= table[0, i],
                                              levels >= np.float32(255.0 * float(ref[i])))
            checked += 1
    assert checked >= 8 * (bins - 1)


def test_torchvision_known_bins():
    """The bins that float64 lerps get wrong: TrivialAugmentWide's translate bin 15 is
    15.999999 in torchvision (15 px), and v2 Solarize bins 16/18/24 of 31."""
    ta = {e.name: e for e in T.TV_TRIVIAL_AUGMENT_WIDE}
    mag = resolve(ta["TranslateX"], REGISTRY.get("translate_x")).magnitude
    assert mag.value(15, 30, False, 224, 224) == 15.0
    sol = resolve(ta["Solarize"], REGISTRY.get("solarize")).magnitude
    ref = tv_aa.TrivialAugmentWide._AUGMENTATION_SPACE["Solarize"][0](31, 224, 224)
    for i in (16, 18, 24):
        assert _f32(sol.value(i, 30, False, 224, 224)) == _f32(255.0 * float(ref[i]))
    tx = tv_aa.TrivialAugmentWide._AUGMENTATION_SPACE["TranslateX"][0](31, 224, 224)
    assert 15.0 < float(tx[15]) < 16.0  # what makes bin 15 a 15 px shift


@pytest.mark.fast_tier("ShearY-True")
@pytest.mark.parametrize("negate", [False, True])
@pytest.mark.parametrize("name", ["Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel",
                                  "TranslateX", "TranslateY"])
def test_timm_table_entries_follow_timm(name, negate, monkeypatch):
    """timm's op table entry (map, sign, fixed convention) at a level, applied through the op,
    is timm's ``NAME_TO_OP[name](img, *LEVEL_TO_ARG[name](level, hparams))`` with the same sign
    draw (nearest: bitwise)."""
    h, w = 31, 45
    x = _image(h, w, seed=11)
    hparams = {"translate_const": 20, "translate_pct": 0.45}
    entry = T.timm_ops(**hparams)[name]
    mag = resolve(entry, REGISTRY.get(entry.op)).magnitude
    fixed = dict(entry.fixed)
    assert fixed["convention"] == "pil"
    # timm negates when random.random() > 0.5.
    monkeypatch.setattr(aa.random, "random", lambda: 1.0 if negate else 0.0)
    for level in (3, 9):
        (arg,) = aa.LEVEL_TO_ARG[name](level, hparams)
        ref = np.asarray(aa.NAME_TO_OP[name](Image.fromarray(x), arg, resample=Image.NEAREST,
                                             fillcolor=FILL))
        value = mag.value(level, 10, negate, h, w)
        out = np.asarray(getattr(augjax.ops, entry.op).apply(
            jnp.asarray(x)[None], params={entry.param: jnp.asarray([value], jnp.float32)},
            interpolation="nearest", fill=128 / 255, **fixed))[0]
        np.testing.assert_array_equal(out, ref, err_msg=f"{name} level {level}")


@pytest.mark.fast_tier("shear_y-params1")
@pytest.mark.parametrize("name,params", [("rotate", {"degrees": (-30.0, 30.0)}),
                                         ("shear_y", {"shear": (-0.3, 0.3)}),
                                         ("translate_x", {"translate": (-0.45, 0.45)})])
def test_pil_convention_sample_apply_is_the_call(name, params):
    import jax

    op = getattr(augjax.ops, name)
    x = jnp.asarray(np.stack([_image(20, 26, seed=s) for s in range(3)]))
    kw = dict(params, convention="pil", interpolation="bilinear", fill=0.5)
    key = jax.random.key(4)
    drawn = op.sample(x, key=key, **kw)
    np.testing.assert_array_equal(np.asarray(op(x, key=key, **kw)),
                                  np.asarray(op.apply(x, params=drawn, **kw)))
