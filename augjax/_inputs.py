"""Checks of the data given to an op: type, rank, dtype, layout, channels, labels.

They run on static shapes, so they cost nothing per batch: on arrays before the jitted call, and
in DALI while the function is traced (the first batch of each shape).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax.errors import InputError, InputTypeError

__all__ = ["as_array", "check_images", "check_labels", "LAYOUT_AXES"]

#: Position of (height, width, channels) in a batch of each layout.
LAYOUT_AXES = {"HWC": (1, 2, 3), "CHW": (2, 3, 1)}


def as_array(x: Any, op: str, argument: str) -> jax.Array:
    """Returns ``x`` as a ``jax.Array`` (NumPy arrays are converted), or raises InputTypeError."""
    if isinstance(x, jax.Array):
        return x
    if isinstance(x, np.ndarray):
        return jnp.asarray(x)
    raise InputTypeError(
        f"{op}: argument '{argument}' expects a jax.Array, a NumPy array or a DALI DataNode, "
        f"got {type(x).__module__}.{type(x).__qualname__}",
        op=op,
        argument=argument,
    )


def check_images(x: Any, spec: Any, layout: str, op: str | None = None) -> None:
    """Checks a batch against an op's declared dtypes, layouts and channels."""
    name = op or spec.name
    shape = tuple(x.shape)
    if layout not in spec.layouts:
        raise InputError(
            f"{name}: argument 'layout' expects one of {spec.layouts}, got {layout!r}",
            op=name,
            argument="layout",
        )
    if len(shape) != 4:
        hint = " (a single image? add a batch axis: images[None])" if len(shape) == 3 else ""
        raise InputError(
            f"{name}: argument 'images' expects a batch of rank 4 (N, {', '.join(layout)}), "
            f"got rank {len(shape)} with shape {shape}{hint}",
            op=name,
            argument="images",
        )
    dtype = jnp.dtype(x.dtype).name
    if dtype not in spec.dtypes:
        raise InputError(
            f"{name}: argument 'images' expects dtype {' or '.join(spec.dtypes)}, got {dtype}",
            op=name,
            argument="images",
        )
    channels = shape[LAYOUT_AXES[layout][2]]
    if spec.channels is not None and channels not in spec.channels:
        raise InputError(
            f"{name}: argument 'images' expects {' or '.join(map(str, spec.channels))} channels "
            f"in layout {layout}, got shape {shape} with {channels} channels"
            + (" (is the layout right? pass layout='CHW' for channels-first data)"
               if layout == "HWC" and shape[1] in spec.channels else ""),
            op=name,
            argument="images",
        )


def check_labels(labels: Any, batch: int, op: str) -> jax.Array:
    """Checks labels: integer class ids ``(N,)`` or ``(N, 1)``, or soft labels ``(N, K)``.

    Returns integer labels flattened to ``(N,)`` and soft labels unchanged.
    """
    shape = tuple(labels.shape)
    if not shape or shape[0] != batch:
        raise InputError(
            f"{op}: argument 'labels' expects one label per image ({batch}), got shape {shape}",
            op=op,
            argument="labels",
        )
    if jnp.issubdtype(labels.dtype, jnp.integer):
        if len(shape) == 1 or (len(shape) == 2 and shape[1] == 1):
            return labels.reshape(batch)
    elif jnp.issubdtype(labels.dtype, jnp.floating) and len(shape) == 2:
        return labels
    raise InputError(
        f"{op}: argument 'labels' expects integer class ids of shape (N,) or (N, 1), or float "
        f"soft labels (N, num_classes); got {jnp.dtype(labels.dtype).name} {shape}",
        op=op,
        argument="labels",
    )
