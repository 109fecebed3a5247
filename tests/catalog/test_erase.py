"""random_erasing against timm RandomErasing; cutout against DeVries & Taylor's Cutout.

timm draws from Python's ``random`` and ``torch.normal_``. The exact comparisons replace the
``random`` that ``timm.data.random_erasing`` sees with one that answers timm's calls with what
augjax's op drew for the sample: the params ``op.sample`` returns (count, boxes, noise) and the
uniform draws behind them (the sampler's documented draw layout), and ``_get_pixels`` with the
sampled noise; timm's own code then decides which attempt fits, the box and what is written,
and the fake checks that it is the sampled box. The draws themselves are tested for their
distributions against timm's own sampling, with fixed seeds.
"""

from __future__ import annotations

import functools
import math
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import timm.data.random_erasing as tre
import torch
from helpers import images, run_dali, seeds
from scipy import stats

import augjax
from augjax.catalog.erase import IMAGENET_MEAN, IMAGENET_STD
from augjax.errors import ParamError

H, W, C = 16, 20, 3
MEAN = np.array(IMAGENET_MEAN, np.float32)
STD = np.array(IMAGENET_STD, np.float32)
PLAN_KEYS = ("p", "min_area", "max_area", "min_aspect", "max_aspect", "min_count", "max_count")
DEFAULTS = dict(p=0.5, min_area=0.02, max_area=1 / 3, min_aspect=0.3, max_aspect=None,
                min_count=1, max_count=None, mode="const")


def _keys(seed: int, n: int) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


def _hook_keys(keys: jax.Array) -> jax.Array:
    """The key the op's ``sample`` hook gets per sample: ``fold_in(fold_in(sample_key, 0), 1)``
    (chain position 0, then the hook's fold; the draw order ``augjax._core.spec`` documents)."""
    return jax.vmap(lambda k: jax.random.fold_in(jax.random.fold_in(k, 0), 1))(keys)


@functools.lru_cache(maxsize=None)
def _attempts_fn(m, min_area, max_area, logs):
    """The area and log-aspect draws of every attempt, ``(N, m, 10)`` each, from the sampler's
    documented layout: ``u = uniform(split(hook_key)[0], (2 + 22 m,))`` = apply coin, count
    draw, areas (m, 10), log-aspects (m, 10), tops (m,), lefts (m,)."""

    def one(key):
        u = jax.random.uniform(jax.random.split(key)[0], (2 + 22 * m,))
        area = min_area + u[2:2 + 10 * m].reshape(m, 10) * (max_area - min_area)
        log_aspect = logs[0] + u[2 + 10 * m:2 + 20 * m].reshape(m, 10) * (logs[1] - logs[0])
        return u[0], area, log_aspect

    return jax.jit(jax.vmap(one))


def _draws(keys, x, cfg):
    """What the op draws for each sample of ``x``: the plan (the sampled params, unpacked:
    ``count``, ``top``, ``left``, ``h``, ``w``, ``active`` (the box is erased), ``applied``,
    plus the attempts' draws ``u_apply``, ``area``, ``log_aspect``) and the sampled noise."""
    params = jax.tree.map(np.asarray, augjax.ops.random_erasing.sample(x, key=keys, **cfg))
    m = cfg["max_count"] or cfg["min_count"]
    logs = (math.log(cfg["min_aspect"]), math.log(cfg["max_aspect"] or 1 / cfg["min_aspect"]))
    u_apply, area, log_aspect = (np.asarray(a) for a in _attempts_fn(
        m, cfg["min_area"], cfg["max_area"], logs)(_hook_keys(keys)))
    np.testing.assert_array_equal(u_apply < cfg["p"], params["applied"])
    box = params["box"]
    active = (params["applied"][:, None] & (np.arange(m) < params["count"][:, None])
              & params["found"])
    plan = dict(u_apply=u_apply, count=params["count"], area=area, log_aspect=log_aspect,
                top=box[..., 0], left=box[..., 1], h=box[..., 2], w=box[..., 3], active=active,
                applied=params["applied"])
    return plan, params.get("noise", np.zeros(len(x)))


def _masks(plan, h, w):
    """Per sample, the boolean (H, W) union of its active boxes (NumPy transcription)."""
    n, m = plan["top"].shape
    out = np.zeros((n, h, w), bool)
    for i in range(n):
        for b in range(m):
            if plan["active"][i, b]:
                t, l = plan["top"][i, b], plan["left"][i, b]
                out[i, t:t + plan["h"][i, b], l:l + plan["w"][i, b]] = True
    return out


class _FakeRandom:
    """Answers timm's ``random`` calls for one sample from augjax's plan, and checks that timm
    asks for the same distributions and picks the same attempt (the same h and w)."""

    def __init__(self, plan, cfg, h, w):
        self.plan, self.cfg, self.h, self.w = plan, cfg, h, w
        self.box = self.attempt = 0
        self.state = "area"
        self.last_box = None
        max_aspect = cfg["max_aspect"] or 1 / cfg["min_aspect"]
        self.logs = (math.log(cfg["min_aspect"]), math.log(max_aspect))

    def random(self):
        return float(self.plan["u_apply"])

    def randint(self, a, b):
        p, box = self.plan, self.box
        if self.state == "area" and self.attempt == 0 and box == 0 and a == self.cfg["min_count"]:
            assert b == self.cfg["max_count"]
            return int(p["count"])
        if self.state == "after_aspect":  # timm found a fitting attempt: the top
            assert (a, b) == (0, self.h - p["h"][box]), ("h differs", box, a, b, p["h"][box])
            assert p["active"][box]
            self.state = "left"
            return int(p["top"][box])
        assert self.state == "left" and (a, b) == (0, self.w - p["w"][box]), ("w differs", a, b)
        self.last_box, self.box, self.attempt, self.state = box, box + 1, 0, "area"
        return int(p["left"][box])

    def uniform(self, a, b):
        if self.state == "after_aspect":  # the previous attempt did not fit
            self.attempt += 1
            if self.attempt == 10:
                assert not self.plan["active"][self.box]  # augjax skipped that box too
                self.box, self.attempt = self.box + 1, 0
            self.state = "area"
        if self.state == "area":
            assert (a, b) == (self.cfg["min_area"], self.cfg["max_area"])
            self.state = "aspect"
            return float(self.plan["area"][self.box, self.attempt])
        assert self.state == "aspect" and np.allclose((a, b), self.logs)
        self.state = "after_aspect"
        return float(self.plan["log_aspect"][self.box, self.attempt])

    def boxes_done(self):
        """How many boxes timm went through (the last may have had no fitting attempt)."""
        if self.state == "after_aspect":  # timm's 10th attempt did not fit either
            assert self.attempt == 9 and not self.plan["active"][self.box]
            return self.box + 1
        return self.box


def _timm_erase(monkeypatch, x01, plan, z, cfg):
    """timm RandomErasing on one normalised CHW image, with augjax's draws; returns the result
    mapped back to [0, 1] HWC (clipped, as augjax clips its fills)."""
    fake = _FakeRandom(plan, cfg, *x01.shape[:2])
    monkeypatch.setattr(tre, "random", fake)

    def pixels(per_pixel, rand_color, patch_size, dtype=torch.float32, device="cpu"):
        b = fake.last_box
        if per_pixel:  # z: the sampled (H, W, C) noise
            t, l, h, w = plan["top"][b], plan["left"][b], plan["h"][b], plan["w"][b]
            return torch.from_numpy(z[t:t + h, l:l + w].transpose(2, 0, 1).copy())
        if rand_color:  # z: the sampled (max_count, C) colours
            return torch.from_numpy(z[b].reshape(-1, 1, 1).copy())
        return torch.zeros((patch_size[0], 1, 1), dtype=dtype)

    monkeypatch.setattr(tre, "_get_pixels", pixels)
    kw = {k: cfg[k] for k in ("min_area", "max_area", "min_aspect", "max_aspect", "mode",
                              "min_count", "max_count")}
    eraser = tre.RandomErasing(probability=cfg["p"], device="cpu", **kw)
    xn = torch.from_numpy(((x01 - MEAN) / STD).transpose(2, 0, 1).copy())
    out = eraser(xn).numpy().transpose(1, 2, 0)
    if plan["u_apply"] < cfg["p"]:
        assert fake.boxes_done() == plan["count"]  # timm went through exactly augjax's boxes
    monkeypatch.undo()
    return np.clip(out * STD + MEAN, 0.0, 1.0)


CASES = [
    (np.float32, dict(DEFAULTS, p=0.7)),
    (np.float32, dict(DEFAULTS, p=0.8, mode="rand", max_count=3)),
    # large boxes, wide aspects: many attempts fail and some boxes are skipped
    (np.float32, dict(DEFAULTS, p=0.9, mode="pixel", min_area=0.3, max_area=0.9,
                      min_aspect=0.15, max_aspect=4.0, max_count=2)),
    (np.uint8, dict(DEFAULTS, p=0.9, mode="pixel", min_count=2, max_count=3)),
]


@pytest.mark.slow
@pytest.mark.parametrize("dtype, cfg", CASES)
def test_matches_timm_random_erasing_given_the_same_draws(monkeypatch, dtype, cfg):
    n = 16
    x = images(n, H, W, dtype=dtype, seed=1)
    hard = cfg["min_area"] >= 0.3  # large boxes: some find no fitting attempt (seed 5: one)
    keys = _keys(5 if hard else 2, n)
    out = np.asarray(augjax.ops.random_erasing(x, key=keys, **cfg))
    plan, z = _draws(keys, x, cfg)
    x01 = x.astype(np.float32) / (255.0 if dtype == np.uint8 else 1.0)
    worst = 0.0
    for i in range(n):
        ref = _timm_erase(monkeypatch, x01[i], jax.tree.map(lambda a: a[i], plan), z[i], cfg)
        if dtype == np.uint8:
            worst = max(worst, np.abs(out[i].astype(int) - np.round(ref * 255)).max())
        else:
            worst = max(worst, np.abs(out[i] - ref).max())
    assert worst <= (1 if dtype == np.uint8 else 1e-6), worst
    erased = _masks(plan, H, W)
    assert erased.any() and not erased.all(axis=(1, 2)).any()
    np.testing.assert_array_equal(out[~erased], x[~erased])  # the rest is untouched, bitwise
    if hard:  # the hard case did exercise skipped boxes
        assert (~plan["active"] & (np.arange(2) < plan["count"][:, None])
                & (plan["u_apply"] < cfg["p"])[:, None]).any()


def test_box_distribution_matches_timm_sampling(monkeypatch):
    """Areas, sides and the application rate vs timm's own sampling (Python random, fixed
    seed), count=1 on 32x32: timm's erased box is read back from a constant image."""
    n, h, w = 3000, 32, 32
    cfg = dict(DEFAULTS, p=0.6)
    plan, _ = _draws(_keys(0, n), np.zeros((n, h, w, 1), np.uint8), cfg)
    ours = plan["active"][:, 0]
    oh, ow = plan["h"][ours, 0], plan["w"][ours, 0]
    eraser = tre.RandomErasing(probability=0.6, device="cpu")
    monkeypatch.setattr(tre, "random", random.Random(0))
    th, tw = [], []
    for _ in range(n):
        img = eraser(torch.ones(1, h, w))[0].numpy() == 0
        if img.any():
            th.append(img.any(axis=1).sum())
            tw.append(img.any(axis=0).sum())
    assert abs(ours.mean() - len(th) / n) < 0.04  # both ~0.6 (sd 0.009 each)
    assert abs(ours.mean() - 0.6) < 0.03
    assert stats.ks_2samp(oh * ow, np.multiply(th, tw)).pvalue > 1e-3
    assert stats.ks_2samp(oh, th).pvalue > 1e-3 and stats.ks_2samp(ow, tw).pvalue > 1e-3
    area = oh * ow / (h * w)
    assert area.min() >= 0.015 and area.max() <= 0.36  # [0.02, 1/3] up to rounding of sides
    top, left = plan["top"][ours, 0], plan["left"][ours, 0]
    assert (top >= 0).all() and (top + oh <= h).all() and (left + ow <= w).all()
    assert (top == 0).any() and (top == h - oh).any() and (left == w - ow).any()


def test_count_is_uniform_between_min_and_max():
    n = 3000
    plan, _ = _draws(_keys(1, n), np.zeros((n, H, W, 1), np.uint8),
                     dict(DEFAULTS, p=1.0, min_count=2, max_count=4))
    counts = np.bincount(plan["count"], minlength=5)[2:]
    assert counts.sum() == n and stats.chisquare(counts).pvalue > 1e-3
    # boxes past the sample's count are never drawn
    assert not (plan["active"] & (np.arange(4) >= plan["count"][:, None])).any()


# -- what the fills mean for uint8 and [0, 1] images -----------------------------------------
def _case(i, dtype=None, **change):
    """Case ``i`` of CASES run through the op (the compiled programs are shared with the timm
    test when nothing changes): the images, the output, the erased masks and the plan."""
    case_dtype, cfg = CASES[i]
    dtype, cfg, n = dtype or case_dtype, dict(cfg, **change), 16
    x = images(n, H, W, dtype=dtype, seed=1)
    keys = _keys(2, n)
    out = np.asarray(augjax.ops.random_erasing(x, key=keys, **cfg))
    plan, _ = _draws(keys, x, cfg)
    return x, out, _masks(plan, H, W), plan


@pytest.mark.slow
def test_pixel_mode_is_standard_normal_once_normalised():
    _, out, erased, _ = _case(2)
    lo, hi = -MEAN / STD, (1 - MEAN) / STD
    for c in range(C):
        v = out[..., c][erased]
        inside = (v[(v > 0) & (v < 1)] - MEAN[c]) / STD[c]
        assert stats.kstest(inside, stats.truncnorm(lo[c], hi[c]).cdf).pvalue > 1e-3
        # the clipped mass sits at the bounds, as much as the normal puts beyond them
        assert abs((v == 0).mean() - stats.norm.cdf(lo[c])) < 0.015
        assert abs((v == 1).mean() - stats.norm.sf(hi[c])) < 0.015
        assert len(v) > 1500


def test_rand_mode_is_one_normal_colour_per_box():
    n = 48
    x = images(n, H, W, dtype=np.float32)
    out = np.asarray(augjax.ops.random_erasing(x, key=_keys(4, n), p=1.0, mode="rand"))
    colours = []
    for i in range(n):
        changed = (out[i] != x[i]).any(-1)
        region = out[i][changed]
        np.testing.assert_array_equal(region, np.broadcast_to(region[0], region.shape))
        colours.append(region[0])
    zn = (np.array(colours) - MEAN) / STD
    inside = (np.array(colours) > 0) & (np.array(colours) < 1)
    for c in range(C):
        ref = stats.truncnorm(-MEAN[c] / STD[c], (1 - MEAN[c]) / STD[c])
        assert stats.kstest(zn[inside[:, c], c], ref.cdf).pvalue > 1e-3


@pytest.mark.slow
def test_const_mode_fills_the_mean_or_the_given_fill():
    _, out, erased, _ = _case(0)
    np.testing.assert_array_equal(out[erased], np.broadcast_to(MEAN, out[erased].shape))
    _, out, erased, _ = _case(0, np.uint8, fill=(0.5, 0.25, 1.0))
    assert erased.any()
    np.testing.assert_array_equal(out[erased], np.broadcast_to([128, 64, 255],
                                                               out[erased].shape))


def test_uint8_is_the_float_result_rounded():
    """Same key, same boxes and noise: uint8 writes round(255 * the float fill)."""
    xu, ou, erased, _ = _case(3)
    _, of, erased_f, _ = _case(3, np.float32)
    np.testing.assert_array_equal(erased, erased_f)
    np.testing.assert_array_equal(ou[erased], np.round(of[erased] * 255).astype(np.uint8))
    np.testing.assert_array_equal(ou[~erased], xu[~erased])


# -- cutout ------------------------------------------------------------------------------------
def _devries_mask(h, w, cy, cx, length):
    """DeVries & Taylor, uoguelph-mlrg/Cutout util/cutout.py, with the centres given."""
    mask = np.ones((h, w), np.float32)
    for y, x in zip(cy, cx):
        y1, y2 = np.clip(y - length // 2, 0, h), np.clip(y + length // 2, 0, h)
        x1, x2 = np.clip(x - length // 2, 0, w), np.clip(x + length // 2, 0, w)
        mask[y1:y2, x1:x2] = 0.0
    return mask


def _cutout_plan(x, keys, size, count, p):
    """``cutout.sample``'s holes: centres ``cy``, ``cx`` ``(N, count)`` (the box starts
    ``size // 2`` before its centre) and ``active`` (the sample is cut)."""
    params = augjax.ops.cutout.sample(x, key=keys, size=size, count=count, p=p)
    box = np.asarray(params["box"])
    assert box.shape == (len(x), count, 4) and box.dtype == np.int32
    np.testing.assert_array_equal(box[..., 2:], np.broadcast_to(size, box[..., 2:].shape))
    return dict(cy=box[..., 0] + size[0] // 2, cx=box[..., 1] + size[1] // 2,
                active=np.asarray(params["applied"]))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_cutout_matches_devries_for_even_sizes(dtype):
    n, size, count = 16, 8, 3
    x = images(n, H, W, dtype=dtype, seed=5)
    keys = _keys(6, n)
    out = np.asarray(augjax.ops.cutout(x, key=keys, size=size, count=count))
    plan = _cutout_plan(x, keys, (size, size), count, 1.0)
    for i in range(n):
        mask = _devries_mask(H, W, plan["cy"][i], plan["cx"][i], size)
        ref = (x[i] * mask[..., None]).astype(dtype)  # fill 0 = the reference's multiply by 0
        np.testing.assert_array_equal(out[i], ref)


def test_cutout_odd_sizes_rectangles_and_fill():
    n = 8
    x = images(n, H, W, seed=7)
    keys = _keys(8, n)
    fill = (0.5, 0.25, 1.0)
    out = np.asarray(augjax.ops.cutout(x, key=keys, size=(5, 3), count=2, fill=fill))
    plan = _cutout_plan(x, keys, (5, 3), 2, 1.0)
    for i in range(n):
        ref = x[i].copy()
        for cy, cx in zip(plan["cy"][i], plan["cx"][i]):  # rows [cy - 5 // 2, cy + (5 + 1) // 2)
            ref[max(cy - 2, 0):cy + 3, max(cx - 1, 0):cx + 2] = (128, 64, 255)
        np.testing.assert_array_equal(out[i], ref)


def test_cutout_centres_uniform_and_probability():
    n = 4000
    plan = _cutout_plan(np.zeros((n, H, W, 1), np.uint8), _keys(9, n), (4, 4), 1, 0.3)
    assert set(np.unique(plan["cy"])) == set(range(H))
    assert set(np.unique(plan["cx"])) == set(range(W))
    assert stats.chisquare(np.bincount(plan["cy"][:, 0], minlength=H)).pvalue > 1e-3
    assert abs(plan["active"].mean() - 0.3) < 0.03


def test_cutout_extremes():
    x = images(2, H, W)
    full = np.asarray(augjax.ops.cutout(x, key=jax.random.key(0), size=2 * max(H, W) + 1))
    assert (full == 0).all()
    same = np.asarray(augjax.ops.cutout(x, key=jax.random.key(0), size=0))
    np.testing.assert_array_equal(same, x)


# -- DALI, keys, layouts, errors -----------------------------------------------------------------
ERASE = dict(p=0.8, mode="pixel", max_count=2)
CUT = dict(size=6, count=2, fill=0.5)


@pytest.mark.slow
def test_dali_pipeline_equals_array_path():
    n, dtype = 6, np.uint8
    x = images(n, H, W, dtype=dtype, seed=10)
    s = seeds(n, seed=11)

    def build(imgs, sd):
        return (augjax.ops.random_erasing(imgs, seeds=sd, **ERASE),
                augjax.ops.cutout(imgs, seeds=sd, **CUT))

    (a, b), = run_dali(build, x, s, layouts=["HWC", None])
    keys = augjax.keys_from_seeds(s)
    np.testing.assert_array_equal(a, np.asarray(augjax.ops.random_erasing(x, key=keys, **ERASE)))
    np.testing.assert_array_equal(b, np.asarray(augjax.ops.cutout(x, key=keys, **CUT)))
    assert a.dtype == dtype and b.dtype == dtype and (a != x).any() and (b != x).any()


@pytest.mark.slow
@pytest.mark.parametrize("name, kw", [("random_erasing", ERASE), ("cutout", CUT)])
def test_same_key_same_output_other_key_other_output_and_chw(name, kw):
    n = 6
    x = images(n, H, W, seed=10)  # the shapes and params compiled for the DALI test
    spec = getattr(augjax.ops, name).bind(**kw)
    a = np.asarray(spec(x, key=_keys(1, n)))
    np.testing.assert_array_equal(a, np.asarray(spec(x, key=_keys(1, n))))
    assert (a != np.asarray(spec(x, key=_keys(2, n)))).any()
    chw = np.asarray(spec(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), key=_keys(1, n),
                          layout="CHW"))
    np.testing.assert_array_equal(chw.transpose(0, 2, 3, 1), a)


@pytest.mark.parametrize(
    "name, kw, param",
    [
        ("random_erasing", dict(p=1.5), "p"),
        ("random_erasing", dict(mode="noise"), "mode"),
        ("random_erasing", dict(min_aspect=0.0), "min_aspect"),
        ("random_erasing", dict(max_aspect=-2.0), "max_aspect"),
        ("random_erasing", dict(min_count=0), "min_count"),
        ("random_erasing", dict(max_count=1.5), "max_count"),
        ("random_erasing", dict(max_area=1.5), "max_area"),
        ("random_erasing", dict(fill=(0.2, 1.2)), "fill"),
        ("random_erasing", dict(std=(0.2, 0.0, 0.2)), "std"),
        ("cutout", dict(size=-1), "size"),
        ("cutout", dict(size=(4, 4, 4)), "size"),
        ("cutout", dict(count=0), "count"),
        ("cutout", dict(fill=2.0), "fill"),
    ],
)
def test_bad_parameters_raise_param_error(name, kw, param):
    with pytest.raises(ParamError) as err:
        getattr(augjax.ops, name).bind(**kw)
    assert err.value.op == name and err.value.param == param
    assert name in str(err.value) and repr(kw[param]) in str(err.value)


@pytest.mark.parametrize(
    "name, kw, shape, param, fragment",
    [
        ("random_erasing", dict(min_area=0.5, max_area=0.2), (4, 8, 8, 3), "min_area",
         "must be <= max_area (0.2), got 0.5"),
        ("random_erasing", dict(min_count=3, max_count=2), (4, 8, 8, 3), "max_count",
         "must be >= min_count (3) or None, got 2"),
        ("random_erasing", dict(fill=(0.1, 0.2)), (4, 8, 8, 3), "fill",
         "1 value or one per channel (3), got 2 values"),
        ("random_erasing", dict(), (4, 8, 8, 1), "mean", "one per channel (1), got 3 values"),
        ("cutout", dict(fill=(0.1, 0.2)), (4, 8, 8, 3), "fill", "one per channel (3)"),
    ],
)
def test_parameters_that_depend_on_each_other_or_the_image(name, kw, shape, param, fragment):
    x = jnp.zeros(shape, jnp.uint8)
    with pytest.raises(ParamError) as err:
        getattr(augjax.ops, name)(x, key=jax.random.key(0), **kw)
    assert err.value.op == name and err.value.param == param
    assert fragment in str(err.value) and name in str(err.value)


def test_single_channel_images_need_no_rgb_mean_for_a_given_fill():
    x = images(4, 8, 8, c=1, seed=2)
    out = np.asarray(augjax.ops.random_erasing(x, key=jax.random.key(0), p=1.0, fill=0.5))
    changed = out != x
    assert changed.any() and (out[changed] == 128).all()


# -- sample / apply: the public params -------------------------------------------------------
@pytest.mark.fast_tier("cutout-kw3-fields3-uint8")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("name, kw, fields", [
    ("random_erasing", dict(p=0.8, max_count=3),
     {"applied": (), "count": (), "box": (3, 4), "found": (3,)}),
    ("random_erasing", dict(p=0.8, mode="rand", max_count=2),
     {"applied": (), "count": (), "box": (2, 4), "found": (2,), "noise": (2, C)}),
    ("random_erasing", ERASE,
     {"applied": (), "count": (), "box": (2, 4), "found": (2,), "noise": (H, W, C)}),
    ("cutout", CUT, {"applied": (), "box": (2, 4)}),
])
def test_sample_then_apply_is_the_call_bitwise(name, kw, fields, dtype):
    n = 6
    x = images(n, H, W, dtype=dtype, seed=12)
    spec = getattr(augjax.ops, name)
    params = spec.sample(x, key=_keys(13, n), **kw)
    assert {k: tuple(v.shape) for k, v in params.items()} == {k: (n, *s)
                                                              for k, s in fields.items()}
    out = np.asarray(spec(x, key=_keys(13, n), **kw))
    np.testing.assert_array_equal(np.asarray(spec.apply(x, params=params, **kw)), out)
    assert (out != x).any()
    off = dict(params, applied=np.zeros(n, bool))  # no sample erased: the identity
    np.testing.assert_array_equal(np.asarray(spec.apply(x, params=off, **kw)), x)


def test_random_erasing_apply_with_exact_boxes_and_noise():
    """Given params erase exactly those boxes: box b where applied, b < count and found[b];
    'rand' writes mean + std * noise[b] per box (clipped, x255 rounded for uint8)."""
    x = images(2, H, W, seed=14)
    box = np.array([[[1, 2, 3, 4], [5, 6, 2, 2]], [[0, 0, H, W], [2, 2, 4, 4]]], np.int32)
    noise = np.array([[[0.0, 0.0, 0.0], [1.0, -1.0, 0.5]], [[9.0, 9.0, 9.0], [0.0, 0.0, 0.0]]],
                     np.float32)
    params = dict(applied=np.array([True, True]), count=np.array([2, 2], np.int32), box=box,
                  found=np.array([[True, True], [False, True]]), noise=noise)
    out = np.asarray(augjax.ops.random_erasing.apply(x, params=params, mode="rand",
                                                     max_count=2))
    ref = x.copy()
    colour = np.round(np.clip(MEAN + STD * noise, 0, 1) * 255).astype(np.uint8)
    ref[0, 1:4, 2:6] = colour[0, 0]
    ref[0, 5:7, 6:8] = colour[0, 1]
    ref[1, 2:6, 2:6] = colour[1, 1]  # box 0 of sample 1 was not found: skipped
    np.testing.assert_array_equal(out, ref)
    fewer = np.asarray(augjax.ops.random_erasing.apply(
        x, params=dict(params, count=np.array([1, 0], np.int32)), mode="rand", max_count=2))
    ref = x.copy()
    ref[0, 1:4, 2:6] = colour[0, 0]
    np.testing.assert_array_equal(fewer, ref)


def test_cutout_apply_with_exact_holes():
    x = images(2, H, W, dtype=np.float32, seed=15)
    box = np.array([[[-2, -1, 5, 3]], [[14, 18, 5, 3]]], np.int32)  # reaching past the border
    out = np.asarray(augjax.ops.cutout.apply(
        x, params={"applied": np.array([True, False]), "box": box}, size=(5, 3), count=1,
        fill=0.25))
    ref = x.copy()
    ref[0, 0:3, 0:2] = 0.25
    np.testing.assert_array_equal(out, ref)


@pytest.mark.fast_tier("cutout-kw1")
@pytest.mark.parametrize("name, kw", [("random_erasing", dict(p=1.0, mode="pixel")),
                                      ("cutout", CUT)])
def test_apply_is_differentiable_in_the_image(name, kw):
    spec = getattr(augjax.ops, name)
    x = jnp.asarray(images(3, H, W, dtype=np.float32, seed=16))
    params = spec.sample(x, key=_keys(17, 3), **kw)
    grad = np.asarray(jax.grad(lambda v: spec.apply(v, params=params, **kw).sum())(x))
    out = np.asarray(spec.apply(x, params=params, **kw))
    kept = out == np.asarray(x)
    assert set(np.unique(grad)) <= {0.0, 1.0} and (grad == 1).any() and (grad == 0).any()
    np.testing.assert_array_equal(grad[~kept], 0.0)  # erased pixels do not depend on the image


def test_pixel_noise_is_standard_normal_per_sample():
    """mode="pixel" draws its (H, W, C) field with augjax.kernels.fields.normal (a third of
    jax.random.normal's CPU time): standard normal, one field per sample."""
    from scipy import stats

    x = np.zeros((6, 40, 48, 3), np.uint8)
    noise = np.asarray(augjax.ops.random_erasing.bind(mode="pixel").sample(
        x, key=jax.random.key(3))["noise"])
    assert noise.shape == (6, 40, 48, 3) and noise.dtype == np.float32
    assert abs(noise.mean()) < 0.02 and abs(noise.std() - 1.0) < 0.02
    assert stats.kstest(noise.ravel(), "norm").pvalue > 1e-3
    assert not np.array_equal(noise[0], noise[1])
