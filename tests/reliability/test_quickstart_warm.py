"""The README's user install warms up: with exactly what ``pip install ".[dali,demo]"`` brings
(augjax's declared requirements and those extras, resolved through the distributions'
metadata; no torch), ``augjax demo`` prints no warning, and a second process compiles nothing
and traces nothing (the op grid, the views and the clips pictures: all their programs stored) (JAX's persistent cache and augjax's program store both hit).

The environment is a *view*: a folder holding links to the files of exactly those
distributions, run by a fresh interpreter with ``-S`` (no other site-packages). It resolves what
pip would install from the same metadata, without downloading 1.7 GB again (a real
``pip install`` into a venv took 6 minutes here); a requirement augjax forgets to declare is
missing in it, as in the user's venv.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: The program store on in this process, as a user has it (tests/conftest.py: STORE_OFF_ROOMS).
pytestmark = pytest.mark.program_store

ROOT = Path(__file__).resolve().parents[2]

packaging = pytest.importorskip("packaging.requirements",
                                reason="resolving requirements needs packaging")
from packaging.requirements import Requirement  # noqa: E402
from packaging.utils import canonicalize_name  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: Runs ``augjax demo`` in the view and reports what JAX compiled and augjax traced.
CHILD = r"""
import json, site, sys
site.addsitedir(sys.argv[1])
from jax import monitoring
events = {"misses": 0, "hits": 0}
def listen(name, **kw):
    if name == "/jax/compilation_cache/cache_misses":
        events["misses"] += 1
    if name == "/jax/compilation_cache/cache_hits":
        events["hits"] += 1
monitoring.register_event_listener(listen)
import augjax
from augjax.cli.main import main
code = main(["demo", "--ops", "brightness", "--batch", "4", "--draws", "1", "--no-progress",
             "--out", sys.argv[2]])
try:
    import torch  # noqa: F401
    torch_found = True
except ImportError:
    torch_found = False
print(json.dumps({"code": code, "traces": augjax.trace_count(), "torch": torch_found,
                  **events}))
"""


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return [Requirement(r) for r in project["dependencies"] + extras["dali"] + extras["demo"]]


def _closure(reqs: list[Requirement]) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions these requirements bring, as pip would resolve them."""
    found: dict[str, importlib.metadata.Distribution] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    stack = [(r, "") for r in reqs]
    while stack:
        req, extra = stack.pop()  # ``extra``: the extra of the requirer that asked for it
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        dist = importlib.metadata.distribution(req.name)
        assert not req.specifier or dist.version in req.specifier, (str(req), dist.version)
        found[key[0]] = dist
        for sub in dist.requires or ():
            for wanted in ("", *req.extras):
                stack.append((Requirement(sub), wanted))
    return found


def _view(folder: Path) -> Path:
    """A folder linking the files of the requirements' distributions, and augjax (this
    checkout) with its entry points."""
    folder.mkdir()
    dists = _closure(_requirements())
    assert "torch" not in dists
    for name, dist in dists.items():
        for f in dist.files or ():
            top = Path(str(f)).parts[0]
            if top in ("..", "") or top.endswith(".data"):
                continue
            src = Path(dist.locate_file(top))
            if src.exists() and not (folder / top).exists():
                (folder / top).symlink_to(src)
    (folder / "augjax").symlink_to(ROOT / "augjax")
    own = importlib.metadata.distribution("augjax")
    info = folder / "augjax-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: augjax\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(own.read_text("entry_points.txt"))
    return folder


def _demo(view: Path, out: Path, cache: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AUGJAX_", "PYTHON", "JAX_")) and k != "XDG_CACHE_HOME"}
    env.update({"AUGJAX_CACHE_DIR": str(cache), "PYTHONNOUSERSITE": "1"})
    proc = subprocess.run([sys.executable, "-S", "-c", CHILD, str(view), str(out)], env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.slow
def test_the_user_install_warms_up_with_no_warning(tmp_path):
    view = _view(tmp_path / "view")
    cold, cold_err = _demo(view, tmp_path / "out1", tmp_path / "cache")
    warm, warm_err = _demo(view, tmp_path / "out2", tmp_path / "cache")
    assert not cold["torch"] and cold["code"] == warm["code"] == 0
    for err in (cold_err, warm_err):
        assert "filelock" not in err and "Warning" not in err, err[-2000:]
    assert cold["misses"] > 0 and cold["traces"] > 0
    assert warm["misses"] == 0 and warm["traces"] == 0 and warm["hits"] > 0
    # the README's demo draws the op grid, the views and the clips (their programs stored too),
    # byte for byte the same warm as cold
    for name in ("demo.png", "demo-views.png", "demo-clips.png"):
        assert (tmp_path / "out1" / name).read_bytes() == (tmp_path / "out2" /
                                                           name).read_bytes()
