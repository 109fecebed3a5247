"""The documentation site builds from the repository with warnings as errors (``mkdocs build
--strict``), offline, and its op gallery covers every registered op: a page with the op's
picture (a PNG drawn by ``augjax show``), its parameters, reference semantics, target rule and
docstring rendered as Markdown; every policy has a page (parameters, reference, op space, a
picture) and an API entry with its parameters."""

from __future__ import annotations

import html
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
pytest.importorskip("mkdocstrings")

import augjax  # noqa: E402
import augjax.policies  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if k != "AUGJAX_DOCS_GALLERY"}
    # the gallery's programs go to the session processes' cache folder (tests/conftest.py);
    # augjax's program store is off for them: each op's strip (96 px, its magnitudes) is drawn
    # once in the run, so the store would only export and write them (14 ops, paired: 20.1 and
    # 22.4 CPU-s with it, 18.9 and 19.0 without; the pixels are the same, the store only saves
    # time: tests/reliability/test_cache_invariance.py)
    env.update(NO_MKDOCS_2_WARNING="1", AUGJAX_PROGRAM_CACHE="0",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p))
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                          str(ROOT / "mkdocs.yml"), "-d", str(out)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=1200, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]
    return out


@pytest.mark.slow
def test_site_builds_strict_with_every_page(site):
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = re.findall(r":\s+([\w/.-]+\.md)\s*$", nav, re.MULTILINE)
    assert len(pages) >= 18
    for page in pages:
        stem = page[:-3]
        html = site / (f"{stem}.html" if stem.split("/")[-1] == "index" else f"{stem}/index.html")
        assert html.exists(), page
    changelog = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in changelog  # CHANGELOG.md itself, not a copy
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("compose", "rand_augment", "keys_from_seeds", "sample_seeds", "Param"):
        # each its own anchor, under the module that defines it (augjax.chain.compose)
        assert re.search(rf'id="augjax\.(?:[\w.]+\.)?{name}"', api), name
    for html in site.rglob("*.html"):  # nothing the reader's browser must fetch from elsewhere
        assert "fonts.googleapis" not in html.read_text(encoding="utf-8"), html
    assert ":class:" not in api and ":func:" not in api  # reST roles shown as code
    for name in augjax.policies.FACTORIES:  # a function with every parameter, not an assignment
        entry = api[api.index(f'id="augjax.policies.{name}"'):]
        entry = entry[:entry.index('<h3 id=', 10)]
        assert "data_first" not in entry and "module-attribute" not in entry, name
        for param in inspect.signature(augjax.policies.FACTORIES[name]).parameters:
            assert f"<code>{param}</code>" in entry, (name, param)
    compose = api[api.index('id="augjax.chain.compose"'):]
    returns = compose[compose.index("Returns:"):]
    returns = returns[:returns.index("</table>")]
    assert returns.count("<tr") == 2 and "fold_in(sample_key, start + j)" in returns


@pytest.mark.slow
def test_the_gallery_covers_every_registered_op(site):
    from PIL import Image

    names = augjax.list_ops()
    index = (site / "ops" / "index.html").read_text(encoding="utf-8")
    assert f"{len(names)} ops" in index
    for name in names:
        slug = re.sub(r"[^a-z0-9_]+", "--", name.lower())
        page = (site / "ops" / slug / "index.html").read_text(encoding="utf-8")
        spec = augjax.get_op(name)
        assert f"augjax show {name}" in page and "Reference semantics" in page
        for param in spec.params:
            assert f"<code>{param}</code>" in page, (name, param)
        with Image.open(site / "ops" / f"{slug}.png") as im:
            assert im.width > 96 and im.height > 96  # the original and at least one drawing
        # the docstring rendered: no raw reST, no pre-formatted block cutting its lines
        assert ":func:" not in page and "``" not in page and 'class="language-text' not in page
        assert f"<p>{html.escape(spec.summary.split('``')[0], quote=False)}" in page, name
    for name, factory in augjax.policies.FACTORIES.items():
        page = (site / "ops" / name / "index.html").read_text(encoding="utf-8")
        assert f"augjax info {name}" in page and "Reference semantics" in page
        for param in inspect.signature(factory).parameters:
            assert f"<code>{param}</code>" in page, (name, param)
        for entry in augjax.policies.describe_policy(name)["ops"]:
            assert entry["name"] in page, (name, entry["name"])
        with Image.open(site / "ops" / f"{name}.png") as im:
            assert im.width > 96 * 6  # the photo and its draws
        assert f'href="{name}/"' in index


def test_the_api_reference_names_each_object_by_its_public_path():
    """Each ``:::`` entry of the API reference is the name users import (``augjax.warmup``,
    not ``augjax._runtime.execution.warmup.warmup``): its heading and anchor are that path, and the
    object behind it is the one ``augjax`` gives."""
    import importlib

    page = (ROOT / "docs" / "reference" / "api.md").read_text()
    targets = re.findall(r"^::: (\S+)$", page, flags=re.M)
    assert len(targets) > 30
    private = [t for t in targets if any(part.startswith("_") for part in t.split("."))]
    assert not private, f"private paths in the API reference: {private}"
    missing = []
    for target in targets:
        module, _, name = target.rpartition(".")
        try:
            importlib.import_module(target)
        except ImportError:
            try:
                getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                missing.append(target)
    assert not missing, f"not importable as written: {missing}"
