"""The program store (augjax._runtime.program_store), in fresh processes: a second process runs
the first one's traced programs without tracing, with the same bits as a process without the
store; an edited kernel file or another parameter traces afresh; warnings a trace gave are
given again on load; the switch turns it off. In this process: a call inside a trace leaves
the store alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from augjax._runtime import program_store

ROOT = Path(__file__).resolve().parents[2]

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
                  "warned": sum("scaled_test_op traced" in str(w.message) for w in caught)}))
'''


def run(script: Path, cache: Path, amount: float = 0.5, **env_extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AUGJAX_") and k not in ("JAX_COMPILATION_CACHE_DIR",
                                                        "XDG_CACHE_HOME")}
    env.update({"AUGJAX_CACHE_DIR": str(cache), "AUGJAX_PROGRAM_CACHE": "1", **env_extra})
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, str(script), str(amount)], env=env,
                         capture_output=True, text=True, check=False, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def script(tmp_path):
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    path = tmp_path / "chain_script.py"
    path.write_text(SCRIPT)
    return path


def stored(cache: Path) -> list[Path]:
    return sorted((cache / "augjax-programs").glob("*.jaxprog"))


def test_a_second_process_runs_the_stored_programs_without_tracing(script, tmp_path):
    cache = tmp_path / "cache"
    plain = run(script, tmp_path / "plain", AUGJAX_COMPILATION_CACHE="0")
    cold = run(script, cache)
    assert len(stored(cache)) == 2  # the sample and the apply program
    warm = run(script, cache)
    assert plain["traces"] == cold["traces"] == 1 and warm["traces"] == 0
    for key in ("images", "labels"):  # the stored programs give the bits the traced ones give
        assert cold[key] == warm[key] == plain[key]
    assert plain["warned"] >= 1 and cold["warned"] == plain["warned"]
    assert warm["warned"] == plain["warned"]  # the trace's warning, given again on load


def test_an_edited_kernel_file_or_another_parameter_traces_afresh(script, tmp_path):
    cache = tmp_path / "cache"
    run(script, cache)
    other = run(script, cache, amount=0.25)
    assert other["traces"] == 1 and len(stored(cache)) == 4
    script.write_text(SCRIPT.replace("* amount)", "* amount * 0.5)"))
    edited = run(script, cache, amount=0.25)
    assert edited["traces"] == 1
    assert edited["images"] != other["images"]  # the edited kernel ran, not the stored one


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
