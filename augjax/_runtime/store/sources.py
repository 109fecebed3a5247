"""What a module's source imports and who installed it, and the digests of files: what
:mod:`augjax._runtime.store.identity` reads to name the code a stored program came from.
A module's imports are every ``import`` and ``from ... import`` statement in its file (those in
function bodies too) and its module attributes; a module of an installed, non-editable
distribution is pinned by that distribution's name and version instead of followed."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any

def _followed(name: str, own: set[str]) -> bool:
    """Whether the imports of module ``name`` are followed: those of the top-level packages
    ``own`` (the ops' packs) and of code outside any distribution; not those of the standard
    library, augjax (hashed whole) and other installed distributions (pinned by version)."""
    top = name.partition(".")[0]
    return not (_stdlib(top) or top == "augjax" or (top not in own and _distribution(top)))


def _imports(names: set[str], own: set[str]) -> set[str]:
    """``names`` and what their modules import (every import statement in a module's source,
    in function bodies too, and module attributes that are modules, but a package's own
    submodules, or classes and functions of other modules), transitively, as far as
    :func:`_followed` goes. Only modules this process imported count (one a trace did not
    import did not make the program)."""
    found: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in found:
            continue
        found.add(name)
        parent = name.rpartition(".")[0]
        if parent:
            stack.append(parent)  # a package's __init__ runs when its module is imported
        if not _followed(name, own):
            continue
        module = sys.modules.get(name)
        if module is None:
            continue
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            stack.extend(n for n in _source_imports(path, _package(module, name))
                         if n in sys.modules)
        for value in list(vars(module).values()):
            if isinstance(value, types.ModuleType):
                # not a package's own submodules: importing one sets it on the package (its
                # source names those the package itself imports)
                if not value.__name__.startswith(name + "."):
                    stack.append(value.__name__)
            elif isinstance(value, type) or callable(value):
                other = getattr(value, "__module__", None)
                if isinstance(other, str):
                    stack.append(other)
    return found


def _package(module: Any, name: str) -> str:
    """The package a module's relative imports start from."""
    package = getattr(module, "__package__", None)
    if isinstance(package, str):
        return package
    return name if getattr(module, "__path__", None) is not None else name.rpartition(".")[0]


def _source_imports(path: str, package: str) -> tuple[str, ...]:
    """The modules the source file at ``path`` imports anywhere in it (at module level, in
    function bodies, under conditions); ``from a import b`` names ``a`` and ``a.b`` (``b`` may
    be a module). Empty for a file without readable Python source."""
    if not path.endswith(".py"):
        return ()
    digest = file_digest(path)
    return () if digest is None else _parsed_imports(path, digest, package)


@functools.lru_cache(maxsize=4096)
def _parsed_imports(path: str, digest: str, package: str) -> tuple[str, ...]:
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ()
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                try:
                    base = importlib.util.resolve_name("." * node.level + base, package)
                except (ImportError, ValueError):  # a relative import outside a package
                    continue
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return tuple(dict.fromkeys(names))


def _stdlib(top: str) -> bool:
    return top in sys.stdlib_module_names or top in ("builtins", "__future__")


_distributions: list[dict[str, list[str]]] = []
_distributions_lock = threading.Lock()


def _top_distributions() -> dict[str, list[str]]:
    """Top-level package -> distributions (read once per process, under a lock: reading every
    installed distribution's file list takes ~0.2 s, and threads that exported their first
    programs together each read it, ~4 s of ``augjax demo``'s cold run)."""
    with _distributions_lock:
        if not _distributions:
            try:
                _distributions.append(importlib.metadata.packages_distributions())
            except Exception:  # noqa: BLE001
                _distributions.append({})
        return _distributions[0]


@functools.lru_cache(maxsize=None)
def _distribution(top: str) -> tuple[str, str] | None:
    """(name, version) of the installed, non-editable distribution that provides top-level
    package ``top``; None for code outside one, or installed editable (its files count)."""
    for name in _top_distributions().get(top, ()):
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        direct = dist.read_text("direct_url.json")
        if direct:
            try:
                if json.loads(direct).get("dir_info", {}).get("editable"):
                    return None
            except ValueError:
                return None
        return (dist.metadata["Name"], dist.version)
    return None


_digests: dict[str, tuple[int, int, str]] = {}
_lock = threading.Lock()


def file_digest(path: str) -> str | None:
    """SHA-256 of a file's contents (remembered while its size and mtime stay), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    with _lock:
        known = _digests.get(path)
    if known is not None and known[:2] == (st.st_size, st.st_mtime_ns):
        return known[2]
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
    with _lock:
        _digests[path] = (st.st_size, st.st_mtime_ns, digest)
    return digest
