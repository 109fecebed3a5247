"""Shared fixtures. GPU tests (``@pytest.mark.gpu``) are skipped, with the reason, where JAX
sees no GPU or DALI is missing; run them on the GPU machine with ``pytest -m gpu``."""

from __future__ import annotations

import gc

import pytest


@pytest.fixture(autouse=True, scope="module")
def _release_pipelines():
    """Collect each module's DALI pipelines (and their worker threads) before the next module:
    the suite builds hundreds of them."""
    yield
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
