"""A sharded, counter-seeded file source for data-parallel DALI pipelines.

Each sample carries seeds derived from its global index in the dataset and the epoch
(:func:`augjax._runtime.execution.keys.index_seeds`), so its augmentation is the same whether the
global batch is read by one pipeline or split over many devices and hosts.

The source can run in four forms that give bitwise the same samples (``tests/dali/test_sources.py``);
they differ only in how much Python the pipeline's calling thread runs per sample:

- ``mode="sample"``: one callback per sample (DALI's per-sample ``external_source``).
- ``mode="batch"``: one callback per batch (``batch=True, batch_info=True``); seeds and indices
  are computed for the whole batch at once.
- ``read="dali"``: the callback returns file paths and DALI's ``fn.io.file.read`` reads the files
  in its own threads, outside the GIL.
- ``parallel=True`` (:meth:`ShardedSource.external_source`): the callbacks run in DALI's Python
  worker processes (``py_num_workers``, ``py_start_method="spawn"`` on the pipeline).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from augjax._runtime.execution.keys import index_seeds
from augjax.errors import InputError

__all__ = ["ShardedSource"]

_MODES = ("sample", "batch")
_READS = ("python", "dali")


class ShardedSource:
    """``external_source`` callable: ``(encoded bytes, label, seeds, index)`` per sample.

    Every epoch has one global order (a permutation seeded by ``(seed, epoch)``); global batch
    ``t`` is positions ``[t * G, (t + 1) * G)`` with ``G = batch_size * num_shards``, and shard
    ``s`` reads the ``s``-th slice of ``batch_size`` samples of it. A global batch therefore holds
    the same samples, with the same seeds, for every number of shards. The last incomplete global
    batch of an epoch is dropped (``StopIteration`` ends the epoch).

    The easiest use is :meth:`external_source`, which passes the arguments the chosen ``mode``
    and ``read`` need and returns the four DALI nodes::

        src = ShardedSource(files, labels, batch_size=64, shard_id=s, num_shards=n,
                            mode="batch", read="dali")
        encoded, label, seeds, index = src.external_source(parallel=False)

    By hand: ``mode="sample"`` is ``fn.external_source(source=src, num_outputs=4, batch=False)``
    and ``mode="batch"`` is ``fn.external_source(source=src, num_outputs=4, batch=True,
    batch_info=True)``. Per sample the outputs are ``uint8 (bytes,)``, ``int32 (1,)``,
    ``int32 (2,)`` and ``int64 (1,)`` in every mode. With ``read="dali"`` the first output of the
    callable is the file's path (UTF-8, ``uint8``) instead of its bytes; read it with
    ``fn.io.file.read``, as :meth:`external_source` does.

    Args:
        files: Paths of the encoded samples.
        labels: One integer label per file.
        batch_size: Samples per batch of this shard (the global batch is
            ``batch_size * num_shards``).
        shard_id: This shard, in ``[0, num_shards)``.
        num_shards: Number of shards (pipelines) reading the global batch.
        seed: Seed of the epoch orders and of the samples' augmentation seeds.
        shuffle: Reshuffle the global order every epoch (else the file order).
        mode: ``"sample"`` (one callback per sample) or ``"batch"`` (one per batch: fewer
            Python calls, vectorised seeds).
        read: ``"python"`` (the callback reads each file) or ``"dali"`` (the callback returns
            paths; DALI's ``fn.io.file.read`` reads them in its thread pool).

    Raises:
        InputError: labels and files differ in length, a bad shard/batch size, fewer files than
            one global batch, or an unknown ``mode``/``read``.
    """

    def __init__(
        self,
        files: Sequence[str],
        labels: Sequence[int],
        *,
        batch_size: int,
        shard_id: int = 0,
        num_shards: int = 1,
        seed: int = 0,
        shuffle: bool = True,
        mode: str = "sample",
        read: str = "python",
    ) -> None:
        if len(files) != len(labels):
            raise InputError(
                f"ShardedSource: argument 'labels' expects one label per file ({len(files)}), "
                f"got {len(labels)}",
                argument="labels",
            )
        if not 0 <= shard_id < num_shards or batch_size < 1:
            raise InputError(
                f"ShardedSource: expects 0 <= shard_id < num_shards and batch_size >= 1, got "
                f"shard_id={shard_id}, num_shards={num_shards}, batch_size={batch_size}",
                argument="shard_id",
            )
        global_batch = batch_size * num_shards
        if len(files) < global_batch:
            raise InputError(
                f"ShardedSource: {len(files)} files cannot fill one global batch of "
                f"{global_batch} ({num_shards} shards x {batch_size})",
                argument="files",
            )
        for name, value, choices in (("mode", mode, _MODES), ("read", read, _READS)):
            if value not in choices:
                raise InputError(
                    f"ShardedSource: argument '{name}' expects one of {choices}, got {value!r}",
                    argument=name,
                )
        self.files = [os.fspath(f) for f in files]
        self.labels = np.asarray(labels, np.int32)
        self.batch_size = batch_size
        self.shard_id = shard_id
        self.num_shards = num_shards
        self.seed = seed
        self.shuffle = shuffle
        self.mode = mode
        self.read = read
        self._order: tuple[int, np.ndarray] | None = None

    @property
    def batches_per_epoch(self) -> int:
        """Full global batches per epoch (the incomplete last one is dropped)."""
        return len(self.files) // (self.batch_size * self.num_shards)

    def order(self, epoch: int) -> np.ndarray:
        """The global order of the dataset in ``epoch``."""
        if self._order is None or self._order[0] != epoch:
            n = len(self.files)
            perm = (np.random.default_rng([self.seed, epoch]).permutation(n) if self.shuffle
                    else np.arange(n))
            self._order = (epoch, perm)
        return self._order[1]

    def global_position(self, iteration: int, idx_in_batch: int) -> int:
        """Position in the epoch's global order of this shard's sample ``idx_in_batch``."""
        return (iteration * self.batch_size * self.num_shards
                + self.shard_id * self.batch_size + idx_in_batch)

    def _payload(self, index: int) -> np.ndarray:
        if self.read == "dali":
            return np.frombuffer(os.fsencode(self.files[index]), np.uint8).copy()
        return np.fromfile(self.files[index], dtype=np.uint8)

    def __call__(self, info):
        """One sample (``mode="sample"``, ``info`` a ``SampleInfo``) or this shard's batch
        (``mode="batch"``, ``info`` a ``BatchInfo``); ``StopIteration`` past the epoch's last
        full global batch."""
        if self.mode == "batch":
            return self._batch(info)
        if not hasattr(info, "idx_in_batch"):
            raise InputError(
                "ShardedSource(mode='sample'): expects a SampleInfo (fn.external_source(..., "
                f"batch=False)), got {type(info).__name__}; use mode='batch' for batch=True",
                argument="mode",
            )
        if info.iteration >= self.batches_per_epoch:
            raise StopIteration
        pos = self.global_position(info.iteration, info.idx_in_batch)
        index = int(self.order(info.epoch_idx)[pos])
        seeds = index_seeds([index], epoch=info.epoch_idx, seed=self.seed)[0]
        return (self._payload(index), self.labels[index:index + 1], seeds,
                np.array([index], np.int64))

    def _batch(self, info):
        if not hasattr(info, "epoch_idx") or hasattr(info, "idx_in_batch"):
            raise InputError(
                "ShardedSource(mode='batch'): expects a BatchInfo (fn.external_source(..., "
                f"batch=True, batch_info=True)), got {type(info).__name__}",
                argument="mode",
            )
        if info.iteration >= self.batches_per_epoch:
            raise StopIteration
        start = self.global_position(info.iteration, 0)
        idx = self.order(info.epoch_idx)[start:start + self.batch_size]
        payload = [self._payload(i) for i in idx.tolist()]
        seeds = index_seeds(idx, epoch=info.epoch_idx, seed=self.seed)
        return (payload, self.labels[idx].reshape(-1, 1), seeds,
                idx.astype(np.int64).reshape(-1, 1))

    def external_source(self, *, parallel: bool = False, prefetch_queue_depth: int | None = None,
                        name: str | None = None):
        """The DALI nodes ``(encoded, label, seeds, index)`` of this source (call it inside a
        pipeline definition).

        Args:
            parallel: Run the callback in the pipeline's Python worker processes
                (``fn.external_source(parallel=True)``). Give the pipeline ``py_num_workers``
                and ``py_start_method="spawn"`` (forking after JAX or CUDA started is unsafe);
                the source is pickled to the workers, which import augjax (and JAX).
            prefetch_queue_depth: Parallel mode only: batches computed ahead (DALI's default
                is 1). With ``mode="batch"`` each worker computes a whole batch, so use about
                ``py_num_workers`` batches to keep them all busy.
            name: Name of the ``external_source`` operator.

        Raises:
            InputError: ``prefetch_queue_depth`` without ``parallel=True``, or below 1;
                ``parallel=True`` in a pipeline with ``exec_pipelined=False`` (DALI's parallel
                source only prefetches with the pipelined executor; unchecked, the first run
                fails with "No task has been scheduled").
        """
        from nvidia.dali import Pipeline, fn

        kwargs = {"source": self, "num_outputs": 4, "batch": self.mode == "batch",
                  "parallel": bool(parallel)}
        if self.mode == "batch":
            kwargs["batch_info"] = True
        if prefetch_queue_depth is not None:
            if not parallel or prefetch_queue_depth < 1:
                raise InputError(
                    "ShardedSource.external_source: argument 'prefetch_queue_depth' expects an "
                    f"integer >= 1 with parallel=True, got {prefetch_queue_depth!r} with "
                    f"parallel={parallel}",
                    argument="prefetch_queue_depth",
                )
            kwargs["prefetch_queue_depth"] = prefetch_queue_depth
        if name is not None:
            kwargs["name"] = name
        pipe = Pipeline.current()
        if parallel and pipe is not None and not pipe.exec_pipelined:
            raise InputError(
                "ShardedSource.external_source: parallel=True needs a pipeline with "
                "exec_pipelined=True, got exec_pipelined=False",
                argument="parallel",
            )
        payload, label, seeds, index = fn.external_source(**kwargs)
        encoded = fn.io.file.read(payload) if self.read == "dali" else payload
        return encoded, label, seeds, index
