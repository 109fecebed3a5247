"""A policy layer computed by families (one warp, one blend, one level map per layer) gives the
pixels of the per-op switch, which runs each op's own kernel: bitwise, for every entry of every
policy style, uint8 and float32, and with a pack op outside every family."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import images

import augjax
from augjax.policies import _engine
from augjax.policies._families import plan_layer

POLICIES = {
    "ra-torchvision": lambda: augjax.rand_augment(n=2, m=9),
    "ra-dali": lambda: augjax.rand_augment(n=2, m=9, style="dali"),
    "ra-dali-nonmonotonic": lambda: augjax.rand_augment(n=2, m=9, style="dali", increasing=False),
    "ra-timm": lambda: augjax.rand_augment(n=2, m=9, mstd=0.5, style="timm"),
    "ra-timm-inc": lambda: augjax.rand_augment(n=2, m=9, style="timm", increasing=True),
    "ta-torchvision": lambda: augjax.trivial_augment_wide(),
    "ta-dali": lambda: augjax.trivial_augment_wide(style="dali"),
    "aa-imagenet": lambda: augjax.auto_augment("imagenet"),
    "aa-svhn": lambda: augjax.auto_augment("svhn"),
    "aa-v0": lambda: augjax.auto_augment("v0"),
    "aa-original": lambda: augjax.auto_augment("original", mstd=0.5),
    "augmix-torchvision": lambda: augjax.augmix(width=2, depth=2),
    "augmix-timm": lambda: augjax.augmix(width=2, depth=2, style="timm"),
    "ra-pack-op": lambda: augjax.rand_augment(n=2, m=15, ops=["Identity", "Rotate", "Color",
                                                            "Equalize", "gaussian_blur"]),
    "ra-mixed-conventions": lambda: augjax.rand_augment(
        n=1, m=20, style="timm", ops=["Rotate", "ShearX", "rotate", "translate_y", "Contrast"]),
}


def _batch(dtype, n=8, h=20, w=20, seed=3):
    """Random images with per-sample level ranges (autocontrast, equalize see narrow, wide and
    constant channels)."""
    x = images(n, h, w, dtype=np.float32, seed=seed)
    rng = np.random.default_rng(seed)
    lo = rng.uniform(0.0, 0.6, (n, 1, 1, 3))
    span = rng.uniform(0.0, 0.4, (n, 1, 1, 3))
    span[0, 0, 0, 1] = 0.0  # one constant channel
    x = (lo + span * x).astype(np.float32)
    if np.dtype(dtype) == np.uint8:
        return np.floor(x * 255.0).astype(np.uint8)
    return x


def _run(policy, x, params, fused, monkeypatch):
    monkeypatch.setattr(_engine, "FUSED", fused)
    return np.asarray(jax.jit(jax.vmap(policy.run))(x, params))  # traced now: reads FUSED


def _forced(params, j):
    """Every sample's every layer: entry ``j``, applied."""
    out = dict(params)
    out["op"] = np.full_like(np.asarray(params["op"]), j)
    out["applied"] = np.ones_like(np.asarray(params["applied"]))
    return out


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("name", list(POLICIES))
def test_every_entry_equals_the_switch(name, dtype, monkeypatch):
    policy = POLICIES[name]()
    x = _batch(dtype)
    params = policy.sample(x, key=jax.random.key(5))
    for j, entry in enumerate(policy.space):
        forced = _forced(params, j)
        np.testing.assert_array_equal(
            _run(policy, x, forced, True, monkeypatch),
            _run(policy, x, forced, False, monkeypatch), err_msg=f"{name}: {entry.name}")


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("name", ["ra-torchvision", "ra-timm", "aa-imagenet", "augmix-timm",
                                  "ra-pack-op"])
def test_drawn_plans_equal_the_switch(name, dtype, monkeypatch):
    """Per-sample choices mixed in one batch (the public apply against the switch)."""
    policy = POLICIES[name]()
    x = _batch(dtype, n=16, seed=9)
    params = policy.sample(x, key=jax.random.key(11))
    assert len(np.unique(np.asarray(params["op"]))) > 3
    fused = np.asarray(policy.apply(x, params=params))
    np.testing.assert_array_equal(fused, _run(policy, x, params, False, monkeypatch))
    np.testing.assert_array_equal(fused, np.asarray(policy(x, key=jax.random.key(11))))


def test_grouping_of_the_op_spaces():
    """The torchvision space: five warps as one group, the enhance ops as one blend (float32)
    or brightness and contrast as level maps (uint8), the tone ops as one level map; a pack op
    and the identity outside every family."""
    policy = POLICIES["ra-torchvision"]()
    names = policy.op_names
    for integer in (True, False):
        groups, rest = plan_layer(policy.bound, integer)
        by_family = {key[0]: {names[j] for j, _ in items} for key, items in groups}
        assert by_family["affine"] == {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}
        tone = {"Posterize", "Solarize", "AutoContrast", "Equalize"}
        blend = {"Brightness", "Color", "Contrast", "Sharpness"}
        moved = {"Brightness", "Contrast"} if integer else set()
        assert by_family["tone"] == tone | moved
        assert by_family["blend"] == blend - moved
        assert rest == ()
    pack = POLICIES["ra-pack-op"]()
    groups, rest = plan_layer(pack.bound, True)
    assert [pack.op_names[j] for j in rest] == ["gaussian_blur"]
    mixed = POLICIES["ra-mixed-conventions"]()
    groups, _ = plan_layer(mixed.bound, True)
    conventions = sorted(key[1] for key, _ in groups if key[0] == "affine")
    assert conventions == ["pil", "torchvision"]  # one warp per sampling convention


def test_a_layer_compiles_one_warp_per_convention():
    """The cost follows the families, not the space: the 14-op space has as many gathers of a
    warp as the 3-op space with one warp (counted in the jaxpr of one layer)."""
    x = _batch(np.uint8, n=2)

    def gathers(policy):
        params = policy.sample(x, key=jax.random.key(0))
        jaxpr = jax.make_jaxpr(jax.vmap(policy.run))(x, params)
        return str(jaxpr).count("gather[")

    full = gathers(augjax.rand_augment(n=1, m=9))
    small = gathers(augjax.rand_augment(n=1, m=9, ops=["Identity", "Rotate", "Equalize"]))
    assert full <= small + 4  # the per-entry parameter picks, not per-entry warps
