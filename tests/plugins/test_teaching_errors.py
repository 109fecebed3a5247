"""Errors that name the fix: a pack author's and a user's mistakes each get a typed
augjax error saying what is wrong and what to write instead; each test asserts the message's
content (these messages were, before: a signature with a dangling ``*, )``, "malformed" for the
README's own spelling, a kernel-signature error, a blamed default, bare ``KeyError``s, silence,
no warning, "missing dependency")."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import augjax
from augjax import Param, op
from augjax.errors import InputError, InputRangeWarning, OpDefinitionError, ParamError
from augjax.testing import write_distribution

X = np.zeros((2, 8, 8, 3), np.uint8)


def test_a_1x_kernel_with_the_key_second_gets_the_whole_migration():
    with pytest.raises(OpDefinitionError) as info:
        @op("old2", params={"strength": Param(0.5, low=0.0, high=1.0, magnitude=(0.0, 1.0))})
        def old2(image, key, *, strength):
            return image
    msg = str(info.value)
    assert "*, )" not in msg and "(image, key, *, strength)" in msg
    assert "authoring API 1.x" in msg and "authoring API 2.0" in msg
    assert "drop the key argument" in msg and "sample=fn" in msg
    assert "this op becomes def old2(image, params), reading ['strength'] from params" in msg
    assert "docs/PACKS.md" in msg


def test_a_per_sample_parameter_taken_as_a_keyword_is_named_and_no_dangling_star():
    with pytest.raises(OpDefinitionError) as info:
        @op("kw", params={"strength": Param((0.0, 0.5), kind="float_or_pair", low=0.0,
                                            high=1.0)})
        def kw(image, params, *, strength):
            return image
    msg = str(info.value)
    assert "must be def kw(image, params) for level='sample'" in msg and "*, )" not in msg
    assert "['strength'] are per-sample" in msg and "params['<name>']" in msg


def test_api_version_1x_as_the_docs_spell_it_is_incompatible_not_malformed(global_registry,
                                                                           site):
    src = ("from augjax import Param, op\n\n"
           "@op('legacy_op', params={'amount': Param(0.0, low=0.0, high=1.0, neutral=0.0)},\n"
           "    api_version=VERSION)\n"
           "def legacy_op(image, params, *, amount):\n"
           "    '''Returns the image.'''\n"
           "    return image\n")
    write_distribution(site, "legacy-pack", "1.0", ops={"legacy_op": "legacy_mod:legacy_op"},
                       modules={"legacy_mod.py": src.replace("VERSION", "'1.x'")})
    write_distribution(site, "typo-pack", "1.0", ops={"typo_op": "typo_mod:legacy_op"},
                       modules={"typo_mod.py": src.replace("VERSION", "'v2'").replace("'legacy_op'",
                                                                          "'typo_op'")})
    augjax.refresh()
    with pytest.raises(augjax.errors.OpIncompatibleError) as info:
        augjax.get_op("legacy_op")
    assert "written for authoring API 1.x (major 1)" in str(info.value)
    assert "malformed" not in str(info.value)
    with pytest.raises(augjax.errors.PluginLoadError) as info:
        augjax.get_op("typo_op")
    assert "malformed" in str(info.value) and "api_version='2.0'" in str(info.value)


def test_magnitude_on_a_str_param_is_a_param_error_not_a_signature_error():
    with pytest.raises(ParamError) as info:
        Param("a", choices=("a", "b"), magnitude=(0.0, 1.0))
    msg = str(info.value)
    assert "magnitude" in msg and "choices ('a', 'b')" in msg and "drop magnitude=" in msg


def test_low_above_high_blames_low_and_high_not_the_default():
    with pytest.raises(ParamError) as info:
        Param(0.5, low=1.0, high=0.0)
    msg = str(info.value)
    assert "low=1.0" in msg and "high=0.0" in msg and "low is above high" in msg
    assert "default" not in msg


def test_policy_apply_without_branches_names_the_missing_keys():
    policy = augjax.rand_augment()
    params = policy.sample(X, key=jax.random.key(0))
    del params["branches"]
    with pytest.raises(InputError) as info:
        policy.apply(X, params=params)
    assert "lacks key(s) ['branches']" in str(info.value)
    assert "rand_augment.sample" in str(info.value) and info.value.argument == "params"


def test_mixup_apply_with_only_lam_and_perm_names_the_missing_keys():
    mix = augjax.ops.mixup.bind(num_classes=3)
    labels = np.array([0, 1])
    params = mix.sample(X, labels, key=jax.random.key(0))
    with pytest.raises(InputError) as info:
        mix.apply(X, labels, params={k: params[k] for k in ("lam", "perm")})
    assert "lacks key(s) ['box', 'use_cutmix']" in str(info.value)


def test_flip_apply_with_vertical_params_under_the_default_config_is_an_error():
    flip = augjax.ops.flip
    with pytest.raises(InputError) as info:
        flip.apply(X, params={"vertical": np.array([True, True])})
    msg = str(info.value)
    assert "params['vertical']" in msg and "vertical=False" in msg and "vertical=True" in msg
    x = np.arange(2 * 8 * 8 * 3, dtype=np.uint8).reshape(2, 8, 8, 3)
    params = {"horizontal": np.array([False, False]), "vertical": np.array([True, False])}
    with pytest.raises(InputError, match="vertical=False"):
        flip.apply(x, params=params)  # complete, but contradicts the configuration
    out = flip.apply(x, params=params, vertical=True)  # the fix the message names
    np.testing.assert_array_equal(out[0], x[0, ::-1])
    np.testing.assert_array_equal(out[1], x[1])


def test_the_range_warning_fires_on_apply_as_on_a_call():
    x = np.full((2, 8, 8, 3), 200.0, np.float32)
    params = augjax.ops.flip.sample(x, key=jax.random.key(0))
    with pytest.warns(InputRangeWarning, match=r"flip: argument 'images' expects float images "
                      r"in \[0, 1\], got values in \[200, 200\]"):
        augjax.ops.flip.apply(x, params=params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        augjax.ops.flip.apply(x / 255.0, params=params)  # in range: silent


def test_a_packs_own_missing_module_is_not_a_missing_dependency(global_registry, site):
    write_distribution(site, "half-pack", "1.0", ops={"half_op": "half_pack.ops:half_op"},
                       modules={"half_pack/__init__.py": "",
                                "half_pack/ops.py": "from half_pack._helpers import TABLE\n"})
    augjax.refresh()
    with pytest.raises(augjax.errors.PluginLoadError) as info:
        augjax.get_op("half_op")
    msg = str(info.value)
    assert "missing dependency" not in msg
    assert "imports 'half_pack._helpers', a module of its own package" in msg
