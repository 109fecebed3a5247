"""The persistent compilation cache (augjax._runtime.store.compile_cache), in fresh processes: where
it goes, the switches, a directory the user configured is kept, and a second process compiles
nothing for its first batch of the timm-style chain and reaches it several times faster than the
first (arrays and DALI CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: The program store on in this process, as a user has it (tests/conftest.py: STORE_OFF_ROOMS).
pytestmark = pytest.mark.program_store

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, jax, jax.numpy as jnp, numpy as np
jax.jit(lambda x: x + 1)(jnp.ones(3))  # the user's own compile, before augjax's first program
import augjax
augjax.ops.flip(np.zeros((2, 4, 4, 3), np.uint8), key=jax.random.key(0), p=0.5)
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir,
                  "min_time": jax.config.jax_persistent_cache_min_compile_time_secs,
                  "augjax": augjax.compilation_cache_dir()}))
"""


def run_child(env_extra: dict[str, str], code: str = CHILD) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("AUGJAX_CACHE_DIR", "AUGJAX_COMPILATION_CACHE", "JAX_COMPILATION_CACHE_DIR",
                        "XDG_CACHE_HOME")}
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=False, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def entries(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


@pytest.mark.slow
def test_default_directory_is_the_user_cache_dir_and_small_programs_are_cached(tmp_path):
    got = run_child({"XDG_CACHE_HOME": str(tmp_path)})
    where = tmp_path / "augjax" / "jax"
    assert got["dir"] == got["augjax"] == str(where)
    assert got["min_time"] == 0.0
    assert entries(where)  # flip compiles in well under JAX's default 1 s threshold


@pytest.mark.slow
def test_augjax_cache_dir_moves_it(tmp_path):
    where = tmp_path / "elsewhere"
    got = run_child({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "AUGJAX_CACHE_DIR": str(where)})
    assert got["dir"] == str(where)
    assert entries(where) and not entries(tmp_path / "xdg")


def test_switch_off_leaves_jax_untouched(tmp_path):
    got = run_child({"XDG_CACHE_HOME": str(tmp_path), "AUGJAX_COMPILATION_CACHE": "0"})
    assert got == {"dir": None, "min_time": 1.0, "augjax": None}
    assert not entries(tmp_path)


@pytest.mark.slow
def test_a_directory_the_user_configured_is_kept(tmp_path):
    mine = tmp_path / "mine"
    got = run_child({"XDG_CACHE_HOME": str(tmp_path / "xdg"),
                     "JAX_COMPILATION_CACHE_DIR": str(mine)})
    assert got["dir"] == got["augjax"] == str(mine)
    assert got["min_time"] == 1.0  # the user's thresholds are theirs too
    assert not entries(tmp_path / "xdg")


@pytest.mark.slow
def test_second_process_compiles_nothing_and_pads_the_partial_batch(tmp_path):
    pytest.importorskip("nvidia.dali")
    out = tmp_path / "first_batch.json"
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, AUGJAX_PAD_BATCHES="1")
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "first_batch.py"), "--batch",
                          "8", "--size", "64", "--partial", "3", "--json", str(out)],
                         env=env, capture_output=True, text=True, check=False, timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(out.read_text())["results"]
    for path in ("arrays", "dali"):
        cold, warm = results[path]["cold"], results[path]["warm"]
        assert cold["first_compiled"] >= 1 and warm["first_compiled"] == 0, (path, cold, warm)
        assert warm["first_cache_hits"] >= 1
        # How much sooner the warm process gets there is a benchmark figure
        # (benchmarks/first_batch.py), not a test: a timed bound fails on a loaded machine.
        assert cold["partial_traces"] == warm["partial_traces"] == 0  # partial batch: padded


def test_branches_for_platforms_without_a_backend_are_not_traced():
    import jax
    import jax.numpy as jnp

    from augjax.kernels.platform import live_platforms, platform_dependent

    traced = []

    def branch(name):
        def f(x):
            traced.append(name)
            return x + len(name)
        return f

    absent = next(p for p in ("tpu", "rocm", "cuda") if p not in live_platforms())
    out = jax.jit(lambda x: platform_dependent(
        x, cpu=branch("cpu"), default=branch("default"), **{absent: branch(absent)}))(jnp.ones(2))
    assert absent not in traced
    expected = 1 + (3 if jax.default_backend() == "cpu" else 7)
    assert out.tolist() == [expected, expected]
    if live_platforms() == {"cpu"}:
        assert traced == ["cpu"]  # the one branch left is called directly
