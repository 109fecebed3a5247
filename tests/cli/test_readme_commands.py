"""README.md, the landing page: the user install comes first and names the extras a user needs
(ops, DALI, demo); the test command CI runs (.ci/run) installs from a bare Python, with the docs
extra, and runs pytest; the demo is the main job; the fast tier is documented in CONTRIBUTING.md."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_ci_runs_the_readme_test_command_from_a_bare_python():
    line = next(li for li in (ROOT / ".ci" / "run").read_text().splitlines()
                if li.startswith("cmd=$("))
    cmd = subprocess.run(["bash", "-c", f'{line}\nprintf %s "$cmd"'], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert cmd.startswith("python3 -m venv .venv && ")  # a fresh venv from the interpreter
    assert 'pip install --compile-bytecode --python .venv/bin/python -e ".[test,reference,docs]"' \
        in cmd  # bytecode written once: the suite's fresh processes import it
    assert "pytest" in cmd
    assert cmd in README


def test_user_install_comes_first_and_covers_ops_dali_and_demo():
    first_block = re.search(r"^```\w*\n(.*?)^```", README, re.MULTILINE | re.DOTALL).group(1)
    assert "pip install" in first_block and "pytest" not in first_block
    extras = set(re.search(r'\.\[([\w,]+)\]', first_block).group(1).split(","))
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert extras == {"dali", "demo"} and extras <= set(declared)
    assert any(d.startswith("nvidia-dali") for d in declared["dali"])
    assert {"pillow", "tqdm"} <= {re.split(r"[<>=\[]", d)[0] for d in declared["demo"]}
    # then the tests, then the demo, the main job
    assert README.index("pytest -n auto") < README.index("```bash\naugjax demo\n```")
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert '-m "not slow"' in contributing and "tests/conftest.py" in contributing


def test_authoring_reference_names_every_declaration_field():
    import dataclasses
    import inspect

    import augjax

    page = (ROOT / "docs" / "authoring" / "op.md").read_text(encoding="utf-8")
    start = "<!-- authoring-reference: start"
    assert page.count(start) == 1 and page.count("<!-- authoring-reference: end -->") == 1
    ref = page.split(start, 1)[1].split("<!-- authoring-reference: end -->", 1)[0]
    fields = [f.name for f in dataclasses.fields(augjax.Param)]
    keywords = [k for k, p in inspect.signature(augjax.op).parameters.items()
                if k != "name" and p.kind != p.VAR_KEYWORD]  # **deprecated: old options
    missing = [n for n in fields + keywords if f"`{n}" not in ref and f" {n}," not in ref
               and f" {n})" not in ref]
    assert not missing, missing
    from augjax._core.param import KINDS

    assert all(f"| `{kind}` |" in ref for kind in KINDS)
    for words in ("fold_in(sample_key, position)", "(N, 2)", "int32", "keys_from_seeds",
                  "(H, W, C)", "(N, H, W, C)", "uint8 0..255 or float32 0..1"):
        assert words in ref, words
