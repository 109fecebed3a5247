"""Executables kept beside the stored programs (augjax._runtime.store.executables), in fresh
processes: a warm process loads them instead of lowering (the same bits as a process without
any cache and one without them), and JAX's cache does not keep a second copy; a damaged file is refused with one warning and written again;
an executable JAX read from its own cache is never written as it is (it would lack kernels):
the program is compiled afresh once and that one is kept, also where the process cleared
JAX's monitoring listeners."""

from __future__ import annotations

from pathlib import Path

import pytest

from store_process import executables, run_with_store, store_script

pytestmark = [pytest.mark.program_store, pytest.mark.slow]

SCRIPT = '''
import json, sys, warnings
import jax, numpy as np
import augjax
from augjax._runtime.store import executables

if sys.argv[1] == "clear-listeners":  # as a user's process may, after augjax listened
    executables._cache_hits()
    jax.monitoring.clear_event_listeners()
chain = augjax.compose(augjax.ops.rotate.bind(degrees=20.0), augjax.ops.color_jitter.bind(
    brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1))
x = np.random.default_rng(0).integers(0, 256, (4, 16, 16, 3), dtype=np.uint8)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = np.asarray(chain(x, key=jax.random.key(5)))
print(json.dumps({"out": out.tolist(), "loaded": executables.load_count(),
                  "traces": augjax.trace_count(),
                  "refused": [str(w.message) for w in caught
                              if issubclass(w.category, augjax.ProgramStoreWarning)]}))
'''


@pytest.fixture
def script(tmp_path):
    return store_script(tmp_path, "exe_script.py", SCRIPT)


def jax_cache_entries(cache: Path) -> list[Path]:
    """The stored programs' executables in JAX's persistent cache (their jit is ``call``)."""
    return sorted(cache.glob("jit_call-*-cache"))


def run(script: Path, cache: Path, argument: str = "-", **env: str) -> dict:
    return run_with_store(script, cache, argument, **env)


def test_a_warm_process_runs_the_kept_executables_with_the_same_bits(script, tmp_path):
    plain = run(script, tmp_path / "plain", AUGJAX_COMPILATION_CACHE="0")
    off = run(script, tmp_path / "off", AUGJAX_EXECUTABLE_STORE="0")
    off_warm = run(script, tmp_path / "off", AUGJAX_EXECUTABLE_STORE="0")
    assert not executables(tmp_path / "off") and off_warm["loaded"] == 0
    assert len(jax_cache_entries(tmp_path / "off")) == 2  # JAX's cache keeps them there
    cache = tmp_path / "cache"
    cold = run(script, cache)
    assert len(executables(cache)) == 2  # the sampler's and the apply program's
    assert not jax_cache_entries(cache)  # kept once, not in JAX's cache as well
    warm = run(script, cache)
    assert cold["loaded"] == 0 and warm["loaded"] == 2 and warm["traces"] == 0
    assert plain["out"] == off["out"] == off_warm["out"] == cold["out"] == warm["out"]
    assert not (cold["refused"] or warm["refused"])


def test_a_damaged_executable_is_refused_once_and_written_again(script, tmp_path):
    cache = tmp_path / "cache"
    want = run(script, cache)["out"]
    for path in executables(cache):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x40  # one bit in the middle of the executable
        path.write_bytes(bytes(data))
    hurt = run(script, cache)
    assert len(hurt["refused"]) == 2 and all("damaged" in r for r in hurt["refused"])
    assert hurt["out"] == want and hurt["loaded"] == 0
    # compiled again (JAX's cache does not hold them either), and those executables kept
    assert len(executables(cache)) == 2 and not jax_cache_entries(cache)
    again = run(script, cache)
    assert again["loaded"] == 2 and not again["refused"] and again["out"] == want


def test_an_executable_read_from_jax_cache_is_not_kept_as_read(script, tmp_path):
    """A cache made without executables (JAX's cache holds the programs): the executables JAX
    reads from it would lack kernels if written; the programs are compiled afresh and those
    kept, and the next process loads them."""
    cache = tmp_path / "cache"
    want = run(script, cache, AUGJAX_EXECUTABLE_STORE="0")["out"]
    assert not executables(cache)
    first = run(script, cache)
    assert first["out"] == want and len(executables(cache)) == 2
    warm = run(script, cache)
    assert warm["loaded"] == 2 and warm["out"] == want and not warm["refused"]


def test_nothing_read_from_jax_cache_is_written_after_listeners_are_cleared(script, tmp_path):
    """The reads of JAX's cache are counted by a ``jax.monitoring`` listener; a process that
    clears JAX's listeners (``clear_event_listeners``) must not write a cache-read executable
    as fresh: the listener is heard before each count, or registered again."""
    cache = tmp_path / "cache"
    want = run(script, cache, AUGJAX_EXECUTABLE_STORE="0")["out"]
    first = run(script, cache, "clear-listeners")
    assert first["out"] == want and len(executables(cache)) == 2
    warm = run(script, cache)  # the files run: they were compiled afresh, not read
    assert warm["loaded"] == 2 and warm["out"] == want and not warm["refused"]


LAPACK_SCRIPT = '''
import json, sys
import jax, numpy as np
import augjax
from augjax._runtime.store import executables

x = np.random.default_rng(0).integers(0, 256, (8, 40, 40, 3), dtype=np.uint8)
boxes = np.tile(np.array([[20.0, 20.0, 16.0, 10.0, 30.0]], np.float32), (8, 1))[:, None]
geo = augjax.compose(augjax.ops.rotate.bind(degrees=30),
                     augjax.ops.affine.bind(degrees=10, scale=(0.8, 1.2)))
out = geo(x, key=jax.random.key(11), boxes=boxes, boxes_format="cxcywhr")
print(json.dumps({"out": {k: np.asarray(v).tolist() for k, v in out.items()},
                  "loaded": executables.load_count()}))
'''


def test_a_loaded_executable_that_calls_lapack_has_its_kernels_set_up(tmp_path):
    """Rotated boxes through two warps invert a matrix (a LAPACK kernel). Lowering a program
    sets LAPACK's function pointers up; a loaded executable is not lowered, so they are set up
    before it runs (unset, the warm process crashed)."""
    script = store_script(tmp_path, "lapack_script.py", LAPACK_SCRIPT)
    plain = run(script, tmp_path / "plain", AUGJAX_COMPILATION_CACHE="0")
    cache = tmp_path / "cache"
    cold = run(script, cache)
    warm = run(script, cache)
    assert warm["loaded"] >= 1 and cold["out"] == warm["out"] == plain["out"]


TREES_SCRIPT = '''
import json, sys, warnings
import jax, numpy as np
import augjax
from augjax._runtime.store import executables

x = np.random.default_rng(1).integers(0, 256, (16, 24, 24, 3), dtype=np.uint8)
outs = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for step in (augjax.rand_augment(n=1, m=9), augjax.trivial_augment_wide()):
        outs.append(np.asarray(step(x, key=jax.random.key(3))).tolist())
print(json.dumps({"out": outs, "loaded": executables.load_count(),
                  "refused": [str(w.message) for w in caught
                              if issubclass(w.category, augjax.ProgramStoreWarning)]}))
'''


def test_programs_of_one_module_with_other_argument_trees_keep_their_own_executables(tmp_path):
    """rand_augment(n=1)'s sampler takes its lifted magnitude, unused (jit drops it from the
    module): its module is trivial_augment_wide's, its argument tree is not. Each keeps its own
    executable (they evicted each other, refused as unreadable, on every run)."""
    script = store_script(tmp_path, "trees_script.py", TREES_SCRIPT)
    plain = run(script, tmp_path / "plain", AUGJAX_COMPILATION_CACHE="0")
    cache = tmp_path / "cache"
    cold, warm, again = run(script, cache), run(script, cache), run(script, cache)
    assert not (cold["refused"] or warm["refused"] or again["refused"]), warm["refused"]
    assert warm["loaded"] == again["loaded"] == len(executables(cache)) >= 4
    assert plain["out"] == cold["out"] == warm["out"] == again["out"]
