"""Value checks of the images given to an op: float images must be finite and lie in [0, 1].

A float image in 0..255 goes through augjax without an error otherwise (``color_jitter`` clips it
to white, ``normalize`` gives values near 1000). Reading the values costs a device-to-host sync
on an accelerator, so augjax checks them only where they are already on the host:

- NumPy inputs on arrays (before the call) and batches of a DALI CPU pipeline (in the
  ``jax_function`` callback): an :class:`~augjax.errors.InputRangeWarning` naming the op and the
  fix (an :class:`~augjax.errors.InputError` in checking mode);
- everywhere else only in checking mode (``AUGJAX_CHECK=1``, or ``with augjax.checking():``):
  ``jax.Array`` inputs are read back before the call (a sync) and raise
  :class:`~augjax.errors.InputError`; inputs traced inside the caller's ``jax.jit`` are checked
  by a ``jax.debug.callback`` that warns; DALI GPU batches are read back in the callback and
  raise (the pipeline stops, as for any error in it).

NaN and infinite values are reported the same way, from the same minimum and maximum (both are
NaN when any value is, so finding them costs no extra pass); in checking mode the error counts
them and names the samples that hold them.

A DALI pipeline takes the checking mode in force when it is defined (the op call).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from augjax.errors import InputError, InputRangeWarning

__all__ = ["check_batch", "check_host_range", "checking", "checking_enabled"]

#: Tolerance around [0, 1] (float conversions of 1.0 may land just above it).
TOLERANCE = 1e-3

_MODE: contextvars.ContextVar[bool | None] = contextvars.ContextVar("augjax_checking",
                                                                    default=None)


def checking_enabled() -> bool:
    """Whether checking mode is on: ``augjax.checking()`` in this context, else
    ``AUGJAX_CHECK`` (``1``/``true``/``on``)."""
    mode = _MODE.get()
    if mode is not None:
        return mode
    return os.environ.get("AUGJAX_CHECK", "").strip().lower() in ("1", "true", "on", "yes")


@contextlib.contextmanager
def checking(enabled: bool = True) -> Iterator[None]:
    """Within this block, augjax reads the values of every float image batch it is given, on
    any device (a device-to-host sync per call), and raises :class:`InputError` for values
    outside [0, 1] and for NaN or infinite values (naming the samples that hold them);
    ``checking(False)`` turns the mode off where ``AUGJAX_CHECK=1`` set it.

    >>> with augjax.checking():                      # doctest: +SKIP
    ...     out = augjax.ops.color_jitter(images, key=key, brightness=0.4)
    """
    token = _MODE.set(bool(enabled))
    try:
        yield
    finally:
        _MODE.reset(token)


def range_message(op: str, lo: float, hi: float) -> str:
    """The message for float images outside [0, 1]."""
    hint = ("0..255 data? divide by 255, or pass uint8 images" if hi > 2.0 else
            "data already normalized? apply augjax's ops before normalizing")
    return (f"{op}: argument 'images' expects float images in [0, 1], got values in "
            f"[{lo:g}, {hi:g}] ({hint}; augjax.ops.to_float converts uint8)")


def non_finite_message(op: str, counts: tuple[int, int, int] | None = None,
                       samples: list[int] | None = None) -> str:
    """The message for float images with NaN or infinite values; ``counts`` (NaN, +inf, -inf)
    and the indices of the ``samples`` that hold them when known."""
    found = "NaN or infinite values"
    if counts is not None:
        found = ", ".join(f"{n} {what}" for n, what in zip(counts, ("NaN", "+inf", "-inf"))
                          if n) + " value(s)"
    where = ""
    if samples:
        shown = ", ".join(map(str, samples[:8])) + (", ..." if len(samples) > 8 else "")
        where = f" in sample(s) {shown}"
    return (f"{op}: argument 'images' expects finite float images in [0, 1], got {found}"
            f"{where} (corrupt data, or a division by zero before augjax?)")


def _report(op: str, lo: float, hi: float, strict: bool,
            details: Callable[[], tuple[tuple[int, int, int], list[int]]] | None = None) -> None:
    if not (math.isfinite(lo) and math.isfinite(hi)):  # min/max are NaN if any value is
        msg = non_finite_message(op, *(details() if strict and details else (None, None)))
    elif lo < -TOLERANCE or hi > 1.0 + TOLERANCE:
        msg = range_message(op, lo, hi)
    else:
        return
    if strict:
        raise InputError(msg, op=op, argument="images")
    warnings.warn(msg, InputRangeWarning, stacklevel=4)


def _counts(xp: Any, x: Any) -> tuple[tuple[int, int, int], list[int]]:
    """(NaN, +inf, -inf) counts of batch ``x`` and the samples with any (``xp``: np or jnp)."""
    flat = x.reshape(x.shape[0], -1)
    per = xp.stack([xp.isnan(flat).sum(-1), xp.isposinf(flat).sum(-1),
                    xp.isneginf(flat).sum(-1)], -1)
    per = np.asarray(per)
    counts = tuple(int(c) for c in per.sum(0))
    return counts, [int(i) for i in np.flatnonzero(per.sum(-1))]  # type: ignore[return-value]


def check_host_range(images: Any, op: str, *, strict: bool) -> None:
    """Reports float host ``images`` (a NumPy array) with values outside [0, 1] or not
    finite."""
    x = np.asarray(images)
    if x.size == 0 or not np.issubdtype(x.dtype, np.floating):
        return
    _report(op, float(x.min()), float(x.max()), strict, lambda: _counts(np, x))


def check_batch(images: Any, op: str, *, on_host: bool, strict: bool) -> None:
    """Checks a batch as the module doc says: on the host always (warn, or raise if
    ``strict``); elsewhere only when ``strict`` (a sync; a callback when traced)."""
    import jax
    import jax.numpy as jnp

    if not jnp.issubdtype(images.dtype, jnp.floating) or images.size == 0:
        return
    if on_host:
        check_host_range(images, op, strict=strict)
        return
    if not strict:
        return
    lo, hi = jnp.min(images), jnp.max(images)
    if isinstance(images, jax.core.Tracer):
        jax.debug.callback(lambda a, b: _report(op, float(a), float(b), False), lo, hi)
        return
    low, high = np.asarray(jnp.stack([lo, hi]))
    _report(op, float(low), float(high), True, lambda: _counts(jnp, images))
