"""What a stored program depends on besides its ops' own code, and the store's bounds: a value
a pack's op module imports from a helper module (``from helper import CONST``), a helper the
kernel imports inside its body (by name, or by a computed name), a data file and an
environment variable the pack reads at import (declared with ``@op(..., data_files=,
env_vars=)``) each give new pixels in the next process once changed, for the op reached
directly, through a policy's op list and eight composites deep (subprocesses); one module name
loaded from two files gets two programs, and so does a module constant set before the call; program files dated in the future do not evict new
programs, and temporary files of any age, dated in the future too, are removed (in this
process); ``data_files=`` and ``env_vars=`` are checked when an op is declared."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from store_process import run_with_store

import augjax
from augjax._runtime.store import programs as program_store
from augjax.errors import OpDefinitionError

#: The program store on in this process, as a user has it (tests/conftest.py: STORE_OFF_ROOMS).
pytestmark = pytest.mark.program_store

_OP = '''
import importlib, os
from pathlib import Path
import jax.numpy as jnp
import augjax
from augjax import Param
{imports}

AMOUNT = {{"amount": Param(0.5, low=0.0, high=1.0, neutral=0.0, magnitude=(0.0, 1.0))}}
{reads}


@augjax.op("{name}", params=AMOUNT{declared})
def {name}(image, params):
    """Scales the image (a test op)."""
    {lazy}
    scale = {value} * (0.5 + 0.0 * params["amount"])
    return (image.astype(jnp.float32) * scale).astype(image.dtype)
'''

#: One op module per way a program depends on something outside its ops' code (each op's
#: pixels show whether that one source was seen): (name, imports, reads at import, declared,
#: in the kernel's body, the scale it reads).
OPS = {
    "blind_value": ("from blindvalue import FACTOR", "", "", "", "FACTOR"),
    "blind_data": ("", 'TABLE = float((Path(__file__).parent / "table.txt").read_text())',
                   ', data_files=("table.txt",)', "", "TABLE"),
    "blind_env": ("", 'SCALE = float(os.environ.get("BLINDPACK_SCALE", "1.0"))',
                  ', env_vars=("BLINDPACK_SCALE",)', "", "SCALE"),
    "blind_lazy": ("", "", "", "import blindlazy", "blindlazy.FACTOR"),
    "blind_dynamic": ("", "", "", 'dynamic = importlib.import_module("blind" + "dynamic")',
                      "dynamic.FACTOR"),
}

#: blind_value reached the three ways, then one op a source, direct; the kernels that import
#: when traced come last (what a trace imports names every later program's helpers too).
RUNS = [("blind_value", "direct"), ("blind_value", "policy"), ("blind_value", "deep"),
        ("blind_data", "direct"), ("blind_env", "direct"), ("blind_lazy", "direct"),
        ("blind_lazy", "policy"), ("blind_dynamic", "direct")]

SCRIPT = '''
import json, sys
import jax, numpy as np
import augjax
import blindlazy  # imported before any trace (as another part of a program would)

x = np.full((2, 8, 8, 3), 200, np.uint8)
found = {}
for run in sys.argv[1].split(","):
    name, how = run.split("/")
    op = getattr(augjax.ops, name).bind(amount=0.5)
    if how == "direct":
        step = augjax.compose(op)
    elif how == "policy":
        step = augjax.rand_augment(n=1, m=9, ops=[name])
    else:  # eight composites deep
        step = augjax.compose(op)
        for i in range(4):
            step = augjax.random_apply(augjax.random_choice([augjax.compose(step)]), p=1.0)
    before = augjax.trace_count()
    out = np.asarray(step(x, key=jax.random.key(0)))
    found[run] = {"traces": augjax.trace_count() - before, "values": np.unique(out).tolist()}
print(json.dumps(found))
'''


def _pack_site(root: Path) -> Path:
    """An installed pack (dist-info with its entry points) of the :data:`OPS`, its helper
    modules (top-level, outside any distribution) and its data file."""
    site = root / "site"
    (site / "blindpack").mkdir(parents=True)
    (site / "blindpack" / "__init__.py").write_text("")
    (site / "blindpack" / "table.txt").write_text("1.0\n")
    for helper in ("blindvalue", "blindlazy", "blinddynamic"):
        (site / f"{helper}.py").write_text("FACTOR = 1.0\n")
    for name, (imports, reads, declared, lazy, value) in OPS.items():
        (site / "blindpack" / f"{name}.py").write_text(_OP.format(
            name=name, imports=imports, reads=reads, declared=declared, lazy=lazy, value=value))
    info = site / "blindpack-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: blindpack\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[augjax.ops]\n" + "".join(f"{n} = blindpack.{n}:{n}\n" for n in OPS))
    (info / "top_level.txt").write_text("blindpack\n")
    return site


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _expected(scale: float) -> list[int]:
    """numpy's pixels for the test ops' scale (all pixels are 200)."""
    return [int((np.float32(200) * np.float32(scale)).astype(np.uint8))]


@pytest.mark.slow
def test_helper_values_lazy_imports_and_declared_inputs_give_new_pixels(tmp_path):
    """Each op's source changed (the helper module a value is imported from, the helper a
    kernel imports by name though the script imported it first, the declared data file, the
    declared environment variable; then the helper a kernel imports by a computed name): the
    next process traces each such op afresh and gives numpy's new pixels, for every way it is
    reached; an op none of whose sources changed is loaded, and a program for another value of
    the variable is kept beside the first."""
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    site = _pack_site(tmp_path)
    path = tmp_path / "blind_script.py"
    path.write_text(SCRIPT)
    cache = tmp_path / "cache"
    runs = ",".join(f"{name}/{how}" for name, how in RUNS)

    def go(**env: str) -> dict:
        return run_with_store(path, cache, runs, PYTHONPATH=str(site), **env)

    cold = go()
    warm = go()
    for run, _ in cold.items():
        assert cold[run]["values"] == warm[run]["values"] == _expected(0.5), run
        assert cold[run]["traces"] >= 1 and warm[run]["traces"] == 0, (run, warm)
    for helper in ("blindvalue", "blindlazy"):
        _edit(site / f"{helper}.py", "FACTOR = 1.0", "FACTOR = 0.5")
    _edit(site / "blindpack" / "table.txt", "1.0", "0.5")
    changed = go(BLINDPACK_SCALE="0.5")
    for run in changed:
        if run.startswith("blind_dynamic"):  # none of its sources changed: loaded
            assert changed[run] == {"traces": 0, "values": _expected(0.5)}, run
        else:
            assert changed[run]["values"] == _expected(0.25), (run, changed[run])
            assert changed[run]["traces"] >= 1, run
    _edit(site / "blinddynamic.py", "FACTOR = 1.0", "FACTOR = 0.5")
    dynamic = go()  # and BLINDPACK_SCALE unset again: the first program of blind_env, loaded
    for run in dynamic:
        scale = 0.5 if run.startswith("blind_env") else 0.25
        assert dynamic[run]["values"] == _expected(scale), (run, dynamic[run])
        if run.startswith("blind_dynamic"):
            assert dynamic[run]["traces"] >= 1, run
        else:
            assert dynamic[run]["traces"] == 0, (run, dynamic[run])


_TWIN = '''
import jax.numpy as jnp
import augjax

SCALE = {scale}


@augjax.op("twin_test_op")
def twin_test_op(image, params):
    """Scales the image (a test op)."""
    return (image.astype(jnp.float32) * SCALE).astype(image.dtype)
'''


def test_one_module_name_loaded_from_two_files_gets_two_programs(tmp_path, monkeypatch):
    """Two op files of one module name, one declaration and one kernel line, another value:
    the second gets a program of its own (its pixels, no load), not the first's; so does the
    first file with its constant set before the call (as a script sets ``mypack.SCALE``); the
    first file as it was loads the first's program."""
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    monkeypatch.setattr(program_store, "store_dir", lambda: store)
    x = np.full((2, 8, 8, 3), 200, np.uint8)
    for folder, scale in (("a", 0.5), ("b", 0.25)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "twin_test_ops.py").write_text(_TWIN.format(scale=scale))
    counts = []
    for folder, scale, set_to in (("a", 0.5, None), ("b", 0.25, None), ("a", 0.5, 0.125),
                                  ("a", 0.5, None)):
        spec = importlib.util.spec_from_file_location("twin_test_ops",
                                                      tmp_path / folder / "twin_test_ops.py")
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, "twin_test_ops", module)
        spec.loader.exec_module(module)
        if set_to is not None:
            module.SCALE = set_to
        loads = program_store.load_count()
        out = augjax.compose(module.twin_test_op.bind())(x, key=jax.random.key(0))
        assert np.unique(np.asarray(out)).tolist() == _expected(set_to or scale), folder
        counts.append(len(list(store.glob("*.jaxprog"))))
        if len(counts) < 4:  # programs of their own
            assert program_store.load_count() == loads, (folder, set_to)
    assert counts[:3] == [counts[0], 2 * counts[0], 3 * counts[0]]
    assert program_store.load_count() > loads and counts[3] == counts[2]  # the first's, loaded


def test_future_dated_files_do_not_evict_new_programs(tmp_path, monkeypatch):
    """512 program files dated a day ahead: a new program stays (the future dates are clamped
    and age from then), the next new program leaves it too, and it loads in a fresh program."""
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    monkeypatch.setattr(program_store, "store_dir", lambda: tmp_path)
    ahead = time.time() + 86400
    for i in range(program_store.MAX_FILES):
        path = tmp_path / f"{i:040x}.jaxprog"
        path.write_bytes(b"")
        os.utime(path, (ahead, ahead))
    x = jnp.arange(4.0)

    def new_program(scale: float):
        return program_store.StoredProgram(lambda a: a * scale, lambda: (f"store_{scale}", (), {}))

    before = set(tmp_path.glob("*.jaxprog"))
    np.testing.assert_array_equal(np.asarray(new_program(2.0)(x)), [0.0, 2.0, 4.0, 6.0])
    (first,) = set(tmp_path.glob("*.jaxprog")) - before
    new_program(3.0)(x)
    files = set(tmp_path.glob("*.jaxprog"))
    assert first in files and len(files) == program_store.MAX_FILES
    assert all(f.stat().st_mtime <= time.time() for f in files)
    loads = program_store.load_count()
    np.testing.assert_array_equal(np.asarray(new_program(2.0)(x)), [0.0, 2.0, 4.0, 6.0])
    assert program_store.load_count() == loads + 1


def test_temporary_files_of_any_age_are_swept(tmp_path):
    """A temporary file dated a day ahead, or two hours back, is left over from a crashed
    writer: removed; a fresh one (a live writer's) is kept."""
    now = time.time()
    tmps = {name: tmp_path / f".{name}.tmp" for name in ("ahead", "old", "live")}
    for name, stamp in (("ahead", now + 86400), ("old", now - 7200), ("live", now)):
        tmps[name].write_bytes(b"")
        os.utime(tmps[name], (stamp, stamp))
    program_store._bound(tmp_path)
    assert [name for name, path in tmps.items() if path.exists()] == ["live"]


def _kernel(image, params):
    return image


def test_data_files_and_env_vars_are_declared_as_tuples():
    """A relative data file is read from the kernel's folder; a bare string, or a variable
    name with '=', is refused naming the op and the argument."""
    spec = augjax.op("inputs_test_op", data_files=("table.txt", Path("/abs/t.bin")),
                     env_vars=("A_SETTING",))(_kernel)
    assert spec.data_files == (str(Path(__file__).parent / "table.txt"), "/abs/t.bin")
    assert spec.env_vars == ("A_SETTING",)
    for kwargs, words in (({"data_files": "table.txt"}, "data_files= must be a tuple"),
                          ({"env_vars": "A_SETTING"}, "env_vars= must be a tuple"),
                          ({"env_vars": ("A=1",)}, "without '='"),
                          ({"data_files": (3,)}, "non-empty paths")):
        with pytest.raises(OpDefinitionError, match=words) as err:
            augjax.op("inputs_test_op", **kwargs)(_kernel)
        assert "inputs_test_op" in str(err.value)
