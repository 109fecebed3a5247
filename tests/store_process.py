"""A test's script run in a fresh Python with augjax's program store on, in a cache folder of
the test's own (the tests of the program store: tests/runtime, tests/views)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_with_store(script: Path, cache: Path, argument: object, **env_extra: str) -> dict:
    """Runs ``script`` with ``argument`` in a fresh process, the store on in ``cache`` (no other
    ``AUGJAX_*`` switch, JAX cache or XDG cache of the test run leaks in); ``PYTHONPATH`` in
    ``env_extra`` goes before the checkout. Returns the JSON of its last output line."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AUGJAX_") and k not in ("JAX_COMPILATION_CACHE_DIR",
                                                        "XDG_CACHE_HOME")}
    extra_path = env_extra.pop("PYTHONPATH", "")
    env.update({"AUGJAX_CACHE_DIR": str(cache), "AUGJAX_PROGRAM_CACHE": "1", **env_extra})
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [extra_path, str(ROOT), env.get("PYTHONPATH", "")] if p)
    out = subprocess.run([sys.executable, str(script), str(argument)], env=env,
                         capture_output=True, text=True, check=False, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def stored(cache: Path) -> list[Path]:
    """The program files the store wrote in ``cache``."""
    return sorted((cache / "augjax-programs").glob("*.jaxprog"))


def executables(cache: Path) -> list[Path]:
    """The compiled executables the store kept in ``cache``."""
    return sorted((cache / "augjax-programs").glob("*.jaxexe"))


def store_script(folder: Path, name: str, text: str) -> Path:
    """A test's script written to ``folder / name`` (skipped without ``flatbuffers``, which
    ``jax.export``'s serialization needs)."""
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    path = folder / name
    path.write_text(text)
    return path
