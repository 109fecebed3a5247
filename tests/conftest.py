"""Shared fixtures. GPU tests (``@pytest.mark.gpu``) are skipped, with the reason, where JAX
sees no GPU or DALI is missing; run them on the GPU machine with ``pytest -m gpu``."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile

import pytest

#: Set to a folder to keep the JAX compilation cache of the test session there (and reuse it in
#: the next session: the inner loop then compiles only what changed). Unset: a temporary folder
#: for this session, shared by its xdist workers, removed at the end.
CACHE_ENV = "AUGJAX_TEST_CACHE_DIR"
_OWN_CACHE: list[str] = []


def _session_cache_dir(config) -> str:
    given = os.environ.get(CACHE_ENV)
    if given:
        return given
    if not _OWN_CACHE:
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="augjax-test-jax-cache-"))
    return _OWN_CACHE[0]


def pytest_configure(config):
    """One persistent JAX compilation cache for the session, shared by the xdist workers:
    the per-module clearing below drops compiled programs from memory, and without a disk cache
    every module (and every worker) compiled the same small programs again. Only JAX's
    configuration is set here (augjax's own cache switches are left alone)."""
    workerinput = getattr(config, "workerinput", None)
    folder = workerinput["augjax_jax_cache"] if workerinput else _session_cache_dir(config)
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


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

    from augjax._program import array_program, seeded_program
    from augjax.dali._bridge import dali_function
    from augjax.testing import _dali as kit_dali

    with kit_dali._LOCK:
        kit_dali._CACHE.clear()
    for cache in (array_program, seeded_program, dali_function):
        cache.cache_clear()
    gc.collect()
    jax.clear_caches()
    gc.collect()


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


def pytest_collection_modifyitems(config, items):
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
