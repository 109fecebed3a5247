"""Partial batches: which program a batch runs when its size is not one it compiled for.

A jitted program compiles once per batch size: the last, smaller batch of an epoch would stall
on a compile (seconds for a policy chain), and padding every smaller batch to a compiled size
for good makes a size that recurs (evaluation at another batch size, a second loader) pay the
larger batch's compute on every call. :func:`call` follows the policy :func:`policy` names
(``AUGJAX_PARTIAL_BATCHES``; docs/RELIABILITY.md, "Partial batches"):

- ``"recurring"`` (the default): a size's first batch runs padded to the smallest size the
  program already compiled (no compile); when the size comes again its own program compiles,
  in a background thread where that is safe (the caller's thread has no JAX setting of its
  own), while that batch still runs padded; from its third batch on it runs its own program.
- ``"buckets"``: every batch runs at the next power of two of its size (padded where smaller),
  so at most ``log2(largest batch) + 1`` programs ever compile, whatever the sizes.
- ``"pad"``: a batch smaller than a compiled size always runs padded (augjax's rule before).
- ``"off"`` (or ``AUGJAX_PAD_BATCHES=0``): every size compiles its own program.

The policy is read for a size whose own program has not run yet. Once it has (or compiled
behind), a call of that size is the call of a fresh process that ran only that size, under any
policy: one lookup, then the program; no lock, no note, no policy read.

Whatever the policy, a call's output is the same bits: padding is used only where it keeps
the real samples' results bitwise those of the size's own program (tests/reliability/
test_batch_history.py checks every op and policy):

- per-sample ops see each real sample with its own key at some position; their output for it
  does not depend on the position or on the other samples (docs/RELIABILITY.md, alignment).
  A chain of per-sample ops called with one key runs the full batches' program as it is: the
  real samples first, the one key given (the program's split of it into ``N`` keys starts with
  the ``n`` keys of the batch alone, with JAX's default partitionable Threefry);
- augjax's mixing ops (mixup, cutmix, mixup_cutmix) with ``mode="batch"`` pair position ``i``
  with ``N - 1 - i`` and take their one draw from the key at position 0. The real samples of a
  batch of ``n`` are put at both ends of the padded batch of ``N`` (``0 .. h-1`` first, ``h ..
  n-1`` last, ``h = ceil(n / 2)``), so sample ``i`` still pairs with sample ``n - 1 - i``; an
  odd batch's middle sample, which pairs with itself, gets a copy of itself as its partner;
- the filler positions hold copies of sample 0 (valid images, labels and keys); nothing real is
  mixed with them;
- not padded (each size compiles its own program): a mixing op with ``mode="pair"`` or
  ``"elem"`` (its draws are shaped by the true batch size: a padded batch would draw others),
  and any other batch-level op (a plugin's: augjax cannot know how it pairs samples).

Not padded either: inputs traced inside the caller's ``jax.jit`` (shapes are static there) and
arrays laid out over several devices.

At the process's end and at a fork, a background compile is finished or let go, never left
running into the interpreter's teardown (tests/runtime/test_recurring_exit.py):

- at exit, the interpreter waits for a compile under way (its thread is not a daemon: a daemon
  thread inside XLA when the interpreter finalizes is stopped by a forced unwind through C++
  frames, which aborts the process, or it uses what teardown freed, which crashes it), and
  none starts once the exit began (:func:`_closing`, run before the threads are joined): a
  recurring size's later batches then run padded;
- in a child forked while a compile ran (its thread is not there), the compile is let go: the
  size's next call in the child compiles its own program in the caller's thread, and nothing
  waits for the parent's thread (:func:`_forked`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import SingleDeviceSharding

from augjax._runtime.execution.keys import per_sample_keys
from augjax.errors import InputError

__all__ = ["POLICIES", "bucket", "call", "enabled", "layout", "no_padding", "paddable", "policy",
           "record", "wait_compiles"]

#: Batch-level ops that pair sample ``i`` with ``N - 1 - i`` and draw batch-wide values from the
#: key of sample 0 (``augjax.catalog.mix``) when their ``mode`` is ``"batch"``: padding in
#: :func:`layout` keeps their pairs and their draws.
MIRROR_PAIRED = frozenset({"mixup", "cutmix", "mixup_cutmix"})

#: The values of ``AUGJAX_PARTIAL_BATCHES``.
POLICIES = ("recurring", "buckets", "pad", "off")
ENV = "AUGJAX_PARTIAL_BATCHES"

_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("augjax_no_padding", default=False)


@dataclass
class _Sizes:
    """What one program did for one input signature: the batch sizes it compiled (ran
    unpadded), how often each other size ran padded, and the own compiles under way."""

    compiled: set[int] = field(default_factory=set)
    padded: dict[int, int] = field(default_factory=dict)
    pending: dict[int, threading.Thread] = field(default_factory=dict)


_lock = threading.Lock()
# program -> {signature of the non-batch dims: _Sizes}
_records: weakref.WeakKeyDictionary[Any, dict[Any, _Sizes]] = weakref.WeakKeyDictionary()
_threads: set[_Compile] = set()
# Set once the interpreter began to exit: no background compile starts after that.
_closed = False


def policy() -> str:
    """The partial-batch policy in force: ``AUGJAX_PARTIAL_BATCHES`` (one of :data:`POLICIES`,
    default ``"recurring"``); ``"off"`` inside :func:`no_padding` or with
    ``AUGJAX_PAD_BATCHES=0``.

    Raises:
        InputError: ``AUGJAX_PARTIAL_BATCHES`` holds something else.
    """
    if _OFF.get() or os.environ.get("AUGJAX_PAD_BATCHES", "1").strip().lower() in (
            "0", "false", "off", "no"):
        return "off"
    value = os.environ.get(ENV, "recurring").strip().lower() or "recurring"
    if value not in POLICIES:
        raise InputError(f"{ENV}: expects one of {', '.join(POLICIES)}, got {value!r}",
                         argument=ENV)
    return value


def enabled() -> bool:
    """Whether partial batches may run padded (:func:`policy` is not ``"off"``)."""
    return policy() != "off"


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
    """Whether padding keeps the real samples' results bitwise: every batch-level step is one
    of augjax's mirror-paired mixing ops drawing once per batch (``mode="batch"``)."""
    return all(step.pads_exactly for step in steps)


def bucket(n: int) -> int:
    """The batch size a batch of ``n`` runs at under ``"buckets"``: the next power of two."""
    return 1 << max(n - 1, 0).bit_length()


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
    shape, dtype and rank (one key or one per sample), and the device of the first (the
    images). None where the call is not padded (traced inputs, arrays over several devices).
    Runs on every call: it reads no computed property of a key array (a typed key's
    ``sharding`` costs microseconds)."""
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
        sig.append((a.shape[1:], a.dtype, a.ndim))
    if first is None:
        return None
    sharding = first.sharding
    if type(sharding) is not SingleDeviceSharding and len(sharding.device_set) != 1:
        return None
    return tuple(sig), sharding


def _batch(args: Sequence[Any]) -> int:
    for a in args:
        if a is not None:
            return a.shape[0]
    raise ValueError("no batch among the arguments")  # (_signature returned None first)


def _sizes(program: Any, sig: Any) -> _Sizes:
    by_sig = _records.get(program)  # read without the lock: entries are only ever added
    sizes = by_sig.get(sig) if by_sig is not None else None
    if sizes is None:
        with _lock:
            sizes = _records.setdefault(program, {}).setdefault(sig, _Sizes())
    return sizes


def record(program: Any, args: Sequence[Any], sig: Any = None) -> None:
    """Notes that ``program`` ran (so compiled) for ``args``' batch size (``sig``: their
    :func:`_signature`, when the caller has it)."""
    sig = _signature(args) if sig is None else sig
    if sig is None:
        return
    sizes = _sizes(program, sig)
    with _lock:
        sizes.compiled.add(_batch(args))


def call(program: Callable[..., Any], steps: Sequence[Any], args: Sequence[Any]) -> Any:
    """``program(*args)`` where every non-None arg has the batch as leading axis (but a single
    key of shape ``()``, which the program splits per sample itself), at the batch size
    :func:`policy` picks; a padded batch's outputs (a pytree of arrays with a leading batch
    axis, or None leaves) are cut back to the real samples.

    Once a batch size's own program has run (or compiled behind), its calls are ``program(
    *args)`` and nothing else, whatever the policy and whatever ran before: the call a fresh
    process makes (no lock, no policy read, no note; tests/runtime/test_recurring_steady.py
    counts it)."""
    sig = _signature(args)
    if sig is None:
        return program(*args)
    n = _batch(args)
    sizes = _sizes(program, sig)
    if n in sizes.compiled:  # a set only ever added to: read without the lock
        return program(*args)
    return _first_calls(program, steps, args, sig, sizes, n)


def _first_calls(program: Callable[..., Any], steps: Sequence[Any], args: Sequence[Any],
                 sig: Any, sizes: _Sizes, n: int) -> Any:
    """A call of a batch size whose own program has not run yet: the policy decides."""
    rule = policy()
    if rule == "off" or not paddable(steps) or n == 0:
        return _own(program, args, sig)
    if rule == "buckets":
        size = bucket(n)
        if size == n:
            return _own(program, args, sig)
        return _padded(program, steps, args, n, size)
    if rule == "recurring" and _closed:  # exiting: no compile behind any more, padded
        rule = "pad"
    start = False
    with _lock:
        size = None if n in sizes.compiled else min(
            (s for s in sizes.compiled if s > n), default=None)
        seen = sizes.padded.get(n, 0)
        job = sizes.pending.get(n)
        if size is not None:
            sizes.padded[n] = seen + 1
            if rule == "recurring" and seen and job is None:  # its second batch
                job = sizes.pending[n] = _Compile(program, args, sizes, n)
                _threads.add(job)
                start = True
    if size is None or rule == "pad" or not seen:
        if size is None:
            return _own(program, args, sig)
        return _padded(program, steps, args, n, size)
    if start:  # the size's second batch: its own program compiles, behind or here
        if not job.begin():  # a JAX setting of this thread's: here, now
            return _own(program, args, sig)
        return _padded(program, steps, args, n, size)
    job.finished.wait()  # its third batch on: its own program (waits for the compile)
    return _own(program, args, sig)


def wait_compiles() -> None:
    """Waits for the background compiles under way (tests, benchmarks)."""
    with _lock:
        jobs = list(_threads)
    for job in jobs:
        job.finished.wait()


def _own(program: Callable[..., Any], args: Sequence[Any], sig: Any) -> Any:
    out = program(*args)
    if sig is not None:
        record(program, args, sig)
    return out


def _padded(program: Callable[..., Any], steps: Sequence[Any], args: Sequence[Any], n: int,
            size: int) -> Any:
    key = next((a for a in args if a is not None and a.ndim == 0), None)
    if key is not None and _splits_by_prefix(key) and all(s.level == "sample"
                                                           for s in steps):
        # The program splits the one key into ``size`` keys, the first ``n`` of which are the
        # batch's: the real samples go first (the program the full batches ran, as it is).
        source = np.concatenate([np.arange(n), np.zeros(size - n, np.int64)]).astype(np.int32)
        position = np.arange(n, dtype=np.int32)
    else:
        source, position = layout(n, size)
        # a single key (split by the program itself) becomes one key per sample first
        args = tuple(per_sample_keys(a, n) if a is not None and a.ndim == 0 else a
                     for a in args)
    rows = _take(tuple(None if a is None or a.ndim == 0 else a for a in args), source)
    out = program(*(a if r is None else r for a, r in zip(args, rows)))
    return _take(out, position)


def _splits_by_prefix(key: Any) -> bool:
    """Whether the program's split of ``key`` into N keys begins with its split into n: a
    Threefry key (every key a call passes on is one), split the partitionable way
    (:func:`augjax._runtime.execution.keys.per_sample_keys`, whatever
    ``jax_threefry_partitionable``)."""
    return str(jax.random.key_impl(key)) == "threefry2x32"


def _settings() -> tuple[str, ...]:
    """Every JAX setting as this thread sees it (its own context managers included)."""
    config = jax.config
    return tuple(repr(getattr(config, name, None)) for name in sorted(config.values))


def _form(a: Any) -> Any:
    """What a call's program is specialised to in ``a``: shape, dtype, key type, placement and
    commitment (read, not ``a``'s data: a DALI batch's memory may be reused once the callback
    returns)."""
    if a is None:
        return None
    impl = jax.random.key_impl(a) if jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else None
    return a.shape, a.dtype, impl, a.sharding, a.committed


def _like(form: Any) -> Any:
    """An array of ``form`` (zeros; keys of seed 0): a call with it hits the program that a call
    with the array of that form compiles."""
    if form is None:
        return None
    shape, dtype, impl, sharding, committed = form
    if impl is not None:
        key = jax.random.key(0, impl=impl)
        x = key if not shape else jax.random.split(key, shape)
    else:
        x = jnp.zeros(shape, dtype)
    return jax.device_put(x, sharding) if committed else x


class _Compile(threading.Thread):
    """Compiles ``program`` for a recurring batch size behind the caller's back: runs it once on
    arrays like the caller's (zeros), in a copy of the caller's context, if this thread sees
    the caller's JAX settings (thread-local ones, e.g. ``jax.default_device(...)`` or
    ``jax.numpy_dtype_promotion(...)``, would trace another program: then the caller compiles
    itself).

    Not a daemon: the interpreter's exit waits for it (a daemon thread still inside XLA when
    the interpreter finalizes aborts or crashes the process; module doc)."""

    def __init__(self, program: Any, args: Sequence[Any], sizes: _Sizes, n: int):
        super().__init__(name=f"augjax-compile-{n}", daemon=False)
        self._program: Any = program
        self._sizes, self._n = sizes, n
        self._forms = [_form(a) for a in args]
        self._caller = _settings()
        self._context: Any = contextvars.copy_context()
        self._checked = threading.Event()
        self._safe = False
        self.finished = threading.Event()

    def begin(self) -> bool:
        """Starts; whether the compile runs here (False: the caller compiles itself)."""
        try:
            self.start()
        except RuntimeError:  # no new thread at the interpreter's shutdown: compile here
            self._done()
            return False
        self._checked.wait()
        return self._safe

    def run(self) -> None:
        try:
            self._safe = _settings() == self._caller
            self._checked.set()
            if self._safe:
                self._context.run(self._compile)
        except Exception:  # noqa: BLE001  (the caller's own call then compiles and says why)
            pass
        finally:
            self._checked.set()
            self._done()

    def _done(self) -> None:
        # Holds nothing of the caller's once done: the records are keyed weakly by the
        # program, which a reference from here would keep alive for good.
        self._program = self._context = None
        with _lock:
            _threads.discard(self)
        self.finished.set()

    def _compile(self) -> None:
        args = [_like(form) for form in self._forms]
        jax.block_until_ready(self._program(*args))
        with _lock:  # the size's next calls run its own program (call's first test)
            self._sizes.compiled.add(self._n)
            self._sizes.pending.pop(self._n, None)


def _closing() -> None:
    """At the interpreter's exit, before it joins the threads (so before ``atexit``'s handlers,
    JAX's among them): no background compile starts from now on; those under way finish (their
    threads are joined)."""
    global _closed
    _closed = True


def _locked() -> None:
    _lock.acquire()


def _unlocked() -> None:
    _lock.release()


def _forked() -> None:
    """In a forked child: the parent's compile threads are not here. Each job the child knows of
    counts as finished (it did not compile: the size's next call compiles in the caller's
    thread, as after a failed compile), with events and a lock of the child's own (the
    parent holds the lock across the fork: no update of the records is cut in two)."""
    global _lock
    _lock = threading.Lock()
    for job in _threads:
        job.finished = threading.Event()
        job.finished.set()
    _threads.clear()


# ``threading._register_atexit``: what concurrent.futures uses to stop taking work before the
# interpreter joins the threads (Python >= 3.9); without it the joins alone finish the compiles.
getattr(threading, "_register_atexit", lambda fn: None)(_closing)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_locked, after_in_parent=_unlocked, after_in_child=_forked)


@jax.jit
def _take(tree: Any, index: jax.Array) -> Any:
    """Rows ``index`` of every array in ``tree``: one small compiled gather per shape."""
    return jax.tree_util.tree_map(lambda a: a[index], tree)
