"""Tone ops (augjax.catalog.tone) against PIL ImageOps/ImageEnhance, timm and torchvision.

Tolerances: uint8 max |diff| <= 1 level against torchvision, autocontrast bitwise (uint8 and
float32); the PIL comparisons of invert, solarize, posterize, equalize and timm's solarize_add are
exact, sharpness and autocontrast <= 1 level (PIL's rounded tables). float32 <= 2e-6 against
torchvision's float kernels.

Drawn values are read through ``op.sample``; exact values go through ``op.apply(x, params=...)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import check_grad, images, run_dali, seeds, tv
from PIL import Image, ImageEnhance, ImageOps
from timm.data import auto_augment as timm_aa
from torchvision.transforms.v2 import RandAugment
from torchvision.transforms.v2 import functional as F

import augjax
from augjax.errors import InputError, ParamError

DTYPES = (np.uint8, np.float32)
TOL = {np.uint8: 1.0, np.float32: 2e-6}
KEY = jax.random.key(0)


def pil(fn, x: np.ndarray) -> np.ndarray:
    squeeze = x.shape[-1] == 1
    out = [np.asarray(fn(Image.fromarray(s[..., 0] if squeeze else s))) for s in x]
    return np.stack(out)[..., None] if squeeze else np.stack(out)


def maxdiff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def run(name, x, **kw):
    spec = augjax.get_op(name)
    return np.asarray(spec(x, key=KEY, **kw) if spec.random else spec(x, **kw))


def _data() -> dict[str, np.ndarray]:
    """uint8 batches with different histograms: uniform noise, few levels (with a constant and an
    almost constant channel), and a narrow normal distribution."""
    rng = np.random.default_rng(3)
    few = (rng.integers(0, 6, (4, 16, 20, 3)) * 7 + 90).astype(np.uint8)
    few[0, ..., 1] = 17
    few[1, ..., 2] = 200
    few[1, 0, 0, 2] = 201
    normal = np.clip(rng.normal(100, 20, (4, 16, 20, 3)), 0, 255).astype(np.uint8)
    return {"uniform": images(4, 16, 20, seed=1), "few": few, "normal": normal}


DATA = _data()
PIL_CASES = [
    ("invert", {}, ImageOps.invert),
    ("equalize", {}, ImageOps.equalize),
    ("autocontrast", {}, ImageOps.autocontrast),
] + [("solarize", {"threshold": t}, lambda i, t=t: ImageOps.solarize(i, t))
     for t in (0, 1, 100, 128, 255, 256)] \
  + [("posterize", {"bits": b}, lambda i, b=b: ImageOps.posterize(i, b)) for b in range(1, 9)] \
  + [("sharpness", {"factor": f}, lambda i, f=f: ImageEnhance.Sharpness(i).enhance(f))
     for f in (0.0, 0.4, 1.0, 1.9, 3.0)] \
  + [("solarize_add", {"addition": a}, lambda i, a=a: timm_aa.solarize_add(i, a))
     for a in (0, 30, 110, 200)]


@pytest.mark.parametrize("data", list(DATA))
def test_uint8_matches_pil_and_timm(data):
    x = DATA[data]
    for name, kw, fn in PIL_CASES:
        # autocontrast: PIL's table vs torchvision's float32 division; sharpness: PIL blends
        # with its own rounding (both <= 1 level, measured; exact on these batches for sharpness)
        tol = 1.0 if name in ("autocontrast", "sharpness") else 0.0
        assert maxdiff(run(name, x, **kw), pil(fn, x)) <= tol, (name, kw)


def test_one_channel_images_match_pil_mode_l():
    x = DATA["normal"][..., :1]
    for name, kw, fn in PIL_CASES[:3] + PIL_CASES[-6:-4]:
        assert maxdiff(run(name, x, **kw), pil(fn, x)) <= 1.0, name


TV_CASES = [("invert", {}, F.invert, {}), ("equalize", {}, F.equalize, {}),
            ("autocontrast", {}, F.autocontrast, {})]
TV_CASES += [("posterize", {"bits": b}, F.posterize, {"bits": b}) for b in range(8)]
TV_CASES += [("sharpness", {"factor": f}, F.adjust_sharpness, {"sharpness_factor": f})
             for f in (0.0, 0.4, 1.0, 1.9, 3.0)]
TV_CASES += [("gamma", {"gamma": g, "gain": k}, F.adjust_gamma, {"gamma": g, "gain": k})
             for g in (0.0, 0.45, 1.0, 2.2) for k in (1.0, 1.3)]


@pytest.mark.fast_tier("uint8")
@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_torchvision(dtype):
    x = images(4, 17, 23, dtype=dtype, seed=2)
    for name, kw, fn, tkw in TV_CASES:
        assert maxdiff(run(name, x, **kw), tv(fn, x, **tkw)) <= TOL[dtype], (name, kw)
    for t in (0.0, 77.0, 128.0, 255.0):
        ref = tv(F.solarize, x, threshold=t if dtype == np.uint8 else t / 255)
        assert maxdiff(run("solarize", x, threshold=t), ref) <= TOL[dtype], t


@pytest.mark.parametrize("dtype", DTYPES)
def test_autocontrast_is_bitwise_torchvision(dtype):
    """torchvision divides by (max - min) / 255 per channel; so does augjax, bit for bit (XLA
    would otherwise multiply by a reciprocal): uniform, few-level (constant and almost constant
    channels), narrow and one-channel batches."""
    batches = list(DATA.values()) + [DATA["normal"][..., :1], images(8, 31, 17, seed=14)]
    for x in batches:
        if dtype == np.float32:
            x = (x.astype(np.float32) / 255.0) * np.float32(0.73) + np.float32(0.11)
        out = run("autocontrast", x)
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(out, tv(F.autocontrast, x))


def test_histogram_helpers_match_numpy_and_pil():
    from augjax.kernels import equalize_lut, histogram, lookup

    x = DATA["few"]
    # compiled, as the ops run them (eagerly each small operation dispatches and compiles)
    hist = np.asarray(jax.jit(jax.vmap(histogram))(jnp.asarray(x)))
    assert hist.shape == (4, 256, 3) and hist.dtype == np.int32
    for i in range(4):
        for c in range(3):
            np.testing.assert_array_equal(hist[i, :, c], np.bincount(x[i, ..., c].ravel(),
                                                                     minlength=256))
    lut, valid = jax.jit(jax.vmap(equalize_lut))(jnp.asarray(hist))
    out = np.asarray(jax.jit(jax.vmap(lookup))(jnp.asarray(x), lut))
    valid = np.asarray(valid)
    top = np.array([[x[i, ..., c].max() for c in range(3)] for i in range(4)])
    steps = (16 * 20 - np.take_along_axis(hist, top[:, None, :], axis=1)[:, 0]) // 255
    np.testing.assert_array_equal(valid, steps != 0)  # PIL: step 0 leaves the channel as is
    assert not valid[0, 1] and valid.sum() > 6  # the constant channel among them
    ref = pil(ImageOps.equalize, x)
    np.testing.assert_array_equal(np.where(valid[:, None, None, :], out, x), ref)


def test_float_equalize_quantizes_like_torchvision():
    x = images(4, 16, 20, dtype=np.float32, seed=4)
    out = run("equalize", x)
    np.testing.assert_array_equal(out, tv(F.equalize, x))
    np.testing.assert_allclose(out * 255, np.round(out * 255), atol=1e-4)


def test_float_posterize_eight_bits_is_the_identity():
    # Documented deviation: torchvision's float kernel quantizes to 1/256 steps even at 8 bits.
    x = images(2, 8, 8, dtype=np.float32, seed=5)
    np.testing.assert_array_equal(run("posterize", x, bits=8), x)
    assert maxdiff(tv(F.posterize, x, bits=8), x) > 0


@pytest.mark.parametrize("addition, threshold", [(0, 128), (37, 128), (110, 128), (90, 200)])
def test_float_solarize_add_matches_the_formula(addition, threshold):
    x = images(3, 8, 8, dtype=np.float32, seed=6)
    x64 = x.astype(np.float64)
    ref = np.where(x64 < threshold / 255, np.minimum(x64 + addition / 255, 1.0), x64)
    out = run("solarize_add", x, addition=addition, threshold=threshold)
    assert maxdiff(out, ref) <= 1e-6


def test_equalize_edge_histograms():
    const = np.full((2, 8, 8, 3), 77, np.uint8)
    np.testing.assert_array_equal(run("equalize", const), const)
    two = np.zeros((1, 8, 8, 3), np.uint8)
    two[:, :4] = 250
    np.testing.assert_array_equal(run("equalize", two), pil(ImageOps.equalize, two))
    np.testing.assert_array_equal(run("equalize", two), tv(F.equalize, two))


def test_sharpness_keeps_the_border_and_tiny_images():
    x = images(2, 9, 11, seed=7)
    out = run("sharpness", x, factor=0.0)
    np.testing.assert_array_equal(out[:, 0], x[:, 0])
    np.testing.assert_array_equal(out[:, :, -1], x[:, :, -1])
    tiny = images(2, 2, 5, seed=8)
    np.testing.assert_array_equal(run("sharpness", tiny, factor=0.0), tiny)


# --- policy convention ------------------------------------------------------------------------


def test_policy_magnitudes_match_torchvision_and_timm():
    space = RandAugment._AUGMENTATION_SPACE
    mags = {name: space[name][0](31, 32, 32) for name in ("Sharpness", "Posterize", "Solarize")}
    p = augjax.ops.sharpness.params["factor"]
    mm = p.magnitude_map
    assert (mm.plus + mm.start, mm.plus + mm.end) == pytest.approx(
        (1 + float(mags["Sharpness"][0]), 1 + float(mags["Sharpness"][-1])))
    assert p.signed and p.neutral == 1.0
    p = augjax.ops.posterize.params["bits"]
    assert p.magnitude == (int(mags["Posterize"][0]), int(mags["Posterize"][-1]))
    assert not p.signed and p.neutral == 8
    p = augjax.ops.solarize.params["threshold"]
    assert p.magnitude == (255.0 * float(mags["Solarize"][0]), 255.0 * float(mags["Solarize"][-1]))
    assert not p.signed and p.neutral == 256.0
    p = augjax.ops.solarize_add.params["addition"]
    assert p.magnitude == (0.0, float(timm_aa._solarize_add_level_to_arg(10, {})[0]))
    assert not p.signed and p.neutral == 0.0
    for name in ("brightness", "contrast", "saturation", "sharpness", "posterize", "solarize",
                 "solarize_add"):
        assert sum(q.magnitude is not None for q in augjax.get_op(name).params.values()) == 1
    for name in ("autocontrast", "equalize", "invert"):
        assert not augjax.get_op(name).params


TRACED = [("solarize", "threshold", 99.0), ("solarize_add", "addition", 61.0),
          ("posterize", "bits", 3), ("posterize", "bits", 6.0), ("sharpness", "factor", 1.7),
          ("gamma", "gamma", 0.6)]


@pytest.mark.fast_tier("posterize-bits-6.0-float32")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, param, value", TRACED)
def test_apply_takes_exact_values_per_sample(name, param, value, dtype):
    """apply with one value per sample (the policy path) equals the call with that value; the
    neutral value is the identity."""
    x = images(2, 12, 14, dtype=dtype, seed=9)
    spec = augjax.get_op(name)
    neutral = spec.params[param].neutral
    out = np.asarray(spec.apply(x, params={param: jnp.asarray([value, neutral], jnp.float32)}))
    assert maxdiff(out[0], spec(x[:1], key=KEY, **{param: value})[0]) <= TOL[dtype]
    np.testing.assert_array_equal(out[1], x[1])


def test_posterize_pair_draws_whole_bits_per_sample():
    x = images(24, 8, 8, seed=10)
    out = run("posterize", x, bits=(2, 6))
    bits = np.asarray(augjax.ops.posterize.sample(x, key=KEY, bits=(2, 6))["bits"])
    assert bits.shape == (24,) and bits.dtype == np.float32
    assert (bits == np.round(bits)).all() and bits.min() >= 2 and bits.max() <= 6
    assert len(set(bits.tolist())) >= 3
    for src, dst, b in zip(x, out, bits):
        np.testing.assert_array_equal(dst, ImageOps.posterize(Image.fromarray(src), int(b)))


# --- params-first: sample / apply, documented fields, gradients -------------------------------

FIELDS = {"invert": set(), "solarize": {"threshold"}, "solarize_add": {"addition"},
          "posterize": {"bits"}, "equalize": set(), "autocontrast": set(),
          "sharpness": {"factor"}, "gamma": {"gamma"}}


@pytest.mark.fast_tier("autocontrast-float32")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(FIELDS))
def test_sample_then_apply_is_the_call_bitwise(name, dtype):
    x = images(5, 12, 14, dtype=dtype, seed=15)
    spec = augjax.get_op(name)
    keys = jax.random.split(jax.random.key(16), 5)
    out = np.asarray(spec(x, key=keys) if spec.random else spec(x))
    p = spec.sample(x, key=keys)
    assert set(p) == FIELDS[name]
    for field, value in p.items():
        assert value.shape == (5,) and value.dtype == np.float32, field
        assert f"``{field}``" in spec.doc, f"{name}: field {field!r} not documented"
        lo, hi = spec.params[field].default  # the default range: drawn inside it, per sample
        assert ((value >= lo) & (value <= hi)).all() and len(np.unique(value)) > 1
    np.testing.assert_array_equal(spec.apply(x, params=p), out)


def _float_batch(seed):
    return images(4, 8, 10, dtype=np.float32, seed=seed) * 0.8 + 0.1


@pytest.mark.parametrize("name, cfg", [("sharpness", {"factor": 1.6}),
                                       ("gamma", {"gamma": 0.7, "gain": 0.9}),
                                       ("autocontrast", {})])
def test_gradient_matches_finite_differences(name, cfg):
    x = _float_batch(17)
    spec = augjax.get_op(name)
    static = {k: v for k, v in cfg.items() if k not in spec.per_sample}
    p = spec.sample(x, key=KEY, **cfg)
    g = check_grad(lambda z: spec.apply(z, params=p, **static), x)
    assert np.abs(g).mean() > 0.1


def test_gradient_of_piecewise_level_maps():
    """invert, solarize and solarize_add are piecewise linear with jumps at the threshold (no
    finite difference across them): their gradients are exactly the slopes, -1, 0 or 1;
    posterize and equalize quantize (gradient 0), but posterize's 8 bits is the identity."""
    x = _float_batch(18)
    w = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)

    def grad(name, **params):
        spec = augjax.get_op(name)
        p = {k: jnp.full((4,), v, jnp.float32) for k, v in params.items()}
        g = jax.grad(lambda z: jnp.sum(spec.apply(z, params=p) * w))(jnp.asarray(x))
        return np.asarray(g)

    t, a = 100.0 / 255.0, 51.0 / 255.0
    np.testing.assert_array_equal(grad("invert"), -w)
    np.testing.assert_array_equal(grad("solarize", threshold=100.0), np.where(x >= t, -w, w))
    below = x < np.float32(128.0 / 255.0)
    want = np.where(below, np.where(x + a < 1.0, w, 0.0), w)
    np.testing.assert_array_equal(grad("solarize_add", addition=51.0), want)
    np.testing.assert_array_equal(grad("posterize", bits=8.0), w)
    np.testing.assert_array_equal(grad("posterize", bits=3.0), np.zeros_like(w))
    np.testing.assert_array_equal(grad("equalize"), np.zeros_like(w))


# --- paths, layouts, randomness, errors ------------------------------------------------------

OPS = {"invert": {}, "solarize": {}, "solarize_add": {}, "posterize": {}, "equalize": {},
       "autocontrast": {}, "sharpness": {}, "gamma": {}}
RANDOM = [n for n in OPS if augjax.get_op(n).random]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_dali_pipeline_equals_array_path(dtype):
    x = images(4, 12, 10, dtype=dtype, seed=11)
    s = seeds(4, seed=5)

    def build(imgs, sd):
        return [augjax.get_op(n)(imgs, seeds=sd) if n in RANDOM else augjax.get_op(n)(imgs)
                for n in OPS]

    (outs,) = run_dali(build, x, s, layouts=["HWC", None])
    keys = augjax.keys_from_seeds(s)
    for got, name in zip(outs, OPS):
        want = augjax.get_op(name)(x, key=keys) if name in RANDOM else augjax.get_op(name)(x)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.fast_tier("invert", "solarize_add", "equalize", "sharpness")
@pytest.mark.parametrize("name", list(OPS))
def test_chw_equals_hwc_and_keys_drive_the_draws(name):
    x = images(4, 10, 12, seed=12)
    a = run(name, x)
    np.testing.assert_array_equal(a, run(name, x))
    spec = augjax.get_op(name)
    kw = {"key": KEY} if spec.random else {}
    chw = spec(x.transpose(0, 3, 1, 2), layout="CHW", **kw)
    np.testing.assert_array_equal(np.asarray(chw).transpose(0, 2, 3, 1), a)
    if spec.random:
        assert not np.array_equal(a, spec(x, key=jax.random.key(1)))


def test_gamma_clamps_out_of_range_floats_before_the_power():
    """Float pixels below 0 or above 1 are clamped first: finite, equal to the op on the
    clamped image (x < 0 would give NaN for a fractional exponent; torchvision gives NaN)."""
    rng = np.random.default_rng(13)
    x = rng.uniform(-1.0, 2.0, (4, 8, 8, 3)).astype(np.float32)
    x[0, 0, 0] = [-0.5, 0.0, 1.5]
    for g, k in ((0.45, 1.0), (2.2, 0.7), ((0.5, 1.5), 1.3)):
        out = np.asarray(augjax.ops.gamma(x, key=KEY, gamma=g, gain=k))
        assert np.isfinite(out).all() and out.min() >= 0.0 and out.max() <= 1.0
        want = np.asarray(augjax.ops.gamma(np.clip(x, 0.0, 1.0), key=KEY, gamma=g, gain=k))
        np.testing.assert_array_equal(out, want)
        if not isinstance(g, tuple):  # float64 transcription of the documented formula
            ref = np.clip(k * np.clip(x.astype(np.float64), 0.0, 1.0) ** g, 0.0, 1.0)
            np.testing.assert_allclose(out, ref, atol=1e-6)


@pytest.mark.parametrize("name, kw", [
    ("posterize", {"bits": 9}), ("posterize", {"bits": 3.5}), ("posterize", {"bits": (6, 3)}),
    ("posterize", {"bits": (2, 4.5)}), ("solarize", {"threshold": 300}),
    ("solarize", {"threshold": -1}), ("solarize_add", {"addition": -5}),
    ("solarize_add", {"threshold": 257}), ("sharpness", {"factor": -0.5}),
    ("gamma", {"gamma": -1.0}), ("gamma", {"gain": -1.0}), ("gamma", {"gamma": "2"}),
])
def test_bad_params_raise_param_error(name, kw):
    param = next(iter(kw))
    with pytest.raises(ParamError, match=f"{name}: parameter '{param}'"):
        augjax.get_op(name).bind(**kw)


def test_bad_dtype_is_refused():
    with pytest.raises(InputError, match="equalize: argument 'images' expects dtype"):
        augjax.ops.equalize(images(2, 8, 8).astype(np.int16))
