"""A policy layer on compacted sub-batches (the GPU path: each costly family computed only for
the samples that chose it) gives the pixels of the layer computed family by family over the
whole batch, which ``test_policy_families.py`` checks against each op alone: the same pixels
whether the batch's counts fit the capacities or overflow them (the whole-batch fallback)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from test_policy_families import (
    POLICIES,
    _alone,
    _assert_same,
    _batch,
    _fused_chains,
    _slice,
)

import augjax
from augjax.policies import _compact, _engine
from augjax.policies._families import plan_layer

#: A batch large enough that the capacities are below it (so the layer really compacts).
BATCH = 128


def _compacting(policy, batch):
    """The capacities of the policy's layer at ``batch`` that are below the batch."""
    caps, stat_caps = _compact._plan(tuple(policy.bound), True, _shares(policy), batch)
    return [k for k in caps if 0 < k < batch] + [
        k for st in stat_caps for k in st.values() if 0 < k < batch]


def _shares(policy):
    """The policy's declared shares, or the uniform ones a layer assumes without them."""
    shares = getattr(policy, "shares", None)
    return shares if shares is not None else (1.0 / len(policy.bound),) * len(policy.bound)


def _by_mode(policy, name, x, params, mode, monkeypatch):
    monkeypatch.setattr(_engine, "LAYER", mode)
    return {chain: fused(x, params) for chain, fused in _fused_chains(policy, name).items()}


#: (policy, dtype) pairs: every policy in uint8; float32 on the two policies whose entries
#: hold every family of the others (ra-timm: ra-torchvision's and ta-torchvision's ops with
#: Invert and SolarizeAdd, a superset of aa-imagenet's; augmix-timm: its chains and Increasing
#: ops). Compaction gathers and scatters samples whatever their dtype; each entry's float32
#: kernel against the op alone is test_policy_families.py's, for every policy. (Suite time:
#: float32 on ra-torchvision, aa-imagenet, ta-torchvision and ra-pack-op, whose 5 entries
#: leave nothing to compact, repeated these code paths: 4 pairs of programs, ~12 s.)
COMPACT_CASES = [*((name, np.uint8) for name in (
    "ra-torchvision", "ra-timm", "aa-imagenet", "ta-torchvision", "augmix-timm", "ra-pack-op")),
                 ("ra-timm", np.float32), ("augmix-timm", np.float32)]


@pytest.mark.slow
@pytest.mark.parametrize("name, dtype", COMPACT_CASES,
                         ids=[f"{n}-{np.dtype(d).name}" for n, d in COMPACT_CASES])
def test_compacted_layers_equal_the_whole_batch_layers(name, dtype, monkeypatch):
    policy = POLICIES[name]()
    if name != "ra-pack-op":  # 5 entries, each a fifth of the batch: nothing to compact
        assert _compacting(policy, BATCH), "the capacities should be below the batch"
    x = _batch(dtype, n=BATCH, h=12, w=16, seed=21)
    params = policy.sample(x, key=jax.random.key(8))
    whole = _by_mode(policy, name, x, params, "families", monkeypatch)
    compact = _by_mode(policy, name, x, params, "compact", monkeypatch)
    for chain in whole:
        if dtype == np.uint8:
            np.testing.assert_array_equal(compact[chain], whole[chain], err_msg=name)
        else:
            _assert_same(compact[chain], whole[chain], name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ra-torchvision", "aa-imagenet"])
def test_an_overflowing_batch_takes_the_whole_batch_path(name, monkeypatch):
    """Capacities far below the counts: every layer falls back, with the same pixels; and
    with every sample forced to one entry (each family's count is the batch or zero)."""
    monkeypatch.setattr(_engine, "LAYER", "compact")
    monkeypatch.setattr(_compact, "SIGMAS", -3.0)
    _compact._plan.cache_clear()
    try:
        policy = POLICIES[name]()
        x = _batch(np.uint8, n=64, seed=5)
        params = policy.sample(x, key=jax.random.key(3))
        fused = _fused_chains(policy, name)[None]
        _assert_same(fused(x, params), _alone_by_8(policy, x, params), name)
    finally:
        _compact._plan.cache_clear()
    monkeypatch.setattr(_compact, "SIGMAS", 4.0)
    forced = dict(params)
    rotate = policy.op_names.index("Rotate")
    forced["op"] = np.full_like(np.asarray(params["op"]), rotate)
    forced["applied"] = np.ones_like(np.asarray(params["applied"]))
    _assert_same(fused(x, forced), _alone_by_8(policy, x, forced), f"{name}: all Rotate")


def _alone_by_8(policy, x, params):
    """``_alone`` over batches of 8 samples (each op computes each sample alone): the programs
    of each op alone on test_policy_families' batch (its shape), not another program per op
    for the batch of 64."""
    return np.concatenate([_alone(policy, x[i:i + 8], _slice(params, slice(i, i + 8)))
                           for i in range(0, len(x), 8)])


def _binomial_tail(n: int, p: float, k: int) -> float:
    """P(Binomial(n, p) > k)."""
    return sum(math.comb(n, i) * p**i * (1 - p)**(n - i) for i in range(k + 1, n + 1))


@pytest.mark.parametrize("batch", [32, 64, 256, 1024])
def test_capacity_makes_the_fallback_rare(batch):
    for share in (0.0, 0.02, 1 / 14, 0.2, 5 / 14, 0.5, 0.9, 1.0):
        k = _compact.capacity(batch, share)
        assert k <= batch and (k % 8 == 0 or k == batch)
        assert _binomial_tail(batch, share, k) < 1e-4, (batch, share, k)


def test_the_policies_declare_their_shares():
    """RandAugment: uniform times p; AutoAugment: each entry's largest per-slot probability
    over the sub-policies (its table)."""
    ra = augjax.rand_augment(n=2, m=9, style="timm")
    assert ra.shares == pytest.approx((0.5 / len(ra.entries),) * len(ra.entries))
    aa = augjax.auto_augment("imagenet")
    subs = aa.subpolicies
    expected = []
    for name in aa.op_names:
        expected.append(max(sum(p for op, p, _ in (s[slot] for s in subs if len(s) > slot)
                                if op == name) / len(subs) for slot in range(2)))
    assert aa.shares == pytest.approx(tuple(expected))


@pytest.mark.fast_tier("ra-p")
@pytest.mark.parametrize("policy", [
    augjax.rand_augment(n=3, m=9, style="timm", ops={"Rotate": 20.0, "Equalize": 1.0,
                                                     "Invert": 1.0, "Posterize": 4.0}),
    augjax.auto_augment("v0"),
    augjax.rand_augment(n=2, m=9, p=0.7),
], ids=["ra-weighted", "aa-v0", "ra-p"])
def test_the_shares_bound_every_layers_frequencies(policy):
    """Drawn plans: each entry's frequency of being chosen and applied at every layer stays
    under its declared share (a binomial margin of 4 sd over 4000 samples)."""
    n = 4000
    params = policy.sample(np.zeros((n, 4, 4, 3), np.uint8), key=jax.random.key(7))
    op, applied = np.asarray(params["op"]), np.asarray(params["applied"])
    for j, share in enumerate(policy.shares):
        for layer in range(op.shape[1]):
            freq = np.mean((op[:, layer] == j) & applied[:, layer])
            margin = 4 * math.sqrt(max(share * (1 - share), 1e-4) / n)
            assert freq <= share + margin, (policy.op_names[j], layer, freq, share)


def test_a_layer_compacts_only_the_costly_families():
    """The 14-op space at B=256 gathers the blend's samples (a seventh of the batch) and the
    statistics' readers; the warp (five ops of 14, over a third of the batch) and the tone
    family's lookup stay passes over the whole batch."""
    policy = augjax.rand_augment(n=2, m=9)
    groups, _ = plan_layer(policy.bound, True)
    caps, stat_caps = _compact._plan(tuple(policy.bound), True, _shares(policy), 256)
    kinds = {key[0]: (k, st) for (key, _), k, st in zip(groups, caps, stat_caps)}
    assert kinds["tone"][0] == 0
    assert set(kinds["tone"][1]) == {"equalize", "range", "gray_mean"}
    assert kinds["affine"][0] == 0 and 0 < kinds["blend"][0] <= 0.3 * 256
