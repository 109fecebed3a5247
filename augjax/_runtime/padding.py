"""Partial batches: a batch smaller than one already compiled runs the compiled program, padded.

A jitted program compiles once per batch size, so the last, smaller batch of an epoch would
stall on a compile (seconds for a policy chain). :func:`call` pads such a batch to the smallest
batch size the program already ran with (same image shape, dtype, device and inputs), runs it,
and returns the real samples only.

The padded batch is laid out so that it does not change the real samples' results:

- per-sample ops see each real sample with its own key at some position; their output for it
  does not depend on the position or on the other samples (docs/RELIABILITY.md, alignment);
- augjax's mixing ops (mixup, cutmix, mixup_cutmix) pair position ``i`` with ``N - 1 - i`` and
  take batch-wide draws from the key at position 0. The real samples of a batch of ``n`` are put
  at both ends of the padded batch of ``N`` (``0 .. h-1`` first, ``h .. n-1`` last, ``h =
  ceil(n / 2)``), so sample ``i`` still pairs with sample ``n - 1 - i``; an odd batch's middle
  sample, which pairs with itself, gets a copy of itself as its partner. With ``mode="batch"``
  (the default) the result is then bitwise the unpadded call's. With ``mode="pair"``/``"elem"``
  the pairs are the same but the per-pair/per-sample draws come from a batch of ``N``: other
  values from the same distribution;
- the filler positions hold copies of sample 0 (valid images, labels and keys); nothing real is
  mixed with them;
- a chain with any other batch-level op (a plugin's: augjax cannot know how it pairs samples)
  is not padded: it compiles once per batch size, as before.

Not padded either: inputs traced inside the caller's ``jax.jit`` (shapes are static there),
arrays laid out over several devices, and every call while ``AUGJAX_PAD_BATCHES=0``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from augjax._runtime.keys import per_sample_keys

__all__ = ["call", "enabled", "layout", "no_padding", "paddable", "record"]

#: Batch-level ops that pair sample ``i`` with ``N - 1 - i`` and draw batch-wide values from the
#: key of sample 0 (``augjax.catalog.mix``): padding in :func:`layout` keeps their pairs.
MIRROR_PAIRED = frozenset({"mixup", "cutmix", "mixup_cutmix"})

_lock = threading.Lock()
# program -> {signature of the non-batch dims: set of batch sizes it ran with}
_sizes: weakref.WeakKeyDictionary[Any, dict[Any, set[int]]] = weakref.WeakKeyDictionary()


_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("augjax_no_padding", default=False)


def enabled() -> bool:
    """Whether partial batches are padded (``AUGJAX_PAD_BATCHES``, default on; off inside
    :func:`no_padding`)."""
    if _OFF.get():
        return False
    return os.environ.get("AUGJAX_PAD_BATCHES", "1").strip().lower() not in (
        "0", "false", "off", "no")


@contextlib.contextmanager
def no_padding() -> Iterator[None]:
    """Within this block (this thread or task), array calls run at their own batch size: the
    plugin kit compares an op's batched output with its output for each sample alone, which
    padding would turn into the same batched program."""
    token = _OFF.set(True)
    try:
        yield
    finally:
        _OFF.reset(token)


def paddable(steps: Sequence[Any]) -> bool:
    """Whether padding keeps the real samples' results: every batch-level step is one of
    augjax's mirror-paired mixing ops."""
    for step in steps:
        spec = step.spec
        if spec.level == "batch" and not (
                spec.name in MIRROR_PAIRED and spec.kernel.__module__ == "augjax.catalog.mix"):
            return False
    return True


def layout(n: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(source, position)`` for a batch of ``n`` padded to ``size``: ``source[p]`` is the real
    sample at padded position ``p``; ``position[j]`` is where real sample ``j`` sits."""
    head = (n + 1) // 2
    position = np.concatenate([np.arange(head), size - n + np.arange(head, n)])
    source = np.zeros(size, np.int32)
    source[position] = np.arange(n)
    if n % 2:  # the middle sample pairs with itself: give it a copy of itself as partner
        source[size - 1 - (head - 1)] = head - 1
    return source, position.astype(np.int32)


def _signature(args: Sequence[Any]) -> tuple[Any, ...] | None:
    """What, besides the batch size, a compiled program is specialised to: each arg's trailing
    shape and dtype, and the device of the first (the images). None where the call is not
    padded (traced inputs, arrays over several devices). Runs on every call: it reads no
    computed property of a key array (a typed key's ``sharding`` costs microseconds)."""
    sig = []
    first = None
    for a in args:
        if a is None:
            sig.append(None)
            continue
        if isinstance(a, jax.core.Tracer) or not isinstance(a, jax.Array):
            return None
        if first is None:
            first = a
        sig.append((a.shape[1:], a.dtype))
    if first is None:
        return None
    sharding = first.sharding
    if type(sharding) is not SingleDeviceSharding and len(sharding.device_set) != 1:
        return None
    return tuple(sig), sharding


def record(program: Any, args: Sequence[Any], sig: Any = None) -> None:
    """Notes that ``program`` ran (so compiled) for ``args``' batch size (``sig``: their
    :func:`_signature`, when the caller has it)."""
    sig = _signature(args) if sig is None else sig
    if sig is None:
        return
    n = next(a.shape[0] for a in args if a is not None)
    with _lock:
        _sizes.setdefault(program, {}).setdefault(sig, set()).add(n)


def _padded_size(program: Any, sig: Any, n: int) -> int | None:
    with _lock:
        sizes = _sizes.get(program, {}).get(sig, ())
        larger = [s for s in sizes if s > n]
    return min(larger) if larger and n > 0 else None


def call(program: Callable[..., Any], steps: Sequence[Any], args: Sequence[Any]) -> Any:
    """``program(*args)`` where every non-None arg has the batch as leading axis (but a single
    key of shape ``()``, which the program splits per sample itself); a batch
    smaller than one ``program`` already ran with is padded to that size and the outputs (a
    pytree of arrays with a leading batch axis, or None leaves) cut back to the real samples.
    """
    sig = _signature(args)
    size = None
    if sig is not None and enabled() and paddable(steps):
        n = next(a.shape[0] for a in args if a is not None)
        size = _padded_size(program, sig, n)
    if size is None:
        out = program(*args)
        if sig is not None:
            record(program, args, sig)
        return out
    source, position = layout(n, size)
    # a single key (split by the program itself) becomes one key per sample first
    args = tuple(per_sample_keys(a, n) if a is not None and a.ndim == 0 else a for a in args)
    out = program(*_take(args, source))
    return _take(out, position)


@jax.jit
def _take(tree: Any, index: jax.Array) -> Any:
    """Rows ``index`` of every array in ``tree``: one small compiled gather per shape."""
    return jax.tree_util.tree_map(lambda a: a[index], tree)
