"""What every policy shares: binding its op space to augjax ops, drawing magnitude levels, and
applying one *layer* (one op chosen per sample among the space, with its magnitude).

A layer's per-sample decisions are four scalars: ``op`` (index into the space), ``level``
(float32), ``negative`` (the sign of signed maps) and ``applied``, and ``branches``: every
entry's params at that layer (the entry's magnitude value already in its op's parameter, and
whatever else the op draws), so that a replay needs no key. Over a batch (a select would
compute every choice for every sample), a layer computes only each sample's chosen op: on
CUDA for uint8 images whose op space qualifies as two Pallas kernels that branch per image
(:mod:`augjax.policies._fused`), elsewhere off CPU each family of ops once on the compacted
sub-batch of the samples that chose it (one warp, one blend, one level map;
:mod:`augjax.policies._compact`), and on a CPU, where a loop costs little beside an op,
sample by sample through a real conditional; one compiled program serves every sample's
choice. :func:`run_layer_switch` is the per-op switch over the whole space (the reference).
"""

from __future__ import annotations

import contextvars
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from augjax._plugins.registry import REGISTRY
from augjax.calls import BoundOp  # the public one: a policy's ops can be called and applied
from augjax.kernels.partition import partitioned
from augjax.kernels.platform import live_platforms, platform_dependent
from augjax.errors import OpNotFoundError, ParamError, PluginLoadError
from augjax.kernels.batching import broadcast_unbatched
from augjax.policies._compact import run_compact
from augjax.policies._families import entry_fn, run_families, run_families_batch, switch
from augjax.policies._fused import run_fused, supported
from augjax.policies._magnitude import MagnitudeMap, PolicyOp, resolve

__all__ = [
    "Levels",
    "bind_space",
    "draw_branches",
    "draw_level",
    "run_layer",
    "run_layer_switch",
    "run_layers",
    "scan_layers",
]

#: How a layer runs over a batch (read when tracing): "auto" (one by one on a CPU, the Pallas
#: kernels of :mod:`augjax.policies._fused` on CUDA where the layer qualifies, compacted
#: families elsewhere), "fused" (the kernels where the layer qualifies, interpreted off CUDA;
#: compacted families otherwise), "compact" (compacted families everywhere), "families" (each
#: family for every sample, everywhere), "switch" (the per-op switch, the reference).
LAYER = "auto"

#: How the enclosing :func:`scan_layers` runs its layers while its body is traced: "scan" (the
#: CPU form) or "unroll" (the others'). A nested one (AugMix's layers inside its chains)
#: follows it, and a layer traces only its platform's branch, instead of every form and
#: branch again.
_LAYERS_FORM: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "augjax_layers_form", default=None)


class Levels:
    """How a policy turns levels into fractions: ``t = level / denominator``; levels are clipped
    to ``[0, limit]``; integer levels (``discrete``) use exact tables over ``0..floor(limit)``,
    others the float32 formula."""

    def __init__(self, denominator: float, limit: float, discrete: bool) -> None:
        self.denominator = float(denominator)
        self.limit = float(limit)
        self.top = math.floor(limit)
        self.discrete = discrete


def _bind(entry: PolicyOp, fill: Any, interpolation: str,
          owner: str) -> tuple[PolicyOp, BoundOp | None]:
    if entry.op is None:
        return entry, None
    try:
        spec = REGISTRY.get(entry.op)
    except (OpNotFoundError, PluginLoadError) as err:
        raise ParamError(
            f"{owner}: the policy's op {entry.name!r} needs the augjax op {entry.op!r}, which is "
            f"not available: {err}",
            op=owner,
            param="ops",
        ) from err
    try:
        entry = resolve(entry, spec)
    except ValueError as err:
        raise ParamError(f"{owner}: {err}", op=owner, param="ops") from None
    params = dict(entry.fixed)
    if entry.param is not None:
        params[entry.param] = entry.magnitude.value(1.0, 1.0, False, 224, 224)
    if entry.geometric:
        params["fill"] = fill
        params["interpolation"] = interpolation
    if entry.param is not None and entry.param not in spec.per_sample:
        raise ParamError(
            f"{owner}: the policy's op {entry.name!r} sets parameter {entry.param!r} of the augjax "
            f"op {spec.name!r} per sample, but that parameter is static (per-sample parameters: "
            f"{', '.join(spec.per_sample) or 'none'})", op=owner, param="ops")
    return entry, BoundOp.create(spec, params)


def bind_space(entries: tuple[PolicyOp, ...], fill: Any, interpolation: str,
               owner: str) -> tuple[tuple[PolicyOp, ...], tuple[BoundOp | None, ...]]:
    """Each entry with its magnitude map resolved against its op, and the op bound with the
    entry's fixed parameters (validated now)."""
    pairs = [_bind(e, fill, interpolation, owner) for e in entries]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


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


def draw_branches(entries, bound, levels: Levels, level: jax.Array, negative: jax.Array,
                  index: jax.Array, key: jax.Array, meta: Any) -> tuple[Any, ...]:
    """Every entry's params at every layer: ``level``, ``negative`` and ``index`` (the layer's
    key is ``fold_in(key, index)``) share one shape S; returns one pytree per entry of the space,
    each with leading axes S (``{}`` for the identity). An entry's magnitude value sets its
    op's per-sample parameter; the op draws the rest (its own ``sample`` hook)."""
    shape = tuple(level.shape)

    def one(lvl, neg, idx):
        k = jax.random.fold_in(key, idx)
        out = []
        for entry, op in zip(entries, bound):
            if op is None:
                out.append({})
                continue
            over = None
            if entry.param is not None:
                over = {entry.param: _value(entry, levels, lvl, neg, meta.height, meta.width, k)}
            out.append(op.draw(k, meta, over))
        return tuple(out)

    flat = jax.vmap(one)(level.reshape(-1), negative.reshape(-1),
                         index.reshape(-1).astype(jnp.uint32))
    return jax.tree_util.tree_map(lambda v: v.reshape(shape + v.shape[1:]), flat)


def run_layer(entries, bound, op_index: jax.Array, applied: jax.Array, branches: tuple[Any, ...],
              image: jax.Array, owner: str, shares: tuple[float, ...] | None = None
              ) -> jax.Array:
    """One layer on one HWC image: the chosen op with its params, where ``applied``. Over a
    batch (under ``vmap``) it runs in the form :data:`LAYER` selects (the module docstring);
    ``shares``, each entry's probability of being chosen and applied, sizes the compacted
    sub-batches. Every form gives the pixels of the chosen op applied alone."""
    mode = LAYER
    if mode == "switch":
        return run_layer_switch(entries, bound, op_index, applied, branches, image, owner)
    # read now: the batching rule below may run after scan_layers has returned (a vmap
    # around the scan batches its traced body later)
    form = _LAYERS_FORM.get()

    @jax.custom_batching.custom_vmap
    def layer(op_index, applied, branches, image):
        return run_families(entries, bound, op_index, applied, branches, image, owner)

    @layer.def_vmap
    def _batched(axis_size, in_batched, *args):
        args = broadcast_unbatched(axis_size, in_batched, args)

        def one_by_one(*args):
            return jax.lax.map(lambda a: _chosen_only(entries, bound, owner, *a), args)

        def families(*args):
            return run_families_batch(entries, bound, *args, owner)

        def compact(*args):
            return run_compact(entries, bound, *args, owner, shares)

        def qualifies():
            image = args[3]
            return supported(tuple(bound), image.shape[1:], image.dtype)

        def fused(*args):
            return run_fused(entries, bound, *args, owner) if qualifies() else compact(*args)

        # a sharded batch neither loops (serial) nor compacts (a gather across devices)
        if mode == "families" or partitioned():
            return families(*args), True
        if mode == "compact":
            return compact(*args), True
        if mode == "fused":  # the kernels, interpreted off CUDA (tests)
            if not qualifies():
                return compact(*args), True
            return platform_dependent(
                *args, cuda=fused,
                default=lambda *a: run_fused(entries, bound, *a, owner, interpret=True)), True
        # Inside scan_layers the platform is known: its scan is the CPU form, its unrolled
        # layers the others' (tracing the dead branches cost seconds per policy on a GPU host)
        if form == "scan":
            return one_by_one(*args), True
        if form == "unroll":
            if live_platforms() - {"cpu"} == {"cuda"}:
                return fused(*args), True
            return platform_dependent(*args, cuda=fused, default=compact), True
        return platform_dependent(*args, cpu=one_by_one, cuda=fused, default=compact), True

    return layer(op_index, applied, branches, image)


def _entry_fns(entries, bound, branches, owner):
    return [entry_fn(entries, bound, j, branches[j], owner) for j in range(len(entries))]


def _chosen_only(entries, bound, owner, op_index, applied, branches, image):
    """One sample's layer by real conditionals (unbatched): only the chosen op runs."""
    fns = _entry_fns(entries, bound, branches, owner)
    return jax.lax.cond(applied, lambda x: switch(op_index, fns, x), lambda x: x, image)


def run_layer_switch(entries, bound, op_index: jax.Array, applied: jax.Array,
                     branches: tuple[Any, ...], image: jax.Array, owner: str) -> jax.Array:
    """:func:`run_layer` as a ``lax.switch`` over every entry (each op's own kernel)."""
    out = switch(op_index, _entry_fns(entries, bound, branches, owner), image)
    return jnp.where(applied, out, image)


def scan_layers(body, init: Any, xs: Any) -> Any:
    """``lax.scan(body, init, xs)``'s final carry (``body(carry, x) -> (carry, None)``) on a
    CPU, where the loop body compiles once; elsewhere the layers are unrolled: on an H200 a
    scan's loop cost more than its bodies' launches (B=256: TrivialAugmentWide's one layer
    1.11 -> 0.83 ms, RandAugment's two 1.27 -> 1.17, AugMix 7.3 -> 6.9). Each unrolled layer
    is traced on its own: on a host with a GPU, AugMix's first call traces for about 4 s
    instead of 0.3-0.5 (measured on a CPU host made to trace both platforms' forms; the
    program store keeps the result for later processes), which its 6% faster calls repay
    within a training run."""
    length = jax.tree_util.tree_leaves(xs)[0].shape[0]

    def scanned(init, xs):
        return jax.lax.scan(body, init, xs)[0]

    def unrolled(init, xs):
        carry = init
        for i in range(length):
            carry, _ = body(carry, jax.tree_util.tree_map(lambda v, i=i: v[i], xs))
        return carry

    forms = {"scan": scanned, "unroll": unrolled}
    form = _LAYERS_FORM.get()
    if form is not None:
        return forms[form](init, xs)

    def traced_as(name):
        def run(init, xs):
            token = _LAYERS_FORM.set(name)
            try:
                return forms[name](init, xs)
            finally:
                _LAYERS_FORM.reset(token)

        return run

    return platform_dependent(init, xs, cpu=traced_as("scan"), default=traced_as("unroll"))


def run_layers(entries, bound, op_index: jax.Array, applied: jax.Array,
               branches: tuple[Any, ...], image: jax.Array, owner: str,
               shares: tuple[float, ...] | None = None) -> jax.Array:
    """Layers in sequence (leading layer axis on every argument), by :func:`scan_layers`
    (``shares``: as :func:`run_layer`'s, the largest over the layers)."""
    if op_index.shape[0] == 0:
        return image

    def body(x, xs):
        o, a, b = xs
        return run_layer(entries, bound, o, a, b, x, owner, shares), None

    return scan_layers(body, image, (op_index, applied, branches))


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
