"""Undo the geometric part of a recorded augmentation (kornia's ``inverse``): from a step's
params, each sample's forward 3x3 matrix, and a warp of the output back by its inverse."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax._runtime.execution.inputs import LAYOUT_AXES, as_array
from augjax._core.meta import Meta
from augjax._core.spec import OpSpec
from augjax._core.step import Structure
from augjax.errors import InputError
from augjax.kernels.matrix import warp_by
from augjax.kernels.products import HIGHEST
from augjax.kernels.warp import INTERPOLATIONS, check_fill

__all__ = ["invert", "matrices"]


def _steps_and_params(step: Any, params: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    if isinstance(step, OpSpec):
        step = step.bind()
    if step.chained:
        steps, _ = step.program()
        if not isinstance(params, (tuple, list)) or len(params) != len(steps):
            raise InputError(f"invert: params must be what the chain's sample returned (one "
                             f"entry per step, {len(steps)}), got {type(params).__name__}",
                             argument="params")
        return tuple(steps), tuple(params)
    return (step,), (params,)


def matrices(step: Any, params: Any, size: tuple[int, int], channels: int = 3,
             dtype: str = "uint8", batch: int | None = None) -> jax.Array:
    """Each sample's forward matrix ``(N, 3, 3)`` of ``step`` (an op, a chain or a composite)
    under ``params`` (what its ``sample`` returned) for inputs of ``size`` (height, width):
    input pixel ``(x, y, 1)`` to its place in the output. Batch-level ops (mixing) and ops that
    do not move pixels contribute the identity. ``batch`` is needed only when no step holds
    a per-sample array (a fixed ``rot90``).

    Raises:
        InputError: an op moves pixels without a matrix, or a step mixes several chains.
    """
    steps, all_params = _steps_and_params(step, params)
    leaves = jax.tree_util.tree_leaves(all_params)
    n = batch if batch is not None else (leaves[0].shape[0] if leaves else None)
    if n is None:
        raise InputError("matrices: the params hold no per-sample array; pass batch=",
                         argument="batch")
    h, w = size
    meta = Meta(int(h), int(w), int(channels), jnp.dtype(dtype).name)
    ms = None
    for el, p in zip(steps, all_params):
        if el.level == "sample":
            m = jax.vmap(lambda q, el=el, meta=meta: el.matrix(q, meta), axis_size=n)(p)
            ms = m if ms is None else jnp.einsum("nij,njk->nik", m, ms, precision=HIGHEST)
        out = el.after(Structure(meta.height, meta.width, meta.channels, meta.dtype))
        meta = Meta(out.height, out.width, out.channels, jnp.dtype(out.dtype).name)
    if ms is None:
        raise InputError("invert: the steps hold no per-sample op", argument="step")
    return ms


def invert(step: Any, images: Any, params: Any, *, size: tuple[int, int] | None = None,
           layout: str = "HWC", interpolation: str = "bilinear", fill: Any = None) -> jax.Array:
    """Undoes the geometric part of ``step`` on its output ``images`` (kornia ``inverse``).

    Args:
        step: the op, chain or composite that made ``images``.
        images: its output batch.
        params: what ``step.sample`` returned for that batch.
        size: the input's (height, width); default: the output's (for steps that keep the size).
        layout: ``"HWC"`` or ``"CHW"``.
        interpolation: ``"bilinear"`` or ``"nearest"``.
        fill: value of pixels that come from outside (a fraction of the range in [0, 1], one or
            one per channel), or None for zeros.

    Returns:
        The batch warped back to the input's frame: pixels that survived the geometry return to
        where they were; colour changes are not undone.
    """
    x = as_array(images, "invert", "images")
    if x.ndim != 4 or layout not in LAYOUT_AXES:
        raise InputError(f"invert: expects a batch (N, H, W, C) or (N, C, H, W) and layout 'HWC' "
                         f"or 'CHW', got shape {tuple(x.shape)}, layout {layout!r}",
                         argument="images")
    if interpolation not in INTERPOLATIONS:
        raise InputError(f"invert: argument 'interpolation' expects one of {INTERPOLATIONS}, got "
                         f"{interpolation!r}", argument="interpolation")
    hwc = jnp.moveaxis(x, 1, -1) if layout == "CHW" else x
    n, ho, wo, c = hwc.shape
    size = (ho, wo) if size is None else tuple(int(v) for v in size)
    steps, _ = _steps_and_params(step, params)
    out_size = (size[0], size[1])
    for el in steps:
        out = el.after(Structure(out_size[0], out_size[1], c, hwc.dtype.name))
        out_size = (out.height, out.width)
    if tuple(out_size) != (ho, wo):
        raise InputError(f"invert: the steps map a {size} input to {tuple(out_size)}, but the "
                         f"images are {(ho, wo)}; pass size= (the input's height, width)",
                         argument="size")
    forward = matrices(step, params, size, c, hwc.dtype.name, n)
    inverse = jnp.linalg.inv(forward)
    fill_vec = check_fill(None if fill is None else fill, hwc[0], "invert")
    back = jax.vmap(lambda img, m: warp_by(img, m, size, interpolation, fill_vec))(hwc, inverse)
    return jnp.moveaxis(back, -1, 1) if layout == "CHW" else back
