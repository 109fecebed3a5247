"""A plugin that hangs at import (REGISTRY.md R15): ``get_op``, ``AUGJAX_STRICT_PLUGINS=1`` and
``augjax list --all --load`` give a typed error after ``AUGJAX_PLUGIN_IMPORT_TIMEOUT`` seconds
instead of hanging, and the healthy ops keep working. Real distributions on a temporary
``sys.path``; in this process the hanging import waits on an event the test sets at the end,
so no thread outlives the test."""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np
import pytest
from plugin_site import op_source

import augjax
from augjax._plugins.loader import DEFAULT_IMPORT_TIMEOUT, Switches
from augjax._plugins.registry import Registry
from augjax.errors import PluginLoadError, PluginTimeoutError
from augjax.testing import write_distribution

#: The hanging module waits on this event (a module the ``gate`` fixture writes into the site).
GATE = "import threading\nEVENT = threading.Event()\n"
HANGING = "import hang_gate\nhang_gate.EVENT.wait()\n"
#: Longest a test waits for a call that should time out after 1 s (the loaded CI machine).
PATIENCE = 60


def write_packs(site, hanging: str = HANGING):
    write_distribution(site, "good-pack", "1.0", ops={"good_op": "good_mod:good_op"},
                       modules={"good_mod.py": op_source("good_op")})
    write_distribution(site, "hang-pack", "2.0", ops={
        "hang_op": "hang_mod:hang_op", "stuck_op": "hang_mod:stuck_op"},
        modules={"hang_mod.py": hanging + op_source("hang_op", "stuck_op")})


@pytest.fixture
def gate(site):
    """The event the hanging import waits on; set when the test ends (the import finishes)."""
    (site / "hang_gate.py").write_text(GATE)
    importlib.invalidate_caches()
    event = importlib.import_module("hang_gate").EVENT
    yield event
    event.set()


def bounded(fn, *args):
    """``fn(*args)`` in a helper thread, waited for at most PATIENCE seconds (a hang fails the
    test instead of hanging it)."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(fn, *args).result(timeout=PATIENCE)
    except FutureTimeout:
        pytest.fail(f"{getattr(fn, '__name__', fn)} still running after {PATIENCE} s: it hangs")
    finally:
        pool.shutdown(wait=False)


def raised(fn, *args):
    def call():
        try:
            fn(*args)
        except BaseException as err:  # noqa: BLE001 - returned for the assertions
            return err
        return None

    return bounded(call)


def assert_good(reg):
    x = np.arange(24, dtype=np.uint8).reshape(1, 2, 4, 3)
    np.testing.assert_array_equal(np.asarray(reg.get("good_op")(x)), x)
    assert reg.get("flip") is reg.get("augjax:flip")


def test_a_hanging_import_times_out_with_a_typed_error(site, gate, monkeypatch):
    write_packs(site)
    monkeypatch.setenv("AUGJAX_PLUGIN_IMPORT_TIMEOUT", "1")
    reg = Registry()
    start = time.monotonic()
    err = raised(reg.get, "hang_op")
    took = time.monotonic() - start
    assert isinstance(err, PluginTimeoutError) and isinstance(err, PluginLoadError), repr(err)
    assert (err.op, err.distribution, err.version, err.timeout) == ("hang_op", "hang-pack", "2.0",
                                                                    1.0)
    for words in ("did not finish within 1 s", "AUGJAX_PLUGIN_IMPORT_TIMEOUT", "hang_mod:hang_op"):
        assert words in str(err), (words, str(err))
    assert 1.0 <= took < PATIENCE
    record = reg.records("hang_op", include_all=True)[0]
    assert record.status == "failed" and "did not finish" in record.reason
    assert_good(reg)  # the healthy ops work while the import hangs in the background
    # asking again, or for another op of the hung module, fails at once
    start = time.monotonic()
    assert isinstance(raised(reg.get, "hang_op"), PluginTimeoutError)
    twin = raised(reg.get, "stuck_op")
    assert isinstance(twin, PluginTimeoutError) and "still being imported" in str(twin)
    assert time.monotonic() - start < 1.0
    # once the import finishes, refresh() retries the op and it loads
    gate.set()
    deadline = time.monotonic() + PATIENCE
    while "hang_mod" not in sys.modules or not hasattr(sys.modules["hang_mod"], "stuck_op"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    reg.refresh()
    assert reg.get("hang_op").name == "hang_op"


def test_strict_mode_reports_a_hanging_plugin_instead_of_hanging(site, gate, monkeypatch):
    write_packs(site)
    monkeypatch.setenv("AUGJAX_PLUGIN_IMPORT_TIMEOUT", "1")
    monkeypatch.setenv("AUGJAX_STRICT_PLUGINS", "1")
    monkeypatch.setenv("AUGJAX_PLUGINS", "good-pack,hang-pack")
    reg = Registry()
    err = raised(reg.list_ops)
    assert type(err) is PluginLoadError, repr(err)
    msg = str(err)
    assert "'hang_op' from hang-pack==2.0" in msg and "did not finish within 1 s" in msg
    assert "'stuck_op'" in msg and "good_op" not in msg  # the healthy op loaded
    assert isinstance(err.__cause__, TimeoutError)


def test_a_plugin_importing_in_its_own_thread_may_still_query_the_registry_in_strict_mode(
        global_registry, site, monkeypatch):
    """The plugin asks for another pack's op while it is imported (in its helper thread, while
    the strict pass holds its lock): no deadlock, and that op loads inline."""
    write_distribution(site, "good-pack", "1.0", ops={"good_op": "good_mod:good_op"},
                       modules={"good_mod.py": op_source("good_op")})
    source = ("import augjax\nOTHERS = augjax.list_ops()\nFLIP = augjax.get_op('flip')\n"
              "GOOD = augjax.get_op('good_op')\n")
    write_distribution(site, "query-pack", "1.0", ops={"query_op": "query_mod:query_op"},
                       modules={"query_mod.py": source + op_source("query_op")})
    monkeypatch.setenv("AUGJAX_STRICT_PLUGINS", "1")
    monkeypatch.setenv("AUGJAX_PLUGINS", "query-pack,good-pack")
    augjax.refresh()
    assert "query_op" in bounded(augjax.list_ops)
    assert sys.modules["query_mod"].GOOD is augjax.get_op("good_op")


def test_timeout_switch_values():
    env = "AUGJAX_PLUGIN_IMPORT_TIMEOUT"
    assert Switches.from_env({}).import_timeout == DEFAULT_IMPORT_TIMEOUT == 60.0
    assert Switches.from_env({env: "2.5"}).import_timeout == 2.5
    for off in ("0", "off", "none"):
        assert Switches.from_env({env: off}).import_timeout is None
    for bad in ("soon", "-1", "inf", "nan"):
        sw = Switches.from_env({env: bad})
        assert sw.import_timeout == DEFAULT_IMPORT_TIMEOUT and env in sw.notes[0], bad


def test_without_a_limit_the_import_runs_in_the_calling_thread(site, monkeypatch):
    source = ("import threading\nTHREAD = threading.current_thread().name\n"
              + op_source("where_op"))
    write_distribution(site, "where-pack", "1.0", ops={"where_op": "where_mod:where_op"},
                       modules={"where_mod.py": source})
    monkeypatch.setenv("AUGJAX_PLUGIN_IMPORT_TIMEOUT", "off")
    Registry().get("where_op")
    import threading

    assert sys.modules["where_mod"].THREAD == threading.current_thread().name


CLI = ("import sys; from augjax.cli.main import main; "
       "sys.exit(main(['list', '--all', '--load', '*_op']))")
STRICT = "import augjax; augjax.list_ops()"


@pytest.mark.fast_tier("list-all-load")
@pytest.mark.parametrize("code", [CLI, STRICT], ids=["list-all-load", "strict"])
def test_a_plugin_that_never_returns_does_not_hang_the_cli_or_strict_mode(site, code):
    """In a subprocess, with a plugin that sleeps forever at import: the command ends (the
    helper thread does not keep the process alive), with exit status 1 and the timeout named;
    the healthy op is listed as loaded."""
    write_packs(site, hanging="import time\nwhile True:\n    time.sleep(1)\n")
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "AUGJAX_PLUGIN_IMPORT_TIMEOUT": "2",
           "AUGJAX_PLUGINS": "good-pack,hang-pack"}
    if code == STRICT:
        env["AUGJAX_STRICT_PLUGINS"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, env=env, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "did not finish within 2 s" in out and "hang_op" in out, out
    if code == CLI:
        lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
        assert "loaded" in lines["good_op"] and "failed" in lines["hang_op"]
        assert "still being imported" in lines["stuck_op"]
    else:
        assert "PluginLoadError" in out and "AUGJAX_STRICT_PLUGINS" in out
