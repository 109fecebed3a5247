"""Which values become program arguments, decided once and kept beside the stored programs.

:func:`augjax._runtime.execution.bound.liftable` decides, for an op's numeric parameter, whether a
value can be an argument of the programs instead of a constant of their trace: two small traces
(``jax.make_jaxpr``) per op and parameter (:func:`augjax._runtime.execution.bound._takes_traced`).
Every process made them again: a third of the timm-style chain's warm first call, a quarter of
``augjax demo``'s. :func:`decided` keeps each decision as a file of its own in
``<program store>/decisions`` (one small file per decision: reading one costs ~0.1 ms, a
file per batch of decisions saves nothing measurable and would need merging writers), in the
program store's file format and with its checks (:mod:`augjax._runtime.store.files`):

- the **key** holds everything the decision's traces read: the op's declaration and origin
  (:func:`augjax._runtime.store.identity.origin`: module, files and their SHA-256, closure
  values and the plain module globals its functions read), the parameter, every parameter's
  value as the traces had it (types kept: ``1``, ``1.0`` and ``True`` apart), the JAX, jaxlib
  and Python versions and the settings that change a trace
  (:func:`augjax._runtime.store.identity.settings`); a file is named by its hash and repeats
  it whole;
- the **code** it was traced from (:func:`augjax._runtime.store.identity.code_manifest` of
  the op and the ops its traces reached: augjax's own source tree, the op's modules and what
  they import) is recorded and checked before use;
- a file that is not the user's, others may write, a link, damaged, cut or another decision's
  is deleted and decided afresh with one :class:`~augjax.errors.ProgramStoreWarning`; a stale
  one (edited code) is decided afresh silently; a body other than ``0`` or ``1`` is damage;
- warnings the decision's traces gave (a kernel that warns when traced) are kept with it and
  given again when it is read, as a stored program's are.

Values of other types (NumPy scalars, arrays, objects) and code without a file are decided as
before, in the process, and not kept. The store's switches turn this off with it
(``AUGJAX_PROGRAM_CACHE=0``, the compilation cache off): the decision is then made as before.
A decision only chooses between two programs with the same primitives (that is what it
checks), so a process's outputs are the same with or without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

from augjax._runtime.store import files as program_file

from augjax._runtime.store import programs as program_store
from augjax._runtime.store.eviction import bound_folder
from augjax.errors import ProgramStoreWarning

__all__ = ["MAX_FILES", "decided", "folder"]

#: The most decisions kept; the least recently used go first (a file is a few KB).
MAX_FILES = 4096
_SUFFIX = ".jaxlift"
_bounded: list[Path] = []  # folders bounded by this process (once each)
_trusted: dict[Path, bool] = {}


def folder() -> Path | None:
    """Where decisions are kept (inside the program store's folder), or None when the store
    is off."""
    base = program_store.store_dir()
    if base is None:
        return None
    path = base / "decisions"
    known = _trusted.get(path)
    if known is None:
        problem = program_file.folder_problem(path)
        if problem:
            warnings.warn(f"augjax: stored lifting decisions off: {problem}",
                          ProgramStoreWarning, stacklevel=5)
        known = _trusted[path] = problem is None
    return path if known else None


def decided(spec: Any, params: tuple[tuple[str, Any], ...], name: str,
            decide: Callable[[Any, dict[str, Any], str], bool]) -> bool:
    """``decide(spec, dict(params), name)``, read from the store where it was kept for exactly
    this op, code, parameters and settings; else made (and kept)."""
    where = folder()
    key = None if where is None else _key(spec, params, name)
    if key is None:
        return decide(spec, dict(params), name)
    path = where / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}{_SUFFIX}"
    found = _read(path, key)
    if found is not None:
        answer, caught = found
        _give(caught)
        return answer
    from augjax._core.reach import recording
    from augjax._runtime.store.identity import code_manifest

    # the traces' warnings, caught to be kept (catch_warnings is process-wide: one at a time,
    # with the program store's exports)
    with program_store.warnings_lock(), warnings.catch_warnings(record=True) as caught_now:
        warnings.simplefilter("always")
        with recording() as reached:
            answer = bool(decide(spec, dict(params), name))
    caught = [(w.category, str(w.message)) for w in caught_now]
    code = code_manifest((spec,), list(reached))
    if code is not None:
        names = [[f"{c.__module__}.{c.__qualname__}", m] for c, m in caught]
        if program_file.write(path, key, b"1" if answer else b"0", code, names) \
                and where not in _bounded:
            _bounded.append(where)  # once a process: the folder is read in full
            bound_folder(where, keep=path, suffix=_SUFFIX, limit=MAX_FILES)
    _give(caught)
    return answer


def _key(spec: Any, params: tuple[tuple[str, Any], ...], name: str) -> str | None:
    """The decision's key (a JSON string), or None where a value has no exact plain form."""
    import jax
    import jaxlib

    from augjax._runtime.store.identity import origin, settings

    try:
        values = [[k, _plain(v)] for k, v in params]
        op = origin(spec)
    except Exception:  # noqa: BLE001  (a value or an op that cannot be written down: not kept)
        return None
    return json.dumps({"kind": "lift-decision", "op": op, "param": name, "params": values,
                       "versions": [jax.__version__, jaxlib.__version__,
                                    list(sys.version_info[:3])],
                       "settings": settings(jax.default_backend())}, sort_keys=True)


def _plain(value: Any) -> Any:
    """``value`` as JSON with its exact types (floats by their hex form: every bit, the sign of
    a zero and NaN kept); raises ``TypeError`` for any other value."""
    kind = type(value)
    if value is None:
        return ["none"]
    if kind is float:
        return ["float", value.hex()]
    if kind in (bool, int, str):
        return [kind.__name__, value]
    if kind in (tuple, list):
        return [kind.__name__, [_plain(v) for v in value]]
    raise TypeError(f"no plain form for {kind.__name__}")


def _read(path: Path, key: str) -> tuple[bool, list[tuple[type[Warning], str]]] | None:
    """The decision kept at ``path`` and its warnings, verified; None where there is none or it
    was refused (then removed; one warning unless stale)."""
    from augjax._runtime.store.identity import manifest_current

    try:
        stored = program_file.read(path, key, manifest_current)
        if stored is None:
            return None
        if stored.body not in (b"0", b"1"):
            raise program_file.Refused("damaged", "its answer is neither 0 nor 1")
        caught = [(program_store.warning_category(c), str(m)) for c, m in stored.warnings]
    except program_file.Refused as refused:
        if refused.reason != "stale":  # stale: edited code, expected: decided again silently
            warnings.warn(f"augjax: stored lifting decision {path.name} refused "
                          f"({refused.reason}: {refused.detail}); it is deleted and made "
                          f"afresh", ProgramStoreWarning, stacklevel=6)
        program_file.remove(path)
        return None
    except (TypeError, ValueError):  # warnings of another form: damage a digest let through
        warnings.warn(f"augjax: stored lifting decision {path.name} refused (damaged: "
                      f"unreadable warnings); it is deleted and made afresh",
                      ProgramStoreWarning, stacklevel=6)
        program_file.remove(path)
        return None
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    return stored.body == b"1", caught


def _give(caught: list[tuple[type[Warning], str]]) -> None:
    for category, message in caught:
        warnings.warn(message, category, stacklevel=6)
