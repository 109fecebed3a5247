"""Writing installed distributions by hand, to test discovery without building a wheel.

``write_distribution`` lays out what ``pip install --target DIR`` would: a
``<name>-<version>.dist-info`` directory with ``METADATA`` and ``entry_points.txt``, plus the
plugin's module files. Put ``DIR`` on ``sys.path`` (``monkeypatch.syspath_prepend``) and use a
fresh ``augjax._plugins.registry.Registry()`` or ``augjax.refresh()``.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import textwrap
from collections.abc import Mapping

__all__ = ["write_distribution"]

_GROUP = "augjax.ops"


def write_distribution(
    root: str | os.PathLike[str],
    name: str,
    version: str = "1.0",
    *,
    ops: Mapping[str, str] | None = None,
    modules: Mapping[str, str] | None = None,
    editable: bool = False,
    egg_info: bool = False,
    metadata: bool = True,
) -> pathlib.Path:
    """Writes an installed distribution into ``root`` and returns its metadata directory.

    Args:
        root: a directory that is (or will be) on ``sys.path``.
        name: the distribution name (``Name:`` in ``METADATA``).
        version: its version.
        ops: entry points of the ``augjax.ops`` group, op name -> ``"module:object"``.
        modules: files to write under ``root``, relative path -> source (dedented).
        editable: also write ``direct_url.json`` marking an editable install, as pip does.
        egg_info: write ``<name>.egg-info`` with ``PKG-INFO`` (a setuptools develop tree)
            instead of a ``dist-info`` directory.
        metadata: write ``METADATA``/``PKG-INFO``; ``False`` leaves a stale, nameless copy.
    """
    root = pathlib.Path(root)
    stem = re.sub(r"[-.]+", "_", name)
    meta_dir = root / (f"{stem}.egg-info" if egg_info else f"{stem}-{version}.dist-info")
    meta_dir.mkdir(parents=True, exist_ok=True)
    if metadata:
        (meta_dir / ("PKG-INFO" if egg_info else "METADATA")).write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            f"Summary: test distribution {name}\n", encoding="utf-8")
    if ops:
        lines = [f"[{_GROUP}]"] + [f"{op} = {target}" for op, target in ops.items()]
        (meta_dir / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if editable and not egg_info:
        (meta_dir / "direct_url.json").write_text(
            json.dumps({"url": root.as_uri(), "dir_info": {"editable": True}}), encoding="utf-8")
    for rel, source in (modules or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return meta_dir
