"""The registry: ops discovered from ``augjax.ops`` entry points, loaded on first use.

Listing reads entry-point metadata only and never imports plugin code; an op's module is
imported the first time the op is asked for, once, under a lock (DALI calls from worker threads).
Each op has a record with its status:

- ``available``: found, not imported yet;
- ``loaded``: imported and checked;
- ``failed``: importing it raised, or it is not an op, or its name does not match;
- ``incompatible``: written for another authoring-API major version;
- ``disabled``: its distribution is switched off by the environment;
- ``conflict``: several distributions register the name; pick one with ``"dist:name"``.

Environment switches (read at each scan, like pytest's):
``AUGJAX_DISABLE_PLUGIN_AUTOLOAD=1`` loads only augjax's own ops (and ``AUGJAX_PLUGINS``);
``AUGJAX_PLUGINS=dist1,dist2`` loads only these plugin distributions;
``AUGJAX_DISABLE_PLUGINS=glob,...`` never loads matching distributions;
``AUGJAX_PREFER=name=dist,...`` resolves a name registered by several distributions;
``AUGJAX_STRICT_PLUGINS=1`` turns plugin failures and conflicts into errors.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import os
import re
import threading
from typing import Any

try:  # the backport behaves the same on every Python; the stdlib one is the fallback
    import importlib_metadata
except ImportError:  # pragma: no cover - importlib-metadata is a declared dependency
    import importlib.metadata as importlib_metadata  # type: ignore[no-redef]

from augjax._registry_load import load_entry_point
from augjax.errors import (
    OpConflictError,
    OpDisabledError,
    OpIncompatibleError,
    OpNotFoundError,
    PluginLoadError,
)

__all__ = ["OpRecord", "Registry", "GROUP", "CORE_DISTRIBUTION", "natural_key"]

GROUP = "augjax.ops"
CORE_DISTRIBUTION = "augjax"
STATUSES = ("available", "loaded", "failed", "incompatible", "disabled", "conflict")


def natural_key(text: str) -> list[Any]:
    """Sort key that orders ``op2`` before ``op10``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _norm(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


@dataclasses.dataclass
class OpRecord:
    """What the registry knows of one op: where it comes from and whether it works."""

    name: str
    distribution: str
    version: str
    entry_point: str
    status: str = "available"
    reason: str = ""
    spec: Any = None
    error: BaseException | None = None
    _ep: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def qualified_name(self) -> str:
        """``"distribution:name"``: selects this op even when the name is in conflict."""
        return f"{_norm(self.distribution)}:{self.name}"

    @property
    def is_core(self) -> bool:
        return _norm(self.distribution) == CORE_DISTRIBUTION

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (no plugin import)."""
        return {
            "name": self.name,
            "qualified_name": self.qualified_name,
            "distribution": self.distribution,
            "version": self.version,
            "entry_point": self.entry_point,
            "status": self.status,
            "reason": self.reason,
        }


class Registry:
    """Discovers and loads ops. One global instance backs ``augjax.list_ops`` and ``augjax.ops``;
    separate instances are cheap (for tests)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._records: list[OpRecord] | None = None
        self._by_name: dict[str, list[OpRecord]] = {}

    # -- scanning -----------------------------------------------------------------------------
    def _scan(self) -> list[OpRecord]:
        seen: dict[tuple[str, str, str], OpRecord] = {}
        for ep in importlib_metadata.entry_points(group=GROUP):
            dist = getattr(ep, "dist", None)
            dist_name = dist.metadata["Name"] if dist is not None else "<unknown>"
            version = dist.version if dist is not None else "?"
            ident = (_norm(dist_name), ep.name, ep.value)
            if ident in seen:  # the same distribution found twice: one op
                continue
            seen[ident] = OpRecord(ep.name, dist_name, version, ep.value, _ep=ep)
        records = sorted(seen.values(), key=lambda r: (natural_key(r.name), r.distribution))
        self._apply_policy(records)
        return records

    def _apply_policy(self, records: list[OpRecord]) -> None:
        env = os.environ
        autoload = env.get("AUGJAX_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0")
        allow = {_norm(d) for d in env.get("AUGJAX_PLUGINS", "").split(",") if d.strip()}
        deny = [_norm(d) for d in env.get("AUGJAX_DISABLE_PLUGINS", "").split(",") if d.strip()]
        for r in records:
            dist = _norm(r.distribution)
            if r.is_core:
                continue
            if any(fnmatch.fnmatchcase(dist, pat) for pat in deny):
                r.status, r.reason = "disabled", "distribution in AUGJAX_DISABLE_PLUGINS"
            elif allow and dist not in allow:
                r.status, r.reason = "disabled", "distribution not in AUGJAX_PLUGINS"
            elif not autoload and dist not in allow:
                r.status, r.reason = "disabled", "AUGJAX_DISABLE_PLUGIN_AUTOLOAD is set"
        prefer = dict(
            item.split("=", 1) for item in env.get("AUGJAX_PREFER", "").split(",") if "=" in item
        )
        by_name: dict[str, list[OpRecord]] = {}
        for r in records:
            by_name.setdefault(r.name, []).append(r)
        for name, group in by_name.items():
            live = [r for r in group if r.status != "disabled"]
            if len(live) < 2:
                continue
            core = [r for r in live if r.is_core]
            chosen = core or [r for r in live if _norm(r.distribution) == _norm(prefer.get(name, ""))]
            for r in live:
                if chosen and r is chosen[0]:
                    continue
                others = ", ".join(o.qualified_name for o in live if o is not r)
                r.status = "conflict"
                r.reason = (
                    f"shadows the built-in op (use {r.qualified_name!r})" if core
                    else f"also registered by {others}; pick one with its qualified name or "
                    f"AUGJAX_PREFER={name}=<distribution>"
                )
        self._by_name = by_name

    def _ensure(self) -> list[OpRecord]:
        records = self._records
        if records is None:
            with self._lock:
                if self._records is None:
                    self._records = self._scan()
                    if os.environ.get("AUGJAX_STRICT_PLUGINS", "") not in ("", "0"):
                        self._strict_check()
                records = self._records
        return records

    def _strict_check(self) -> None:
        bad = [r for r in self._records or () if r.status == "conflict"]
        if bad:
            r = bad[0]
            raise OpConflictError(
                f"AUGJAX_STRICT_PLUGINS: op {r.name!r} from {r.distribution}=={r.version}: "
                f"{r.reason}",
                name=r.name,
                candidates=tuple(o.qualified_name for o in self._by_name[r.name]),
            )
        for r in self._records or ():
            if r.status == "available":
                self._load(r)

    def refresh(self) -> None:
        """Rescans the entry points (after a pip install/uninstall in this process). Ops already
        obtained keep working; records of unchanged entry points keep their loaded op."""
        importlib_metadata.distributions.cache_clear() if hasattr(
            importlib_metadata.distributions, "cache_clear") else None
        import importlib

        importlib.invalidate_caches()
        with self._lock:
            old = {(r.distribution, r.version, r.name, r.entry_point): r for r in self._records or ()}
            records = self._scan()
            for r in records:
                prev = old.get((r.distribution, r.version, r.name, r.entry_point))
                if prev is not None and prev.status == "loaded" and r.status == "available":
                    r.status, r.spec = "loaded", prev.spec
            self._records = records

    # -- queries ------------------------------------------------------------------------------
    def records(self, pattern: str = "*", *, include_all: bool = False) -> list[OpRecord]:
        """Records whose name (or qualified name) matches ``pattern``; hidden statuses (disabled,
        conflict, failed, incompatible) only with ``include_all``."""
        out = []
        for r in self._ensure():
            if not (fnmatch.fnmatchcase(r.name, pattern)
                    or fnmatch.fnmatchcase(r.qualified_name, pattern)):
                continue
            if include_all or r.status in ("available", "loaded"):
                out.append(r)
        return out

    def list_ops(self, pattern: str = "*") -> list[str]:
        """Names of the usable ops matching the fnmatch ``pattern``, in natural order. A name in
        conflict is listed by its qualified names. Imports no plugin code."""
        names = set()
        for r in self._ensure():
            if r.status in ("available", "loaded") and fnmatch.fnmatchcase(r.name, pattern):
                names.add(r.name)
            elif r.status == "conflict" and fnmatch.fnmatchcase(r.name, pattern):
                names.add(r.qualified_name)
        return sorted(names, key=natural_key)

    def record(self, name: str) -> OpRecord:
        """The record that ``name`` (plain or ``"dist:name"``) selects.

        Raises:
            OpNotFoundError: unknown name (with close matches).
            OpConflictError: the plain name is registered by several distributions.
        """
        records = self._ensure()
        if ":" in name:
            dist, _, plain = name.partition(":")
            hits = [r for r in records
                    if r.name == plain and _norm(r.distribution) == _norm(dist)]
            if hits:
                return hits[0]
        group = [r for r in self._by_name.get(name, [])]
        if not group:
            names = sorted({r.name for r in records})
            close = tuple(difflib.get_close_matches(name, names, n=3, cutoff=0.6))
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise OpNotFoundError(
                f"augjax: no op named {name!r} is registered{hint} "
                f"(see augjax.list_ops() or `augjax list`)",
                name=name,
                suggestions=close,
            )
        usable = [r for r in group if r.status not in ("conflict", "disabled")]
        if usable:
            return usable[0]
        conflict = [r for r in group if r.status == "conflict"]
        if len(conflict) > 1:
            candidates = tuple(r.qualified_name for r in conflict)
            raise OpConflictError(
                f"augjax: op {name!r} is registered by several distributions "
                f"({', '.join(f'{r.distribution}=={r.version}' for r in conflict)}); pick one: "
                f"{', '.join(map(repr, candidates))}, or set AUGJAX_PREFER={name}=<distribution>",
                name=name,
                candidates=candidates,
            )
        return group[0]

    def get(self, name: str) -> Any:
        """The op spec for ``name``, importing its module on first use.

        Raises:
            OpNotFoundError, OpConflictError, OpDisabledError, OpIncompatibleError,
            PluginLoadError (chained to the cause).
        """
        r = self.record(name)
        if r.status == "loaded":
            return r.spec
        if r.status == "available":
            self._load(r)
        if r.status == "loaded":
            return r.spec
        where = f"from {r.distribution}=={r.version} (entry point {r.name} = {r.entry_point})"
        cls = {"disabled": OpDisabledError, "incompatible": OpIncompatibleError}.get(
            r.status, PluginLoadError)
        if r.status == "conflict":
            where += f": {r.reason}"
            cls = PluginLoadError
        err = cls(
            f"augjax: op {r.name!r} {where} is {r.status}: {r.reason}",
            op=r.name,
            distribution=r.distribution,
            version=r.version,
            entry_point=r.entry_point,
        )
        raise err from r.error

    def _load(self, r: OpRecord) -> None:
        with self._lock:
            if r.status != "available":
                return
            status, reason, spec, error = load_entry_point(r)
            r.status, r.reason, r.spec, r.error = status, reason, spec, error
        if status != "loaded" and os.environ.get("AUGJAX_STRICT_PLUGINS", "") not in ("", "0"):
            raise PluginLoadError(
                f"AUGJAX_STRICT_PLUGINS: op {r.name!r} from {r.distribution}=={r.version} "
                f"(entry point {r.entry_point}) is {status}: {reason}",
                op=r.name, distribution=r.distribution, version=r.version,
                entry_point=r.entry_point,
            ) from error


#: The registry behind ``augjax.list_ops``, ``augjax.get_op`` and ``augjax.ops``.
REGISTRY = Registry()
