"""A chain run on the arrays that DALI's JAX iterator yields, with device prefetch: the
augmentation of the next batches is dispatched before the current batch is handed to the
consumer, so it overlaps the consumer's work (docs/PERFORMANCE.md says when this beats the
operator inside the pipeline).

The per-sample seeds come out of the pipeline (:func:`sample_seeds`), drawn by the same DALI
RNG operator the in-pipeline form uses, and the program is the in-pipeline operator's own
(:func:`augjax._runtime.execution.program.seeded_program`): for the same seeds both forms give the
same bits, and a DALI checkpoint restores the stream.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from augjax._core.step import Step
from augjax._runtime.execution.inputs import check_layout
from augjax._runtime.execution.program import seeded_program
from augjax.dali._nodes import sample_seeds
from augjax.errors import InputError

__all__ = ["augment_batches", "sample_seeds"]


def _steps(chain: Any) -> tuple[tuple[Any, ...], int, tuple[str, ...], tuple[str, ...]]:
    if not isinstance(chain, Step):  # a chain, a bound op, a composite
        raise InputError(f"augment_batches: argument 'chain' expects an augjax chain or bound "
                         f"op, got {type(chain).__name__}", op="augment_batches",
                         argument="chain")
    steps, start = chain.program()
    steps = tuple(steps)
    if not steps:
        raise InputError("augment_batches: the chain is empty", op="augment_batches",
                         argument="chain")
    return steps, int(start), tuple(chain.inputs), tuple(chain.outputs)


class augment_batches(Iterator[dict]):  # noqa: N801 - used like a function
    """Runs ``chain`` on each batch of ``batches`` (dicts of ``jax.Array``, e.g. DALI's
    ``DALIGenericIterator``), ``prefetch`` batches ahead of the consumer.

    Args:
        batches: an iterable of mappings holding the images, the per-sample seeds (int32
            ``(B, 2)``, from :func:`sample_seeds` returned by the pipeline) and, for chains
            that mix labels, the labels.
        chain: an ``augjax.compose(...)`` chain or a bound op (``augjax.ops.flip.bind(p=0.5)``).
        images: the name of the images' entry in each batch.
        labels: the name of the labels' entry; a chain that mixes labels replaces it with its
            soft labels. Entries the chain does not use pass through unchanged.
        seeds: the name of the per-sample seeds' entry.
        prefetch: how many batches beyond the one handed out have their augmentation already
            dispatched (0: none, each batch is augmented when asked for).
        layout: "HWC" or "CHW", as for the op call.

    The outputs are the in-pipeline operator's for the same seeds, bit for bit: the program is
    the same compiled function. (Chains that start with a resampling crop or ``resize``: in the
    pipeline DALI resamples the windows, here JAX does; same windows, see the
    documentation's "Images of different sizes".)
    """

    def __init__(self, batches: Iterable[Mapping[str, Any]], chain: Any, *,
                 images: str = "images", labels: str = "labels", seeds: str = "seeds",
                 prefetch: int = 2, layout: str = "HWC") -> None:
        if not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 0:
            raise InputError(f"augment_batches: argument 'prefetch' expects an int >= 0, got "
                             f"{prefetch!r}", op="augment_batches", argument="prefetch")
        check_layout(layout, "augment_batches")
        steps, start, inputs, outputs = _steps(chain)
        self._with_labels = "labels" in inputs
        self._labels_out = "labels" in outputs
        self._random = any(step.random for step in steps)
        self._program = seeded_program(steps, layout, self._with_labels, self._random, start)
        self._names = (images, labels, seeds)
        self._source = iter(batches)
        self._prefetch = prefetch
        self._pending: collections.deque[dict] = collections.deque()
        self._done = False

    def _entry(self, batch: Mapping[str, Any], name: str, argument: str) -> Any:
        try:
            return batch[name]
        except KeyError:
            raise InputError(
                f"augment_batches: a batch has no entry {name!r} (argument {argument!r}); it "
                f"has {sorted(batch)}", op="augment_batches", argument=argument) from None

    def _dispatch(self, batch: Mapping[str, Any]) -> dict:
        images, labels, seeds = self._names
        args = [self._entry(batch, images, "images")]
        if self._with_labels:
            args.append(self._entry(batch, labels, "labels"))
        if self._random:
            args.append(self._entry(batch, seeds, "seeds"))
        out = self._program(*args)  # dispatched; JAX runs it asynchronously
        result = dict(batch)
        result[images] = out[0]
        if self._labels_out:
            result[labels] = out[1]
        return result

    def _fill(self, n: int) -> None:
        while not self._done and len(self._pending) < n:
            try:
                batch = next(self._source)
            except StopIteration:
                self._done = True
                break
            self._pending.append(self._dispatch(batch))

    def __iter__(self) -> augment_batches:
        return self

    def __next__(self) -> dict:
        # this batch and the next ``prefetch`` are dispatched: their augmentation runs while
        # the consumer works on this one
        self._fill(self._prefetch + 1)
        if not self._pending:
            raise StopIteration
        return self._pending.popleft()
