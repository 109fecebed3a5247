"""The program store (augjax._runtime.store.programs), in fresh processes: a second process runs
the first one's traced programs without tracing, with the same bits as a process without the
store; an edited kernel file or another parameter traces afresh; warnings a trace gave are
given again on load; the switch turns it off; damaged, cut, swapped or loosely permitted files
are refused with one warning each and rebuilt, and every process still gets the pixels of a
process without the store; a pack's kernel edited where it is reached directly, through a
policy's op list, nested eight composites deep, or in a helper module of another top-level
package, gives its new pixels in the next process. In this process: a call inside a trace
leaves the store alone."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from store_process import run_with_store, store_script, stored

from augjax._runtime.store import programs as program_store

#: The program store on in this process, as a user has it (tests/conftest.py: STORE_OFF_ROOMS).
pytestmark = pytest.mark.program_store


#: A chain with a user op defined in the script's own file (its kernel warns when traced),
#: a per-sample op and a batch-level op mixing labels.
SCRIPT = '''
import json, sys, warnings
import jax, jax.numpy as jnp, numpy as np
import augjax
from augjax import Param, op

@op("scaled_test_op", params={"amount": Param(0.5, low=0.0, high=1.0)})
def scaled(image, params, *, amount):
    warnings.warn("scaled_test_op traced", UserWarning)
    return (image.astype(jnp.float32) * amount).astype(image.dtype)

chain = augjax.compose(augjax.ops.flip.bind(p=0.5), scaled.bind(amount=float(sys.argv[1])),
                       augjax.ops.mixup_cutmix.bind(num_classes=10))
rng = np.random.default_rng(0)
x = rng.integers(0, 256, (4, 8, 8, 3), dtype=np.uint8)
y = rng.integers(0, 10, 4).astype(np.int32)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    images, labels = chain(x, y, key=jax.random.key(3))
print(json.dumps({"traces": augjax.trace_count(), "images": np.asarray(images).tolist(),
                  "labels": np.asarray(labels).tolist(),
                  "warned": sum("scaled_test_op traced" in str(w.message) for w in caught),
                  "refused": sum(issubclass(w.category, augjax.ProgramStoreWarning)
                                 for w in caught)}))
'''


def run(script: Path, cache: Path, amount: float | str = 0.5, **env_extra: str) -> dict:
    return run_with_store(script, cache, amount, **env_extra)


@pytest.fixture
def script(tmp_path):
    return store_script(tmp_path, "chain_script.py", SCRIPT)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict:
    """SCRIPT's output in a process without the compilation cache and with a store of its own
    (the tests that compare with it share one such process)."""
    folder = tmp_path_factory.mktemp("plain")
    path = folder / "chain_script.py"
    path.write_text(SCRIPT)
    return run(path, folder / "cache", AUGJAX_COMPILATION_CACHE="0")


@pytest.mark.slow
def test_a_second_process_runs_the_stored_programs_without_tracing(script, tmp_path, plain):
    cache = tmp_path / "cache"
    cold = run(script, cache)
    assert len(stored(cache)) == 2  # the sample and the apply program
    warm = run(script, cache)
    assert plain["traces"] == cold["traces"] == 1 and warm["traces"] == 0
    for key in ("images", "labels"):  # the stored programs give the bits the traced ones give
        assert cold[key] == warm[key] == plain[key]
    assert plain["warned"] >= 1 and cold["warned"] == plain["warned"]
    assert warm["warned"] == plain["warned"]  # the trace's warning, given again on load


@pytest.mark.slow
def test_an_edited_kernel_file_traces_afresh_and_another_value_does_not(script, tmp_path):
    cache = tmp_path / "cache"
    first = run(script, cache)
    other = run(script, cache, amount=0.25)
    # a float value is an argument of the stored programs: no trace, no new file,
    # and the new value is the one applied
    assert other["traces"] == 0 and len(stored(cache)) == 2
    assert other["images"] != first["images"]
    script.write_text(SCRIPT.replace("* amount)", "* amount * 0.5)"))
    edited = run(script, cache, amount=0.25)
    assert edited["traces"] == 1
    assert edited["images"] != other["images"]  # the edited kernel ran, not the stored one


@pytest.mark.slow
def test_the_switch_turns_it_off(script, tmp_path):
    cache = tmp_path / "cache"
    run(script, cache, AUGJAX_PROGRAM_CACHE="0")
    again = run(script, cache, AUGJAX_PROGRAM_CACHE="0")
    assert again["traces"] == 1 and not stored(cache)


def test_a_call_inside_a_trace_leaves_the_store_alone(tmp_path, monkeypatch):
    """Inside a caller's trace the program is traced into it, never exported or looked up: the
    trace lowers for its own platform, which the inputs do not tell (on a GPU machine a
    ``jax.jit`` under ``jax.default_device(cpu)`` was handed a program exported for CUDA). The
    same call at the top level is stored, so the check can see a store."""
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    monkeypatch.setattr(program_store, "store_dir", lambda: tmp_path)
    program = program_store.StoredProgram(lambda a: a * 2.0, lambda: ("store_test", (), {}))
    x = jnp.arange(4.0)  # a concrete array, as a closure constant of the caller's trace
    traced = jax.jit(lambda v: program(x) + v)(1.0)
    batched = jax.vmap(lambda v: program(x) + v)(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(traced), [1.0, 3.0, 5.0, 7.0])
    np.testing.assert_array_equal(np.asarray(batched), [[1.0, 3.0, 5.0, 7.0]] * 2)
    assert not list(tmp_path.iterdir())
    np.testing.assert_array_equal(np.asarray(program(x)), [0.0, 2.0, 4.0, 6.0])
    assert len(list(tmp_path.glob("*.jaxprog"))) == 1


def _flip_a_body_bit(path: Path, seed: int) -> None:
    blob = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    i = int(rng.integers(len(blob) // 2, len(blob)))
    blob[i] ^= 1 << int(rng.integers(8))
    path.write_bytes(bytes(blob))


@pytest.mark.slow
def test_damaged_files_are_refused_rebuilt_and_never_change_pixels(script, tmp_path, plain):
    """Bit flips, a cut file, a group-writable file and two files swapped (each another
    program's): the next process warns once per refused file, traces afresh and gives the
    pixels of a process without the store; the process after it reads the rebuilt files."""
    cache = tmp_path / "cache"
    run(script, cache)
    files = stored(cache)
    assert len(files) == 2

    def check(expected_refused: int) -> None:
        got = run(script, cache)
        assert got["refused"] == expected_refused and got["traces"] == 1
        assert (got["images"], got["labels"]) == (plain["images"], plain["labels"])

    for i, f in enumerate(files):
        _flip_a_body_bit(f, i)
    check(2)
    files[0].write_bytes(files[0].read_bytes()[:-100])
    os.chmod(files[1], 0o660)
    check(2)
    a, b = files[0].read_bytes(), files[1].read_bytes()
    files[0].write_bytes(b)
    files[1].write_bytes(a)
    check(2)
    warm = run(script, cache)
    assert warm["refused"] == 0 and warm["traces"] == 0
    assert (warm["images"], warm["labels"]) == (plain["images"], plain["labels"])


#: A pack installed as a distribution (dist-info with its entry point) whose kernel scales the
#: image by a constant of its module and one of a helper module in another top-level package.
PACK = '''
import jax.numpy as jnp
import augjax
from augjax import Param
import stalehelper


@augjax.op("stale_op", params={"amount": Param(0.5, low=0.0, high=1.0, neutral=0.0,
                                               magnitude=(0.0, 1.0))})
def stale_op(image, params):
    """Scales the image (a test op)."""
    scale = SCALE * stalehelper.FACTOR * (0.5 + 0.0 * params["amount"])
    return (image.astype(jnp.float32) * scale).astype(image.dtype)


SCALE = 1.0
'''

STALE_SCRIPT = '''
import json, sys
import jax, numpy as np
import augjax

x = np.full((2, 8, 8, 3), 200, np.uint8)
found = {}
for how in sys.argv[1].split(","):
    op = augjax.ops.stale_op.bind(amount=0.5)
    if how == "direct":
        step = augjax.compose(op)
    elif how == "policy":
        step = augjax.rand_augment(n=1, m=9, ops=["stale_op"])
    else:  # eight composites deep
        step = augjax.compose(op)
        for i in range(4):
            step = augjax.random_apply(augjax.random_choice([augjax.compose(step)]), p=1.0)
    before = augjax.trace_count()
    out = step(x, key=jax.random.key(0))
    found[how] = {"traces": augjax.trace_count() - before, "images": np.asarray(out).tolist()}
print(json.dumps(found))
'''

#: The three ways the pack's op is reached, each checked in the same processes (one process a
#: step for the three: a process's imports cost more than its three small programs).
HOWS = ("direct", "policy", "deep")


def _pack_site(root: Path) -> Path:
    site = root / "site"
    (site / "stalepack").mkdir(parents=True)
    (site / "stalepack" / "__init__.py").write_text("")
    (site / "stalepack" / "ops.py").write_text(PACK)
    (site / "stalehelper.py").write_text("FACTOR = 1.0\n")
    info = site / "stalepack-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: stalepack\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[augjax.ops]\nstale_op = stalepack.ops:stale_op\n")
    (info / "top_level.txt").write_text("stalepack\n")
    return site


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.slow
def test_an_edited_pack_kernel_or_helper_module_gives_new_pixels(tmp_path):
    """The kernel's module edited, then its helper module (another top-level package): each
    next process traces afresh and gives the new pixels (those of a process without the
    store, and numpy's), for the op reached directly, through a policy's op list, and eight
    composites deep."""
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    site = _pack_site(tmp_path)
    path = tmp_path / "stale_script.py"
    path.write_text(STALE_SCRIPT)
    cache = tmp_path / "cache"
    hows = ",".join(HOWS)

    def go(scale: float) -> dict:
        out = run(path, cache, hows, PYTHONPATH=str(site))
        plain = run(path, tmp_path / "plain", hows, PYTHONPATH=str(site),
                    AUGJAX_COMPILATION_CACHE="0")
        expected = (np.full((2, 8, 8, 3), 200, np.float32) * np.float32(scale)).astype(np.uint8)
        for how in HOWS:  # what the code gives now
            assert out[how]["images"] == plain[how]["images"] == expected.tolist(), how
        return out

    first = go(0.5)
    warm = run(path, cache, hows, PYTHONPATH=str(site))
    assert all(warm[how]["traces"] == 0 for how in HOWS), warm  # stored, and used
    _edit(site / "stalepack" / "ops.py", "SCALE = 1.0", "SCALE = 0.5")
    kernel_edited = go(0.25)
    _edit(site / "stalehelper.py", "FACTOR = 1.0", "FACTOR = 0.5")
    helper_edited = go(0.125)
    for how in HOWS:
        assert kernel_edited[how]["traces"] >= 1, how
        assert kernel_edited[how]["images"] != first[how]["images"], how
        assert helper_edited[how]["traces"] >= 1, how
        assert helper_edited[how]["images"] != kernel_edited[how]["images"], how
