"""A sharded, counter-seeded file source for data-parallel DALI pipelines.

Each sample carries seeds derived from its global index in the dataset and the epoch
(:func:`augjax._keys.index_seeds`), so its augmentation is the same whether the global batch is
read by one pipeline or split over many devices and hosts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from augjax._keys import index_seeds
from augjax.errors import InputError

__all__ = ["ShardedSource"]


class ShardedSource:
    """Per-sample ``external_source`` callable: ``(encoded bytes, label, seeds, index)``.

    Every epoch has one global order (a permutation seeded by ``(seed, epoch)``); global batch
    ``t`` is positions ``[t * G, (t + 1) * G)`` with ``G = batch_size * num_shards``, and shard
    ``s`` reads the ``s``-th slice of ``batch_size`` samples of it. A global batch therefore holds
    the same samples, with the same seeds, for every number of shards. The last incomplete global
    batch of an epoch is dropped (``StopIteration`` ends the epoch).

    Use it with ``fn.external_source(source=..., num_outputs=4, batch=False)``.
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
        self.files = list(files)
        self.labels = np.asarray(labels, np.int32)
        self.batch_size = batch_size
        self.shard_id = shard_id
        self.num_shards = num_shards
        self.seed = seed
        self.shuffle = shuffle
        self._order: tuple[int, np.ndarray] | None = None

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

    def __call__(self, sample_info):
        full = len(self.files) // (self.batch_size * self.num_shards)
        if sample_info.iteration >= full:
            raise StopIteration
        pos = self.global_position(sample_info.iteration, sample_info.idx_in_batch)
        index = int(self.order(sample_info.epoch_idx)[pos])
        encoded = np.fromfile(self.files[index], dtype=np.uint8)
        seeds = index_seeds([index], epoch=sample_info.epoch_idx, seed=self.seed)[0]
        return encoded, self.labels[index:index + 1], seeds, np.array([index], np.int64)
