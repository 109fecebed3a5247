"""The DALI side of images of different sizes (``fn.decoders.image`` output).

``jax_function`` takes only uniform batches, so a chain that starts with an op declaring
``ragged=`` (crops, resize) reads the ragged batch with DALI's own operators:

1. the images' shapes (``DataNode.shape``, CPU) and the per-sample seeds go into one small
   ``jax_function`` (:func:`plan_function`) that draws each sample's window with the same keys
   and code as the array path (:func:`augjax._runtime.ragged.prefix.plan_program`);
2. ``fn.slice`` cuts the box, ``fn.resize`` resamples it (antialiased triangle filter, as
   torchvision's ``antialias=True``), ``fn.slice`` with padding cuts the output window; a
   resize followed by a window (``scale_jitter``, ``resize`` then ``center_crop``) resamples
   only the part the window sees (``roi_start``/``roi_end``: :func:`visible_roi`);
3. the uniform batch goes on to the chain's remaining ops: one ``jax_function``, as always.

Targets (:mod:`augjax._runtime.targets.follow`) follow the same windows: masks (ragged like the
images) through the same ``fn.slice`` / ``fn.resize`` with nearest sampling and no antialiasing
(padding gets ``mask_fill``), boxes and keypoints (uniform, padded to ``M``) through each window's
matrix in a second small CPU ``jax_function`` (:func:`target_function`), clamped and flagged as
after any geometric op.

Memory is bounded by each image and the output, never by the largest image of the batch.
Pixels differ from torchvision's (and the array path's) by DALI's resampling only: measured in
docs/guide/ragged.md ("Images of different sizes").
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.declaration import HWC
from augjax._runtime.execution.keys import keys_from_seeds
from augjax._runtime.execution.program import build_program, once_cache
from augjax._runtime.ragged.prefix import move_window_points, plan_program, window_structure
from augjax._runtime.targets.inputs import TargetSpec
from augjax.dali._backend import _dali
from augjax.dali._nodes import check_not_sequences
from augjax.errors import InputError
from augjax.kernels.embedded import owned
from augjax.kernels.portable import portable_jit

__all__ = ["ragged_read", "ragged_reads"]


@once_cache(maxsize=256)
def on_cpu(program: Any, name: str) -> Any:
    """``program`` of the images' shapes (its first argument, a row per sample) run on the CPU
    device: on a machine with a GPU, DALI's CPU ``jax_function`` may hand JAX some inputs on
    the default (GPU) device, and a CPU operator must return CPU arrays. It runs under
    ``jax.default_device(cpu)`` too: a program whose outputs depend on no input (``resize``'s
    fixed size) is placed on the default device, not by its inputs (the context costs ~20 us
    per call, putting four outputs back ~110 us). Samples of rank 4 (sequences called without
    ``layout="FHWC"``) are refused in the name of ``name``, the op they reach first: their
    ``(T, H)`` read as a height and width drew every window from the wrong axes."""

    cpu = jax.local_devices(backend="cpu")[0]  # this process's (under jax.distributed too)

    def run(*arrays):
        shapes = arrays[0]
        if shapes.ndim == 2 and shapes.shape[1] != 3 and shapes.shape[0]:
            check_not_sequences(tuple(int(v) for v in np.asarray(shapes)[0]), name, HWC)
        with jax.default_device(cpu):
            return program(*(jax.device_put(a, cpu) for a in arrays))

    return run


def plan_function(steps: tuple[Any, ...], start: int, with_seeds: bool):
    """The ``jax_function`` (CPU) ``(shapes[, seeds]) -> (box start, box shape, size,
    anchor)``, the parts the window has, as int32 / float32 per-sample vectors."""
    _, _, jax_fn = _dali()
    plan = plan_program(steps, start)
    struct = window_structure(steps)

    def program(shapes, seeds=None):
        keys = keys_from_seeds(seeds) if seeds is not None else None
        _, window = plan(shapes, keys)
        return _window_outputs(struct, shapes, window)

    program = build_program("sample", program, "ragged_plan", steps, kept=False)
    return jax_fn.jax_function(owned(on_cpu(program, steps[0].name)),
                               num_outputs=_output_count(struct), device="cpu")


def _window_outputs(struct: Any, shapes: Any, window: Any) -> tuple[Any, ...]:
    """The plan's window as the per-sample vectors :func:`_read` takes, in its order."""
    box, size, anchor = window
    outs = []
    if struct.box is not None:
        outs += [box[:, :2], box[:, 2:]]
    if struct.size is not None and struct.anchor is not None:
        length = box[:, 2:] if struct.box is not None else shapes[:, :2]
        outs += list(visible_roi(length, size, anchor, struct.out))
    elif struct.size is not None:
        outs.append(size.astype(jnp.float32))
    if struct.anchor is not None and struct.size is None:
        outs.append(anchor)
    return tuple(outs)


def _output_count(struct: Any) -> int:
    """How many vectors :func:`_window_outputs` gives for a window of ``struct``."""
    return (2 * (struct.box is not None) + (struct.size is not None)
            + (struct.anchor is not None) + 2 * (struct.size is not None
                                                 and struct.anchor is not None))


@once_cache(maxsize=64)
def _reads_function(reads: tuple[tuple[tuple[Any, ...], int, tuple[int, ...]], ...]):
    """The ``jax_function`` (CPU) ``(shapes, seeds) -> windows`` of :func:`ragged_reads`: every
    read's :func:`_window_outputs`, one after the other."""
    _, _, jax_fn = _dali()
    plans = tuple((plan_program(steps, start), window_structure(steps))
                  for steps, start, _ in reads)

    def program(shapes, seeds):
        base = keys_from_seeds(seeds)
        outs: list[Any] = []
        for (_, _, folds), (plan, struct) in zip(reads, plans):
            keys = base
            for data in folds:
                keys = jax.vmap(lambda k, d=data: jax.random.fold_in(k, d))(keys)
            _, window = plan(shapes, keys)
            outs += _window_outputs(struct, shapes, window)
        return tuple(outs)

    count = sum(_output_count(struct) for _, struct in plans)
    program = build_program("sample", program, "ragged_plan",
                            [step for steps, _, _ in reads for step in steps], kept=False)
    return jax_fn.jax_function(owned(on_cpu(program, reads[0][0][0].name)), num_outputs=count,
                               device="cpu")


def ragged_reads(reads: tuple[tuple[tuple[Any, ...], int, tuple[int, ...]], ...], images: Any,
                 seeds: Any) -> list[Any]:
    """Several reads of one batch of ``images`` (any sizes), each through its own window:
    ``reads`` holds ``(prefix, start, folds)``, a chain's ragged prefix (its first step at
    chain position ``start``) drawn with the keys ``keys_from_seeds(seeds)`` with each of
    ``folds`` folded in, in order (a view's key: ``fold_in(fold_in(k, g), v)``). One CPU
    ``jax_function`` draws every window; DALI's operators read each (as :func:`ragged_read`).
    Returns one uniform batch per read. ``seeds``: a CPU DataNode of per-sample seeds."""
    _, types, _ = _dali()
    if getattr(seeds, "device", "cpu") != "cpu":
        first = reads[0][0][0].name
        raise InputError(
            f"{first}: images of different sizes need the per-sample seeds on the CPU "
            f"(their windows are drawn there); pass seeds= from a CPU operator", op=first,
            argument="seeds")
    shapes = images.shape(dtype=types.INT32, device="cpu")
    outs = _reads_function(tuple(reads))(shapes, seeds)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    batches = []
    for steps, _, _ in reads:
        struct = window_structure(steps)
        count = _output_count(struct)
        batches.append(_read(images, outs[:count], struct, steps[0].kwargs))
        outs = outs[count:]
    return batches


@once_cache(maxsize=256)
def target_function(steps: tuple[Any, ...], start: int, with_seeds: bool, names: tuple[str, ...]):
    """The ``jax_function`` (CPU) ``(shapes[, seeds], *points) -> moved points`` for the boxes
    and keypoints among ``names`` (each followed by its validity, given or not)."""
    _, _, jax_fn = _dali()
    plan = plan_program(steps, start)
    struct = window_structure(steps)

    @portable_jit
    def program(shapes, *arrays):
        if with_seeds:
            keys, arrays = keys_from_seeds(arrays[0]), arrays[1:]
        else:
            keys = None
        _, window = plan(shapes, keys)
        outs = move_window_points(struct, shapes, window, dict(zip(names, arrays)))
        return tuple(outs)

    outputs = 2 * sum(k in names for k in ("boxes", "keypoints"))
    return jax_fn.jax_function(owned(on_cpu(program, steps[0].name)), num_outputs=outputs,
                               device="cpu")


def visible_roi(length, size, anchor, out: tuple[int, int]):
    """Per sample, the part of a box of ``length`` (int32 ``(N, 2)``) resized to ``size`` that
    the output window of ``out`` at ``anchor`` sees: ``(roi_start, roi_end, visible size,
    slice start)``, float32 ROI in the box's pixels, int32 / float32 sizes. ``fn.resize``
    with that ROI resamples only the visible part (the same source positions: row ``i`` of it
    is row ``lo + i`` of the whole resize), and ``fn.slice`` from the start pads it to ``out``.
    A window that sees nothing keeps one row, sliced away."""
    size = size.astype(jnp.int32)
    anchor = anchor.astype(jnp.int32)
    out = jnp.asarray(out, jnp.int32)
    lo = jnp.clip(anchor, 0, jnp.maximum(size - 1, 0))
    hi = jnp.maximum(jnp.minimum(anchor + out, size), lo + 1)
    scale = length.astype(jnp.float32) / jnp.maximum(size, 1).astype(jnp.float32)
    start = jnp.where(anchor + out <= lo, out, anchor - lo)  # sees nothing: all padding
    return lo * scale, hi * scale, (hi - lo).astype(jnp.float32), start


def _fill_values(fill: tuple[float, ...]) -> list[float]:
    # DALI cannot tell the images' dtype while the pipeline is defined: decoders give uint8.
    return [float(round(f * 255.0)) for f in fill]


def _read_mask(m: Any, outs: list[Any], struct: Any, config: dict[str, Any], fill: int):
    """A mask ``(H, W)`` or ``(H, W, K)`` of any integer or bool dtype through the window's
    operators, losslessly: DALI's ``fn.slice`` takes no bool and ``fn.resize`` takes only
    ``HWC`` samples of a few types (uint8, int16, uint16, float), so the ids go through as
    int64 ``(H, W, K)`` (its bytes as uint8 channels for the nearest resize: every byte of an
    id is sampled at the same source pixel) and come back in the mask's own dtype and rank."""
    fn, types, _ = _dali()
    wide = fn.reinterpret(fn.cast(m, dtype=types.INT64), rel_shape=[1, 1, -1], layout="HWC")
    wide = _read(wide, outs, struct, config, mask_fill=fill)
    out = fn.cast_like(wide, m)
    shape = fn.cat(out.shape(dtype=types.INT64, device="cpu")[0:2],
                   m.shape(dtype=types.INT64, device="cpu")[2:])
    return fn.reshape(out, shape=shape)


def _read(x: Any, outs: list[Any], struct: Any, config: dict[str, Any], mask_fill: Any = None):
    """``x`` through the window's DALI operators; ``mask_fill``: read an int64 ``HWC`` mask
    (nearest, no antialiasing, padding with that id: :func:`_read_mask`)."""
    fn, types, _ = _dali()
    outs = list(outs)
    if struct.box is not None:
        box_start, box_shape = outs.pop(0), outs.pop(0)
        x = fn.slice(x, start=box_start, shape=box_shape, axis_names="HW")
    roi = {}
    if struct.size is not None and struct.anchor is not None:  # only the part the window sees
        roi = {"roi_start": outs.pop(0), "roi_end": outs.pop(0)}
    if struct.size is not None:
        nearest = mask_fill is not None or config.get("interpolation") == "nearest"
        if mask_fill is not None:  # the ids' bytes: 8 uint8 channels per int64 channel
            x = fn.reinterpret(x, dtype=types.UINT8)
        # DALI's own filters (the ragged path's documented pixels): bicubic is its cubic
        interp = (types.INTERP_NN if nearest else types.INTERP_CUBIC
                  if config.get("interpolation") == "bicubic" else types.INTERP_LINEAR)
        x = fn.resize(x, size=outs.pop(0), interp_type=interp,
                      antialias=mask_fill is None and bool(config.get("antialias", True)),
                      **roi)
        if mask_fill is not None:
            x = fn.reinterpret(x, dtype=types.INT64)
    if struct.anchor is not None:
        fill = [float(mask_fill)] if mask_fill is not None else _fill_values(struct.fill)
        x = fn.slice(x, start=outs.pop(0), shape=list(struct.out), axis_names="HW",
                     out_of_bounds_policy="pad", fill_values=fill)
    return x


def ragged_read(steps: tuple[Any, ...], images: Any, seeds: Any, start: int,
                targets: tuple[Any, tuple[Any, ...]] = (None, ())) -> Any:
    """Adds the DALI operators that read ``images`` (any sizes) through ``steps`` (the chain's
    ragged prefix) and returns the uniform batch, on the images' device. ``seeds`` is a CPU
    DataNode of per-sample seeds (or None when no step is random and none were given).

    With ``targets`` (a :class:`TargetSpec` and its DataNodes, in its order) returns
    ``(images, spec, nodes)``: the masks read through the same windows, boxes and keypoints
    moved by them, each with its validity (so ``spec`` names them all)."""
    _, types, _ = _dali()
    struct = window_structure(steps)
    config = steps[0].kwargs
    if seeds is not None and getattr(seeds, "device", "cpu") != "cpu":
        raise InputError(
            f"{steps[0].name}: images of different sizes need the per-sample seeds on the CPU "
            f"(their windows are drawn there); pass seeds= from a CPU operator",
            op=steps[0].name, argument="seeds")
    shapes = images.shape(dtype=types.INT32, device="cpu")
    plan = plan_function(steps, start, seeds is not None)
    outs = plan(shapes, seeds) if seeds is not None else plan(shapes)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    x = _read(images, outs, struct, config)
    tspec, nodes = targets
    if tspec is None:
        return x
    if not tspec.plain:
        arg = "sanitize" if tspec.sanitize is not None else "boxes_format"
        raise InputError(
            f"{steps[0].name}: argument '{arg}' (boxes other than pixel XYXY under the default "
            f"rule) is not taken yet with images of different sizes in DALI; convert the boxes "
            f"with augjax.convert_boxes, or resize the images to one size first", op=steps[0].name,
            argument=arg)
    given = dict(zip(tspec.names, nodes))
    moved: dict[str, Any] = {}
    if "masks" in given:
        moved["masks"] = _read_mask(given["masks"], outs, struct, config, tspec.mask_fill)
    points = tuple(k for k in tspec.names if k != "masks")
    if points:
        for k in points:
            if getattr(given[k], "device", "cpu") != "cpu":
                raise InputError(
                    f"{steps[0].name}: on images of different sizes argument '{k}' is moved on "
                    f"the CPU (with the windows); pass it from a CPU operator",
                    op=steps[0].name, argument=k)
        move = target_function(steps, start, seeds is not None, points)
        args = [shapes] + ([seeds] if seeds is not None else []) + [given[k] for k in points]
        res = move(*args)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        for name in ("boxes", "keypoints"):
            if name in points:
                moved[name], moved[f"{name}_valid"] = res.pop(0), res.pop(0)
    spec = TargetSpec(tuple(k for k in ("masks", "boxes", "boxes_valid", "keypoints",
                                        "keypoints_valid") if k in moved), tspec.mask_fill)
    return x, spec, tuple(moved[k] for k in spec.names)
