"""The support matrix stated in docs/getting-started/install.md is what CI installs and what
pyproject.toml declares: the installed Python, JAX, DALI and DALI's CUDA build fall in its rows,
and the lower bounds of pyproject's requirements are the matrix's. A slow test installs the
oldest supported JAX into a fresh virtual environment and runs every registered op with it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started" / "install.md"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def matrix() -> dict[str, SpecifierSet]:
    text = PAGE.read_text(encoding="utf-8")
    body = text.split("<!-- support-matrix: start", 1)[1].split("<!-- support-matrix: end -->")[0]
    rows = re.findall(r"^\| ([^|]+?) \| `([^`]+)` \|", body, re.MULTILINE)
    return {name.split(" (")[0]: SpecifierSet(spec) for name, spec in rows}


def _lower(spec: SpecifierSet) -> Version:
    return next(Version(s.version) for s in spec if s.operator == ">=")


def _requirements() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        deps += extra
    return {"requires-python": [project["requires-python"]], "deps": deps}


def test_the_matrix_states_every_component():
    assert set(matrix()) == {"Python", "JAX", "NVIDIA DALI", "CUDA"}


def test_installed_versions_fall_in_the_matrix():
    import jax
    import nvidia.dali
    import nvidia.dali.backend

    rows = matrix()
    python = Version(".".join(map(str, sys.version_info[:3])))
    assert python in rows["Python"], (python, rows["Python"])
    assert Version(jax.__version__) in rows["JAX"], (jax.__version__, rows["JAX"])
    assert Version(nvidia.dali.__version__) in rows["NVIDIA DALI"], nvidia.dali.__version__
    # the CUDA major version DALI's wheel was built for (12986 = 12.9), with or without a GPU
    cuda = Version(str(nvidia.dali.backend.__cuda_version__ // 1000))
    assert cuda in rows["CUDA"], (cuda, rows["CUDA"])


def test_pyproject_declares_the_matrix_lower_bounds():
    rows, req = matrix(), _requirements()
    assert _lower(SpecifierSet(req["requires-python"][0])) == _lower(rows["Python"])
    jax_reqs = [d for d in req["deps"] if re.match(r"jax(\[[\w,]+\])?>=", d)]
    dali_reqs = [d for d in req["deps"] if d.startswith("nvidia-dali-")]
    assert jax_reqs and dali_reqs
    for d in jax_reqs:
        assert _lower(SpecifierSet(">=" + d.split(">=", 1)[1])) == _lower(rows["JAX"]), d
    for d in dali_reqs:
        assert _lower(SpecifierSet(">=" + d.split(">=", 1)[1])) == _lower(rows["NVIDIA DALI"]), d
        cuda = Version(re.match(r"nvidia-dali-cuda(\d\d)", d).group(1))
        assert cuda in rows["CUDA"], d


SMOKE = r"""
import jax, numpy as np, augjax
x = augjax.data.sample_images(48)[:4]
names = augjax.list_ops()
assert len(names) >= 38, names
for name in names:
    spec = augjax.get_op(name)
    kw = {k: 32 for k, p in spec.params.items() if p.required and p.kind in ("size", "floats")}
    if "labels" in spec.inputs:
        out = getattr(augjax.ops, name)(x, np.arange(4) % 2, key=jax.random.key(0),
                                        num_classes=2, **kw)[0]
    else:
        out = getattr(augjax.ops, name)(x, key=jax.random.key(0), **kw)
    out = np.asarray(out)
    assert out.shape[0] == 4 and np.isfinite(out.astype(np.float64)).all(), name
# against NumPy: a certain flip and an inversion
assert (np.asarray(augjax.ops.flip(x, key=jax.random.key(1), p=1.0)) == x[:, :, ::-1]).all()
assert (np.asarray(augjax.ops.invert(x)) == 255 - x).all()
chain = augjax.compose(augjax.ops.random_resized_crop.bind(size=32), augjax.rand_augment(n=2, m=9))
assert chain(x, key=jax.random.key(2)).shape == (4, 32, 32, 3)
print("ok", jax.__version__, len(names))
"""


@pytest.mark.slow
def test_the_oldest_supported_jax_runs_every_op(tmp_path):
    """A fresh virtual environment with the matrix's lowest JAX (from PyPI) and augjax's other
    requirements; the checkout installed into it without dependencies."""
    oldest = str(_lower(matrix()["JAX"]))
    venv = tmp_path / "venv"
    uv = Path(sys.executable).with_name("uv")  # README's set-up installs with uv: faster
    # with uv, the environment needs no pip of its own (ensurepip: ~3 CPU-s)
    subprocess.run([sys.executable, "-m", "venv", *(["--without-pip"] if uv.exists() else []),
                    str(venv)], check=True, timeout=300)
    pip = ([str(uv), "pip", "install", "-q", "--python", str(venv / "bin" / "python")]
           if uv.exists() else [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                "--disable-pip-version-check"])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    others = [d for d in project["dependencies"] if not d.startswith("jax")]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "AUGJAX_DISABLE_PLUGIN_AUTOLOAD")}
    env["AUGJAX_CACHE_DIR"] = str(tmp_path / "cache")
    for args in ([f"jax=={oldest}", f"jaxlib=={oldest}", "pillow", *others],
                 ["--no-deps", str(ROOT)]):
        res = subprocess.run(pip + args, capture_output=True, text=True, timeout=900, env=env,
                             check=False)
        assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run([str(venv / "bin" / "python"), "-c", SMOKE], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    assert res.stdout.split()[:2] == ["ok", oldest]
