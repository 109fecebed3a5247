"""mixup, cutmix and mixup_cutmix against timm.data.Mixup / FastCollateMixup.

timm draws from NumPy's global RNG, so the exact comparisons replace the ``np`` that
``timm.data.mixup`` sees with one whose ``random`` answers timm's calls with the draws augjax's
op made from its key (``mix_plan``); everything else (the control flow, the boxes from those
draws, lambda correction, the image and target arithmetic) is timm's own code. The draws
themselves are tested for their distributions with fixed seeds.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import timm.data.mixup as tm
import torch
from helpers import images, run_dali, seeds
from scipy import stats

import augjax
from augjax.catalog.mix import mix_batch, mix_plan, soft_targets
from augjax.errors import InputError, ParamError

N, H, W, K = 6, 16, 20, 7
MODES = ("batch", "pair", "elem")


def _keys(seed: int, n: int = N) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


@functools.lru_cache(maxsize=None)
def _kernel_fn(n, h, w, draw, num_classes, smoothing):
    """The op's kernel as one jitted function of the op's keys, also returning its plan: a
    batch op at chain position 0 draws from ``fold_in(keys[0], 0)``."""

    def f(keys, x, labels):
        plan = mix_plan(jax.random.fold_in(keys[0], 0), n, h, w, **dict(draw))
        out, soft = mix_batch(x, soft_targets(labels, num_classes, smoothing), plan)
        return plan, out, soft

    return jax.jit(f)


def _kernel(keys, x, labels, draw, num_classes=K, smoothing=0.0):
    n, h, w, _ = x.shape
    f = _kernel_fn(n, h, w, tuple(sorted(draw.items())), num_classes, smoothing)
    return jax.tree.map(np.asarray, f(keys, x, labels))


class _FakeRandom:
    """Answers timm's np.random calls with augjax's draws, checking timm asks for the same
    distributions (argument ranges) and uses every draw exactly once."""

    def __init__(self, plan, cfg, mode, h, w):
        d = plan["draws"]
        self.cfg, self.h, self.w = cfg, h, w
        both = cfg["mixup_alpha"] > 0 and self.cut_alpha > 0
        on = [k for k, a in (("mix", cfg["mixup_alpha"]), ("cut", self.cut_alpha)) if a > 0]
        if mode == "batch":  # timm draws the switch and one Beta only when the batch is mixed
            mixed_batch = bool(plan["mixed"][0])
            self.rands = [d["u_p"]] + ([d["u_switch"]] if both and mixed_batch else [])
            chosen = "cut" if plan["use_cutmix"][0] or on == ["cut"] else "mix"
            on = [chosen] if mixed_batch else []
        else:
            self.rands = ([d["u_switch"]] if both else []) + [d["u_p"]]
        self.betas = {k: d["beta_" + k] for k in on}
        n = len(plan["lam"])
        idx = [()] if mode == "batch" else range(n // 2 if mode == "pair" else n)
        mixed = plan["mixed"] if mode != "batch" else plan["mixed"][:1]
        cut = plan["use_cutmix"] if mode != "batch" else plan["use_cutmix"][:1]
        self.ints = []
        for i, j in enumerate(idx):
            if not (mixed[i] and cut[i]):
                continue
            if cfg["cutmix_minmax"] is None:
                self.ints += [("cy", d["cy"][j]), ("cx", d["cx"][j])]
            else:
                self.ints += [("ch", d["yh"][j] - d["yl"][j]), ("cw", d["xh"][j] - d["xl"][j]),
                              ("yl", d["yl"][j]), ("xl", d["xl"][j])]
        self.ch = self.cw = None

    @property
    def cut_alpha(self):
        return 1.0 if self.cfg["cutmix_minmax"] is not None else self.cfg["cutmix_alpha"]

    def rand(self, *size):
        value = self.rands.pop(0)
        assert np.shape(value) == size
        return value

    def beta(self, a, b, size=None):
        assert a == b
        which = "cut" if a == self.cut_alpha else "mix"
        assert a == (self.cut_alpha if which == "cut" else self.cfg["mixup_alpha"])
        value = self.betas.pop(which)
        shape = () if size is None else (size,)
        if value is None:  # cutmix_minmax: augjax draws no Beta (lam comes from the box)
            assert which == "cut" and self.cfg["cutmix_minmax"] is not None
            return np.full(shape, 0.5)
        assert np.shape(value) == shape
        return value.astype(np.float64)

    def randint(self, low, high=None, size=None):
        assert size is None
        name, value = self.ints.pop(0)
        lo_hi = {"cy": (0, self.h), "cx": (0, self.w)}
        if self.cfg["cutmix_minmax"] is not None:
            mn, mx = self.cfg["cutmix_minmax"]
            lo_hi.update(ch=(int(self.h * mn), int(self.h * mx)),
                         cw=(int(self.w * mn), int(self.w * mx)))
            if name == "yl":
                lo_hi["yl"] = (0, self.h - self.ch + 1)
            if name == "xl":
                lo_hi["xl"] = (0, self.w - self.cw + 1)
        assert (low, high) == lo_hi[name], (name, low, high, lo_hi[name])
        assert low <= value < high
        if name in ("ch", "cw"):
            setattr(self, name, int(value))
        return int(value)

    def done(self):
        return not self.rands and not self.ints and not self.betas


class _FakeNp:
    def __init__(self, random):
        self.random = random

    def __getattr__(self, name):
        return getattr(np, name)


def _timm_cfg(op_name, kw):
    """The timm Mixup arguments equivalent to an augjax op's parameters."""
    if op_name == "mixup":
        return dict(mixup_alpha=kw["alpha"], cutmix_alpha=0.0, cutmix_minmax=None, prob=kw["p"],
                    switch_prob=0.0, mode=kw["mode"], correct_lam=True,
                    label_smoothing=kw["label_smoothing"], num_classes=K)
    if op_name == "cutmix":
        return dict(mixup_alpha=0.0, cutmix_alpha=kw["alpha"], cutmix_minmax=kw["minmax"],
                    prob=kw["p"], switch_prob=1.0, mode=kw["mode"],
                    correct_lam=kw["correct_lam"], label_smoothing=kw["label_smoothing"],
                    num_classes=K)
    return dict(kw, num_classes=K)


CONFIGS = [
    ("mixup", dict(alpha=0.4, p=0.8, label_smoothing=0.1)),
    ("cutmix", dict(alpha=0.7, minmax=None, correct_lam=False, p=0.8, label_smoothing=0.2)),
    ("cutmix", dict(alpha=1.0, minmax=(0.2, 0.8), correct_lam=False, p=1.0,
                    label_smoothing=0.0)),
    ("mixup_cutmix", dict(mixup_alpha=0.4, cutmix_alpha=1.0, cutmix_minmax=None, prob=0.8,
                          switch_prob=0.5, correct_lam=True, label_smoothing=0.1)),
]
DRAW_KEYS = ("mixup_alpha", "cutmix_alpha", "cutmix_minmax", "prob", "switch_prob", "mode",
             "correct_lam")


def _run_timm(monkeypatch, cfg, plan, call):
    """Runs ``call()`` (timm code) with np.random answering from ``plan``'s draws."""
    fake = _FakeRandom(plan, cfg, cfg["mode"], H, W)
    monkeypatch.setattr(tm, "np", _FakeNp(fake))
    try:
        result = call()
    finally:
        monkeypatch.setattr(tm, "np", np)
    assert fake.done()  # timm asked for exactly the draws augjax made
    return result


# Each (config, mode) costs a compile (~2 s of CPU): every mode with both methods on, and each
# single-method config in one mode (the modes share the code that the first three cover).
CASES = [(CONFIGS[3], m) for m in MODES] + [(CONFIGS[0], "batch"), (CONFIGS[1], "pair"),
                                             (CONFIGS[2], "elem")]


@pytest.mark.parametrize("config, mode", CASES)
def test_matches_timm_mixup_given_the_same_draws(monkeypatch, config, mode):
    op_name, kw = config
    cfg = _timm_cfg(op_name, dict(kw, mode=mode))
    draw = {k: cfg[k] for k in DRAW_KEYS}
    worst_img = worst_y = 0.0
    kinds = set()
    for seed in range(6):
        x = images(N, H, W, dtype=np.float32, seed=seed)
        labels = np.random.default_rng(seed).integers(0, K, N).astype(np.int32)
        plan, out, soft = _kernel(_keys(seed), x, labels, draw, smoothing=cfg["label_smoothing"])
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
        ref_x, ref_y = _run_timm(monkeypatch, cfg, plan,
                                 lambda: tm.Mixup(**cfg)(xt, torch.from_numpy(labels).long()))
        worst_img = max(worst_img, np.abs(out - ref_x.numpy().transpose(0, 2, 3, 1)).max())
        worst_y = max(worst_y, np.abs(soft - ref_y.numpy()).max())
        np.testing.assert_allclose(soft.sum(1), 1.0, atol=1e-6)
        kinds |= {("cut" if c else "mix") if m else "none"
                  for m, c in zip(plan["mixed"], plan["use_cutmix"])}
    assert worst_img <= 1e-6 and worst_y <= 1e-6, (worst_img, worst_y)
    assert kinds - {"none"}  # the draws did exercise mixing
    if op_name == "mixup_cutmix":
        assert {"mix", "cut"} <= kinds


OP_CASES = CASES[2:5]  # one case of each op: mixup_cutmix, mixup, cutmix


@pytest.mark.parametrize("config, mode", OP_CASES)
def test_op_runs_the_kernel_with_its_key(config, mode):
    """The op (dispatch, jit, key derivation) gives exactly what the kernel above gives."""
    op_name, kw = config
    cfg = _timm_cfg(op_name, dict(kw, mode=mode))
    x = images(N, H, W, dtype=np.float32, seed=9)
    labels = np.arange(N, dtype=np.int32) % K
    _, out, soft = _kernel(_keys(9), x, labels, {k: cfg[k] for k in DRAW_KEYS},
                           smoothing=cfg["label_smoothing"])
    out2, soft2 = getattr(augjax.ops, op_name)(x, labels, key=_keys(9), num_classes=K,
                                               mode=mode, **kw)
    np.testing.assert_array_equal(out, np.asarray(out2))
    np.testing.assert_array_equal(soft, np.asarray(soft2))


@pytest.mark.parametrize("mode", ["batch", "pair"])  # elem is pair's arithmetic, per sample
def test_uint8_matches_timm_fast_collate_mixup(monkeypatch, mode):
    cfg = dict(CONFIGS[-1][1], mode=mode, num_classes=K)
    draw = {k: cfg[k] for k in DRAW_KEYS}
    worst = 0
    for seed in range(4):
        x = images(N, H, W, dtype=np.uint8, seed=seed)
        labels = np.arange(N, dtype=np.int32) % K
        plan, out, soft = _kernel(_keys(seed + 10), x, labels, draw, smoothing=0.1)
        batch = [(x[i].transpose(2, 0, 1).copy(), int(labels[i])) for i in range(N)]
        ref_x, ref_y = _run_timm(monkeypatch, cfg, plan,
                                 lambda: tm.FastCollateMixup(**cfg)(batch))
        assert out.dtype == np.uint8
        worst = max(worst, np.abs(out.astype(int) - ref_x.numpy().transpose(0, 2, 3, 1)).max())
        np.testing.assert_allclose(soft, ref_y.numpy(), atol=1e-6)
    assert worst <= 1, worst


def test_label_smoothing_values_are_timms_exactly():
    labels = np.array([0, 3, 6, 1, 2, 5], np.int32)
    for s in (0.0, 0.1, 0.25):
        _, soft = augjax.ops.mixup_cutmix(images(N, 4, 4), labels, key=jax.random.key(0),
                                          num_classes=K, mixup_alpha=0.0, label_smoothing=s)
        ref = tm.mixup_target(torch.from_numpy(labels).long(), K, 1.0, s)
        np.testing.assert_array_equal(np.asarray(soft), ref.numpy())


def test_float_soft_labels_mix_by_lam():
    x = images(N, H, W, dtype=np.float32)
    dense = np.random.default_rng(0).dirichlet(np.ones(K), N).astype(np.float32)
    draw = {k: v for k, v in dict(CONFIGS[-1][1], mode="elem").items() if k in DRAW_KEYS}
    plan, _, soft = _kernel(_keys(1), x, dense, draw, smoothing=0.1)
    lam = plan["lam"][:, None]
    assert len(np.unique(lam)) > 2
    np.testing.assert_allclose(soft, lam * dense + (1 - lam) * dense[::-1], atol=1e-6)
    np.testing.assert_allclose(soft.sum(1), 1.0, atol=1e-6)


# -- the draws' distributions ----------------------------------------------------------------
def _many(n, h=H, w=W, seed=0, **draw):
    f = jax.jit(lambda k: mix_plan(k, n, h, w, **draw))
    return jax.tree.map(np.asarray, f(jax.random.key(seed)))


def test_draws_follow_the_beta_the_probabilities_and_timms_box_correction():
    n, h, w = 20000, 24, 30
    plan = _many(n, h, w, mixup_alpha=0.4, cutmix_alpha=1.5, cutmix_minmax=None, prob=0.7,
                 switch_prob=0.3, mode="elem", correct_lam=True)
    d = plan["draws"]
    mixed, cut = plan["mixed"], plan["use_cutmix"]
    assert abs(mixed.mean() - 0.7) < 0.015
    assert abs(cut[mixed].mean() - 0.3) < 0.015
    assert np.all(plan["lam"][~mixed] == 1.0) and not cut[~mixed].any()
    assert stats.kstest(d["beta_mix"], stats.beta(0.4, 0.4).cdf).pvalue > 1e-3
    assert stats.kstest(d["beta_cut"], stats.beta(1.5, 1.5).cdf).pvalue > 1e-3
    mix_lam = plan["lam"][mixed & ~cut]
    assert stats.kstest(mix_lam, stats.beta(0.4, 0.4).cdf).pvalue > 1e-3
    assert abs(mix_lam.var() - 1 / (4 * (2 * 0.4 + 1))) < 0.01  # Var Beta(a, a)
    # cutmix lam, corrected to the clipped box, against timm's own rand_bbox on its own draws
    np.random.seed(0)
    ref = np.array([tm.cutmix_bbox_and_lam((3, h, w), np.random.beta(1.5, 1.5))[1]
                    for _ in range(int(cut.sum()))])
    assert stats.ks_2samp(plan["lam"][cut], ref).pvalue > 1e-3
    area = (plan["yh"] - plan["yl"]) * (plan["xh"] - plan["xl"])
    np.testing.assert_allclose(plan["lam"][cut], 1 - area[cut] / (h * w), atol=1e-6)
    assert set(np.unique(d["cy"])) == set(range(h)) and set(np.unique(d["cx"])) == set(range(w))


def test_minmax_boxes_cover_timms_ranges():
    n = 6000
    mn, mx = 0.2, 0.8
    plan = _many(n, H, W, mixup_alpha=0.0, cutmix_alpha=0.0, cutmix_minmax=(mn, mx), prob=1.0,
                 switch_prob=0.5, mode="elem", correct_lam=False)
    ch, cw = plan["yh"] - plan["yl"], plan["xh"] - plan["xl"]
    assert set(np.unique(ch)) == set(range(int(H * mn), int(H * mx)))
    assert set(np.unique(cw)) == set(range(int(W * mn), int(W * mx)))
    assert (plan["yl"] >= 0).all() and (plan["yh"] <= H).all() and (plan["xh"] <= W).all()
    assert (plan["yl"] == 0).any() and (plan["yh"] == H).any()
    np.testing.assert_allclose(plan["lam"], 1 - ch * cw / (H * W), atol=1e-6)
    assert plan["use_cutmix"].all()


ODD = 9  # an odd batch: the middle sample is its own partner
MIXCUT = dict(mixup_alpha=0.4, cutmix_alpha=1.0, num_classes=ODD, label_smoothing=0.0)


@pytest.mark.parametrize("mode", MODES)
def test_mode_structure_and_odd_batches(mode):
    """With one-hot labels i, soft[i, i] is sample i's lam: equal across the batch (batch),
    across pairs (pair), free per sample (elem); the middle sample is left as it is."""
    x = images(ODD, H, W, seed=4)
    labels = np.arange(ODD, dtype=np.int32).reshape(ODD, 1)
    out, soft = augjax.ops.mixup_cutmix(x, labels, key=_keys(3, ODD), mode=mode, **MIXCUT)
    out, soft = np.asarray(out), np.asarray(soft)
    lam = np.diag(soft)
    mid = ODD // 2
    if mode == "batch":
        np.testing.assert_allclose(lam[np.arange(ODD) != mid], lam[0], atol=1e-6)
    elif mode == "pair":
        np.testing.assert_allclose(lam, lam[::-1], atol=1e-6)
        assert len(np.unique(lam.round(6))) > 2
    else:
        assert len(np.unique(lam.round(6))) > mid + 1
    np.testing.assert_array_equal(out[mid], x[mid])
    np.testing.assert_allclose(soft[mid], np.eye(ODD)[mid], atol=1e-6)
    np.testing.assert_allclose(soft.sum(1), 1.0, atol=1e-6)
    assert (out != x).any()


# -- dtypes, DALI, keys, errors ------------------------------------------------------------------
def test_dali_pipeline_equals_array_path():
    """uint8 through a DALI CPU pipeline (labels as a second input) == the array path with
    keys_from_seeds (the array program is the one compiled for the structure test)."""
    x = images(ODD, H, W, seed=4)
    labels = np.arange(ODD, dtype=np.int32).reshape(ODD, 1)
    s = seeds(ODD, seed=5)

    def build(imgs, lab, sd):
        return augjax.ops.mixup_cutmix(imgs, lab, seeds=sd, mode="pair", **MIXCUT)

    (a, ya), = run_dali(build, x, labels, s, layouts=["HWC", None, None])
    a2, ya2 = augjax.ops.mixup_cutmix(x, labels, key=augjax.keys_from_seeds(s),
                                      mode="pair", **MIXCUT)
    np.testing.assert_array_equal(a, np.asarray(a2))
    np.testing.assert_array_equal(ya, np.asarray(ya2))
    assert a.dtype == np.uint8 and ya.shape == (ODD, ODD) and (a != x).any()


@pytest.mark.parametrize("config, mode", OP_CASES)
def test_same_key_same_output_other_key_other_output(config, mode):
    op_name, kw = config
    x = images(N, H, W, dtype=np.float32, seed=9)  # the shapes and params compiled above
    labels = np.arange(N, dtype=np.int32) % K
    spec = getattr(augjax.ops, op_name).bind(num_classes=K, mode=mode, **kw)
    a, ya = spec(x, labels, key=jax.random.key(1))
    b, yb = spec(x, labels, key=jax.random.key(1))
    c, yc = spec(x, labels, key=jax.random.key(2))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ya, yb)
    assert (np.asarray(a) != np.asarray(c)).any() and (np.asarray(ya) != np.asarray(yc)).any()


def test_everything_disabled_only_softens_labels():
    x = images(N, H, W)
    labels = np.arange(N, dtype=np.int32)
    out, soft = augjax.ops.mixup_cutmix(x, labels, key=jax.random.key(0), mixup_alpha=0.0,
                                        cutmix_alpha=0.0, num_classes=N, label_smoothing=0.1)
    np.testing.assert_array_equal(np.asarray(out), x)
    ref = tm.mixup_target(torch.from_numpy(labels).long(), N, 1.0, 0.1)
    np.testing.assert_array_equal(np.asarray(soft), ref.numpy())


@pytest.mark.parametrize(
    "op_name, kw, param",
    [
        ("mixup_cutmix", dict(mode="pairs"), "mode"),
        ("mixup_cutmix", dict(prob=1.5), "prob"),
        ("mixup_cutmix", dict(switch_prob=-0.1), "switch_prob"),
        ("mixup_cutmix", dict(cutmix_minmax=(0.8, 0.2)), "cutmix_minmax"),
        ("mixup_cutmix", dict(cutmix_minmax=(0.2, 1.5)), "cutmix_minmax"),
        ("mixup_cutmix", dict(mixup_alpha=-1.0), "mixup_alpha"),
        ("mixup_cutmix", dict(label_smoothing=2.0), "label_smoothing"),
        ("cutmix", dict(minmax=0.5), "minmax"),
        ("cutmix", dict(correct_lam="yes"), "correct_lam"),
        ("cutmix", dict(num_classes=0), "num_classes"),
        ("mixup", dict(mode="pairs"), "mode"),
    ],
)
def test_bad_parameters_raise_param_error(op_name, kw, param):
    kw = {"num_classes": K, **kw}
    with pytest.raises(ParamError) as err:
        getattr(augjax.ops, op_name).bind(**kw)
    assert err.value.op == op_name and err.value.param == param
    assert op_name in str(err.value) and repr(kw[param]) in str(err.value)


@pytest.mark.parametrize("op_name, param", [("mixup", "alpha"), ("cutmix", "alpha"),
                                             ("mixup_cutmix", "mixup_alpha"),
                                             ("mixup_cutmix", "cutmix_alpha")])
def test_alphas_that_float32_cannot_draw_are_refused(op_name, param):
    """A positive alpha below 1e-30 (float32 Beta draws underflow to NaN from about 1e-38) is a
    ParamError at bind time; 1e-30 gives finite images (Beta(a, a) is then a fair coin between
    0 and 1), and so do huge alphas, beyond float32 included (drawn as 1e30: lam = 0.5)."""
    spec = getattr(augjax.ops, op_name)
    for bad in (8e-292, 1e-38, 9.9e-31):
        with pytest.raises(ParamError) as err:
            spec.bind(num_classes=K, **{param: bad})
        assert err.value.op == op_name and err.value.param == param
        assert repr(bad) in str(err.value)
    assert "1e-30" in str(err.value)
    with pytest.raises(ParamError, match="pass 0 to disable"):
        spec.bind(num_classes=K, **{param: 1e-300})
    x = images(N, 8, 8, dtype=np.float32, seed=3)
    labels = np.arange(N, dtype=np.int32) % K
    for alpha in (1e-30, 1e30, 1e300):
        kw = {param: alpha, "mode": "elem"}
        if op_name == "mixup_cutmix":
            kw.update(switch_prob=1.0 if param == "cutmix_alpha" else 0.0,
                      **{"mixup_alpha" if param == "cutmix_alpha" else "cutmix_alpha": 0.0})
        out, soft = spec(x, labels, key=jax.random.key(7), num_classes=K, **kw)
        out, soft = np.asarray(out), np.asarray(soft)
        assert np.isfinite(out).all() and np.isfinite(soft).all(), (alpha, kw)
        if op_name == "mixup" or param == "mixup_alpha":
            if alpha == 1e-30:  # lam is 0 or 1: each sample is itself or its partner
                for i in range(N):
                    assert np.array_equal(out[i], x[i]) or np.array_equal(out[i], x[N - 1 - i])
            else:  # lam = 0.5: the mean of the pair
                np.testing.assert_allclose(out, 0.5 * x + 0.5 * x[::-1], atol=1e-6)


def test_num_classes_required_and_soft_label_width_checked():
    x = images(N, 4, 4)
    with pytest.raises(ParamError, match="'num_classes' is required"):
        augjax.ops.cutmix(x, np.zeros(N, np.int32), key=jax.random.key(0))
    with pytest.raises(InputError, match="soft labels of 3 classes, but num_classes=7"):
        augjax.ops.mixup_cutmix(x, np.zeros((N, 3), np.float32), key=jax.random.key(0),
                                num_classes=K)


@pytest.mark.parametrize("shape", [0.05, 0.3, 1.0, 2.5, 40.0])
def test_loop_free_loggamma_follows_the_gamma_distribution(shape):
    from augjax.catalog._gamma import loggamma

    log_g = np.asarray(loggamma(jax.random.key(11), jnp.full((20_000,), shape)), np.float64)
    assert np.isfinite(log_g).all()
    # Compare in log space: tiny shapes put most of the mass below float32's smallest normal.
    def cdf(t):
        return stats.gamma(shape).cdf(np.exp(t))
    assert stats.kstest(log_g, cdf).pvalue > 1e-3


def test_loop_free_loggamma_handles_the_extreme_alphas():
    from augjax.catalog._gamma import loggamma
    from augjax.catalog.mix import ALPHA_MAX, ALPHA_MIN, symmetric_betas

    log_g = np.asarray(loggamma(jax.random.key(0), jnp.array([ALPHA_MIN, ALPHA_MAX] * 50)))
    assert np.isfinite(log_g).all()
    draws = np.asarray(symmetric_betas(jax.random.key(1), [ALPHA_MIN, ALPHA_MAX], (500,)))
    assert set(np.unique(draws[0])) <= {0.0, 1.0} and 0.3 < draws[0].mean() < 0.7
    np.testing.assert_array_equal(draws[1], 0.5)


@pytest.mark.parametrize("op_name", ["mixup", "cutmix", "mixup_cutmix"])
def test_mixing_programs_have_no_while_loop_on_gpu(op_name):
    """An XLA while loop copies its predicate to the host every iteration on a GPU (and blocks
    the calling thread); the Beta draws are loop-free. Lowered for CUDA here, no GPU needed."""
    op = getattr(augjax.ops, op_name).bind(num_classes=K)
    x = jnp.zeros((N, H, W, 3), jnp.uint8)
    labels = jnp.arange(N, dtype=jnp.int32) % K
    fn = jax.jit(lambda key, x, y: op(x, y, key=key))
    hlo = fn.trace(jax.random.key(0), x, labels).lower(lowering_platforms=("cuda",)).as_text()
    assert "stablehlo.while" not in hlo
