"""Alignment: through every op and chain, sample ``i`` of the output comes from sample
``i`` of the input, and its label is that sample's (or a blend of it and its partner's).

- Sample-level ops (every registered op, generically): ``out[i]`` depends on ``x[i]`` and
  ``key[i]`` only: samples moved to other positions with their keys, the rest of the batch
  replaced, give bitwise the same outputs (one compiled program; chains also check
  ``out[i] == chain(x[i:i+1], key=k[i:i+1])``).
- Mixing ops (every op taking labels): images that encode their sample (a random constant
  colour per sample, a unique label per sample); the soft label of sample ``i`` must be
  supported by ``{i, partner}``, and image ``i`` must be, pixel by pixel, on the segment between
  colour ``i`` and the partner's colour, with the weight the label gives (exactly, for constant
  colours: mixup blends every pixel with ``lam``, cutmix pastes ``1 - lam`` of the area).
- Chains (``augjax.compose``): the same properties for a chain of sample ops, for composites
  (``random_apply``, ``random_choice``, ``some_of``) and a policy (``rand_augment``), a chain
  ending in a mixing op (checked against the chain's prefix, which keeps its keys), a chain starting with
  one (locality: sample ``i`` depends only on samples ``i`` and its partner), and in a DALI
  pipeline where images and labels cross as separate inputs.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _reliability import (
    call,
    channels_for,
    is_mixing,
    keys,
    lively_params,
    op_names,
    random_images,
    sample_case,
    spec_or_skip,
)
from tiers import op_sweep

import augjax
from augjax._runtime.execution.padding import no_padding

SAMPLE_OPS = op_names(lambda s: s.level == "sample")
MIXING_OPS = op_names(is_mixing)
BATCH_OTHER = op_names(lambda s: s.level == "batch" and not is_mixing(s))


def _compose():
    fn = getattr(augjax, "compose", None)
    if fn is None:
        try:
            from augjax.chain import compose as fn
        except ImportError:
            pytest.skip("augjax.compose does not exist yet")
    return fn


def assert_moved_samples_keep_their_outputs(fn, x, k, out, name):
    """Position ``j`` of a second batch holds sample ``perm[j]`` of ``x`` (with its key) for the
    first half; the rest are new images with new keys. The moved samples' outputs must be
    bitwise those of the first call: ``out[i]`` depends on ``x[i]`` and ``k[i]`` only."""
    n = len(x)
    perm = np.random.default_rng(n).permutation(n)
    y = random_images(n, x.shape[1], x.shape[2], x.shape[3], x.dtype, seed=3)
    kept = np.arange(n) < (n + 1) // 2
    y[kept] = x[perm[kept]]
    both = jax.numpy.concatenate([k, keys(n, seed=4)])
    out2 = np.asarray(fn(y, both[np.where(kept, perm, n + np.arange(n))]))
    for j in np.flatnonzero(kept):
        np.testing.assert_array_equal(out2[j], out[perm[j]],
                                      err_msg=f"{name}: sample {perm[j]} moved to {j}")


# -- sample-level ops ------------------------------------------------------------------------
@pytest.mark.parametrize("name", op_sweep(SAMPLE_OPS))
def test_sample_op_output_i_is_op_of_input_i(name):
    """``out[i]`` depends on ``x[i]`` and ``key[i]`` only, whatever the position and the other
    samples (checked without recompiling: the same batch shape, permuted and partly replaced;
    batches of one are covered by test_hostile)."""
    spec = spec_or_skip(name)
    params, x, k, out = sample_case(name)
    if out is None:
        pytest.fail(f"{name}: every output is the same for distinct inputs; alignment cannot be "
                    f"checked (params: {params})")
    assert out.shape[0] == len(x)
    assert_moved_samples_keep_their_outputs(
        lambda y, ky: call(spec, y, key=ky, **params)[0], x, k, out, name)


# -- mixing ops ------------------------------------------------------------------------------
def _weights(row: np.ndarray) -> dict[int, float]:
    """The classes a soft label row is made of, with their weights (the smoothing floor, the
    smallest entry, removed; the rows here always have a class that no sample uses)."""
    w = row - row.min()
    total = w.sum()
    assert total > 0, f"soft label without a class: {row}"
    w = w / total
    return {int(c): float(w[c]) for c in np.flatnonzero(w > 1e-5)}


def _segment_t(out, a, b, dtype):
    """Per pixel, the weight ``t`` with ``out ~ t * a + (1 - t) * b`` (least squares over the
    channels), the residual, and the squared distance |a - b|^2."""
    out, a, b = (v.astype(np.float64) for v in (out, a, b))
    d = a - b
    d2 = (d * d).sum(-1)
    t = np.where(d2 > 0, ((out - b) * d).sum(-1) / np.where(d2 > 0, d2, 1), 1.0)
    resid = np.abs(out - (b + t[..., None] * d)).max(-1)
    return t, resid, d2


def check_mixed(pre, out, soft, labels, *, dtype, exact_lam: bool, lam_is_area: bool,
                name: str):
    """Checks mixed images and soft labels against the images they were mixed from.

    ``pre``: the images before mixing (HWC); ``labels``: the class of each sample (unique);
    ``soft``: the soft labels out. For each sample the label support is ``{label i}`` (then the
    image is unchanged) or ``{label i, label p}`` for one partner ``p`` (then every pixel lies on
    the segment between sample ``i``'s and sample ``p``'s pixel and, where checked, the pixel
    weights agree with the label weight).
    """
    tol = 1.0 if np.dtype(dtype) == np.uint8 else 1e-5
    cls_to_sample = {int(c): s for s, c in enumerate(labels)}
    np.testing.assert_allclose(soft.sum(-1), 1.0, atol=1e-5, err_msg=f"{name}: rows sum to 1")
    partners = []
    for i in range(len(pre)):
        w = _weights(soft[i])
        support = set(w)
        mine = int(labels[i])
        others = support - {mine}
        assert len(others) <= 1, f"{name}: sample {i} label mixes {sorted(support)}"
        if not others:
            np.testing.assert_array_equal(out[i], pre[i], err_msg=f"{name}: unmixed sample {i}")
            partners.append(i)
            continue
        p = cls_to_sample[others.pop()]
        partners.append(p)
        lam = w.get(mine, 0.0)
        t, resid, d2 = _segment_t(out[i], pre[i], pre[p], dtype)
        assert resid.max() <= tol + 1e-6, f"{name}: sample {i} is not a blend of {i} and {p}"
        assert t.min() >= -0.02 and t.max() <= 1.02, f"{name}: sample {i} outside [{i}, {p}]"
        if lam_is_area:
            lam_img = float((t * d2).sum() / d2.sum())
            lam_tol = (tol / np.sqrt(d2.min()) + 1e-3) if exact_lam else 0.15
            assert abs(lam_img - lam) <= lam_tol, (name, i, lam_img, lam)
    return partners


def _mix_config(spec, variant: int) -> dict:
    """Lively params; variant 1 uses the second choice of each choice param (e.g. mode)."""
    params = lively_params(spec, num_classes=8)
    if variant:
        for pname, p in spec.params.items():
            if p.kind == "str" and p.choices and len(p.choices) > 1:
                params[pname] = p.choices[1 % len(p.choices)] if p.default == p.choices[0] \
                    else p.choices[0]
    return params


# Each mixing op compiles slowly (Beta sampling): one configuration per op, alternating between
# uint8 images with int labels in an even batch and float32 images with soft labels in an odd
# batch (whose middle sample is its own partner), the choice params moved off their default.
MIX_CASES = [(name, i % 2) for i, name in enumerate(MIXING_OPS)]


@pytest.mark.fast_tier("cutmix-uint8-int")
@pytest.mark.parametrize("name, variant", MIX_CASES,
                         ids=[f"{n}-{'uint8-int' if v == 0 else 'float32-soft'}"
                              for n, v in MIX_CASES])
def test_mixing_op_labels_and_images_stay_with_their_sample(name, variant):
    spec = spec_or_skip(name)
    n, k_classes = (6, 8) if variant == 0 else (5, 8)  # 5: odd batch, a middle sample
    dtype = np.uint8 if variant == 0 else np.float32
    params = _mix_config(spec, variant)
    rng = np.random.default_rng(10 + variant)
    colours = rng.permutation(np.linspace(0.05, 0.95, n))[:, None] * np.ones(3)
    colours = np.clip(colours + rng.uniform(-0.05, 0.05, (n, 3)), 0, 1)
    x = np.broadcast_to(colours[:, None, None, :], (n, 16, 20, 3))
    x = (np.round(x * 255).astype(np.uint8) if dtype == np.uint8 else x.astype(np.float32))
    labels = rng.permutation(k_classes)[:n].astype(np.int32)  # unique, not the index
    lab_in = labels if variant == 0 else np.eye(k_classes, dtype=np.float32)[labels]
    out, soft = call(spec, x, lab_in, key=jax.random.key(3 + variant), **params)
    out, soft = np.asarray(out), np.asarray(soft)
    assert soft.shape == (n, k_classes) and out.shape == x.shape
    lam_is_area = params.get("correct_lam", True) is not False
    partners = check_mixed(x, out, soft, labels, dtype=dtype, exact_lam=True,
                           lam_is_area=lam_is_area, name=name)
    assert any(p != i for i, p in enumerate(partners)), f"{name}: nothing was mixed"


@pytest.mark.parametrize("name", BATCH_OTHER or ["<none>"])
def test_batch_level_ops_without_labels_keep_the_batch(name):
    if name == "<none>":
        pytest.skip("no batch-level op without labels is registered")
    spec = spec_or_skip(name)
    params = lively_params(spec)
    x = random_images(4, 16, 20, channels_for(spec), np.uint8, seed=4)
    out, _ = call(spec, x, key=jax.random.key(0), **params)
    assert np.asarray(out).shape[0] == 4


# -- chains ----------------------------------------------------------------------------------
def _pick_sample_ops(count: int, *, seed: int) -> list:
    """A deterministic pick of shape- and dtype-preserving sample ops that take uint8 RGB HWC,
    bound with lively params."""
    fit = []
    for name in SAMPLE_OPS:
        spec = augjax_op(name)
        if spec is None or spec.output_size is not None or spec.output_dtype is not None:
            continue
        if any(p.required for p in spec.params.values()):
            continue
        if spec.output_layout is not None or "uint8" not in spec.dtypes:
            continue
        if spec.channels is not None and 3 not in spec.channels:
            continue
        fit.append(spec.bind(**lively_params(spec, hw=(16, 20))))
    rng = np.random.default_rng(seed)
    idx = sorted(rng.choice(len(fit), size=min(count, len(fit)), replace=False))
    return [fit[i] for i in idx]


def augjax_op(name):
    from _reliability import OPS

    return OPS[name][0]


def _mixer():
    """The mixing op with the fewest params (the cheapest to compile), configured."""
    specs = [augjax_op(n) for n in MIXING_OPS if augjax_op(n) is not None]
    if not specs:
        pytest.skip("no mixing op loads")
    spec = min(specs, key=lambda s: len(s.params))
    return spec, spec.bind(**_mix_config(spec, 1))


@pytest.mark.slow
def test_chain_of_sample_ops_keeps_samples_aligned():
    compose = _compose()
    steps = _pick_sample_ops(6, seed=0)
    chain = compose(*steps)
    n = 5
    x = random_images(n, 20, 24, 3, np.uint8, seed=5)
    k = keys(n, seed=6)
    out = np.asarray(chain(x, key=k))
    with no_padding():  # a batch of one compiled as such, not padded to the batch of 5
        for i in range(n):
            np.testing.assert_array_equal(out[i],
                                          np.asarray(chain(x[i:i + 1], key=k[i:i + 1]))[0])
    perm = np.array([4, 2, 0, 3, 1])
    np.testing.assert_array_equal(np.asarray(chain(x[perm], key=k[perm])), out[perm])


@pytest.mark.slow
def test_composites_and_a_policy_keep_samples_aligned():
    compose = _compose()
    a, b, c, d = _pick_sample_ops(4, seed=4)
    chain = compose(augjax.random_apply(a, p=0.5), augjax.random_choice([b, c]),
                    augjax.some_of([a, c, d], n=(1, 2)), augjax.rand_augment())
    n = 6
    x = random_images(n, 20, 20, 3, np.uint8, seed=13)
    k = keys(n, seed=14)
    out = np.asarray(chain(x, key=k))
    assert len({row.tobytes() for row in out.reshape(n, -1)}) == n
    assert_moved_samples_keep_their_outputs(lambda y, ky: chain(y, key=ky), x, k, out,
                                            "composites + rand_augment")


@pytest.mark.slow
def test_chain_starting_with_a_mixing_op_is_local_to_sample_and_partner():
    compose = _compose()
    _, mixer = _mixer()
    chain = compose(mixer, *_pick_sample_ops(2, seed=2))
    n = 6
    x = random_images(n, 16, 20, 3, np.uint8, seed=9)
    labels = np.array([3, 1, 4, 0, 5, 2], np.int32)
    k = keys(n, seed=10)
    out, soft = (np.asarray(a) for a in chain(x, labels, key=k))
    for i in range(n):
        support = set(_weights(soft[i]))
        assert labels[i] in support or len(support) == 1
        members = {i} | {int(np.flatnonzero(labels == c)[0]) for c in support}
        assert len(members) <= 2, (i, support)
        # Replace every other sample: sample i's output and label must not change.
        y = random_images(n, 16, 20, 3, np.uint8, seed=100 + i)
        y[list(members)] = x[list(members)]
        other_labels = labels.copy()
        out_y, soft_y = (np.asarray(a) for a in chain(y, other_labels, key=k))
        np.testing.assert_array_equal(out_y[i], out[i], err_msg=f"sample {i}")
        np.testing.assert_array_equal(soft_y[i], soft[i], err_msg=f"label {i}")


@pytest.mark.slow
def test_dali_chain_ending_in_a_mixing_op_keeps_images_and_labels_aligned():
    """Images and labels cross into DALI's jax_function as separate inputs; the soft label and
    the blend of each sample must still match (the chain's prefix, run on arrays with the same
    seeds, gives the images before mixing: a slice keeps its ops' keys)."""
    from helpers import run_dali, seeds

    compose = _compose()
    spec, mixer = _mixer()
    chain = compose(*_pick_sample_ops(3, seed=3), mixer)
    n = 6
    x = random_images(n, 16, 20, 3, np.uint8, seed=11)
    labels = np.array([[2], [7], [0], [4], [1], [6]], np.int32)
    s = seeds(n, seed=12)
    (img, soft), = run_dali(lambda a, b, c: chain(a, b, seeds=c), x, labels, s,
                            layouts=["HWC", None, None])
    k = augjax.keys_from_seeds(s)
    pre = np.asarray(chain[:-1](x, key=k))
    check_mixed(pre, img, soft, labels[:, 0], dtype=np.uint8, exact_lam=False,
                lam_is_area=mixer.kwargs.get("correct_lam", True) is not False,
                name=f"DALI compose(..., {spec.name})")
