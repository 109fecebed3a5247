"""One policy layer computed family by family: each sample's chosen op, at the cost of one op
per family rather than one per entry of the op space.

Under ``vmap`` a ``lax.switch`` over the op space computes every entry for every sample and
selects. Here the entries whose ops declare a family member (:mod:`augjax.catalog._fuse`) are
grouped, and each group is computed once per sample with the chosen entry's per-sample part:

- affine ops (rotate, shears, translations; per sampling convention, interpolation and fill):
  the chosen op's coefficients, then ONE warp (and PIL rotate's exact paths);
- blend ops (brightness, contrast, saturation, sharpness): one blend with the chosen op's
  degenerate image and factor;
- tone ops (identity-like level maps: invert, solarize, solarize_add, posterize,
  autocontrast, equalize, and on uint8 brightness and contrast): on uint8 the chosen op's
  256-entry table per channel, applied by one lookup; on float32 the level maps under selects
  (one fused elementwise pass).

Entries without a member (a pack's op) go through a ``lax.switch`` over those entries only.
Every family computes with the functions the ops' kernels call, so the pixels are the ops'
own (``tests/compose/test_policy_families.py`` checks them against the per-op switch).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from augjax.catalog import Affine, Blend, ImageStats, Tone, exact_paths, member
from augjax.catalog.tone import sharpness_pixels
from augjax.kernels.enhance import GRAY, MEAN, SMOOTH, ZERO, degenerate
from augjax.kernels.histogram import level_ramp, lookup
from augjax.kernels.pixels import bound, is_int, mix, to_dtype
from augjax.kernels.warp import check_fill, warp_affine
from augjax.kernels.warp_pil import warp_affine_pil

__all__ = ["FAMILIES", "BatchGroup", "affine_coeffs", "affine_exact", "batch_groups",
           "blend_choice", "check_group", "entry_fn", "merge_rest", "plan_layer", "position",
           "run_families", "run_families_batch", "run_rest", "switch", "tone_table"]

#: The family an op with several members joins, per image kind: on uint8 a level map is one
#: table lookup (cheaper than a blend); on float32 brightness and contrast blend.
_PREFERENCE = {True: (Tone, Blend, Affine), False: (Blend, Affine, Tone)}

#: Degenerate images of the blend family: their codes (:mod:`augjax.kernels.enhance`).
_DEGENERATES = {"zero": ZERO, "mean": MEAN, "gray": GRAY, "smooth": SMOOTH}


def _group_key(m: Any, op: Any) -> tuple[Any, ...]:
    if isinstance(m, Affine):
        cfg = op.kwargs
        fill = cfg.get("fill")
        fill = tuple(fill) if isinstance(fill, (list, tuple)) else fill
        return ("affine", cfg.get("convention", "torchvision"), cfg.get("interpolation"), fill)
    return ("blend",) if isinstance(m, Blend) else ("tone",)


@functools.lru_cache(maxsize=256)
def plan_layer(bound_ops: tuple[Any, ...], integer: bool):
    """The static grouping of an op space: ``(groups, rest)`` with ``groups`` a tuple of
    ``(key, ((entry index, member), ...))`` and ``rest`` the indices of the entries computed
    by the switch (identity entries are in neither)."""
    groups: dict[tuple[Any, ...], list[tuple[int, Any]]] = {}
    rest = []
    for j, op in enumerate(bound_ops):
        if op is None:
            continue
        m = next((m for kind in _PREFERENCE[integer] if (m := member(op.spec, kind))), None)
        if m is None:
            rest.append(j)
        else:
            groups.setdefault(_group_key(m, op), []).append((j, m))
    return tuple((k, tuple(v)) for k, v in groups.items()), tuple(rest)


def position(op_index: jax.Array, js: tuple[int, ...], count: int) -> tuple[jax.Array, ...]:
    """Whether the chosen entry is one of ``js``, and its position among them."""
    table = [0] * count
    chosen = [False] * count
    for i, j in enumerate(js):
        table[j], chosen[j] = i, True
    return jnp.asarray(chosen)[op_index], jnp.asarray(table, jnp.int32)[op_index]


def _static(op: Any) -> dict[str, Any]:
    """The op's static parameters (its kernel's keywords)."""
    cfg = op.kwargs
    return {k: cfg[k] for k in op.spec.static}


def _pick(values: list[jax.Array], pos: jax.Array) -> jax.Array:
    return values[0] if len(values) == 1 else jnp.stack(values)[pos]


def _select(values: list[jax.Array], pos: jax.Array) -> jax.Array:
    """``values[pos]`` by selects (fused into the producers' elementwise pass)."""
    out = values[0]
    for i, v in enumerate(values[1:], 1):
        out = jnp.where(pos == i, v, out)
    return out


def affine_coeffs(items, pos: jax.Array, h: int, w: int) -> jax.Array:
    """The chosen affine member's ``(6,)`` coefficients for an ``h`` x ``w`` image."""
    return _pick([m.coeffs(p, h, w, **_static(op)) for op, p, m in items], pos)


def affine_exact(items, pos: jax.Array, h: int, w: int) -> jax.Array | None:
    """The chosen affine member's exact-path code, or None where no member has exact paths."""
    if not any(m.exact is not None for _, _, m in items):
        return None
    codes = [m.exact(p, h, w, **_static(op)) if m.exact is not None else jnp.int32(0)
             for op, p, m in items]
    return _pick(codes, pos)


def _affine(image: jax.Array, items, pos: jax.Array, chosen: jax.Array) -> jax.Array:
    h, w = image.shape[:2]
    op0 = items[0][0]
    cfg = op0.kwargs
    coeffs = affine_coeffs(items, pos, h, w)
    fill = check_fill(cfg.get("fill"), image, op0.name)
    interpolation = cfg.get("interpolation", "nearest")
    if cfg.get("convention", "torchvision") == "pil":
        out = warp_affine_pil(image, coeffs, interpolation, fill)
    else:
        out = warp_affine(image, coeffs, interpolation, fill)
    code = affine_exact(items, pos, h, w)
    return out if code is None else exact_paths(image, out, code)


def blend_choice(items, pos: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The chosen blend member's factor (float32) and degenerate image's code (int32,
    :data:`augjax.kernels.enhance.ZERO` and the others)."""
    f = _pick([jnp.asarray(p[m.param], jnp.float32) for _, p, m in items], pos)
    return f, _pick([jnp.int32(_DEGENERATES[m.degenerate]) for _, _, m in items], pos)


def _blend(image: jax.Array, items, pos: jax.Array, chosen: jax.Array) -> jax.Array:
    dtype = image.dtype
    x = image.astype(jnp.float32)
    kinds = {m.degenerate for _, _, m in items}
    f, kind = blend_choice(items, pos)
    stats = ImageStats(image)
    d = degenerate(kind, stats.gray[..., None] if "gray" in kinds else None,
                   stats.gray_mean if "mean" in kinds else None)
    v = mix(x, d, f)  # pixels.blend's sum (brightness: d = 0; contrast: enhance.contrast's)
    if "smooth" in kinds:  # sharpness's own formula (the op's pixels)
        v = jnp.where(kind == SMOOTH, sharpness_pixels(x, f, dtype), v)
    return to_dtype(jnp.clip(v, 0.0, bound(dtype)), dtype)


def _level_map(op: Any, params: Any, m: Tone, values: jax.Array, stats: ImageStats):
    if m.fn is None:
        return op.run(values, params)
    return m.fn(values, params, stats, **_static(op))


def _needed(items, pos: jax.Array) -> dict[str, jax.Array] | None:
    """For each statistic the members declare, whether this sample's chosen member reads it;
    None (every statistic for every sample) when a member does not declare what it reads."""
    reads = [m.reads() for _, _, m in items]
    if any(r is None for r in reads):
        return None
    needed: dict[str, jax.Array] = {}
    for i, names in enumerate(reads):
        for name in names:
            needed[name] = needed.get(name, False) | (pos == i)
    return needed


def _stats(image: jax.Array, items, pos: jax.Array, chosen: jax.Array,
           preset: dict[str, Any] | None) -> ImageStats:
    needed = _needed(items, pos)
    return ImageStats(image, needed and {k: v & chosen for k, v in needed.items()}, preset)


def tone_table(image: jax.Array, items, pos: jax.Array, chosen: jax.Array,
               preset: dict[str, Any] | None = None) -> jax.Array:
    """The chosen tone member's ``(256, C)`` table for an integer image (arguments as
    :func:`_tone`'s)."""
    stats = _stats(image, items, pos, chosen, preset)
    ramp = level_ramp(image.dtype, image.shape[-1])
    tables = [_level_map(op, p, m, ramp, stats) for op, p, m in items]
    return _pick(tables, pos)[:, 0, :]


def _tone(image: jax.Array, items, pos: jax.Array, chosen: jax.Array,
          preset: dict[str, Any] | None = None) -> jax.Array:
    """``preset``: statistics already computed for this sample (by name), used as they are."""
    if not is_int(image.dtype):
        stats = _stats(image, items, pos, chosen, preset)
        return _select([_level_map(op, p, m, image, stats) for op, p, m in items], pos)
    return lookup(image, tone_table(image, items, pos, chosen, preset))


#: The family computations by group kind: ``fn(image, items, pos, chosen)`` on one image, with
#: ``items`` the group's ``(op, params, member)`` and ``pos`` the chosen member's position.
FAMILIES = {"affine": _affine, "blend": _blend, "tone": _tone}


def run_families(entries, bound_ops, op_index: jax.Array, applied: jax.Array,
                 branches: tuple[Any, ...], image: jax.Array, owner: str) -> jax.Array:
    """One layer on one HWC image: the chosen entry's op with its params, where ``applied``,
    each family computed once."""
    groups, rest = plan_layer(tuple(bound_ops), bool(is_int(image.dtype)))
    count = len(bound_ops)
    out = image
    for key, items in groups:
        js = tuple(j for j, _ in items)
        check_group(entries, bound_ops, items, image, owner)
        chosen, pos = position(op_index, js, count)
        y = FAMILIES[key[0]](image, [(bound_ops[j], branches[j], m) for j, m in items], pos,
                              chosen & applied)
        out = jnp.where(chosen, y, out)
    if rest:
        chosen, y = run_rest(entries, bound_ops, rest, op_index, branches, image, owner)
        out = jnp.where(chosen, y, out)
    return jnp.where(applied, out, image)


def run_families_batch(entries, bound_ops, op_index: jax.Array, applied: jax.Array,
                       branches: tuple[Any, ...], images: jax.Array, owner: str) -> jax.Array:
    """:func:`run_families` over a batch (every argument with a leading batch axis): each
    family computed for every sample."""
    def one(o, a, br, x):
        return run_families(entries, bound_ops, o, a, br, x, owner)

    return jax.vmap(one)(op_index, applied, branches, images)


def run_rest(entries, bound_ops, rest: tuple[int, ...], op_index: jax.Array,
             branches: tuple[Any, ...], image: jax.Array, owner: str,
             batched: bool = False) -> tuple[jax.Array, jax.Array]:
    """The entries without a family (``rest``) by a switch over them: ``(chosen, output)``,
    ``chosen`` whether the sample's op is one of them. ``batched``: the arguments have a
    leading batch axis (the switch is vmapped)."""
    count = len(bound_ops)

    def one(o, br, x):
        chosen, pos = position(o, rest, count)
        return chosen, switch(pos, [entry_fn(entries, bound_ops, j, br[j], owner) for j in rest], x)

    return jax.vmap(one)(op_index, branches, image) if batched else one(op_index, branches, image)


def entry_fn(entries, bound_ops, j: int, params: Any, owner: str):
    """Entry ``j``'s op with ``params`` on one image (its errors named ``owner/entry``); the
    identity for an identity entry."""
    op = bound_ops[j]
    if op is None:
        return lambda x: x
    return lambda x: op.run_checked(x, params, f"{owner}/{entries[j].name}")


def switch(index: jax.Array, fns, x: jax.Array) -> jax.Array:
    """``fns[index](x)``: a ``lax.switch``, or the call where there is one function."""
    return fns[0](x) if len(fns) == 1 else jax.lax.switch(index, fns, x)


class BatchGroup:
    """One family group of a layer over a batch (``op_index`` and ``applied`` ``(B,)``): who
    chose it (``chosen``, applied too), the chosen member's position ``pos``."""

    def __init__(self, key, items, bound_ops, op_index: jax.Array, applied: jax.Array):
        self.kind, self.items = key[0], items
        self.js = tuple(j for j, _ in items)
        self.ops = tuple(bound_ops[j] for j in self.js)
        chosen, self.pos = position(op_index, self.js, len(bound_ops))
        self.chosen = chosen & applied

    def params(self, branches):
        """The group's entries' params, in ``items`` order."""
        return tuple(branches[j] for j in self.js)

    def members(self, params):
        """The family functions' ``(op, params, member)`` items of one sample's ``params`` (in
        ``items`` order)."""
        return [(op, p, m) for op, p, (_, m) in zip(self.ops, params, self.items, strict=True)]

    def readers(self, name: str) -> jax.Array:
        """Per sample: whether it chose a member that reads the statistic ``name``."""
        return self.chosen & jnp.asarray([name in m.reads() for _, m in self.items])[self.pos]


def batch_groups(entries, bound_ops, op_index: jax.Array, applied: jax.Array,
                 images: jax.Array, owner: str) -> tuple[list[BatchGroup], tuple[int, ...]]:
    """A layer's family groups over the batch ``images`` (each op checks the images as it
    would alone) and the entries without a family (:func:`plan_layer`'s ``rest``)."""
    layout, rest = plan_layer(tuple(bound_ops), bool(is_int(images.dtype)))
    for _, items in layout:
        check_group(entries, bound_ops, items, images[0], owner)
    return [BatchGroup(key, items, bound_ops, op_index, applied) for key, items in layout], rest


def merge_rest(entries, bound_ops, rest: tuple[int, ...], op_index: jax.Array,
               applied: jax.Array, branches: tuple[Any, ...], images: jax.Array, owner: str,
               out: jax.Array) -> jax.Array:
    """``out`` (a batch) with the samples whose chosen entry has no family (``rest``) computed
    by :func:`run_rest`'s switch, where ``applied``."""
    if not rest:
        return out
    chosen, y = run_rest(entries, bound_ops, rest, op_index, branches, images, owner,
                         batched=True)
    return jnp.where((chosen & applied)[:, None, None, None], y, out)


def check_group(entries, bound_ops, items, image: jax.Array, owner: str) -> None:
    """Checks ``image`` (one HWC image) against each op of a family group's ``(entry index,
    member)`` items, as each op alone would."""
    for j, _ in items:
        bound_ops[j].check_image(image, f"{owner}/{entries[j].name}")
