"""One policy layer over a uint8 batch on a GPU as two Pallas kernels (:mod:`._layer_kernel`).

The per-sample parts stay in XLA, computed by the family functions of
:mod:`augjax.policies._families` (so each is the op's own): the chosen tone member's table,
the chosen affine member's coefficients, the chosen blend member's factor. The pixel work is
the kernels': the statistics pass reads only the images whose op reads a statistic, and the
layer pass writes every image through its own op. There are no gathers into sub-batches, no
scatters back and no conditional (:mod:`augjax.policies._compact` needs all three).

:func:`supported` says which layers qualify: uint8 images of 1 or 3 channels; blend members
of the gray and smooth kinds; at most one affine group, of torchvision's convention (PIL's
warp and its exact paths stay with the compact layer); at most 2**24 pixels per image (the
histogram's float32 counts stay exact); and, where a member reads the mean gray, images whose
gray sum is exact in int32 rows (``mean_gray``'s integer form). Entries
without a family go through the per-entry switch over the batch, as in the other forms.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax.chain._element import check_op_input
from augjax.kernels.histogram import equalize_lut
from augjax.kernels.warp import check_fill, exact_div
from augjax.policies._families import (
    _pick,
    affine_coeffs,
    plan_layer,
    position,
    run_rest,
    tone_table,
)

__all__ = ["run_fused", "supported"]

#: Bits of the statistics pass, by the ImageStats name that reads them.
_READS = {"equalize": 1, "range": 2, "gray_mean": 4}
#: The kernel's blend kinds (``_layer_kernel.GRAY``, ``SMOOTH``) by degenerate image.
_KINDS = {"gray": 2, "smooth": 3}


def _kernels():
    """:mod:`augjax.policies._layer_kernel`, imported on first use (Pallas takes 0.1 s)."""
    from augjax.policies import _layer_kernel

    return _layer_kernel


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
            if any(_convention(bound_ops[j]) != "torchvision" for j, _ in items):
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


def _group_params(branches, items):
    return tuple(branches[j] for j, _ in items)


def run_fused(entries, bound_ops, op_index: jax.Array, applied: jax.Array,
              branches: tuple[Any, ...], images: jax.Array, owner: str,
              interpret: bool = False) -> jax.Array:
    """One layer on a uint8 batch ``(B, H, W, C)`` (every argument with a leading batch axis):
    each sample's chosen op where ``applied``, as :func:`~augjax.policies._families.
    run_families` computes it (the layer must be :func:`supported`). ``interpret``: run the
    kernels with Pallas' interpreter (CPU, tests)."""
    K = _kernels()
    b, h, w, c = images.shape
    count = len(bound_ops)
    groups, rest = plan_layer(tuple(bound_ops), True)
    code = jnp.full((b,), K.KEEP, jnp.int32)
    par = jnp.zeros((b, K.PARAMS), jnp.float32)
    lut = jnp.zeros((b, 256, c), jnp.int32)
    fill, interpolation = None, "nearest"
    for key, items in groups:
        for j, _ in items:
            check_op_input(bound_ops[j], images[0], f"{owner}/{entries[j].name}")
        chosen, pos = jax.vmap(lambda o, js=tuple(j for j, _ in items): position(o, js, count))(
            op_index)
        chosen = chosen & applied
        members = [(bound_ops[j], m) for j, m in items]
        params = _group_params(branches, items)
        if key[0] == "tone":
            code = jnp.where(chosen, K.TONE, code)
            lut = _tables(images, members, params, pos, chosen, interpret)
        elif key[0] == "affine":
            code = jnp.where(chosen, K.AFFINE, code)
            cfg = members[0][0].kwargs
            fill = check_fill(cfg.get("fill"), images[0], members[0][0].name)
            interpolation = cfg.get("interpolation", "nearest")

            def grid(p, pos_, members=members):
                m = affine_coeffs([(op, pp, mm) for (op, mm), pp in zip(members, p)], pos_, h,
                                  w)
                return jnp.concatenate([exact_div(m[:3], 0.5 * w), exact_div(m[3:], 0.5 * h)])

            par = par.at[:, :6].set(jax.vmap(grid)(params, pos))
        else:
            code = jnp.where(chosen, K.BLEND, code)

            def blend(p, pos_, members=members):
                f = _pick([jnp.asarray(pp[m.param], jnp.float32)
                           for (_, m), pp in zip(members, p)], pos_)
                kind = _pick([jnp.float32(_KINDS[m.degenerate]) for _, m in members], pos_)
                return jnp.stack([f, kind])

            par = par.at[:, 6:].set(jax.vmap(blend)(params, pos))
    kernel = functools.partial(K.layer_kernel, fill=fill, interpolation=interpolation,
                               interpret=interpret)
    out = jax.vmap(kernel)(images, code, par, lut)
    if rest:
        chosen, y = run_rest(entries, bound_ops, rest, op_index, branches, images, owner,
                             batched=True)
        out = jnp.where((chosen & applied)[:, None, None, None], y, out)
    return out


def _tables(images, members, params, pos, chosen, interpret):
    """Each sample's chosen tone table ``(B, 256, C)``, the statistics from the kernel
    (the :class:`~augjax.catalog._fuse.ImageStats` names of :data:`_READS`)."""
    K = _kernels()
    b, h, w, _ = images.shape
    names = sorted({n for _, m in members for n in m.reads()})
    reads = jnp.zeros((b,), jnp.int32)
    for name in names:
        readers = jnp.asarray([name in m.reads() for _, m in members])[pos] & chosen
        reads = reads | jnp.where(readers, _READS[name], 0)
    preset = {}
    if names:
        hist, lo, hi, gray = jax.vmap(
            functools.partial(K.stats_kernel, interpret=interpret))(images, reads)
        if "equalize" in names:
            preset["equalize"] = jax.vmap(equalize_lut)(hist)
        if "range" in names:
            preset["range"] = (lo.astype(jnp.float32), hi.astype(jnp.float32))
        if "gray_mean" in names:  # augjax.kernels.pixels.mean_gray's integer form
            preset["gray_mean"] = gray.astype(jnp.float32) * (np.float32(1) / np.float32(h * w))
    items = [(op, None, m) for op, m in members]

    def one(image, p, pos_, chosen_, preset_):
        its = [(op, pp, m) for (op, _, m), pp in zip(items, p)]
        return tone_table(image, its, pos_, chosen_, preset_)

    return jax.vmap(one)(images, params, pos, chosen, preset).astype(jnp.int32)
