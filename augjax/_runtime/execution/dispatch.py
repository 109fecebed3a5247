"""A call on arrays: ``jax.Array`` / NumPy batches (or lists of images of different sizes) run
the jitted program. What the public calls check first (:func:`check_call`, :func:`data_nodes`)
is here too; a call on DALI ``DataNode`` values goes from :mod:`augjax.calls` to
:mod:`augjax.dali` instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

import augjax._runtime.execution.padding as _padding
from augjax._runtime.execution.checking import check_batch, checking_enabled
from augjax._runtime.store.compile_cache import enable as enable_compile_cache
from augjax._runtime.execution.given_params import check_given_params, explain_missing_key
from augjax._core.declaration import CHW, HWC
from augjax._core.kinds import Images, check_rank
from augjax._runtime.execution.inputs import (
    as_array,
    check_arguments,
    check_label_range,
    check_layout,
)
from augjax._runtime.execution.keys import sample_keys
from augjax.kernels.partition import array_spans_devices
from augjax._runtime.execution.program import apply_program, array_program, sample_program
from augjax._runtime.targets.samplers import sees_targets
from augjax._runtime.ragged.prefix import (
    as_arrays,
    check_list,
    plan_program,
    ragged_count,
    window_structure,
)
from augjax._runtime.ragged.read import read_list
from augjax._runtime.targets.inputs import check_hooks, prepare_targets
from augjax._runtime.execution.values import as_arguments, giving, lift
from augjax.errors import InputError

__all__ = ["apply_steps", "apply_with_params", "check_call", "data_nodes", "is_data_node",
           "sample_steps_on"]



def _keyed(name: str, steps: Any, key: Any) -> str:
    """The call's name in a key error: with no key, it names the step that draws (a chain's
    ``compose`` said nothing of which of its ops is random)."""
    if key is not None or not steps or len(steps) == 1 and steps[0].name == name:
        return name
    first = next((s for s in steps if s.random), None)
    return name if first is None else f"{name} (its {first.name} is random)"

def _lift(steps: Sequence[Any], images: Any, allowed: bool) -> tuple[tuple[Any, ...], Any]:
    """The steps' skeleton and numeric values (values.py), or the steps as they are where values
    stay static: with targets, and inside a caller's trace (there a value is a constant of the
    caller's program anyway; passed as a device array it would be captured as one, which JAX
    hoists into an argument its compiled call then misses: "supplied 24 arguments but compiled
    program expected 25", seen with views inside their jit)."""
    if allowed and not isinstance(images, jax.core.Tracer):
        return lift(steps)
    return tuple(steps), ()


def is_data_node(x: Any) -> bool:
    """Whether ``x`` is a DALI DataNode, decided without importing DALI."""
    return type(x).__module__.startswith("nvidia.dali") and type(x).__name__ == "DataNode"


def _first_name(steps: Sequence[Any], name: str) -> str:
    """The name of the op that first sees the images (a chain's first op)."""
    return getattr(steps[0], "name", name) if steps else name


def check_call(inputs: Sequence[Any], *, name: str, inputs_decl: tuple[str, ...],
               layout: str, steps: Sequence[Any] = ()) -> None:
    """A call's positional inputs (as many as the step takes) and its ``layout``; ``steps``:
    the chain's steps (a missing ``labels`` names the op that takes them).

    Raises:
        InputError: too many or too few inputs; a layout other than ``"HWC"`` / ``"CHW"``.
    """
    if len(inputs) != len(inputs_decl):
        takers = [getattr(s, "name", "?") for s in steps
                  if "labels" in getattr(s, "inputs", ())]
        hint = (f" ({', '.join(takers)} mixes the samples and takes their labels: call it as "
                f"{name}(images, labels, key=...))"
                if takers and "labels" in inputs_decl and len(inputs) < len(inputs_decl) else "")
        raise InputError(
            f"{name}: expects {len(inputs_decl)} positional input(s) ({', '.join(inputs_decl)}), "
            f"got {len(inputs)}{hint}",
            op=name,
            argument=inputs_decl[min(len(inputs), len(inputs_decl) - 1)],
        )
    check_layout(layout, name)


def data_nodes(inputs: Sequence[Any], *, name: str) -> bool:
    """Whether a call's inputs are DALI ``DataNode`` values (a pipeline being defined).

    Raises:
        InputError: DataNodes mixed with arrays.
    """
    nodes = [is_data_node(x) for x in inputs]
    if not any(nodes):
        return False
    if not all(nodes):
        raise InputError(
            f"{name}: inputs mix DALI DataNodes and arrays; inside a pipeline every input "
            f"must be a DataNode",
            op=name,
        )
    return True


def apply_steps(
    steps: Sequence[Any],
    inputs: Sequence[Any],
    *,
    name: str,
    inputs_decl: tuple[str, ...],
    outputs_decl: tuple[str, ...],
    key: Any,
    seeds: Any,
    seed: int | None,
    device: str | None,
    layout: str,
    start: int = 0,
    targets: Any = None,
) -> Any:
    """Applies configured ops to array ``inputs`` (checked by :func:`check_call`, and no
    DataNodes: :func:`data_nodes`); ``start`` is the chain position of the first op (its keys
    are ``fold_in(key, start)``); ``targets`` the call's target keywords (see
    :mod:`augjax._runtime.targets.follow`); ``seeds``, ``seed`` and ``device`` are refused
    (DALI's)."""
    targets = dict(targets or {})
    check_arguments(name, nodes=False, key=key, seeds=seeds, seed=seed, device=device)
    if isinstance(inputs[0], (list, tuple)):  # images of different sizes
        # (A list runs at its own length, never padded to a longer one run before: the read's
        # program for another length may round a weight differently, 1 level at 224^2.)
        steps, start, images, moved = _ragged_prefix(steps, inputs[0], key, layout, start, name,
                                                     targets=targets)
        if not steps:
            if not moved:
                return images
            return {"images": images, **{k: v for k, v in moved.items() if k != "mask_fill"}}
        inputs = (images, *inputs[1:])
        targets = moved or targets
    enable_compile_cache()  # before the first compile here (the input transfer, the keys)
    images = as_array(inputs[0], name, "images")
    # Float values outside [0, 1]: NumPy batches are read for free (a warning); jax.Arrays
    # only in checking mode (an error; reading them is a device sync).
    on_host = isinstance(inputs[0], np.ndarray)
    check_batch(inputs[0] if on_host else images, _first_name(steps, name), on_host=on_host,
                strict=checking_enabled())
    labels = as_array(inputs[1], name, "labels") if len(inputs) > 1 else None
    if len(inputs) > 1 and isinstance(inputs[1], np.ndarray):
        # Host labels are checked here for free; device labels are not read back (that would
        # sync every call): out-of-range ids there poison the batch's soft labels with NaN.
        check_label_range(inputs[1], steps)
    if images.ndim < 1:
        raise InputError(f"{name}: argument 'images' must be a batch, got a scalar", op=name)
    tspec, arrays = _targets(name, targets, images, layout)
    check_hooks(steps, tspec)
    random = any(step.random for step in steps)
    # one key stays one: the sampler's program splits it
    keys = sample_keys(key, images.shape[0], _keyed(name, steps, key), split=False) \
        if random else None
    # Numeric values are the program's arguments (values.py); with targets they stay static.
    skeletons, values = _lift(steps, images, tspec is None)
    program = array_program(skeletons, layout, start, array_spans_devices(images), tspec)
    # A batch smaller than one this program ran with runs padded to it: no new compile.
    with giving(as_arguments(values)):
        out, labels, *moved = _padding.call(program, steps, (images, labels, keys, *arrays))
    return _result(out, labels, outputs_decl, tspec, moved)


def _targets(name: str, targets: dict[str, Any], images: Any, layout: str) -> tuple[Any, tuple]:
    """``(TargetSpec or None, target arrays)`` of a call on arrays, checked."""
    if not targets:
        return None, ()
    if images.ndim != 4:
        return None, ()  # the images' own check names the problem
    n, h, w, _ = (images.shape[0], *_hw(images.shape, layout), 0)
    tspec, arrays = prepare_targets(name, targets, n, h, w, concrete=True)
    return tspec, tuple(as_array(a, name, k) for a, k in zip(arrays, tspec.names)) \
        if tspec is not None else ()


def _hw(shape: tuple[int, ...], layout: str) -> tuple[int, int]:
    return (shape[2], shape[3]) if layout == CHW else (shape[1], shape[2])


def _result(out: Any, labels: Any, outputs_decl: tuple[str, ...], tspec: Any,
            moved: list[Any]) -> Any:
    """What a call returns: images (and labels), or with targets the dict."""
    if tspec is None:
        return (out, labels) if "labels" in outputs_decl else out
    result = {"images": out}
    if "labels" in outputs_decl:
        result["labels"] = labels
    result.update(zip(tspec.outputs, moved[0]))
    return result


def _ragged_prefix(steps: Sequence[Any], images: Sequence[Any], key: Any, layout: str,
                   start: int, name: str, sample: bool = False,
                   targets: Any = None) -> tuple[Any, ...]:
    """Runs (or, with ``sample``, draws) the chain's leading steps that take a list of images of
    different sizes; returns ``(remaining steps, their start, uniform batch, moved targets)``
    (with ``sample``: ``(..., output size, params)``). The moved targets are the target
    keywords for the remaining steps (:func:`augjax._runtime.ragged.read.read_list`)."""
    if layout != HWC:
        raise InputError(f"{name}: a list of images of different sizes is taken in layout "
                         f"'HWC', got layout={layout!r}: transpose each image to (H, W, C) "
                         f"(np.moveaxis(image, 0, -1)) and drop layout=", op=name,
                         argument="layout")
    arrays = as_arrays(images, name)
    steps = tuple(steps)
    n = ragged_count(steps, _first_name(steps, name), listed=len(arrays),
                     shapes=[a.shape for a in arrays])
    random = any(step.random for step in steps)
    if sample:  # the windows need the sizes only
        check_list(arrays, name, steps[0])
        shapes = np.array([a.shape for a in arrays], np.int32)
        keys = sample_keys(key, len(shapes), _keyed(name, steps, key)) if random else None
        params, _ = plan_program(steps[:n], start, arrays[0].dtype.name)(shapes, keys)
        return steps[n:], start + n, window_structure(steps[:n]).out, params
    check_list(arrays, name, steps[0])
    keys = sample_keys(key, len(arrays), _keyed(name, steps, key)) if random else None
    out, _, n, moved = read_list(steps, arrays, keys, start, name, targets)
    return steps[n:], start + n, out, moved


def _array_inputs(inputs: Sequence[Any], name: str, inputs_decl: tuple[str, ...],
                  layout: str, what: str) -> tuple[Any, Any]:
    n_images = 1 if what == "sample" else len(inputs_decl)
    if not 1 <= len(inputs) <= len(inputs_decl) or (what == "apply" and len(inputs) != n_images):
        raise InputError(
            f"{name}.{what}: expects {n_images} positional input(s) "
            f"({', '.join(inputs_decl[:n_images])}), got {len(inputs)}",
            op=name, argument="images")
    check_layout(layout, name)
    if any(is_data_node(x) for x in inputs):
        raise InputError(
            f"{name}.{what}: works on arrays; inside a DALI pipeline call the op itself (its "
            f"draws come from the per-sample seeds; replay them on arrays with "
            f"key=augjax.keys_from_seeds(seeds))", op=name, argument="images")
    images = inputs[0]
    if isinstance(images, jax.ShapeDtypeStruct):
        pass
    elif isinstance(images, tuple) and images and all(isinstance(d, int) for d in images):
        if what != "sample":
            raise InputError(f"{name}.apply: argument 'images' expects an array, got the shape "
                             f"{images}", op=name, argument="images")
        images = jax.ShapeDtypeStruct(images, np.uint8)
    else:
        images = as_array(images, name, "images")
    check_rank(images.ndim, Images.rank(layout), f"{name}.{what}", "images",
               Images.describe(layout), images.shape)
    labels = as_array(inputs[1], name, "labels") if len(inputs) > 1 else None
    return images, labels


def sample_steps_on(steps: Sequence[Any], inputs: Sequence[Any], *, name: str,
                    inputs_decl: tuple[str, ...], key: Any, layout: str,
                    start: int = 0, targets: Any = None) -> tuple[Any, ...]:
    """Every step's params for ``inputs`` with ``key`` (arrays only): a tuple, one pytree per
    step, exactly the values a call with the same key (and the same ``targets``, which the
    samplers that declare ``sample_targets`` read) uses."""
    if inputs and isinstance(inputs[0], (list, tuple)) and not (
            inputs[0] and all(isinstance(d, int) for d in inputs[0])):
        rest, rest_start, out, params = _ragged_prefix(steps, inputs[0], key, layout, start,
                                                       name, sample=True)
        if not rest:
            return tuple(params)
        first = np.asarray(inputs[0][0])
        shape = jax.ShapeDtypeStruct((len(inputs[0]), *out, first.shape[-1]), first.dtype)
        more = sample_steps_on(rest, (shape,), name=name, inputs_decl=inputs_decl, key=key,
                               layout=layout, start=rest_start)
        return tuple(params) + tuple(more)
    images, _ = _array_inputs(inputs, name, inputs_decl, layout, "sample")
    random = any(step.random for step in steps)
    # One key stays one, split by the sampler's program: the program a call runs (the same
    # keys; sample and the call share one compiled sampler).
    keys = sample_keys(key, images.shape[0], _keyed(name, steps, key), split=False) \
        if random else None
    tspec, arrays = _targets(name, dict(targets or {}), images, layout)
    seen = sees_targets(steps, tspec)
    traced = isinstance(keys, jax.core.Tracer) or isinstance(key, jax.core.Tracer)
    skeletons, values = _lift(steps, images, seen is None and not traced)
    program = sample_program(skeletons, layout, start, tuple(images.shape),
                             np.dtype(images.dtype).name, keys is not None and keys.ndim == 0,
                             seen)
    if seen is None:
        return program(keys, as_arguments(values))
    return program(keys, as_arguments(values), *arrays)


def apply_with_params(steps: Sequence[Any], inputs: Sequence[Any], params: Sequence[Any], *,
                      name: str, inputs_decl: tuple[str, ...], outputs_decl: tuple[str, ...],
                      layout: str, targets: Any = None, chained: bool = True) -> Any:
    """Applies ``steps`` to ``inputs`` with given params (one pytree per step); deterministic.
    Float host images outside [0, 1] warn (as a call does); params that lack a key the steps
    read, or switch on what the configuration turns off, raise ``InputError``
    (``chained``: the params came as one pytree per step, and messages index them)."""
    images, labels = _array_inputs(inputs, name, inputs_decl, layout, "apply")
    tspec, arrays = _targets(name, dict(targets or {}), images, layout)
    if not isinstance(params, (tuple, list)) or len(params) != len(steps):
        raise InputError(
            f"{name}.apply: argument 'params' expects {len(steps)} step params (what "
            f"{name}.sample returns), got {type(params).__name__}"
            f"{f' of length {len(params)}' if isinstance(params, (tuple, list)) else ''}",
            op=name, argument="params")
    on_host = isinstance(inputs[0], np.ndarray)
    check_batch(inputs[0] if on_host else images, _first_name(steps, name), on_host=on_host,
                strict=checking_enabled())
    check_given_params(steps, params, name=name, chained=chained)
    if len(inputs) > 1 and isinstance(inputs[1], np.ndarray):
        check_label_range(inputs[1], steps)
    skeletons, values = _lift(steps, images, tspec is None)
    program = apply_program(skeletons, layout, array_spans_devices(images), tspec)
    try:
        out, labels, *moved = program(images, labels, tuple(params), as_arguments(values),
                                      *arrays)
    except InputError:
        raise
    except KeyError as err:  # the params lack a key a kernel (or a policy) reads
        raise explain_missing_key(steps, params, err, name=name, layout=layout,
                                  shape=tuple(images.shape), dtype=np.dtype(images.dtype).name,
                                  chained=chained) from None
    except (TypeError, ValueError) as err:
        raise InputError(f"{name}.apply: the params do not fit the op(s) and the batch "
                         f"{tuple(images.shape)}: {err}", op=name, argument="params") from None
    return _result(out, labels, outputs_decl, tspec, moved)
