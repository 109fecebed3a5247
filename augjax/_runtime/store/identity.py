"""A traced program's identity, computed in one place: everything its trace depends on.

Two parts, both read off the steps themselves:

- the **key** (:func:`program_key`): what the program is asked to be. The steps' config (every
  parameter of every step, composites and policies as their configs write them), the module of
  every op found in them at any depth (two packs' ops of one name differ), the program's own
  config (layout, chain position, targets), the input signature, the platform and device kind,
  the JAX, jaxlib and Python versions, the XLA options, and the settings that change a trace:
  every JAX setting but those of caching, logging and dumps (:data:`IGNORED_SETTINGS`),
  ``XLA_FLAGS``, the default backend (some kernels pick their form by it) and augjax's checking
  mode. It names the stored file, and the file repeats it whole (a file of another program
  copied over it is refused).
- the **code** (:func:`code_manifest`): what the program was made of. Every op the trace
  reached (:mod:`augjax._core.reach`: those a policy's op list names and those a composite
  resolves while tracing included), every class and function found in the steps at any depth,
  and what their modules import outside the standard library, as a list of entries:
  ``("augjax", digest)`` for augjax's own source tree, ``("file", path, digest)`` for each of
  those modules (a script, a pack's modules, a helper module of another package), ``("dist",
  name, version)`` for each installed (non-editable) distribution they belong to; what an
  installed distribution's modules import in turn is pinned by its version, not followed.
  A module's imports are read from its source (every ``import`` and ``from ... import``
  statement in the file, those inside function bodies included: a value imported from a helper
  module, a helper a kernel imports when traced) and from its attributes; the modules the ops'
  kernels and samplers imported when they ran in this process
  (:func:`augjax._core.reach.imported_by`: an ``importlib.import_module`` call in a kernel)
  are added. The files and environment variables ops declare (``@op(...,
  data_files=, env_vars=)``) add ``("file", path, digest)`` (``("absent", path)`` for a missing
  file) and ``("env", name, digest of the value or "unset")``.
  Digests are SHA-256 of the files' contents. It is recorded when the program is exported and
  checked (:func:`manifest_current`) before a stored program is used: an edited or upgraded op
  traces afresh.

The key also holds, for each op found in the steps, the path and SHA-256 of the file each of its
functions is written in (one module name loaded from two files gives two keys), the plain values
of the module globals its kernel, sampler and matrix read by name (a constant set at run time)
and the values of the environment variables it declares (programs for two values are kept side
by side). What remains unseen is listed in docs/RELIABILITY.md ("What the store cannot see").

Code without a file (``python -c``, a notebook cell) cannot be checked: such programs are not
stored (:func:`code_manifest` returns None).
"""

from __future__ import annotations

import dataclasses
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

import jax

from augjax._core.reach import imported_by
from augjax._core.spec import OpSpec
from augjax._runtime.store.sources import (
    _distribution,
    _followed,
    _imports,
    _package,
    _source_imports,
    _stdlib,
    file_digest,
)

__all__ = ["IGNORED_SETTINGS", "code_manifest", "manifest_current", "origin", "program_key",
           "settings"]

#: Substrings of JAX settings that never change a trace (caches, logs, dumps, diagnostics).
IGNORED_SETTINGS = ("compilation_cache", "persistent_cache", "logging", "log_compiles",
                    "log_checkpoint", "debug_log", "dump", "pprint", "traceback",
                    "transfer_guard", "cross_host", "explain_cache", "timeout", "source_url",
                    "include_debug_info", "hlo_source_file", "include_full_tracebacks",
                    "captured_constants", "distributed_debug", "share_binary")

#: A walk of a step's objects stops after this many (a safety bound, far above real steps).
MAX_OBJECTS = 200_000


# -- the key ---------------------------------------------------------------------------------
def settings(platform: str) -> dict[str, str]:
    """The settings of this process that change what a trace gives, as strings."""
    from augjax._runtime.execution.checking import checking_enabled

    out = {name: repr(value) for name, value in jax.config.values.items()
           if not any(part in name for part in IGNORED_SETTINGS)}
    out["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "")
    out["default_backend"] = jax.default_backend()
    out["device_kind"] = _device_kind(platform)
    out["checking"] = repr(checking_enabled())
    return out


def _device_kind(platform: str) -> str:
    try:
        return jax.devices({"cuda": "gpu", "rocm": "gpu"}.get(platform, platform))[0].device_kind
    except Exception:  # noqa: BLE001  (no such backend here)
        return ""


def _encode(step: Any) -> Any:
    """A step's config, as augjax.chain's configs write it, read off the step itself."""
    if getattr(step, "kind", None) and hasattr(step, "to_config"):  # composites, policies
        return {"type": step.kind, **step.to_config()}
    params = getattr(step, "params", None)  # an op: its name and configured values
    if not isinstance(params, tuple):
        raise TypeError(f"no config form for {type(step).__name__}")
    return {"type": "op", "name": step.name, "params": [list(p) for p in params]}


def program_key(kind: str, steps: tuple[Any, ...], config: dict[str, Any], signature: Any,
                platform: str, options: dict[str, Any] | None) -> str | None:
    """The program's key (a JSON string), or None when a step has no config form."""
    try:
        encoded = [_encode(step) for step in steps]
    except Exception:  # noqa: BLE001  (a step without a config form: not stored)
        return None
    specs, _, _ = _walk(steps)
    ops = sorted({_origin(s) for s in specs})
    env = sorted({(name, env_digest(name)) for s in specs for name in _declared(s, "env_vars")})
    import jaxlib

    return json.dumps({"kind": kind, "steps": encoded, "ops": ops, "env": env,
                       "config": config,
                       "signature": signature, "platform": platform, "options": options or {},
                       "versions": [jax.__version__, jaxlib.__version__,
                                    list(sys.version_info[:3])],
                       "settings": settings(platform)}, sort_keys=True, default=repr)


def _origin(spec: Any) -> str:
    """An op's declaration (its plain fields: level, channels, targets, ...) and where its
    functions come from: module, qualified name, file (path and SHA-256: one module name loaded
    from two files) and first line of its kernel, sampler and matrix, the plain values their
    closures hold (two ops of one name in one module, or made by one factory with other
    values, are told apart) and the plain values of the module globals they read by name (a
    constant set at run time, ``mypack.SCALE = 0.3``, or drawn at import)."""
    parts = [spec.name]
    for field in dataclasses.fields(spec):  # the declaration (level, targets, channels, ...)
        value = getattr(spec, field.name)
        if not callable(value):
            parts.append(f"{field.name}={_plain(value)}")
    for fn in (spec.kernel, spec.sampler, spec.matrix):
        fn = getattr(fn, "__wrapped__", fn)  # an op declared by its geometry: the geometry
        code = getattr(fn, "__code__", None)
        if code is None:
            parts.append(f"{_module_of(fn)}:{getattr(fn, '__qualname__', type(fn).__name__)}")
            continue
        cells = [_plain(c.cell_contents) for c in (fn.__closure__ or ()) if _filled(c)]
        where = f"{_real_path(code.co_filename)}#{file_digest(code.co_filename)}"
        parts.append(f"{_module_of(fn)}:{fn.__qualname__}@{where}:{code.co_firstlineno}:"
                     f"{cells}:{_global_values(fn, code)}")
    return "|".join(parts)


def origin(spec: Any) -> str:
    """An op's identity as a program's key holds it (:func:`_origin`): its declaration and where
    its functions come from, with the values they read."""
    return _origin(spec)


def _global_values(fn: Any, code: types.CodeType) -> list[str]:
    """``name=value`` for each global that ``fn``'s code (nested functions included) names and
    that holds a plain value (a number, a string, their tuples, a NumPy array)."""
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    scope = getattr(fn, "__globals__", {})
    out = []
    for name in sorted(names):
        value = scope.get(name, _MISSING)
        if value is not _MISSING and _is_plain(value):
            out.append(f"{name}={_plain(value)}")
    return out


_MISSING = object()


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return True
    if isinstance(value, (tuple, list)):
        return len(value) <= 4096 and all(_is_plain(v) for v in value)
    return type(value).__module__ == "numpy" and hasattr(value, "tobytes")


def _plain(value: Any) -> str:
    """A closure value as a stable string: numbers, strings and their tuples as written,
    NumPy arrays by their bytes, anything else by its type (its code is in the manifest)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_plain(v) for v in value) + ")"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__qualname__ + _plain(tuple(
            getattr(value, f.name) for f in dataclasses.fields(value)))
    if callable(value):  # never its repr: that holds a memory address
        return f"{_module_of(value)}:{getattr(value, '__qualname__', type(value).__name__)}"
    if type(value).__module__ == "numpy" and hasattr(value, "tobytes"):
        return f"{value.dtype}{value.shape}:{hashlib.sha256(value.tobytes()).hexdigest()[:16]}"
    return type(value).__qualname__


# -- what the steps are made of --------------------------------------------------------------
def _module_of(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else type(obj).__module__


def _is_spec(obj: Any) -> bool:
    return isinstance(obj, OpSpec)


def _walk(root: Any) -> tuple[list[Any], set[str], set[tuple[str, str]]]:
    """The op specs and the modules of the classes and functions reachable from ``root``
    (dataclass fields, attributes, containers, partials, closures), at any depth, and the
    (source file, module) of each of those functions (a module need not be in
    ``sys.modules``: one loaded from a file by hand)."""
    specs: list[Any] = []
    modules: set[str] = set()
    files: set[tuple[str, str]] = set()
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < MAX_OBJECTS:
        obj = stack.pop()
        if obj is None or isinstance(obj, (str, bytes, int, float, bool, complex)):
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (types.ModuleType, jax.Array)) or hasattr(obj, "__array__"):
            continue
        if isinstance(obj, (tuple, list, set, frozenset)):
            stack.extend(obj)
            continue
        if isinstance(obj, (dict, types.MappingProxyType)):
            stack.extend(obj.values())
            continue
        if isinstance(obj, type):
            modules.add(obj.__module__)
            continue
        if isinstance(obj, functools.partial):
            stack.extend((obj.func, obj.args, obj.keywords))
            continue
        if isinstance(obj, types.MethodType):
            stack.extend((obj.__func__, obj.__self__))
            continue
        if isinstance(obj, types.FunctionType):
            modules.add(_module_of(obj))
            files.add((obj.__code__.co_filename, _module_of(obj)))
            stack.extend(c.cell_contents for c in (obj.__closure__ or ())
                         if _filled(c))
            stack.extend(obj.__defaults__ or ())
            stack.extend((obj.__kwdefaults__ or {}).values())
            wrapped = getattr(obj, "__wrapped__", None)
            if wrapped is not None:
                stack.append(wrapped)
            continue
        if callable(obj) and not hasattr(obj, "__dict__") and not dataclasses.is_dataclass(obj):
            modules.add(_module_of(obj))  # a builtin or C function
            continue
        modules.add(type(obj).__module__)
        if _is_spec(obj):
            specs.append(obj)
        if dataclasses.is_dataclass(obj):
            stack.extend(getattr(obj, f.name, None) for f in dataclasses.fields(obj))
        stack.extend(getattr(obj, "__dict__", {}).values())
        slots = getattr(type(obj), "__slots__", ())
        stack.extend(getattr(obj, s, None) for s in ((slots,) if isinstance(slots, str)
                                                     else slots))
    return specs, modules, files


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:  # an empty cell
        return False
    return True


# -- digests ---------------------------------------------------------------------------------
_lock = threading.Lock()


def _real_path(path: str) -> str:
    return str(Path(path).resolve()) if os.path.isfile(path) else path


def env_digest(name: str) -> str:
    """An environment variable's value as a manifest holds it: ``"unset"``, or the SHA-256 of
    the value (a stored file never holds the value itself)."""
    value = os.environ.get(name)
    return "unset" if value is None else "sha256:" + hashlib.sha256(
        value.encode("utf-8", "surrogateescape")).hexdigest()


_tree: list[str] = []


def _package_root() -> Path:
    """augjax's package folder: the highest folder above this module that is a package (found
    by walking up, not by this module's depth: the store's modules moving into
    ``_runtime/store/`` on 2026-12-06 left the digest reading ``_runtime/`` alone, and a stored
    program outlived an edit of a kernel or an op of augjax's)."""
    here = Path(__file__).resolve().parent
    while (here.parent / "__init__.py").is_file():
        here = here.parent
    return here


def own_sources() -> list[Path]:
    """augjax's own source files: every ``.py`` file of the package, sorted."""
    return sorted(_package_root().rglob("*.py"))


def augjax_digest() -> str:
    """SHA-256 over augjax's own source files (:func:`own_sources`: relative path and
    contents), once a process."""
    with _lock:
        if _tree:
            return _tree[0]
    root = _package_root()
    h = hashlib.sha256()
    for path in own_sources():
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    digest = h.hexdigest()
    with _lock:
        _tree[:] = [digest]
    return digest


def _declared(spec: Any, field: str) -> tuple[str, ...]:
    value = getattr(spec, field, ())
    return tuple(value) if isinstance(value, tuple) else ()


def code_manifest(steps: tuple[Any, ...], reached: list[Any]) -> list[list[str]] | None:
    """The code a program made of ``steps`` depends on (the module doc's entries, sorted), with
    ``reached`` the op specs its trace reached; None where some of it has no file."""
    specs, modules, files = _walk((steps, tuple(reached)))
    own = {_module_of(spec.kernel).partition(".")[0] for spec in specs}
    entries = {("augjax", augjax_digest())}
    for path, name in files:  # functions' own files (a module loaded by hand included)
        if not _followed(name, own) or not os.path.isfile(path):
            continue
        digest = file_digest(path)
        if digest is None:
            return None
        entries.add(("file", _real_path(path), digest))
        modules.update(n for n in _source_imports(path, _package(sys.modules.get(name), name))
                       if n in sys.modules)
    traced = set().union(*(imported_by(spec) for spec in specs))
    strict = _imports(modules, own)
    for name in sorted(strict | _imports(traced, own)):
        entry = _module_entry(name, own, soft=name not in strict)
        if entry is False:
            return None
        entries.update(entry)
    for spec in specs:
        for path in _declared(spec, "data_files"):
            digest = file_digest(path)
            entries.add(("file", path, digest) if digest is not None else ("absent", path))
        for var in _declared(spec, "env_vars"):
            entries.add(("env", var, env_digest(var)))
    return sorted(list(e) for e in entries)


def _module_entry(name: str, own: set[str], soft: bool) -> set[tuple[str, ...]] | bool:
    """A module's manifest entries; False for code without a file (its changes cannot be
    seen), unless ``soft`` (a module some trace of the process imported: skipped then; and
    one of a distribution is pinned by its version alone)."""
    top = name.partition(".")[0]
    if _stdlib(top) or top == "augjax":
        return set()
    out: set[tuple[str, ...]] = set()
    dist = _distribution(top)
    if dist is not None:
        out.add(("dist", *dist))
    module = sys.modules.get(name)
    if module is None or (soft and not _followed(name, own)):
        return out
    path = getattr(module, "__file__", None)
    if path is None:
        if getattr(module, "__path__", None) is not None or soft:
            return out  # a namespace package: no code of its own
        return False
    digest = file_digest(path)
    if digest is None:
        return out if soft else False
    out.add(("file", str(Path(path).resolve()), digest))
    return out


def manifest_current(manifest: Any) -> bool:
    """Whether every entry of a stored program's code manifest still holds here."""
    if not isinstance(manifest, list) or not manifest:
        return False
    for entry in manifest:
        if not isinstance(entry, list) or not all(isinstance(e, str) for e in entry):
            return False
        kind, *rest = entry
        if kind == "augjax" and rest == [augjax_digest()]:
            continue
        if kind == "file" and len(rest) == 2 and file_digest(rest[0]) == rest[1]:
            continue
        if kind == "dist" and len(rest) == 2 and _installed_version(rest[0]) == rest[1]:
            continue
        if kind == "absent" and len(rest) == 1 and not os.path.lexists(rest[0]):
            continue
        if kind == "env" and len(rest) == 2 and env_digest(rest[0]) == rest[1]:
            continue
        return False
    return True


@functools.lru_cache(maxsize=None)
def _installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
