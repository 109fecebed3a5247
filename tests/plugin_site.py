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
    """Source of a plugin module declaring identity-like ops ``names`` (authoring API 2.0:
    ``kernel(image, params, *, amount)``); with ``random=True`` each also has a ``sample=`` hook
    that draws a field ``u`` the kernel ignores."""
    api_kw = "" if api is None else f", api_version={api!r}"
    parts = ["import augjax", "from augjax import Param", extra]
    if random:
        parts.append("import jax\n\n\ndef _draw(key, meta, params, **config):\n"
                     "    return {'u': jax.random.uniform(key, ())}\n")
    for name in names:
        hook = ", sample=_draw" if random else ""
        parts.append(
            f"@augjax.op({name!r}, params={{'amount': Param(0.0, low=0.0, high=1.0, "
            f"neutral=0.0)}}{hook}{api_kw})\n"
            f"def {name}(image, params, *, amount):\n"
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
    yield augjax._plugins.registry.REGISTRY
    monkeypatch.undo()
    augjax.refresh()


def plugin_modules_imported(root) -> list[str]:
    """Names of modules in ``sys.modules`` whose file lies under ``root``."""
    return sorted(n for n, m in list(sys.modules.items())
                  if str(getattr(m, "__file__", None) or "").startswith(str(root)))
