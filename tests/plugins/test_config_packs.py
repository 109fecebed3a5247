"""Configs keep pack identity: a pack's op is written as ``"distribution:name"`` and loads as
that pack's op, or is refused with a typed error; never another pack's op of the same name.
Real distributions on a temporary ``sys.path`` (``plugin_site``), read through the global
registry as ``augjax.from_json`` does."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import augjax
from augjax.errors import (
    OpDisabledError,
    OpIncompatibleError,
    OpNotFoundError,
    OpPackMismatchError,
    ParamError,
    PluginLoadError,
)
from augjax.testing import write_distribution

#: Two packs register ``twin_op``; each fills the image with its own value, so the pixels say
#: which pack's op ran.
TWIN = """
import jax.numpy as jnp
import augjax
from augjax import Param


@augjax.op("twin_op", params={{"amount": Param(0.0, low=0.0, high=1.0, neutral=0.0)}},
           dtypes=("float32",))
def twin_op(image, params, *, amount):
    '''Fills the image with {value} (a test op).'''
    return jnp.full_like(image, {value})
"""

X = np.full((2, 4, 4, 3), 0.5, np.float32)


def write_twins(site, which=("pack-a", "pack-b")):
    dirs = {}
    for dist, value in (("pack-a", 0.25), ("pack-b", 0.75)):
        if dist in which:
            mod = dist.replace("-", "_") + "_twin"
            dirs[dist] = write_distribution(site, dist, "1.0", ops={"twin_op": f"{mod}:twin_op"},
                                            modules={f"{mod}.py": TWIN.format(value=value)})
    augjax.refresh()
    return dirs


def pixel(step) -> float:
    return float(np.asarray(step(X))[0, 0, 0, 0])


def test_a_packs_op_is_written_with_its_distribution(global_registry, site):
    write_twins(site)
    spec = augjax.get_op("pack-a:twin_op")
    d = augjax.to_dict(spec.bind(amount=0.5))
    assert d["name"] == "pack-a:twin_op"
    back = augjax.from_dict(d)
    assert back.spec is spec and pixel(back) == 0.25
    # nested anywhere, and next to augjax's own ops (which keep their plain names)
    chain = augjax.compose(augjax.ops.flip, augjax.random_choice([spec, augjax.get_op(
        "pack-b:twin_op")]))
    text = augjax.to_json(chain)
    names = [s["name"] for s in json.loads(text)["steps"][1]["ops"]]
    assert names == ["pack-a:twin_op", "pack-b:twin_op"]
    assert json.loads(text)["steps"][0]["name"] == "flip"
    assert augjax.from_json(text) == chain


def test_a_unique_pack_op_is_written_qualified_too(global_registry, site):
    """Only pack-a is installed: its op is asked for by the plain name, and still written as
    pack-a's, so that a machine with another pack's ``twin_op`` cannot load it silently."""
    write_twins(site, which=("pack-a",))
    text = augjax.to_json(augjax.get_op("twin_op"))
    assert json.loads(text)["name"] == "pack-a:twin_op"
    assert pixel(augjax.from_json(text)) == 0.25


def test_prefer_does_not_change_what_a_config_builds(global_registry, site, monkeypatch):
    write_twins(site)
    text = augjax.to_json(augjax.get_op("pack-a:twin_op"))
    monkeypatch.setenv("AUGJAX_PREFER", "twin_op=pack-b")
    augjax.refresh()
    assert pixel(augjax.get_op("twin_op")) == 0.75  # the plain name now means pack-b's op
    back = augjax.from_json(text)
    assert back.spec is augjax.get_op("pack-a:twin_op") and pixel(back) == 0.25


def test_a_machine_with_only_the_other_pack_refuses_the_config(global_registry, site):
    dirs = write_twins(site)
    text = augjax.to_json(augjax.compose(augjax.ops.flip, augjax.get_op("pack-a:twin_op")))
    shutil.rmtree(dirs["pack-a"])  # pack-a uninstalled: only pack-b's twin_op is left
    augjax.refresh()
    assert "twin_op" in augjax.list_ops()
    with pytest.raises(OpPackMismatchError) as info:
        augjax.from_json(text)
    err = info.value
    assert isinstance(err, OpNotFoundError)
    assert (err.op, err.wanted, err.found) == ("twin_op", "pack-a", ("pack-b:twin_op",))
    msg = str(err)
    for words in ("config.steps[1]", "'twin_op'", "'pack-a'", "'pack-b:twin_op'",
                  "not installed"):
        assert words in msg, (words, msg)


def test_asking_for_an_op_a_pack_does_not_register_names_the_pack_that_does(
        global_registry, site):
    write_twins(site)
    write_distribution(site, "pack-c", "1.0", ops={"other_op": "pack_c_other:other_op"},
                       modules={"pack_c_other.py": TWIN.format(value=0.5).replace(
                           "twin_op", "other_op")})
    augjax.refresh()
    with pytest.raises(OpPackMismatchError, match="pack-c.* registers no op 'twin_op'") as info:
        augjax.get_op("pack-c:twin_op")
    assert info.value.found == ("pack-a:twin_op", "pack-b:twin_op")
    with pytest.raises(OpNotFoundError) as info:  # nobody registers it: not a mismatch
        augjax.get_op("pack-c:no_such_op")
    assert not isinstance(info.value, OpPackMismatchError)


def test_a_disabled_pack_gives_op_disabled_error_from_from_json(global_registry, site,
                                                                 monkeypatch):
    write_twins(site)
    text = augjax.to_json(augjax.random_apply(augjax.get_op("pack-a:twin_op"), 0.5))
    monkeypatch.setenv("AUGJAX_DISABLE_PLUGINS", "pack-a")
    augjax.refresh()
    with pytest.raises(OpDisabledError) as info:
        augjax.from_json(text)
    err = info.value
    assert (err.op, err.distribution) == ("twin_op", "pack-a")
    assert "config.op" in str(err) and "AUGJAX_DISABLE_PLUGINS" in str(err)


def test_an_incompatible_pack_gives_op_incompatible_error_from_from_json(global_registry, site):
    write_distribution(site, "old-pack", "1.0", ops={"old_op": "old_pack_old:old_op"},
                       modules={"old_pack_old.py": TWIN.format(value=0.5).replace(
                           "twin_op", "old_op").replace("dtypes=",
                                                        "api_version='9.0', dtypes=")})
    augjax.refresh()
    config = {"augjax_config": 1, "type": "op", "name": "old-pack:old_op"}
    with pytest.raises(OpIncompatibleError, match="9.0"):
        augjax.from_dict(config)
    assert issubclass(OpIncompatibleError, PluginLoadError)


def test_an_unregistered_op_with_a_registered_name_is_not_written(global_registry, site):
    """A config names ops by their registered name; an op declared in a script under the name
    of a registered (loaded) op would load as that op, so writing it is refused."""
    write_twins(site, which=("pack-a",))
    registered = augjax.get_op("twin_op")

    @augjax.op("twin_op")
    def impostor(image, params):
        """Returns the image."""
        return image

    assert impostor is not registered
    with pytest.raises(ParamError, match="not the registered op"):
        augjax.to_dict(impostor)

    @augjax.op("script_only_op")
    def script_only(image, params):
        """Returns the image."""
        return image

    assert augjax.to_dict(script_only)["name"] == "script_only_op"  # as before: its own name
