"""What every policy shares: binding its op space to augjax ops, drawing magnitude levels, and
applying one *layer* (one op chosen per sample among the space, with its magnitude) branch-free.

A layer's per-sample decisions are four scalars: ``op`` (index into the space), ``level``
(float32), ``negative`` (the sign of signed maps) and ``applied``. The layer runs
``lax.switch(op, branches, image)``; under ``vmap`` that is a select over every branch, so one
compiled program serves every sample's choice.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from augjax._bound import BoundOp
from augjax.chain._element import call_kernel
from augjax.errors import OpNotFoundError, ParamError, PluginLoadError
from augjax.policies._magnitude import MagnitudeMap, PolicyOp

__all__ = [
    "Levels",
    "apply_layer",
    "apply_layers",
    "bind_space",
    "draw_level",
    "layer_values",
]


class Levels:
    """How a policy turns levels into fractions: ``t = level / denominator``; levels are clipped
    to ``[0, limit]``; integer levels (``discrete``) use exact tables over ``0..floor(limit)``,
    others the float32 formula."""

    def __init__(self, denominator: float, limit: float, discrete: bool) -> None:
        self.denominator = float(denominator)
        self.limit = float(limit)
        self.top = math.floor(limit)
        self.discrete = discrete


def _bind(entry: PolicyOp, fill: Any, interpolation: str, owner: str) -> BoundOp | None:
    if entry.op is None:
        return None
    import augjax

    try:
        spec = augjax.get_op(entry.op)
    except (OpNotFoundError, PluginLoadError) as err:
        hint = " (pip install augjax-contrib)" if entry.op == "gaussian_blur" else ""
        raise ParamError(
            f"{owner}: the policy's op {entry.name!r} needs the augjax op {entry.op!r}, which is "
            f"not available{hint}: {err}",
            op=owner,
            param="ops",
        ) from err
    params = dict(entry.fixed)
    if entry.param is not None:
        params[entry.param] = entry.magnitude.value(1.0, 1.0, False, 224, 224)
    if entry.geometric:
        params["fill"] = fill
        params["interpolation"] = interpolation
    return BoundOp.create(spec, params)


def bind_space(entries: tuple[PolicyOp, ...], fill: Any, interpolation: str,
               owner: str) -> tuple[BoundOp | None, ...]:
    """The augjax op of each entry, bound with its fixed parameters (validated now)."""
    return tuple(_bind(e, fill, interpolation, owner) for e in entries)


@functools.lru_cache(maxsize=4096)
def _table(mag: MagnitudeMap, top: int, denominator: float, height: int, width: int):
    return mag.table(top, denominator, height, width)


def _value(entry: PolicyOp, levels: Levels, level: jax.Array, negative: jax.Array,
           height: int, width: int, key: jax.Array) -> jax.Array:
    mag = entry.magnitude
    if levels.discrete:
        table = jnp.asarray(_table(mag, levels.top, levels.denominator, height, width))
        index = jnp.clip(jnp.round(level).astype(jnp.int32), 0, levels.top)
        v = table[negative.astype(jnp.int32), index]
    else:
        v = mag.traced(level / levels.denominator, negative, height, width)
    return mag.finish(v, jax.random.fold_in(key, 0x0B1D))


def layer_values(entries, levels: Levels, plan: dict[str, jax.Array], height: int, width: int,
                 key: jax.Array) -> jax.Array:
    """The parameter value the chosen op gets (NaN for ops without a magnitude)."""
    values = [
        _value(e, levels, plan["level"], plan["negative"], height, width, key)
        if e.magnitude is not None else jnp.float32(jnp.nan)
        for e in entries
    ]
    return jnp.stack(values)[plan["op"]]


def apply_layer(entries, bound, levels: Levels, plan: dict[str, jax.Array], key: jax.Array,
                image: jax.Array, *, fill: Any, interpolation: str, owner: str) -> jax.Array:
    """One layer on one HWC image: the chosen op with its value, where ``applied``."""
    h, w = image.shape[:2]

    def branch(j: int):
        entry, op = entries[j], bound[j]

        def run(x):
            if op is None:
                return x
            over: dict[str, Any] = {}
            if entry.param is not None:
                over[entry.param] = _value(entry, levels, plan["level"], plan["negative"], h, w,
                                           key)
            if entry.geometric:
                over["fill"] = fill  # a fraction of the range: the ops scale it per dtype
                over["interpolation"] = interpolation
            return call_kernel(op, key, x, f"{owner}/{entry.name}", **over)

        return run

    branches = [branch(j) for j in range(len(entries))]
    out = branches[0](image) if len(branches) == 1 else jax.lax.switch(plan["op"], branches, image)
    return jnp.where(plan["applied"], out, image)


def apply_layers(entries, bound, levels: Levels, plan: dict[str, jax.Array], key: jax.Array,
                 image: jax.Array, *, fill: Any, interpolation: str, owner: str,
                 offset: Any = 0) -> jax.Array:
    """Layers in sequence (``plan`` fields with a leading layer axis), as one ``lax.scan`` so
    that the layer body compiles once. Layer ``i`` uses the key ``fold_in(key, offset + i)``."""
    fields = {k: plan[k] for k in ("op", "level", "negative", "applied")}
    count = fields["op"].shape[0]
    if count == 0:
        return image

    def body(x, xs):
        layer, i = xs
        out = apply_layer(entries, bound, levels, layer, jax.random.fold_in(key, offset + i), x,
                          fill=fill, interpolation=interpolation, owner=owner)
        return out, None

    out, _ = jax.lax.scan(body, image, (fields, jnp.arange(count, dtype=jnp.uint32)))
    return out


def draw_level(key: jax.Array, m: Any, std: float, limit: float) -> jax.Array:
    """timm's magnitude noise around the level ``m`` (a number or a traced scalar): ``m`` for
    ``std = 0``, ``N(m, std)``, or ``U(0, m)`` for ``std = inf``; clipped to ``[0, limit]``."""
    m = jnp.asarray(m, jnp.float32)
    if std == 0:
        level = m
    elif math.isinf(std):
        level = jax.random.uniform(key, (), jnp.float32) * m
    else:
        level = m + std * jax.random.normal(key, (), jnp.float32)
    return jnp.clip(level, 0.0, limit)
