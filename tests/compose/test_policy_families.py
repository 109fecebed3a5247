"""A policy layer computed by families (one warp, one blend, one level map per layer) gives the
pixels of the per-op switch, which runs each op's own kernel: bitwise, for every entry of every
policy style, uint8 and float32, and with a pack op outside every family."""

from __future__ import annotations

import jax
import jax.extend.core
import numpy as np
import pytest
from helpers import images

import augjax
from augjax.policies import _engine
from augjax.policies._families import plan_layer

POLICIES = {
    "ra-torchvision": lambda: augjax.rand_augment(n=2, m=9),
    "ra-dali": lambda: augjax.rand_augment(n=2, m=9, style="dali"),
    "ra-timm": lambda: augjax.rand_augment(n=2, m=9, mstd=0.5, style="timm"),
    "ta-torchvision": lambda: augjax.trivial_augment_wide(),
    "ta-dali": lambda: augjax.trivial_augment_wide(style="dali"),
    "aa-imagenet": lambda: augjax.auto_augment("imagenet"),
    "aa-v0": lambda: augjax.auto_augment("v0"),
    "aa-original": lambda: augjax.auto_augment("original", mstd=0.5),
    "augmix-torchvision": lambda: augjax.augmix(width=2, depth=2),
    "augmix-timm": lambda: augjax.augmix(width=2, depth=2, style="timm"),
    "ra-pack-op": lambda: augjax.rand_augment(n=2, m=15, ops=["Identity", "Rotate", "Color",
                                                            "Equalize", "gaussian_blur"]),
    "ra-mixed-conventions": lambda: augjax.rand_augment(
        n=1, m=20, style="timm", ops=["Rotate", "ShearX", "rotate", "translate_y", "Contrast"]),
}


def _batch(dtype, n=8, h=20, w=24, seed=3):
    """Random images with per-sample level ranges (autocontrast, equalize see narrow, wide and
    constant channels). The default shape is the one test_layer_kernel.py's kernels take (a
    whole number of 32-pixel rows), so that both modules' programs of each op alone are the
    same programs (compiled once, then read from the session's caches)."""
    x = images(n, h, w, dtype=np.float32, seed=seed)
    rng = np.random.default_rng(seed)
    lo = rng.uniform(0.0, 0.6, (n, 1, 1, 3))
    span = rng.uniform(0.0, 0.4, (n, 1, 1, 3))
    span[0, 0, 0, 1] = 0.0  # one constant channel
    x = (lo + span * x).astype(np.float32)
    if np.dtype(dtype) == np.uint8:
        return np.floor(x * 255.0).astype(np.uint8)
    return x


def _host(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


def _slice(tree, *index):
    return jax.tree_util.tree_map(lambda v: np.asarray(v)[index], tree)


def _layers(policy, params, chain):
    """``(op, applied, branches)`` with axes (sample, layer): AugMix's chain ``chain``."""
    op, applied, branches = params["op"], params["applied"], params["branches"]
    if chain is None:
        return np.asarray(op), np.asarray(applied), branches
    return (np.asarray(op)[:, chain], np.asarray(applied)[:, chain],
            _slice(branches, slice(None), chain))


def _fused(policy, chain=None, layers=None):
    """The policy's layers as the policy runs them, as one jitted function ``(x, params) ->
    pixels`` (traced at its first call, so that the layer mode set by the test applies): its
    ``run``, or AugMix's chain ``chain`` through the layer runner AugMix calls. A test makes it
    once and calls it for every forced entry: the params keep their shapes and dtypes, so one
    program serves them all (the entry is data, as in the policy's own program). AugMix's
    chains have the same shapes: pass the first chain's ``.layers`` for the others (one
    program for every chain). The params are given as NumPy arrays whatever they came as
    (drawn: on the device; forced: in NumPy): an argument's placement is part of a compiled
    program's signature, so mixed ones compiled the same program again."""
    if chain is None:
        run = jax.jit(jax.vmap(policy.run))
        return lambda x, params: np.asarray(run(x, _host(params)))
    if layers is None:
        layers = jax.jit(jax.vmap(lambda im, o, a, b: _engine.run_layers(
            policy.space, policy.bound, o, a, b, im, policy.kind)))

    def fused(x, params):
        op, applied, branches = _layers(policy, params, chain)
        return np.asarray(layers(x, op, applied, _host(branches)))

    fused.layers = layers
    return fused


def _fused_chains(policy, name):
    """``{chain: _fused(policy, chain)}`` for the policy's chains, sharing one program."""
    out, layers = {}, None
    for chain in _chains(name):
        out[chain] = _fused(policy, chain, layers)
        layers = getattr(out[chain], "layers", None)
    return out


def _alone(policy, x, params, chain=None):
    """Per sample, the chosen single ops applied alone in sequence with the branch params
    (each op's public ``apply`` on the batch, rows picked)."""
    op, applied, branches = _layers(policy, params, chain)
    ref = np.asarray(x)
    for layer in range(op.shape[1]):
        new = ref.copy()
        for j, bound in enumerate(policy.bound):
            rows = (op[:, layer] == j) & applied[:, layer]
            if bound is None or not rows.any():
                continue
            out = np.asarray(bound.apply(ref, params=_slice(branches[j], slice(None), layer)))
            new[rows] = out[rows]
        ref = new
    return ref


def _assert_same(fused, alone, msg):
    """uint8: the same pixels. float32: within float32 rounding (XLA contracts products and
    sums into multiply-adds differently in different programs, which moves a blend or a
    bilinear sample by an ulp; the op alone differs the same way between programs)."""
    if fused.dtype == np.uint8:
        np.testing.assert_array_equal(fused, alone, err_msg=msg)
    else:
        np.testing.assert_allclose(fused, alone, rtol=0, atol=1e-6, err_msg=msg)


def _forced(params, j):
    """Every sample's every layer: entry ``j``, applied."""
    out = dict(params)
    out["op"] = np.full_like(np.asarray(params["op"]), j)
    out["applied"] = np.ones_like(np.asarray(params["applied"]))
    return out


def _chains(name):
    return (0, 1) if name.startswith("augmix") else (None,)


def made_once():
    """``get(name) -> (policy, {chain: fused})``: each policy of :data:`POLICIES` built once
    and its :func:`_fused_chains` made once per layer mode (the mode set when ``get`` is
    called, which the programs are traced in at their first call), so that the tests of a
    module that check one policy in one mode on batches of one shape run one compiled program
    (a module-scoped fixture holds it; the programs go with the module's caches)."""
    made: dict = {}

    def get(name):
        if name not in made:
            made[name] = POLICIES[name]()
        policy, key = made[name], (name, _engine.LAYER)
        if key not in made:
            made[key] = _fused_chains(policy, name)
        return policy, made[key]

    get.made = made
    return get


@pytest.fixture(scope="module")
def programs():
    """:func:`made_once` for this module's tests."""
    get = made_once()
    yield get
    get.made.clear()


@pytest.fixture(params=["families", "auto"])
def layer_mode(request, monkeypatch):
    """Each test runs with the layer by families (the GPU path) and as it runs on this
    machine (on a CPU: sample by sample, only the chosen op)."""
    monkeypatch.setattr(_engine, "LAYER", request.param)
    return request.param


#: Every policy by families (the GPU path); a few as this machine runs them (on a CPU: sample by
#: sample, each through the chosen op's own kernel).
CASES = [("families", n) for n in POLICIES] + [
    ("auto", n) for n in ("ra-timm", "augmix-torchvision", "ra-pack-op")]


@pytest.mark.fast_tier("auto-ra-pack-op-uint8")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("mode, name", CASES)
def test_every_entry_equals_the_op_alone(mode, name, dtype, programs, monkeypatch):
    monkeypatch.setattr(_engine, "LAYER", mode)
    policy, fused = programs(name)
    x = _batch(dtype)
    params = policy.sample(x, key=jax.random.key(5))
    for j, entry in enumerate(policy.space):
        forced = _forced(params, j)
        for chain in _chains(name):
            _assert_same(fused[chain](x, forced), _alone(policy, x, forced, chain),
                         f"{name}: {entry.name}")


@pytest.mark.fast_tier("families-aa-imagenet-uint8")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("name", ["ra-timm", "aa-imagenet", "ra-pack-op"])
def test_drawn_plans_equal_the_ops_alone(name, dtype, layer_mode, programs):
    """Per-sample choices mixed in one batch, layers applied or not: two batches of 8 (the
    batch of test_every_entry_equals_the_op_alone, whose programs of the layers and of each op
    alone these reuse) with their own images and draws."""
    policy, fused = programs(name)
    for seed, draw in ((9, 11), (10, 12)):
        x = _batch(dtype, seed=seed)
        params = policy.sample(x, key=jax.random.key(draw))
        assert len(np.unique(np.asarray(params["op"]))) > 3
        for chain, run in fused.items():
            _assert_same(run(x, params), _alone(policy, x, params, chain), name)
        if layer_mode == "auto":  # the public path (its compiled program is cached: default)
            public = np.asarray(policy.apply(x, params=params))
            _assert_same(public, _alone(policy, x, params) if not name.startswith("augmix")
                         else public, name)
            np.testing.assert_array_equal(public,
                                          np.asarray(policy(x, key=jax.random.key(draw))))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ra-torchvision", "ra-timm", "ra-pack-op"])
def test_the_switch_reference_gives_the_same_uint8_pixels(name, programs, monkeypatch):
    """The per-op switch (``run_layer_switch``, kept as the reference) and the families agree
    on uint8 images for drawn plans."""
    batches, outs = [], {}
    for mode in ("families", "switch"):  # one program per mode (the families' is the one of
        monkeypatch.setattr(_engine, "LAYER", mode)  # test_every_entry_equals_the_op_alone)
        policy, fused = programs(name)
        if not batches:  # two batches of 8: one program per mode serves both
            for seed, draw in ((4, 2), (5, 3)):
                x = _batch(np.uint8, seed=seed)
                batches.append((x, policy.sample(x, key=jax.random.key(draw))))
        outs[mode] = [fused[None](x, params) for x, params in batches]
    for families, switch in zip(outs["families"], outs["switch"]):
        np.testing.assert_array_equal(families, switch)


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


def _image_gathers(jaxpr, pixels):
    """The gathers of at least ``pixels`` elements in ``jaxpr`` (warps and table lookups),
    nested jaxprs (scan bodies, switch branches) included."""
    count = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "gather" and eqn.outvars[0].aval.size >= pixels:
            count += 1
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            count += _image_gathers(sub, pixels)
    return count


@pytest.mark.slow
def test_a_layer_costs_one_op_per_family(monkeypatch):
    """The cost follows the families, not the space: one layer of the 14-op space samples
    images (warps, level tables) as often as the 3-op space with one warp and one table."""
    monkeypatch.setattr(_engine, "LAYER", "families")
    x = _batch(np.uint8, n=2, h=32, w=32)

    def gathers(policy):
        params = policy.sample(x, key=jax.random.key(0))
        jaxpr = jax.make_jaxpr(jax.vmap(policy.run))(x, params)
        return _image_gathers(jaxpr.jaxpr, x.size)

    full = gathers(augjax.rand_augment(n=1, m=9))
    small = gathers(augjax.rand_augment(n=1, m=9, ops=["Identity", "Rotate", "Equalize"]))
    assert full == small >= 2
