"""The DALI side of images of different sizes (``fn.decoders.image`` output).

``jax_function`` takes only uniform batches, so a chain that starts with an op declaring
``ragged=`` (crops, resize) reads the ragged batch with DALI's own operators:

1. the images' shapes (``DataNode.shape``, CPU) and the per-sample seeds go into one small
   ``jax_function`` (:func:`plan_function`) that draws each sample's window with the same keys
   and code as the array path (:func:`augjax._runtime.ragged.plan_program`);
2. ``fn.slice`` cuts the box, ``fn.resize`` resamples it (antialiased triangle filter, as
   torchvision's ``antialias=True``), ``fn.slice`` with padding cuts the output window;
3. the uniform batch goes on to the chain's remaining ops: one ``jax_function``, as always.

Memory is bounded by each image and the output, never by the largest image of the batch.
Pixels differ from torchvision's (and the array path's) by DALI's resampling only: measured in
README "Different image sizes".
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax._runtime.keys import keys_from_seeds
from augjax._runtime.program import once_cache
from augjax._runtime.ragged import window_structure, plan_program
from augjax.dali._backend import _dali
from augjax.errors import InputError

__all__ = ["ragged_read"]


@once_cache(maxsize=256)
def plan_function(steps: tuple[Any, ...], start: int, with_seeds: bool):
    """The ``jax_function`` (CPU) ``(shapes[, seeds]) -> (box start, box shape, size,
    anchor)``, the parts the window has, as int32 / float32 per-sample vectors."""
    _, _, jax_fn = _dali()
    plan = plan_program(steps, start)
    struct = window_structure(steps)

    @jax.jit
    def program(shapes, seeds=None):
        keys = keys_from_seeds(seeds) if seeds is not None else None
        _, (box, size, anchor) = plan(shapes, keys)
        outs = []
        if struct.box is not None:
            outs += [box[:, :2], box[:, 2:]]
        if struct.size is not None:
            outs.append(size.astype(jnp.float32))
        if struct.anchor is not None:
            outs.append(anchor)
        return tuple(outs)

    count = 2 * (struct.box is not None) + (struct.size is not None) + (struct.anchor is not None)
    return jax_fn.jax_function(program, num_outputs=count, device="cpu")


def _fill_values(fill: tuple[float, ...]) -> list[float]:
    # DALI cannot tell the images' dtype while the pipeline is defined: decoders give uint8.
    return [float(round(f * 255.0)) for f in fill]


def ragged_read(steps: tuple[Any, ...], images: Any, seeds: Any, start: int) -> Any:
    """Adds the DALI operators that read ``images`` (any sizes) through ``steps`` (the chain's
    ragged prefix) and returns the uniform batch, on the images' device. ``seeds`` is a CPU
    DataNode of per-sample seeds (or None when no step is random and none were given)."""
    fn, types, _ = _dali()
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
    x = images
    if struct.box is not None:
        box_start, box_shape = outs.pop(0), outs.pop(0)
        x = fn.slice(x, start=box_start, shape=box_shape, axis_names="HW")
    if struct.size is not None:
        interp = (types.INTERP_NN if config.get("interpolation") == "nearest"
                  else types.INTERP_LINEAR)
        x = fn.resize(x, size=outs.pop(0), interp_type=interp,
                      antialias=bool(config.get("antialias", True)))
    if struct.anchor is not None:
        x = fn.slice(x, start=outs.pop(0), shape=list(struct.out), axis_names="HW",
                     out_of_bounds_policy="pad", fill_values=_fill_values(struct.fill))
    return x
