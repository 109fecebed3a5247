"""The documentation's pack example (docs/authoring/pack.md) works as printed: its files (the fenced
blocks that start with ``# file: <path>``) are written to a temporary directory, pip-installed
with ``--no-deps --target``, and its own tests and ``augjax check`` pass on it. The example is
written for authoring API 2.0: a deterministic kernel reading ``params``, a per-sample
parameter, a ``sample=`` hook."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "authoring" / "pack.md"
BLOCK = re.compile(r"^```[a-z]*\n# file: (?P<path>\S+)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def pack_files() -> dict[str, str]:
    """``{relative path: content}`` of the marked code blocks of the page."""
    text = PAGE.read_text(encoding="utf-8")
    return {m["path"]: m["body"] for m in BLOCK.finditer(text)}


def test_docs_pack_is_a_complete_pack():
    files = pack_files()
    assert "pyproject.toml" in files and any(p.startswith("tests/") for p in files)
    toml = files["pyproject.toml"]
    assert '[project.entry-points."augjax.ops"]' in toml
    targets = re.findall(r'^(\w+) = "([\w.]+):(\w+)"', toml, re.MULTILINE)
    assert targets, "the pyproject declares no op"
    for name, module, attr in targets:
        path = next(p for p in files if p.endswith(module.replace(".", "/") + ".py"))
        assert f'@op(\n    "{name}"' in files[path] or f'@op("{name}"' in files[path]
        assert f"def {attr}(" in files[path]
        # authoring API 2.0: kernel(image, params, ...), a per-sample parameter, a sample= hook
        assert f"def {attr}(image, params" in files[path] and "sample=" in files[path]
        assert 'kind="float_or_pair"' in files[path] and "params[" in files[path]
        assert "def sepia(key" not in files[path] and 'api_version="2.0"' in files[path]


def _env(site: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUGJAX_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.mark.slow
def test_docs_pack_installs_and_passes_its_tests_and_augjax_check(tmp_path):
    project, site = tmp_path / "augjax-sepia", tmp_path / "site"
    for rel, body in pack_files().items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(site), str(project)],
                   check=True, capture_output=True, timeout=300)
    assert list(site.glob("augjax_sepia-*.dist-info"))
    env = _env(site)
    listed = subprocess.run([sys.executable, "-m", "augjax.cli.main", "list", "--dist",
                             "augjax-sepia"], capture_output=True, text=True, check=False, env=env,
                            timeout=120)
    assert listed.returncode == 0 and "sepia" in listed.stdout, listed
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(project / "tests")], capture_output=True, text=True, check=False, env=env,
                           cwd=project, timeout=600)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    passed = re.search(r"\b(\d+) passed\b", tests.stdout)
    assert passed and int(passed[1]) >= 12 and "failed" not in tests.stdout, tests.stdout[-3000:]
    check = subprocess.run([sys.executable, "-m", "augjax.cli.main", "check", "augjax-sepia"],
                           capture_output=True, text=True, check=False, env=env, timeout=600)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
    assert "sepia  (augjax-sepia==0.1.0)" in check.stdout
    assert "FAIL" not in check.stdout
    assert re.search(r"check_dali_matches_array +PASS", check.stdout), check.stdout
