"""The registry's API: records and statuses, lookup by plain and qualified names, patterns,
environment switch parsing, and the guarantee that listing imports no plugin module."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


from plugin_site import op_source, plugin_modules_imported

import augjax
from augjax._plugins.registry import STATUSES, Registry, natural_key
from augjax._plugins.loader import Switches, norm_dist
from augjax.errors import OpNotFoundError
from augjax.testing import write_distribution



def many_packs(site, n_dists: int = 10, per_dist: int = 5) -> list[str]:
    """``n_dists`` distributions of ``per_dist`` ops each; every module raises if imported."""
    names = []
    for d in range(n_dists):
        ops = {f"many{d}_op{i}": f"many_mod{d}:many{d}_op{i}" for i in range(per_dist)}
        write_distribution(site, f"many-pack{d}", f"0.{d}", ops=ops, modules={
            f"many_mod{d}.py": "raise RuntimeError('a plugin module was imported')\n"})
        names += ops
    return names


def test_listing_imports_none_of_the_plugin_modules(global_registry, site, capsys):
    from augjax.cli.main import main

    names = many_packs(site)
    augjax.refresh()
    before = set(sys.modules)
    assert set(names) <= set(augjax.list_ops())
    assert set(names) <= set(augjax.list_ops("many*"))
    assert len(augjax.op_records("many*", include_all=True)) == len(names)
    assert set(names) <= set(dir(augjax.ops))
    assert main(["list", "--all"]) == 0 and main(["list", "--json", "many*"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in names)
    assert plugin_modules_imported(site) == []
    new = set(sys.modules) - before
    assert not [m for m in new if m.startswith("many_mod")], new
    assert {r.status for r in augjax.op_records("many*", include_all=True)} == {"available"}


def test_records_carry_distribution_version_entry_point_and_location(site):
    write_distribution(site, "Rec_Pack", "3.1.4", ops={"rec_op": "rec_mod:rec_op"},
                       modules={"rec_mod.py": op_source("rec_op")})
    reg = Registry()
    (r,) = reg.records("rec_op")
    assert (r.name, r.distribution, r.version, r.entry_point) == (
        "rec_op", "Rec_Pack", "3.1.4", "rec_mod:rec_op")
    assert r.qualified_name == "rec-pack:rec_op" and not r.is_core
    assert r.location.endswith("Rec_Pack-3.1.4.dist-info")
    assert r.status == "available" and r.reason == "" and r.spec is None
    d = r.as_dict()
    assert json.loads(json.dumps(d)) == d
    assert set(d) >= {"name", "qualified_name", "distribution", "version", "entry_point",
                      "status", "reason", "location", "duplicates"}
    spec = reg.get("rec_op")
    assert r.status == "loaded" and r.spec is spec
    assert reg.get("rec-pack:rec_op") is spec and reg.get("REC.PACK:rec_op") is spec
    assert set(STATUSES) == {"available", "loaded", "failed", "incompatible", "disabled",
                             "conflict"}


def test_core_ops_are_records_of_augjax():
    reg = Registry()
    flip = reg.record("flip")
    assert flip.is_core and flip.distribution == "augjax" and flip.qualified_name == "augjax:flip"
    assert flip.entry_point == "augjax.catalog.geometry:flip"
    assert reg.get("augjax:flip") is reg.get("flip")


def test_patterns_distribution_filter_and_natural_order(site):
    write_distribution(site, "order-pack", "1.0", ops={
        f"ord_op{i}": f"ord_mod:ord_op{i}" for i in (10, 2, 1)}, modules={
        "ord_mod.py": op_source("ord_op1", "ord_op2", "ord_op10")})
    reg = Registry()
    assert reg.list_ops("ord_*") == ["ord_op1", "ord_op2", "ord_op10"]
    assert reg.list_ops(distribution="order_pack") == ["ord_op1", "ord_op2", "ord_op10"]
    assert [r.name for r in reg.records("order-pack:*")] == ["ord_op1", "ord_op2", "ord_op10"]
    assert reg.list_ops("nothing*") == []
    assert sorted(["op10", "op2", "op1"], key=natural_key) == ["op1", "op2", "op10"]


def test_unknown_names_suggest_close_matches(site):
    write_distribution(site, "near-pack", "1.0", ops={"near_op": "near_mod:near_op"},
                       modules={"near_mod.py": op_source("near_op")})
    reg = Registry()
    with pytest.raises(OpNotFoundError) as info:
        reg.get("naer_op")
    assert info.value.suggestions[0] == "near_op" and "did you mean 'near_op'" in str(info.value)
    assert isinstance(info.value, LookupError) and isinstance(info.value, AttributeError)
    with pytest.raises(OpNotFoundError) as info:
        reg.get("other-pack:near_op")
    assert "registered as 'near-pack:near_op'" in str(info.value)
    assert info.value.suggestions == ("near-pack:near_op",)


def test_registry_with_an_explicit_path_sees_only_that_path(site, tmp_path):
    other = tmp_path / "other"
    write_distribution(other, "path-pack", "1.0", ops={"path_op": "path_mod:path_op"})
    write_distribution(site, "site-pack", "1.0", ops={"site_op": "site_mod:site_op"})
    reg = Registry(path=[str(other)])
    assert reg.list_ops() == ["path_op"]


def test_augjax_ops_attribute_resolves_plugin_ops(global_registry, site):
    write_distribution(site, "attr-pack", "1.0", ops={"attr_op": "attr_mod:attr_op"},
                       modules={"attr_mod.py": op_source("attr_op")})
    augjax.refresh()
    assert augjax.ops.attr_op is augjax.get_op("attr_op")
    assert not hasattr(augjax.ops, "attr_opp")


def test_switches_from_env():
    s = Switches.from_env({
        "AUGJAX_DISABLE_PLUGIN_AUTOLOAD": "True", "AUGJAX_PLUGINS": " A_b , c.d ,",
        "AUGJAX_DISABLE_PLUGINS": "x*", "AUGJAX_PREFER": "flip=My_Pack, bad, =x",
        "AUGJAX_STRICT_PLUGINS": "0"})
    assert s == Switches(autoload=False, allow=("a-b", "c-d"), deny=("x*",),
                         prefer={"flip": "my-pack"}, strict=False)
    assert Switches.from_env({}) == Switches()
    assert norm_dist("Augjax__Contrib.x") == "augjax-contrib-x"


def test_cli_list_imports_neither_plugins_nor_jax(site):
    names = many_packs(site, n_dists=3, per_dist=4)
    code = ("import sys; from augjax.cli.main import main; rc = main(['list', '--all']); "
            "bad = [m for m in sys.modules if m.startswith(('many_mod', 'jax', 'augjax.catalog.'))];"
            " assert not bad, bad; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert all(name in proc.stdout for name in names)


def test_builtins_load_from_a_source_tree_without_install_metadata(monkeypatch):
    """A checkout on PYTHONPATH with no installed metadata still has augjax's own ops (read
    from the pyproject.toml beside the package), and they work."""
    import augjax._plugins.loader as load

    real = load.importlib_metadata.distributions

    def without_augjax(**kwargs):
        return [d for d in real(**kwargs) if norm_dist(d.metadata["Name"] or "") != "augjax"]

    monkeypatch.setattr(load.importlib_metadata, "distributions", without_augjax)
    reg = Registry()
    names = reg.list_ops()
    assert {"flip", "rotate", "mixup", "normalize"} <= set(names)
    record = reg.record("flip")
    assert record.distribution == "augjax" and record.version.endswith("+source")
    spec = reg.get("flip")
    assert spec.name == "flip" and callable(spec)
    from pathlib import Path

    import tomllib

    declared = tomllib.loads((Path(augjax.__file__).parent.parent / "pyproject.toml")
                             .read_text())["project"]["entry-points"]["augjax.ops"]
    assert {r.name for r in reg.records() if r.is_core} == set(declared)


def test_missing_builtins_say_how_to_register_them(monkeypatch):
    import augjax._plugins.loader as load

    monkeypatch.setattr(load, "source_tree_builtins", lambda root=None: [])
    real = load.importlib_metadata.distributions
    monkeypatch.setattr(load.importlib_metadata, "distributions", lambda **kw: [
        d for d in real(**kw) if norm_dist(d.metadata["Name"] or "") != "augjax"])
    with pytest.raises(OpNotFoundError, match="pip install -e ."):
        Registry().get("flip")
