"""Policies in the tools: ``augjax info <policy>``, ``augjax list --policies``, DALI's call form
``rand_augment(images, n=2, m=9)`` (in a pipeline and on arrays), other libraries' parameter
names answered with augjax's, and exclusive bounds shown and enforced."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest
from helpers import images, run_dali, seeds

import augjax
from augjax import Param, ParamError
from augjax.cli.main import main

REPO = pathlib.Path(augjax.__file__).resolve().parents[1]

# Small op subsets keep the compiled programs small; each factory's own keywords.
SMALL = {
    "rand_augment": dict(n=2, m=9, ops=("Rotate", "Solarize", "Equalize")),
    "trivial_augment_wide": dict(ops=("ShearX", "Posterize")),
    "auto_augment": dict(policy="svhn"),
    "augmix": dict(width=1, depth=1, ops=("Rotate", "Posterize")),
}


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "augjax.cli.main", *args], capture_output=True,
                          text=True, timeout=300, env=env)


# -- augjax info <policy>, augjax list --policies ------------------------------------------------
def test_info_rand_augment_in_a_subprocess_shows_space_scale_and_defaults():
    res = _cli("info", "rand_augment")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    # torchvision RandAugment: 14 ops, 31 bins (t = m / 30), num_ops=2, magnitude=9
    assert "op space (14 ops" in out and "t = level / 30" in out
    assert "n = 2" in out and "m = 9" in out and "num_magnitude_bins = 31" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("    ")}
    # torchvision's _AUGMENTATION_SPACE: ShearX linspace(0, 0.3), Rotate linspace(0, 30),
    # Posterize 8 - (arange(bins) / ((bins - 1) / 4)).round(), Solarize linspace(1, 0) * 255
    assert "shear_x(shear)" in rows["ShearX"] and "0.3 at the max" in rows["ShearX"]
    assert "0.09 at the configured magnitude" in rows["ShearX"]  # 0.3 * 9 / 30
    assert "rotate(degrees)" in rows["Rotate"] and "30 at the max" in rows["Rotate"]
    assert "8 at level 0 .. 4 at the max" in rows["Posterize"]
    assert "255 at level 0 .. 0 at the max" in rows["Solarize"]
    assert rows["Identity"].split()[1] == "identity"


def test_info_policy_options_change_what_is_described(capsys):
    assert main(["info", "rand_augment", "style=timm", "m=9", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["config"]["style"] == "timm" and info["scale"]["denominator"] == 10.0
    rotate = next(e for e in info["ops"] if e["name"] == "Rotate")
    assert rotate["magnitude"]["at_m"] == pytest.approx(27.0)  # timm: (9 / 10) * 30 degrees
    assert rotate["magnitude"]["formula"] == "±lerp(0, 30, t)"
    assert [e["name"] for e in info["ops"]] == list(augjax.rand_augment(style="timm").op_names)

    assert main(["info", "auto_augment", "policy=v0", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert len(info["subpolicies"]) == 25  # timm auto_augment_policy_v0
    assert info["subpolicies"][0] == [["Equalize", 0.8, 1], ["ShearY", 0.8, 4]]

    assert main(["info", "trivial_augment_wide"]) == 0
    assert "op space (14 ops" in capsys.readouterr().out
    assert main(["info", "augmix"]) == 0  # torchvision AugMix, all_ops: 13 ops, 10 bins
    out = capsys.readouterr().out
    assert "op space (13 ops" in out and "t = level / 9" in out


def test_info_policy_bad_options_exit_2_with_the_reason(capsys):
    assert main(["info", "augmix", "style=tf"]) == 2
    assert "parameter 'style' expects one of 'torchvision', 'timm', got 'tf'" in \
        capsys.readouterr().err
    assert main(["info", "rand_augment", "num_ops=2"]) == 2
    assert "did you mean n (torchvision 'num_ops')" in capsys.readouterr().err
    assert main(["info", "flip", "p=0.5"]) == 2
    assert "options are for policies" in capsys.readouterr().err


def test_list_policies(capsys):
    assert main(["list", "--policies"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["rand_augment", "trivial_augment_wide", "auto_augment", "augmix"]
    assert main(["list", "--policies", "*aug*", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["rand_augment", "trivial_augment_wide", "auto_augment",
                                         "augmix"]
    assert rows[2]["variant"] == "policy" and "v0" in rows[2]["choices"]


def test_a_policy_asked_for_as_an_op_says_where_it_is():
    from augjax._plugins.registry import POLICY_NAMES

    assert tuple(augjax.policies.FACTORIES) == POLICY_NAMES
    with pytest.raises(augjax.OpNotFoundError, match=r"'augmix' is a policy.*augjax\.augmix"):
        augjax.ops.augmix


# -- DALI's call form ---------------------------------------------------------------------------
def test_images_first_on_arrays_equals_build_then_apply():
    x, key = images(6, 12, 12, seed=11), jax.random.key(5)
    direct = np.asarray(augjax.rand_augment(x, key=key, **SMALL["rand_augment"]))
    built = np.asarray(augjax.rand_augment(**SMALL["rand_augment"])(x, key=key))
    np.testing.assert_array_equal(direct, built)
    assert direct.shape == x.shape and not np.array_equal(direct, x)


@pytest.mark.parametrize("name", list(SMALL))
def test_images_first_applies_the_policy_it_builds(name, monkeypatch):
    """Every factory: ``f(images, **call, **config)`` applies ``f(**config)`` with the call
    keywords (recorded at the dispatch, so nothing compiles)."""
    import augjax._runtime.execution.dispatch as composite

    calls = []
    monkeypatch.setattr(composite, "apply_steps", lambda steps, inputs, **kw: calls.append(
        (steps, inputs, kw)) or "applied")
    factory, x = getattr(augjax, name), images(2, 8, 8)
    assert factory(x, key="K", layout="CHW", **SMALL[name]) == "applied"
    (steps, inputs, kw), = calls
    assert steps == (factory(**SMALL[name]),) and inputs[0] is x
    assert kw["key"] == "K" and kw["layout"] == "CHW" and kw["name"] == name


@pytest.mark.slow
def test_images_first_in_a_dali_pipeline_and_positional_config():
    x, s = images(6, 12, 12, seed=11), seeds(6, seed=12)
    ops = SMALL["rand_augment"]["ops"]
    (out,), = run_dali(lambda im, sd: augjax.rand_augment(im, 2, 9, ops=ops, seeds=sd), x, s,
                       layouts=["HWC", None])
    ref = np.asarray(augjax.rand_augment(n=2, m=9, ops=ops)(x, key=augjax.keys_from_seeds(s)))
    np.testing.assert_array_equal(out, ref)


def test_call_keywords_without_images_and_other_libraries_names():
    with pytest.raises(ParamError, match=r"'key' is an argument of applying the policy.*"
                                         r"rand_augment\(images, key="):
        augjax.rand_augment(n=2, key=jax.random.key(0))
    cases = [(augjax.rand_augment, "num_ops", "n (torchvision 'num_ops')"),
             (augjax.rand_augment, "magnitude", "m (torchvision 'magnitude')"),
             (augjax.rand_augment, "monotonic_mag", "increasing (DALI 'monotonic_mag')"),
             (augjax.rand_augment, "magnitude_std", "mstd (timm 'magnitude_std')"),
             (augjax.augmix, "mixture_width", "width (torchvision 'mixture_width')"),
             (augjax.auto_augment, "policy_name", "policy (DALI 'policy_name')"),
             (augjax.trivial_augment_wide, "excluded", "exclude (DALI 'excluded')"),
             (augjax.rand_augment, "mstdd", "'mstd'")]
    for factory, keyword, hint in cases:
        with pytest.raises(ParamError, match="did you mean") as info:
            factory(**{keyword: 1})
        assert hint in str(info.value) and info.value.param == keyword


# -- op parameter aliases -----------------------------------------------------------------------
def test_timm_and_torchvision_names_get_augjax_names():
    cases = [("random_erasing", {"probability": 0.5}, "p (timm 'probability')"),
             ("random_erasing", {"scale": (0.02, 0.3)}, "min_area, max_area (torchvision 'scale')"),
             ("brightness", {"brightness_factor": 1.2}, "factor (torchvision 'brightness_factor')"),
             ("mixup", {"mixup_alpha": 0.2, "num_classes": 3}, "alpha (timm 'mixup_alpha')"),
             ("random_crop", {"padding_mode": "edge"}, "pad_mode (torchvision 'padding_mode')"),
             ("random_erasing", {"min_aspekt": 0.5}, "'min_aspect', 'max_aspect', 'min_area'")]
    for name, params, hint in cases:
        with pytest.raises(ParamError) as info:
            augjax.get_op(name).bind(**params)
        assert f"did you mean {hint}?" in str(info.value), str(info.value)


def test_param_aliases_forms():
    assert Param(0.5, aliases={"probability": "timm"}).aliases == (("probability", "timm"),)
    assert Param(0.5, aliases=("prob",)).aliases == (("prob", ""),)
    with pytest.raises(ValueError, match="aliases must be parameter names"):
        Param(0.5, aliases=("not a name",))
    from augjax._core.param import suggest

    assert suggest({"p": Param(0.5, aliases=("prob",))}, "prob") == "did you mean p (alias 'prob')?"
    assert suggest({"p": Param(0.5)}, "zzz") == ""


# -- exclusive bounds ---------------------------------------------------------------------------
def test_exclusive_bounds_are_shown_and_enforced():
    p = Param(1.0, low=0.0, low_exclusive=True)
    assert p.interval == "(0, inf)" and p.describe_range() == "a finite number in (0, inf)"
    assert p.check("op", "x", 1e-12) == 1e-12
    with pytest.raises(ParamError, match=r"expects a finite number in \(0, inf\), got 0 "
                                         r"\(must be > 0\)"):
        p.check("op", "x", 0)
    q = Param((0.2, 0.5), kind="pair", low=0.0, high=1.0, high_exclusive=True)
    assert q.interval == "[0, 1)"
    assert q.check("op", "x", (0.0, 0.999)) == (0.0, 0.999)
    with pytest.raises(ParamError, match="must be < 1"):
        q.check("op", "x", (0.5, 1.0))
    assert Param(0.0).interval == "(-inf, inf)"
    with pytest.raises(ValueError, match="low_exclusive=True needs a finite low"):
        Param(1.0, low_exclusive=True)


def test_catalog_ranges_that_must_be_positive_say_so(capsys):
    with pytest.raises(ParamError, match=r"min_aspect' expects a finite number in \(0, inf\)"):
        augjax.ops.random_erasing.bind(min_aspect=0.0)
    for op, params in (("random_resized_crop", dict(size=8, ratio=(0.0, 1.0))),
                       ("affine", dict(scale=(0.0, 1.0))), ("normalize", dict(std=(0.2, 0.0, 0.2))),
                       ("random_erasing", dict(max_aspect=0.0))):
        with pytest.raises(ParamError, match=r"\(0, inf\)"):
            augjax.get_op(op).bind(**params)
    assert main(["info", "random_erasing", "--json"]) == 0
    params = json.loads(capsys.readouterr().out)["params"]
    assert params["min_aspect"]["interval"] == "(0, inf)"
    assert params["min_aspect"]["low_exclusive"] is True
    assert params["p"]["interval"] == "[0, 1]" and params["p"]["aliases"] == {"probability": "timm"}
    assert main(["info", "random_erasing"]) == 0
    assert "min_aspect: a finite number in (0, inf)" in capsys.readouterr().out
