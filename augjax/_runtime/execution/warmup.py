"""Pre-warming: compile an op's or a chain's DALI program before the pipeline's first batch.

DALI traces and compiles a ``jax_function`` on its first ``run()``, on a DALI thread (0.5-0.7 s
for a colour jitter on CPU; several seconds for a policy), so the first batch stalls the
training loop. ``warmup`` runs the same jitted program once on zeros of the batch's shape on
the target device, which fills JAX's compile cache: the pipeline's first batch then runs at
steady-state speed (its arrays have the same shape, dtype and device, so they hit that cache).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

import augjax._runtime.execution.padding as _padding
from augjax._core.step import Step
from augjax._runtime.execution.program import seeded_program
from augjax._runtime.execution.values import as_arguments, giving, lift
from augjax.errors import InputError

__all__ = ["warmup"]


def _steps(aug: Any) -> tuple[tuple[Any, ...], int, tuple[str, ...]]:
    from augjax._core.spec import OpSpec

    if isinstance(aug, OpSpec):
        aug = aug.bind()
    if isinstance(aug, Step):  # a configured op, a chain, a composite step
        steps, start = aug.program()
        return tuple(steps), start, tuple(aug.inputs)
    raise InputError(
        f"warmup: argument 'aug' expects an op, a configured op or a chain, got "
        f"{type(aug).__name__}",
        argument="aug",
    )


def warmup(
    aug: Any,
    batch_shape: tuple[int, ...],
    *,
    dtype: str = "uint8",
    layout: str = "HWC",
    device: str | Any = "cpu",
    seeds: bool | None = None,
) -> int:
    """Compiles ``aug``'s DALI program for batches of ``batch_shape`` on ``device``.

    Args:
        aug: ``augjax.ops.flip``, ``augjax.ops.flip.bind(p=0.5)``, a chain or a policy.
        batch_shape: the image batch's shape, e.g. ``(256, 224, 224, 3)``.
        dtype: the images' dtype (``"uint8"`` from DALI's decoders).
        layout: ``"HWC"`` or ``"CHW"``.
        device: ``"cpu"``, ``"gpu"`` or a ``jax.Device`` (the device the pipeline runs on).
        seeds: whether the pipeline passes ``seeds=`` to ``aug``; ``None`` (the default) means
            as augjax does by itself: seeds exactly when something in ``aug`` is random.

    Returns:
        How many programs were compiled (0 if the cache already had it).
    """
    from augjax._runtime.execution.program import trace_count

    steps, start, inputs = _steps(aug)
    if isinstance(device, str):
        device = jax.devices("gpu" if device == "gpu" else "cpu")[0]
    n = batch_shape[0]
    random = any(step.random for step in steps)
    with_labels = "labels" in inputs
    arrays = [jax.device_put(jnp.zeros(batch_shape, dtype), device)]
    if with_labels:
        arrays.append(jax.device_put(jnp.zeros((n, 1), jnp.int32), device))
    with_seeds = random if seeds is None else bool(seeds)
    if with_seeds:
        arrays.append(jax.device_put(jnp.zeros((n, 2), jnp.int32), device))
    before = trace_count()
    # The pipeline's operator runs the steps' skeletons with their values as arguments (as the
    # array path does, augjax.dali._bridge): the same program.
    steps, values = lift(steps)
    program = seeded_program(steps, layout, with_labels, with_seeds, start)
    with giving(as_arguments(values)):
        if _padding.policy() == "buckets":  # the pipeline's batches run at their bucket
            jax.block_until_ready(_padding.call(program, steps, arrays))
        else:  # this size's own program, not a padded run of a larger one
            with _padding.no_padding():
                jax.block_until_ready(_padding.call(program, steps, arrays))
    return trace_count() - before
