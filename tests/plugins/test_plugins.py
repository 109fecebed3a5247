"""Faults injected with real distributions (REGISTRY.md section 3b, R1-R19): dist-info
directories and plugin modules written into a directory on ``sys.path``, scanned by a fresh
``Registry()`` (or ``augjax.refresh()``), nothing patched in ``importlib.metadata``."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest


from plugin_site import op_source, plugin_modules_imported

import augjax
import augjax._plugins.registry as registry_mod
from augjax import API_VERSION, Param
from augjax._plugins.registry import Registry
from augjax.errors import (
    AugjaxWarning,
    OpConflictError,
    OpDisabledError,
    OpIncompatibleError,
    OpNotFoundError,
    PluginLoadError,
)
from augjax.testing import write_distribution



def records_of(reg: Registry, dist: str) -> dict[str, object]:
    return {r.name: r for r in reg.records(include_all=True, distribution=dist)}


def good_and(site, bad_source: str, *, bad_name: str = "bad_op") -> Registry:
    """A healthy pack and a pack whose module is ``bad_source``; returns a fresh registry."""
    write_distribution(site, "good-pack", "1.0", ops={"good_op": "good_pack_mod:good_op"},
                       modules={"good_pack_mod.py": op_source("good_op")})
    write_distribution(site, "bad-pack", "2.3", ops={bad_name: f"bad_pack_mod:{bad_name}"},
                       modules={"bad_pack_mod.py": bad_source})
    return Registry()


def assert_healthy(reg: Registry) -> None:
    op = reg.get("good_op")
    x = np.arange(24, dtype=np.uint8).reshape(1, 2, 4, 3)
    np.testing.assert_array_equal(np.asarray(op(x)), x)
    assert reg.get("flip") is reg.get("augjax:flip")  # core ops are untouched


def assert_load_error(reg: Registry, name: str, cause: type[BaseException], *words: str):
    with pytest.raises(PluginLoadError) as info:
        reg.get(name)
    err = info.value
    assert isinstance(err.__cause__, cause)
    msg = str(err)
    for word in ("bad-pack==2.3", f"{name} = bad_pack_mod:{name}", *words):
        assert word in msg, (word, msg)
    assert (err.op, err.distribution, err.version) == (name, "bad-pack", "2.3")
    assert err.entry_point == f"bad_pack_mod:{name}"
    return err


# -- R1-R3: the plugin raises while it is imported --------------------------------------------
def test_missing_dependency_is_reported_and_other_ops_work(site):
    reg = good_and(site, "import augjax_test_no_such_dependency\n" + op_source("bad_op"))
    assert reg.records("bad_op")[0].status == "available"  # not imported by the scan
    assert_load_error(reg, "bad_op", ModuleNotFoundError,
                      "missing dependency 'augjax_test_no_such_dependency'")
    r = records_of(reg, "bad-pack")["bad_op"]
    assert r.status == "failed" and "required by bad-pack==2.3" in r.reason
    assert "bad_op" not in reg.list_ops()
    assert_healthy(reg)
    # asking again raises again, from the same cause, without importing again
    assert_load_error(reg, "bad_op", ModuleNotFoundError)


@pytest.mark.parametrize("statement, cause", [
    ("raise RuntimeError('plugin exploded')", RuntimeError),
    ("raise ValueError('plugin exploded')", ValueError),
    ("raise ImportError('plugin exploded')", ImportError),
    ("import sys; sys.exit('plugin exploded')", SystemExit),
    ("class PluginBug(Exception): pass\nraise PluginBug('plugin exploded')", Exception),
])
def test_plugin_raising_at_import(site, statement, cause):
    reg = good_and(site, statement + "\n" + op_source("bad_op"))
    err = assert_load_error(reg, "bad_op", cause, "plugin exploded")
    assert type(err.__cause__).__name__ in str(err)
    assert "bad_pack_mod" not in sys.modules  # the failed import left nothing behind
    assert_healthy(reg)


def test_keyboard_interrupt_propagates(site):
    reg = good_and(site, "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        reg.get("bad_op")
    assert_healthy(reg)


def test_wrong_kernel_signature_fails_with_both_signatures(site):
    source = ("import augjax\n@augjax.op('bad_op')\n"
              "def bad_op(image, *, extra):\n    '''Doc.'''\n    return image\n")
    reg = good_and(site, source)
    err = assert_load_error(reg, "bad_op", augjax.errors.OpDefinitionError)
    assert "def bad_op(image, params) for" in str(err) and "(image, *, extra)" in str(err)
    assert "*, )" not in str(err)  # no dangling keyword marker when nothing is static
    assert_healthy(reg)


# A pack written for authoring API 1.x: the kernel draws from a key it is given.
OLD_API_PACK = """
import jax
import jax.numpy as jnp
from augjax import Param, op


@op("bad_op", params={"delta": Param(0.1, low=0.0, high=1.0, neutral=0.0)})
def bad_op(key, image, *, delta):
    '''Adds U[-delta, delta] of the range.'''
    shift = jax.random.uniform(key, (), minval=-delta, maxval=delta)
    return jnp.clip(image + shift, 0.0, 1.0)
"""


def test_a_pack_written_for_the_old_kernel_api_gets_a_clear_error(site):
    """kernel(key, image, ...) is refused when the module is imported, with what to change: the
    2.0 kernel signature, params, the sample= hook, and where the docs explain it."""
    reg = good_and(site, OLD_API_PACK)
    err = assert_load_error(reg, "bad_op", augjax.errors.OpDefinitionError,
                            "the kernel takes a key", "authoring API 1.x",
                            "(key, image, *, delta)")
    cause = str(err.__cause__)
    for words in (f"authoring API {API_VERSION}", "kernel(image, params, *, <static params>)",
                  "params['<name>']", "sample=fn", "fn(key, meta, params, **config)", "docs/authoring/pack.md"):
        assert words in cause, (words, cause)
    assert_healthy(reg)


def test_the_old_kernel_api_is_refused_when_declared_too():
    with pytest.raises(augjax.errors.OpDefinitionError, match=r"takes a key .authoring API 1\.x"):
        @augjax.op("old_style", params={"delta": Param(0.1, low=0.0, high=1.0)})
        def old_style(key, image, *, delta):
            return image


# -- R4-R6: entry points that do not name an op --------------------------------------------------
@pytest.mark.parametrize("target, reason", [
    ("bad_pack_mod:CONSTANT", "is a int, not an augjax op"),
    ("bad_pack_mod:plain_function", "is a function, not an augjax op"),
    ("bad_pack_mod:other_op", "points to an op named 'other_op'"),
    ("bad_pack_mod:no_such_attribute", "module 'bad_pack_mod' has no attribute 'no_such_attribute'"),
    ("bad_pack_mod_missing:bad_op", "names module 'bad_pack_mod_missing', which cannot be found"),
])
def test_entry_point_not_naming_an_op(site, target, reason):
    source = op_source("other_op") + "CONSTANT = 3\n\ndef plain_function(image):\n    return image\n"
    write_distribution(site, "bad-pack", "2.3", ops={"bad_op": target},
                       modules={"bad_pack_mod.py": source})
    write_distribution(site, "good-pack", "1.0", ops={"good_op": "good_pack_mod:good_op"},
                       modules={"good_pack_mod.py": op_source("good_op")})
    reg = Registry()
    with pytest.raises(PluginLoadError) as info:
        reg.get("bad_op")
    assert reason in str(info.value) and "bad-pack==2.3" in str(info.value)
    assert records_of(reg, "bad-pack")["bad_op"].status == "failed"
    assert_healthy(reg)


@pytest.mark.parametrize("name, target, reason", [
    ("bad_op", "bad_pack_mod", "must be 'package.module:object'"),
    ("bad_op", "bad_pack_mod:", "is invalid"),
    ("bad_op", "bad pack:op", "is invalid"),
    ("Bad-Op", "bad_pack_mod:bad_op", "invalid op name 'Bad-Op'"),
])
def test_malformed_entry_point_fails_without_import(site, name, target, reason):
    write_distribution(site, "bad-pack", "2.3", ops={name: target},
                       modules={"bad_pack_mod.py": "raise AssertionError('must not import')\n"})
    reg = Registry()
    r = records_of(reg, "bad-pack")[name]
    assert r.status == "failed" and reason in r.reason
    assert name not in reg.list_ops()
    with pytest.raises(PluginLoadError, match="bad-pack==2.3"):
        reg.get(name)
    assert plugin_modules_imported(site) == []


# -- R7-R8: name conflicts -----------------------------------------------------------------------
def write_conflict(site):
    for dist, mod in (("pack-a", "pack_a_mod"), ("pack_B", "pack_b_mod")):
        write_distribution(site, dist, "1.0", ops={"dup_op": f"{mod}:dup_op"},
                           modules={f"{mod}.py": op_source("dup_op")})


def test_conflict_is_reported_never_resolved_silently(site):
    write_conflict(site)
    reg = Registry()
    both = reg.records("dup_op", include_all=True)
    assert [(r.distribution, r.status) for r in both] == [("pack-a", "conflict"),
                                                         ("pack_B", "conflict")]
    assert "'pack-b:dup_op'" in both[0].reason and "'pack-a:dup_op'" in both[1].reason
    with pytest.raises(OpConflictError) as info:
        reg.get("dup_op")
    assert info.value.candidates == ("pack-a:dup_op", "pack-b:dup_op")
    assert "pack-a==1.0" in str(info.value) and "pack_B==1.0" in str(info.value)
    assert plugin_modules_imported(site) == []  # neither imported until chosen
    assert reg.list_ops("dup*") == ["pack-a:dup_op", "pack-b:dup_op"]
    # the user picks one explicitly; the name stays in conflict
    a, b = reg.get("pack-a:dup_op"), reg.get("PACK_B:dup_op")
    assert a.kernel.__module__ == "pack_a_mod" and b.kernel.__module__ == "pack_b_mod"
    with pytest.raises(OpConflictError):
        reg.get("dup_op")


def test_prefer_resolves_a_conflict(site, monkeypatch):
    write_conflict(site)
    monkeypatch.setenv("AUGJAX_PREFER", "dup_op=pack-b")
    reg = Registry()
    assert reg.get("dup_op").kernel.__module__ == "pack_b_mod"
    status = {r.distribution: r.status for r in reg.records("dup_op", include_all=True)}
    assert status == {"pack-a": "conflict", "pack_B": "loaded"}
    assert "AUGJAX_PREFER picks 'pack-b:dup_op'" in reg.records("pack-a:*", include_all=True)[0].reason


def test_builtin_ops_are_never_shadowed(site, monkeypatch):
    write_distribution(site, "shadow-pack", "1.0", ops={"flip": "shadow_mod:flip"},
                       modules={"shadow_mod.py": op_source("flip")})
    monkeypatch.setenv("AUGJAX_PREFER", "flip=shadow-pack")
    reg = Registry()
    with pytest.warns(AugjaxWarning, match="cannot be shadowed"):
        reg.list_ops()
    assert reg.get("flip").kernel.__module__ == "augjax.catalog.geometry"
    shadow = reg.record("shadow-pack:flip")
    assert shadow.status == "conflict" and "built-in" in shadow.reason
    assert reg.get("shadow-pack:flip").kernel.__module__ == "shadow_mod"  # explicit choice


# -- R9-R10: the same distribution found twice ---------------------------------------------------
def test_same_dist_info_on_two_path_entries_is_one_op(site, tmp_path, monkeypatch):
    write_distribution(site, "twice-pack", "1.0", ops={"twice_op": "twice_mod:twice_op"},
                       modules={"twice_mod.py": op_source("twice_op")})
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    monkeypatch.syspath_prepend(str(copy))
    reg = Registry()
    recs = reg.records("twice_op", include_all=True)
    assert len(recs) == 1 and recs[0].status == "available"
    assert [str(copy), str(site)] == [str(p.rsplit("/", 1)[0])
                                      for p in (recs[0].location, *recs[0].duplicates)]
    assert reg.get("twice_op").name == "twice_op"


@pytest.mark.parametrize("stale_version", ["1.0", "0.9"])
def test_editable_plus_regular_install_is_one_op(site, tmp_path, monkeypatch, stale_version):
    # an editable checkout (setuptools develop: egg-info in the source tree, on sys.path) and a
    # regular install of the same distribution (dist-info in site-packages)
    src = tmp_path / "checkout"
    write_distribution(src, "Edit.Pack", stale_version, ops={"edit_op": "edit_mod:edit_op"},
                       modules={"edit_mod.py": op_source("edit_op")}, egg_info=True)
    write_distribution(site, "edit-pack", "1.0", ops={"edit_op": "edit_mod:edit_op"},
                       modules={"edit_mod.py": op_source("edit_op")}, editable=True)
    monkeypatch.syspath_prepend(str(src))
    reg = Registry()
    recs = reg.records("edit_op", include_all=True)
    assert len(recs) == 1 and recs[0].status == "available", recs
    assert recs[0].version == stale_version  # the first copy on the path wins, as for imports
    assert len(recs[0].duplicates) == 1
    assert reg.get("edit_op").kernel.__module__ == "edit_mod"


def test_stale_dist_info_without_metadata_is_skipped(site, tmp_path, monkeypatch):
    stale = tmp_path / "stale"
    write_distribution(stale, "stale-pack", "0.1", ops={"stale_op": "stale_mod:stale_op"},
                       metadata=False)
    (tmp_path / "empty" / "stale_pack-0.0.dist-info").mkdir(parents=True)
    write_distribution(site, "stale-pack", "1.0", ops={"stale_op": "stale_mod:stale_op"},
                       modules={"stale_mod.py": op_source("stale_op")})
    monkeypatch.syspath_prepend(str(tmp_path / "empty"))
    monkeypatch.syspath_prepend(str(stale))
    reg = Registry()
    with pytest.warns(AugjaxWarning, match="no readable METADATA"):
        reg.list_ops()
    recs = reg.records("stale_op", include_all=True)
    assert [(r.version, r.status) for r in recs] == [("1.0", "available")]
    assert reg.get("stale_op").name == "stale_op"


# -- R11: authoring-API versions -----------------------------------------------------------------
@pytest.mark.parametrize("api, words", [
    ("3.0", ["authoring API 3.0 (major 3)", f"supports API {API_VERSION}", "upgrade augjax"]),
    ("1.0", ["authoring API 1.0 (major 1)", "supports API 2.0 (major 2)",
             "install a bad-pack release built for API 2.x"]),
    ("0.3", ["authoring API 0.3 (major 0)", f"supports API {API_VERSION}",
             "install a bad-pack release built for API 2.x"]),
    ("one", ["malformed authoring API version 'one'", f"supports API {API_VERSION}"]),
])
def test_incompatible_api_version_is_refused(site, api, words):
    reg = good_and(site, op_source("bad_op", api=api))
    with pytest.raises(OpIncompatibleError) as info:
        reg.get("bad_op")
    for word in words:
        assert word in str(info.value)
    assert "bad-pack==2.3" in str(info.value)
    assert records_of(reg, "bad-pack")["bad_op"].status == "incompatible"
    assert_healthy(reg)


def test_newer_minor_api_loads_with_a_warning(site):
    reg = good_and(site, op_source("bad_op", api=f"{API_VERSION.split('.')[0]}.99"))
    with pytest.warns(AugjaxWarning, match="newer than this augjax"):
        assert reg.get("bad_op").name == "bad_op"


# -- R16: switches ---------------------------------------------------------------------------------
def write_two_packs(site):
    for dist, mod, name in (("pack-a", "pack_a_mod", "a_op"), ("pack-b", "pack_b_mod", "b_op")):
        write_distribution(site, dist, "1.0", ops={name: f"{mod}:{name}"},
                           modules={f"{mod}.py": op_source(name)})


def statuses(reg: Registry) -> dict[str, str]:
    return {r.name: r.status for r in reg.records("[ab]_op", include_all=True)}


def test_disable_autoload_keeps_core_ops_only(site, monkeypatch):
    write_two_packs(site)
    monkeypatch.setenv("AUGJAX_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = Registry()
    assert statuses(reg) == {"a_op": "disabled", "b_op": "disabled"}
    assert "a_op" not in reg.list_ops() and "flip" in reg.list_ops()
    assert all(r.is_core for r in reg.records())
    with pytest.raises(OpDisabledError, match="AUGJAX_DISABLE_PLUGIN_AUTOLOAD"):
        reg.get("a_op")
    assert reg.get("flip").name == "flip"
    assert plugin_modules_imported(site) == []
    # as with pytest, the allow list still loads what it names
    monkeypatch.setenv("AUGJAX_PLUGINS", "pack-a")
    reg = Registry()
    assert statuses(reg) == {"a_op": "available", "b_op": "disabled"}
    assert reg.get("a_op").name == "a_op"


def test_allow_and_deny_lists(site, monkeypatch):
    write_two_packs(site)
    monkeypatch.setenv("AUGJAX_PLUGINS", "PACK_B")
    assert statuses(Registry()) == {"a_op": "disabled", "b_op": "available"}
    monkeypatch.delenv("AUGJAX_PLUGINS")
    monkeypatch.setenv("AUGJAX_DISABLE_PLUGINS", "pack-a*,augjax")
    reg = Registry()
    with pytest.warns(AugjaxWarning, match="cannot be disabled"):
        reg.list_ops()
    assert statuses(reg) == {"a_op": "disabled", "b_op": "available"}
    assert "AUGJAX_DISABLE_PLUGINS" in reg.records("a_op", include_all=True)[0].reason
    assert reg.get("flip").name == "flip"  # augjax's own ops cannot be denied
    with pytest.raises(OpDisabledError):
        reg.get("pack-a:a_op")  # a qualified name does not bypass the deny list
    assert plugin_modules_imported(site) == []


def test_unknown_allow_list_entry_is_reported(site, monkeypatch):
    write_two_packs(site)
    monkeypatch.setenv("AUGJAX_PLUGINS", "pack-a,pakc-b")
    reg = Registry()
    with pytest.warns(AugjaxWarning, match="'pakc-b', which matches no installed distribution"):
        reg.list_ops()
    assert any("pakc-b" in note for note in reg.notes)


@pytest.mark.parametrize("value, disabled", [("0", False), ("", False), ("false", False),
                                             ("1", True), ("true", True), ("YES", True)])
def test_switch_values(site, monkeypatch, value, disabled):
    write_two_packs(site)
    monkeypatch.setenv("AUGJAX_DISABLE_PLUGIN_AUTOLOAD", value)
    assert (statuses(Registry())["a_op"] == "disabled") is disabled


def test_strict_mode_turns_plugin_failures_into_errors(site, monkeypatch):
    write_conflict(site)
    reg = good_and(site, "raise RuntimeError('plugin exploded')\n")
    assert reg.get("good_op").name == "good_op"  # lenient: the broken one is only a status
    monkeypatch.setenv("AUGJAX_STRICT_PLUGINS", "1")
    monkeypatch.setenv("AUGJAX_PLUGINS", "good-pack,bad-pack,pack-a,pack-b,nowhere")
    reg = Registry()
    for _ in range(2):  # every query raises until the problems are fixed
        with pytest.raises(PluginLoadError) as info:
            reg.list_ops()
        msg = str(info.value)
        assert "bad-pack==2.3" in msg and "plugin exploded" in msg
        assert "'dup_op'" in msg and "conflict" in msg and "'nowhere'" in msg
        assert isinstance(info.value.__cause__, RuntimeError)
    # strict mode with healthy plugins imports (and checks) every enabled plugin op up front
    monkeypatch.setenv("AUGJAX_PLUGINS", "good-pack")
    reg = Registry()
    assert "good_op" in reg.list_ops()
    assert reg.records("good_op")[0].status == "loaded"
    assert {r.status for r in reg.records(include_all=True) if r.is_core} <= {"available"}


# -- R15, listing: no plugin code runs -------------------------------------------------------------
def test_listing_and_cli_list_all_show_every_status(global_registry, site, capsys):
    from augjax.cli.main import main

    write_conflict(site)
    write_distribution(site, "bad-pack", "2.3", ops={
        "crash_op": "bad_mod:crash_op", "old_api_op": "bad_mod2:old_api_op",
        "fine_op": "fine_mod:fine_op"}, modules={
        "bad_mod.py": "raise RuntimeError('plugin exploded')\n",
        "bad_mod2.py": op_source("old_api_op", api="0.1"),
        "fine_mod.py": op_source("fine_op")})
    augjax.refresh()
    assert main(["list", "--all", "*_op"]) == 0
    before = capsys.readouterr().out
    assert plugin_modules_imported(site) == []
    rows = {line.split()[0]: line.split() for line in before.splitlines() if line.strip()}
    for name in ("crash_op", "old_api_op", "fine_op"):
        assert rows[name][1:3] == ["bad-pack==2.3", "available"]
    assert rows["pack-a:dup_op"][2] == rows["pack-b:dup_op"][2] == "conflict"
    for name in ("crash_op", "old_api_op", "fine_op"):
        try:
            augjax.get_op(name)
        except PluginLoadError:
            pass
    assert main(["list", "--all", "*_op"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "failed" in lines["crash_op"] and "plugin exploded" in lines["crash_op"]
    assert "incompatible" in lines["old_api_op"] and "0.1" in lines["old_api_op"]
    assert "loaded" in lines["fine_op"]
    assert "pack-a:dup_op" in out and "pack-b:dup_op" in out
    assert main(["list", "*_op"]) == 0  # without --all only usable ops (conflicts qualified)
    plain = capsys.readouterr().out
    assert "crash_op" not in plain and "fine_op" in plain and "pack-a:dup_op" in plain


def test_cli_list_in_a_subprocess_imports_no_plugin(site):
    source = "raise RuntimeError('imported during listing')\n" + op_source("loud_op")
    write_distribution(site, "loud-pack", "1.0", ops={"loud_op": "loud_mod:loud_op"},
                       modules={"loud_mod.py": source})
    code = ("import sys; from augjax.cli.main import main; rc = main(['list', '--all']); "
            "assert 'loud_mod' not in sys.modules; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "loud_op" in proc.stdout and "loud-pack==1.0" in proc.stdout


# -- R18: pip install during the process, then refresh() ------------------------------------------
@pytest.mark.slow
def test_refresh_after_pip_install_and_uninstall(global_registry, tmp_path, site):
    project = tmp_path / "project"
    (project / "refresh_pack_mod").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "refresh-pack"\nversion = "0.2.0"\n'
        '[project.entry-points."augjax.ops"]\nrefreshed_op = "refresh_pack_mod:refreshed_op"\n'
        '[tool.setuptools]\npackages = ["refresh_pack_mod"]\n')
    (project / "refresh_pack_mod" / "__init__.py").write_text(op_source("refreshed_op"))
    assert "refreshed_op" not in augjax.list_ops()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(site), str(project)],
                   check=True, capture_output=True, timeout=300)
    assert "refreshed_op" not in augjax.list_ops()  # the scan is memoised until refresh()
    augjax.refresh()
    assert "refreshed_op" in augjax.list_ops()
    op = augjax.get_op("refreshed_op")
    rec = augjax.op_records("refreshed_op")[0]
    assert (rec.distribution, rec.version, rec.status) == ("refresh-pack", "0.2.0", "loaded")
    # uninstall (what pip uninstall removes), refresh: gone; the op already obtained still works
    for path in site.glob("refresh_pack*"):
        shutil.rmtree(path)
    augjax.refresh()
    assert "refreshed_op" not in augjax.list_ops()
    with pytest.raises(OpNotFoundError):
        augjax.get_op("refreshed_op")
    x = np.full((1, 2, 2, 3), 7, np.uint8)
    np.testing.assert_array_equal(np.asarray(op(x)), x)


def test_refresh_picks_up_a_dist_info_written_later_and_keeps_loaded_ops(site):
    write_two_packs(site)
    reg = Registry()
    a = reg.get("a_op")
    assert "c_op" not in reg.list_ops()
    write_distribution(site, "pack-c", "1.0", ops={"c_op": "pack_c_mod:c_op"},
                       modules={"pack_c_mod.py": op_source("c_op")})
    reg.refresh()
    assert reg.get("c_op").name == "c_op"
    assert reg.get("a_op") is a and reg.records("a_op")[0].status == "loaded"


def test_refresh_retries_a_failed_op_once_its_dependency_appears(site):
    write_distribution(site, "dep-pack", "1.0", ops={"dep_op": "dep_mod:dep_op"},
                       modules={"dep_mod.py": "import late_dependency_mod\n" + op_source("dep_op")})
    reg = Registry()
    with pytest.raises(PluginLoadError, match="missing dependency 'late_dependency_mod'"):
        reg.get("dep_op")
    (site / "late_dependency_mod.py").write_text("VALUE = 1\n")
    reg.refresh()
    assert reg.get("dep_op").name == "dep_op"


# -- R19-R20: threads --------------------------------------------------------------------------------
def test_concurrent_first_use_imports_each_op_once(site, monkeypatch):
    counter = site / "imports.count"
    source = (f"import pathlib, time\n_c = pathlib.Path({str(counter)!r})\n"
              "_c.write_text(str(int(_c.read_text()) + 1) if _c.exists() else '1')\n"
              "time.sleep(0.3)\n" + op_source("th_a", "th_b"))
    write_distribution(site, "thread-pack", "1.0", ops={"th_a": "thread_mod:th_a",
                                                        "th_b": "thread_mod:th_b"},
                       modules={"thread_mod.py": source})
    calls: dict[str, int] = {}
    real = registry_mod.load_entry_point
    lock = threading.Lock()

    def counting(record):
        with lock:
            calls[record.name] = calls.get(record.name, 0) + 1
        return real(record)

    monkeypatch.setattr(registry_mod, "load_entry_point", counting)
    reg = Registry()
    barrier = threading.Barrier(16)

    def worker(i):
        barrier.wait()
        return reg.get("th_a" if i % 2 else "th_b")

    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(worker, range(16)))
    assert counter.read_text() == "1"
    assert calls == {"th_a": 1, "th_b": 1}
    assert len({id(g) for g in got[1::2]}) == 1 and len({id(g) for g in got[0::2]}) == 1


def test_refresh_concurrent_with_readers(site):
    write_two_packs(site)
    reg = Registry()
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                assert {"a_op", "b_op", "flip"} <= set(reg.list_ops())
                assert reg.get("a_op").name == "a_op"
                assert len(reg.records("*", include_all=True)) >= 3
                time.sleep(0)  # let the refreshing thread in: readers interleave, not starve it
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for _ in range(15):
        reg.refresh()
    stop.set()
    for t in threads:
        t.join()
    assert errors == []


def test_a_finished_import_thread_never_makes_a_new_thread_look_circular(site):
    """The import thread marks the record it imports; once it has exited, the next new thread
    often gets its ident (pthreads reuse them). That thread loading the op is not a circular
    import (CI once failed test_refresh_concurrent_with_readers this way)."""
    from augjax._plugins.timed_import import load_with_timeout

    write_two_packs(site)
    reg = Registry()
    record = reg.record("a_op")
    load_with_timeout(record, 30.0, lambda r: ("failed", "not loaded here", None, None))
    dead = record._loading  # the marker the exited import thread left (the registry clears it)
    outcomes: list[tuple[bool, object]] = []

    def new_thread() -> None:
        same_ident = threading.get_ident() == getattr(dead, "ident", dead)
        try:
            outcomes.append((same_ident, reg.get("a_op").name))
        except BaseException as err:  # noqa: BLE001 - asserted below
            outcomes.append((same_ident, err))

    for _ in range(5):  # one of them usually reuses the dead thread's ident
        t = threading.Thread(target=new_thread)
        t.start()
        t.join()
    assert [name for _, name in outcomes] == ["a_op"] * 5, outcomes


def test_a_plugin_asking_for_itself_while_importing_fails_clearly(global_registry, site):
    source = op_source("self_op") + "\naugjax.get_op('self_op')\n"
    write_distribution(site, "self-pack", "1.0", ops={"self_op": "self_mod:self_op"},
                       modules={"self_mod.py": source})
    augjax.refresh()
    with pytest.raises(PluginLoadError) as info:
        augjax.get_op("self_op")
    assert "circular import" in str(info.value) and "self-pack==1.0" in str(info.value)
    assert isinstance(info.value.__cause__, PluginLoadError)


def test_a_plugin_may_query_the_registry_while_importing(global_registry, site):
    source = "import augjax\nOTHERS = augjax.list_ops()\nFLIP = augjax.get_op('flip')\n"
    write_distribution(site, "query-pack", "1.0", ops={"query_op": "query_mod:query_op"},
                       modules={"query_mod.py": source + op_source("query_op")})
    augjax.refresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op = augjax.get_op("query_op")
    assert "query_op" in sys.modules["query_mod"].OTHERS and op.name == "query_op"
