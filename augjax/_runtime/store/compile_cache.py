"""JAX's persistent compilation cache, turned on for augjax's programs by default.

Without it every process compiles its programs from scratch (the timm-style chain: seconds per
process and batch size). With it, a second process finds the executable on disk and only traces
and lowers. :func:`enable` is called when augjax builds its first program (arrays, DALI,
``warmup``) and does, once per process:

- nothing when ``AUGJAX_COMPILATION_CACHE=0`` (or ``false``/``off``/``no``): JAX's settings stay
  as they are;
- nothing but record the directory when a cache directory is already configured
  (``jax.config.update("jax_compilation_cache_dir", ...)`` or ``JAX_COMPILATION_CACHE_DIR``):
  the user's directory and thresholds are kept;
- otherwise it sets JAX's cache directory to ``AUGJAX_CACHE_DIR`` or the user cache directory
  (``$XDG_CACHE_HOME/augjax/jax``, default ``~/.cache/augjax/jax``), caches every program
  however quickly it compiled and however small (JAX's defaults skip programs under 1 s), and
  bounds the directory at :data:`MAX_BYTES` (least recently used entries go first), unless
  those settings were changed from JAX's defaults.

JAX's cache is process-wide: once augjax turns it on, the process's other ``jax.jit`` programs
are cached in the same directory too. docs/RELIABILITY.md ("Compilation cache") has the details.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["MAX_BYTES", "compilation_cache_dir", "default_dir", "enable"]

#: The directory's size bound when augjax owns the cache (JAX evicts least recently used).
MAX_BYTES = 2 * 1024**3

_OFF = ("0", "false", "off", "no")
_lock = threading.Lock()
_done = False
_dir: str | None = None


def default_dir() -> Path:
    """Where augjax puts the cache: ``AUGJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/augjax/jax``,
    else ``~/.cache/augjax/jax``."""
    explicit = os.environ.get("AUGJAX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "augjax" / "jax"


def compilation_cache_dir() -> str | None:
    """The persistent cache directory in use (augjax's or the user's), or None when off."""
    import jax

    enable()
    return jax.config.jax_compilation_cache_dir if _dir is not None else None


def enable() -> None:
    """Turns JAX's persistent compilation cache on (once per process; see the module doc)."""
    global _done, _dir
    if _done:
        return
    with _lock:
        if _done:
            return
        _done = True
        if os.environ.get("AUGJAX_COMPILATION_CACHE", "1").strip().lower() in _OFF:
            return
        import jax

        if not jax.config.jax_enable_compilation_cache:
            return  # the user switched JAX's cache off
        configured = jax.config.jax_compilation_cache_dir
        if configured:
            _dir = configured
            return
        path = default_dir()
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # a read-only home: run without the cache, say so once
            import warnings

            from augjax.errors import AugjaxWarning

            warnings.warn(f"augjax: compilation cache off: cannot create {path} ({err}); set "
                          f"AUGJAX_CACHE_DIR to a writable directory or "
                          f"AUGJAX_COMPILATION_CACHE=0", AugjaxWarning, stacklevel=3)
            return
        if jax.config.jax_persistent_cache_min_compile_time_secs == 1.0:  # JAX's default
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        if jax.config.jax_persistent_cache_min_entry_size_bytes == 0:  # JAX's default
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        if jax.config.jax_compilation_cache_max_size == -1:  # JAX's default: unbounded
            jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
        jax.config.update("jax_compilation_cache_dir", str(path))
        # JAX decides once per process whether the cache is used, at its first compile; a
        # compile before this point (the user's own jit) decided "no directory, no cache".
        from jax.experimental.compilation_cache import compilation_cache

        compilation_cache.reset_cache()
        _dir = str(path)
