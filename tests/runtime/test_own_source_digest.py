"""augjax's own source in a stored program's code manifest (augjax._runtime.store.identity
``augjax_digest``): every module of the package, whichever part of it changed. Found
2026-12-07: the digest read ``augjax/_runtime/`` alone since the store moved into
``_runtime/store/`` (its root was found by the module's depth), so a stored list program
outlived an edit of ``augjax/kernels/window.py`` and gave the old pixels in the next process.
Here a copy of the package is edited between processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import augjax
from augjax._runtime.store.identity import own_sources

pytestmark = pytest.mark.program_store

PACKAGE = Path(augjax.__file__).resolve().parent

SCRIPT = """
import json, sys
# an editable install maps the name augjax to the checkout by a finder ahead of sys.path
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in str(
    getattr(f, "__module__", None) or type(f).__module__)]
import numpy as np
import augjax
from augjax._runtime.store.identity import augjax_digest

image = np.arange(40 * 56 * 3, dtype=np.uint8).reshape(40, 56, 3)
chain = augjax.compose(augjax.ops.random_resized_crop.bind(size=(16, 20)))
out = chain([image], key=augjax.keys_from_seeds(np.array([[1, 2]], np.uint32)))
print(json.dumps({"file": augjax.__file__, "digest": augjax_digest(),
                  "traces": augjax.trace_count(), "sum": int(np.asarray(out).sum())}))
"""


def test_every_module_of_the_package_is_in_the_digest():
    sources = {p.relative_to(PACKAGE).as_posix() for p in own_sources()}
    for part in ("kernels/window.py", "kernels/resize.py", "catalog/crop.py",
                 "chain/__init__.py", "_runtime/store/identity.py", "__init__.py"):
        assert part in sources, part
    assert sources == {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}


def _run(root: Path, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get(
        "PYTHONPATH", "")]), "AUGJAX_CACHE_DIR": str(cache), "AUGJAX_PROGRAM_CACHE": "1",
        "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, cwd=root,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_edit_of_an_augjax_kernel_rebuilds_the_stored_program(tmp_path):
    root = tmp_path / "site"
    shutil.copytree(PACKAGE, root / "augjax", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    cold = _run(root, cache)
    assert Path(cold["file"]).resolve().is_relative_to(root)  # the copy is the one imported
    warm = _run(root, cache)
    assert cold["traces"] > 0 and warm["traces"] == 0 and warm["sum"] == cold["sum"]
    window = root / "augjax" / "kernels" / "window.py"  # the list read's taps: not _runtime/
    window.write_text(window.read_text() + "\n# edited\n")
    edited = _run(root, cache)
    assert edited["digest"] != warm["digest"]
    assert edited["traces"] > 0, "a program stored before the edit ran"
