"""Traced programs kept on disk: a warm process skips tracing and lowering, not just compiling.

JAX's persistent cache (:mod:`augjax._runtime.store.compile_cache`) keeps compiled executables, but
a new process still traces and lowers each program before it can look one up: for the timm-style
chain that is most of a warm process's time to its first batch (about 1 s of CPU here; 6 s on an
H200 with the Pallas colour jitter). :class:`StoredProgram` wraps augjax's jitted sample and apply
programs: on the first call for an input signature it looks for the program's ``jax.export``
serialization (StableHLO) in ``<cache dir>/augjax-programs``; found and verified, it runs that
(the compiled executable then comes from JAX's cache); not found, it exports the program (one
trace, as before), writes it, and runs it. Either way the process runs the same exported module
with the same XLA options, so the compiled executable is shared by cold and warm processes and
results do not depend on the store.

What a program depends on is computed in one place, :mod:`augjax._runtime.store.identity`:
its key names the file and is repeated in it; the code it was traced from (every op the trace
reached, their modules and what those import) is recorded in the file and checked before use.
A file is checked whole before JAX parses it (:mod:`augjax._runtime.store.files`): another
user's file, one others may write, a damaged one or another program's is deleted and rebuilt
with one :class:`~augjax.errors.ProgramStoreWarning`; a stale one (edited or upgraded code) is
rebuilt silently. Warnings the trace gave (a channels-first batch given as HWC) are kept with the
program and given again when it is loaded.

Off when the compilation cache is off (``AUGJAX_COMPILATION_CACHE=0``) or with
``AUGJAX_PROGRAM_CACHE=0``; without the ``flatbuffers`` package (JAX's serialization needs it);
when the store's folder is another user's or writable by others (one warning); inside any trace
of the caller's (``jax.jit``, ``vmap``: the trace lowers for its own platform, which a stored
program's inputs do not tell), for inputs over several devices or platforms, and for steps that
cannot be written as a config or whose code has no file: these trace as before, with the same
XLA options. An input on no device (a NumPy array) counts as on ``jax.default_device``'s
platform where one is set.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import jax
from jax.sharding import SingleDeviceSharding

from augjax._core.reach import recording
from augjax._runtime.store import executables
from augjax._runtime.store import files as program_file
from augjax._runtime.store import lapack
from augjax._runtime.store.chosen import ByOutputs, outputs_of
from augjax._runtime.store.eviction import bound_folder
from augjax._runtime.store.identity import code_manifest, manifest_current, program_key
from augjax.errors import ProgramStoreWarning
from augjax.kernels.embedded import in_own_program, own_program
from augjax.kernels.portable import top_level as _top_level, with_portable

__all__ = ["StoredProgram", "enabled", "load_count", "store_dir"]

_OFF = ("0", "false", "off", "no")
#: The most programs kept; the least recently used go first.
MAX_FILES = 512
_SUFFIX = ".jaxprog"
#: Custom calls without JAX's cross-version guarantee that a stored program may hold: Pallas'
#: Triton kernels and the row-major layout constraint at a chain's batch-level steps
#: (``kernels/boundary.py``). A stored file is keyed by the JAX and jaxlib versions, so it is
#: never read by another version.
_UNVERSIONED_CALLS = ("__gpu$xla.gpu.triton", "LayoutConstraint")


def store_dir() -> Path | None:
    """Where programs are kept (beside JAX's cache in use), or None when the store is off."""
    from augjax._runtime.store.compile_cache import compilation_cache_dir

    if os.environ.get("AUGJAX_PROGRAM_CACHE", "1").strip().lower() in _OFF:
        return None
    base = compilation_cache_dir()
    if not base or "://" in base:  # off, or a remote (gs://) cache: not kept here
        return None
    try:
        import flatbuffers  # noqa: F401  (jax.export's serialization needs it)
    except ImportError:
        return None
    folder = Path(base) / "augjax-programs"
    return folder if _trusted(folder) else None


_folders: dict[Path, bool] = {}
#: One export at a time (its catch_warnings is process-wide): the compile ahead's helper
#: thread exports beside the caller's thread (augjax._runtime.execution.ahead); lifting decisions
#: (augjax._runtime.store.lifts) catch their traces' warnings under it too (reentrant: a
#: decision made inside an export's trace).
_EXPORTING = threading.RLock()


def _forked() -> None:
    """In a forked child: a lock of its own (a thread of the parent's may have held it)."""
    global _EXPORTING
    _EXPORTING = threading.RLock()


def warnings_lock() -> Any:
    """The lock held while a trace's warnings are caught (``warnings.catch_warnings`` is
    process-wide)."""
    return _EXPORTING


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
_loads = [0]


def load_count() -> int:
    """How many stored programs this process has loaded (each instead of a trace)."""
    return _loads[0]


def _trusted(folder: Path) -> bool:
    """Whether ``folder`` may hold programs (checked once a process; one warning if not)."""
    known = _folders.get(folder)
    if known is None:
        problem = program_file.folder_problem(folder)
        if problem:
            warnings.warn(f"augjax: program store off: {problem}; stored programs are only "
                          f"used from a folder of this user's that others cannot write "
                          f"(AUGJAX_CACHE_DIR moves it)", ProgramStoreWarning, stacklevel=4)
        known = _folders[folder] = problem is None
    return known


def enabled() -> bool:
    """Whether traced programs are kept on disk in this process."""
    return store_dir() is not None


# -- the wrapper -----------------------------------------------------------------------------
def _leaf_signature(leaf: Any) -> Any:
    """(shape, dtype, weak type, platform) of an input, or None where the store is not used."""
    if isinstance(leaf, jax.core.Tracer):
        return None
    if isinstance(leaf, jax.ShapeDtypeStruct):  # an input to come (a precompile)
        if type(leaf.sharding) is not SingleDeviceSharding:
            return None
        platform = next(iter(leaf.sharding.device_set)).platform
        return (leaf.shape, str(leaf.dtype), bool(leaf.weak_type), platform)
    if isinstance(leaf, jax.Array):
        try:
            devices = leaf.devices()
        except Exception:  # noqa: BLE001
            return None
        if len(devices) != 1:
            return None
        platform = next(iter(devices)).platform
        return (leaf.shape, str(leaf.dtype), bool(getattr(leaf, "weak_type", False)), platform)
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        return None
    return (tuple(shape), str(dtype), False, _default_platform())


def _default_platform() -> str:
    """The platform an input on no device (a NumPy array) runs on: ``jax.default_device``'s
    where one is set, else the default backend's."""
    device = jax.config.jax_default_device
    if device is None:
        return jax.default_backend()
    return device if isinstance(device, str) else device.platform


def _fast_signature(leaf: Any) -> Any:
    """What a call's input is specialised to, cheaply (every call reads it): an array's
    shape, dtype, weak type and device; None where the store is not used. The spelled-out
    :func:`_leaf_signature` names the stored file."""
    kind = _KINDS.get(type(leaf))
    if kind is None:
        kind = _KINDS[type(leaf)] = {"ArrayImpl": "array", "PRNGKeyArray": "key",
                                           "ShapeDtypeStruct": "struct"}.get(
            type(leaf).__name__, "other")
    if kind == "array":
        sharding = leaf.sharding
        if type(sharding) is SingleDeviceSharding:
            return (leaf.shape, leaf.dtype, leaf.weak_type, sharding)
    elif kind == "key":  # a typed key's sharding is computed; its devices are not
        devices = leaf.devices()
        if len(devices) == 1:
            return (leaf.shape, leaf.dtype, next(iter(devices)))
    elif kind == "struct":  # an input to come, as the array of its form reads
        if type(leaf.sharding) is SingleDeviceSharding:
            if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
                return (leaf.shape, leaf.dtype, next(iter(leaf.sharding.device_set)))
            return (leaf.shape, leaf.dtype, leaf.weak_type, leaf.sharding)
        return None
    return _leaf_signature(leaf)


_KINDS: dict[type, str] = {}
_UNDECIDED = object()  # options chosen by the outputs, not chosen yet


def _frozen(options: dict[str, Any] | None) -> Any:
    """``options`` as a hashable value (to drop repeated candidates)."""
    return None if options is None else tuple(sorted(options.items()))


class StoredProgram:
    """A jitted program (``jax.jit``) whose traced form is kept on disk per input signature;
    anything else (``lower``, ``trace``, ``eval_shape``) goes to the jitted program."""

    def __init__(self, fn: Any, describe: Any, compiler_options: dict[str, Any] | ByOutputs
                 | None = None):
        self._reached: dict[int, Any] = {}  # the op specs any trace of ``fn`` reached
        # Two traces: augjax's own program (its top-level calls, exports, and calls inside
        # another of its programs), traced under ``embedded.own_program``, and the program as
        # a caller's trace inlines it (``_caller``), whose fusion boundaries must hold under the
        # caller's options (augjax.kernels.embedded). Two jits: JAX caches each one's traces.
        own = self._recorded(fn, own=True)
        self._jitted = jax.jit(own)
        self._caller = jax.jit(self._recorded(fn, own=False))
        # XLA options apply to a top-level call only (JAX refuses them on a jit inside a
        # trace): such a call runs ``_top``, a call under a trace the plain program. Every
        # program has the options that keep its bits the same on every CPU. Options chosen by
        # the program's outputs (augjax._runtime.store.chosen) are chosen at first need.
        self._own = own
        self._by_outputs = compiler_options if isinstance(compiler_options, ByOutputs) else None
        self._chosen = _UNDECIDED if self._by_outputs else with_portable(compiler_options)
        self._top_jit: Any = None
        self._describe = describe  # () -> (kind, steps, config), or None: never kept
        self._checked = False
        self._runs: dict[Any, Any] = {}
        self._exported: dict[int, Any] = {}  # id(run) -> its jax.export module (out_shapes)
        # (file, device) -> its run: inputs that differ only in what the file's key leaves
        # out (a NumPy batch, then a jax.Array of it) share one loaded, compiled program
        self._by_file: dict[tuple[Path, Any], Any] = {}
        self._lock = threading.Lock()

    @property
    def _options(self) -> dict[str, Any] | None:
        """The XLA options of a top-level call (chosen by a probe of the outputs if still
        undecided)."""
        if self._chosen is _UNDECIDED:
            self._chosen = with_portable(self._by_outputs.decide())
        return self._chosen

    @property
    def _top(self) -> Any:
        """The jitted program a top-level call runs where nothing is stored."""
        if self._top_jit is None:
            options = self._options
            self._top_jit = jax.jit(self._own, compiler_options=options) if options \
                else self._jitted
        return self._top_jit

    def _stored_choice(self, describe: tuple[Any, ...], signature: Any, platform: str,
                       folder: Path) -> tuple[str, Path, Any, list] | None:
        """For options still to be chosen by the outputs: the stored program under the option
        set its outputs choose, as ``(key, path, exported, warnings)`` (that set then chosen),
        or None where none is stored (the probe decides)."""
        for options in dict.fromkeys(map(_frozen, map(with_portable,
                                                      self._by_outputs.candidates))):
            options = dict(options) if options is not None else None
            key = program_key(*describe, signature, platform, options)
            if key is None:
                return None
            path = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}{_SUFFIX}"
            if not path.exists():
                continue
            exported, caught = _load(path, key)
            if exported is not None and with_portable(
                    self._by_outputs.choose(outputs_of(exported))) == options:
                self._chosen = options
                return key, path, exported, caught
        return None

    def _recorded(self, fn: Any, own: bool) -> Any:
        """``fn``, noting the ops each of its traces reaches (however it is traced: a call,
        an export, ``eval_shape``), so that a stored program's code manifest names them;
        ``own``: traced as augjax's own program (:func:`augjax.kernels.embedded.own_program`)."""

        @functools.wraps(fn)
        def traced(*args: Any) -> Any:
            with recording() as reached, own_program() if own else contextlib.nullcontext():
                out = fn(*args)
            for spec in reached:
                self._reached.setdefault(id(spec), spec)
            return out

        return traced

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)

    def __call__(self, *args: Any) -> Any:
        if not _top_level():  # inside a trace, which lowers for its own platform
            return (self._jitted if in_own_program() else self._caller)(*args)
        return self._resolve(args)(*args)

    def precompile(self, *args: Any) -> None:
        """Compiles the program a top-level call on ``args`` runs, without running it: ``args``
        are arrays, or ``jax.ShapeDtypeStruct`` with a single-device sharding where the values
        are not known yet (:mod:`augjax._runtime.execution.ahead`); the call then finds it
        compiled."""
        if _top_level():
            run = self._resolve(args)
            if not isinstance(run, jax.stages.Compiled):  # a kept executable is compiled
                run.lower(*args).compile()

    def out_shapes(self, *args: Any) -> Any:
        """The outputs' shapes and dtypes (``jax.ShapeDtypeStruct``) of a top-level call on
        ``args``: read off the stored program where there is one (a warm process traces
        nothing for it), else ``eval_shape``."""
        run = self._resolve(args)
        held = self._exported.get(id(run))
        if held is None or held[0] is not run:
            return self._jitted.eval_shape(*args)
        exported = held[1]
        return jax.tree_util.tree_unflatten(
            exported.out_tree, [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                for a in exported.out_avals])

    def _resolve(self, args: tuple[Any, ...]) -> Any:
        """The jitted function a top-level call on ``args`` runs (stored, loaded or plain)."""
        if self._describe is None:
            return self._top
        if not self._checked:  # decided once per program: off costs nothing per call after
            self._checked = True
            if store_dir() is None:
                self._describe = None
                return self._top
        leaves, tree = jax.tree_util.tree_flatten(args)
        fast = []
        for leaf in leaves:
            s = _fast_signature(leaf)
            if s is None:  # not stored; the same XLA options as a stored program's
                return self._top
            fast.append(s)
        # JAX's settings that change a trace (x64, the default device, ...) key the runs too:
        # a setting changed within the process gets its own program, as jax.jit's does.
        lookup = (tree, tuple(fast), _trace_context())
        run = self._runs.get(lookup)
        if run is None:
            with self._lock:
                run = self._runs.get(lookup)
                if run is None:
                    run = self._prepare(args, leaves, tree)
                    self._runs[lookup] = run
        return run

    def _prepare(self, args: tuple[Any, ...], leaves: list[Any], tree: Any):
        folder = store_dir()
        if folder is None:
            return self._top
        sig = [_leaf_signature(leaf) for leaf in leaves]
        if any(s is None for s in sig) or len({s[3] for s in sig}) > 1:
            return self._top  # inputs on several platforms: JAX decides where it runs
        platform = _lowering_platform(sig[0][3] if sig else _default_platform())
        kind, steps, config = self._describe()
        found = None
        if self._chosen is _UNDECIDED:  # a warm process reads the outputs off the stored program
            found = self._stored_choice((kind, steps, config), [str(tree), sig], platform, folder)
        if found is not None:
            key, path, exported, caught = found
        else:
            key = program_key(kind, steps, config, [str(tree), sig], platform, self._options)
            if key is None:
                self._describe = None
                return self._top
            path = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}{_SUFFIX}"
            held = self._by_file.get((path, _call_device(leaves)))
            if held is not None:
                return held
            exported, caught = _load(path, key)
        from jax import export

        if exported is not None:
            _loads[0] += 1
        else:
            try:  # (one export at a time: catch_warnings is process-wide, not per thread)
                with _EXPORTING, warnings.catch_warnings(record=True) as caught_now:
                    warnings.simplefilter("always")
                    exported = export.export(
                        self._jitted, platforms=(platform,),
                        disabled_checks=[export.DisabledSafetyCheck.custom_call(target)
                                         for target in _UNVERSIONED_CALLS])(*args)
                caught = [(w.category, str(w.message)) for w in caught_now]
            except Exception:  # noqa: BLE001  (not exportable, or a bad input: trace as before,
                return self._top  # which raises the input's error)
            code = code_manifest(steps, list(self._reached.values()))
            if code is None:  # code without a file: its changes could not be seen
                self._describe = None
                return self._top
            names = [(f"{c.__module__}.{c.__qualname__}", m) for c, m in caught]
            if program_file.write(path, key, bytes(exported.serialize()), code, names):
                _bound(folder, keep=path)
        for category, message in caught:
            warnings.warn(message, category, stacklevel=5)
        lapack.install()  # its lowering sets up SciPy's LAPACK only where it calls LAPACK
        # The device named: one compiled program for committed inputs (DALI's jax_function
        # hands them, a stored sampler returns them), uncommitted ones (jnp.asarray, NumPy) and
        # a mixture; jax.jit keys on commitment and compiled each form apart.
        device = _call_device(leaves)
        run = jax.jit(exported.call, compiler_options=self._options,
                      in_shardings=SingleDeviceSharding(device))
        # its executable kept beside it: a warm process neither lowers it nor reads JAX's cache
        run = executables.attach(run, folder, exported, args, device, self._options)
        self._exported[id(run)] = (run, exported)
        self._by_file[(path, device)] = run
        return run


def _call_device(leaves: list[Any]) -> Any:
    """The device a call on ``leaves`` (on one platform) runs on, as ``jax.jit`` picks it: a
    committed input's, else JAX's default device."""
    for leaf in leaves:
        if isinstance(leaf, jax.Array) and leaf.committed:
            return next(iter(leaf.devices()))
    device = jax.config.jax_default_device
    if device is None:
        return jax.devices()[0]
    return jax.devices(device)[0] if isinstance(device, str) else device


def _trace_context() -> Any:
    return _jax_trace_context() if _jax_trace_context is not None else None


try:  # JAX's own key of the settings that change a trace (what jax.jit's cache reads)
    from jax._src.config import trace_context as _jax_trace_context
except ImportError:  # pragma: no cover  (then the key of a stored file still holds them)
    _jax_trace_context = None


def _lowering_platform(device_platform: str) -> str:
    """The platform name ``jax.export`` lowers for (a CUDA device's platform is ``"gpu"``, its
    lowering platform ``"cuda"``)."""
    from jax import export

    if device_platform == jax.default_backend():
        return export.default_export_platform()
    return {"gpu": "cuda"}.get(device_platform, device_platform)


def _load(path: Path, key: str) -> tuple[Any, list[tuple[type[Warning], str]]]:
    """The stored program at ``path`` and its warnings, verified; ``(None, [])`` where there is
    none or it was refused (then removed: rebuilt by the caller; one warning unless stale)."""
    from jax import export

    try:
        stored = program_file.read(path, key, manifest_current)
        if stored is None:
            return None, []
        exported = export.deserialize(bytearray(stored.body))
        caught = [(warning_category(c), str(m)) for c, m in stored.warnings]
    except program_file.Refused as refused:
        if refused.reason != "stale":  # stale: an edited op, expected: rebuilt silently
            _refused(path, refused.reason, refused.detail)
        program_file.remove(path)
        return None, []
    except Exception as err:  # noqa: BLE001  (verified bytes JAX still refuses)
        _refused(path, "unreadable", f"{type(err).__name__}: {err}"[:200])
        program_file.remove(path)
        return None, []
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    return exported, caught


def _refused(path: Path, reason: str, detail: str) -> None:
    warnings.warn(f"augjax: stored program {path.name} refused ({reason}: {detail}); it is "
                  f"deleted and traced afresh", ProgramStoreWarning, stacklevel=6)


def warning_category(name: str) -> type[Warning]:
    """The warning class a stored ``module.QualName`` names (``UserWarning`` where none is)."""
    module, _, qual = name.rpartition(".")
    obj: Any = sys.modules.get(module)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else UserWarning


def _bound(folder: Path, keep: Path | None = None) -> None:
    bound_folder(folder, keep, _SUFFIX, MAX_FILES)
