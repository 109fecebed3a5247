"""A policy layer as the Pallas kernels (the CUDA path for uint8 batches,
:mod:`augjax.policies._fused`) gives the pixels of each op alone.

On a CPU the kernels run in Pallas' interpreter (compiled by XLA's CPU backend): every tone
and blend entry and the nearest warps are bitwise the op's, but for two places where the
compiler's contraction of a multiply-add decides, as it does between the op's own CPU and GPU
programs: a torchvision shear's nearest sample sits exactly on a half-pixel tie on whole rows
(shear 0.3 at ``0.3 * (y + 0.5) = 0.5 + k``), and a bilinear sample whose exact value is a
whole level may be truncated (PIL) or rounded (torchvision) one level apart. On the
H200 the compiled kernels matched the XLA layer bitwise for every entry of the torchvision
convention, and within the tolerance above for PIL's
(``test_the_kernels_match_the_xla_layer_on_the_gpu``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_policy_families import (
    POLICIES,
    _alone,
    _batch,
    _forced,
    _fused_chains,
    made_once,
)

import augjax
from augjax.kernels.histogram import histogram
from augjax.policies import _engine
from augjax.policies._fused import supported

#: The policies whose layers qualify for the kernels with torchvision's warp convention.
KERNEL_POLICIES = ["ra-torchvision", "ra-dali", "ta-torchvision", "aa-imagenet",
                   "augmix-torchvision", "ra-pack-op"]
#: ... with PIL's (timm's style).
PIL_POLICIES = ["ra-timm", "aa-v0", "aa-original", "augmix-timm"]
#: Ops whose nearest samples fall on exact half-pixel ties under torchvision's convention
#: (see the module docstring).
TIES = {"shear_x", "shear_y"}


def _ties(op) -> bool:
    return op is not None and op.name in TIES and op.kwargs.get("convention") != "pil"


def _bilinear(op) -> bool:
    return op is not None and op.kwargs.get("interpolation") == "bilinear"


@pytest.fixture(scope="module")
def programs():
    """Each policy and its layers' programs, made once per layer mode for the module
    (test_policy_families.made_once): the tests that run a policy's kernels on the batch shape
    of test_each_entry_through_the_kernels_is_the_op_alone run its compiled program."""
    get = made_once()
    yield get
    get.made.clear()


def _check(got, want, op, msg):
    """Bitwise, but for the two places where the compiler's contraction of a multiply-add
    decides: a torchvision shear's half-pixel ties (any pick), and a bilinear sample whose
    exact value is a whole level (one level, before truncation or rounding)."""
    differ = got != want
    if _ties(op) or _bilinear(op):
        assert differ.mean() <= 0.01, f"{msg}: {differ.sum()} values differ"
        if _bilinear(op):
            assert np.abs(got.astype(int) - want).max(initial=0) <= 1, msg
        return
    np.testing.assert_array_equal(got, want, err_msg=msg)


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNEL_POLICIES + PIL_POLICIES)
def test_each_entry_through_the_kernels_is_the_op_alone(name, programs, monkeypatch):
    monkeypatch.setattr(_engine, "LAYER", "fused")
    policy, chains = programs(name)
    x = _batch(np.uint8, n=8, h=20, w=24, seed=11)
    assert supported(tuple(policy.bound), x.shape[1:], x.dtype)
    params = policy.sample(x, key=jax.random.key(4))
    for j, entry in enumerate(policy.space):
        forced = _forced(params, j)
        for chain, fused in chains.items():
            _check(fused(x, forced), _alone(policy, x, forced, chain), policy.bound[j],
                   f"{name}: {entry.name}, chain {chain}")


@pytest.mark.slow
@pytest.mark.parametrize(("h", "w", "c"), [(2, 16, 3), (3, 32, 3), (8, 12, 1)],
                         ids=["no-inside", "one-row-inside", "one-channel"])
def test_small_and_one_channel_images_through_the_kernels(h, w, c, monkeypatch):
    """Images of 2 rows (sharpness leaves them as they are), 3 rows, and one channel (the
    gray is the image itself), every entry of a space without saturation (3 channels only)."""
    policy = augjax.rand_augment(n=1, m=9, ops=["Sharpness", "Rotate", "TranslateX",
                                                "Equalize", "AutoContrast", "Contrast"])
    x = _batch(np.uint8, n=6, h=h, w=w, seed=h + c)[..., :c]
    assert supported(tuple(policy.bound), x.shape[1:], x.dtype)
    _each_entry_fused_equals_alone(policy, x, jax.random.key(1), monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("size", [(16, 16), (20, 24)], ids=["square", "oblong"])
def test_pil_rotate_exact_paths_through_the_kernels(size, programs, monkeypatch):
    """timm's Rotate at whole quarter turns takes Image.rotate's exact copies and turns (the
    quarter turns on square images only), in the kernel as in the op. The oblong batch has
    test_each_entry_through_the_kernels_is_the_op_alone's shape (its program)."""
    monkeypatch.setattr(_engine, "LAYER", "fused")
    policy, chains = programs("ra-timm")
    x = _batch(np.uint8, n=8, h=size[0], w=size[1], seed=9)
    assert supported(tuple(policy.bound), x.shape[1:], x.dtype)
    params = policy.sample(x, key=jax.random.key(5))
    j = policy.op_names.index("Rotate")
    forced = _forced(params, j)
    degrees = np.asarray([[0, 90], [90, 180], [180, 270], [270, -90], [-180, 360],
                          [450, 0], [-270, 720], [90, 90]], np.float32)
    branches = list(forced["branches"])
    branches[j] = {**branches[j], "degrees": degrees}
    forced["branches"] = tuple(branches)
    got = chains[None](x, forced)
    np.testing.assert_array_equal(got, _alone(policy, x, forced))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ra-torchvision", "aa-imagenet"])
def test_a_mixed_batch_through_the_kernels_is_the_switch(name, programs, monkeypatch):
    """Each sample its own op and magnitude, some not applied: the per-op switch's pixels.
    32 samples, as 4 batches of 8 with their own images and draws (the programs of
    test_each_entry_through_the_kernels_is_the_op_alone; each image is computed alone in
    either form)."""
    policy, _ = programs(name)
    batches = []
    for i in range(4):
        x = _batch(np.uint8, n=8, h=20, w=24, seed=2 + i)
        batches.append((x, policy.sample(x, key=jax.random.fold_in(jax.random.key(9), i))))
    out = {}
    for mode in ("switch", "fused"):
        monkeypatch.setattr(_engine, "LAYER", mode)
        run = programs(name)[1][None]
        out[mode] = np.concatenate([run(x, params) for x, params in batches])
    chosen = np.concatenate([np.asarray(params["op"]) for _, params in batches])
    assert len(np.unique(chosen)) > 3
    if any(_ties(policy.bound[j]) or _bilinear(policy.bound[j]) for j in np.unique(chosen)):
        assert (out["fused"] != out["switch"]).mean() <= 0.01
    else:
        np.testing.assert_array_equal(out["fused"], out["switch"])


@pytest.mark.parametrize("name", PIL_POLICIES)
def test_layers_with_pil_warps_take_the_kernels(name):
    bound = tuple(POLICIES[name]().bound)
    assert supported(bound, (20, 24, 3), np.uint8)


def test_a_layer_with_two_warp_conventions_does_not_take_the_kernels():
    """timm's Rotate (PIL) and the registered rotate (torchvision) in one space: two warps."""
    bound = tuple(POLICIES["ra-mixed-conventions"]().bound)
    assert not supported(bound, (20, 24, 3), np.uint8)


def test_only_uint8_images_of_one_or_three_channels_qualify():
    bound = tuple(POLICIES["ra-torchvision"]().bound)
    assert supported(bound, (8, 8, 3), np.uint8)
    assert supported(bound, (8, 8, 1), np.uint8)
    assert not supported(bound, (8, 8, 3), np.float32)
    assert not supported(bound, (8, 8, 4), np.uint8)
    # contrast reads the mean gray, whose integer sum needs a whole number of 32-pixel rows
    assert not supported(bound, (7, 9, 3), np.uint8)
    no_gray_mean = tuple(POLICIES["ra-pack-op"]().bound)  # no Contrast
    assert supported(no_gray_mean, (7, 9, 3), np.uint8)
    assert supported(no_gray_mean, (4096, 4096, 3), np.uint8)
    assert not supported(no_gray_mean, (4097, 4096, 3), np.uint8)  # over 2**24 pixels


def test_the_statistics_kernel_reads_only_what_is_asked():
    from augjax.kernels.histogram_pallas import stats_kernel

    x = _batch(np.uint8, n=4, h=12, w=40, seed=6)
    reads = jnp.asarray([7, 2, 4, 0], jnp.int32)
    hist, lo, hi, gray = jax.vmap(lambda im, r: stats_kernel(im, r, interpret=True))(x, reads)
    hist, lo, hi, gray = (np.asarray(v) for v in (hist, lo, hi, gray))
    want = np.stack([np.stack([np.bincount(im[..., c].ravel(), minlength=256)
                               for c in range(3)], axis=1) for im in x])
    np.testing.assert_array_equal(hist[0], want[0])
    assert not hist[1:].any()  # not asked: zeros
    for i in (0, 1):
        np.testing.assert_array_equal(lo[i], x[i].min(axis=(0, 1)))
        np.testing.assert_array_equal(hi[i], x[i].max(axis=(0, 1)))
    f = x.astype(np.float32)
    g = np.floor(f[..., 0] * np.float32(0.2989) + f[..., 1] * np.float32(0.587)
                 + f[..., 2] * np.float32(0.114))
    for i in (0, 2):
        assert gray[i] == int(g[i].sum())


@pytest.mark.slow
def test_without_tritons_histogram_the_layer_counts_with_xla(monkeypatch):
    """Where this JAX's Triton lowering has no histogram, the statistics kernel leaves the
    counts to XLA's histogram: equalize through the kernels is still the op alone."""
    from augjax.kernels import histogram_pallas

    monkeypatch.setattr(histogram_pallas, "AVAILABLE", False)
    policy = augjax.rand_augment(n=1, m=9, ops=["Equalize", "AutoContrast"])
    x = _batch(np.uint8, n=6, h=24, w=33, seed=3)  # a shape of its own: traced here
    x[:3, :6] = 40  # one level many times over (PIL equalizes 256 pixels and more)
    _each_entry_fused_equals_alone(policy, x, jax.random.key(2), monkeypatch)


@pytest.mark.gpu
@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a CUDA GPU (the kernels)")
def test_the_kernels_match_the_xla_layer_on_the_gpu(monkeypatch):
    """Compiled by Triton: the statistics kernel's histogram (per-tile Triton histograms)
    against XLA's scatter, and every entry of the qualifying policies against the per-op
    switch on the same GPU, bitwise (PIL's warp convention too: every entry of its policies
    was bitwise on the H200, although the interpreter allows one level on bilinear whole
    levels)."""
    from augjax.kernels.histogram_pallas import stats_kernel

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (32, 224, 224, 3), dtype=np.uint8)
    x[:8] = x[:8] // 4 + 60  # narrow ranges, clustered levels
    reads = jnp.asarray([1, 0] * 16, jnp.int32)
    hist = np.asarray(jax.jit(jax.vmap(lambda im, r: stats_kernel(im, r)[0]))(x, reads))
    want = np.asarray(jax.jit(jax.vmap(lambda im: histogram(im.astype(jnp.int32))))(x))
    np.testing.assert_array_equal(hist[::2], want[::2])
    assert not hist[1::2].any()
    for name in KERNEL_POLICIES + PIL_POLICIES:
        policy = POLICIES[name]()
        params = policy.sample(x, key=jax.random.key(8))
        out = {}
        for mode in ("switch", "auto"):  # one program per mode (traced at its first call)
            monkeypatch.setattr(_engine, "LAYER", mode)
            chains = _fused_chains(policy, name)
            out[mode] = [{c: f(x, _forced(params, j)) for c, f in chains.items()}
                         for j in range(len(policy.space))]
        for j, entry in enumerate(policy.space):
            for chain, want in out["switch"][j].items():
                msg = f"{name}: {entry.name}, chain {chain}"
                # bitwise on the H200, ties and bilinear samples included
                np.testing.assert_array_equal(out["auto"][j][chain], want, err_msg=msg)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ra-torchvision", "augmix-torchvision"])
def test_a_host_with_a_gpu_traces_both_forms_and_runs_the_cpu_one(name, monkeypatch):
    """On a host with CUDA a policy's program holds the CPU form (a scan of sample-by-sample
    layers) and the others' (unrolled layers, the kernels on CUDA): lowered for the CPU it
    gives the CPU-only host's pixels."""
    from augjax.kernels import platform

    policy = POLICIES[name]()
    x = _batch(np.uint8, n=6, h=16, w=16, seed=4)
    params = policy.sample(x, key=jax.random.key(2))
    want = np.asarray(jax.jit(jax.vmap(policy.run))(x, params))
    both = lambda: frozenset({"cpu", "cuda"})
    monkeypatch.setattr(platform, "live_platforms", both)
    monkeypatch.setattr(_engine, "live_platforms", both)
    lowered = jax.jit(jax.vmap(policy.run)).lower(x, params)
    assert "triton" not in lowered.as_text()  # the CUDA branch (Pallas) traced, not lowered
    np.testing.assert_array_equal(np.asarray(lowered.compile()(x, params)), want)


def _each_entry_fused_equals_alone(policy, x, key, monkeypatch):
    """Every entry of ``policy``'s space, forced on the whole batch, through the fused layer
    (interpreted off CUDA) against the entry's op alone, bitwise."""
    params = policy.sample(x, key=key)
    monkeypatch.setattr(_engine, "LAYER", "fused")
    fused = _fused_chains(policy, "ra")[None]
    for j, entry in enumerate(policy.space):
        forced = _forced(params, j)
        np.testing.assert_array_equal(fused(x, forced), _alone(policy, x, forced),
                                      err_msg=f"{entry.name} on {x.shape}")
