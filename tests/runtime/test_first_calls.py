"""First calls: a cold call compiles its apply program beside its sampler (on a helper thread,
augjax._runtime.execution.ahead) and compiles nothing twice; a warm process's call compiles nothing
(its key split included). benchmarks/first_calls.py measures the times."""

from __future__ import annotations

import threading
from pathlib import Path

import jax
import numpy as np
import pytest

import augjax
from augjax import ops
from store_process import run_with_store

COMPILE = "/jax/core/compile/backend_compile_duration"
HELPER = "augjax-compile-apply"


class Compiles:
    """JAX's backend compiles (a cache hit included) by thread, while in the block."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def _listen(self, name: str, secs: float, **_: object) -> None:
        if name == COMPILE:
            self.threads.append(threading.current_thread().name)

    def __enter__(self) -> Compiles:
        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc: object) -> None:
        jax.monitoring.unregister_event_duration_listener(self._listen)


# Shapes no other test uses: the programs' first calls are these tests'.
def _chain_call(x):
    return augjax.compose(ops.flip.bind(p=1.0), ops.invert)(x, key=jax.random.key(0))


def _views_call(x):
    views = augjax.views({"g": (2, augjax.compose(ops.flip.bind(p=1.0), ops.invert))})
    return views(x, key=jax.random.key(0))["g"][:, 1]


def _clips_call(x):
    clips = augjax.Clips(np.stack([x, x], axis=1))  # (N, 2, H, W, C)
    return augjax.compose(ops.flip.bind(p=1.0), ops.invert)(clips,
                                                            key=jax.random.key(0)).array[:, 1]


@pytest.mark.parametrize("call, shape", [(_chain_call, (3, 7, 5, 3)),
                                         (_views_call, (3, 5, 7, 3)),
                                         (_clips_call, (2, 7, 7, 3))],
                         ids=["chain", "views", "clips"])
def test_a_first_call_compiles_its_apply_program_beside_the_sampler(call, shape, monkeypatch):
    monkeypatch.setenv("AUGJAX_COMPILE_AHEAD", "1")  # however loaded the machine is
    x = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    with Compiles() as first:
        out = call(x)
    # the reference: flipped left-right and inverted, in NumPy
    np.testing.assert_array_equal(np.asarray(out), 255 - x[:, :, ::-1])
    assert first.threads.count(HELPER) == 1, first.threads  # the apply program, compiled once
    with Compiles() as again:
        np.testing.assert_array_equal(np.asarray(call(x)), 255 - x[:, :, ::-1])
    assert again.threads == []  # nothing compiled twice


def test_off_the_call_compiles_in_its_own_thread(monkeypatch):
    monkeypatch.setenv("AUGJAX_COMPILE_AHEAD", "0")
    x = np.random.default_rng(1).integers(0, 256, (2, 5, 5, 3), dtype=np.uint8)
    with Compiles() as first:
        out = _chain_call(x)
    np.testing.assert_array_equal(np.asarray(out), 255 - x[:, :, ::-1])
    assert HELPER not in first.threads and first.threads


def test_by_default_the_helper_runs_where_a_core_is_free(monkeypatch):
    from augjax._runtime.execution import ahead

    monkeypatch.delenv("AUGJAX_COMPILE_AHEAD", raising=False)
    monkeypatch.setattr(ahead.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(ahead.os, "getloadavg", lambda: (0.4, 0.0, 0.0))
    assert ahead.enabled()
    monkeypatch.setattr(ahead.os, "getloadavg", lambda: (1.0, 0.0, 0.0))  # a core's worth busy
    assert not ahead.enabled()
    monkeypatch.setattr(ahead.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(ahead.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert not ahead.enabled()  # one core: nothing to compile beside


def _list_views():
    blur = augjax.compose(ops.random_resized_crop.bind(size=8, scale=(0.3, 1.0)),
                          ops.flip.bind(p=1.0))
    return augjax.views({"a": (2, augjax.compose(ops.center_crop.bind(size=6), ops.invert)),
                         "b": (3, blur)})


def test_the_groups_of_views_on_a_list_compile_on_their_own_threads(monkeypatch):
    """Views on a list of images of different sizes run each group (its own programs) on a
    helper thread where a core is free, on a first call on those sizes: it compiles the second
    group there; a later call runs them in the caller's thread; the outputs are bitwise those of
    the groups run one after the other, and each group is its step on the list (a center crop
    + invert checked against NumPy)."""
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, shape, dtype=np.uint8)
              for shape in ((13, 11, 3), (9, 14, 3), (17, 10, 3))]
    key = jax.random.key(3)
    monkeypatch.setenv("AUGJAX_COMPILE_AHEAD", "1")
    views = _list_views()
    with Compiles() as first:
        together = views(images, key=key)
    assert "augjax-at-once" in first.threads, first.threads
    assert "MainThread" in first.threads, first.threads
    import augjax.ragged_views as ragged_views

    helpers = []
    monkeypatch.setattr(ragged_views, "at_once", lambda jobs: helpers.append(jobs) or [])
    again = views(images, key=key)  # the same sizes again: one thread, as before
    assert helpers == []
    for name in ("a", "b"):
        np.testing.assert_array_equal(np.asarray(again[name]), np.asarray(together[name]))
    monkeypatch.undo()
    monkeypatch.setenv("AUGJAX_COMPILE_AHEAD", "0")
    with Compiles() as later:
        alone = _list_views()(images, key=key)
    assert "augjax-at-once" not in later.threads
    for name in ("a", "b"):
        np.testing.assert_array_equal(np.asarray(together[name]), np.asarray(alone[name]))
    for i, image in enumerate(images):
        h, w = image.shape[:2]
        top, left = int(round((h - 6) / 2)), int(round((w - 6) / 2))
        want = 255 - image[top:top + 6, left:left + 6]
        for v in range(2):
            np.testing.assert_array_equal(np.asarray(together["a"][i, v]), want)


def test_at_once_keeps_the_jobs_order_and_raises_the_first_error(monkeypatch):
    from augjax._runtime.execution.ahead import at_once

    monkeypatch.setenv("AUGJAX_COMPILE_AHEAD", "1")
    names = at_once([lambda: threading.current_thread().name] * 3)
    assert names[0] == threading.current_thread().name and names[1:] == ["augjax-at-once"] * 2

    def fails(message):
        def job():
            raise ValueError(message)
        return job

    with pytest.raises(ValueError, match="second"):
        at_once([lambda: 1, fails("second"), fails("third")])
    with pytest.raises(ValueError, match="first"):
        at_once([fails("first"), fails("second")])
    monkeypatch.setenv("AUGJAX_COMPILE_AHEAD", "0")
    assert at_once([lambda: threading.current_thread().name] * 2) == [
        threading.current_thread().name] * 2


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


LIST_CHILD = r"""
import hashlib, json, sys
import jax, numpy as np
import augjax
from augjax import ops
rng = np.random.default_rng(3)
images = [rng.integers(0, 256, (h, w, 3), np.uint8) for h, w in ((40, 52), (61, 33), (47, 47))]
chain = augjax.compose(ops.random_resized_crop.bind(size=16), ops.flip.bind(p=0.5),
                       ops.color_jitter.bind(brightness=0.3))
key = augjax.keys_from_seeds(augjax.index_seeds([0, 1, 2], 0, 7))
out = np.asarray(chain(images, key=key))
one = np.asarray(chain(images[1:2], key=key[1:2]))  # one image, as a loader's worker calls it
print(json.dumps({"traces": augjax.trace_count(),
                  "digest": hashlib.sha256(out.tobytes() + one.tobytes()).hexdigest()}))
"""


def test_a_warm_process_runs_a_list_of_images_without_tracing(tmp_path: Path):
    """A list of images of different sizes (a loader worker's one-image list too): the plan and
    read programs are kept in the program store, so a second process traces nothing (it traced
    them in each process before) and gives the same bits as the first and as the store off."""
    script = tmp_path / "child.py"
    script.write_text(LIST_CHILD)
    cache = tmp_path / "cache"
    cold = run_with_store(script, cache, 0)
    warm = run_with_store(script, cache, 0)
    off = run_with_store(script, tmp_path / "off", 0, AUGJAX_PROGRAM_CACHE="0")
    assert cold["traces"] > 0 and warm["traces"] == 0, (cold, warm)
    assert cold["digest"] == warm["digest"] == off["digest"]


def test_a_numpy_record_and_an_array_share_one_loaded_program():
    """augjax.grain.RandomMap's first record of a shape goes through the checked call (the image
    a jax.Array), later ones through the programs directly (a NumPy image): one stored program,
    loaded and compiled once, not once per form of the input."""
    pytest.importorskip("grain")
    import augjax.grain
    from augjax._runtime.store.programs import load_count

    chain = augjax.compose(ops.flip.bind(p=1.0), ops.invert)
    record = augjax.grain.RandomMap(chain)
    image = np.random.default_rng(2).integers(0, 256, (9, 5, 3), dtype=np.uint8)
    seeds = np.array([[1, 2]], np.int32)
    np.testing.assert_array_equal(record.apply(image, seeds), 255 - image[:, ::-1])
    loads = load_count()
    with Compiles() as second:
        np.testing.assert_array_equal(record.apply(image, seeds), 255 - image[:, ::-1])
    assert second.threads == [] and load_count() == loads


def test_trace_count_counts_the_plan_and_read_of_a_list_once_per_canvas_bucket():
    chain = augjax.compose(ops.random_resized_crop.bind(size=16, scale=(0.95, 1.0)), ops.flip)
    rng = np.random.default_rng(5)
    # Crops of 95-100% of a (180..190)^2 image read regions of sides in (128, 192]: one canvas
    # bucket whatever the draw (bucket(): ..., 128, 192, ...).
    images = [rng.integers(0, 256, (h, 186, 3), np.uint8) for h in (181, 190)]
    before = augjax.trace_count()
    chain(images, key=jax.random.key(0))
    first = augjax.trace_count() - before
    assert first >= 2  # the plan (windows) and the read, at least
    chain(images[::-1], key=jax.random.key(1))  # same bucket, other draws: nothing traced
    assert augjax.trace_count() - before == first
