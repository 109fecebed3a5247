"""Compiled executables kept beside the stored programs: a warm process runs a stored program
without lowering it.

A stored program (:mod:`augjax._runtime.store.programs`) spares a warm process the trace, but
it still lowered each program's call and computed JAX's cache key (serialising and hashing the
module) before it could read the executable from JAX's cache: about 25 ms of Python per
program, holding the GIL, which ``augjax demo``'s 136 programs paid in every warm process. The
store's folder also keeps ``<digest>.jaxexe`` files, compiled programs as
``jax.experimental.serialize_executable`` writes them; a warm process loads the one for its
program and calls it directly (the same executable: the same bits).

A file is named by the digest of its key, which names everything the executable depends on:
the module (programs of one module share a file), the XLA options and JAX's settings, the
versions, the device it was compiled for, the backend's version, ``LIBTPU_INIT_ARGS`` and the
host's CPU (model and feature flags: XLA:CPU compiles for the CPU it runs on, and an
executable built for AVX-512 must not run elsewhere). It has the program files' format
(:mod:`augjax._runtime.store.files`: checked whole before a byte is used; another user's, one
others may write, a damaged or another key's file is deleted and written again).

Only a freshly compiled executable is written: one that JAX read from its own cache serialises
without all of its kernels (XLA:CPU keeps the code it loaded, not what it compiled; such a file
fails when run, "Function ... not found"). JAX's cache reads are counted per thread through
``jax.monitoring`` (a listener that is checked to be heard before each count: where it is not,
nothing is written); where JAX's cache held the program (a cache made before, a deleted file)
it is compiled afresh once, with an option that misses JAX's cache and changes nothing XLA
compiles, and that executable is kept.

Kept on the CPU only, for now (the platform the suite checks it on), and off with
``AUGJAX_EXECUTABLE_STORE=0`` (or when the program store is off); without
``serialize_executable`` in this JAX, stored programs run as before.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import secrets
import threading
from pathlib import Path
from typing import Any

import jax

from augjax._runtime.store import files as program_file
from augjax._runtime.store import lapack
from augjax._runtime.store.eviction import bound_folder

__all__ = ["SUFFIX", "attach", "enabled", "load_count"]

SUFFIX = ".jaxexe"
_OFF = ("0", "false", "off", "no")
#: The most executables kept (as many as programs); the least recently used go first.
MAX_FILES = 512
_loads = [0]


def load_count() -> int:
    """How many executables this process has loaded from the store (each instead of a
    lowering and a read of JAX's cache)."""
    return _loads[0]


def enabled(device: Any) -> bool:
    """Whether executables are kept for programs run on ``device``."""
    if os.environ.get("AUGJAX_EXECUTABLE_STORE", "1").strip().lower() in _OFF:
        return False
    return device.platform == "cpu" and _serializer() is not None


@functools.cache
def _serializer() -> Any:
    try:
        from jax.experimental import serialize_executable
    except ImportError:  # pragma: no cover  (a JAX without it: programs lower as before)
        return None
    return serialize_executable


def attach(run: Any, folder: Path, exported: Any, args: tuple[Any, ...], device: Any,
           options: dict[str, Any] | None) -> Any:
    """What a stored program's calls on ``device`` run: its executable (a
    ``jax.stages.Compiled``) loaded from ``folder`` (the program store's) where one is kept for
    this module, options, device and host; else ``run`` (the jitted call of the stored program)
    compiled now, its executable written there. ``run`` itself where executables are not kept, or where compiling fails (the call
    then raises as it would have)."""
    if not enabled(device) or _calls_back(exported):
        return run
    lapack.set_up_for(exported)  # what lowering it would have set up
    in_tree = jax.tree_util.tree_structure((args, {}))
    key = _key(exported, device, options, in_tree)
    path = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}{SUFFIX}"
    executable = _load(path, key, in_tree, exported.out_tree, device)
    if executable is not None:
        return executable
    hits = _cache_hits()
    try:
        with _jax_cache_unwritten(hits >= 0):  # this file keeps it (JAX's copy: ~10% more)
            executable = run.lower(*args).compile()
    except Exception:  # noqa: BLE001  (a bad input: the call raises its own error)
        return run
    # An executable that JAX read from its cache serialises without all of its kernels (XLA:CPU
    # keeps the code it loaded, not what it compiled: "Function ... not found" when run): only
    # a freshly compiled one is written; where JAX's cache held it, it is compiled afresh once.
    if hits >= 0 and _cache_hits() == hits:
        _save(path, key, executable)
    elif hits >= 0:
        fresh = _compiled_afresh(exported, args, device, options)
        if fresh is not None:
            _save(path, key, fresh)
            executable = fresh
    return executable


def _jax_cache_unwritten(unwritten: bool) -> Any:
    """A context in which this thread's compiles are not written to JAX's persistent cache
    (``jax_persistent_cache_min_compile_time_secs`` set to infinity for the thread) where
    ``unwritten``: the executable is kept in this store, and writing JAX's copy too (serialised
    and compressed once more) cost ``augjax demo``'s cold run ~10% of its CPU time. JAX's
    cache is still read. A no-op context where this JAX has no such setting."""
    import contextlib

    try:
        from jax._src.config import persistent_cache_min_compile_time_secs as setting
    except ImportError:  # pragma: no cover  (another JAX: written twice, as before)
        return contextlib.nullcontext()
    return setting(float("inf")) if unwritten else contextlib.nullcontext()


def _calls_back(exported: Any) -> bool:
    """Whether ``exported`` calls back into Python (an executable holding a callback is never
    written: its pointer would not survive the process)."""
    body = bytes(exported.mlir_module_serialized)
    return b"python_cpu_callback" in body or b"python_gpu_callback" in body


#: A compile option that only XLA's debug strings read (how many buffers a buffer assignment's
#: description lists): set to a large number drawn for the compile, it changes JAX's cache key
#: and nothing XLA compiles, so the compile misses JAX's cache (JAX leaves the dump options and
#: options at their default values out of its key).
_MISS_JAX_CACHE = "xla_debug_buffer_assignment_show_max"


def _compiled_afresh(exported: Any, args: tuple[Any, ...], device: Any,
                     options: dict[str, Any] | None) -> Any:
    """The stored program compiled by XLA now (not read from JAX's cache), or None."""
    from jax.sharding import SingleDeviceSharding

    from augjax.kernels.portable import known_option

    name, value = _MISS_JAX_CACHE, 10**9 + secrets.randbelow(10**9)
    if not known_option(name, 10**9):
        return None
    hits = _cache_hits()
    try:
        with _jax_cache_unwritten(True):  # (under a key drawn for this compile: never read)
            fresh = jax.jit(exported.call, compiler_options={**(options or {}), name: value},
                            in_shardings=SingleDeviceSharding(device)).lower(*args).compile()
    except Exception:  # noqa: BLE001
        return None
    return fresh if _cache_hits() == hits else None


_hits = threading.local()
_PROBE = "/augjax/executables/listening"


def _on_event(event: str, **_: Any) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _hits.count = getattr(_hits, "count", 0) + 1
    elif event == _PROBE:
        _hits.heard = True


def _cache_hits() -> int:
    """JAX's persistent-cache hits in this thread so far; -1 where they cannot be counted (no
    monitoring, or the listener cannot be heard: then no executable is written)."""
    for _ in range(2):
        _hits.heard = False
        try:
            jax.monitoring.record_event(_PROBE)
        except Exception:  # noqa: BLE001
            return -1
        if _hits.heard:
            return getattr(_hits, "count", 0)
        try:  # not registered yet, or removed (jax.monitoring.clear_event_listeners)
            jax.monitoring.register_event_listener(_on_event)
        except Exception:  # noqa: BLE001
            return -1
    return -1


def _key(exported: Any, device: Any, options: dict[str, Any] | None, in_tree: Any) -> str:
    """What an executable depends on: the module (its digest: programs of one module share
    it), the calls' argument and result trees (jit drops unused arguments from the module: two
    programs of one module may take different trees, and an executable loads for one tree),
    the XLA options and settings, the device, the backend and the host's CPU."""
    import jaxlib

    from augjax._runtime.store.identity import settings

    module = hashlib.sha256(bytes(exported.mlir_module_serialized)).hexdigest()
    return json.dumps({"module": module, "in_tree": str(in_tree),
                       "out_tree": str(exported.out_tree), "options": options or {},
                       "versions": [jax.__version__, jaxlib.__version__],
                       "settings": settings(device.platform),
                       "device": [device.platform, device.id, device.process_index,
                                  device.device_kind],
                       "backend": device.client.platform_version,
                       "libtpu": os.environ.get("LIBTPU_INIT_ARGS", ""),
                       "host": host_cpu()}, sort_keys=True, default=repr)


@functools.cache
def host_cpu() -> str:
    """The host's CPU as XLA:CPU compiles for it: its model and feature flags (a digest)."""
    described = f"{platform.machine()}|{platform.processor()}"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return hashlib.sha256(described.encode()).hexdigest()[:32]
    first = text.split("\n\n", 1)[0]
    fields = dict(line.split(":", 1) for line in first.splitlines() if ":" in line)
    model = fields.get("model name", fields.get("cpu model", "")).strip()
    flags = sorted(fields.get("flags", fields.get("Features", "")).split())
    return hashlib.sha256(f"{described}|{model}|{' '.join(flags)}".encode()).hexdigest()[:32]


def _load(path: Path, key: str, in_tree: Any, out_tree: Any, device: Any) -> Any:
    """The executable at ``path``, verified, loaded to run on ``device``; None where there is
    none or it was refused (then removed, to be compiled and written again)."""
    try:
        stored = program_file.read(path, key, lambda code: True)
        if stored is None:
            return None
        executable = _serializer().deserialize_and_load(stored.body, in_tree, out_tree,
                                                        backend=device.client,
                                                        execution_devices=[device])
    except program_file.Refused as refused:
        if refused.reason not in ("foreign", "stale"):  # another build's file: replaced quietly
            _refused(path, refused.reason, refused.detail)
        program_file.remove(path)
        return None
    except Exception as err:  # noqa: BLE001  (verified bytes XLA still refuses)
        _refused(path, "unreadable", f"{type(err).__name__}: {err}"[:200])
        program_file.remove(path)
        return None
    _loads[0] += 1
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    return executable


def _save(path: Path, key: str, executable: Any) -> None:
    try:
        body, _, _ = _serializer().serialize(executable)
    except Exception:  # noqa: BLE001  (an executable XLA cannot serialise: not kept)
        return
    if program_file.write(path, key, bytes(body), [], []):
        bound_folder(path.parent, path, SUFFIX, MAX_FILES)


def _refused(path: Path, reason: str, detail: str) -> None:
    import warnings

    from augjax.errors import ProgramStoreWarning

    warnings.warn(f"augjax: stored executable {path.name} refused ({reason}: {detail}); it is "
                  f"deleted and compiled afresh", ProgramStoreWarning, stacklevel=7)
