"""A chain lowered to JAX: the per-sample draws of its steps (:func:`sample_steps`) and their
application with given params (:func:`apply_params`), where the fusion boundaries between steps
are placed (:mod:`augjax._runtime.execution.fusion`), compute-bound runs go through the batch in
chunks on a CPU and batch-level steps (mixup, cutmix) take the whole batch. Traced inside the
programs of
:mod:`augjax._runtime.execution.program`, which count the traces here (:func:`trace_count`)."""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Sequence
from typing import Any

import einops
import jax
import jax.numpy as jnp

from augjax.kernels.boundary import OTHER, materialize
from augjax._runtime.execution.fusion import backend, fused_with, kept_before_batch, step_kind
from augjax._runtime.execution.inputs import check_images, check_labels
from augjax._core.meta import Meta
from augjax._core.step import Step, Structure
from augjax.kernels.platform import platform_dependent
from augjax._runtime.targets.samplers import draw_seeing, targets_at
from augjax.errors import InputError, OpDefinitionError

__all__ = ["CPU_CHUNK", "apply_params", "counted", "final_layout", "sample_steps", "trace_count"]

_traces = 0
_traces_lock = threading.Lock()


def trace_count() -> int:
    """How many times augjax has traced (and so compiled, or loaded from JAX's compilation
    cache) one of its programs in this process: a chain's programs, and the plans and reads of
    lists of images of different sizes (one per canvas bucket). Programs loaded from the
    program store are not traced."""
    return _traces


def _count_trace() -> None:
    global _traces
    with _traces_lock:
        _traces += 1


def counted(fn: Any) -> Any:
    """``fn``, counted by :func:`trace_count` each time it is traced (for the programs augjax
    jits outside :func:`apply_params`: the plans and reads of lists of images)."""

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        _count_trace()
        return fn(*args, **kwargs)

    return traced


def _to_hwc(x: jax.Array, layout: str) -> jax.Array:
    return einops.rearrange(x, "n c h w -> n h w c") if layout == "CHW" else x


def _from_hwc(x: jax.Array, layout: str) -> jax.Array:
    return einops.rearrange(x, "n h w c -> n c h w") if layout == "CHW" else x


def _check_output(step: Step, out: jax.Array, src: jax.Array, layout: str) -> str:
    """Checks a step's HWC output against what it promises for ``src`` (in ``layout``);
    returns the output's layout."""
    n, h, w, c = src.shape
    want = step.after(Structure(h, w, c, jnp.dtype(src.dtype).name, layout))
    expected_dtype = jnp.dtype(want.dtype)
    if tuple(out.shape) != (n, want.height, want.width, c) or out.dtype != expected_dtype:
        raise OpDefinitionError(
            f"op {step.name!r}: the kernel returned {out.dtype} {tuple(out.shape)}, but its "
            f"declaration promises {expected_dtype} {(n, want.height, want.width, c)} (batch "
            f"in HWC)"
        )
    return want.layout


def _hwc_shape(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int]:
    n, a, b, c = shape
    return (n, b, c, a) if layout == "CHW" else (n, a, b, c)


def sample_steps(
    steps: Sequence[Step],
    shape: tuple[int, ...],
    dtype: Any,
    keys: jax.Array | None,
    layout: str,
    start: int = 0,
    targets: Any = None,
    arrays: Sequence[Any] = (),
) -> tuple[Any, ...]:
    """Every step's params for a batch of ``shape`` (in ``layout``) and ``dtype``: a tuple with
    one pytree per step (a dict of arrays with a leading axis N). Traced inside ``jax.jit``.

    Step ``j`` draws from ``fold_in(sample_key, start + j)``; per-sample steps are vmapped over
    the samples' keys, batch-level steps draw from the first sample's key. A step whose sampler
    reads targets (``sample_targets``) gets each sample's ``arrays`` (named by ``targets``, a
    :class:`TargetSpec`) as the steps before it moved them."""
    shape0, dtype0 = _hwc_shape(tuple(shape), layout), dtype
    n, h, w, c = shape0
    dtype = jnp.dtype(dtype)
    out = []
    for pos, step in enumerate(steps, start):
        if step.level == "sample" and step.sample_targets:
            meta = Meta(h, w, c, dtype.name)
            params = draw_seeing(step, pos, meta, keys, n, targets_at(
                steps[:pos - start], out, targets, arrays, shape0, dtype0) if targets else None)
        elif step.level == "sample":
            meta = Meta(h, w, c, dtype.name)
            if step.random and keys is not None:
                params = jax.vmap(lambda k, s=step, m=meta: s.draw(jax.random.fold_in(k, pos), m)
                                  )(keys)
            else:
                one = step.draw(None, meta)
                params = jax.tree_util.tree_map(
                    lambda v: jnp.broadcast_to(v, (n,) + jnp.shape(v)), one)
        else:
            meta = Meta(h, w, c, dtype.name, n)
            key = jax.random.fold_in(keys[0], pos) if (keys is not None and n) else \
                (jax.random.key(0) if step.random else None)
            if step.sample_targets:  # the batch's targets (copy_paste)
                seen = targets_at(steps[:pos - start], out, targets, arrays, shape0,
                                  dtype0) if targets else {}
                params = step.draw(key, meta, targets=seen)
            else:
                params = step.draw(key, meta)
        out.append(params)
        h, w, c, name, _ = step.after(Structure(h, w, c, dtype.name))
        dtype = jnp.dtype(name)
    return tuple(out)


def apply_params(
    steps: Sequence[Step],
    images: jax.Array,
    labels: jax.Array | None,
    params: Sequence[Any],
    layout: str,
) -> tuple[jax.Array, jax.Array | None]:
    """Applies configured ops in order with the given params (one pytree per step, as
    :func:`sample_steps` returns them); deterministic. Traced inside ``jax.jit``. Every step's
    output but the last passes through :func:`augjax.kernels.boundary.materialize`, except
    where the next step reads it fused for less (:mod:`augjax._runtime.execution.fusion`): XLA then
    fuses no op into a consumer that would compute it again for each read."""
    _count_trace()
    if len(params) != len(steps):
        raise InputError(f"apply: expected params for {len(steps)} step(s), got {len(params)}",
                         argument="params")
    x = images
    items = list(zip(steps, params))
    runs = itertools.groupby(items, key=lambda sp: (sp[0].level, sp[0].compute_bound))
    before = None  # what the step before was (fusion.step_kind); None: no step before
    batch = False  # whether the step before is a batch-level one (kept whole before and after
    # a batch step: boundary._kept_whole)
    for (level, _), run in runs:  # per-sample ops in runs (all compute-bound or none)
        run = list(run)
        if level == "sample":
            x, layout, before = _sample_segment(run, x, layout, before, batch)
            batch = False
            continue
        for step, p in run:
            if kept_before_batch(before):  # read from memory (boundary.py)
                x = materialize(x, row_major=True, whole=True)  # read by a batch step
            x, labels, layout = _batch_step(step, p, x, labels, layout)
            before, batch = OTHER, True
    if len(steps) > 1 and backend() == "cpu":  # the last step writes the
        # row-major output itself (boundary.py)
        x = materialize(x, row_major=True, whole=batch)
    return x, labels


def _batch_step(step: Step, p, x, labels, layout):
    """Applies one batch-level op; returns (x, labels, layout)."""
    n = x.shape[0]
    check_images(x, step, layout)
    hwc = _to_hwc(x, layout)
    args = [hwc]
    if "labels" in step.inputs:
        if labels is None:
            raise InputError(
                f"{step.name}: argument 'labels' is required (the op mixes labels); "
                f"call it as {step.name}(images, labels, ...)",
                op=step.name,
                argument="labels",
            )
        args.append(check_labels(labels, n, step.name))
    result = step.run_batch(tuple(args), p)
    if "labels" in step.outputs:
        out, labels = result
        labels = _poison_bad_classes(args[-1], labels, step.kwargs.get("num_classes"))
    else:
        out = result
    layout = _check_output(step, out, hwc, layout)
    return _from_hwc(out, layout), labels, layout


#: On CPU a run of compute-bound per-sample ops (``Step.compute_bound``) goes through the
#: batch this many samples at a time (a loop of vmapped chunks): every stage then finds the
#: chunk's images in cache, where over the whole batch each would stream it from memory (colour
#: jitter, B=64 x 224 x 224 on 2 cores: 128 ms vmapped, 66 ms in chunks of 8; the same bits).
#: Memory-bound ops (flip: 5 -> 18 ms in chunks) and GPUs take the whole batch at once.
CPU_CHUNK = 8


def _sample_segment(segment, x, layout, before=None, batch=False):
    """Applies consecutive per-sample ops ``[(step, params), ...]`` after a step of kind
    ``before`` (:func:`~augjax._runtime.execution.fusion.step_kind`; None: no step before;
    ``batch``: a batch-level one); returns (x, layout, the last op's kind)."""
    out_layout = final_layout([step for step, _ in segment], layout)

    kinds = [OTHER] * len(segment)  # per step: fusion.step_kind

    def apply(x, ps):
        lay = layout
        for i, ((step, _), p) in enumerate(zip(segment, ps)):
            check_images(x, step, lay)
            kinds[i] = step_kind(step, _to_hwc(x, lay), p)
            prev = before if i == 0 else kinds[i - 1]
            if prev is not None and not fused_with(prev, kinds[i]):  # read from memory
                x = materialize(x, row_major=True, whole=batch and i == 0)
            hwc = _to_hwc(x, lay)
            out = jax.vmap(step.run)(hwc, p)
            lay = _check_output(step, out, hwc, lay)
            x = _from_hwc(out, lay)
        return x

    ps = tuple(p for _, p in segment)
    n, chunk = x.shape[0], CPU_CHUNK
    if n <= chunk or not segment[0][0].compute_bound:
        return apply(x, ps), out_layout, kinds[-1]
    # Checked on the whole batch first, so that an error names the batch's shapes, not a chunk's.
    jax.eval_shape(apply, x, ps)

    def chunked(x):
        m = n // chunk * chunk

        def split(v):
            return v[:m].reshape(n // chunk, chunk, *v.shape[1:])

        parts = (split(x), jax.tree_util.tree_map(split, ps))
        head = jax.lax.map(lambda t: apply(*t), parts)
        head = head.reshape(m, *head.shape[2:])
        if m == n:
            return head
        tail = apply(x[m:], jax.tree_util.tree_map(lambda v: v[m:], ps))
        return jnp.concatenate([head, tail])

    return (platform_dependent(x, cpu=chunked, default=lambda x: apply(x, ps)), out_layout,
            OTHER)


def _poison_bad_classes(ids: jax.Array, soft: jax.Array, num_classes: Any) -> jax.Array:
    """Soft labels all NaN when an integer class id lies outside ``[0, num_classes)``.

    one_hot would silently give an all-zero row; reading the ids back to raise would cost a
    device-to-host sync per batch. NaN makes the loss NaN at once (docs/RELIABILITY.md);
    NumPy labels on arrays are checked before the call and raise InputError instead.
    """
    if not isinstance(num_classes, int) or not jnp.issubdtype(ids.dtype, jnp.integer):
        return soft
    bad = jnp.any((ids < 0) | (ids >= num_classes))
    return jnp.where(bad, jnp.nan, soft)


def final_layout(steps: Sequence[Step], layout: str) -> str:
    """The layout of a program's output for an input of ``layout`` (of any size and dtype)."""
    structure = Structure(None, None, None, None, layout)
    for step in steps:
        structure = step.after(structure)
    return structure.layout
