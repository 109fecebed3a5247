"""Colour ops (augjax.catalog.color) against torchvision.transforms.v2.functional and PIL.

Tolerances: uint8 max |diff| <= 1 level (torchvision computes the same float32 formula; the last
level can flip where float32 rounding lands on a whole level); float32 <= 2e-6 (1e-6 measured for
hue's HSV round trip, 2.4e-7 for the blends). A whole ColorJitter chain on uint8 is checked at
<= 3 levels with fewer than 1 value in 1000 off by more than 0: a one-level flip in an early
step is scaled by the later factors (saturation 1.5 then brightness 1.35 turn it into 3); over
24 orders x 6 images of 64x64 we measured 99.996 % of values exact, 5 values off by 3.

Drawn values are read through the public params path: ``op.sample`` gives each sample's values
(factors, coins, permutations, ColorJitter's order), the references are built from them, and
``op.apply(x, params=...)`` applies exact values.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from helpers import check_grad, images, run_dali, seeds, tv
from PIL import Image, ImageEnhance
from torchvision.transforms.v2 import functional as F

import augjax
from augjax.errors import InputError, ParamError

DTYPES = (np.uint8, np.float32)
TOL = {np.uint8: 1.0, np.float32: 2e-6}
KEY = jax.random.key(0)
JITTER_NAMES = ("brightness", "contrast", "saturation", "hue")


def maxdiff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def assert_chain_close(outs, refs, dtype) -> None:
    """The ColorJitter chain tolerance over all the images given (see the module docstring)."""
    diff = np.abs(np.asarray(outs, np.float64) - np.asarray(refs, np.float64))
    if dtype == np.uint8:
        assert diff.max() <= 3 and (diff > 0).mean() < 1e-3, (diff.max(), (diff > 0).mean())
    else:
        assert diff.max() <= TOL[dtype]


FACTOR_OPS = {
    "brightness": (F.adjust_brightness, "brightness_factor"),
    "contrast": (F.adjust_contrast, "contrast_factor"),
    "saturation": (F.adjust_saturation, "saturation_factor"),
    "hue": (F.adjust_hue, "hue_factor"),
}
FACTORS = {
    "brightness": (0.0, 0.35, 1.0, 1.9, 2.7),
    "contrast": (0.0, 0.35, 1.0, 1.9, 2.7),
    "saturation": (0.0, 0.35, 1.0, 1.9, 2.7),
    "hue": (-0.5, -0.21, 0.0, 0.13, 0.5),
}


@pytest.mark.fast_tier("brightness-uint8", "contrast-float32", "saturation-uint8", "hue-float32")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(FACTOR_OPS))
def test_single_adjustments_match_torchvision(name, dtype):
    x = images(6, 17, 23, dtype=dtype, seed=1)
    fn, arg = FACTOR_OPS[name]
    for f in FACTORS[name]:
        out = augjax.get_op(name)(x, key=KEY, factor=f)
        assert out.dtype == x.dtype and out.shape == x.shape
        assert maxdiff(out, tv(fn, x, **{arg: f})) <= TOL[dtype], (name, f)


def test_contrast_one_channel_matches_torchvision():
    x = images(4, 16, 20, c=1, seed=2)
    for f in (0.2, 1.6):
        out = augjax.ops.contrast(x, key=KEY, factor=f)
        assert maxdiff(out, tv(F.adjust_contrast, x, contrast_factor=f)) <= 1


@pytest.mark.parametrize("name, pil", [("brightness", ImageEnhance.Brightness),
                                       ("contrast", ImageEnhance.Contrast),
                                       ("saturation", ImageEnhance.Color)])
def test_enhance_ops_match_pil_within_the_gray_rounding(name, pil):
    # PIL rounds its grayscale (and contrast's mean) to whole levels, torchvision truncates or
    # keeps the float: the results differ by at most max(1, |1 - factor|) levels.
    x = images(4, 16, 20, seed=3)
    for f in (0.3, 1.0, 1.8):
        out = augjax.get_op(name)(x, key=KEY, factor=f)
        ref = np.stack([np.asarray(pil(Image.fromarray(s)).enhance(f)) for s in x])
        assert maxdiff(out, ref) <= max(1.0, abs(1.0 - f)), (name, f)


@pytest.mark.parametrize("dtype", DTYPES)
def test_grayscale_matches_torchvision_and_pil(dtype):
    x = images(4, 16, 20, dtype=dtype, seed=4)
    out = np.asarray(augjax.ops.grayscale(x))
    assert out.shape == x.shape and out.dtype == x.dtype
    assert maxdiff(out, tv(F.rgb_to_grayscale, x, num_output_channels=3)) <= TOL[dtype]
    assert (out[..., 0] == out[..., 1]).all() and (out[..., 0] == out[..., 2]).all()
    if dtype == np.uint8:  # PIL rounds the luma, torchvision truncates it
        pil = np.stack([np.asarray(Image.fromarray(s).convert("L")) for s in x])
        assert maxdiff(out[..., 0], pil) <= 1


def test_random_grayscale_per_sample():
    x = images(64, 8, 8, seed=5)
    gray = np.asarray(augjax.ops.grayscale(x))
    np.testing.assert_array_equal(augjax.ops.random_grayscale(x, key=KEY, p=0.0), x)
    np.testing.assert_array_equal(augjax.ops.random_grayscale(x, key=KEY, p=1.0), gray)
    out = np.asarray(augjax.ops.random_grayscale(x, key=KEY, p=0.5))
    applied = np.asarray(augjax.ops.random_grayscale.sample(x, key=KEY, p=0.5)["applied"])
    assert applied.shape == (64,) and applied.dtype == bool
    np.testing.assert_array_equal(out[applied], gray[applied])
    np.testing.assert_array_equal(out[~applied], x[~applied])
    assert 16 <= applied.sum() <= 48


@pytest.mark.fast_tier("5")
@pytest.mark.parametrize("c", [3, 5])
def test_channel_permute_matches_torchvision_with_its_permutations(c):
    x = images(32, 6, 7, c=c, seed=6)
    out = np.asarray(augjax.ops.channel_permute(x, key=KEY))
    perms = np.asarray(augjax.ops.channel_permute.sample(x, key=KEY)["perm"])
    assert perms.shape == (32, c) and perms.dtype == np.int32
    for src, dst, perm in zip(x, out, perms):
        assert sorted(perm.tolist()) == list(range(c))
        ref = tv(F.permute_channels, src[None], permutation=perm.tolist())[0]
        np.testing.assert_array_equal(dst, ref)
    assert len({tuple(p) for p in perms.tolist()}) >= 3


@pytest.mark.parametrize("dtype", DTYPES)
def test_pair_draws_one_factor_per_sample_in_range(dtype):
    x = images(16, 8, 8, dtype=dtype, seed=7)
    out = np.asarray(augjax.ops.brightness(x, key=KEY, factor=(0.5, 1.5)))
    f = np.asarray(augjax.ops.brightness.sample(x, key=KEY, factor=(0.5, 1.5))["factor"])
    assert f.shape == (16,) and f.dtype == np.float32
    assert ((f >= 0.5) & (f <= 1.5)).all() and len(np.unique(f)) == 16
    for i in range(16):  # torchvision with the sample's own (float32) factor
        ref = tv(F.adjust_brightness, x[i:i + 1], brightness_factor=float(f[i]))
        assert maxdiff(out[i:i + 1], ref) <= TOL[dtype]


# --- ColorJitter fidelity -------------------------------------------------------------------

ADJUST = [(F.adjust_brightness, "brightness_factor"), (F.adjust_contrast, "contrast_factor"),
          (F.adjust_saturation, "saturation_factor"), (F.adjust_hue, "hue_factor")]


def _tv_jitter(x, factors, order, active=(0, 1, 2, 3)):
    t = torch.from_numpy(np.ascontiguousarray(x)).permute(2, 0, 1)
    for i in order:
        if i in active:
            fn, arg = ADJUST[i]
            t = fn(t, **{arg: float(factors[i])})
    return t.permute(1, 2, 0).numpy()


def jitter_params(n, factors=None, orders=None):
    """color_jitter params for ``n`` samples: ``factors`` ``{name: value}`` (the same for every
    sample) and ``orders`` ``(n, 4)``."""
    out = {k: jnp.full((n,), v, jnp.float32) for k, v in (factors or {}).items()}
    out["order"] = jnp.asarray(orders, jnp.int32)
    return out


ORDERS = np.array(list(itertools.permutations(range(4))), np.int32)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_jitter_forced_orders_match_torchvision(dtype):
    """The exact-parameter path: given factors and each of the 24 orders, through apply."""
    x = images(1, 16, 20, dtype=dtype, seed=8)
    factors = dict(zip(JITTER_NAMES, [1.35, 0.7, 1.5, -0.12]))
    batch = np.repeat(x, len(ORDERS), axis=0)
    outs = np.asarray(augjax.ops.color_jitter.apply(batch, params=jitter_params(
        len(ORDERS), factors, ORDERS)))
    refs = [_tv_jitter(x[0], list(factors.values()), order) for order in ORDERS]
    assert_chain_close(outs, refs, dtype)


SUBSETS = [(0, 1, 2, 3), (0, 1, 3), (1, 2), (1,), (0, 2, 3), (2, 3)]
# float32-exact factors, as ColorJitter draws them (torch.empty(1).uniform_): a double factor
# makes torchvision's 1 - factor differ from float32's by an ulp (a level in uint8).
SUBSET_FACTORS = [1.25, 0.625, 1.375, 0.0625]


@functools.cache
def _subsets_in_every_order(dtype, form):
    """``{subset: outputs}``: each subset of SUBSETS in all 24 orders through the ``form``
    schedule of ``jitter``, every subset in one compiled program (each subset's its own
    computation in it; a program per subset compiled twice as long in all). For the ``cpu``
    form, ``{subset: (outputs, op outputs)}``: the same program also runs the op's own path on
    this CPU, ``color_jitter.apply`` on the 24 copies of the image with only the subset's
    fields and each order (the public apply traced inside a caller's ``jit``; one program for
    the six subsets where each subset's own call compiled one of its own)."""
    from augjax.catalog._jitter import jitter

    x = jnp.asarray(images(1, 16, 20, dtype=dtype, seed=12)[0])

    def every_subset(o):
        return [jitter(x, o, jnp.asarray(SUBSET_FACTORS), tuple(i in a for i in range(4)), form)
                for a in SUBSETS]

    def through_the_op(orders):
        batch = jnp.repeat(x[None], len(ORDERS), 0)
        return [augjax.ops.color_jitter.apply(batch, params=jitter_params(
            len(ORDERS), {JITTER_NAMES[i]: SUBSET_FACTORS[i] for i in a}, orders))
            for a in SUBSETS]

    def run(orders):
        return jax.vmap(every_subset)(orders), through_the_op(orders) if form == "cpu" else None

    outs, op_outs = jax.jit(run)(jnp.asarray(ORDERS))
    if op_outs is None:
        return {a: np.asarray(out) for a, out in zip(SUBSETS, outs)}
    return {a: (np.asarray(out), np.asarray(op)) for a, out, op in zip(SUBSETS, outs, op_outs)}


# the subset varies fastest: the six sets of one program (dtype and form) run one after
# another, so that pytest-xdist hands them to one worker more often than to both
@pytest.mark.slow
@pytest.mark.parametrize("active", SUBSETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", ["cpu", "gpu", "pallas"])
def test_jitter_subsets_in_every_order_match_torchvision(dtype, active, form):
    """Subsets of the adjustments in all 24 orders against torchvision, with every schedule of
    augjax.catalog._jitter (one pass: a mean per stage, CPU; two passes: contrast's mean first,
    GPU; the per-image branching Pallas kernel, interpreted here, compiled on CUDA)."""
    x = images(1, 16, 20, dtype=dtype, seed=12)[0]
    outs = _subsets_in_every_order(dtype, form)[active]
    if form == "cpu":  # and the op's path on CPU: apply with only the active adjustments' fields
        outs, op_out = outs
    refs = [_tv_jitter(x, SUBSET_FACTORS, order, active) for order in ORDERS]
    assert len({r.tobytes() for r in refs}) > 1 or len(active) == 1
    assert_chain_close(outs, refs, dtype)
    if form == "cpu":
        assert_chain_close(op_out, refs, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (1, 3), (37, 29), (24, 32), (0, 4)])
def test_jitter_pallas_form_equals_the_xla_form_at_any_size(dtype, shape):
    """The Pallas kernel's tiling (one tile for tiny images, the last tile moved back over the
    previous one, empty images) against the XLA one-pass form: uint8 bitwise (its contrast
    sums are exact), float32 to the rounding of a differently ordered mean. The factors and
    orders are color_jitter's own draws (op.sample)."""
    from augjax.catalog._jitter import jitter

    n = 4
    x = images(n, *shape, dtype=dtype, seed=15) if shape[0] else np.zeros((n, *shape, 3), dtype)
    cfg = dict(brightness=(0.5, 1.5), contrast=(0.5, 1.5), saturation=(0.5, 1.5),
               hue=(-0.3, 0.3))
    # The op refuses images without pixels (a failed decode): its draws, which do not depend
    # on the size, come from a 1 x 1 batch there; the kernels themselves take the empty images.
    drawn_on = x if shape[0] else np.zeros((n, 1, 1, 3), dtype)
    p = augjax.ops.color_jitter.sample(drawn_on, key=jax.random.key(16), **cfg)
    factors = jnp.stack([p[k] for k in JITTER_NAMES], axis=1)

    def both(image, order, f):  # the two forms in one compiled program
        return tuple(jitter(image, order, f, (True,) * 4, name) for name in ("pallas", "cpu"))

    kernel, ref = (np.asarray(o) for o in jax.jit(jax.vmap(both))(jnp.asarray(x), p["order"],
                                                                     factors))
    assert kernel.shape == x.shape and kernel.dtype == x.dtype
    if dtype == np.uint8:
        np.testing.assert_array_equal(kernel, ref)
    else:
        np.testing.assert_allclose(kernel, ref, atol=2e-6, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_color_jitter_op_matches_torchvision_with_its_draws(dtype):
    x = images(6, 16, 20, dtype=dtype, seed=9)
    params = dict(brightness=0.4, contrast=(0.5, 1.5), saturation=0.4, hue=0.1)
    keys = jax.random.split(jax.random.key(3), 6)
    out = np.asarray(augjax.ops.color_jitter(x, key=keys, **params))
    p = jax.tree.map(np.asarray, augjax.ops.color_jitter.sample(x, key=keys, **params))
    ranges = [(0.6, 1.4), (0.5, 1.5), (0.6, 1.4), (-0.1, 0.1)]  # ColorJitter's _check_input
    orders, refs = set(), []
    for i in range(6):
        factors = [p[k][i] for k in JITTER_NAMES]
        for (lo, hi), f in zip(ranges, factors):
            assert f.dtype == np.float32 and lo <= float(f) <= hi
        order = tuple(int(o) for o in p["order"][i])
        assert sorted(order) == [0, 1, 2, 3]
        orders.add(order)
        refs.append(_tv_jitter(x[i], factors, order))
    assert_chain_close(out, refs, dtype)
    assert len(orders) > 1
    assert len({float(f) for f in p["hue"]}) == 6  # one draw per sample


def test_color_jitter_skips_neutral_adjustments():
    x = images(4, 16, 20, seed=10)
    keys = jax.random.split(jax.random.key(4), 4)
    out = np.asarray(augjax.ops.color_jitter(x, key=keys, saturation=(0.2, 0.2)))
    np.testing.assert_array_equal(out, tv(F.adjust_saturation, x, saturation_factor=0.2))
    p = augjax.ops.color_jitter.sample(x, key=keys, saturation=(0.2, 0.2))
    assert set(p) == {"saturation", "order"}  # no field for an inactive adjustment
    np.testing.assert_array_equal(p["saturation"], np.full(4, 0.2, np.float32))
    np.testing.assert_array_equal(augjax.ops.color_jitter(x, key=keys), x)
    assert set(augjax.ops.color_jitter.sample(x, key=keys)) == {"order"}


# --- policy convention, trace safety ----------------------------------------------------------


def test_policy_magnitudes_match_torchvision_randaugment():
    from torchvision.transforms.v2 import RandAugment

    for name, tv_name in [("brightness", "Brightness"), ("contrast", "Contrast"),
                          ("saturation", "Color")]:
        p = augjax.get_op(name).params["factor"]
        bins, signed = RandAugment._AUGMENTATION_SPACE[tv_name]
        mags = bins(31, 32, 32)
        mm = p.magnitude_map
        assert (mm.plus + mm.start, mm.plus + mm.end) == pytest.approx(
            (1.0 + float(mags[0]), 1.0 + float(mags[-1])))
        assert p.signed == signed and p.neutral == 1.0 and p.kind == "float_or_pair"


@pytest.mark.fast_tier("brightness-uint8", "contrast-float32", "saturation-uint8", "hue-float32")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["brightness", "contrast", "saturation", "hue"])
def test_apply_takes_exact_factors_per_sample(name, dtype):
    """apply with one factor per sample (the policy path) equals the call with that factor; the
    neutral factor is the identity (hue's 0 is an HSV round trip: exact on uint8 only)."""
    x = images(3, 12, 14, dtype=dtype, seed=11)
    spec = augjax.get_op(name)
    values = [0.3, -0.2, 0.0] if name == "hue" else [1.45, 0.6, 1.0]
    out = np.asarray(spec.apply(x, params={"factor": jnp.asarray(values, jnp.float32)}))
    for i, v in enumerate(values):
        np.testing.assert_array_equal(out[i], spec(x[i:i + 1], key=KEY, factor=v)[0])
    if name != "hue" or dtype == np.uint8:
        np.testing.assert_array_equal(out[2], x[2])
    else:
        np.testing.assert_allclose(out[2], x[2], atol=1e-6)


def test_hue_of_an_undershoot_pixel_is_black_not_nan():
    """A float pixel just below 0 (a bicubic resample's undershoot, ``[0, -0.01, -0.02]``): its
    largest channel is 0, and torchvision's saturation ``range / max`` gives inf, then NaN,
    which a colour jitter's contrast mean spread over every view of a DINO batch. augjax keeps
    it finite (black); every other pixel equals torchvision's adjust_hue; the whole jitter
    gives no NaN."""
    x = images(2, 6, 7, dtype=np.float32, seed=4) * np.float32(0.9) + np.float32(0.05)
    x[0, 2, 3] = (0.0, -0.01, -0.02)
    x[1, 4, 1] = (-0.03, 0.0, -0.01)
    theirs = tv(F.adjust_hue, x, hue_factor=0.1)
    assert np.isnan(theirs[0, 2, 3]).any()  # torchvision's NaN, which this deviates from
    ours = np.asarray(augjax.ops.hue(x, factor=0.1, key=KEY))
    np.testing.assert_array_equal(ours[0, 2, 3], 0.0)
    np.testing.assert_array_equal(ours[1, 4, 1], 0.0)
    finite = ~np.isnan(theirs).any(axis=-1)
    assert finite.sum() == x.shape[0] * x.shape[1] * x.shape[2] - 2
    np.testing.assert_allclose(ours[finite], theirs[finite], atol=2e-6)
    jittered = augjax.ops.color_jitter(x, brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1,
                                       key=KEY)
    assert np.isfinite(np.asarray(jittered)).all()


# --- params-first: sample / apply, documented fields, edits, gradients ------------------------

#: Every op of the module with a configuration that draws, and its documented fields.
SAMPLED = {
    "brightness": ({}, {"factor"}),
    "contrast": ({}, {"factor"}),
    "saturation": ({}, {"factor"}),
    "hue": ({}, {"factor"}),
    "grayscale": ({}, set()),
    "random_grayscale": ({"p": 0.5}, {"applied"}),
    "channel_permute": ({}, {"perm"}),
    "color_jitter": (dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
                     {"brightness", "contrast", "saturation", "hue", "order"}),
}


@pytest.mark.fast_tier("grayscale-uint8")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(SAMPLED))
def test_sample_then_apply_is_the_call_bitwise(name, dtype):
    n = 9  # more than augjax's CPU chunk (8) for compute-bound ops: chunks and a tail
    x = images(n, 12, 14, dtype=dtype, seed=20)
    spec, (cfg, fields) = augjax.get_op(name), SAMPLED[name]
    kw = {"key": jax.random.key(21)} if spec.random else {}
    out = np.asarray(spec(x, **kw, **cfg))
    p = spec.sample(x, key=jax.random.key(21), **cfg)
    assert set(p) == fields
    for field, value in p.items():
        assert value.shape[0] == n, field
        assert f"``{field}``" in spec.doc, f"{name}: field {field!r} not documented"
    np.testing.assert_array_equal(spec.apply(x, params=p, **cfg), out)
    np.testing.assert_array_equal(spec.apply(x, params=jax.tree.map(np.asarray, p), **cfg), out)


@pytest.mark.slow
def test_edited_fields_change_the_output_as_expected():
    x = images(4, 10, 12, seed=22)
    gray = np.asarray(augjax.ops.grayscale(x))
    p = augjax.ops.random_grayscale.sample(x, key=KEY, p=0.5)
    for coin in (False, True):
        edited = {"applied": jnp.full((4,), coin)}
        np.testing.assert_array_equal(augjax.ops.random_grayscale.apply(x, params=edited),
                                      gray if coin else x)
    assert p["applied"].dtype == jnp.bool_
    identity = {"perm": jnp.tile(jnp.arange(3, dtype=jnp.int32), (4, 1))}
    np.testing.assert_array_equal(augjax.ops.channel_permute.apply(x, params=identity), x)
    reverse = {"perm": jnp.tile(jnp.arange(2, -1, -1, dtype=jnp.int32), (4, 1))}
    np.testing.assert_array_equal(augjax.ops.channel_permute.apply(x, params=reverse),
                                  x[..., ::-1])
    # color_jitter: neutral factors are the identity (uint8: hue 0 is an exact round trip);
    # one edited factor and order give torchvision's result for those values
    cfg = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)
    p = augjax.ops.color_jitter.sample(x, key=KEY, **cfg)
    neutral = dict(p, brightness=jnp.ones(4), contrast=jnp.ones(4), saturation=jnp.ones(4),
                   hue=jnp.zeros(4))
    np.testing.assert_array_equal(augjax.ops.color_jitter.apply(x, params=neutral, **cfg), x)
    order = jnp.tile(jnp.asarray([3, 0, 2, 1], jnp.int32), (4, 1))
    edited = dict(neutral, brightness=jnp.full((4,), 1.5), order=order)
    out = augjax.ops.color_jitter.apply(x, params=edited, **cfg)
    np.testing.assert_array_equal(out, tv(F.adjust_brightness, x, brightness_factor=1.5))


#: Configurations for the gradient checks: factors that keep most float pixels inside [0, 1].
GRAD = {
    "brightness": {"factor": 1.2}, "contrast": {"factor": 0.7}, "saturation": {"factor": 1.4},
    "hue": {"factor": 0.2}, "grayscale": {}, "random_grayscale": {"p": 0.5},
    "channel_permute": {},
    "color_jitter": dict(brightness=0.3, contrast=0.3, saturation=0.3, hue=0.2),
}


@pytest.mark.fast_tier("grayscale")
@pytest.mark.parametrize("name", list(GRAD))
def test_gradient_with_respect_to_float_images(name):
    """jax.grad through apply (the params held fixed) on float32 images: finite, nonzero, and
    equal to a finite difference (apply and its gradient jitted: one program each, where the
    eager gradient ran the linearized and transposed programs and each primitive apart)."""
    x = images(4, 8, 10, dtype=np.float32, seed=23) * 0.8 + 0.1
    spec, cfg = augjax.get_op(name), GRAD[name]
    p = spec.sample(x, key=KEY, **cfg)
    # color_jitter: four stages, more kinks (clamps, hue sectors) within eps of some pixel
    rtol = 5e-2 if name == "color_jitter" else 1e-2
    g = check_grad(lambda z: spec.apply(z, params=p, **cfg), x, rtol=rtol, jit=True)
    assert np.abs(g).mean() > 0.1


@pytest.mark.slow
def test_color_jitter_gradient_in_every_form():
    """The Pallas form (CUDA's) has the XLA forms' derivative: jax.grad through each form."""
    from augjax.catalog._jitter import jitter

    x = images(1, 4, 5, dtype=np.float32, seed=24)[0] * 0.8 + 0.1
    factors = jnp.asarray([1.2, 0.8, 1.3, 0.1])
    order = jnp.asarray([2, 0, 3, 1], jnp.int32)
    grads = [check_grad(lambda z, f=f: jitter(z, order, factors, (True,) * 4, f), x, rtol=5e-2,
                        jit=True)
             for f in ("cpu", "gpu", "pallas", "auto")]
    for g in grads[1:]:
        np.testing.assert_allclose(g, grads[0], atol=1e-5)


# --- paths, layouts, randomness, errors ------------------------------------------------------

# color_jitter's DALI, layout and key behaviour is covered by test_dispatch.py.
RANDOM_OPS = {
    "brightness": {}, "contrast": {}, "saturation": {}, "hue": {},
    "random_grayscale": {"p": 0.5}, "channel_permute": {},
}


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_dali_pipeline_equals_array_path(layout):
    x = images(4, 12, 10, seed=12)
    x = x.transpose(0, 3, 1, 2).copy() if layout == "CHW" else x
    s = seeds(4, seed=3)

    def build(imgs, sd):
        outs = [augjax.get_op(n)(imgs, seeds=sd, layout=layout, **kw)
                for n, kw in RANDOM_OPS.items()]
        return outs + [augjax.ops.grayscale(imgs, layout=layout)]

    (outs,) = run_dali(build, x, s, layouts=[layout, None])
    keys = augjax.keys_from_seeds(s)
    for got, (name, kw) in zip(outs, RANDOM_OPS.items()):
        np.testing.assert_array_equal(got, augjax.get_op(name)(x, key=keys, layout=layout, **kw),
                                      err_msg=name)
    np.testing.assert_array_equal(outs[-1], augjax.ops.grayscale(x, layout=layout))


@pytest.mark.fast_tier("brightness", "hue", "random_grayscale")
@pytest.mark.parametrize("name", list(RANDOM_OPS))
def test_chw_equals_hwc_and_keys_drive_the_draws(name):
    x = images(4, 10, 12, dtype=np.float32, seed=13)
    spec, kw = augjax.get_op(name), RANDOM_OPS[name]
    a = np.asarray(spec(x, key=KEY, **kw))
    np.testing.assert_array_equal(a, spec(x, key=KEY, **kw))
    chw = spec(x.transpose(0, 3, 1, 2), key=KEY, layout="CHW", **kw)
    np.testing.assert_array_equal(np.asarray(chw).transpose(0, 2, 3, 1), a)
    b = np.asarray(spec(x, key=jax.random.key(1), **kw))
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("name, kw", [
    ("brightness", {"factor": -0.1}), ("contrast", {"factor": (1.5, 0.5)}),
    ("saturation", {"factor": "1"}), ("hue", {"factor": 0.7}), ("hue", {"factor": (-0.6, 0.1)}),
    ("random_grayscale", {"p": 1.5}), ("color_jitter", {"hue": 0.6}),
    ("color_jitter", {"brightness": -1}),
])
def test_bad_params_raise_param_error(name, kw):
    param = next(iter(kw))
    with pytest.raises(ParamError, match=f"{name}: parameter '{param}'"):
        augjax.get_op(name).bind(**kw)


@pytest.mark.parametrize("name", ["saturation", "hue", "grayscale", "random_grayscale",
                                  "color_jitter"])
def test_one_channel_images_are_refused(name):
    spec = augjax.get_op(name)
    x = images(2, 8, 8, c=1)
    with pytest.raises(InputError, match=f"{name}: argument 'images' expects 3 channels"):
        spec(x, key=KEY) if spec.random else spec(x)


@pytest.mark.slow
def test_importing_augjax_does_not_import_pallas():
    """Pallas (the CUDA colour jitter's kernel language) is imported when a colour jitter
    program is traced, not with augjax and its op specs (import time)."""
    import subprocess
    import sys

    code = ("import sys, augjax; augjax.ops.color_jitter; augjax.list_ops(); "
            "print(sorted(m for m in sys.modules if 'pallas' in m))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]", res.stdout
