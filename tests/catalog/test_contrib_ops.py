"""augjax-contrib ops, and augjax's ``gaussian_blur`` (the pack's until 0.2.0, now a core op in
:mod:`augjax.catalog.blur`, tested here beside the other blurs), against independent references
(torchvision, DALI CPU operators, scipy, PIL, float64 NumPy transcriptions of the documented
formulas) plus the shared contract: uint8 and float32, DALI CPU pipeline == array path
(bitwise), same key -> same output, other keys -> other output. References are built from the
values the ops draw, read through the public ``op.sample`` (never by redrawing them);
``op.apply`` with those params equals the call bitwise, and edited params (coins off, zero
probability, zero displacement) give the identity.

The pack is used from its installed copy when there is one (``pip install -e augjax_contrib``),
else from its source tree; the registry side (entry points, ``augjax list``) is tested with a
built wheel in test_contrib_install.py.

Compiling is what costs here (each op and parameter set is one XLA program, per dtype and per
path), so the reference tests reuse the outputs of one parameter set per op (``CASES``), computed
once per dtype, and every DALI operator runs in one pipeline per dtype.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi
import tomllib
from helpers import check_grad, images, run_dali, seeds

import augjax

PACK = Path(__file__).resolve().parents[2] / "augjax_contrib"
_spec = importlib.util.find_spec("augjax_contrib")
if _spec is None or _spec.origin is None:  # not installed (or only a namespace directory)
    sys.path.insert(0, str(PACK / "src"))
    sys.modules.pop("augjax_contrib", None)

from augjax_contrib import blur, distort, dropout, noise  # noqa: E402

from augjax.catalog import blur as core_blur  # noqa: E402

#: Ops tested here that augjax itself registers (moved out of the pack: the recipes use them).
CORE = {"gaussian_blur"}

N, H, W = 4, 16, 20
DTYPES = pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
SEEDS = seeds(N, seed=2)
KEYS = augjax.keys_from_seeds(SEEDS)  # the array path's keys == the DALI pipeline's keys
KEYS_B = jax.random.split(jax.random.key(4), N)
LEVELS = np.array([20, 60, 100, 140])  # constant images for the noise statistics
WAVE = dict(ampl_x=3.0, ampl_y=2.0, freq_x=0.3, freq_y=0.2, phase_x=0.5, phase_y=1.0)

# One parameter set per op; each makes the op's randomness visible in a batch of 4.
CASES = {
    "gaussian_blur": (core_blur.gaussian_blur, dict(kernel_size=(5, 3), sigma=(0.3, 2.5))),
    "box_blur": (blur.box_blur, dict(kernel_size=(5, 3))),
    "motion_blur": (blur.motion_blur, dict(kernel_size=7, angle=(-180.0, 180.0),
                                           direction=(-1.0, 1.0))),
    "median_blur": (blur.median_blur, dict(kernel_size=5, p=0.5)),
    "pixelate": (blur.pixelate, dict(block=(3, 7))),
    "gaussian_noise": (noise.gaussian_noise, dict(mean=0.05, sigma=(0.1, 0.3))),
    "shot_noise": (noise.shot_noise, dict(factor=(5.0, 30.0))),
    "salt_and_pepper": (noise.salt_and_pepper, dict(prob=(0.05, 0.3), per_channel=True,
                                                    salt=0.9, pepper=0.1)),
    "grid_mask": (dropout.grid_mask, dict(tile=(5, 12), ratio=(0.2, 0.7), angle=(-3.0, 3.0),
                                          shift_x=(-4.0, 4.0), shift_y=(0.0, 9.0))),
    "channel_dropout": (dropout.channel_dropout, dict(count=(1, 2))),
    "pixel_dropout": (dropout.pixel_dropout, dict(prob=(0.1, 0.4), fill=0.2)),
    "water": (distort.water, dict(WAVE, fill=0.2, p=0.5)),
    "sphere": (distort.sphere, dict(interpolation="bilinear", fill=0.2, p=0.5)),
    "elastic_transform": (distort.elastic_transform, dict(alpha=(30.0, 12.0), sigma=(2.0, 3.0),
                                                          fill=0.4)),
}


@functools.cache
def batch(dtype) -> np.ndarray:
    return images(N, H, W, 3, dtype, seed=1)


@functools.cache
def out(name: str, dtype) -> np.ndarray:
    """The array path's output of ``CASES[name]`` on ``batch(dtype)`` with ``KEYS``."""
    spec, params = CASES[name]
    return np.asarray(spec(batch(dtype), **({"key": KEYS} if spec.random else {}), **params))


@functools.cache
def drawn_params(name: str, dtype=np.uint8) -> dict[str, np.ndarray]:
    """``augjax.ops.<name>.sample`` for ``CASES[name]`` on ``batch(dtype)`` with ``KEYS``: the
    values the call draws (leading axis N)."""
    spec, params = CASES[name]
    return {k: np.asarray(v) for k, v in spec.sample(batch(dtype), key=KEYS, **params).items()}


def drawn(name: str, dtype=np.uint8) -> list[dict]:
    """Each sample's drawn values, one dict per sample."""
    p = drawn_params(name, dtype)
    return [{k: v[i] for k, v in p.items()} for i in range(N)]


def max_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def hwc_torch(x):
    import torch

    return torch.from_numpy(np.array(x)).permute(2, 0, 1)


def from_torch(t):
    return t.permute(1, 2, 0).numpy()


@functools.cache
def dali(dtype) -> dict[str, np.ndarray]:
    """One DALI CPU pipeline per dtype: every contrib op through augjax (with ``SEEDS``) and
    DALI's own operators as references (per-sample parameters as argument inputs)."""
    from nvidia.dali import fn, types

    gb, gm = drawn("gaussian_blur"), drawn("grid_mask")
    consts = (np.ones((N, H, W, 3)) * LEVELS[:, None, None, None]).astype(np.uint8)
    arrays = {
        "x": batch(dtype), "seeds": SEEDS, "consts": consts,
        "sigma": np.array([r["sigma"] for r in gb], np.float32),
        "tile": np.array([r["tile"] for r in gm], np.int32),
        **{n: np.array([r[n] for r in gm], np.float32)
           for n in ("ratio", "angle", "shift_x", "shift_y")},
        "factor": np.array([r["factor"] for r in drawn("shot_noise")], np.float32),
        "prob": np.array([r["prob"] for r in drawn("salt_and_pepper")], np.float32),
    }
    names = list(arrays)
    fill = 51.0 if dtype == np.uint8 else 0.2
    nn, lin = types.INTERP_NN, types.INTERP_LINEAR

    def build(*nodes):
        a = dict(zip(names, nodes))
        x = a["x"]
        outs = {f"augjax:{n}": spec(x, seeds=a["seeds"], **params)
                for n, (spec, params) in CASES.items()}
        outs["gaussian_blur"] = fn.gaussian_blur(x, window_size=(5, 3), sigma=a["sigma"])
        outs["grid_mask"] = fn.grid_mask(x, tile=a["tile"], ratio=a["ratio"], angle=a["angle"],
                                         shift_x=a["shift_x"], shift_y=a["shift_y"])
        outs["water_nn"] = fn.water(x, interp_type=nn, fill_value=fill, **WAVE)
        outs["water_linear"] = fn.water(x, interp_type=lin, fill_value=fill, **WAVE)
        outs["sphere_nn"] = fn.sphere(x, interp_type=nn, fill_value=fill)
        outs["sphere_linear"] = fn.sphere(x, interp_type=lin, fill_value=fill)
        outs["augjax:shot_consts"] = noise.shot_noise(a["consts"], seeds=a["seeds"],
                                                      **CASES["shot_noise"][1])
        outs["shot_consts"] = fn.noise.shot(a["consts"], factor=a["factor"], seed=5)
        outs["salt_consts"] = fn.noise.salt_and_pepper(
            a["consts"], prob=a["prob"], per_channel=True, salt_val=230, pepper_val=26, seed=3)
        outs["augjax:salt_consts"] = noise.salt_and_pepper(a["consts"], seeds=a["seeds"],
                                                           **CASES["salt_and_pepper"][1])
        build.keys = list(outs)
        return tuple(outs.values())

    results = run_dali(build, *arrays.values(), layouts=["HWC"] + [None] * (len(names) - 1))[0]
    return dict(zip(build.keys, results))


# -- the pack ------------------------------------------------------------------------------------
def test_the_pack_declares_one_entry_point_per_op():
    """pyproject declares one entry point per op, named as the op, pointing at its OpSpec."""
    meta = tomllib.loads((PACK / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "augjax-contrib"
    assert meta["project"]["version"] == "0.2.0"
    assert "augjax>=0.2,<0.3" in meta["project"]["dependencies"]
    eps = meta["project"]["entry-points"]["augjax.ops"]
    assert sorted(eps) == sorted(set(CASES) - CORE)
    modules = {"blur": blur, "noise": noise, "dropout": dropout, "distort": distort}
    for name, value in eps.items():
        module, attr = value.split(":")
        spec = getattr(modules[module.rsplit(".", 1)[1]], attr)
        assert isinstance(spec, augjax.OpSpec) and spec.name == name
        assert spec.level == "sample" and spec.reference and spec.doc
        assert spec.api_version == "2.0"  # written for the params-first authoring API
        assert spec.geometric == (module.endswith("distort")) and spec.matrix is None
    assert {n for m in modules.values() for n in m.__all__} == set(eps)
    core = tomllib.loads((PACK.parent / "pyproject.toml").read_text())
    core_eps = core["project"]["entry-points"]["augjax.ops"]
    assert not set(core_eps) & set(eps), "shadows a core op"
    assert all(core_eps[name] == f"augjax.catalog.blur:{name}" for name in CORE)
    assert all(augjax.op_records(name)[0].distribution == "augjax" for name in CORE)


def test_the_pack_uses_only_the_public_augjax_api():
    """Every augjax import in the pack is ``from augjax import op, Param``, augjax.errors or
    augjax.kernels (names it exports)."""
    import augjax.kernels

    seen = set()
    for path in (PACK / "src" / "augjax_contrib").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "augjax":
                assert node.module in ("augjax", "augjax.errors", "augjax.kernels"), \
                    (path.name, node.module)
                names = {a.name for a in node.names}
                if node.module == "augjax":
                    assert names <= {"op", "Param"}, path.name
                if node.module == "augjax.kernels":
                    assert names <= set(augjax.kernels.__all__), (path.name, names)
                seen.add(node.module)
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] != "augjax" for a in node.names), path.name
    assert seen == {"augjax", "augjax.errors", "augjax.kernels"}


# -- the shared contract, for every op -----------------------------------------------------------
@pytest.mark.slow
@DTYPES
@pytest.mark.parametrize("name", list(CASES))
def test_dali_cpu_pipeline_equals_the_array_path(name, dtype):
    """DALI CPU pipeline with given seeds == the array path with keys_from_seeds(seeds); same
    key reproduces; other keys change the output; dtype and shape are kept."""
    spec, params = CASES[name]
    ref = out(name, dtype)
    assert ref.dtype == dtype and ref.shape == (N, H, W, 3)
    np.testing.assert_array_equal(dali(dtype)[f"augjax:{name}"], ref)
    assert not np.array_equal(ref, batch(dtype)), "the op left the batch unchanged"
    if spec.random:
        np.testing.assert_array_equal(np.asarray(spec(batch(dtype), key=KEYS, **params)), ref)
        other = np.asarray(spec(batch(dtype), key=KEYS_B, **params))
        assert not np.array_equal(other, ref)


@pytest.mark.gpu
def test_dali_gpu_pipeline_equals_the_array_path_on_the_gpu():
    """On a GPU: every op in a DALI GPU pipeline == the array path (JAX's default device)."""
    x = batch(np.uint8)

    def build(node, seed_node):
        return tuple(spec(node, seeds=seed_node, **params) for spec, params in CASES.values())

    got = run_dali(build, x, SEEDS, layouts=["HWC", None], device="gpu")[0]
    for (name, (spec, params)), g in zip(CASES.items(), got):
        ref = np.asarray(spec(x, **({"key": KEYS} if spec.random else {}), **params))
        np.testing.assert_array_equal(g, ref, err_msg=name)


# -- blur ----------------------------------------------------------------------------------------
@pytest.mark.fast_tier("uint8")
@DTYPES
def test_gaussian_blur_matches_torchvision_and_dali(dtype):
    from torchvision.transforms.v2 import functional as F

    got, x = out("gaussian_blur", dtype), batch(dtype)
    for i, row in enumerate(drawn("gaussian_blur")):
        s = row["sigma"]
        ref = F.gaussian_blur(hwc_torch(x[i]), kernel_size=[3, 5], sigma=[s, s])  # (kx, ky)
        assert max_diff(got[i], from_torch(ref)) <= (0 if dtype == np.uint8 else 1e-6)
    assert max_diff(got, dali(dtype)["gaussian_blur"]) <= (1 if dtype == np.uint8 else 1e-5)


@DTYPES
def test_box_blur_matches_scipy(dtype):
    ref = ndi.uniform_filter(batch(dtype).astype(np.float64), size=(1, 5, 3, 1), mode="mirror")
    ref = np.round(ref) if dtype == np.uint8 else ref
    assert max_diff(out("box_blur", dtype), ref) <= (1 if dtype == np.uint8 else 1e-6)


def motion_kernel64(size, angle_deg, direction):
    """Float64 transcription of the documented motion-blur kernel."""
    r, a = size // 2, (direction + 1) / 2
    w = np.linspace(a, 1 - a, size)
    th = math.radians(angle_deg)
    k = np.zeros((size, size))
    for u in range(size):
        for v in range(size):
            qx = (v - r) * math.cos(th) - (u - r) * math.sin(th)
            qy = (v - r) * math.sin(th) + (u - r) * math.cos(th)
            along = sum(w[j] * max(0.0, 1 - abs(qx - (j - r))) for j in range(size))
            k[u, v] = along * max(0.0, 1 - abs(qy))
    return k / k.sum()


@DTYPES
def test_motion_blur_matches_a_float64_transcription(dtype):
    got, x = out("motion_blur", dtype), batch(dtype)
    for i, row in enumerate(drawn("motion_blur", dtype)):
        kern = motion_kernel64(7, float(row["angle"]), float(row["direction"]))
        ref = ndi.correlate(x[i].astype(np.float64), kern[:, :, None], mode="mirror")
        ref = np.round(ref) if dtype == np.uint8 else ref
        assert max_diff(got[i], ref) <= (1 if dtype == np.uint8 else 1e-5)


def test_motion_blur_at_angle_zero_is_a_horizontal_box_filter():
    """Independent property: a horizontal, uniform line is a 1D mean filter along the width."""
    x = batch(np.float32)
    got = np.asarray(blur.motion_blur(x, key=KEYS, kernel_size=5, angle=0.0, direction=0.0))
    ref = ndi.uniform_filter1d(x.astype(np.float64), 5, axis=2, mode="mirror")
    assert max_diff(got, ref) <= 1e-6


@DTYPES
def test_median_blur_matches_scipy(dtype):
    x = batch(dtype)
    ref = ndi.median_filter(x, size=(1, 5, 5, 1), mode="nearest")
    flags = drawn_params("median_blur", dtype)["applied"]
    assert set(flags) == {True, False}
    for i, a in enumerate(flags):
        np.testing.assert_array_equal(out("median_blur", dtype)[i], ref[i] if a else x[i])


def test_pixelate_matches_pil_when_the_block_divides_the_image():
    from PIL import Image

    x = batch(np.uint8)
    got = np.asarray(blur.pixelate(x, key=KEYS, block=4))
    for i in range(N):
        small = Image.fromarray(x[i]).resize((W // 4, H // 4), Image.BOX)
        assert max_diff(got[i], np.asarray(small.resize((W, H), Image.NEAREST))) <= 1


@DTYPES
def test_pixelate_matches_a_float64_block_mean(dtype):
    got, x = out("pixelate", dtype), batch(dtype)
    sizes = set()
    for i, row in enumerate(drawn("pixelate", dtype)):
        b = int(row["block"])
        assert b == row["block"] and 3 <= b <= 7
        sizes.add(b)
        src, ref = x[i].astype(np.float64), np.empty((H, W, 3))
        for r0 in range(0, H, b):
            for c0 in range(0, W, b):
                ref[r0:r0 + b, c0:c0 + b] = src[r0:r0 + b, c0:c0 + b].mean(axis=(0, 1))
        ref = np.round(ref) if dtype == np.uint8 else ref
        assert max_diff(got[i], ref) <= (1 if dtype == np.uint8 else 1e-6)
    assert len(sizes) > 1


# -- noise ---------------------------------------------------------------------------------------
def tv_noise(x, z, sigma, clip, monkeypatch):
    """torchvision's kernel on the normal draws ``z`` augjax drew (torch.randn_like returns
    them)."""
    import torch
    from torchvision.transforms.v2 import functional as F

    monkeypatch.setattr(torch, "randn_like", lambda *a, **kw: hwc_torch(z))
    return from_torch(F.gaussian_noise(hwc_torch(x), mean=0.05, sigma=sigma, clip=clip))


@DTYPES
def test_gaussian_noise_matches_torchvision_given_the_same_normal_draws(dtype, monkeypatch):
    got, x = out("gaussian_noise", dtype), batch(dtype)
    for i, row in enumerate(drawn("gaussian_noise", dtype)):
        assert row["noise"].shape == (H, W, 3)
        ref = tv_noise(x[i], row["noise"], float(row["sigma"]), True, monkeypatch)
        assert max_diff(got[i], ref) <= (0 if dtype == np.uint8 else 1e-6)


def test_gaussian_noise_without_clip_wraps_uint8_like_torchvision(monkeypatch):
    x = batch(np.uint8)
    params = dict(mean=0.05, sigma=0.3, clip=False)
    got = np.asarray(noise.gaussian_noise(x, key=KEYS, **params))
    z = np.asarray(noise.gaussian_noise.sample(x, key=KEYS, **params)["noise"])
    wrapped = 0
    for i in range(N):
        np.testing.assert_array_equal(got[i], tv_noise(x[i], z[i], 0.3, False, monkeypatch))
        wrapped += (got[i] != tv_noise(x[i], z[i], 0.3, True, monkeypatch)).sum()
    assert wrapped > 0  # some values wrapped around instead of saturating


@DTYPES
def test_shot_noise_matches_the_formula(dtype):
    got, x = out("shot_noise", dtype), batch(dtype)
    scale = 255.0 if dtype == np.float32 else 1.0
    from scipy.stats import poisson

    for i, row in enumerate(drawn("shot_noise", dtype)):
        f = np.float32(row["factor"])
        v = x[i].astype(np.float32) * np.float32(scale)
        # the Poisson count of each value is the quantile of its uniform draw (float64 scipy)
        events = poisson.ppf(row["events_u"].astype(np.float64), (v / f).astype(np.float64))
        events = np.where(v == 0, 0.0, events)
        ref = np.clip(events * np.float64(f), 0, 255)
        ref = np.round(ref) if dtype == np.uint8 else ref / 255.0
        close = np.abs(got[i].astype(np.float64) - ref) <= (1 if dtype == np.uint8 else 1e-5)
        assert close.mean() >= 0.999, close.mean()  # float32 CDF rounding at a step: rare


@pytest.mark.slow
def test_shot_noise_matches_dali_statistics():
    """Constant images; per-sample factors given to DALI's fn.noise.shot: mean and variance of
    both agree with each other and with Poisson's (mean v, variance factor * v)."""
    ours, theirs = dali(np.uint8)["augjax:shot_consts"], dali(np.uint8)["shot_consts"]
    for i, (lev, row) in enumerate(zip(LEVELS, drawn("shot_noise"))):
        var = row["factor"] * lev
        for o in (ours[i], theirs[i]):
            assert abs(o.mean() - lev) < 4 * math.sqrt(var / o.size) + 1, (lev, o.mean())
            assert abs(o.var() - var) < 0.25 * var + 4, (lev, o.var(), var)
    assert not np.array_equal(ours, theirs)


@DTYPES
def test_salt_and_pepper_matches_the_formula(dtype):
    got, x = out("salt_and_pepper", dtype), batch(dtype)
    salt, pepper = (230, 26) if dtype == np.uint8 else (0.9, 0.1)
    for i, row in enumerate(drawn("salt_and_pepper", dtype)):
        assert row["hit_u"].shape == row["salt_u"].shape == (H, W, 3)  # per channel
        hit, salty = row["hit_u"] < row["prob"], row["salt_u"] < 0.5
        ref = np.where(hit, np.where(salty, salt, pepper), x[i]).astype(dtype)
        np.testing.assert_array_equal(got[i], ref)


@pytest.mark.slow
def test_salt_and_pepper_matches_dali_statistics():
    ours, theirs = dali(np.uint8)["augjax:salt_consts"], dali(np.uint8)["salt_consts"]
    for i, (lev, row) in enumerate(zip(LEVELS, drawn("salt_and_pepper"))):
        p = row["prob"]
        for o in (ours[i], theirs[i]):
            assert set(np.unique(o)) <= {26, int(lev), 230}
            tol = 4 * math.sqrt(p / 2 / o.size) + 0.005
            assert abs((o == 230).mean() - p / 2) < tol and abs((o == 26).mean() - p / 2) < tol
            assert not (o == o[..., :1]).all()  # per channel


def test_salt_and_pepper_per_pixel_covers_all_channels():
    x = batch(np.uint8)
    got = np.asarray(noise.salt_and_pepper(x, key=KEYS, prob=0.3))
    hit = (got != x).any(-1)
    assert hit.mean() > 0.2
    assert ((got == 255).all(-1) | (got == 0).all(-1))[hit].all()


# -- dropout -------------------------------------------------------------------------------------
@pytest.mark.fast_tier("uint8")
@DTYPES
def test_grid_mask_matches_dali(dtype):
    """Per-sample tile, ratio, angle and shifts given to DALI's fn.grid_mask."""
    mismatch = (out("grid_mask", dtype) != dali(dtype)["grid_mask"]).any(-1).mean()
    assert mismatch <= 0.002, mismatch  # float32 rounding at square edges, see the docstring
    assert len({r["tile"] for r in drawn("grid_mask")}) > 1


@DTYPES
def test_channel_dropout_matches_the_formula(dtype):
    got, x = out("channel_dropout", dtype), batch(dtype)
    for i, row in enumerate(drawn("channel_dropout", dtype)):
        n = int(row["count"])
        assert n == row["count"] and row["applied"]
        drop = np.isin(np.arange(3), np.argsort(row["channel_u"])[:n])  # the n smallest draws
        np.testing.assert_array_equal(got[i], np.where(drop, 0, x[i]).astype(dtype))
    # the count is drawn from the inclusive range: both values come up over 32 samples
    many = dropout.channel_dropout.sample(images(32, 2, 2, 3, dtype), key=jax.random.key(5),
                                          **CASES["channel_dropout"][1])
    assert set(np.asarray(many["count"]).tolist()) == {1.0, 2.0}


def test_channel_dropout_needs_a_surviving_channel():
    with pytest.raises(augjax.errors.InputError, match="channel_dropout.*at least one channel"):
        dropout.channel_dropout(batch(np.uint8), key=KEYS, count=3)


@DTYPES
def test_pixel_dropout_matches_the_formula(dtype):
    got, x = out("pixel_dropout", dtype), batch(dtype)
    fill = 51 if dtype == np.uint8 else 0.2
    for i, row in enumerate(drawn("pixel_dropout", dtype)):
        assert row["drop_u"].shape == (H, W, 1)
        drop = row["drop_u"] < row["prob"]
        np.testing.assert_array_equal(got[i], np.where(drop, fill, x[i]).astype(dtype))


# -- distortions ---------------------------------------------------------------------------------
@pytest.mark.fast_tier("uint8")
@DTYPES
def test_water_and_sphere_match_dali(dtype):
    x, d = batch(dtype), dali(dtype)
    for name, ref in (("water", d["water_nn"]), ("sphere", d["sphere_linear"])):
        flags = drawn_params(name, dtype)["applied"]
        assert set(flags) == {True, False}
        for i, a in enumerate(flags):
            tol = 0 if dtype == np.uint8 or name == "water" else 1e-5
            assert max_diff(out(name, dtype)[i], ref[i] if a else x[i]) <= tol, (name, i)


def test_water_bilinear_and_sphere_nearest_match_dali():
    x, d = batch(np.uint8), dali(np.uint8)
    water = distort.water(x, key=KEYS, interpolation="bilinear", fill=0.2, **WAVE)
    np.testing.assert_array_equal(np.asarray(water), d["water_linear"])
    sphere = distort.sphere(x, key=KEYS, interpolation="nearest", fill=0.2)
    np.testing.assert_array_equal(np.asarray(sphere), d["sphere_nn"])


def test_water_ranges_match_a_float64_transcription():
    x = batch(np.float32)
    ranges = dict(ampl_x=(1.0, 5.0), ampl_y=(0.0, 3.0), freq_x=(0.1, 0.5), freq_y=0.2,
                  phase_x=(0.0, 6.3), phase_y=1.0)
    got = np.asarray(distort.water(x, key=KEYS, interpolation="bilinear", **ranges))
    yy, xx = np.meshgrid(np.arange(H, dtype=float), np.arange(W, dtype=float), indexing="ij")
    params = distort.water.sample(x, key=KEYS, interpolation="bilinear", **ranges)
    for name, r in ranges.items():  # ranges drawn within bounds, numbers used as they are
        v = np.asarray(params[name])
        assert (v == np.float32(r)).all() if not isinstance(r, tuple) else \
            ((v >= r[0]) & (v <= r[1])).all() and len(set(v)) == N
    for i in range(N):
        v = [float(params[name][i]) for name in ranges]
        sx = xx + v[0] * np.sin(v[2] * yy + v[4]) - 0.5
        sy = yy + v[1] * np.cos(v[3] * xx + v[5]) - 0.5
        ref = np.stack([ndi.map_coordinates(x[i, :, :, c].astype(np.float64), [sy, sx], order=1,
                                            mode="grid-constant", cval=0.0) for c in range(3)], -1)
        assert max_diff(got[i], ref) <= 1e-4


def tv_elastic(x, displacement, interpolation, fill):
    """torchvision's elastic kernel with the displacement field augjax drew."""
    import torch
    from torchvision.transforms.v2 import functional as F

    fill = None if fill is None else [fill * (255 if x.dtype == np.uint8 else 1)] * 3
    disp = torch.from_numpy(np.array(displacement))[None]
    return from_torch(F.elastic(hwc_torch(x), disp, interpolation=interpolation, fill=fill))


def test_elastic_displacement_is_torchvisions_make_params_on_the_documented_draws():
    """The sampler's field: torchvision ``ElasticTransform.make_params`` (Gaussian blur of
    uniform noise, scaled by alpha / size) redone with torch ops on the noise the docstrings
    document: ``uniform(k, (2, H, W), -1, 1)`` with ``k = fold_in(fold_in(key, 0), 1)`` (the
    op's key, then its sample hook's; see augjax's authoring API)."""
    import torch
    from torchvision.transforms.v2 import functional as F

    alpha, sigma = (30.0, 12.0), (2.0, 3.0)
    for i, row in enumerate(drawn("elastic_transform")):
        k = jax.random.fold_in(jax.random.fold_in(KEYS[i], 0), 1)
        noise_xy = torch.from_numpy(np.array(jax.random.uniform(k, (2, H, W), jnp.float32, -1, 1)))
        ref = []
        for u, a, n, s in zip(noise_xy, alpha, (W, H), sigma):
            size = int(8 * s + 1) + (int(8 * s + 1) % 2 == 0)
            ref.append(F.gaussian_blur(u[None, None], [size, size], list(sigma)) * a / n)
        ref = torch.concat(ref, 1).permute([0, 2, 3, 1])[0].numpy()
        assert row["displacement"].shape == (H, W, 2)
        assert max_diff(row["displacement"], ref) <= 1e-6


@DTYPES
def test_elastic_transform_matches_torchvision(dtype):
    got, x = out("elastic_transform", dtype), batch(dtype)
    for i, row in enumerate(drawn("elastic_transform", dtype)):
        ref = tv_elastic(x[i], row["displacement"], "bilinear", 0.4)
        assert max_diff(got[i], ref) <= (1 if dtype == np.uint8 else 1e-5)


@pytest.mark.parametrize("dtype,interpolation,fill", [(np.uint8, "nearest", 0.4),
                                                      (np.float32, "bilinear", None)])
def test_elastic_transform_nearest_and_without_fill_match_torchvision(dtype, interpolation, fill):
    x = batch(dtype)
    params = dict(alpha=(30.0, 12.0), sigma=(2.0, 3.0), interpolation=interpolation, fill=fill)
    got = np.asarray(distort.elastic_transform(x, key=KEYS, **params))
    disp = np.asarray(distort.elastic_transform.sample(x, key=KEYS, **params)["displacement"])
    for i in range(N):
        ref = tv_elastic(x[i], disp[i], interpolation, fill)
        # nearest: a position within float rounding of a tie may pick the neighbour
        if interpolation == "nearest":
            assert (got[i] != ref).any(-1).mean() <= 0.002
        else:
            assert max_diff(got[i], ref) <= 1e-5


# -- params: sample, then apply ------------------------------------------------------------------
MODULES = {"blur": blur, "noise": noise, "dropout": dropout, "distort": distort}

#: Each op's params fields, as its docstring and its module's docstring document them.
FIELDS = {
    "gaussian_blur": {"sigma"},
    "box_blur": set(),
    "motion_blur": {"angle", "direction"},
    "median_blur": {"applied"},
    "pixelate": {"block", "applied"},
    "gaussian_noise": {"sigma", "noise"},
    "shot_noise": {"factor", "events_u"},
    "salt_and_pepper": {"prob", "hit_u", "salt_u"},
    "grid_mask": {"tile", "ratio", "angle", "shift_x", "shift_y", "applied"},
    "channel_dropout": {"count", "channel_u", "applied"},
    "pixel_dropout": {"prob", "drop_u"},
    "water": {"ampl_x", "ampl_y", "freq_x", "freq_y", "phase_x", "phase_y", "applied"},
    "sphere": {"applied"},
    "elastic_transform": {"displacement"},
}


@pytest.mark.fast_tier("water")
@pytest.mark.parametrize("name", list(CASES))
def test_sample_then_apply_equals_the_call_and_fields_are_documented(name):
    """``op.apply(x, params=op.sample(x, key=k))`` == ``op(x, key=k)`` bitwise; the fields are
    the documented ones, each with a leading axis N."""
    spec, params = CASES[name]
    x = batch(np.uint8)
    drawn_ = spec.sample(x, key=KEYS, **params)
    assert set(drawn_) == FIELDS[name]
    module = sys.modules[spec.kernel.__module__]
    for field, value in drawn_.items():
        assert np.shape(value)[0] == N, (field, np.shape(value))
        assert f"``{field}``" in spec.doc and f"``{field}``" in module.__doc__, field
    np.testing.assert_array_equal(np.asarray(spec.apply(x, params=drawn_, **params)), out(name,
                                                                                          np.uint8))


def _edited(name: str, **fields) -> dict:
    p = {k: np.array(v) for k, v in drawn_params(name, np.float32).items()}
    for k, v in fields.items():
        p[k] = np.broadcast_to(np.asarray(v, p[k].dtype), p[k].shape).copy()
    return p


#: Edits of the drawn params that make each op the identity.
NEUTRAL = {
    "gaussian_blur": dict(sigma=1e-3),  # the kernel is a unit impulse
    "median_blur": dict(applied=False),
    "pixelate": dict(applied=False),
    "gaussian_noise": dict(sigma=0.0),
    "shot_noise": dict(factor=0.0),
    "salt_and_pepper": dict(prob=0.0),
    "grid_mask": dict(applied=False),
    "channel_dropout": dict(count=0.0),
    "pixel_dropout": dict(prob=0.0),
    "water": dict(applied=False),
    "sphere": dict(applied=False),
    "elastic_transform": dict(displacement=0.0),
}


@pytest.mark.fast_tier("pixel_dropout")
@pytest.mark.parametrize("name", list(NEUTRAL))
def test_editing_params_to_neutral_values_gives_the_identity(name):
    spec, params = CASES[name]
    x = batch(np.float32)
    if name == "gaussian_noise":
        params = dict(params, mean=0.0)
    got = np.asarray(spec.apply(x, params=_edited(name, **NEUTRAL[name]), **params))
    # the elastic grid at zero displacement is the identity grid up to float32 rounding
    assert max_diff(got, x) <= (1e-5 if name == "elastic_transform" else 0), name


def test_editing_params_sets_exact_values():
    """One edited field changes what it documents: a drop of all but one channel; one more
    block size; a coin turned on."""
    x = batch(np.float32)
    spec, params = CASES["channel_dropout"]
    got = np.asarray(spec.apply(x, params=_edited("channel_dropout", count=2.0,
                                                  channel_u=[0.1, 0.9, 0.2]), **params))
    np.testing.assert_array_equal(got[..., 1], x[..., 1])
    assert (got[..., 0] == 0).all() and (got[..., 2] == 0).all()
    spec, params = CASES["median_blur"]
    got = np.asarray(spec.apply(x, params=_edited("median_blur", applied=True), **params))
    np.testing.assert_array_equal(got, ndi.median_filter(x, size=(1, 5, 5, 1), mode="nearest"))
    spec, params = CASES["pixelate"]
    got = np.asarray(spec.apply(x, params=_edited("pixelate", block=2.0), **params))
    ref = x.reshape(N, H // 2, 2, W // 2, 2, 3).mean(axis=(2, 4)).repeat(2, 1).repeat(2, 2)
    assert max_diff(got, ref) <= 1e-6


@pytest.mark.fast_tier("gaussian_noise-None")
@pytest.mark.parametrize("name, params", [
    ("gaussian_blur", None), ("box_blur", None), ("motion_blur", None), ("pixelate", None),
    ("gaussian_noise", None), ("water", dict(WAVE, interpolation="bilinear", fill=0.2, p=1.0)),
    ("sphere", dict(interpolation="bilinear", fill=0.2)), ("elastic_transform", None),
])
def test_gradients_through_apply_match_finite_differences(name, params):
    """On float32 images the ops are differentiable with respect to the image (params fixed)."""
    spec, case = CASES[name]
    params = case if params is None else params
    x = batch(np.float32)
    drawn_ = spec.sample(x, key=KEYS, **params)
    if name == "gaussian_noise":
        params = dict(params, clip=False)  # clamping has zero gradient where it clips
    # given the params every op here is linear (affine) in the image: a wide step is exact,
    # and float32 rounding of the outputs stays far below it
    check_grad(lambda z: spec.apply(z, params=drawn_, **params), x * 0.8 + 0.1, eps=1e-2)


# -- parameters ----------------------------------------------------------------------------------
def test_size_one_kernels_are_the_identity():
    x = batch(np.uint8)
    # (the neutral values the ops declare are checked by augjax's kit in test_all_ops.py)
    for spec, params in [(blur.box_blur, dict(kernel_size=1)),
                         (core_blur.gaussian_blur, dict(kernel_size=1))]:
        kw = {"key": KEYS} if spec.random else {}
        np.testing.assert_array_equal(np.asarray(spec(x, **kw, **params)), x, err_msg=spec.name)


def test_bad_parameters_raise_param_errors_naming_the_op():
    x = batch(np.uint8)
    for spec, params, pname in [
        (core_blur.gaussian_blur, dict(kernel_size=4), "kernel_size"),
        (blur.motion_blur, dict(kernel_size=6), "kernel_size"),
        (blur.median_blur, dict(kernel_size=4), "kernel_size"),
        (blur.pixelate, dict(block=2.5), "block"),
        (dropout.grid_mask, dict(tile=(3.5, 8)), "tile"),
        (noise.salt_and_pepper, dict(prob=1.5), "prob"),
        (distort.water, dict(interpolation="cubic"), "interpolation"),
        (distort.elastic_transform, dict(alpha=(1.0, 2.0, 3.0)), "alpha"),
    ]:
        with pytest.raises(augjax.ParamError, match=f"{spec.name}: parameter '{pname}'"):
            spec(x, key=KEYS, **params)
