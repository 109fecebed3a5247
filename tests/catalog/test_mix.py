"""mixup, cutmix and mixup_cutmix against timm.data.Mixup / FastCollateMixup.

timm draws from NumPy's global RNG, so the exact comparisons replace the ``np`` that
``timm.data.mixup`` sees with one whose ``random`` answers timm's calls with what augjax's op
drew, read from the params ``op.sample`` returns: the mixing and switch coins (from ``lam`` and
``use_cutmix``), the Beta draws (``lam``) and the box (its centre, or for ``cutmix_minmax`` its
sides and corner); everything else (the control flow, the boxes from those draws, lambda
correction, the image and target arithmetic) is timm's own code. The draws themselves are
tested for their distributions with fixed seeds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import timm.data.mixup as tm
import torch
from helpers import images, run_dali, seeds
from scipy import stats

import augjax
from augjax.errors import InputError, ParamError

N, H, W, K = 6, 16, 20, 7
MODES = ("batch", "pair", "elem")
FIELDS = ("box", "lam", "perm", "use_cutmix")


def _keys(seed: int, n: int = N) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


def _run_op(op_name, kw, keys, x, labels):
    """The op's sampled params and its output (a call with the same key)."""
    spec = getattr(augjax.ops, op_name)
    params = spec.sample(x, labels, key=keys, num_classes=K, **kw)
    assert sorted(params) == list(FIELDS)
    out, soft = spec(x, labels, key=keys, num_classes=K, **kw)
    return jax.tree.map(np.asarray, params), np.asarray(out), np.asarray(soft)


def _centre(lo: int, size: int, cut: int, extent: int) -> int:
    """A centre ``c`` in ``[0, extent)`` for which timm's ``rand_bbox`` gives the clipped span
    ``[lo, lo + size)`` for a cut of ``cut`` pixels (the smallest, when clipping at both ends
    leaves a choice)."""
    for c in range(extent):
        if (np.clip(c - cut // 2, 0, extent) == lo
                and np.clip(c + (cut + 1) // 2, 0, extent) == lo + size):
            return c
    raise AssertionError(f"no centre gives the span [{lo}, {lo + size}) for a cut of {cut}")


def _label_weight(params, correct, h=H, w=W):
    """The documented label weight: ``lam``, or ``1 - box area / image area`` for a cutmix
    sample with ``correct``; 1 where ``lam == 1``."""
    lam, cut, box = params["lam"], params["use_cutmix"], params["box"]
    weight = np.where(cut & correct, 1 - box[:, 2] * box[:, 3] / (h * w), lam)
    return np.where(lam != 1, weight, 1.0)


class _FakeRandom:
    """Answers timm's np.random calls with the op's sampled params, checking timm asks for the
    same distributions (argument ranges), finds a box consistent with them and uses every draw
    exactly once."""

    def __init__(self, params, cfg, mode, h, w):
        self.cfg, self.h, self.w = cfg, h, w
        n = len(params["lam"])
        idx = [0] if mode == "batch" else list(range(n // 2 if mode == "pair" else n))
        lam, cut, box = (params[k][idx] for k in ("lam", "use_cutmix", "box"))
        mixed = lam != 1
        coin = lambda on: np.where(on, 0.0, np.nextafter(1.0, 0.0))  # noqa: E731
        u_p, u_switch = coin(mixed), coin(cut)
        both = cfg["mixup_alpha"] > 0 and self.cut_alpha > 0
        if mode == "batch":  # timm draws the switch and one Beta only when the batch is mixed
            self.rands = [u_p[0]] + ([u_switch[0]] if both and mixed[0] else [])
            self.n_betas = int(mixed[0])
            size = None
        else:
            self.rands = ([u_switch] if both else []) + [u_p]
            self.n_betas = 2 if both else 1
            size = len(idx)
        # The Beta draws: lam (a cutmix_minmax sample's lam is its box's; its Beta is unused).
        minmax = cfg["cutmix_minmax"] is not None
        beta = np.where(cut & minmax, 0.5, np.where(mixed, lam, 0.5)).astype(np.float64)
        self.beta_value = beta[0] if size is None else beta
        self.ints = []
        for i in range(len(idx)):
            if not (mixed[i] and cut[i]):
                continue
            top, left, bh, bw = (int(v) for v in box[i])
            if not minmax:
                ratio = np.sqrt(1 - np.float64(lam[i]))
                cut_h, cut_w = int(h * ratio), int(w * ratio)
                self.ints += [("cy", _centre(top, bh, cut_h, h)),
                              ("cx", _centre(left, bw, cut_w, w))]
            else:
                self.ints += [("ch", bh), ("cw", bw), ("yl", top), ("xl", left)]
        self.ch = self.cw = None

    @property
    def cut_alpha(self):
        return 1.0 if self.cfg["cutmix_minmax"] is not None else self.cfg["cutmix_alpha"]

    def rand(self, *size):
        value = self.rands.pop(0)
        assert np.shape(value) == size
        return value

    def beta(self, a, b, size=None):
        assert a == b and a in (self.cut_alpha, self.cfg["mixup_alpha"]) and a > 0
        self.n_betas -= 1
        assert np.shape(self.beta_value) == (() if size is None else (size,))
        return self.beta_value

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
        return not self.rands and not self.ints and self.n_betas == 0


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


def _run_timm(monkeypatch, cfg, params, call):
    """Runs ``call()`` (timm code) with np.random answering from ``params``."""
    fake = _FakeRandom(params, cfg, cfg["mode"], H, W)
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


@pytest.mark.slow
@pytest.mark.parametrize("config, mode", CASES)
def test_matches_timm_mixup_given_the_same_draws(monkeypatch, config, mode):
    op_name, kw = config
    kw = dict(kw, mode=mode)
    cfg = _timm_cfg(op_name, kw)
    worst_img = worst_y = 0.0
    kinds = set()
    for seed in range(6):
        x = images(N, H, W, dtype=np.float32, seed=seed)
        labels = np.random.default_rng(seed).integers(0, K, N).astype(np.int32)
        params, out, soft = _run_op(op_name, kw, _keys(seed), x, labels)
        np.testing.assert_array_equal(params["perm"], np.arange(N)[::-1])
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
        ref_x, ref_y = _run_timm(monkeypatch, cfg, params,
                                 lambda: tm.Mixup(**cfg)(xt, torch.from_numpy(labels).long()))
        worst_img = max(worst_img, np.abs(out - ref_x.numpy().transpose(0, 2, 3, 1)).max())
        worst_y = max(worst_y, np.abs(soft - ref_y.numpy()).max())
        np.testing.assert_allclose(soft.sum(1), 1.0, atol=1e-6)
        kinds |= {("cut" if c else "mix") if m else "none"
                  for m, c in zip(params["lam"] != 1, params["use_cutmix"])}
    assert worst_img <= 1e-6 and worst_y <= 1e-6, (worst_img, worst_y)
    assert kinds - {"none"}  # the draws did exercise mixing
    if op_name == "mixup_cutmix":
        assert {"mix", "cut"} <= kinds


OP_CASES = CASES[2:5]  # one case of each op: mixup_cutmix, mixup, cutmix


@pytest.mark.fast_tier("config1-batch-float32")
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
@pytest.mark.parametrize("config, mode", OP_CASES)
def test_sample_then_apply_is_the_call_bitwise(config, mode, dtype):
    """op.apply(x, y, params=op.sample(x, key=k)) is op(x, y, key=k), bit for bit; the params
    are the documented fields, each with a leading axis N."""
    op_name, kw = config
    spec = getattr(augjax.ops, op_name)
    kw = dict(kw, mode=mode, num_classes=K)
    x = images(N, H, W, dtype=dtype, seed=9)
    labels = np.arange(N, dtype=np.int32) % K
    params = spec.sample(x, key=_keys(9), **kw)  # the labels are not needed to sample
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in params.items()}
    assert shapes == {"lam": ((N,), np.float32), "use_cutmix": ((N,), np.bool_),
                      "box": ((N, 4), np.int32), "perm": ((N,), np.int32)}
    out, soft = spec(x, labels, key=_keys(9), **kw)
    out2, soft2 = spec.apply(x, labels, params=params, **kw)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(out2))
    np.testing.assert_array_equal(np.asarray(soft), np.asarray(soft2))
    assert (np.asarray(out) != x).any()
    # Every lam set to 1: nothing is mixed (images as given, labels only softened).
    same, soft1 = spec.apply(x, labels, params=dict(params, lam=np.ones(N, np.float32)), **kw)
    np.testing.assert_array_equal(np.asarray(same), x)
    smoothing = kw["label_smoothing"]
    ref = tm.mixup_target(torch.from_numpy(labels).long(), K, 1.0, smoothing).numpy()
    np.testing.assert_array_equal(np.asarray(soft1), ref)


@pytest.mark.parametrize("mode", ["batch", "pair"])  # elem is pair's arithmetic, per sample
def test_uint8_matches_timm_fast_collate_mixup(monkeypatch, mode):
    kw = dict(CONFIGS[-1][1], mode=mode)
    cfg = dict(kw, num_classes=K)
    worst = 0
    for seed in range(4):
        x = images(N, H, W, dtype=np.uint8, seed=seed)
        labels = np.arange(N, dtype=np.int32) % K
        params, out, soft = _run_op("mixup_cutmix", kw, _keys(seed + 10), x, labels)
        batch = [(x[i].transpose(2, 0, 1).copy(), int(labels[i])) for i in range(N)]
        ref_x, ref_y = _run_timm(monkeypatch, cfg, params,
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


@pytest.mark.slow
def test_float_soft_labels_mix_by_lam():
    x = images(N, H, W, dtype=np.float32)
    dense = np.random.default_rng(0).dirichlet(np.ones(K), N).astype(np.float32)
    params, _, soft = _run_op("mixup_cutmix", dict(CONFIGS[-1][1], mode="elem"), _keys(1), x,
                              dense)
    lam = _label_weight(params, correct=True)[:, None]
    assert len(np.unique(lam)) > 2
    np.testing.assert_allclose(soft, lam * dense + (1 - lam) * dense[::-1], atol=1e-6)
    np.testing.assert_allclose(soft.sum(1), 1.0, atol=1e-6)


# -- exact parameters through apply ------------------------------------------------------------
def test_mixup_apply_with_an_exact_lambda_and_permutation():
    x = images(N, H, W, dtype=np.float32, seed=5)
    labels = np.arange(N, dtype=np.int32)
    lam = np.array([0.3, 1.0, 0.5, 0.0, 0.9, 0.25], np.float32)
    perm = np.array([2, 0, 1, 5, 3, 4], np.int32)  # any permutation, not only the reversal
    params = {"lam": lam, "perm": perm, "use_cutmix": np.zeros(N, bool),
              "box": np.zeros((N, 4), np.int32)}
    out, soft = augjax.ops.mixup.apply(x, labels, params=params, num_classes=N)
    lam4 = lam[:, None, None, None]
    np.testing.assert_allclose(np.asarray(out), lam4 * x + (1 - lam4) * x[perm], atol=1e-6)
    eye = np.eye(N, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(soft), lam[:, None] * eye + (1 - lam[:, None]) *
                               eye[perm], atol=1e-6)


@pytest.mark.parametrize("correct_lam", [True, False])
def test_cutmix_apply_with_exact_boxes(correct_lam):
    x = images(N, H, W, seed=6)
    labels = np.arange(N, dtype=np.int32)
    box = np.array([[0, 0, 4, 5], [3, 2, 10, 1], [0, 0, 0, 0], [1, 1, H - 1, W - 1],
                    [5, 5, 2, 2], [0, 0, H, W]], np.int32)
    lam = np.array([0.7, 0.2, 0.9, 1.0, 0.5, 0.1], np.float32)  # sample 3: lam 1, not mixed
    perm = np.arange(N, dtype=np.int32)[::-1].copy()
    params = {"lam": lam, "perm": perm, "use_cutmix": np.ones(N, bool), "box": box}
    out, soft = augjax.ops.cutmix.apply(x, labels, params=params, num_classes=N,
                                        correct_lam=correct_lam)
    ref = x.copy()
    for i, (t, l_, h, w) in enumerate(box):
        if lam[i] != 1:
            ref[i, t:t + h, l_:l_ + w] = x[perm[i], t:t + h, l_:l_ + w]
    np.testing.assert_array_equal(np.asarray(out), ref)
    weight = _label_weight(params, correct_lam)[:, None]
    eye = np.eye(N, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(soft), weight * eye + (1 - weight) * eye[perm],
                               atol=1e-6)
    assert weight[3] == 1.0 and (weight[5] == 0.0 if correct_lam else weight[5] == lam[5])


def test_mixup_apply_is_differentiable_in_the_images():
    x = jnp.asarray(images(N, H, W, dtype=np.float32, seed=7))
    labels = np.arange(N, dtype=np.int32) % K
    params = augjax.ops.mixup.sample(x, key=_keys(8), num_classes=K, mode="elem")
    grad = jax.grad(lambda v: augjax.ops.mixup.apply(v, labels, params=params, num_classes=K,
                                                     mode="elem")[0].sum())(x)
    # d(sum)/dx_i = (lam_i + 1 - lam_{N-1-i}) * 1 per pixel (x_i also feeds its partner)
    lam = np.asarray(params["lam"])
    want = (lam + 1 - lam[::-1])[:, None, None, None]
    np.testing.assert_allclose(np.asarray(grad), np.broadcast_to(want, x.shape), atol=1e-6)


# -- the draws' distributions ----------------------------------------------------------------
def _many(op_name, n, h=H, w=W, seed=0, **kw):
    params = getattr(augjax.ops, op_name).sample(np.zeros((n, h, w, 1), np.uint8),
                                                 key=jax.random.key(seed), num_classes=K, **kw)
    return jax.tree.map(np.asarray, params)


@pytest.mark.slow
def test_draws_follow_the_beta_the_probabilities_and_timms_box_correction():
    n, h, w = 20000, 24, 30
    params = _many("mixup_cutmix", n, h, w, mixup_alpha=0.4, cutmix_alpha=1.5, prob=0.7,
                   switch_prob=0.3, mode="elem")
    lam, cut, box = params["lam"], params["use_cutmix"], params["box"]
    mixed = lam != 1
    assert abs(mixed.mean() - 0.7) < 0.015
    assert abs(cut[mixed].mean() - 0.3) < 0.015
    assert not cut[~mixed].any()
    mix_lam = lam[mixed & ~cut]
    assert stats.kstest(mix_lam, stats.beta(0.4, 0.4).cdf).pvalue > 1e-3
    assert abs(mix_lam.var() - 1 / (4 * (2 * 0.4 + 1))) < 0.01  # Var Beta(a, a)
    assert stats.kstest(lam[cut], stats.beta(1.5, 1.5).cdf).pvalue > 1e-3
    # cutmix lam, corrected to the clipped box, against timm's own rand_bbox on its own draws
    np.random.seed(0)
    ref = np.array([tm.cutmix_bbox_and_lam((3, h, w), np.random.beta(1.5, 1.5))[1]
                    for _ in range(int(cut.sum()))])
    corrected = _label_weight(params, True, h, w)
    assert stats.ks_2samp(corrected[cut], ref).pvalue > 1e-3
    # the boxes are timm's rand_bbox boxes for their lam, centred uniformly over the pixels
    cut_h = (h * np.sqrt(1 - lam[cut].astype(np.float64))).astype(int)
    cut_w = (w * np.sqrt(1 - lam[cut].astype(np.float64))).astype(int)
    cy = [_centre(t, bh, c, h) for t, bh, c in zip(box[cut, 0], box[cut, 2], cut_h)]
    cx = [_centre(t, bw, c, w) for t, bw, c in zip(box[cut, 1], box[cut, 3], cut_w)]
    assert set(cy) == set(range(h)) and set(cx) == set(range(w))
    assert stats.chisquare(np.bincount(cy, minlength=h)).pvalue > 1e-3


def test_minmax_boxes_cover_timms_ranges():
    n = 6000
    mn, mx = 0.2, 0.8
    params = _many("cutmix", n, H, W, minmax=(mn, mx), p=1.0, mode="elem", correct_lam=False)
    top, left, ch, cw = params["box"].T
    assert set(np.unique(ch)) == set(range(int(H * mn), int(H * mx)))
    assert set(np.unique(cw)) == set(range(int(W * mn), int(W * mx)))
    assert (top >= 0).all() and (top + ch <= H).all() and (left + cw <= W).all()
    assert (top == 0).any() and (top + ch == H).any()
    np.testing.assert_allclose(params["lam"], 1 - ch * cw / (H * W), atol=1e-6)
    assert params["use_cutmix"].all()


ODD = 9  # an odd batch: the middle sample is its own partner
MIXCUT = dict(mixup_alpha=0.4, cutmix_alpha=1.0, num_classes=ODD, label_smoothing=0.0)


@pytest.mark.fast_tier("batch")
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
@pytest.mark.slow
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


@pytest.mark.fast_tier("config1-batch")
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


@pytest.mark.slow
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


def _jitted_loggamma():
    """``loggamma`` compiled, as the ops run it (eagerly, each of its primitives dispatched and
    compiled alone, it took ~3x the CPU time; same values bitwise)."""
    from augjax.kernels.gamma import loggamma

    return jax.jit(loggamma)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [0.05, 0.3, 1.0, 2.5, 40.0])
def test_loop_free_loggamma_follows_the_gamma_distribution(shape):
    loggamma = _jitted_loggamma()
    log_g = np.asarray(loggamma(jax.random.key(11), jnp.full((20_000,), shape)), np.float64)
    assert np.isfinite(log_g).all()
    # Compare in log space: tiny shapes put most of the mass below float32's smallest normal.
    def cdf(t):
        return stats.gamma(shape).cdf(np.exp(t))
    assert stats.kstest(log_g, cdf).pvalue > 1e-3


@pytest.mark.slow
def test_loop_free_loggamma_handles_the_extreme_alphas():
    from augjax.catalog.mix import ALPHA_MAX, ALPHA_MIN, symmetric_betas

    log_g = np.asarray(_jitted_loggamma()(jax.random.key(0),
                                          jnp.array([ALPHA_MIN, ALPHA_MAX] * 50)))
    assert np.isfinite(log_g).all()
    betas = jax.jit(symmetric_betas, static_argnums=(1, 2))
    draws = np.asarray(betas(jax.random.key(1), (ALPHA_MIN, ALPHA_MAX), (500,)))
    assert set(np.unique(draws[0])) <= {0.0, 1.0} and 0.3 < draws[0].mean() < 0.7
    np.testing.assert_array_equal(draws[1], 0.5)


@pytest.mark.fast_tier("mixup", "cutmix")
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
