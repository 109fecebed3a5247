"""CPU forms of the detection resamples that run a batch image by image (internal).

Under ``vmap`` every sample computes every resampling tap: as many as the widest shrink the op
can draw needs, the rest weighing 0. On the CPU a loop over the images lets each sample take a
branch (``lax.switch``) that reads only the taps that weigh something (the first ``K`` columns
of its taps, ``K`` rounded up to one of a few sizes) and, for a crop, only the rows its height
taps read. Each sum stops before adding zeros (``v + 0.0 == v``), so the values are those of
every tap. The taps themselves are computed for the whole batch (``vmap``): computed for one
image, XLA fuses their multiply-adds otherwise and a weight may round differently.

:func:`by_image` builds the form: a ``custom_vmap`` (the loop) under a ``custom_jvp`` whose
derivative is the every-tap form's (the same function).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from augjax.kernels.batching import broadcast_unbatched
from augjax.kernels.resize import resample_canvas, resample_crop
from augjax.kernels.pixels import is_int
from augjax.kernels.window import CHUNK, fill_outside, sum_taps, tap_sizes

__all__ = ["MIN_SIDE", "by_image", "crop_branching", "jitter_branching", "zoom_branching"]

#: The shortest side (of the image and of the output) the image-by-image form runs for;
#: smaller images take the every-tap form. There is nothing to gain below it, and XLA:CPU
#: (jaxlib 0.10.2) fails to compile the loop for some tiny shapes ("Unhandled opcode for
#: elemental IR emission: opt-barrier": e.g. 2x2 or 6x1 images, seen up to 6 pixels a side).
MIN_SIDE = 16


def by_image(branching: Callable[..., jax.Array], taps_of: Callable[[jax.Array], Any],
             every: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """``form(image, p, value)``: ``branching(image, p, value, taps)`` image by image over a
    batch, ``taps = taps_of(p)`` computed for the batch; ``every(image, p, value)`` gives the
    derivative."""

    @custom_vmap
    def one(image, p, value):
        taps = jax.tree.map(lambda t: t[0], jax.vmap(taps_of)(p[None]))
        return branching(image, p, value, taps)

    @one.def_vmap
    def batched(axis_size, in_batched, image, p, value):
        image, p, value = broadcast_unbatched(axis_size, in_batched, (image, p, value))
        taps = jax.vmap(taps_of)(p)
        return jax.lax.map(lambda a: branching(*a), (image, p, value, taps)), True

    @jax.custom_jvp
    def form(image, p, value):
        return one(image, p, value)

    @form.defjvp
    def jvp(primals, tangents):
        image, p, value = primals
        _, tangent = jax.jvp(lambda im: every(im, p, value), (image,), (tangents[0],))
        return form(image, p, value), tangent

    return form


def zoom_branching(image, canvas, value, taps):
    """``random_zoom_out`` on one image: a sample left alone (``canvas`` is the image) is
    copied (its taps weigh 1 on its own pixel: the resample's bits), the others read only the
    taps that weigh something."""
    out = taps[0].shape[0], taps[2].shape[0]
    sizes = _tap_sizes(max(taps[1].shape[1], taps[3].shape[1]))
    index = jnp.searchsorted(jnp.array(sizes, jnp.int32), _used(taps))
    place = (canvas[0], canvas[1])

    def cut(k):
        return lambda im: resample_canvas(im, place, _cut(taps, k), value)

    branches = [cut(k) for k in sizes]
    if out == image.shape[:2]:
        left_alone = jnp.all(canvas == jnp.array([0, 0, *out], canvas.dtype))
        index = jnp.where(left_alone, 0, index + 1)
        branches = [lambda im: im, *branches]
    return jax.lax.switch(index, branches, image)


def crop_branching(image, box, value, taps):
    """``random_iou_crop``'s crop and resize of one image: only the taps that weigh something,
    and the width pass only over the rows the height taps read (a quarter, half, three
    quarters or all of the image's rows)."""
    del box, value
    h = image.shape[0]
    iy = taps[0]
    sizes = _tap_sizes(max(taps[1].shape[1], taps[3].shape[1]))
    k_index = jnp.searchsorted(jnp.array(sizes, jnp.int32), _used(taps))
    k = jnp.array(sizes, jnp.int32)[k_index]
    lo = jnp.min(iy[:, 0])
    hi = jnp.max(jnp.where(jnp.arange(iy.shape[1]) < k, iy, 0))
    spans = sorted({max(1, -(-h * q // 4)) for q in (1, 2, 3)} | {h})
    r_index = jnp.searchsorted(jnp.array(spans, jnp.int32), hi - lo + 1)

    def branch(k, n):
        return lambda im: resample_crop(im, _cut(taps, k), (jnp.clip(lo, 0, h - n), n))

    branches = [branch(k, n) for k in sizes for n in spans]
    return jax.lax.switch(k_index * len(spans) + r_index, branches, image)


def jitter_branching(columns, p, value, taps):
    """``scale_jitter``'s resample of one image, given as its transpose ``columns`` ``(W,
    H, C)``; ``p``: ``resized`` then ``offset`` ((4,) int32). Only the taps that weigh
    something (moved to the first columns) are read: their count rounded up to 2, 3, 4, 6 or
    8 (:func:`augjax.kernels.window.tap_sizes`), a branch each, beyond that to a multiple of
    :data:`~augjax.kernels.window.CHUNK` summed in a loop (one branch: a shrink by 100x reads
    ~200 taps an output, which unrolled branches took minutes to compile). The width pass
    gathers whole columns of ``columns`` (:func:`augjax.kernels.window.sum_taps`), its output
    is transposed back and the height pass gathers whole rows: two switches on the same
    branch, the first's output kept in memory between them (fused, each height tap would
    compute the width pass again), with no optimisation barrier (XLA:CPU fails to compile
    one in this loop for tiny images)."""
    iy, wy, ix, wx = taps
    out = iy.shape[0], ix.shape[0]
    widest = max(wy.shape[1], wx.shape[1])
    sizes = [k for k in tap_sizes(widest) if k <= CHUNK]
    used = _used(taps)
    index = jnp.searchsorted(jnp.array(sizes, jnp.int32), used)
    integer = is_int(columns.dtype)

    def branches(index_, weight, last):
        def cut(k):
            return lambda x: last(sum_taps(x, index_[:, :k], weight[:, :k]))

        def loop(x):
            return last(sum_taps(x, index_, weight, chunks=(used + CHUNK - 1) // CHUNK))

        # beyond CHUNK the taps' columns are a multiple of CHUNK
        return [cut(k) for k in sizes] + ([loop] if widest > CHUNK else [])

    def rounded(x):  # ATen's uint8 passes round half up
        return jnp.floor(x + 0.5) if integer else x

    def clipped(x):
        return jnp.clip(jnp.floor(x + 0.5), 0.0, 255.0) if integer else x

    x = jax.lax.switch(index, branches(ix, wx, rounded), columns)  # (out[1], H, C)
    x = jax.lax.switch(index, branches(iy, wy, clipped), jnp.swapaxes(x, 0, 1))
    return fill_outside(x, columns.dtype, p[:2], p[2:], out, value)


def _tap_sizes(widest: int) -> list[int]:
    """The tap counts a branch may read: 3, 5, ... and ``widest``."""
    return sorted({*range(3, widest, 2), widest})


def _cut(taps, k: int):
    return tuple(t[:, :min(k, t.shape[1])] for t in taps)


def _used(taps) -> jax.Array:
    """1 + the last tap column that weighs something in any row, over both axes."""
    def used(weight):
        k = jnp.arange(weight.shape[1], dtype=jnp.int32)
        return jnp.max(jnp.where(jnp.any(weight != 0.0, axis=0), k + 1, 1))

    return jnp.maximum(used(taps[1]), used(taps[3]))
