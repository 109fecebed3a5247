"""A stored program's file: checked whole before JAX sees a byte of it.

Layout: a magic line, one JSON header line, then the body (``jax.export``'s serialization)::

    augjax-program 2\\n
    {"key": ..., "sha256": ..., "size": ..., "code": [...], "warnings": [...]}\\n
    <body>

``sha256`` covers the rest of the header and the body (:func:`_digest`): a changed bit anywhere
is caught.

:func:`read` refuses, in this order, a file that is not the user's or that others may write
(``"unsafe"``), one whose magic, header, size or body digest is wrong (``"damaged"``), one made
for another program (its key differs: ``"foreign"``), and one whose code manifest no longer
holds (``"stale"``: an op's code changed). Only then is the body handed to
``jax.export.deserialize``. :func:`write` writes a temporary file in the same folder (mode 0600)
and renames it over the name: a reader sees the whole file or none, and a failed write removes
its temporary file.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["MAGIC", "Refused", "Stored", "folder_problem", "read", "remove", "write"]

MAGIC = b"augjax-program 2\n"
#: The largest header read (a header is a few KB; a bigger one is damage).
MAX_HEADER = 4 * 1024 * 1024
#: The largest file read.
MAX_FILE = 1024**3


class Refused(Exception):
    """A stored file that must not be used; ``reason`` is one of unsafe, damaged, foreign,
    stale."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


class Stored:
    """A verified file's parts."""

    def __init__(self, body: bytes, code: list[Any], warnings: list[Any]):
        self.body, self.code, self.warnings = body, code, warnings


def _unsafe(st: os.stat_result) -> str | None:
    """Why a file or folder with this status must not be trusted, or None."""
    if not hasattr(os, "getuid"):  # no owners to compare (Windows)
        return None
    if st.st_uid != os.getuid():
        return f"owned by uid {st.st_uid}, not this user ({os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by others (mode {stat.filemode(st.st_mode)})"
    return None


def folder_problem(folder: Path) -> str | None:
    """Why the store's folder cannot be trusted (another user's, or others may write in it),
    or None. A missing folder is made, readable by the user only."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(folder)
    except OSError as err:
        return f"cannot use {folder}: {err}"
    problem = _unsafe(st)
    return f"{folder} is {problem}" if problem else None


def read(path: Path, key: str, current: Any) -> Stored | None:
    """The verified contents of ``path`` for a program of ``key``; None when there is no file.
    ``current(code)`` tells whether a code manifest still holds.

    Raises:
        Refused: the file exists but must not be used (see the module doc).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as err:  # a link (O_NOFOLLOW), or unreadable
        raise Refused("unsafe", f"cannot open it safely ({err})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Refused("unsafe", "not a regular file")
        problem = _unsafe(st)
        if problem:
            raise Refused("unsafe", problem)
        if st.st_size > MAX_FILE:
            raise Refused("damaged", f"{st.st_size} bytes")
        if f.read(len(MAGIC)) != MAGIC:
            raise Refused("damaged", "not an augjax program file of this format")
        line = f.readline(MAX_HEADER)
        if not line.endswith(b"\n"):
            raise Refused("damaged", "its header is cut or too long")
        try:
            header = json.loads(line)
            size, digest = int(header["size"]), str(header["sha256"])
            code, caught, their_key = header["code"], header["warnings"], header["key"]
        except (ValueError, KeyError, TypeError, RecursionError) as err:
            raise Refused("damaged", f"unreadable header ({type(err).__name__})") from None
        body = f.read(size + 1)
    if len(body) != size or _digest(their_key, size, code, caught, body) != digest:
        raise Refused("damaged", "its contents do not match the digest in its header")
    if their_key != key:
        raise Refused("foreign", "it holds another program")
    if not current(code):
        raise Refused("stale", "the code it was traced from has changed")
    if not isinstance(caught, list):
        raise Refused("damaged", "unreadable header (warnings)")
    return Stored(body, code, caught)


def write(path: Path, key: str, body: bytes, code: list[Any], caught: list[Any]) -> bool:
    """Writes a program's file atomically; False (and nothing left behind) when it fails."""
    caught = [list(c) for c in caught]
    digest = _digest(key, len(body), code, caught, body)
    header = json.dumps({"key": key, "sha256": digest, "size": len(body), "code": code,
                         "warnings": caught}, sort_keys=True).encode()
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + header + b"\n" + body)
        os.replace(tmp, path)
        tmp = None
        return True
    except OSError:
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _digest(key: Any, size: int, code: Any, caught: Any, body: bytes) -> str:
    """SHA-256 of a file's header fields (but the digest itself) and body."""
    head = json.dumps([key, size, code, caught], sort_keys=True).encode()
    return hashlib.sha256(head + b"\n" + body).hexdigest()


def remove(path: Path) -> None:
    """Removes a refused file where this user may (another user's file stays, unread)."""
    try:
        os.unlink(path)
    except OSError:
        pass
