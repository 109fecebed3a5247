"""A stored program's first lowering without SciPy's LAPACK when the program calls none.

JAX lowers a program read from the store (``jax.export``'s ``call_exported``) after setting up
its CPU LAPACK kernels (``jax._src.export._export._ensure_backends_initialized``), which imports
``scipy.linalg`` for their function pointers: 0.3-0.5 s of a warm process's first call (the
largest part of its lowering), whether the program calls LAPACK or not. Most of augjax's
programs call none (a matrix inverse, for boxes that follow a warp, is the usual exception).
:func:`install` has that set-up skipped for a program whose serialized module names no LAPACK
kernel (none of jaxlib's LAPACK custom-call targets occurs in its bytes: MLIR's bytecode keeps
each target's name as plain text); a program that names one lowers as before. The compiled
program is the same either way: the set-up only fills in the kernels' function pointers, which
a program without them never reads. Where JAX's internals are not as this expects, nothing is
changed.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["install", "names_lapack", "set_up_for"]

_local = threading.local()
_installed: list[bool] = []
_targets: list[bytes] = []


def _lapack_targets() -> list[bytes]:
    """The custom-call targets of jaxlib's CPU LAPACK kernels, as bytes (read once; reading
    them imports no SciPy)."""
    if not _targets:
        from jax._src.lib import lapack

        # (exact names: a module's debug locations hold file names, which may hold anything)
        _targets.extend(sorted({name.encode() for name in lapack._lapack.registrations()}))
    return _targets


def names_lapack(exported: Any) -> bool:
    """Whether ``exported`` (a ``jax.export.Exported``) may call a LAPACK kernel: its serialized
    module names one of their targets (True too where it cannot be read)."""
    try:
        body = bytes(exported.mlir_module_serialized)
        targets = _lapack_targets()
    except Exception:  # noqa: BLE001  (unexpected forms: set up as JAX does)
        return True
    return any(target in body for target in targets)


def install() -> None:
    """Has JAX lower programs that name no LAPACK kernel without setting LAPACK up (once per
    process; thread-safe: the choice is per lowering thread)."""
    if _installed:
        return
    _installed.append(True)
    try:
        from jax._src.export import _export
        from jax._src.interpreters import mlir

        rule = _export._call_exported_lowering
        ensure = _export._ensure_backends_initialized
        primitive = _export.call_exported_p
    except (ImportError, AttributeError):  # pragma: no cover  (another JAX: left as it is)
        return

    def ensure_unless_skipped(platforms: tuple[str, ...]) -> None:
        if not getattr(_local, "skip", False):
            ensure(platforms)

    def lower(ctx: Any, *args: Any, exported: Any) -> Any:
        before = getattr(_local, "skip", False)
        _local.skip = not names_lapack(exported)
        try:
            return rule(ctx, *args, exported=exported)
        finally:
            _local.skip = before

    _export._ensure_backends_initialized = ensure_unless_skipped
    mlir.register_lowering(primitive, lower)


def set_up_for(exported: Any) -> None:
    """Sets JAX's CPU LAPACK kernels up for ``exported`` run without being lowered (its
    compiled executable loaded, :mod:`augjax._runtime.store.executables`) where it names one:
    the lowering that would have set them up does not happen, and the executable calls the
    kernels through the function pointers the set-up fills in (unset, the call crashes)."""
    if not names_lapack(exported):
        return
    from jax._src.export import _export

    _export._ensure_backends_initialized(("cpu",))
