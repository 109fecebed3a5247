"""Masks through a policy's layers: the same per-sample choices as the image, with each chosen
op's mask rule (geometric ops: their kernel, nearest; colour ops: unchanged). Boxes and
keypoints follow each layer's matrix (:func:`layer_stages`; their product is the policy's)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["geometric_space", "layer_matrix", "layer_stages", "run_mask_layer", "run_mask_layers"]


def geometric_space(bound: tuple[Any, ...]) -> bool:
    """Whether any op of the space moves pixels."""
    return any(op is not None and op.geometric for op in bound)


def run_mask_layer(bound, op_index: jax.Array, applied: jax.Array, branches: tuple[Any, ...],
                   mask: jax.Array) -> jax.Array:
    """One layer on one encoded mask: the chosen op's mask rule, where ``applied``."""
    if not geometric_space(bound):
        return mask

    def branch(j: int):
        op = bound[j]
        if op is None or not op.geometric:
            return lambda x: x
        return lambda x: op.run_masks(x, branches[j])

    fns = [branch(j) for j in range(len(bound))]
    out = fns[0](mask) if len(fns) == 1 else jax.lax.switch(op_index, fns, mask)
    return jnp.where(applied, out, mask)


def run_mask_layers(bound, op_index: jax.Array, applied: jax.Array, branches: tuple[Any, ...],
                    mask: jax.Array) -> jax.Array:
    """Layers in sequence (leading layer axis on every argument), as one ``lax.scan``."""
    if op_index.shape[0] == 0 or not geometric_space(bound):
        return mask

    def body(x, xs):
        o, a, b = xs
        return run_mask_layer(bound, o, a, b, x), None

    out, _ = jax.lax.scan(body, mask, (op_index, applied, branches))
    return out


def layer_matrix(bound, op_index: jax.Array, applied: jax.Array, branches: tuple[Any, ...],
                 meta: Any) -> jax.Array:
    """The forward matrix of one layer (identity where not applied or the op does not move
    pixels)."""
    eye = jnp.eye(3, dtype=jnp.float32)
    ms = jnp.stack([eye if op is None else op.matrix(branches[j], meta)
                    for j, op in enumerate(bound)])
    return jnp.where(applied, ms[op_index], eye)


def layer_stages(bound, op_index: jax.Array, applied: jax.Array, branches: tuple[Any, ...],
                 meta: Any) -> tuple[Any, ...]:
    """One stage per layer for boxes and keypoints (torchvision moves boxes op by op): each
    layer's matrix at the input's size (policy ops keep the size)."""
    if not geometric_space(bound):
        return ()
    out = []
    for i in range(op_index.shape[0]):
        b = jax.tree_util.tree_map(lambda v, i=i: v[i], branches)
        out.append((layer_matrix(bound, op_index[i], applied[i], b, meta),
                    (meta.height, meta.width)))
    return tuple(out)
