"""Discovery and loading of ops: metadata-only scanning of the ``augjax.ops`` entry points, the
environment switches and conflict rules, and importing one entry point and checking it.

Scanning reads ``entry_points.txt`` and ``METADATA`` of installed distributions; it never
imports plugin code. Loading imports exactly one entry point and turns every way it can go wrong
into a status with a reason (a plugin may raise anything at import, ``SystemExit`` included;
only ``KeyboardInterrupt`` propagates).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

try:  # the backport behaves the same on every Python; the stdlib one is the fallback
    import importlib_metadata
except ImportError:  # pragma: no cover - importlib-metadata is a declared dependency
    import importlib.metadata as importlib_metadata  # type: ignore[no-redef]

from augjax._core.spec import API_VERSION, OpSpec
from augjax.errors import AugjaxWarning

__all__ = [
    "CORE_DISTRIBUTION",
    "GROUP",
    "OpRecord",
    "Switches",
    "api_major",
    "apply_policy",
    "load_entry_point",
    "natural_key",
    "norm_dist",
    "scan_entry_points",
    "source_tree_builtins",
]

GROUP = "augjax.ops"
CORE_DISTRIBUTION = "augjax"
#: The environment variable that bounds a plugin op's import, and its default in seconds.
TIMEOUT_ENV = "AUGJAX_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 60.0
STATUSES = ("available", "loaded", "failed", "incompatible", "disabled", "conflict")

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_IDENT = r"[A-Za-z_]\w*"
_VALUE = re.compile(rf"^\s*{_IDENT}(\.{_IDENT})*\s*:\s*{_IDENT}(\.{_IDENT})*\s*$")


def natural_key(text: str) -> list[Any]:
    """Sort key that orders ``op2`` before ``op10``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def norm_dist(dist: str) -> str:
    """A distribution name normalised as PEP 503 does (``Augjax_Contrib`` -> ``augjax-contrib``)."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


@dataclasses.dataclass(frozen=True)
class Switches:
    """The ``AUGJAX_*`` environment switches in effect for one scan."""

    autoload: bool = True
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    prefer: Mapping[str, str] = dataclasses.field(default_factory=dict)
    strict: bool = False
    import_timeout: float | None = DEFAULT_IMPORT_TIMEOUT
    notes: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Switches:
        """Reads ``AUGJAX_DISABLE_PLUGIN_AUTOLOAD``, ``AUGJAX_PLUGINS``, ``AUGJAX_DISABLE_PLUGINS``,
        ``AUGJAX_PREFER``, ``AUGJAX_STRICT_PLUGINS`` and ``AUGJAX_PLUGIN_IMPORT_TIMEOUT`` from
        ``env`` (default ``os.environ``)."""
        env = os.environ if env is None else env
        prefer = {}
        for item in _split(env.get("AUGJAX_PREFER")):
            name, sep, dist = item.partition("=")
            if sep and name.strip() and dist.strip():
                prefer[name.strip()] = norm_dist(dist.strip())
        timeout, notes = _timeout(env.get(TIMEOUT_ENV))
        return cls(
            autoload=not _truthy(env.get("AUGJAX_DISABLE_PLUGIN_AUTOLOAD")),
            allow=tuple(norm_dist(d) for d in _split(env.get("AUGJAX_PLUGINS"))),
            deny=tuple(norm_dist(d) for d in _split(env.get("AUGJAX_DISABLE_PLUGINS"))),
            prefer=prefer,
            strict=_truthy(env.get("AUGJAX_STRICT_PLUGINS")),
            import_timeout=timeout,
            notes=notes,
        )


def _timeout(value: str | None) -> tuple[float | None, tuple[str, ...]]:
    """``AUGJAX_PLUGIN_IMPORT_TIMEOUT``: seconds (> 0), or ``0``/``off``/``none`` for no limit;
    anything else keeps the default, with a note."""
    text = (value or "").strip().lower()
    if not text:
        return DEFAULT_IMPORT_TIMEOUT, ()
    if text in ("0", "off", "none", "no"):
        return None, ()
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if math.isfinite(seconds) and seconds > 0:
        return seconds, ()
    return DEFAULT_IMPORT_TIMEOUT, (
        f"{TIMEOUT_ENV}={value!r} is not a number of seconds > 0 (or 0/off for no limit); "
        f"using {DEFAULT_IMPORT_TIMEOUT:g} s",)


@dataclasses.dataclass(eq=False)
class OpRecord:
    """What the registry knows of one op: where it comes from and whether it works.

    ``status`` is ``disabled`` or ``conflict`` when the scan's rules say so (these ops are never
    imported implicitly), otherwise the load state: ``available`` (not imported yet),
    ``loaded``, ``failed`` or ``incompatible``.
    """

    name: str
    distribution: str
    version: str
    entry_point: str
    location: str = ""
    duplicates: tuple[str, ...] = ()
    policy: str | None = None
    policy_reason: str = ""
    state: str = "available"
    state_reason: str = ""
    spec: Any = None
    error: BaseException | None = None
    _ep: Any = dataclasses.field(default=None, repr=False)
    _lock: Any = dataclasses.field(default_factory=threading.RLock, repr=False)
    _loading: Any = dataclasses.field(default=None, repr=False)

    @property
    def status(self) -> str:
        """One of ``available, loaded, failed, incompatible, disabled, conflict``."""
        return self.policy or self.state

    @property
    def reason(self) -> str:
        """Why the op has its status (empty for available and loaded ops)."""
        return self.policy_reason if self.policy else self.state_reason

    @property
    def qualified_name(self) -> str:
        """``"distribution:name"``: selects this op even when the plain name is in conflict."""
        return f"{norm_dist(self.distribution)}:{self.name}"

    @property
    def is_core(self) -> bool:
        """Whether the op is one of augjax's own."""
        return norm_dist(self.distribution) == CORE_DISTRIBUTION

    @property
    def source(self) -> str:
        """``distribution==version (entry point name = value)``, for messages."""
        return f"{self.distribution}=={self.version} (entry point {self.name} = {self.entry_point})"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (imports nothing)."""
        return {
            "name": self.name,
            "qualified_name": self.qualified_name,
            "distribution": self.distribution,
            "version": self.version,
            "entry_point": self.entry_point,
            "status": self.status,
            "reason": self.reason,
            "load_state": self.state,
            "location": self.location,
            "duplicates": list(self.duplicates),
        }


# -- scanning (metadata only) -------------------------------------------------------------------
def _dist_identity(dist: Any) -> tuple[str | None, str]:
    try:
        meta = dist.metadata
        name, version = meta["Name"], meta["Version"]
    except Exception:  # noqa: BLE001 - unreadable or empty (stale) metadata
        return None, "?"
    return (str(name) if name else None), str(version or "?")


def scan_entry_points(path: Iterable[str] | None = None) -> tuple[list[OpRecord], list[str]]:
    """Reads every ``augjax.ops`` entry point of the distributions on ``path`` (default
    ``sys.path``), without importing anything.

    A distribution found more than once (editable plus regular install, a stale copy, the same
    directory twice on the path) counts once: the first copy on the path wins, as for imports,
    and the other locations are kept in ``OpRecord.duplicates``. Copies without readable
    metadata are skipped.

    Returns:
        The records, and notes about what was skipped.
    """
    kwargs = {} if path is None else {"path": list(path)}
    firsts: dict[str, list[OpRecord]] = {}
    notes: list[str] = []
    for dist in importlib_metadata.distributions(**kwargs):
        text = dist.read_text("entry_points.txt")
        if not text or GROUP not in text:  # cheap filter: most distributions have no augjax ops
            continue
        eps = [ep for ep in dist.entry_points if ep.group == GROUP]
        if not eps:
            continue
        location = str(getattr(dist, "_path", "") or dist)
        name, version = _dist_identity(dist)
        if name is None:
            notes.append(f"{location}: declares augjax.ops entry points but has no readable "
                         f"METADATA (Name, Version); skipped")
            continue
        key = norm_dist(name)
        if key in firsts:
            for r in firsts[key]:
                r.duplicates = (*r.duplicates, location)
            continue
        records: list[OpRecord] = []
        seen: set[str] = set()
        for ep in eps:
            r = OpRecord(ep.name, name, version, ep.value.strip(), location=location, _ep=ep)
            if ep.name in seen:
                r.state, r.state_reason = "failed", (
                    f"{name} declares the entry point {ep.name!r} more than once")
            seen.add(ep.name)
            _static_check(r)
            records.append(r)
        firsts[key] = records
    if path is None and norm_dist(CORE_DISTRIBUTION) not in firsts:
        firsts[norm_dist(CORE_DISTRIBUTION)] = source_tree_builtins()
    out = [r for records in firsts.values() for r in records]
    out.sort(key=lambda r: (natural_key(r.name), norm_dist(r.distribution)))
    return out, notes


def source_tree_builtins(root: str | None = None) -> list[OpRecord]:
    """augjax's own ops when it runs from a source tree without install metadata (a checkout
    on ``PYTHONPATH``): read from the ``augjax.ops`` entry points of the ``pyproject.toml``
    beside the package, the one list they are declared in. Empty when there is none."""
    from pathlib import Path

    base = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    pyproject = base / "pyproject.toml"
    try:
        import tomllib
    except ImportError:  # Python 3.10: no TOML reader in the standard library
        return []
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, ValueError):
        return []
    project = data.get("project", {})
    if project.get("name") != CORE_DISTRIBUTION:
        return []
    version = f"{project.get('version', '0')}+source"
    eps = project.get("entry-points", {}).get(GROUP, {})
    records = []
    for name, value in eps.items():
        ep = importlib_metadata.EntryPoint(name=name, value=value, group=GROUP)
        r = OpRecord(name, CORE_DISTRIBUTION, version, value.strip(), location=str(base), _ep=ep)
        _static_check(r)
        records.append(r)
    return records


def _static_check(r: OpRecord) -> None:
    if r.state != "available":
        return
    if not _NAME.match(r.name):
        r.state, r.state_reason = "failed", (
            f"invalid op name {r.name!r} in entry point {r.name} = {r.entry_point}: names must "
            f"match {_NAME.pattern}")
    elif not _VALUE.match(r.entry_point):
        r.state, r.state_reason = "failed", (
            f"entry point value {r.entry_point!r} is invalid: it must be 'package.module:object' "
            f"(one op per entry point)")


def apply_policy(records: list[OpRecord], switches: Switches) -> list[str]:
    """Marks records ``disabled`` (environment switches) or ``conflict`` (a name registered by
    several distributions), in place. Returns notes about the switches (unknown names, ...).

    Rules: augjax's own ops are never disabled and never shadowed; a plugin op with a built-in
    name is a conflict (reachable only by its qualified name). Among plugin distributions, a
    name registered more than once is a conflict for all of them unless ``AUGJAX_PREFER`` picks
    one.
    """
    notes: list[str] = list(switches.notes)
    plugin_dists = sorted({norm_dist(r.distribution) for r in records if not r.is_core})
    for pat in switches.allow:
        if not any(fnmatch.fnmatchcase(d, pat) for d in plugin_dists):
            notes.append(f"AUGJAX_PLUGINS names {pat!r}, which matches no installed distribution "
                         f"with augjax ops (installed: {', '.join(plugin_dists) or 'none'})")
    for pat in switches.deny:
        if fnmatch.fnmatchcase(CORE_DISTRIBUTION, pat):
            notes.append(f"AUGJAX_DISABLE_PLUGINS pattern {pat!r} matches augjax itself; "
                         f"augjax's own ops cannot be disabled")
    for r in records:
        if r.is_core:
            continue
        dist = norm_dist(r.distribution)
        allowed = any(fnmatch.fnmatchcase(dist, pat) for pat in switches.allow)
        if any(fnmatch.fnmatchcase(dist, pat) for pat in switches.deny):
            r.policy, r.policy_reason = "disabled", (
                f"distribution {dist} matches AUGJAX_DISABLE_PLUGINS="
                f"{','.join(switches.deny)}")
        elif switches.allow and not allowed:
            r.policy, r.policy_reason = "disabled", (
                f"distribution {dist} is not in AUGJAX_PLUGINS={','.join(switches.allow)}")
        elif not switches.autoload and not allowed:
            r.policy, r.policy_reason = "disabled", (
                "AUGJAX_DISABLE_PLUGIN_AUTOLOAD is set (add the distribution to AUGJAX_PLUGINS "
                "to load it)")

    by_name: dict[str, list[OpRecord]] = {}
    for r in records:
        if r.policy is None and r.state == "available":
            by_name.setdefault(r.name, []).append(r)
    for name, group in by_name.items():
        if len(group) < 2:
            continue
        core = [r for r in group if r.is_core]
        preferred = switches.prefer.get(name)
        if core:
            keep = core[0]
            if preferred and preferred != CORE_DISTRIBUTION:
                notes.append(f"AUGJAX_PREFER={name}={preferred} ignored: {name!r} is a built-in "
                             f"op and cannot be shadowed (use '{preferred}:{name}')")
        else:
            hits = [r for r in group if norm_dist(r.distribution) == preferred]
            keep = hits[0] if hits else None
            if preferred and not hits:
                notes.append(f"AUGJAX_PREFER={name}={preferred}: {preferred} does not register "
                             f"{name!r}; candidates: "
                             f"{', '.join(norm_dist(r.distribution) for r in group)}")
        for r in group:
            if r is keep:
                continue
            if core:
                r.policy, r.policy_reason = "conflict", (
                    f"the name {name!r} belongs to augjax's built-in op, which a plugin cannot "
                    f"shadow; select this one as {r.qualified_name!r}")
            else:
                others = ", ".join(repr(o.qualified_name) for o in group if o is not r)
                r.policy, r.policy_reason = "conflict", (
                    f"{name!r} is also registered by {others}" + (
                        f"; AUGJAX_PREFER picks {keep.qualified_name!r}" if keep else
                        f"; select one by qualified name ({r.qualified_name!r}) or set "
                        f"AUGJAX_PREFER={name}=<distribution>"))
    return notes


# -- loading (imports one entry point) ------------------------------------------------------------
#: Per thread: the record a helper thread imports (``record``) and the warnings it keeps for its
#: caller (``said``); see :mod:`augjax._plugins.timed_import`.
import_state = threading.local()


def _warn(message: str, category: type[Warning], stacklevel: int) -> None:
    """``warnings.warn``, or kept for the caller when the import runs in a helper thread."""
    said = getattr(import_state, "said", None)
    if said is not None:
        said.append((message, category))
    else:
        warnings.warn(message, category, stacklevel=stacklevel + 1)


def api_major(version: str) -> int | None:
    """The major number of an API version string (``"1.0"`` -> 1; ``"1.x"``, any 1.x release,
    -> 1), or None if malformed."""
    parts = str(version).split(".")
    if len(parts) == 2 and parts[1] == "x":
        parts = parts[:1]
    return int(parts[0]) if parts[0].isdigit() and all(p.isdigit() for p in parts) else None


def _api_minor(version: str) -> int:
    parts = str(version).split(".")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def _jax_state() -> tuple[Any, ...] | None:
    cfg = getattr(sys.modules.get("jax"), "config", None)  # None while jax is half imported
    if cfg is None:
        return None
    return tuple(getattr(cfg, n, None) for n in ("jax_enable_x64", "jax_default_matmul_precision",
                                                 "jax_default_prng_impl"))


def load_entry_point(record: OpRecord) -> tuple[str, str, Any, BaseException | None]:
    """Imports the entry point of ``record``; returns ``(state, reason, spec, error)``.

    Any exception of the import (``SystemExit`` included) becomes a ``failed`` state;
    ``KeyboardInterrupt`` propagates. A module that cannot be found is classified as the
    entry point's fault when it is the entry point's own module, else as a missing dependency
    (pytest's rule).
    """
    ep, where = record._ep, f"{record.distribution}=={record.version}"
    module = record.entry_point.split(":", 1)[0].strip()
    before = _jax_state()
    try:
        obj = ep.load()
    except KeyboardInterrupt:
        raise
    except ModuleNotFoundError as err:
        own = err.name and (module == err.name or module.startswith(err.name + "."))
        inside = err.name and err.name.split(".")[0] == module.split(".")[0]
        if own:
            reason = (f"entry point {record.name} = {record.entry_point} names module "
                      f"{module!r}, which cannot be found ({err})")
        elif inside:  # the pack's own package lacks a module: its bug, not a dependency
            reason = (f"module {module!r} of {where} imports {err.name!r}, a module of its own "
                      f"package that cannot be found (a file missing from the distribution, or "
                      f"a misspelt import): {err}")
        else:
            reason = f"missing dependency {err.name!r} (required by {where}): {err}"
        return "failed", reason, None, err
    except AttributeError as err:
        if module in sys.modules:  # the module imported; the object is missing
            reason = (f"entry point {record.name} = {record.entry_point}: module {module!r} has "
                      f"no attribute {record.entry_point.split(':', 1)[1].strip()!r}")
        else:
            reason = f"importing {record.entry_point!r} raised AttributeError: {err}"
        return "failed", reason, None, err
    except BaseException as err:  # noqa: BLE001 - a plugin may raise anything, SystemExit too
        reason = f"importing {record.entry_point!r} raised {type(err).__name__}: {err}"
        return "failed", reason, None, err
    after = _jax_state()
    if before is not None and after != before:
        _warn(f"augjax: importing op {record.name!r} from {where} changed global JAX "
              f"configuration {before} -> {after}", AugjaxWarning, stacklevel=3)
    if not isinstance(obj, OpSpec):
        kind = "module" if type(obj).__name__ == "module" else type(obj).__name__
        reason = (f"entry point {record.name} = {record.entry_point} is a {kind}, not an augjax "
                  f"op (declare it with @augjax.op)")
        return "failed", reason, None, None
    if obj.name != record.name:
        reason = (f"entry point {record.name!r} points to an op named {obj.name!r}; the "
                  f"entry-point name must equal the op name")
        return "failed", reason, None, None
    major, host = api_major(obj.api_version), api_major(API_VERSION)
    if major is None:
        reason = (f"op {obj.name!r} declares a malformed authoring API version "
                  f"{obj.api_version!r} (spelled 'MAJOR.MINOR' or 'MAJOR.x': "
                  f"api_version={API_VERSION!r}); this augjax supports API {API_VERSION}")
        return "incompatible", reason, None, None
    if major != host:
        fix = ("upgrade augjax" if major > host else
               f"install a {record.distribution} release built for API {host}.x")
        reason = (f"op {obj.name!r} is written for authoring API {obj.api_version} (major "
                  f"{major}); this augjax supports API {API_VERSION} (major {host}): {fix}")
        return "incompatible", reason, None, None
    if _api_minor(obj.api_version) > _api_minor(API_VERSION):
        _warn(f"augjax: op {obj.name!r} from {where} is written for authoring API "
              f"{obj.api_version}, newer than this augjax's {API_VERSION}; features it "
              f"relies on may be missing", AugjaxWarning, stacklevel=3)
    return "loaded", "", obj, None
