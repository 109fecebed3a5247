"""One policy layer over a batch, each costly family computed only for the samples that chose it.

:func:`augjax.policies._families.run_families` under ``vmap`` computes every family for every
sample and selects: a warp, a blend and a histogram for each image, whichever op it chose.
Here the batch is compacted per family instead:

- the samples that chose an affine op (a blend op) are gathered into a sub-batch of static
  *capacity* ``K`` (indices padded past the batch), warped (blended) there, and scattered back
  into the layer's output, so the warp costs ``K`` images, not ``B``;
- the tone family's lookup is one elementwise pass over the batch, but the statistics its
  members read (equalize's histogram, autocontrast's range, contrast's mean gray) are computed
  on compacted sub-batches of the samples that read each one;
- entries without a family member go through the per-entry switch over the whole batch.

A capacity comes from the share of the batch expected to choose the family (the policy's
probabilities, see :func:`capacity`): the mean plus four standard deviations of a binomial
count. A batch whose counts exceed a capacity (rare by construction, and possible) takes the
layer computed family by family over the whole batch instead, through one ``lax.cond`` per
layer, so the pixels never depend on the capacities: both ways compute each sample's chosen
op with the same functions, and ``tests/compose/test_policy_compact.py`` checks them equal.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax.catalog._fuse import ImageStats
from augjax.chain._element import check_op_input
from augjax.kernels.pixels import is_int
from augjax.policies._families import FAMILIES, plan_layer, position, run_families, run_rest

__all__ = ["capacity", "run_compact"]

#: Standard deviations of the binomial count a capacity allows above its mean.
SIGMAS = 4.0
#: A family whose capacity is over this fraction of the batch is computed over the whole batch
#: (gathering most of the batch costs more than it saves).
MAX_SHARE = 0.5
#: How a compacted family's results join the layer's output: "gather" (one elementwise pass
#: over the batch reads each sample's row of the sub-batch) or "scatter" (rows written in place).
MERGE = "gather"


def capacity(batch: int, share: float) -> int:
    """The sub-batch size for a family that each sample chooses with probability ``share``:
    ``B s + 4 sqrt(B s (1 - s)) + 1`` rounded up to a multiple of 8, at most ``B``."""
    share = min(max(float(share), 0.0), 1.0)
    mean = batch * share
    k = math.ceil(mean + SIGMAS * math.sqrt(mean * (1.0 - share)) + 1.0)
    return min(batch, -(-k // 8) * 8)


def _gated(batch: int, share: float) -> int:
    """:func:`capacity`, or 0 (not compacted) over :data:`MAX_SHARE` of the batch."""
    k = capacity(batch, share)
    return k if k <= MAX_SHARE * batch else 0


def _indices(mask: jax.Array, k: int) -> jax.Array:
    """The first ``k`` positions where ``mask`` holds, padded with ``len(mask)`` (past the end:
    a gather clamps it, a scatter drops it)."""
    return jnp.nonzero(mask, size=k, fill_value=mask.shape[0])[0].astype(jnp.int32)


def _take(tree: Any, idx: jax.Array) -> Any:
    return jax.tree_util.tree_map(lambda v: jnp.take(v, idx, axis=0, mode="clip"), tree)


def _put(full_shape_of: Any, idx: jax.Array, values: Any) -> Any:
    """``values`` (a pytree, leading axis ``k``) scattered to rows ``idx`` of zero arrays with
    ``full_shape_of`` leading rows; padded indices are dropped."""
    return jax.tree_util.tree_map(
        lambda v: jnp.zeros((full_shape_of, *v.shape[1:]), v.dtype).at[idx].set(v, mode="drop"),
        values)


def _stat_names(items) -> tuple[str, ...] | None:
    """The statistics the tone members read (None: a member does not declare them)."""
    reads = [m.reads() for _, _, m in items]
    if any(r is None for r in reads):
        return None
    return tuple(sorted({name for r in reads for name in r}))


def _stat_readers(items, pos: jax.Array, name: str) -> jax.Array:
    """Per sample: whether its chosen member (``pos``) reads the statistic ``name``."""
    reads = jnp.asarray([name in m.reads() for _, _, m in items])
    return reads[pos]


@functools.lru_cache(maxsize=256)
def _plan(bound_ops: tuple[Any, ...], integer: bool, shares: tuple[float, ...], batch: int):
    """For each family group: its capacity (0: computed over the whole batch), and for the
    tone group each statistic's capacity."""
    groups, _ = plan_layer(bound_ops, integer)
    caps, stat_caps = [], []
    for key, items in groups:
        share = sum(shares[j] for j, _ in items)
        caps.append(0 if key[0] == "tone" else _gated(batch, share))
        stats: dict[str, int] = {}
        if key[0] == "tone":
            names = set()
            reads = [m.reads() for _, m in items]
            if all(r is not None for r in reads):
                names = {n for r in reads for n in r}
            for name in sorted(names):
                s = sum(shares[j] for (j, m), r in zip(items, reads) if name in r)
                stats[name] = _gated(batch, s)
        stat_caps.append(stats)
    return tuple(caps), tuple(stat_caps)


def run_compact(entries, bound_ops, op_index: jax.Array, applied: jax.Array,
                branches: tuple[Any, ...], images: jax.Array, owner: str,
                shares: Sequence[float] | None = None) -> jax.Array:
    """One layer on a batch ``(B, H, W, C)`` (every argument with a leading batch axis): each
    sample's chosen op where ``applied``, as :func:`run_families` computes it, with the costly
    families on compacted sub-batches. ``shares``: each entry's probability of being chosen and
    applied at this layer (default: uniform over the entries)."""
    b = images.shape[0]
    count = len(bound_ops)
    shares = tuple(shares) if shares is not None else (1.0 / count,) * count
    integer = bool(is_int(images.dtype))
    groups, rest = plan_layer(tuple(bound_ops), integer)
    caps, stat_caps = _plan(tuple(bound_ops), integer, shares, b)
    sample = images[0]

    def full(args):
        o, a, br, x = args
        return jax.vmap(lambda o, a, bb, xx: run_families(entries, bound_ops, o, a, bb, xx, owner)
                        )(o, a, br, x)

    # Where each sample goes, and whether every compacted group fits its capacity.
    plans, fits = [], jnp.bool_(True)
    for (key, items), k, stats in zip(groups, caps, stat_caps):
        js = tuple(j for j, _ in items)
        for j in js:
            check_op_input(bound_ops[j], sample, f"{owner}/{entries[j].name}")
        chosen, pos = position(op_index, js, count)
        chosen = chosen & applied
        if k:
            fits = fits & (jnp.sum(chosen) <= k)
        readers = {}
        group_items = [(bound_ops[j], None, m) for j, m in items]
        for name, kn in stats.items():
            readers[name] = chosen & _stat_readers(group_items, pos, name)
            if kn:
                fits = fits & (jnp.sum(readers[name]) <= kn)
        plans.append((key, items, js, chosen, pos, k, stats, readers))

    if not any(caps) and not any(kn for st in stat_caps for kn in st.values()):
        return full((op_index, applied, branches, images))

    def compact(args):
        o, a, br, x = args
        out = x
        scattered = []
        for key, items, js, chosen, pos, k, stats, readers in plans:
            kind = key[0]
            if kind == "tone":
                preset = {}
                for name, kn in stats.items():
                    if not kn:
                        continue
                    idx = _indices(readers[name], kn)
                    sub = jax.vmap(lambda v, name=name: getattr(ImageStats(v), name))(
                        _take(x, idx))
                    preset[name] = _put(b, idx, sub)
                y = jax.vmap(lambda xx, bb, p, c, ps: FAMILIES["tone"](
                    xx, [(bound_ops[j], bb[i], m) for i, (j, m) in enumerate(items)], p, c,
                    preset=ps))(x, tuple(br[j] for j in js), pos, chosen, preset)
                out = jnp.where(chosen[:, None, None, None], y, out)
            else:
                scattered.append((kind, items, js, chosen, pos, k))
        if rest:
            chosen, y = run_rest(entries, bound_ops, rest, o, br, x, owner, batched=True)
            out = jnp.where((chosen & a)[:, None, None, None], y, out)
        for kind, items, js, chosen, pos, k in scattered:
            if not k:
                y = jax.vmap(lambda xx, bb, p, c: FAMILIES[kind](
                    xx, [(bound_ops[j], bb[i], m) for i, (j, m) in enumerate(items)], p,
                    c))(x, tuple(br[j] for j in js), pos, chosen)
                out = jnp.where(chosen[:, None, None, None], y, out)
                continue
            idx = _indices(chosen, k)
            sub_x, sub_pos = _take(x, idx), _take(pos, idx)
            sub_br = _take(tuple(br[j] for j in js), idx)
            y = jax.vmap(lambda xx, bb, p: FAMILIES[kind](
                xx, [(bound_ops[j], bb[i], m) for i, (j, m) in enumerate(items)], p,
                jnp.bool_(True)))(sub_x, sub_br, sub_pos)
            if MERGE == "gather":
                slot = jnp.cumsum(chosen.astype(jnp.int32)) - 1
                out = jnp.where(chosen[:, None, None, None],
                                jnp.take(y, slot, axis=0, mode="clip"), out)
            else:
                out = out.at[idx].set(y, mode="drop", unique_indices=True)
        return out

    return jax.lax.cond(fits, compact, full, (op_index, applied, branches, images))
