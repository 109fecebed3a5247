"""Shared fixtures. GPU tests (``@pytest.mark.gpu``) are skipped, with the reason, where JAX
sees no GPU or DALI is missing; run them on the GPU machine with ``pytest -m gpu``.

The tests are grouped by the room of the package they test (core, runtime, catalog, plugins,
compose, dali, reliability, cli); the shared helpers (``helpers``, ``plugin_site``) live here,
at the top, and are importable from every room."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
pytest.register_assert_rewrite("plugin_site", "helpers")

pytest_plugins = ["plugin_site"]  # the site / global_registry fixtures


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module: drop augjax's and JAX's compiled programs and the module's DALI
    pipelines. Every XLA CPU executable keeps memory mappings alive; over the ~1,700 tests they
    pass the kernel's vm.max_map_count (65,530) and the next compile aborts or segfaults
    (seen in CI at ~94% of the suite)."""
    yield
    import jax

    from augjax._runtime.program import (
        apply_program,
        array_program,
        sample_program,
        seeded_program,
    )
    from augjax.dali._bridge import dali_function
    from augjax.testing import _dali as kit_dali

    with kit_dali._LOCK:
        kit_dali._CACHE.clear()
    for cache in (array_program, sample_program, apply_program, seeded_program, dali_function):
        cache.cache_clear()
    gc.collect()
    jax.clear_caches()
    gc.collect()


@pytest.fixture(autouse=True)
def _unpadded_batches(monkeypatch):
    """Each batch size compiles its own program in the tests: many compare an op's output for
    a batch with its output for part of it, which padding (augjax._runtime.padding, on by default)
    would run through the same program. tests/test_padding.py turns padding back on."""
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "0")


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
