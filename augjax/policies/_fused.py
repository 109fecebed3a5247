"""One policy layer over a uint8 batch on a GPU as two Pallas kernels (:mod:`._layer_kernel`).

The per-sample parts stay in XLA, computed by the family functions of
:mod:`augjax.policies._families` (so each is the op's own): the chosen tone member's table,
the chosen affine member's coefficients, the chosen blend member's factor. The pixel work is
the kernels': the statistics pass reads only the images whose op reads a statistic, and the
layer pass writes every image through its own op. There are no gathers into sub-batches, no
scatters back and no conditional (:mod:`augjax.policies._compact` needs all three).

:func:`supported` says which layers qualify: uint8 images of 1 or 3 channels; blend members
of the gray and smooth kinds; at most one affine group, of torchvision's or PIL's convention;
at most 2**24 pixels per image (the histogram's float32 counts stay exact); and, where a
member reads the mean gray, images whose gray sum is exact in int32 rows (``mean_gray``'s
integer form). Entries without a family go through the per-entry switch over the batch, as in
the other forms.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from augjax.kernels.histogram import equalize_lut, histogram
from augjax.kernels.pixels import mean_of_sum
from augjax.kernels.grid_sample import grid_rows
from augjax.kernels.warp import check_fill
from augjax.kernels.warp_pil import fixed_affine, split_coefficient
from augjax.policies._families import (
    BatchGroup,
    affine_coeffs,
    affine_exact,
    batch_groups,
    blend_choice,
    merge_rest,
    plan_layer,
    tone_table,
)

__all__ = ["run_fused", "supported"]

#: Bits of the statistics pass, by the ImageStats name that reads them.
_READS = {"equalize": 1, "range": 2, "gray_mean": 4}
#: The blend members' degenerate images the kernel computes (their codes of
#: :func:`~augjax.policies._families.blend_choice` are :data:`augjax.kernels.enhance.GRAY` and
#: ``SMOOTH``).
_KINDS = ("gray", "smooth")


def _kernels():
    """:mod:`augjax.policies._layer_kernel`, imported on first use (Pallas takes 0.1 s)."""
    import augjax.policies._layer_kernel as kernels

    return kernels


def _convention(op: Any) -> str:
    return op.kwargs.get("convention", "torchvision")


@functools.lru_cache(maxsize=256)
def supported(bound_ops: tuple[Any, ...], shape: tuple[int, ...], dtype: Any) -> bool:
    """Whether a layer over the op space ``bound_ops`` on images of ``shape`` (H, W, C) and
    ``dtype`` can run as the kernels."""
    h, w, c = shape
    if not _kernels().AVAILABLE or jnp.dtype(dtype) != jnp.uint8 or c not in (1, 3):
        return False
    if not 0 < h * w <= 2**24:  # histogram counts are float32, exact below 2**24
        return False
    groups, _ = plan_layer(bound_ops, True)
    affine = 0
    for key, items in groups:
        if key[0] == "affine":
            affine += 1
            conventions = {_convention(bound_ops[j]) for j, _ in items}
            if len(conventions) > 1 or not conventions <= {"torchvision", "pil"}:
                return False
            if key[2] not in ("nearest", "bilinear"):
                return False
        elif key[0] == "blend":
            if any(m.degenerate not in _KINDS for _, m in items):
                return False
        else:
            reads = [m.reads() for _, m in items]
            if any(r is None or set(r) - set(_READS) for r in reads):
                return False
            gray = any("gray_mean" in r for r in reads)
            if gray and ((h * w) % 32 or h * w * 255 >= 2**31):
                return False
    return affine <= 1


def run_fused(entries, bound_ops, op_index: jax.Array, applied: jax.Array,
              branches: tuple[Any, ...], images: jax.Array, owner: str,
              interpret: bool = False) -> jax.Array:
    """One layer on a uint8 batch ``(B, H, W, C)`` (every argument with a leading batch axis):
    each sample's chosen op where ``applied``, as :func:`~augjax.policies._families.
    run_families` computes it (the layer must be :func:`supported`). ``interpret``: run the
    kernels with Pallas' interpreter (CPU, tests)."""
    K = _kernels()
    b, h, w, c = images.shape
    code = jnp.full((b,), K.KEEP, jnp.int32)
    par = jnp.zeros((b, K.PARAMS), jnp.float32)
    ipar = jnp.zeros((b, K.IPARAMS), jnp.int32)
    lut = jnp.zeros((b, 256, c), jnp.int32)
    fill, interpolation, convention, exact = None, "nearest", "torchvision", False
    groups, rest = batch_groups(entries, bound_ops, op_index, applied, images, owner)
    for group in groups:
        params = group.params(branches)
        if group.kind == "tone":
            code = jnp.where(group.chosen, K.TONE, code)
            lut = _tables(images, group, params, interpret)
        elif group.kind == "affine":
            code = jnp.where(group.chosen, K.AFFINE, code)
            op = group.ops[0]
            fill = check_fill(op.kwargs.get("fill"), images[0], op.name)
            interpolation = op.kwargs.get("interpolation", "nearest")
            convention = _convention(op)
            fpar, ipar, exact = warp_params(group, params, convention, h, w)
            par = par.at[:, :6].set(fpar[:, :6]).at[:, 8:].set(fpar[:, 6:])
        else:
            code = jnp.where(group.chosen, K.BLEND, code)

            def blend(p, pos, group=group):
                f, kind = blend_choice(group.members(p), pos)
                return jnp.stack([f, kind.astype(jnp.float32)])

            par = par.at[:, 6:8].set(jax.vmap(blend)(params, group.pos))
    kernel = functools.partial(K.layer_kernel, fill=fill, interpolation=interpolation,
                               convention=convention, exact=exact, interpret=interpret)
    out = jax.vmap(kernel)(images, code, par, ipar, lut)
    return merge_rest(entries, bound_ops, rest, op_index, applied, branches, images, owner, out)


def warp_params(group: BatchGroup, params, convention: str, h: int, w: int):
    """Each sample's warp scalars for the kernel: ``(par, ipar, exact)`` with ``par``
    ``(B, 14)`` float32 (the 6 coefficients, then PIL's 8 split coefficients), ``ipar``
    ``(B, 8)`` int32 (PIL's fixed-point data, its use, the exact-path code) and ``exact``
    whether the affine ``group`` has exact paths (static); computed as the XLA warps compute
    them."""
    exact = any(m.exact is not None for _, m in group.items) and convention == "pil"

    def one(p, pos):
        items = group.members(p)
        a = affine_coeffs(items, pos, h, w)
        if convention != "pil":
            grid = jnp.concatenate(grid_rows(a, h, w))
            return (jnp.concatenate([grid, jnp.zeros(8, jnp.float32)]),
                    jnp.zeros(8, jnp.int32))
        split = [part for k in (0, 1, 3, 4) for part in split_coefficient(a[k] * 0.5)]
        fixed, use = fixed_affine(a, h, w)
        code = affine_exact(items, pos, h, w) if exact else None
        ints = [fixed, use.astype(jnp.int32)[None],
                jnp.zeros(1, jnp.int32) if code is None else code.astype(jnp.int32)[None]]
        return jnp.concatenate([a, jnp.stack(split)]), jnp.concatenate(ints)

    fpar, ipar = jax.vmap(one)(params, group.pos)
    return fpar, ipar, exact


def _tables(images, group: BatchGroup, params, interpret):
    """Each sample's chosen tone table ``(B, 256, C)``, the statistics from the kernel
    (the :class:`~augjax.catalog._fuse.ImageStats` names of :data:`_READS`)."""
    K = _kernels()
    b, h, w, _ = images.shape
    names = sorted({n for _, m in group.items for n in m.reads()})
    reads = jnp.zeros((b,), jnp.int32)
    for name in names:
        reads = reads | jnp.where(group.readers(name), _READS[name], 0)
    preset = {}
    if names:
        stats = K.histogram_pallas
        hist, lo, hi, gray = jax.vmap(
            functools.partial(stats.stats_kernel, interpret=interpret))(images, reads)
        if "equalize" in names:
            if not stats.AVAILABLE:  # this JAX's Triton has no histogram: XLA counts
                hist = jax.vmap(lambda x, r: histogram(x, needed=(r & 1) != 0))(images, reads)
            preset["equalize"] = jax.vmap(equalize_lut)(hist)
        if "range" in names:
            preset["range"] = (lo.astype(jnp.float32), hi.astype(jnp.float32))
        if "gray_mean" in names:  # augjax.kernels.pixels.mean_gray's integer form
            preset["gray_mean"] = mean_of_sum(gray, h * w)

    def one(image, p, pos, chosen, preset_):
        return tone_table(image, group.members(p), pos, chosen, preset_)

    return jax.vmap(one)(images, params, group.pos, group.chosen, preset).astype(jnp.int32)
