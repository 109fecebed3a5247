"""First calls: a warm process's call compiles nothing (its key split included).
benchmarks/first_calls.py measures the times."""

from __future__ import annotations

from pathlib import Path

from store_process import run_with_store

CHILD = r"""
import json, sys, threading
import jax, numpy as np
import augjax
from augjax import ops
key = jax.random.key(0)  # the user's own first compile, before augjax's
events = {"compiles": 0, "hits": 0}
def duration(name, secs, **kw):
    if name == "/jax/core/compile/backend_compile_duration":
        events["compiles"] += 1
def event(name, **kw):
    if name == "/jax/compilation_cache/cache_hits":
        events["hits"] += 1
jax.monitoring.register_event_duration_secs_listener(duration)
jax.monitoring.register_event_listener(event)
views = augjax.views({"g": (2, ops.flip.bind(p=0.5))})
x = np.zeros((2, 6, 4, 3), np.uint8)
jax.block_until_ready(views(x, key=key))
print(json.dumps({**events, "traces": augjax.trace_count()}))
"""


def test_a_warm_process_compiles_nothing_for_a_views_call(tmp_path: Path):
    """Every compile of a second process's first views call is read from JAX's cache: the
    key split too (it ran before the cache was on, and compiled in every process)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    cache = tmp_path / "cache"
    run_with_store(script, cache, 0)
    warm = run_with_store(script, cache, 0)
    assert warm["traces"] == 0, warm
    assert warm["compiles"] == warm["hits"] > 0, warm
