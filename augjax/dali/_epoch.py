"""Epoch ends with DALI's JAX and PyTorch iterators: full batches through the pipeline, the real
samples out.

DALI's JAX iterator refuses ``LastBatchPolicy.PARTIAL``. With ``LastBatchPolicy.FILL`` and a
reader that pads its last batch (``pad_last_batch=True``), every batch has the pipeline's batch
size, so augjax's program never sees a new size (no compile at the epoch end), and each sample
is read once per epoch; the last batch ends with copies of the epoch's last sample.
:func:`trim_epoch` cuts those copies off::

    it = DALIGenericIterator([pipe], ["images", "labels"], reader_name="reader",
                             last_batch_policy=LastBatchPolicy.FILL, auto_reset=True)
    for epoch in range(epochs):
        for batch in augjax.dali.trim_epoch(it):   # the last batch has only the real samples
            ...

The copies went through the augmentation with the rest of the batch; a mixing op may have
paired a real sample with one of them (with ``LastBatchPolicy.FILL`` that is DALI's batch).

DALI's PyTorch iterator (``nvidia.dali.plugin.pytorch.DALIGenericIterator``) takes the same
arguments and yields ``[dict of torch.Tensor]`` (one dict per pipeline); ``trim_epoch`` cuts its
last batch the same way and keeps that structure (``LastBatchPolicy.PARTIAL``, which the
PyTorch iterator allows, cuts it too: examples/pytorch_train.py, docs/PYTORCH.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from augjax.errors import InputError

__all__ = ["trim_epoch"]


def _epoch_size(iterator: Any) -> int:
    reader = getattr(iterator, "_reader_name", None)
    pipes = getattr(iterator, "_pipes", None)
    if reader and pipes:
        return int(pipes[0].reader_meta(reader)["epoch_size"])
    raise InputError(
        "trim_epoch: cannot read the epoch size from the iterator (it was built without "
        "reader_name=); pass epoch_size= (the number of samples in one epoch)",
        op="trim_epoch", argument="epoch_size")


def trim_epoch(iterator: Any, epoch_size: int | None = None) -> Iterator[dict[str, Any]]:
    """One epoch of a DALI JAX or PyTorch iterator (``LastBatchPolicy.FILL``) with the padded
    tail of its last batch cut off.

    Args:
        iterator: a ``nvidia.dali.plugin.jax.DALIGenericIterator`` (or
            ``nvidia.dali.plugin.pytorch.DALIGenericIterator``) over one pipeline, built with
            ``last_batch_policy=LastBatchPolicy.FILL`` (DALI's default) and ``reader_name=`` of
            a reader with ``pad_last_batch=True``.
        epoch_size: samples per epoch; default: the reader's ``epoch_size``.

    Yields:
        The iterator's batches (dicts of ``jax.Array``; from the PyTorch iterator ``[dict of
        torch.Tensor]``); in the last one each array keeps only the epoch's real samples.
    """
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy

    policy = getattr(iterator, "_last_batch_policy", LastBatchPolicy.FILL)
    if policy != LastBatchPolicy.FILL:
        raise InputError(
            f"trim_epoch: the iterator's last_batch_policy is {policy}; trim_epoch is for "
            f"LastBatchPolicy.FILL (with DROP there is nothing to trim)",
            op="trim_epoch", argument="iterator")
    if len(getattr(iterator, "_pipes", ())) > 1:
        raise InputError(
            "trim_epoch: the iterator has several pipelines; their last batches are padded per "
            "shard, so a global batch cannot be cut at one place. Use LastBatchPolicy.DROP, or "
            "one iterator per shard",
            op="trim_epoch", argument="iterator")
    size = _epoch_size(iterator) if epoch_size is None else int(epoch_size)
    seen = 0
    for batch in iterator:
        listed = isinstance(batch, (list, tuple))  # the PyTorch iterator: [dict] per pipeline
        outputs = batch[0] if listed else batch
        n = next(iter(outputs.values())).shape[0]
        real = max(0, min(n, size - seen))
        seen += n
        if real < n:
            outputs = {name: value[:real] for name, value in outputs.items()}
            batch = [outputs] if listed else outputs
        yield batch
