"""Fixtures for registry tests: real distributions written into a directory on ``sys.path``."""

from __future__ import annotations

import sys

import pytest

import augjax

ENV_VARS = (
    "AUGJAX_DISABLE_PLUGIN_AUTOLOAD",
    "AUGJAX_PLUGINS",
    "AUGJAX_DISABLE_PLUGINS",
    "AUGJAX_PREFER",
    "AUGJAX_STRICT_PLUGINS",
)


def op_source(*names: str, api: str | None = None, extra: str = "", random: bool = False) -> str:
    """Source of a plugin module declaring deterministic identity-like ops ``names``."""
    api_kw = "" if api is None else f", api_version={api!r}"
    parts = ["import augjax", "from augjax import Param", extra]
    for name in names:
        key = "key, " if random else ""
        parts.append(
            f"@augjax.op({name!r}, params={{'amount': Param(0.0, low=0.0, high=1.0, "
            f"neutral=0.0)}}, random={random}{api_kw})\n"
            f"def {name}({key}image, *, amount):\n"
            f"    '''Returns the image (a test op; ``amount`` is ignored).'''\n"
            f"    return image\n"
        )
    return "\n\n".join(parts) + "\n"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """An empty directory on ``sys.path`` with the AUGJAX_* switches cleared; the modules
    imported from it are dropped from ``sys.modules`` afterwards."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name, mod in list(sys.modules.items()):
        if str(getattr(mod, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.fixture
def global_registry(site, monkeypatch):
    """``augjax.REGISTRY`` rescanned with ``site`` on the path, and rescanned again without it
    (and with the environment restored) afterwards."""
    augjax.refresh()
    yield augjax._registry.REGISTRY
    monkeypatch.undo()
    augjax.refresh()


def plugin_modules_imported(root) -> list[str]:
    """Names of modules in ``sys.modules`` whose file lies under ``root``."""
    return sorted(n for n, m in list(sys.modules.items())
                  if str(getattr(m, "__file__", None) or "").startswith(str(root)))
