"""One ``jax_function`` per op or chain: the data, one per-sample seed input, and labels only
for mixing ops cross into JAX (docs/guide/performance.md, "One crossing per chain")."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any

import augjax._runtime.execution.padding as _padding
from augjax._core.declaration import HWC, LAYOUTS
from augjax._runtime.execution.checking import check_batch, checking_enabled
from augjax._runtime.execution.inputs import check_arguments
from augjax.kernels.embedded import owned
from augjax.kernels.partition import sharding_spans_devices
from augjax._runtime.execution.program import final_layout, once_cache, seeded_program
from augjax._runtime.ragged.prefix import ragged_count, window_structure
from augjax._runtime.execution.values import as_arguments, giving, lift
from augjax.dali._backend import _dali
from augjax.dali._nodes import check_not_sequences, node_device, placed, sample_seeds
from augjax.dali._ragged import ragged_read
from augjax.errors import InputError

__all__ = ["apply_dali", "dali_function", "use_sharding"]

_SHARDING: contextvars.ContextVar[Any] = contextvars.ContextVar("augjax_sharding", default=None)


@contextlib.contextmanager
def use_sharding(sharding: Any) -> Iterator[None]:
    """Within this block, augjax operators built in a pipeline definition pass ``sharding`` to
    ``jax_function``: the program then sees each batch as a slice of a global, sharding-aware
    ``jax.Array`` (one local device per process, as DALI requires; docs/guide/scaling.md).

    >>> with augjax.dali.use_sharding(NamedSharding(mesh, PartitionSpec("batch"))):  # doctest: +SKIP
    ...     images = augjax.ops.flip(images)
    """
    token = _SHARDING.set(sharding)
    try:
        yield
    finally:
        _SHARDING.reset(token)


@once_cache(maxsize=512)
def dali_function(
    steps: tuple[Any, ...],
    layout: str,
    with_labels: bool,
    with_seeds: bool,
    device: str,
    start: int = 0,
    sharding: Any = None,
    check: bool = False,
    targets: Any = None,
    values: tuple[tuple[Any, ...], ...] = (),
):
    """The DALI operator (a ``jax_function``) for ``steps``, cached so that building a pipeline
    again reuses the compiled program; ``check``: checking mode (see
    :mod:`augjax._runtime.execution.checking`). ``values``: the numbers lifted out of ``steps``
    (skeletons, :mod:`augjax._runtime.execution.values`), handed to the program at every batch
    as the array path hands them: the two paths then run the same compiled programs.
    """
    _, _, jax_fn = _dali()
    program = seeded_program(steps, layout, with_labels, with_seeds, start,
                             partitioned=sharding_spans_devices(sharding), targets=targets)
    outputs = ("images", "labels") if with_labels else ("images",)
    out_layout = final_layout(steps, layout)
    layouts = (out_layout, "") if with_labels else (out_layout,)
    if targets is not None:
        outputs += targets.outputs
        layouts += tuple("" for _ in targets.outputs)
    first = getattr(steps[0], "name", "augjax")

    def function(*arrays: Any) -> Any:
        # CPU batches are on the host: their float range is read for free (a warning, an
        # error in checking mode); GPU batches only in checking mode (a sync).
        check_not_sequences(tuple(getattr(arrays[0], "shape", ()))[1:], first, layout)
        check_batch(arrays[0], first, on_host=device == "cpu", strict=check)
        if sharding is not None:
            return program(*arrays)
        with giving(arguments):
            return _padding.call(program, steps, arrays)  # a smaller batch runs padded
    arguments = as_arguments(values) if values else ()
    return jax_fn.jax_function(
        owned(function), num_outputs=len(outputs), output_layouts=layouts, device=device,
        sharding=sharding,
    )


def _ragged_prefix(steps: tuple[Any, ...], layout: str, name: str) -> int:
    """How many leading steps DALI runs on the images at their own sizes (0: none; the
    images must then be uniform): a chain starting with an op that declares ``ragged=``."""
    if layout != HWC or not steps[0].ragged:
        return 0
    try:
        window_structure(steps[:1])
    except InputError:  # a configuration DALI cannot read ragged (random_crop pad_mode='reflect')
        return 0
    return ragged_count(steps, name, open_end=True)


def _sizes_readable(images: Any) -> bool:
    """Whether the pipeline being defined can read ``images``' sizes on the CPU: GPU images only
    under DALI's dynamic executor (``exec_dynamic=True``, its default); the legacy executor takes
    no step from the GPU back to the CPU."""
    if node_device(images) != "gpu":
        return True
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline.current() or getattr(getattr(images, "source", None), "pipeline", None)
    return pipe is None or bool(getattr(pipe, "exec_dynamic", True))


def apply_dali(
    steps: Sequence[Any],
    inputs: Sequence[Any],
    *,
    name: str,
    outputs_decl: tuple[str, ...],
    seeds: Any,
    seed: int | None,
    device: str | None,
    layout: str,
    start: int = 0,
    targets: Any = None,
    key: Any = None,
) -> Any:
    """Adds the operator for ``steps`` to the pipeline being defined and returns its outputs
    (with targets, a dict of DataNodes: the targets are more inputs and outputs of the same
    ``jax_function``). ``key``: refused (a pipeline draws from per-sample seeds)."""
    from augjax._runtime.targets.inputs import check_hooks, prepare_targets

    _dali()  # the install hint first
    tspec, target_nodes = prepare_targets(name, dict(targets or {}), 0, 0, 0, concrete=False)
    check_hooks(steps, tspec)
    images = inputs[0]
    labels = inputs[1] if len(inputs) > 1 else None
    device = check_arguments(name, nodes=True, key=key, seeds=seeds, seed=seed, device=device,
                             source=node_device(images))

    tagged = getattr(images, "layout", None)  # DALI's layout metadata, where the node has it
    if isinstance(tagged, str) and tagged in LAYOUTS and tagged != layout:
        raise InputError(
            f"{name}: argument 'images' is tagged layout {tagged!r} by DALI, but the op was "
            f"called with layout={layout!r}; pass layout={tagged!r}",
            op=name,
            argument="layout",
        )

    steps = tuple(steps)
    random = any(step.random for step in steps)
    n = _ragged_prefix(steps, layout, name)
    if n and seeds is not None and node_device(seeds) != "cpu":
        # The windows of images of different sizes are drawn on the CPU, and DALI cannot bring
        # GPU seeds back: with GPU seeds the chain takes batches of one size, read in JAX.
        n = 0
    if n and not _sizes_readable(images):
        # So it does under DALI's legacy executor on GPU images (their sizes stay on the GPU).
        n = 0
    if n:
        # The ragged prefix is drawn on the CPU (its windows steer DALI's own operators).
        given = seeds is not None
        if not given and random:
            seeds = sample_seeds(device="cpu", seed=seed)
        if tspec is None:
            images = ragged_read(steps[:n], images, seeds, start)
        else:
            images, tspec, target_nodes = ragged_read(steps[:n], images, seeds, start,
                                                      (tspec, target_nodes))
        steps, start = steps[n:], start + n
        if not steps:
            if tspec is None:
                return images
            result = {"images": images}
            result.update(zip(tspec.names, target_nodes))
            return result
        random = any(step.random for step in steps)
        if not (random or given):
            seeds = None

    args = [placed(images, device)]
    if labels is not None:
        args.append(placed(labels, device))
    if seeds is not None:
        args.append(placed(seeds, device))
    elif random:
        args.append(sample_seeds(device=device, seed=seed))
    args.extend(placed(node, device) for node in target_nodes)
    sharding = _SHARDING.get()
    steps, values = tuple(steps), ()
    if tspec is None and sharding is None:  # the array path's skeletons and values
        steps, values = lift(steps)
    op = dali_function(
        steps, layout, labels is not None, bool(random or seeds is not None), device, start,
        sharding, checking_enabled(), tspec, values,
    )
    out = op(*args)
    out = out if isinstance(out, (list, tuple)) else (out,)
    if tspec is not None:
        head = 2 if labels is not None else 1
        result = {"images": out[0]}
        if "labels" in outputs_decl:
            result["labels"] = out[1]
        result.update(zip(tspec.outputs, out[head:]))
        return result
    return tuple(out) if "labels" in outputs_decl else out[0]
