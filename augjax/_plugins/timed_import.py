"""Importing an op's entry point with a time limit (``AUGJAX_PLUGIN_IMPORT_TIMEOUT``).

A plugin may hang at import (a network call, a lock, a loop). Python cannot stop a thread, nor
an import, so the import runs in a helper thread and the caller stops waiting after the limit:
the op becomes ``failed`` with an :class:`ImportTimedOut` cause (the registry raises
:class:`~augjax.PluginTimeoutError`), and the other ops keep working. What this cannot do:

- stop the hung import: it keeps running (and holding its module's import lock) in a daemon
  thread until the process exits, which does not wait for it; any later import of that module,
  by augjax or the user, waits for the lock (augjax fails at once instead, see below);
- help with a plugin that hangs while holding the GIL in C code, or that kills the process:
  only a subprocess could, at the price of a second interpreter per import;
- run code that must run in the main thread at import (``signal.signal``).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from augjax._plugins.loader import TIMEOUT_ENV, OpRecord, import_state, load_entry_point

__all__ = ["ImportTimedOut", "in_import_thread", "load_with_timeout"]


class ImportTimedOut(TimeoutError):
    """The cause of a ``failed`` record whose import did not finish in time."""

    def __init__(self, message: str, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


#: Module -> the thread still importing it after its time ran out (it cannot be stopped).
_HUNG: dict[str, threading.Thread] = {}


def in_import_thread() -> bool:
    """Whether the current thread is one that imports an op for :func:`load_with_timeout`."""
    return getattr(import_state, "record", None) is not None


def load_with_timeout(record: OpRecord, timeout: float | None, load: Any = None
                      ) -> tuple[str, str, Any, BaseException | None]:
    """``load(record)`` (default :func:`load_entry_point`), given at most ``timeout`` seconds
    (None: no limit, in this thread).

    The import runs in a daemon thread; the caller waits for it at most ``timeout`` seconds
    (JAX is imported first, in the caller: it is not the plugin's time).
    A thread cannot be stopped, so an import that does not finish keeps running in the
    background (it holds its module's import lock, and the process exits without waiting for
    it); the record becomes ``failed`` with an :class:`ImportTimedOut` cause, and any later
    attempt at the same module fails at once while that thread is alive. Warnings of the
    loader are given in the caller's thread; ``KeyboardInterrupt`` raised by the plugin is
    raised in the caller.
    """
    load = load_entry_point if load is None else load
    if timeout is None:
        return load(record)
    import jax  # noqa: F401 - every op needs it; its import (seconds) is not the plugin's time

    module = record.entry_point.split(":", 1)[0].strip()
    where = f"{record.distribution}=={record.version}"
    hung = _HUNG.get(module)
    if hung is not None and hung.is_alive():
        reason = (f"module {module!r} is still being imported by an earlier import that did "
                  f"not finish within {timeout:g} s ({TIMEOUT_ENV}); it hangs at import")
        return "failed", reason, None, ImportTimedOut(reason, timeout)
    box: dict[str, Any] = {}
    said: list[tuple[Any, ...]] = []

    def work() -> None:
        import_state.record, import_state.said = record, said
        # the Thread object, not its ident: a dead thread's ident is reused by the next new thread
        record._loading = threading.current_thread()  # a plugin asking for its own op: circular
        try:
            box["result"] = load(record)
        except BaseException as err:  # noqa: BLE001 - KeyboardInterrupt: raised by the caller
            box["error"] = err
        finally:
            import_state.record = import_state.said = None

    worker = threading.Thread(target=work, name=f"augjax-import-{record.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        _HUNG[module] = worker
        reason = (f"importing {record.entry_point!r} ({where}) did not finish within "
                  f"{timeout:g} s ({TIMEOUT_ENV}); it may hang at import, and keeps running in a "
                  f"background thread")
        return "failed", reason, None, ImportTimedOut(reason, timeout)
    for message, category in said:
        warnings.warn(message, category, stacklevel=4)
    if "error" in box:
        raise box["error"]
    return box["result"]
