"""Clips: every op, chain and policy on video clips ``(N, T, H, W, C)``, one draw per clip.

A step called on clips, said so (``augjax.Clips(x)``, or ``layout="FHWC"``; a plain array of
rank 5 is refused: :mod:`augjax._core.kinds`), treats them as N clips of T frames::

    clips = augjax.Clips(videos)                                  # (N, T, H, W, C)
    out = augjax.ops.rand_augment(clips, key=key)                 # one draw per clip
    out = augjax.ops.rand_augment(clips, key=key, per_frame=True) # one draw per frame

**One draw per clip** (the default; kornia ``VideoSequential(same_on_frame=True)``, torchvision
``tv_tensors.Video``): the step draws its params for the N clips exactly as for a batch of N
images with the same key (``step.sample`` on ``(N, H, W, C)``), and every frame of clip ``n`` is
transformed with clip ``n``'s params. A clip of T identical frames therefore gives T copies of
the image call's output with the same key.

**One draw per frame** (``per_frame=True``): frame ``t`` of clip ``n`` draws from
``fold_in(k_n, t)`` (``k_n`` clip ``n``'s key, as for images), and frame ``t``'s params are what
the step draws for the batch of frames ``t``. ``step.sample(clips, key=..., per_frame=True)``
gives them with a leading axis T on every leaf.

The mechanism is generic, no op has clip code: the params are drawn for the clips' first frames
(or per frame), then the step's own deterministic ``apply`` runs. Per-sample steps run once over
the ``N * T`` frames with each clip's params repeated per frame (the same program, and cost, as
``N * T`` images). Steps with a batch-level op (mixup, cutmix) are mapped over the frame axis
(``jax.vmap``) with the clips' params, so that they mix whole clips: clip ``n``'s frame ``t`` with
clip ``perm[n]``'s frame ``t``, one ``lam`` per clip; soft labels are per clip ``(N, K)`` (per frame
``(N, T, K)`` with ``per_frame=True``).

Targets are per frame and follow their frame: ``masks`` ``(N, T, H, W[, K])``, ``boxes``
``(N, T, M, 4)``, ``keypoints`` ``(N, T, K, 2)``, ``boxes_valid`` ``(N, T, M)`` (or counts
``(N, T)``), ``keypoints_valid`` ``(N, T, K)``; results come back with the same ``(N, T)``
leading axes. Layout ``"FHWC"`` is ``(N, T, H, W, C)``, ``"FCHW"`` ``(N, T, C, H, W)``; the
functions here take the clips' layout or their frames' (``"HWC"``, ``"CHW"``).
DALI sequences (layout ``"FHWC"``) take the same targets as nodes whose samples lead with T;
the call then returns a dict of nodes. The programs are kept in augjax's program store.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax.kernels.boundary import kept_in_caller
from augjax.kernels.embedded import owned
from augjax._runtime.execution import padding
from augjax._runtime.execution.ahead import compile_apply, first_call
from augjax._runtime.execution.checking import check_batch, checking_enabled
from augjax._core.kinds import Clips, check_rank, frame_layout
from augjax._runtime.execution.inputs import (IMAGE_CHANNELS, LAYOUT_AXES, as_array,
                                              check_arguments, committed)
from augjax._runtime.execution.keys import keys_from_seeds, sample_keys
from augjax._runtime.execution.program import build_program
from augjax._runtime.targets.boxes import parse_format, parse_sanitize
from augjax._runtime.targets.rotated import WIDTH
from augjax.errors import InputError

__all__ = ["apply_clips", "call_clips", "frame_keys", "frame_layout", "sample_clips"]


def frame_keys(keys: jax.Array, frames: int) -> jax.Array:
    """Per-frame keys ``(T, N)`` from per-clip keys ``(N,)``: ``fold_in(k_n, t)``."""
    ts = jnp.arange(frames, dtype=jnp.uint32)
    return jax.vmap(lambda t: jax.vmap(lambda k: jax.random.fold_in(k, t))(keys))(ts)


def _clips(x: Any, name: str, layout: str) -> jax.Array:
    """The clips as an array of rank 5, checked in the clips' terms (``layout`` the frames')."""
    x = as_array(x, name, "images")  # (a torch tensor: InputTypeError, saying how to convert)
    check_rank(x.ndim, Clips.rank(Clips.layouts[0]), name, "images",
               Clips.describe(Clips.layouts[0]), x.shape)
    _check_channels(tuple(x.shape), layout, name)
    return x


def _check_channels(shape: tuple[int, ...], layout: str, name: str) -> None:
    """Channels-first clips given as ``"FHWC"`` (or channels-last as ``"FCHW"``), said with the
    clips' layouts: the frames' check would name the frames' shape and layout."""
    other = "CHW" if layout == "HWC" else "HWC"
    frame = shape[:1] + shape[2:]
    here, there = frame[LAYOUT_AXES[layout][2]], frame[LAYOUT_AXES[other][2]]
    if here in IMAGE_CHANNELS or there not in IMAGE_CHANNELS:
        return
    raise InputError(f"{name}: argument 'images' has clips of shape {shape}: in layout F{layout} "
                     f"that is {here} channels, but F{other}'s channel axis has {there}; say "
                     f"augjax.Clips(x, layout='F{other}') (or layout='F{other}'), or transpose "
                     f"the clips to F{layout}", op=name, argument="layout")


def _frame_struct(clips: jax.Array) -> jax.ShapeDtypeStruct:
    n, _, *rest = clips.shape
    return jax.ShapeDtypeStruct((n, *rest), clips.dtype)


def _random(step: Any) -> bool:
    steps, _ = step.program()
    return any(s.random for s in steps)


def _batch_level(step: Any) -> bool:
    """Whether any op the step runs sees the whole batch (mixup, cutmix)."""
    steps, _ = step.program()
    return any(s.level != "sample" for s in steps) or "labels" in step.inputs


def sample_clips(step: Any, inputs: tuple[Any, ...], *, key: Any, layout: str,
                 per_frame: bool) -> Any:
    """What ``step`` draws for the clips ``inputs[0]`` with ``key``: the params of N images
    (one draw per clip), or with ``per_frame`` a leading axis T on every leaf."""
    layout = frame_layout(layout)
    clips = _clips(inputs[0], step.name, layout)
    struct = _frame_struct(clips)
    key = committed(key)  # the programs of call_clips (which commits its inputs), not copies
    if not _random(step):
        params = step.sample(struct, key=key, layout=layout)
        if not per_frame:
            return params
        return jax.tree_util.tree_map(
            lambda v: jnp.broadcast_to(v, (clips.shape[1], *v.shape)), params)
    if not per_frame:  # (one key stays one: the images' sampler program splits it)
        return step.sample(struct, key=key, layout=layout)
    keys = sample_keys(key, clips.shape[0], step.name)
    return _frame_sampler(step, tuple(struct.shape), jnp.dtype(struct.dtype).name, layout)(
        frame_keys(keys, clips.shape[1]))


@functools.lru_cache(maxsize=256)
def _frame_sampler(step: Any, shape: tuple[int, ...], dtype: str, layout: str):
    """The jitted per-frame sampler: keys (T, N) -> params with a leading axis T."""
    struct = jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))
    return build_program(
        "sample", lambda ks: jax.vmap(lambda k: step.sample(struct, key=k, layout=layout))(ks),
        "clips_sample_frames", (step,), dict(shape=shape, dtype=dtype, layout=layout))


_FRAME_TARGETS = ("masks", "boxes", "keypoints", "boxes_valid", "keypoints_valid")


def _split_targets(targets: dict[str, Any], shape: tuple[int, ...], layout: str,
                   name: str) -> tuple[dict, dict]:
    """(per-frame target arrays, other keywords), the arrays checked to lead with (N, T) and
    masks to have the frames' size (``shape`` the clips', ``layout`` the frames')."""
    n, t = shape[:2]
    hw = tuple(shape[2:4]) if layout == "HWC" else tuple(shape[3:5])
    arrays, rest = {}, {}
    for k, v in targets.items():
        if v is None:
            continue
        if k in _FRAME_TARGETS:
            v = jnp.asarray(v)
            if v.ndim < 2 or tuple(v.shape[:2]) != (n, t):
                raise InputError(f"{name}: argument {k!r} on clips expects per-frame targets "
                                 f"with leading axes (N, T) = {(n, t)}, got shape "
                                 f"{tuple(v.shape)}", op=name, argument=k)
            if k == "masks" and (v.ndim not in (4, 5) or tuple(v.shape[2:4]) != hw):
                raise InputError(f"{name}: argument 'masks' on clips expects (N, T, H, W) or "
                                 f"(N, T, H, W, K) = {(n, t, *hw)}[, K] like the clips, got "
                                 f"{v.dtype} {tuple(v.shape)}", op=name, argument=k)
            if k in ("boxes", "keypoints"):
                _check_points(k, v, (n, t), targets.get("boxes_format"), name)
            arrays[k] = v
        elif k == "sanitize":  # a dict is taken: made hashable (the programs' key)
            rest[k] = parse_sanitize(v, name)
        else:
            rest[k] = v
    return arrays, rest


def _check_points(k: str, v: jax.Array, nt: tuple[int, int], boxes_format: Any,
                  name: str) -> None:
    """Boxes ``(N, T, M, width)`` (width by ``boxes_format``) and keypoints ``(N, T, K, 2)`` /
    ``(N, T, G, K, 2)`` checked in the clips' terms (not those of the N * T frames)."""
    if k == "boxes":
        fmt = parse_format(boxes_format or "xyxy", op=name)[0]
        ranks, width = (4,), WIDTH[fmt]
        shape = f"(N, T, M, {width}) {fmt.upper()} (boxes_format={fmt!r})"
    else:
        ranks, width, shape = (4, 5), 2, "(N, T, K, 2) or grouped (N, T, G, K, 2) x, y"
    if v.ndim not in ranks or v.shape[-1] != width:
        raise InputError(f"{name}: argument {k!r} on clips expects shape {shape} with (N, T) = "
                         f"{nt}, got {v.dtype} {tuple(v.shape)}", op=name, argument=k)


def apply_clips(step: Any, inputs: tuple[Any, ...], *, params: Any, layout: str,
                per_frame: bool, targets: dict[str, Any]) -> Any:
    """``step`` on clips with given params (from :func:`sample_clips`); deterministic. One
    jitted program (the repeat of the params per frame included)."""
    layout = frame_layout(layout)
    # Committed, as call_clips commits its inputs: apply and the call share one program
    # (jax.jit compiles once per commitment of its arguments).
    clips = committed(_clips(inputs[0], step.name, layout))
    if not per_frame:
        _check_not_framed(params, tuple(clips.shape[:2]), step.name)
    labels = committed(_array(inputs[1])) if len(inputs) > 1 else None
    params = jax.tree_util.tree_map(lambda v: committed(_array(v)), params)
    arrays, rest = _split_targets(dict(targets), tuple(clips.shape), layout, step.name)
    arrays = {k: committed(v) for k, v in arrays.items()}
    program = _apply_program(step, layout, per_frame, tuple(arrays), _hashable(rest))
    return program(clips, labels, params, *arrays.values())


def _hashable(rest: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The non-array keywords of a call (``mask_fill``), as a cache key."""
    return tuple(sorted((k, v.item() if hasattr(v, "item") else v) for k, v in rest.items()))


def _flat(v: jax.Array) -> jax.Array:
    return v.reshape(v.shape[0] * v.shape[1], *v.shape[2:])


def _unflat(v: jax.Array, n: int, t: int) -> jax.Array:
    return v.reshape(n, t, *v.shape[1:])


def _check_not_framed(params: Any, nt: tuple[int, int], name: str) -> None:
    """Raises InputError for params drawn with ``per_frame=True`` (every leaf leads with
    (T, N)) given to a per-clip apply, whose error would otherwise be vmap's over N * T frames."""
    n, t = nt
    leaves = jax.tree_util.tree_leaves(params)
    if n == t or not leaves or not all(tuple(np.shape(v)[:2]) == (t, n) for v in leaves):
        return
    raise InputError(f"{name}: argument 'params' leads with (T, N) = {(t, n)} on every leaf, as "
                     f"params drawn with per_frame=True do, but apply was called per clip "
                     f"(params leading with N = {n}); pass per_frame=True to apply as to sample",
                     op=name, argument="params")


def _apply_traced(step, layout, per_frame, names, rest, clips, labels, params, arrays):
    """The apply of :func:`apply_clips`, traced: per-sample steps once over the N*T frames,
    steps with a batch-level op mapped over T."""
    if not _batch_level(step):
        return _flat_apply(step, clips, params, layout, per_frame, dict(zip(names, arrays)),
                           rest)
    return _mapped_apply(step, clips, labels, params, layout, per_frame,
                         dict(zip(names, arrays)), rest)


@functools.lru_cache(maxsize=256)
def _apply_program(step: Any, layout: str, per_frame: bool, names: tuple[str, ...],
                   rest: tuple[tuple[str, Any], ...]):
    """The jitted apply on clips: ``f(clips, labels, params, *targets)``, compiled with
    augjax's apply options (CPU fusion boundaries)."""

    def program(clips, labels, params, *arrays):
        return _apply_traced(step, layout, per_frame, names, dict(rest), clips, labels, params,
                             arrays)

    return build_program("apply", program, "clips_apply", (step,),
                         dict(layout=layout, per_frame=per_frame, targets=names, rest=rest))


@functools.lru_cache(maxsize=256)
def _call_program(step: Any, layout: str, per_frame: bool, names: tuple[str, ...],
                  rest: tuple[tuple[str, Any], ...], frame: tuple[int, ...], dtype: str):
    """Sampler and apply in one jitted program (off the CPU: one dispatch per call), the
    params behind ``lax.optimization_barrier`` as augjax's own fused calls do."""
    struct = jax.ShapeDtypeStruct(frame, jnp.dtype(dtype))

    def program(clips, labels, keys, *arrays):
        keys = jax.random.split(keys, frame[0]) if keys is not None and keys.ndim == 0 else keys
        if not per_frame:
            params = step.sample(struct, key=keys, layout=layout)
        else:
            fk = frame_keys(keys, clips.shape[1])
            params = jax.vmap(lambda k: step.sample(struct, key=k, layout=layout))(fk)
        params = jax.lax.optimization_barrier(params)
        return _apply_traced(step, layout, per_frame, names, dict(rest), clips, labels, params,
                             arrays)

    return build_program("call", program, "clips_call", (step,),
                         dict(layout=layout, per_frame=per_frame, targets=names, rest=rest,
                              frame=frame, dtype=dtype))


def _flat_apply(step, clips, params, layout, per_frame, arrays, rest):
    """Per-sample steps: one apply over the N*T frames, clip params repeated per frame."""
    n, t = clips.shape[:2]
    if per_frame:  # (T, N, ...) -> (N*T, ...)
        frame_params = jax.tree_util.tree_map(lambda v: _flat(jnp.swapaxes(v, 0, 1)), params)
    else:
        frame_params = jax.tree_util.tree_map(lambda v: jnp.repeat(v, t, axis=0), params)
    out = step.apply(_flat(clips), params=frame_params, layout=layout,
                     **{k: _flat(v) for k, v in arrays.items()}, **rest)
    if isinstance(out, dict):
        return {k: _unflat(v, n, t) for k, v in out.items()}
    return _unflat(out, n, t)


def _mapped_apply(step, clips, labels, params, layout, per_frame, arrays, rest):
    """Steps with a batch-level op: the apply mapped over the frame axis, so that the ops mix
    whole clips (frame t with frame t)."""
    names = tuple(arrays)

    def frames_apply(frames, frame_params, *frame_targets):
        inputs = (frames,) if labels is None else (frames, labels)
        return step.apply(*inputs, params=frame_params, layout=layout,
                          **dict(zip(names, frame_targets)), **rest)

    in_axes = (1, 0 if per_frame else None) + (1,) * len(names)
    shapes = jax.eval_shape(jax.vmap(frames_apply, in_axes=in_axes),
                            clips, params, *arrays.values())
    if isinstance(shapes, dict):
        out_axes = {k: (None if k == "labels" and not per_frame else 1) for k in shapes}
    elif isinstance(shapes, tuple):  # (images, soft labels)
        out_axes = (1, 1 if per_frame else None)
    else:
        out_axes = 1
    return jax.vmap(frames_apply, in_axes=in_axes, out_axes=out_axes)(
        clips, params, *arrays.values())


def _array(x: Any) -> Any:
    """NumPy arrays as ``jax.Array`` (to be committed); anything else as it is."""
    return jnp.asarray(x) if isinstance(x, np.ndarray) else x


def _on_cpu(x: Any) -> bool:
    if isinstance(x, np.ndarray) or isinstance(x, jax.core.Tracer):
        return True
    return all(d.platform == "cpu" for d in x.devices())


def call_clips(step: Any, inputs: tuple[Any, ...], *, key: Any, layout: str, per_frame: bool,
               targets: dict[str, Any], seeds: Any = None, seed: int | None = None,
               device: str | None = None) -> Any:
    """``step`` on clips: the params drawn per clip (or per frame), then applied. On the CPU
    (and inside a caller's trace) the sampler and the apply run as two programs, so that a
    call equals ``apply(sample(...))`` bitwise by construction; elsewhere as one. DALI
    sequences (``DataNode``, layout ``"FHWC"``) take one ``jax_function`` (:func:`_dali`)."""
    from augjax._runtime.execution.dispatch import is_data_node

    layout = frame_layout(layout)
    if inputs and is_data_node(inputs[0]):
        return _dali(step, inputs, layout=layout, per_frame=per_frame, seeds=seeds, seed=seed,
                     device=device, key=key, targets=targets)
    check_arguments(step.name, nodes=False, key=key, seeds=seeds, seed=seed, device=device)
    if len(inputs) != len(step.inputs):
        raise InputError(f"{step.name}: expects {len(step.inputs)} positional input(s) "
                         f"({', '.join(step.inputs)}), got {len(inputs)}", op=step.name,
                         argument="images")
    # float values outside [0, 1]: NumPy clips are read for free (a warning), jax.Arrays only in
    # checking mode (an error; reading them is a device sync), as image batches
    if isinstance(inputs[0], (np.ndarray, jax.Array)):
        check_batch(inputs[0], step.name, on_host=isinstance(inputs[0], np.ndarray),
                    strict=checking_enabled())
    # committed: arrays and DALI (committed arrays) share the programs (inputs.committed)
    inputs = tuple(committed(_array(x)) for x in inputs)
    key, targets = committed(key), {k: committed(_array(v)) for k, v in targets.items()}
    clips = _clips(inputs[0], step.name, layout)
    if _random(step) and key is None:
        sample_keys(None, clips.shape[0], step.name)  # raises KeyRequiredError
    if _on_cpu(clips) or not _random(step):
        if isinstance(clips, jax.core.Tracer):  # a caller's trace: no sampler in the kernels
            params = kept_in_caller(sample_clips(step, inputs[:1], key=key, layout=layout,
                                                 per_frame=per_frame))
            return apply_clips(step, (clips, *inputs[1:]), params=params, layout=layout,
                               per_frame=per_frame, targets=targets)
        # A batch of a size not run before goes through the partial-batch policy, as a
        # chain's (augjax._runtime.execution.padding: padded where that keeps the bits).
        arrays, rest = _split_targets(dict(targets), tuple(clips.shape), layout, step.name)
        run = _runner(step, layout, per_frame, tuple(arrays), _hashable(rest))
        labels = inputs[1] if len(inputs) > 1 else None
        return padding.call(run, step.program()[0], (clips, labels, key, *arrays.values()))
    n = clips.shape[0]
    labels = inputs[1] if len(inputs) > 1 else None
    arrays, rest = _split_targets(dict(targets), tuple(clips.shape), layout, step.name)
    keys = sample_keys(key, n, step.name, split=False)
    struct = _frame_struct(clips)
    program = _call_program(step, layout, per_frame, tuple(arrays), _hashable(rest),
                            tuple(struct.shape), jnp.dtype(struct.dtype).name)
    return program(clips, labels, keys, *arrays.values())


@functools.lru_cache(maxsize=256)
def _runner(step: Any, layout: str, per_frame: bool, names: tuple[str, ...],
            rest: tuple[tuple[str, Any], ...]):
    """``run(clips, labels, key, *target arrays)``: the sampler, then the apply program (two
    programs: a call equals ``apply(sample(...))`` bitwise); the partial-batch policy's program
    (its records of compiled batch sizes are kept per step and targets)."""

    def run(clips, labels, key, *arrays):
        inputs = (clips,) if labels is None else (clips, labels)
        targets = {**dict(zip(names, arrays)), **dict(rest)}
        join = _apply_ahead(step, inputs, key, layout, per_frame, targets)
        params = sample_clips(step, inputs[:1], key=key, layout=layout, per_frame=per_frame)
        if join is not None:
            join()
        return apply_clips(step, inputs, params=params, layout=layout, per_frame=per_frame,
                           targets=targets)

    return run


def _apply_ahead(step: Any, inputs: tuple[Any, ...], key: Any, layout: str, per_frame: bool,
                 targets: dict[str, Any]):
    """A shape's first call: its apply program compiles on a helper thread while the sampler
    compiles and runs (:mod:`augjax._runtime.execution.ahead`); the function that waits for it, or
    None."""
    clips = inputs[0]
    if isinstance(clips, jax.core.Tracer):
        return None
    arrays, rest = _split_targets(dict(targets), tuple(clips.shape), layout, step.name)
    program = _apply_program(step, layout, per_frame, tuple(arrays), _hashable(rest))
    labels = inputs[1] if len(inputs) > 1 else None
    signature = (clips.shape, clips.dtype, labels is None or (labels.shape, labels.dtype),
                 tuple((k, v.shape, v.dtype) for k, v in arrays.items()))
    if not first_call(program, signature):
        return None
    return compile_apply(
        lambda: jax.eval_shape(lambda k: sample_clips(step, inputs[:1], key=k, layout=layout,
                                                      per_frame=per_frame), key),
        key, program, lambda p: (clips, labels, p, *arrays.values()))


# -- DALI sequences ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _dali_function(step: Any, layout: str, per_frame: bool, with_labels: bool, with_seeds: bool,
                   device: str, tspec: Any = None, check: bool = False):
    """The ``jax_function`` for ``step`` on sequences: ``(clips[, labels][, seeds], *targets)``
    -> ``(clips[, labels], *target outputs)``, the targets per frame in ``tspec.names`` order
    and out in ``tspec.outputs`` order (as the image path's)."""
    from augjax._runtime.execution.program import final_layout
    from augjax.dali import dali_modules

    _, _, jax_fn = dali_modules()
    outputs = ("F" + final_layout(step.program()[0], layout),)
    if "labels" in step.outputs:
        outputs += ("",)
    names = tspec.names if tspec is not None else ()
    moved = tspec.outputs if tspec is not None else ()
    options = {} if tspec is None else {"mask_fill": tspec.mask_fill}
    if tspec is not None and "boxes" in tspec.names:  # they describe boxes: only with boxes
        options.update(boxes_format=tspec.boxes_format, boxes_normalized=tspec.boxes_normalized,
                       sanitize=tspec.sanitize)

    def function(*arrays):
        clips, rest = arrays[0], list(arrays[1:])
        # CPU sequences are on the host: their float range is read for free (as images');
        # ``check``: checking mode where the pipeline was defined (DALI's threads run this)
        check_batch(clips, step.name, on_host=device == "cpu", strict=check)
        labels = (rest.pop(0),) if with_labels else ()
        keys = keys_from_seeds(rest.pop(0)) if with_seeds else None
        targets = dict(zip(names, rest), **options) if names else {}
        out = call_clips(step, (clips, *labels), key=keys, layout=layout, per_frame=per_frame,
                         targets=targets)
        if names:
            head = (out["images"],) + ((out["labels"],) if "labels" in step.outputs else ())
            return head + tuple(out[k] for k in moved)
        return tuple(out) if isinstance(out, tuple) else (out,)

    outputs += tuple("" for _ in moved)
    return jax_fn.jax_function(owned(function), num_outputs=len(outputs), output_layouts=outputs,
                               device=device)


def _dali(step: Any, inputs: tuple[Any, ...], *, layout: str, per_frame: bool, seeds: Any,
          seed: int | None, device: str | None, key: Any, targets: dict[str, Any]) -> Any:
    """``step`` on DALI sequences (samples ``(T, H, W, C)``): one ``jax_function`` whose
    program is :func:`call_clips` with the keys of the per-sample seeds, so it equals the
    array path with ``key=augjax.keys_from_seeds(seeds)``."""
    from augjax._runtime.targets.inputs import prepare_targets
    from augjax.dali import dali_modules, node_device, placed, sample_seeds

    dali_modules()  # the install hint first
    name = step.name
    device = check_arguments(name, nodes=True, key=key, seeds=seeds, seed=seed, device=device,
                             source=node_device(inputs[0]))
    # per-frame targets: DataNodes of samples (T, M, 4), (T, H, W[, K]), (T, K, 2), ...
    tspec, target_nodes = prepare_targets(name, dict(targets), 0, 0, 0, concrete=False)
    args = [placed(x, device) for x in inputs]
    if _random(step):
        args.append(placed(seeds if seeds is not None else
                           sample_seeds(device=device, seed=seed), device))
    args.extend(placed(node, device) for node in target_nodes)
    op = _dali_function(step, layout, per_frame, len(inputs) > 1, _random(step), device, tspec,
                        checking_enabled())
    out = op(*args)
    out = out if isinstance(out, (list, tuple)) else (out,)
    if tspec is not None:
        head = 2 if "labels" in step.outputs else 1
        result = {"images": out[0]}
        if head == 2:
            result["labels"] = out[1]
        result.update(zip(tspec.outputs, out[head:]))
        return result
    return tuple(out) if "labels" in step.outputs else out[0]
