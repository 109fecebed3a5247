"""Policies: op spaces and magnitude maps against torchvision / timm / DALI's own tables,
from_timm against timm's parser, per-sample choice distributions (statistical tests with fixed
seeds), outputs against the ops applied alone, reproducibility, DALI == arrays, no recompiles."""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np
import pytest
from helpers import images, run_dali, seeds
from scipy import stats

import augjax
from augjax.errors import ParamError
from augjax.policies import tables as T
from augjax.policies._magnitude import resolve

tv_aa = pytest.importorskip("torchvision.transforms.v2._auto_augment")
timm_aa = pytest.importorskip("timm.data.auto_augment")

#: The reference name -> augjax op each space must use (independent of tables.py).
TV_OPS = {"Identity": None, "ShearX": "shear_x", "ShearY": "shear_y",
          "TranslateX": "translate_x", "TranslateY": "translate_y", "Rotate": "rotate",
          "Brightness": "brightness", "Color": "saturation", "Contrast": "contrast",
          "Sharpness": "sharpness", "Posterize": "posterize", "Solarize": "solarize",
          "AutoContrast": "autocontrast", "Equalize": "equalize", "Invert": "invert"}
SIZES = [(32, 32), (224, 224), (331, 331), (37, 53), (500, 375)]


def _resolved(space):
    """The entries with their maps made concrete: each op's declared map plus the table's
    overrides (what a policy uses)."""
    items = space.values() if isinstance(space, dict) else space
    out = [e if e.op is None else resolve(e, augjax.get_op(e.op)) for e in items]
    return {e.name: e for e in out} if isinstance(space, dict) else tuple(out)


def _tv_param(name: str, magnitude: float) -> float:
    """The parameter torchvision's ``_apply_image_or_video_transform`` passes for a uint8 image,
    in augjax's units (shear factor, whole pixels, degrees, enhance factor, bits, levels)."""
    if name.startswith("Translate") or name == "Posterize":
        return float(int(magnitude))
    if name in ("Brightness", "Color", "Contrast", "Sharpness"):
        return 1.0 + magnitude
    if name == "Solarize":
        return 255.0 * magnitude
    return magnitude


@pytest.mark.parametrize("ours, theirs, bins", [
    (T.TV_RAND_AUGMENT, tv_aa.RandAugment._AUGMENTATION_SPACE, (10, 31)),
    (T.TV_TRIVIAL_AUGMENT_WIDE, tv_aa.TrivialAugmentWide._AUGMENTATION_SPACE, (10, 31)),
    (T.TV_AUTO_AUGMENT, tv_aa.AutoAugment._AUGMENTATION_SPACE, (10,)),
    (T.TV_AUGMIX, tv_aa.AugMix._AUGMENTATION_SPACE, (10,)),
    (T.TV_AUGMIX_PARTIAL, tv_aa.AugMix._PARTIAL_AUGMENTATION_SPACE, (10,)),
])
def test_torchvision_spaces_and_magnitudes(ours, theirs, bins):
    assert [e.name for e in ours] == list(theirs)
    assert {e.name: e.op for e in ours} == {n: TV_OPS[n] for n in theirs}
    checked, whole_number_ties = 0, set()
    for e in _resolved(ours):
        fn, signed = theirs[e.name]
        assert (e.magnitude is not None and e.magnitude.signed) == signed, e.name
        for num_bins in bins:
            for h, w in SIZES:
                mags = fn(num_bins, h, w)
                assert (mags is None) == (e.magnitude is None), e.name
                if mags is None:
                    continue
                table = e.magnitude.table(num_bins - 1, num_bins - 1, h, w)
                for i in range(num_bins):
                    for neg in (False, True) if signed else (False,):
                        ref = _tv_param(e.name, -float(mags[i]) if neg else float(mags[i]))
                        got = table[int(neg), i]
                        if e.magnitude.quantize is not None:  # whole pixels / bits: exact,
                            # except where the exact value is a whole number and torch's
                            # float32 linspace lands just below it (TA bin 15: 16 px -> 15 px)
                            if got != ref:
                                raw = dataclasses.replace(e.magnitude, quantize=None, f32=False)
                                exact = raw.value(i, num_bins - 1, neg, h, w)
                                assert abs(got - ref) == 1 and exact == round(exact), \
                                    (e.name, num_bins, h, w, i, neg, got, ref)
                                whole_number_ties.add((e.name, num_bins, i))
                        else:  # torch.linspace's float32 rounding (its step is rounded
                            # once, then multiplied): within 2 ulp of the table's largest value
                            atol = 2 * np.spacing(np.float32(np.abs(table).max()))
                            assert abs(got - ref) <= atol, (e.name, num_bins, h, w, i, got, ref)
                        checked += 1
    assert checked > 0
    assert len(whole_number_ties) <= 4, whole_number_ties


@pytest.mark.parametrize("policy", ["imagenet", "cifar10", "svhn"])
def test_torchvision_autoaugment_policies(policy):
    ref = tv_aa.AutoAugment(getattr(tv_aa.AutoAugmentPolicy, policy.upper()))._policies
    assert T.TV_POLICIES[policy] == tuple(tuple(sub) for sub in ref)


def test_declared_op_ranges_match_torchvision_randaugment():
    """Each op's own magnitude declaration (Param.magnitude/signed) is RandAugment's range: the
    op's map and the resolved torchvision entry give the same raw values at every bin (before
    the entry's float32 rounding and quantization)."""
    for e in _resolved(T.TV_RAND_AUGMENT):
        if e.magnitude is None:
            continue
        param = augjax.get_op(e.op).params[e.param]
        declared = param.magnitude_map
        assert param.signed == e.magnitude.signed == declared.signed, e.name
        raw = dataclasses.replace(e.magnitude, f32=False, quantize=None, per=None)
        for level in range(31):
            assert declared.value(level, 30, False, 1, 1) == pytest.approx(
                raw.value(level, 30, False, 1, 1), rel=1e-12, abs=1e-12), (e.name, level)


TIMM_OPS = {"AutoContrast": "autocontrast", "Equalize": "equalize", "Invert": "invert",
            "Rotate": "rotate", "Posterize": "posterize", "PosterizeIncreasing": "posterize",
            "PosterizeOriginal": "posterize", "Solarize": "solarize",
            "SolarizeIncreasing": "solarize", "SolarizeAdd": "solarize_add",
            "Color": "saturation", "ColorIncreasing": "saturation", "Contrast": "contrast",
            "ContrastIncreasing": "contrast", "Brightness": "brightness",
            "BrightnessIncreasing": "brightness", "Sharpness": "sharpness",
            "SharpnessIncreasing": "sharpness", "ShearX": "shear_x", "ShearY": "shear_y",
            "TranslateX": "translate_x", "TranslateY": "translate_y",
            "TranslateXRel": "translate_x", "TranslateYRel": "translate_y",
            "Desaturate": "saturation", "GaussianBlur": "gaussian_blur",
            "GaussianBlurRand": "gaussian_blur"}


@pytest.mark.parametrize("hparams", [timm_aa._HPARAMS_DEFAULT,
                                     {"translate_const": 100, "translate_pct": 0.3}])
def test_timm_level_to_arg(monkeypatch, hparams):
    ours = _resolved(T.timm_ops(hparams["translate_const"], hparams.get("translate_pct", 0.45)))
    assert set(ours) == set(timm_aa.NAME_TO_OP) == set(TIMM_OPS)
    assert {n: e.op for n, e in ours.items()} == TIMM_OPS
    levels = [*range(11), 0.3, 2.5, 4.75, 9.99, 12.0, 20.0]  # > 10: timm's mmax case
    for name, fn in timm_aa.LEVEL_TO_ARG.items():
        e = ours[name]
        assert (fn is None) == (e.magnitude is None), name
        if fn is None:
            continue
        for neg in (False, True):
            monkeypatch.setattr(timm_aa, "_randomly_negate", (lambda v: -v) if neg else
                                (lambda v: v))
            for level in levels:
                ref = fn(level, hparams)[0]
                if name == "GaussianBlurRand":  # timm draws U(0.1, 2 * arg) inside the op
                    ref = 2.0 * ref
                if name == "Desaturate":  # timm's op enhances Color by 1 - arg, clamped
                    ref = min(1.0, max(0.0, 1.0 - ref))
                if name.startswith("Translate"):  # timm's positive shift moves content
                    ref = -ref  # left/up; augjax's translate moves it right/down
                got = e.magnitude.value(level, 10.0, neg, 224, 224)
                assert got == ref, (name, level, neg, got, ref)
                if float(level).is_integer() and level <= 10:
                    table = e.magnitude.table(10, 10.0, 224, 224)
                    assert table[int(neg), int(level)] == np.float32(ref), (name, level)


def test_timm_sets_and_policies():
    assert T.TIMM_RAND == tuple(timm_aa._RAND_TRANSFORMS)
    assert T.TIMM_RAND_INCREASING == tuple(timm_aa._RAND_INCREASING_TRANSFORMS)
    assert T.TIMM_RAND_3A == tuple(timm_aa._RAND_3A)
    assert T.TIMM_RAND_WEIGHTED_0 == timm_aa._RAND_WEIGHTED_0
    assert T.TIMM_RAND_WEIGHTED_3A == timm_aa._RAND_WEIGHTED_3A
    assert T.TIMM_AUGMIX == tuple(timm_aa._AUGMIX_TRANSFORMS)
    for name, policy in T.TIMM_POLICIES.items():
        ref = timm_aa.auto_augment_policy(name)
        assert policy == tuple(tuple((op.name, op.prob, op.magnitude) for op in sub)
                               for sub in ref), name


@pytest.mark.parametrize("ours, suite", [
    (T.DALI_RAND_AUGMENT, "rand_augment.get_rand_augment_suite"),
    (T.DALI_RAND_AUGMENT_NON_MONOTONIC, "rand_augment.get_rand_augment_non_monotonic_suite"),
    (T.DALI_TRIVIAL_AUGMENT_WIDE, "trivial_augment.get_trivial_augment_wide_suite"),
])
def test_dali_suites(ours, suite):
    import importlib

    module, fn = suite.split(".")
    augs = getattr(importlib.import_module(f"nvidia.dali.auto_aug.{module}"), fn)()
    assert [a.name for a in augs] == [e.name for e in ours]
    dali_ops = {"color": "saturation", "auto_contrast": "autocontrast", "identity": None}
    for a, e in zip(augs, _resolved(ours)):
        assert e.op == dali_ops.get(a.name, a.name)
        assert (a.mag_range is None) == (e.magnitude is None)
        if a.mag_range is None:
            continue
        assert a.randomly_negate == e.magnitude.signed
        for bins in (10, 31):
            mags = np.linspace(a.mag_range[0], a.mag_range[1], bins)
            table = e.magnitude.table(bins - 1, bins - 1, 224, 224)
            for i, mag in enumerate(mags):
                for neg in (False, True) if a.randomly_negate else (False,):
                    param = a.mag_to_param(-mag if neg else mag)
                    got = table[int(neg), i]
                    if a.name == "posterize":  # DALI passes the bit mask of the kept bits
                        param = int(param)
                        got = 255 ^ (2 ** (8 - int(got)) - 1)
                    elif a.name == "sharpness":  # DALI's 3x3 kernel: corner = (1 - factor) / 13
                        param = 1.0 - 13.0 * float(np.asarray(param)[0, 0])
                    elif a.name.startswith(("translate", "shear")):
                        param = np.asarray(param)[0] + np.asarray(param)[1]
                    assert np.float32(got) == pytest.approx(np.float32(param), abs=1e-5), \
                        (a.name, bins, i, neg, got, param)


# ---------------------------------------------------------------------------------------------
# from_timm against timm's own parser

@pytest.mark.parametrize("config", ["rand-m9-mstd0.5-inc1", "rand-m7-n3-p0.8-mmax12",
                                    "rand-m9-mstd101-tweights", "rand-n1-t3aw", "rand-m6-t3a"])
def test_from_timm_rand_matches_timm(config):
    ref = timm_aa.rand_augment_transform(config, {})  # {} -> timm's default hparams are used
    ref = timm_aa.rand_augment_transform(config, dict(timm_aa._HPARAMS_DEFAULT))
    ours = augjax.from_timm(config)
    assert ours.style == "timm" and ours.n == ref.num_layers
    assert ours.op_names == tuple(op.name for op in ref.ops)
    op = ref.ops[0]
    assert (ours.m, ours.p, ours.mstd) == (op.magnitude, op.prob, op.magnitude_std)
    assert ours.mmax == op.magnitude_max
    if ref.choice_weights is None:
        assert ours.weights is None
    else:
        np.testing.assert_allclose(np.asarray(ours.weights) / sum(ours.weights),
                                   ref.choice_weights)


@pytest.mark.parametrize("config", ["augmix-m5-w4-d2", "augmix-m3-a0.5-b1-mstd0.7", "augmix"])
def test_from_timm_augmix_matches_timm(config):
    ref = timm_aa.augment_and_mix_transform(config, dict(timm_aa._HPARAMS_DEFAULT))
    ours = augjax.from_timm(config)
    assert (ours.severity, ours.width, ours.depth, ours.alpha, ours.blended) == \
        (ref.ops[0].magnitude, ref.width, ref.depth, ref.alpha, ref.blended)
    assert ours.mstd == ref.ops[0].magnitude_std
    assert ours.op_names == tuple(op.name for op in ref.ops)


@pytest.mark.parametrize("config", ["original-mstd0.5", "v0", "v0r", "originalr", "3a"])
def test_from_timm_auto_augment_matches_timm(config):
    ref = timm_aa.auto_augment_transform(config, dict(timm_aa._HPARAMS_DEFAULT))
    ours = augjax.from_timm(config)
    assert ours.subpolicies == tuple(tuple((op.name, op.prob, op.magnitude) for op in sub)
                                     for sub in ref.policy)
    assert ours.mstd == ref.policy[0][0].magnitude_std
    # timm's img_mean (128, 128, 128) levels, as a fraction of the range (augjax's fills).
    assert ours.fill == (128 / 255,) * 3 and ours.interpolation == "bilinear"


def test_from_timm_hparams_and_errors():
    p = augjax.from_timm("rand-m9", img_size=224, mean=(0.485, 0.456, 0.406))
    assert p.translate_const == int(224 * 0.45)
    assert p.fill == (124 / 255, 116 / 255, 104 / 255)  # timm: round(255 * mean), as fractions
    assert augjax.from_timm("v0", {"img_mean": (0, 51, 255)}).fill == (0.0, 0.2, 1.0)
    assert augjax.from_timm("augmix", img_size=224).translate_pct == 0.3
    assert augjax.from_timm("rand-m9-mstd0.5", {"magnitude_std": 2.0}).mstd == 2.0
    for bad, match in [("rand-m9-q3", "unknown section"), ("randaug-m9", "unknown family"),
                       ("rand-tfoo", "unknown op set"), ("rand-mx", "not a key and a number"),
                       ("augmix-w0", "'width'"), ("", "config string")]:
        with pytest.raises(ParamError, match=match):
            augjax.from_timm(bad)
    with pytest.raises(ParamError, match="unknown hparams"):
        augjax.from_timm("v0", {"translate": 3})


def test_policy_construction_errors():
    cases = [
        (lambda: augjax.rand_augment(m=31), "'m'"),
        (lambda: augjax.rand_augment(m=4.5), "bin index"),
        (lambda: augjax.rand_augment(style="pil"), "'style'"),
        (lambda: augjax.rand_augment(ops=["ShearX", "Shear"]), "unknown op name"),
        (lambda: augjax.rand_augment(exclude=[e.name for e in T.TV_RAND_AUGMENT]), "no op left"),
        (lambda: augjax.rand_augment(increasing=False), "increasing"),
        (lambda: augjax.rand_augment(style="timm", n=4, ops={"Rotate": 1, "ShearX": 1}),
         "without replacement"),
        (lambda: augjax.rand_augment(fill=300), "'fill'"),
        (lambda: augjax.auto_augment("svhn", fill=(1, 2, 3)), r"'fill' expects .*\[0, 1\]"),
        (lambda: augjax.auto_augment("imagenet2"), "'policy'"),
        (lambda: augjax.auto_augment("imagenet", mstd=0.5), "timm"),
        (lambda: augjax.augmix(severity=0), "'severity'"),
        (lambda: augjax.augmix(mstd=1.0), "timm"),
        (lambda: augjax.trivial_augment_wide(interpolation="bicubic"), "'interpolation'"),
    ]
    for build, match in cases:
        with pytest.raises(ParamError, match=match):
            build()


# ---------------------------------------------------------------------------------------------
# Distributions of the per-sample decisions (sample() returns the program's own draws)

N = 20000
SHAPE = (N, 32, 32, 3)


def _plan(policy, key, shape=SHAPE):
    """The policy's params as NumPy arrays, plus ``value``: the chosen entry's magnitude value
    per layer (read from that entry's branch params; NaN for entries without a magnitude)."""
    params = policy.sample(shape, key=key)
    out = {k: np.asarray(v) for k, v in params.items() if k != "branches"}
    value = np.full(out["op"].shape, np.nan, np.float32)
    for j, (entry, branch) in enumerate(zip(policy.space, params["branches"], strict=True)):
        if entry.param is not None:
            value = np.where(out["op"] == j, np.asarray(branch[entry.param]), value)
    out["value"] = value
    return out


def _chi2_uniform(values, k):
    return stats.chisquare(np.bincount(np.asarray(values).ravel(), minlength=k)).pvalue


@pytest.mark.slow
def test_rand_augment_torchvision_choices():
    policy = augjax.rand_augment()  # n=2, m=9, 31 bins
    plan = _plan(policy, jax.random.key(0))
    ops_ = plan["op"]
    assert ops_.shape == (N, 2) and len(policy.op_names) == 14
    assert _chi2_uniform(ops_[:, 0], 14) > 1e-3 and _chi2_uniform(ops_[:, 1], 14) > 1e-3
    table = np.zeros((14, 14))
    np.add.at(table, (ops_[:, 0], ops_[:, 1]), 1)
    assert stats.chi2_contingency(table).pvalue > 1e-3  # the two layers are independent
    assert stats.binomtest(int(plan["negative"].sum()), 2 * N, 0.5).pvalue > 1e-3
    assert plan["applied"].all() and (plan["level"] == 9).all()
    for j, e in enumerate(policy.space):  # every value is the entry's map at bin 9
        rows = ops_ == j
        if e.magnitude is None:
            assert np.isnan(plan["value"][rows]).all()
            continue
        expect = np.where(plan["negative"][rows], e.magnitude.value(9, 30, True, 32, 32),
                          e.magnitude.value(9, 30, False, 32, 32)).astype(np.float32)
        np.testing.assert_array_equal(plan["value"][rows], expect)


@pytest.mark.slow
def test_rand_augment_timm_noise_probability_and_values():
    policy = augjax.from_timm("rand-m9-mstd0.5-inc1")
    plan = _plan(policy, jax.random.key(1))
    assert stats.binomtest(int(plan["applied"].sum()), 2 * N, 0.5).pvalue > 1e-3
    level = plan["level"].ravel()
    assert level.min() >= 0 and level.max() == 10.0
    # N(9, 0.5) clipped to [0, 10]: an atom of 1 - Phi(2) at 10, a normal below.
    assert stats.binomtest(int((level == 10).sum()), 2 * N, stats.norm.sf(2.0)).pvalue > 1e-3
    below = level[level < 10]
    cdf = lambda v: stats.norm.cdf(v, 9, 0.5) / stats.norm.cdf(10, 9, 0.5)
    assert stats.kstest(below, cdf).pvalue > 1e-3
    rot = policy.op_names.index("Rotate")
    rows = plan["op"] == rot
    np.testing.assert_allclose(np.abs(plan["value"][rows]), 3.0 * plan["level"][rows], rtol=1e-6)
    uniform = augjax.from_timm("rand-m7-mstd101")
    lv = np.asarray(uniform.sample(SHAPE, key=jax.random.key(2))["level"]).ravel()
    assert uniform.mstd == math.inf and stats.kstest(lv, stats.uniform(0, 7).cdf).pvalue > 1e-3


def test_rand_augment_weighted_choice_without_replacement():
    policy = augjax.from_timm("rand-n3-tweights")
    ops_ = np.asarray(policy.sample(SHAPE, key=jax.random.key(3))["op"])
    assert all(len(set(row)) == 3 for row in ops_[:2000].tolist())
    w = np.asarray(policy.weights) / sum(policy.weights)
    first = np.bincount(ops_[:, 0], minlength=len(w))
    assert stats.chisquare(first, N * w).pvalue > 1e-3
    # Second pick of sequential draws: sum_i w_i * w_j / (1 - w_i), i != j.
    second = np.array([sum(w[i] * w[j] / (1 - w[i]) for i in range(len(w)) if i != j)
                       for j in range(len(w))])
    counts = np.bincount(ops_[:, 1], minlength=len(w))
    keep = N * second >= 5
    assert stats.chisquare(counts[keep], counts[keep].sum() * second[keep] /
                           second[keep].sum()).pvalue > 1e-3


def test_trivial_augment_choices():
    policy = augjax.trivial_augment_wide()
    plan = _plan(policy, jax.random.key(4))
    assert _chi2_uniform(plan["op"], 14) > 1e-3
    assert _chi2_uniform(plan["level"].astype(int), 31) > 1e-3
    shear = policy.op_names.index("ShearX")
    rows = plan["op"][:, 0] == shear
    entry = next(e for e in policy.space if e.name == "ShearX")
    expect = entry.magnitude.table(30, 30, 32, 32)
    got = plan["value"][rows, 0]
    ref = expect[plan["negative"][rows, 0].astype(int), plan["level"][rows, 0].astype(int)]
    np.testing.assert_array_equal(got, ref)


@pytest.mark.slow
def test_auto_augment_choices():
    policy = augjax.auto_augment("imagenet")
    plan = _plan(policy, jax.random.key(5))
    sub = plan["subpolicy"]
    assert _chi2_uniform(sub, 25) > 1e-3
    z = []
    for s, entries in enumerate(policy.subpolicies):
        rows = sub == s
        for slot, (name, prob, level) in enumerate(entries):
            assert {policy.op_names[i] for i in plan["op"][rows, slot]} == {name}
            assert (plan["level"][rows, slot] == (level or 0)).all()
            hits, n = plan["applied"][rows, slot].sum(), rows.sum()
            if 0 < prob < 1:
                z.append((hits - n * prob) / math.sqrt(n * prob * (1 - prob)))
            else:
                assert hits == (n if prob == 1 else 0)
    assert max(abs(v) for v in z) < 4.5
    noisy = augjax.from_timm("original-mstd0.5")
    plan = _plan(noisy, jax.random.key(6))
    base = np.array([[lv for _, _, lv in s] for s in noisy.subpolicies])[plan["subpolicy"]]
    inner = (base >= 2) & (base <= 8)  # clipping at 0 / 10 is negligible there
    resid = (plan["level"] - base)[inner]
    assert stats.kstest(resid, stats.norm(0, 0.5).cdf).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("style", ["torchvision", "timm"])
def test_augmix_choices(style):
    policy = augjax.augmix(severity=3, width=3, alpha=0.5, style=style)
    plan = _plan(policy, jax.random.key(7))
    depth = plan["depth"]
    assert stats.chisquare(np.bincount(depth.ravel(), minlength=4)[1:]).pvalue > 1e-3
    np.testing.assert_array_equal(plan["applied"], np.arange(3) < depth[..., None])
    assert _chi2_uniform(plan["op"], len(policy.op_names)) > 1e-3
    m, w = plan["m"], plan["weights"]
    assert stats.kstest(m, stats.beta(0.5, 0.5).cdf).pvalue > 1e-3
    if style == "torchvision":  # m ~ Dirichlet(a, a)[0]; chain weights sum to 1 - m
        np.testing.assert_allclose(w.sum(1), 1 - m, atol=1e-5)
        assert _chi2_uniform(plan["level"].astype(int), 3) > 1e-3
        assert set(np.unique(plan["level"])) == {0.0, 1.0, 2.0}
    else:  # weights ~ Dirichlet(a * 3), level ~ U(0, severity)
        np.testing.assert_allclose(w.sum(1), 1, atol=1e-5)
        assert stats.kstest(w[:, 0], stats.beta(0.5, 1.0).cdf).pvalue > 1e-3
        assert stats.kstest(plan["level"].ravel(), stats.uniform(0, 3).cdf).pvalue > 1e-3


# ---------------------------------------------------------------------------------------------
# Outputs: each sample is its chosen op(s) applied alone, with the plan's value


def _groups(plan, n_layers):
    keys = [tuple((int(plan["op"][s, i]), float(plan["value"][s, i]), bool(plan["applied"][s, i]))
                  for i in range(n_layers)) for s in range(len(plan["op"]))]
    out = {}
    for s, k in enumerate(keys):
        out.setdefault(k, []).append(s)
    return out


def _apply_entry(policy, j, value, x):
    """Entry ``j`` of ``policy`` through the public op, with ``value`` as a Python number."""
    e = policy.space[j]
    if e.op is None:
        return x
    params = dict(e.fixed)
    if e.param is not None:
        params[e.param] = float(value)
    if e.geometric:
        params.update(fill=policy.fill, interpolation=policy.interpolation)
    op = augjax.get_op(e.op)
    return np.asarray(op(x, key=jax.random.key(0), **params) if op.random else op(x, **params))


@pytest.mark.slow
@pytest.mark.parametrize("policy", [
    augjax.rand_augment(n=1, ops=("Identity", "Posterize", "Solarize", "Rotate")),
    augjax.rand_augment(n=1, m=9, p=1.0, style="timm",
                        ops=("SolarizeAdd", "PosterizeIncreasing", "ShearX")),
    augjax.rand_augment(n=2, ops=("AutoContrast", "Equalize", "Identity")),
], ids=["torchvision", "timm", "two-layers"])
def test_outputs_are_the_chosen_ops(policy):
    x = images(24, 16, 16, seed=8)
    keys = jax.random.split(jax.random.key(10), 24)
    out = np.asarray(policy(x, key=keys))
    plan = _plan(policy, keys, x)
    groups = _groups(plan, policy.n)
    assert len(groups) >= 3  # one batch, several per-sample choices
    for choice, rows in groups.items():
        ref = x.copy()  # the group's rows; the others are only there to keep the batch's
        for j, value, applied in choice:  # shape (each op computes each sample alone: one
            if applied:  # program per op, where the group's own batch size compiled another)
                ref[rows] = _apply_entry(policy, j, value, ref)[rows]
        np.testing.assert_array_equal(out[rows], ref[rows], err_msg=str(choice))


@pytest.mark.slow
@pytest.mark.parametrize("style, blended", [("torchvision", False), ("timm", False),
                                            ("timm", True)])
def test_augmix_mixing_matches_the_formula(style, blended):
    policy = augjax.augmix(width=2, style=style, blended=blended,
                           ops=("Equalize", "AutoContrast"))
    x = images(16, 12, 12, seed=9)
    keys = jax.random.split(jax.random.key(11), 16)
    out = np.asarray(policy(x, key=keys))
    plan = _plan(policy, keys, x)

    def floor(v):  # truncation, and where it sees a float32 tie
        tie_here = np.abs(v - np.round(v)) < 1e-3
        return np.floor(v), tie_here

    chains = []  # each chain for every sample at once: equalize / autocontrast per plan
    for i in range(2):
        img = x
        for d in range(3):
            step = np.where((plan["op"][:, i, d] == 0)[:, None, None, None],
                            np.asarray(augjax.ops.equalize(img)),
                            np.asarray(augjax.ops.autocontrast(img)))
            img = np.where(plan["applied"][:, i, d][:, None, None, None], step, img)
        chains.append(img.astype(np.float32))
    w = plan["weights"][:, :, None, None, None]
    m = plan["m"][:, None, None, None]
    xf = x.astype(np.float32)
    if style == "torchvision":  # trunc(m0 * x + sum w_i chain_i)
        ref, tie = floor(np.clip(m * xf + (w[:, 0] * chains[0] + w[:, 1] * chains[1]), 0, 255))
    elif not blended:  # PIL blend(x, uint8(clip(sum w_i chain_i)), m)
        mixed, t1 = floor(np.clip(w[:, 0] * chains[0] + w[:, 1] * chains[1], 0, 255))
        ref, t2 = floor(xf + m * (mixed - xf))
        tie = t1 | t2
    else:  # timm _apply_blended: sequential blends with the recomputed weights
        ws = w * m[:, None]
        a1 = ws[:, 1]
        a0 = ws[:, 0] / (1 - a1)
        img, t1 = floor(xf + a0 * (chains[0] - xf))
        ref, t2 = floor(img + a1 * (chains[1] - img))
        tie = t1 | t2
    diff = np.abs(out.astype(int) - ref.astype(int))
    # Equal except at float32 ties of the truncations (the weights sum to 1 only up to
    # rounding, so an unchanged pixel can land on either side of its level, as in the refs).
    assert diff.max() <= 1 and not (diff > 0)[~tie].any()
    assert (diff == 0).mean() > 0.5


@pytest.mark.fast_tier("<lambda>-None")
@pytest.mark.parametrize("make,fill", [
    (lambda: augjax.rand_augment(n=1, m=10, p=1.0, style="timm", ops=("TranslateXRel",)),
     128 / 255),
    (lambda: augjax.rand_augment(n=1, m=30, style="dali", ops=("translate_x",)), 128 / 255),
    (lambda: augjax.rand_augment(n=1, m=30, ops=("TranslateX",), fill=(0.2, 0.4, 0.6)),
     (0.2, 0.4, 0.6)),
    (lambda: augjax.rand_augment(n=1, m=30, ops=("TranslateX",)), None),
])
def test_policy_fill_is_a_fraction_for_both_dtypes(make, fill):
    """A policy's fill (timm/DALI 128/255, or given) reaches the geometric ops as a fraction:
    uncovered pixels hold ``fill * 255`` on uint8 and ``fill`` on float32 (None: zeros)."""
    policy = make()
    assert policy.fill == (None if fill is None else
                           tuple(np.broadcast_to(fill, 3).tolist()))
    x8 = np.full((8, 16, 16, 3), 30, np.uint8)
    key = jax.random.key(21)
    out8 = np.asarray(policy(x8, key=key))
    outf = np.asarray(policy((x8 / 255.0).astype(np.float32), key=key))
    uncovered = (out8 != 30).any(-1)
    assert uncovered.sum() >= 8 * 16 * 4  # the largest translations uncover many columns
    want = np.broadcast_to(0.0 if fill is None else fill, 3)
    np.testing.assert_array_equal(out8[uncovered], np.broadcast_to(np.round(want * 255),
                                                                   (uncovered.sum(), 3)))
    np.testing.assert_allclose(outf[uncovered], np.broadcast_to(want, (uncovered.sum(), 3)),
                               rtol=1e-6)


@pytest.mark.slow
def test_policies_are_per_sample_and_reproducible():
    policy = augjax.trivial_augment_wide()
    x = np.repeat(images(1, 16, 16, seed=12), 16, axis=0)  # one image, 16 times
    key = jax.random.key(13)
    out = np.asarray(policy(x, key=key))
    assert len({o.tobytes() for o in out}) >= 8  # samples choose their own op and magnitude
    np.testing.assert_array_equal(out, np.asarray(augjax.trivial_augment_wide()(x, key=key)))
    assert not np.array_equal(out, np.asarray(policy(x, key=jax.random.key(14))))
    xf = (x / 255.0).astype(np.float32)  # float images (fill 128/255 as is), timm's full space
    outf = np.asarray(augjax.from_timm("rand-m9-mstd0.5-inc1")(xf, key=key))
    assert outf.dtype == np.float32 and 0.0 <= outf.min() and outf.max() <= 1.0
    assert len({o.tobytes() for o in outf}) >= 8


@pytest.mark.slow
def test_dali_equals_arrays_for_policies():
    x, s = images(6, 16, 16, seed=15), seeds(6, seed=16)
    chain = augjax.compose(
        augjax.rand_augment(n=2, m=9, mstd=0.5, style="timm", increasing=True,
                            ops=("Rotate", "SolarizeIncreasing", "ColorIncreasing", "Equalize")),
        augjax.augmix(width=2, depth=1, ops=("Rotate", "Posterize")),  # bits down to 0
        augjax.ops.normalize.bind(chw=True))
    (out,), = run_dali(lambda im, sd: chain(im, seeds=sd), x, s, layouts=["HWC", None])
    ref = np.asarray(chain(x, key=augjax.keys_from_seeds(s)))
    assert out.shape == (6, 3, 16, 16)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.slow
def test_no_recompilation_after_warmup():
    from nvidia.dali import fn, pipeline_def

    batch = np.random.default_rng(0).integers(0, 256, (4, 8, 8, 3), dtype=np.uint8)

    def build():
        policy = augjax.rand_augment(n=2, m=9)

        @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=3,
                      prefetch_queue_depth=1)
        def pipe():
            images = fn.external_source(source=lambda: batch, batch=True, layout="HWC")
            return policy(images)

        p = pipe()
        p.build()
        return p

    before = augjax.trace_count()
    p = build()
    outs = [np.array(p.run()[0].as_tensor()) for _ in range(1000)]
    assert augjax.trace_count() - before == 1  # 1000 batches, one compilation
    assert not np.array_equal(outs[0], outs[1])  # new seeds every batch
    q = build()  # the same pipeline again: the cached program, no new trace
    np.array(q.run()[0].as_tensor())
    assert augjax.trace_count() - before == 1


def test_op_subsets_and_exclusions():
    dali = augjax.rand_augment(style="dali", exclude=["identity", "equalize"])
    assert dali.op_names == tuple(e.name for e in T.DALI_RAND_AUGMENT
                                  if e.name not in ("identity", "equalize"))
    sub = augjax.rand_augment(ops=["Rotate", "ShearX"], exclude=["ShearX"])
    assert sub.op_names == ("Rotate",)
    assert augjax.rand_augment(style="timm", increasing=True).op_names == \
        T.TIMM_RAND_INCREASING
    assert augjax.augmix(all_ops=False).op_names == tuple(tv_aa.AugMix._PARTIAL_AUGMENTATION_SPACE)
    plan = sub.explain((100, 8, 8, 3), key=jax.random.key(0))
    assert (np.asarray(plan["op"]) == 0).all()


@pytest.mark.slow
def test_a_registered_op_joins_rand_augment_by_its_registered_name():
    """gaussian_blur (not in torchvision's space; registered through an entry point, as a pack's
    ops are) joins the torchvision space by its registered name, driven by its own declared
    magnitude map."""
    record = augjax.op_records("gaussian_blur")[0]
    assert record.entry_point == "augjax.catalog.blur:gaussian_blur"
    policy = augjax.rand_augment(n=1, m=15, ops=["Identity", "gaussian_blur"])
    assert policy.op_names == ("Identity", "gaussian_blur")
    entry = policy.space[1]
    declared = augjax.get_op("gaussian_blur").params["sigma"].magnitude_map
    assert entry.param == "sigma" and entry.magnitude == declared
    x = images(8, 16, 16, seed=21)
    key = jax.random.key(22)
    params = policy.sample(x, key=key)
    sigma = np.asarray(params["branches"][1]["sigma"])[:, 0]
    np.testing.assert_allclose(sigma, declared.value(15, 30, False, 16, 16), rtol=1e-6)
    blurred = {**params, "op": np.ones((8, 1), np.int32)}
    np.testing.assert_array_equal(
        policy.apply(x, params=blurred),
        augjax.ops.gaussian_blur.apply(x, params={"sigma": sigma}))
    np.testing.assert_array_equal(policy(x, key=key), policy.apply(x, params=params))
    with pytest.raises(ParamError, match="declares no magnitude"):
        augjax.rand_augment(ops=["Rotate", "box_blur"])
