"""The store's folders kept bounded: at most a number of files, the least recently used going
first, with clocks that lie clamped and temporary files of crashed writers swept (used by the
program files and the stored lifting decisions)."""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["STALE_TMP_S", "bound_folder"]

#: Temporary files whose time is further than this (seconds) from now, either way, are left
#: over from a crashed writer (a write takes milliseconds): removed.
STALE_TMP_S = 3600.0


def bound_folder(folder: Path, keep: Path | None, suffix: str, limit: int) -> None:
    """Keeps at most ``limit`` files named ``*suffix`` in ``folder`` (programs:
    :data:`augjax._runtime.store.programs.MAX_FILES`), the least recently used going first
    (``keep``, the file just written, stays), and removes temporary files that a crashed writer
    left.

    Times are read against the file system's clock: the time of ``keep`` (else this
    machine's). A program file dated in the future (a clock set back, files copied from
    another machine) is clamped: dated just before ``keep``, it then ages as any other (left
    in the future, it would outlive every new program). A temporary file more than
    :data:`STALE_TMP_S` from that time, either way, is removed (a write takes milliseconds)."""
    now = _mtime(keep) if keep is not None else 0.0
    now = now or time.time()
    for tmp in folder.glob(".*.tmp"):
        try:
            if abs(now - tmp.stat().st_mtime) > STALE_TMP_S:
                tmp.unlink()
        except OSError:
            pass
    files = [f for f in folder.glob(f"*{suffix}") if f != keep]
    dated = []
    for f in files:
        mtime = _mtime(f)
        if mtime > now + 1.0:  # in the future
            mtime = now - 1.0
            try:
                os.utime(f, (mtime, mtime))
            except OSError:
                pass
        dated.append((mtime, f))
    room = limit - (keep is not None)
    if len(dated) <= room:
        return
    dated.sort(key=lambda d: d[0])
    for _, old in dated[:len(dated) - room]:
        try:
            old.unlink()
        except OSError:
            pass


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile (another process's bound)
        return 0.0
