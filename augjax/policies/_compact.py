"""One policy layer over a batch, each costly family computed only for the samples that chose it.

:func:`augjax.policies._families.run_families` under ``vmap`` computes every family for every
sample and selects: a warp, a blend and a histogram for each image, whichever op it chose.
Here the batch is compacted per family instead:

- the samples that chose an affine op (a blend op) are gathered into a sub-batch of static
  *capacity* ``K`` (indices padded past the batch), warped (blended) there, and scattered back
  into the layer's output, so the warp costs ``K`` images, not ``B`` (a family that most of
  the batch chooses is computed over the whole batch: see :data:`MAX_SHARE`);
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

from augjax.catalog import ImageStats
from augjax.kernels.pixels import is_int
from augjax.policies._families import (
    FAMILIES,
    BatchGroup,
    batch_groups,
    merge_rest,
    plan_layer,
    run_families_batch,
)

__all__ = ["capacity", "run_compact"]

#: Standard deviations of the binomial count a capacity allows above its mean.
SIGMAS = 4.0
#: A family whose capacity is over this fraction of the batch is computed over the whole batch
#: (H200, B=256: RandAugment's 3-op space, its warp's capacity 47% of the batch, took 0.62 ms
#: compacted and 0.46 whole; the 14-op space's warp at 50% gained 4%).
MAX_SHARE = 0.3
#: The same for a statistic's readers: the masked whole-batch histogram (which skips the
#: atomic adds of the other samples) is cheaper than gathering a third of the batch.
MAX_SHARE_STATS = 0.25


def capacity(batch: int, share: float) -> int:
    """The sub-batch size for a family that each sample chooses with probability ``share``:
    ``B s + 4 sqrt(B s (1 - s)) + 1`` rounded up to a multiple of 8, at most ``B``."""
    share = min(max(float(share), 0.0), 1.0)
    mean = batch * share
    k = math.ceil(mean + SIGMAS * math.sqrt(mean * (1.0 - share)) + 1.0)
    return min(batch, -(-k // 8) * 8)


def _gated(batch: int, share: float, limit: float) -> int:
    """:func:`capacity`, or 0 (not compacted) over ``limit`` of the batch."""
    k = capacity(batch, share)
    return k if k <= limit * batch else 0


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


@functools.lru_cache(maxsize=256)
def _plan(bound_ops: tuple[Any, ...], integer: bool, shares: tuple[float, ...], batch: int):
    """For each family group: its capacity (0: computed over the whole batch), and for the
    tone group each statistic's capacity."""
    groups, _ = plan_layer(bound_ops, integer)
    caps, stat_caps = [], []
    for key, items in groups:
        share = sum(shares[j] for j, _ in items)
        caps.append(0 if key[0] == "tone" else _gated(batch, share, MAX_SHARE))
        stats: dict[str, int] = {}
        if key[0] == "tone":
            names = set()
            reads = [m.reads() for _, m in items]
            if all(r is not None for r in reads):
                names = {n for r in reads for n in r}
            for name in sorted(names):
                s = sum(shares[j] for (j, m), r in zip(items, reads) if name in r)
                stats[name] = _gated(batch, s, MAX_SHARE_STATS)
        stat_caps.append(stats)
    return tuple(caps), tuple(stat_caps)


def _stat_fn(name: str):
    return lambda image: getattr(ImageStats(image), name)


def _rows(mask: jax.Array) -> jax.Array:
    return mask[:, None, None, None]


def _merge(out: jax.Array, idx: jax.Array, y: jax.Array) -> jax.Array:
    """``out`` with rows ``idx`` replaced by the sub-batch ``y``, in place (padded indices are
    dropped). Reading the sub-batch back by an elementwise pass over the batch instead let XLA
    fuse the family's whole computation into that pass, for every sample: 3.4x slower."""
    return out.at[idx].set(y, mode="drop", unique_indices=True)


def _tone(group: BatchGroup, readers: dict[str, jax.Array], stat_caps: dict[str, int],
          branches, x: jax.Array, out: jax.Array) -> jax.Array:
    """The tone family over the batch, the statistics of ``readers`` (each statistic's
    compacted readers) from compacted sub-batches."""
    b = x.shape[0]
    preset = {}
    for name, mask in readers.items():
        idx = _indices(mask, stat_caps[name])
        preset[name] = _put(b, idx, jax.vmap(_stat_fn(name))(_take(x, idx)))

    def one(image, params, pos, chosen, preset_):
        return FAMILIES["tone"](image, group.members(params), pos, chosen, preset=preset_)

    y = jax.vmap(one)(x, group.params(branches), group.pos, group.chosen, preset)
    return jnp.where(_rows(group.chosen), y, out)


def _gathered(group: BatchGroup, capacity_: int, branches, x: jax.Array,
              out: jax.Array) -> jax.Array:
    """A family on the sub-batch of the samples that chose it (or over the whole batch when it
    has no capacity)."""
    def one(image, params, pos, chosen):
        return FAMILIES[group.kind](image, group.members(params), pos, chosen)

    if not capacity_:
        y = jax.vmap(one)(x, group.params(branches), group.pos, group.chosen)
        return jnp.where(_rows(group.chosen), y, out)
    idx = _indices(group.chosen, capacity_)
    sub = _take((x, group.params(branches), group.pos), idx)
    y = jax.vmap(lambda image, params, pos: one(image, params, pos, jnp.bool_(True)))(*sub)
    return _merge(out, idx, y)


def run_compact(entries, bound_ops, op_index: jax.Array, applied: jax.Array,
                branches: tuple[Any, ...], images: jax.Array, owner: str,
                shares: Sequence[float] | None = None) -> jax.Array:
    """One layer on a batch ``(B, H, W, C)`` (every argument with a leading batch axis): each
    sample's chosen op where ``applied``, as :func:`run_families` computes it, with the costly
    families on compacted sub-batches. ``shares``: each entry's probability of being chosen and
    applied at this layer (default: uniform over the entries)."""
    count = len(bound_ops)
    shares = tuple(shares) if shares is not None else (1.0 / count,) * count
    integer = bool(is_int(images.dtype))
    caps, stat_caps = _plan(tuple(bound_ops), integer, shares, images.shape[0])

    def full(args):
        return run_families_batch(entries, bound_ops, *args, owner)

    operands = (op_index, applied, branches, images)
    if not any(caps) and not any(k for st in stat_caps for k in st.values()):
        return full(operands)
    groups, rest = batch_groups(entries, bound_ops, op_index, applied, images, owner)
    readers = [{name: g.readers(name) for name, k in st.items() if k}
               for g, st in zip(groups, stat_caps)]

    def compact(args):
        o, a, br, x = args
        out = x
        # the elementwise families first: one pass over the batch
        for g, st, r in zip(groups, stat_caps, readers):
            if g.kind == "tone":
                out = _tone(g, r, st, br, x, out)
        out = merge_rest(entries, bound_ops, rest, o, a, br, x, owner, out)
        for g, k in zip(groups, caps):
            if g.kind != "tone":
                out = _gathered(g, k, br, x, out)
        return out

    fits = [jnp.sum(g.chosen) <= k for g, k in zip(groups, caps) if k]
    fits += [jnp.sum(mask) <= st[name]
             for st, r in zip(stat_caps, readers) for name, mask in r.items()]
    return jax.lax.cond(functools.reduce(jnp.logical_and, fits, jnp.bool_(True)), compact, full,
                        operands)
