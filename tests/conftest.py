"""Shared fixtures. GPU tests (``@pytest.mark.gpu``) are skipped, with the reason, where JAX
sees no GPU or DALI is missing; run them on the GPU machine with ``pytest -m gpu``. TPU tests
(``@pytest.mark.tpu``) likewise where JAX sees no TPU: ``pytest -m tpu -p no:xdist``.

The tests are grouped by the room of the package they test (core, runtime, catalog, plugins,
compose, dali, reliability, cli); the shared helpers (``helpers``, ``plugin_site``) live here,
at the top, and are importable from every room."""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
pytest.register_assert_rewrite("plugin_site", "helpers")

pytest_plugins = ["plugin_site"]  # the site / global_registry fixtures

#: Set to a folder to keep the JAX compilation cache of the test session there (and reuse it in
#: the next session: the inner loop then compiles only what changed). Unset: a temporary folder
#: for this session, shared by its xdist workers, removed at the end.
CACHE_ENV = "AUGJAX_TEST_CACHE_DIR"
#: The augjax cache folder (``AUGJAX_CACHE_DIR``) of the processes the tests start, in the
#: session's cache folder.
PROCESS_CACHE = "processes"
_OWN_CACHE: list[str] = []


def _session_cache_dir(config) -> str:
    given = os.environ.get(CACHE_ENV)
    if given:
        return given
    if not _OWN_CACHE:
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="augjax-test-jax-cache-"))
    return _OWN_CACHE[0]


def pytest_configure(config):
    """CPU profile (``AUGJAX_TEST_PROFILE``, tests/suite_profile.py) and one persistent JAX
    compilation cache for the session, shared by the xdist workers:
    the per-module clearing below drops compiled programs from memory, and without a disk cache
    every module (and every worker) compiled the same small programs again. Only JAX's
    configuration is set here (augjax's own cache switches are left alone)."""
    import suite_profile

    if os.environ.get(suite_profile.ENV):
        config.pluginmanager.register(suite_profile.Recorder(os.environ[suite_profile.ENV]),
                                      "augjax_suite_profile")
    workerinput = getattr(config, "workerinput", None)
    folder = workerinput["augjax_jax_cache"] if workerinput else _session_cache_dir(config)
    # augjax's program store stays on (the default configuration): its programs are kept
    # beside this session's JAX cache and shared by the tests. A test that counts traces turns
    # it off itself (the ``no_program_store`` fixture).
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # The processes the tests start (examples and docs run as a user runs them, augjax's CLI)
    # share one augjax cache folder of their own for the session instead of the user's
    # ~/.cache/augjax: nothing of the run goes to ~ and a program one process compiled is there
    # for the next, on every worker. A test about the cache gives its processes a folder of
    # their own (or none).
    if not os.environ.get("AUGJAX_CACHE_DIR"):
        os.environ["AUGJAX_CACHE_DIR"] = os.path.join(folder, PROCESS_CACHE)
    # Python's cyclic collector: tracing and lowering allocate many short-lived objects, and at
    # the default thresholds (700, 10, 10) the collector ran ~2,300 times in 70 CPU-s of tests,
    # scanning JAX's, torch's and DALI's objects again each time (5% of the tests' CPU). Fewer
    # young collections; _release_compiled_programs still collects everything after each module
    # (the memory mappings of dropped executables), and pytest_collection_finish freezes what
    # the imports and the collection made (never garbage) out of those full collections.
    gc.set_threshold(*GC_THRESHOLDS)


#: Collector thresholds of the test processes (benchmarks/results/suite-time-cpu-2026-12-05.md).
GC_THRESHOLDS = (100_000, 50, 10)


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # xdist: hand the controller's cache folder to each worker
    node.workerinput["augjax_jax_cache"] = _session_cache_dir(node.config)


def pytest_unconfigure(config):
    if getattr(config, "workerinput", None) is None and _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE.pop(), ignore_errors=True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module: drop augjax's and JAX's compiled programs and the module's DALI
    pipelines. Every XLA CPU executable keeps memory mappings alive; over the ~1,700 tests they
    pass the kernel's vm.max_map_count (65,530) and the next compile aborts or segfaults
    (seen in CI at ~94% of the suite)."""
    yield
    import jax

    from augjax._runtime.execution.padding import wait_compiles
    from augjax._runtime.execution.program import (
        apply_program,
        array_program,
        sample_program,
        seeded_program,
    )
    from augjax.dali._bridge import dali_function
    from augjax.testing import _dali as kit_dali

    wait_compiles()  # a partial batch's own program compiling behind (padding's "recurring")
    with kit_dali._LOCK:
        kit_dali._CACHE.clear()
    for cache in (array_program, sample_program, apply_program, seeded_program, dali_function):
        cache.cache_clear()
    # One collection after JAX's caches are cleared frees as much as one before and one after
    # did (the same memory mappings left, measured) for one pass over the heap.
    jax.clear_caches()
    gc.collect()


@pytest.fixture(autouse=True)
def _unpadded_batches(monkeypatch):
    """Each batch size compiles its own program in the tests: many compare an op's output for
    a batch with its output for part of it, which padding (augjax._runtime.execution.padding, on by
    default) would run through the same program. tests/runtime/test_padding.py turns padding back
    on."""
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "0")


#: Rooms whose tests build their programs in this process for this process alone: augjax's
#: program store (on by default: each new program exported to disk so that a later process
#: skips its trace) is off in them, as padding is above. Exporting every first program cost
#: 9-12% of their CPU (tests/targets, core, test_crop and test_mix: 467 -> 426 CPU-s; test_geometry
#: and test_tone 67 -> 61), and almost none ran again from the store. The store keeps its
#: default in the other rooms (docs, examples, CLI, DALI, clips, views: their processes share
#: programs), in the conformance kit (every op, as a pack author runs it) and in the modules
#: marked ``program_store`` (the store's own tests, and batch history, whose programs run again
#: after it drops them); output with the store on, off, cold and
#: warm is compared bitwise in tests/reliability/test_cache_invariance.py. Child processes
#: keep the default either way (the switch is this process's only).
STORE_OFF_ROOMS = ("tests/catalog/", "tests/compose/", "tests/targets/", "tests/core/",
                   "tests/reliability/", "tests/runtime/")
STORE_ON_MODULES = ("tests/catalog/test_all_ops.py",)


@pytest.fixture(autouse=True)
def _program_store_off_in_process(request, monkeypatch):
    nodeid = request.node.nodeid
    if (nodeid.startswith(STORE_OFF_ROOMS) and not nodeid.startswith(STORE_ON_MODULES)
            and request.node.get_closest_marker("program_store") is None):
        from augjax._runtime.store import programs as program_store

        monkeypatch.setattr(program_store, "store_dir", lambda: None)


def _tpu_reason() -> str | None:
    try:
        import jax

        if any(d.platform == "tpu" for d in jax.devices()):
            return None
    except RuntimeError:
        pass
    return "needs a TPU (JAX sees none); run on a TPU machine with pytest -m tpu -p no:xdist"


def _gpu_reason() -> str | None:
    try:
        import jax

        if not any(d.platform == "gpu" for d in jax.devices()):
            return "needs a CUDA GPU (JAX sees none)"
    except RuntimeError:
        return "needs a CUDA GPU (JAX sees none)"
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        return "needs NVIDIA DALI"
    return None


def _fast_tier(items) -> None:
    """Marks slow the parameter sets that a test's ``@pytest.mark.fast_tier(*ids)`` leaves out
    of the fast tier (tests/tiers.py); an id that names none of the test's parameter sets stops
    the collection (a renamed parameter would otherwise drop the test from the tier unnoticed,
    or put all of it back)."""
    sets: dict[str, tuple[object, set[str]]] = {}
    for item in items:
        mark = item.get_closest_marker("fast_tier")
        if mark is None:
            continue
        param = item.callspec.id if hasattr(item, "callspec") else ""
        if param not in mark.args:
            item.add_marker(pytest.mark.slow)
        sets.setdefault(item.nodeid.partition("[")[0], (mark, set()))[1].add(param)
    for base, (mark, params) in sets.items():
        missing = set(mark.args) - params
        if len(params) > 1 and missing:  # one set: that test id alone was asked for
            raise pytest.UsageError(f"{base}: @pytest.mark.fast_tier names no parameter set "
                                    f"{sorted(missing)} (collected: {sorted(params)})")


def pytest_collection_modifyitems(config, items):
    _fast_tier(items)
    for mark, reason in (("gpu", _gpu_reason()), ("tpu", _tpu_reason())):
        if reason is None:
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if mark in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def fork_server():
    """This test process's fork server (tests/forkrun.py), for the session: the docs' programs
    and commands and the examples' scripts run in processes forked from it, each as ``python
    *argv`` would run with the environment a test gives (``server.run(argv, cwd, env=...)``),
    without paying NumPy's, JAX's, augjax's, DALI's and PyTorch's imports again. Its own
    environment: this one with the checkout first on the path (what it imports is the
    checkout's augjax)."""
    from forkrun import ForkServer

    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    with ForkServer({**os.environ, "PYTHONPATH": path}) as server:
        yield server
