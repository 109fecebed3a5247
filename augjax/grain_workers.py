"""grain worker processes: the set-up that pins a worker's JAX to the CPU (``pin_cpu``,
``worker_init``, re-exported by :mod:`augjax.grain`), importable without grain."""

from __future__ import annotations

import multiprocessing
import os

__all__ = ["in_worker", "pin_cpu", "worker_init"]


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
    """A ``worker_init_fn`` for ``mp_prefetch``: pins the worker's JAX to the CPU."""
    del worker_index, worker_count
    pin_cpu()


def in_worker() -> bool:
    """Whether this process is a worker (a child of another Python process)."""
    return multiprocessing.parent_process() is not None
