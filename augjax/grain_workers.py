"""grain worker processes: the set-up that pins a worker's JAX to the CPU (``pin_cpu``,
``worker_init``) and the compile of a worker's programs before the workers start
(``warm_workers``), re-exported by :mod:`augjax.grain`, importable without grain."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["in_worker", "pin_cpu", "warm_workers", "worker_init"]


def pin_cpu(*, single_thread: bool = True) -> None:
    """Makes this process's JAX use the CPU platform only (``JAX_PLATFORMS=cpu``), and with
    ``single_thread`` no kernel split over several threads (``--xla_cpu_multi_thread_eigen=false``:
    worker processes are the parallelism, as torch's DataLoader gives each worker one thread; a
    flag already in ``XLA_FLAGS`` is kept). XLA still runs the program on threads of its own
    pool, not on the calling thread.

    Takes effect when JAX has not opened a backend yet in this process, which is the case in a
    grain worker that unpickles its transforms. Called by :class:`RandomMap` in worker processes
    and by :func:`worker_init`.
    """
    os.environ["JAX_PLATFORMS"] = "cpu"
    flags = os.environ.get("XLA_FLAGS", "")
    if single_thread and "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    import jax

    jax.config.update("jax_platforms", "cpu")


def worker_init(worker_index: int = 0, worker_count: int = 0) -> None:
    """A ``worker_init_fn`` for grain's ``mp_prefetch`` and torch's ``DataLoader``: pins the
    worker's JAX to the CPU.

    Raises:
        BackendUnavailableError: the worker was forked from a process whose JAX had already
            started (ran a computation): JAX is multithreaded and deadlocks in a forked child's
            first computation, so the worker says so at once instead of hanging; start the
            workers with ``spawn`` or ``forkserver``.
    """
    del worker_count
    if _FORKED_AFTER_JAX:
        from augjax.errors import BackendUnavailableError

        raise BackendUnavailableError(
            f"augjax worker_init: worker {worker_index} was forked from a process that had "
            "already started JAX, which deadlocks in a forked child; start the workers with "
            "'spawn' or 'forkserver' (torch: DataLoader(..., multiprocessing_context='spawn'); "
            "multiprocessing.set_start_method('spawn'))")
    pin_cpu()


#: Whether this process was forked from one whose JAX had started (set in the child at fork).
_FORKED_AFTER_JAX = False
_parent_started_jax = False


def _jax_started() -> bool:
    """Whether this process's JAX has opened a backend (without importing JAX)."""
    import sys

    bridge = sys.modules.get("jax._src.xla_bridge")
    try:
        return bool(bridge is not None and bridge.backends_are_initialized())
    except Exception:  # noqa: BLE001  (another JAX: assume not)
        return False


def _before_fork() -> None:
    global _parent_started_jax
    _parent_started_jax = _jax_started()


def _after_fork_in_child() -> None:
    global _FORKED_AFTER_JAX
    _FORKED_AFTER_JAX = _FORKED_AFTER_JAX or _parent_started_jax


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def in_worker() -> bool:
    """Whether this process is a worker (a child of another Python process)."""
    return multiprocessing.parent_process() is not None


def warm_workers(transform: Any, records: Iterable[Any], *, draws: int = 4,
                 timeout: float = 1800.0) -> dict:
    """Compiles the programs a worker runs before the workers start: ``transform`` (an
    :class:`augjax.grain.RandomMap`, or anything with grain's ``random_map(record, rng)``; or a
    chain or views, as a torch ``DataLoader`` worker calls them: ``chain([image], key=...)``
    where it starts with an op that takes images of any size, else ``chain(image[None],
    key=...)``,
    each record an image or a dict with ``"image"``) runs on ``records`` in one spawned
    process pinned as a worker is (:func:`pin_cpu`), and the programs it compiles are kept in
    the program store (``AUGJAX_CACHE_DIR``) where every worker, of this run or the next, loads
    them instead of compiling them each.

    Programs compiled in the main process do not serve the workers: a worker's JAX runs on the
    CPU with one thread per kernel, which compiles other programs than the main process's (a
    GPU, or the CPU's threads). Give records of each kind the workers will see: a chain that
    starts with a crop compiles per canvas bucket, which follows the drawn crop's region, not
    only the record's size, so each record runs ``draws`` times (other draws: other regions);
    a few dozen records of the data's sizes cover it. Any other chain compiles per record
    size. The draws' outputs are thrown away.

    Returns:
        ``{"records": n, "runs": n * draws, "seconds": s}``: the records, the runs and the
        warm-up's wall time.

    Raises:
        AugjaxError: the transform's own error on a bad record (the record's note names it).
        ParamError: ``draws`` is not an int >= 1.
        multiprocessing.TimeoutError: the runs took more than ``timeout`` seconds.
    """
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        from augjax.errors import ParamError

        raise ParamError(f"warm_workers: argument 'draws' expects an int >= 1, got {draws!r}",
                         op="warm_workers", param="draws")
    records = list(records)
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        runs = pool.apply_async(_warm, (transform, records, draws)).get(timeout)
    return {"records": len(records), "runs": runs,
            "seconds": round(time.perf_counter() - start, 3)}


def _warm(transform: Any, records: list[Any], draws: int) -> int:
    """In the spawned process: pinned as a worker, the transform on each record, ``draws``
    times (generators seeded ``(record, draw)``)."""
    import numpy as np

    pin_cpu()
    if not hasattr(transform, "random_map"):  # a chain, as a DataLoader's worker calls it
        import jax

        from augjax._runtime.execution.keys import index_seeds, keys_from_seeds
        from augjax.errors import InputError

        listed = True  # a list of one where the chain (or every view) starts with a crop
        for i, record in enumerate(records):
            image = np.asarray(record["image"] if isinstance(record, dict) else record)
            for d in range(draws):
                key = keys_from_seeds(index_seeds([i], d, 0))
                try:
                    out = transform([image] if listed else image[None], key=key)
                except InputError:
                    if not listed:
                        raise
                    listed = False  # it takes one size per batch: a batch of one
                    out = transform(image[None], key=key)
                jax.block_until_ready(out)
        return len(records) * draws
    for i, record in enumerate(records):
        for d in range(draws):
            transform.random_map(record, np.random.default_rng((i, d)))
    return len(records) * draws
