"""Traced programs kept on disk: a warm process skips tracing and lowering, not just compiling.

JAX's persistent cache (:mod:`augjax._runtime.compile_cache`) keeps compiled executables, but a
new process still traces and lowers each program before it can look one up: for the timm-style
chain that is most of a warm process's time to its first batch (about 1 s of CPU here; 6 s on an
H200 with the Pallas colour jitter). :class:`StoredProgram` wraps augjax's jitted sample and apply
programs: on the first call for an input signature it looks for the program's ``jax.export``
serialization (StableHLO) in ``<cache dir>/augjax-programs``; found, it runs that (the compiled
executable then comes from JAX's cache); not found, it exports the program (one trace, as
before), writes it, and runs it. Either way the process runs the same exported module, so the
compiled executable is shared by cold and warm processes and results do not depend on the cache.

The file name hashes everything the traced program depends on: the steps' config (every
parameter), layout, chain position, the inputs' shapes, dtypes and platform, the JAX and jaxlib
versions, the JAX settings that change tracing, and the source files (path, size,
modification time) of augjax and of every module that defines the steps' kernels (a pack, or
``__main__``). Warnings the trace gave (a channels-first batch given as HWC) are kept with the
program and given again when it is loaded.

Off when the compilation cache is off (``AUGJAX_COMPILATION_CACHE=0``) or with
``AUGJAX_PROGRAM_CACHE=0``; without the ``flatbuffers`` package (JAX's serialization needs it);
inside any trace of the caller's (``jax.jit``, ``vmap``: the trace lowers for its own platform,
which a stored program's inputs do not tell), for inputs over several devices or platforms,
and for steps that cannot be written as a config: these trace as before. An input on no
device (a NumPy array) counts as on ``jax.default_device``'s platform where one is set.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import jax
from jax.sharding import SingleDeviceSharding

__all__ = ["StoredProgram", "enabled", "store_dir"]

_OFF = ("0", "false", "off", "no")
#: The most programs kept; the least recently used go first.
MAX_FILES = 512
_SUFFIX = ".jaxprog"
_PROGRAM_WARNINGS = "augjax_warnings"


def store_dir() -> Path | None:
    """Where programs are kept (beside JAX's cache in use), or None when the store is off."""
    from augjax._runtime.compile_cache import compilation_cache_dir

    if os.environ.get("AUGJAX_PROGRAM_CACHE", "1").strip().lower() in _OFF:
        return None
    base = compilation_cache_dir()
    if not base or "://" in base:  # off, or a remote (gs://) cache: not kept here
        return None
    try:
        import flatbuffers  # noqa: F401  (jax.export's serialization needs it)
    except ImportError:
        return None
    return Path(base) / "augjax-programs"


def enabled() -> bool:
    """Whether traced programs are kept on disk in this process."""
    return store_dir() is not None


# -- what a program depends on ---------------------------------------------------------------
_fingerprints: dict[str, str] = {}
_fp_lock = threading.Lock()


def _package_files(top: str) -> list[str]:
    files = []
    for name, module in list(sys.modules.items()):
        if name == top or name.startswith(top + "."):
            path = getattr(module, "__file__", None)
            if path:
                files.append(path)
    return sorted(set(files))


def _package_fingerprint(top: str) -> str:
    """Path, size and modification time of the loaded files of package ``top`` (and of every
    source file under augjax's own folder, loaded or not)."""
    with _fp_lock:
        if top in _fingerprints:
            return _fingerprints[top]
        files = _package_files(top)
        if top == "augjax":
            root = Path(__file__).resolve().parents[1]
            files = sorted({*files, *map(str, root.rglob("*.py"))})
        parts = []
        for path in files:
            try:
                st = os.stat(path)
            except OSError:
                continue
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
        digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
        if top != "__main__":
            _fingerprints[top] = digest
        return digest


def _code_modules(obj: Any, found: set[str], depth: int = 0) -> None:
    """The modules of the classes and functions a step is made of (its spec's kernel, sampler,
    nested steps of composites and policies)."""
    if depth > 6 or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return
    if isinstance(obj, (tuple, list, frozenset, set)):
        for item in obj:
            _code_modules(item, found, depth + 1)
        return
    if isinstance(obj, dict):
        for item in obj.values():
            _code_modules(item, found, depth + 1)
        return
    module = getattr(obj, "__module__", None) if callable(obj) else type(obj).__module__
    if isinstance(module, str):
        found.add(module.split(".")[0])
    if callable(obj) and not hasattr(obj, "__dict__"):
        return
    fields = getattr(obj, "__dataclass_fields__", None)
    values = ([getattr(obj, f, None) for f in fields] if fields
              else list(getattr(obj, "__dict__", {}).values()) if not callable(obj) else [])
    for value in values:
        _code_modules(value, found, depth + 1)


def _settings() -> list[Any]:
    """JAX settings that change what a trace gives."""
    c = jax.config
    names = ("jax_enable_x64", "jax_default_matmul_precision", "jax_threefry_partitionable",
             "jax_default_prng_impl", "jax_numpy_dtype_promotion", "jax_numpy_rank_promotion")
    return [str(getattr(c, name, None)) for name in names]


def _encode(step: Any) -> Any:
    """A step's config (as augjax.chain's configs write it, read off the step itself)."""
    if getattr(step, "kind", None) and hasattr(step, "to_config"):  # composites, policies
        return {"type": step.kind, **step.to_config()}
    spec, params = getattr(step, "spec", None), getattr(step, "params", None)
    if spec is None or not isinstance(params, tuple):
        raise TypeError(f"no config form for {type(step).__name__}")
    return {"type": "op", "name": spec.name, "params": [list(p) for p in params]}


def program_ident(kind: str, steps: tuple[Any, ...], **config: Any) -> str | None:
    """What a program depends on, apart from its inputs: a string (hashed with the input
    signature into the file name), or None when the steps cannot be written as a config."""
    try:
        encoded = json.dumps([_encode(step) for step in steps], sort_keys=True, default=repr)
    except Exception:  # noqa: BLE001  (a step without a config form: not stored)
        return None
    tops: set[str] = {"augjax"}
    _code_modules(steps, tops)
    tops -= {"builtins", "functools", "jax", "jaxlib", "numpy", "typing", "abc"}
    if any(not _package_files(top) for top in tops if top != "augjax"):
        return None  # code without a file (``python -c``, a notebook): its changes can't be seen
    code = {top: _package_fingerprint(top) for top in sorted(tops)}
    import jaxlib

    return json.dumps({"kind": kind, "steps": encoded, "config": config, "code": code,
                       "versions": [jax.__version__, jaxlib.__version__, sys.version_info[:2]],
                       "settings": _settings()}, sort_keys=True, default=repr)


# -- the wrapper -----------------------------------------------------------------------------
def _leaf_signature(leaf: Any) -> Any:
    """(shape, dtype, weak type, platform) of an input, or None where the store is not used."""
    if isinstance(leaf, jax.core.Tracer):
        return None
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
        kind = _KINDS[type(leaf)] = {"ArrayImpl": "array", "PRNGKeyArray": "key"}.get(
            type(leaf).__name__, "other")
    if kind == "array":
        sharding = leaf.sharding
        if type(sharding) is SingleDeviceSharding:
            return (leaf.shape, leaf.dtype, leaf.weak_type, sharding)
    elif kind == "key":  # a typed key's sharding is computed; its devices are not
        devices = leaf.devices()
        if len(devices) == 1:
            return (leaf.shape, leaf.dtype, next(iter(devices)))
    return _leaf_signature(leaf)


_KINDS: dict[type, str] = {}


class StoredProgram:
    """A jitted program (``jax.jit``) whose traced form is kept on disk per input signature;
    anything else (``lower``, ``trace``, ``eval_shape``) goes to the jitted program."""

    def __init__(self, fn: Any, describe: Any, compiler_options: dict[str, Any] | None = None):
        self._jitted = jax.jit(fn)
        # XLA options apply to a top-level call only (JAX refuses them on a jit inside a
        # trace): such a call runs ``_top``, a call under a trace the plain program.
        self._options = compiler_options
        self._top = jax.jit(fn, compiler_options=compiler_options) if compiler_options else \
            self._jitted
        self._describe = describe  # () -> (kind, steps, config), or None: never kept
        self._ident: str | None = None
        self._checked = False
        self._runs: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)

    def __call__(self, *args: Any) -> Any:
        if not _top_level():  # inside a caller's trace, which lowers for its own platform
            return self._jitted(*args)
        if self._describe is None:
            return self._top(*args)
        if not self._checked:  # decided once per program: off costs nothing per call after
            self._checked = True
            if store_dir() is None:
                self._describe = None
                return self._top(*args)
        leaves, tree = jax.tree_util.tree_flatten(args)
        fast = []
        for leaf in leaves:
            s = _fast_signature(leaf)
            if s is None:
                return self._jitted(*args)
            fast.append(s)
        lookup = (tree, tuple(fast))
        run = self._runs.get(lookup)
        if run is None:
            with self._lock:
                run = self._runs.get(lookup)
                if run is None:
                    run = self._prepare(args, leaves, tree)
                    self._runs[lookup] = run
        return run(*args)

    def _prepare(self, args: tuple[Any, ...], leaves: list[Any], tree: Any):
        folder = store_dir()
        if folder is None:
            return self._top
        sig = [_leaf_signature(leaf) for leaf in leaves]
        if any(s is None for s in sig) or len({s[3] for s in sig}) > 1:
            return self._top  # inputs on several platforms: JAX decides where it runs
        signature = (tree, tuple(sig))
        if self._ident is None:
            kind, steps, config = self._describe()
            self._ident = program_ident(kind, steps, **config)
            if self._ident is None:
                self._describe = None
                return self._top
        from jax import export

        platform = _lowering_platform(sig[0][3] if sig else _default_platform())
        digest = hashlib.sha256(f"{self._ident}\n{signature[0]}\n{signature[1]}".encode())
        path = folder / f"{digest.hexdigest()[:40]}{_SUFFIX}"
        loaded = _read(path)
        if loaded is not None:
            exported, caught = loaded
        else:
            try:
                with warnings.catch_warnings(record=True) as caught_now:
                    warnings.simplefilter("always")
                    exported = export.export(
                        self._jitted, platforms=(platform,),
                        disabled_checks=[export.DisabledSafetyCheck.custom_call(
                            "__gpu$xla.gpu.triton")])(*args)
                caught = [(w.category, str(w.message)) for w in caught_now]
            except Exception:  # noqa: BLE001  (not exportable, or a bad input: trace as before,
                return self._top  # which raises the input's error)
            _write(path, exported, caught)
        for category, message in caught:
            warnings.warn(message, category, stacklevel=5)
        return jax.jit(exported.call, compiler_options=self._options)


def _top_level() -> bool:
    """Whether this call is outside any JAX trace (a jit, vmap or grad of the caller's)."""
    return _trace_state_clean is not None and _trace_state_clean()


try:  # JAX's own test of the trace state; where it is missing, every call counts as traced
    from jax._src.core import trace_state_clean as _trace_state_clean
except ImportError:  # pragma: no cover
    _trace_state_clean = None


def _lowering_platform(device_platform: str) -> str:
    """The platform name ``jax.export`` lowers for (a CUDA device's platform is ``"gpu"``, its
    lowering platform ``"cuda"``)."""
    from jax import export

    if device_platform == jax.default_backend():
        return export.default_export_platform()
    return {"gpu": "cuda"}.get(device_platform, device_platform)


def _read(path: Path):
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    try:
        from jax import export

        head, _, body = blob.partition(b"\n")
        caught = [(_category(c), m) for c, m in json.loads(head)]
        exported = export.deserialize(bytearray(body))
        os.utime(path)  # least recently used goes first
        return exported, caught
    except Exception:  # noqa: BLE001  (a damaged or foreign file: export afresh)
        return None


def _category(name: str) -> type[Warning]:
    module, _, qual = name.rpartition(".")
    obj: Any = sys.modules.get(module)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else UserWarning


def _write(path: Path, exported: Any, caught: list[tuple[type[Warning], str]]) -> None:
    try:
        body = exported.serialize()
        head = json.dumps([(f"{c.__module__}.{c.__qualname__}", m) for c, m in caught])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(head.encode() + b"\n" + bytes(body))
        os.replace(tmp, path)  # atomic: a concurrent reader sees the whole file or none
        _bound(path.parent)
    except Exception:  # noqa: BLE001  (a read-only or full disk: the program still runs)
        return


def _bound(folder: Path) -> None:
    files = list(folder.glob(f"*{_SUFFIX}"))
    if len(files) <= MAX_FILES:
        return
    files.sort(key=lambda p: p.stat().st_mtime)
    for old in files[:len(files) - MAX_FILES]:
        try:
            old.unlink()
        except OSError:
            pass
