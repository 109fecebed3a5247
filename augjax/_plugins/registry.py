"""The registry: ops discovered from ``augjax.ops`` entry points, loaded on first use.

Listing reads entry-point metadata only and never imports plugin code; an op's module is
imported the first time the op is asked for, once, even when several threads ask at the same
time (DALI calls from its worker threads). Each op has a record (:class:`OpRecord`) with its
status and the reason:

- ``available``: found, not imported yet;
- ``loaded``: imported and checked;
- ``failed``: importing it raised, it is not an op, or its entry point is malformed;
- ``incompatible``: written for another authoring-API major version;
- ``disabled``: its distribution is switched off by the environment (never imported);
- ``conflict``: several distributions register the name, or a plugin reuses a built-in name;
  select one with its qualified name ``"distribution:name"``.

Environment switches, read at each scan (the first query and every :meth:`Registry.refresh`),
modelled on pytest's:

- ``AUGJAX_DISABLE_PLUGIN_AUTOLOAD=1``: only augjax's own ops (and ``AUGJAX_PLUGINS``);
- ``AUGJAX_PLUGINS=dist1,dist2``: allow list of plugin distributions (fnmatch patterns);
- ``AUGJAX_DISABLE_PLUGINS=dist*,...``: deny list (never imported);
- ``AUGJAX_PREFER=name=dist,...``: resolves a name registered by several plugin distributions;
- ``AUGJAX_STRICT_PLUGINS=1``: plugin problems are errors. The first query imports every enabled
  plugin op and raises :class:`~augjax.PluginLoadError` listing all failures, conflicts and
  unknown switch values (for CI; in this mode listing does import plugins);
- ``AUGJAX_PLUGIN_IMPORT_TIMEOUT=seconds`` (default 60; ``0``/``off``: no limit): a plugin op
  whose import takes longer is ``failed`` (:class:`~augjax.PluginTimeoutError`); the import
  runs in a helper thread, which cannot be stopped and keeps running in the background
  (:mod:`augjax._plugins.timed_import` says what that implies).

augjax's own ops are never disabled and never shadowed.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import sys
import threading
import warnings
from collections.abc import Iterable
from typing import Any

from augjax._plugins.loader import (  # importlib_metadata: the backport or the stdlib module
    CORE_DISTRIBUTION,
    GROUP,
    STATUSES,
    OpRecord,
    Switches,
    apply_policy,
    importlib_metadata,
    load_entry_point,
    natural_key,
    norm_dist,
    scan_entry_points,
)
from augjax._plugins.timed_import import ImportTimedOut, in_import_thread, load_with_timeout
from augjax.errors import (
    AugjaxWarning,
    OpConflictError,
    OpDisabledError,
    OpIncompatibleError,
    OpNotFoundError,
    OpPackMismatchError,
    ParamError,
    PluginLoadError,
    PluginTimeoutError,
)

__all__ = [
    "CORE_DISTRIBUTION",
    "GROUP",
    "POLICY_NAMES",
    "REGISTRY",
    "STATUSES",
    "OpRecord",
    "Registry",
    "natural_key",
]

_USABLE = ("available", "loaded")

#: The automatic-augmentation policies (``augjax.policies.FACTORIES``): not ops, but named
#: here so that asking the registry for one says where it is without importing JAX.
POLICY_NAMES = ("rand_augment", "trivial_augment_wide", "auto_augment", "augmix")


class _Snapshot:
    """One scan's result. Never mutated after publication except for the records' load state,
    so readers always see a whole registry (refresh swaps in a new snapshot)."""

    def __init__(self, records: list[OpRecord], notes: list[str], switches: Switches) -> None:
        self.records = tuple(records)
        self.notes = tuple(notes)
        self.switches = switches
        self.by_name: dict[str, tuple[OpRecord, ...]] = {}
        for r in self.records:
            self.by_name[r.name] = (*self.by_name.get(r.name, ()), r)
        self.by_qualified = {r.qualified_name: r for r in self.records}
        self.strict_lock = threading.RLock()
        self.strict_thread: int | None = None
        self.strict_done = False
        self.strict_problems: tuple[str, ...] = ()
        self.strict_cause: BaseException | None = None


class Registry:
    """Discovers and loads ops. ``augjax.REGISTRY`` backs ``augjax.list_ops``, ``augjax.get_op``
    and ``augjax.ops``; separate instances are cheap (tests build one per case).

    Args:
        path: directories to scan instead of ``sys.path`` (ops must still be importable).
    """

    def __init__(self, path: Iterable[str] | None = None) -> None:
        self._path = None if path is None else list(path)
        self._lock = threading.Lock()
        self._snap: _Snapshot | None = None

    # -- scanning -----------------------------------------------------------------------------
    def _build(self, previous: _Snapshot | None) -> _Snapshot:
        records, notes = scan_entry_points(self._path)
        switches = Switches.from_env()
        notes += apply_policy(records, switches)
        if previous is not None:  # keep ops already imported when their entry point is unchanged
            old = {_identity(r): r for r in previous.records if r.state == "loaded"}
            for r in records:
                prev = old.get(_identity(r))
                if prev is not None and r.state == "available":
                    r.spec, r.state = prev.spec, "loaded"
        if notes and not switches.strict:
            for note in notes:
                warnings.warn(f"augjax: {note}", AugjaxWarning, stacklevel=4)
        return _Snapshot(records, notes, switches)

    def _ensure(self) -> _Snapshot:
        snap = self._snap
        if snap is None:
            with self._lock:
                snap = self._snap
                if snap is None:
                    snap = self._snap = self._build(None)
        if snap.switches.strict:
            self._strict(snap)
        return snap

    def _strict(self, snap: _Snapshot) -> None:
        if not snap.strict_done and snap.strict_thread is not None and in_import_thread():
            return  # a plugin imported (in its own thread) by the strict pass queries us
        if not snap.strict_done:
            with snap.strict_lock:
                if snap.strict_thread == threading.get_ident():
                    return  # a plugin being imported by the strict pass queries the registry
                if not snap.strict_done:
                    snap.strict_thread = threading.get_ident()
                    try:
                        self._strict_pass(snap)
                    finally:
                        snap.strict_thread = None
                        snap.strict_done = True
        if snap.strict_problems:
            lines = "\n".join(f"  - {p}" for p in snap.strict_problems)
            raise PluginLoadError(
                f"AUGJAX_STRICT_PLUGINS is set and {len(snap.strict_problems)} plugin "
                f"problem(s) were found:\n{lines}",
                op="",
            ) from snap.strict_cause

    def _strict_pass(self, snap: _Snapshot) -> None:
        problems, cause = list(snap.notes), None
        for r in snap.records:
            if r.is_core or r.policy == "disabled":
                continue
            if r.policy == "conflict":
                problems.append(f"op {r.name!r} from {r.source}: conflict: {r.policy_reason}")
                continue
            self._load(r)
            if r.state != "loaded":
                problems.append(f"op {r.name!r} from {r.source}: {r.state}: {r.state_reason}")
                cause = cause or r.error
        snap.strict_problems, snap.strict_cause = tuple(problems), cause

    def refresh(self) -> None:
        """Rescans the installed distributions (after ``pip install`` or uninstall in this
        process) and swaps the new registry in atomically. Ops already obtained keep working;
        records whose entry point is unchanged keep their loaded op; failed ones are retried."""
        importlib.invalidate_caches()
        finder = getattr(importlib_metadata, "MetadataPathFinder", None)
        if finder is not None:
            finder.invalidate_caches()
        with self._lock:
            self._snap = self._build(self._snap)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the last scan noticed: unknown switch values, distributions without metadata."""
        return self._ensure().notes

    # -- queries ------------------------------------------------------------------------------
    def records(self, pattern: str = "*", *, include_all: bool = False,
                distribution: str | None = None) -> list[OpRecord]:
        """Records whose name or qualified name matches the fnmatch ``pattern``. Only usable ops
        (available, loaded) unless ``include_all``; ``distribution`` filters by distribution."""
        want = None if distribution is None else norm_dist(distribution)
        out = []
        for r in self._ensure().records:
            if want is not None and norm_dist(r.distribution) != want:
                continue
            if not (fnmatch.fnmatchcase(r.name, pattern)
                    or fnmatch.fnmatchcase(r.qualified_name, pattern)):
                continue
            if include_all or r.status in _USABLE:
                out.append(r)
        return out

    def list_ops(self, pattern: str = "*", *, distribution: str | None = None) -> list[str]:
        """Names of the usable ops matching the fnmatch ``pattern``, in natural order. A name in
        conflict is listed by its qualified names. Imports no plugin code."""
        want = None if distribution is None else norm_dist(distribution)
        names = set()
        for r in self._ensure().records:
            if r.state not in _USABLE or r.policy == "disabled":
                continue
            if want is not None and norm_dist(r.distribution) != want:
                continue
            if r.policy is None and fnmatch.fnmatchcase(r.name, pattern):
                names.add(r.name)
            elif r.policy == "conflict" and (fnmatch.fnmatchcase(r.name, pattern)
                                             or fnmatch.fnmatchcase(r.qualified_name, pattern)):
                names.add(r.qualified_name)
        return sorted(names, key=natural_key)

    def record(self, name: str) -> OpRecord:
        """The record that ``name`` (plain or ``"distribution:name"``) selects.

        Raises:
            OpNotFoundError: unknown name (with close matches).
            OpConflictError: the plain name is registered by several distributions.
        """
        snap = self._ensure()
        if ":" in name:
            dist, _, plain = name.partition(":")
            dist, plain = norm_dist(dist.strip()), plain.strip()
            hit = snap.by_qualified.get(f"{dist}:{plain}")
            if hit is not None:
                return hit
            owners = tuple(r.qualified_name for r in snap.by_name.get(plain, ()))
            installed = any(norm_dist(r.distribution) == dist for r in snap.records)
            where = (f"distribution {dist!r} registers no op {plain!r}" if installed else
                     f"distribution {dist!r} is not installed (or has no augjax ops)")
            if owners:
                raise OpPackMismatchError(
                    f"augjax: {name!r} asks for {plain!r} from {dist!r}, but {where}; it is "
                    f"registered as {', '.join(map(repr, owners))}: another pack's op, not "
                    f"used in its place (install {dist}, or ask for one of those by name)",
                    name=name, op=plain, wanted=dist, found=owners,
                )
            raise OpNotFoundError(f"augjax: {where}", name=name)
        group = snap.by_name.get(name, ())
        if not group and name in POLICY_NAMES:
            raise OpNotFoundError(
                f"augjax: {name!r} is a policy, not a registered op: use augjax.{name}(...) "
                f"(`augjax info {name}` shows its op space)",
                name=name,
            )
        if not group:
            known = sorted({r.name for r in snap.records})
            close = tuple(difflib.get_close_matches(name, known, n=3, cutoff=0.6))
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            if not any(r.is_core for r in snap.records):
                hint += ("; augjax's own ops are not registered either: install augjax "
                         "(from a checkout: pip install -e .) so that its entry points exist")
            raise OpNotFoundError(
                f"augjax: no op named {name!r} is registered{hint} "
                f"(see augjax.list_ops() or `augjax list --all`)",
                name=name,
                suggestions=close,
            )
        usable = sorted((r for r in group if r.policy is None),
                        key=lambda r: r.state not in _USABLE)
        if usable:
            return usable[0]
        conflict = [r for r in group if r.policy == "conflict"]
        if conflict:
            candidates = tuple(r.qualified_name for r in conflict)
            raise OpConflictError(
                f"augjax: op {name!r} is registered by several distributions "
                f"({', '.join(f'{r.distribution}=={r.version}' for r in conflict)}) and none is "
                f"chosen; select one: {', '.join(map(repr, candidates))}, or set "
                f"AUGJAX_PREFER={name}=<distribution>",
                name=name,
                candidates=candidates,
            )
        return group[0]

    def record_of(self, spec: Any) -> OpRecord | None:
        """The record whose entry point gives the op object ``spec``, or None (an op declared
        outside any entry point, e.g. in a script). Imports nothing: an op not yet loaded is
        matched through its entry point's module when that module is already imported (it is,
        if ``spec`` came from it)."""
        for r in self._ensure().by_name.get(getattr(spec, "name", None), ()):
            if r.spec is spec or (r.spec is None and _imported_target(r) is spec):
                return r
        return None

    def config_name(self, spec: Any) -> str:
        """The name a config (``augjax.to_dict``) gives ``spec``: ``"distribution:name"`` for a
        pack's op, so that loading it builds that pack's op or refuses (never another pack's op
        of the same name); the plain name for augjax's own ops (never shadowed) and for ops
        outside any entry point.

        Raises:
            ParamError: ``spec`` is not the registered op of its name, which a config would
                build in its place.
        """
        record = self.record_of(spec)
        if record is not None:
            return spec.name if record.is_core else record.qualified_name
        for r in self.records(spec.name, include_all=True):
            if r.name == spec.name and r.state == "loaded":
                raise ParamError(
                    f"to_dict: the op {spec.name!r} given is not the registered op of that name "
                    f"({r.source}); a config names ops by their registered name, so it would "
                    f"load as that one: register this op under a name of its own",
                    op="to_dict", param="step")
        return spec.name

    def get(self, name: str) -> Any:
        """The op spec for ``name`` (plain or ``"distribution:name"``), importing it on first use.

        Raises:
            OpNotFoundError, OpConflictError: see :meth:`record`.
            OpDisabledError: the op's distribution is switched off.
            OpIncompatibleError: the op is written for another authoring-API major version.
            PluginLoadError: importing the op failed (chained to the cause).
        """
        r = self.record(name)
        if r.policy == "disabled":
            raise OpDisabledError(
                f"augjax: op {r.name!r} from {r.source} is disabled: {r.policy_reason}",
                op=r.name, distribution=r.distribution, version=r.version,
                entry_point=r.entry_point,
            )
        if r.state == "available":
            self._load(r)
        if r.state == "loaded":
            return r.spec
        where = dict(op=r.name, distribution=r.distribution, version=r.version,
                     entry_point=r.entry_point)
        message = f"augjax: op {r.name!r} from {r.source} {r.state}: {r.state_reason}"
        if isinstance(r.error, ImportTimedOut):
            raise PluginTimeoutError(message, timeout=r.error.timeout, **where) from r.error
        cls = OpIncompatibleError if r.state == "incompatible" else PluginLoadError
        raise cls(message, **where) from r.error

    def _load(self, r: OpRecord) -> None:
        """Imports ``r`` once: other threads wait for the first; a plugin that asks for its own
        op while it is being imported gets a clear error instead of a deadlock."""
        if r.state != "available":
            return
        me = threading.current_thread()  # not get_ident(): idents of dead threads are reused
        if r._loading is me:  # before the lock: its holder waits for us
            _circular(r)
        with r._lock:
            if r.state != "available":
                return
            if r._loading is me:
                _circular(r)
            r._loading = me
            snap = self._snap  # an op loaded while a plugin imports: inline, in its time
            timeout = (None if r.is_core or snap is None or in_import_thread() else
                       snap.switches.import_timeout)
            try:
                state, reason, spec, error = load_with_timeout(r, timeout, load_entry_point)
            finally:
                r._loading = None
            r.spec, r.error, r.state_reason = spec, error, reason
            r.state = state  # last: a reader that sees "loaded" sees the spec


def _circular(r: OpRecord) -> None:
    raise PluginLoadError(
        f"augjax: op {r.name!r} from {r.source} was requested while its own module is being "
        f"imported (circular import)",
        op=r.name, distribution=r.distribution, version=r.version, entry_point=r.entry_point,
    )


def _imported_target(r: OpRecord) -> Any:
    """The object ``r``'s entry point names, if its module is already imported; else None."""
    module, _, attr = r.entry_point.partition(":")
    obj = sys.modules.get(module.strip())
    for part in attr.strip().split(".") if obj is not None else ():
        obj = getattr(obj, part, None)
    return obj


def _identity(r: OpRecord) -> tuple[str, ...]:
    return (norm_dist(r.distribution), r.version, r.name, r.entry_point, r.location)


#: The registry behind ``augjax.list_ops``, ``augjax.get_op`` and ``augjax.ops``.
REGISTRY = Registry()
