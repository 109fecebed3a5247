"""The CPU form of ``mosaic``'s pixels (internal): whole rows of tiles copied, not pixels.

The batch form (:func:`augjax.catalog.paste.mosaic_gather`) reads every output pixel through
its own index (one gather of 3-value slices, plus a per-pixel tile index in memory): on the
CPU that cost ~1.6 ms per 640x640x3 uint8 canvas, where copying its four tiles and filling
the rest is a few hundred microseconds of memory traffic. Here each sample (a loop over the
batch) fills its output once and writes two strips of ``K = min(2h, oh)`` rows by ``w``
columns: the left tiles (top-left above bottom-left) and the right ones. A strip's rows are
read as whole ``w``-pixel windows (one gather of ``(w, C)`` slices, one index per row) from
the images laid end to end with ``w`` fill pixels before and after: a row the tile does not
reach, or a tile that is -1, reads the fill pixels. Which tile and which row of its image an
output row shows is :mod:`augjax.catalog._mosaic_tiles`' rule, the gather's.

Cutting at the output's edges: a strip is ``w`` wide and sits at its tile's column, clamped
into the output; a tile cut at the left edge is read from ``w - visible`` pixels further on,
so the strip's tail shows the next row of the images (not the output's), and likewise a tile
cut at the right edge shows the row before at its head. That part always lies where the other
strip belongs (or, with the centre outside the output, beyond the visible tile, where a strip
of fill goes), so the cut strip is written first and the other one over it. This holds when
``ow >= 2 w``, so that at most one side is cut (:func:`fits`); other shapes keep the gather.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from augjax.catalog._mosaic_tiles import inside, tile_offset, tile_source

__all__ = ["fits", "mosaic_rows"]


def fits(h: int, w: int, oh: int, ow: int) -> bool:
    """Whether :func:`mosaic_rows` serves an ``(h, w)`` input and ``(oh, ow)`` output."""
    return h >= 1 and w >= 1 and oh >= 1 and ow >= 2 * w


def mosaic_rows(x: jax.Array, tiles: jax.Array, center: jax.Array, fill: jax.Array, *,
                oh: int, ow: int) -> jax.Array:
    """``mosaic_gather(x, tiles, center, oh, ow, fill)`` for :func:`fits` shapes, the same
    values: ``x`` (N, H, W, C), ``tiles`` (N, 4) int32, ``center`` (N, 2) int32, ``fill``
    (C,) in ``x``'s dtype."""
    n, h, w, c = x.shape
    k = min(2 * h, oh)
    pad = jnp.broadcast_to(fill, (w, c))
    source = jnp.concatenate([pad, x.reshape(n * h * w, c), pad])  # w fill pixels each end

    def strip(top, bottom_tile, visible, yc, a, shift):
        """K rows from output row ``a``: window ``shift`` pixels into each row of ``top``
        (above ``yc``) or ``bottom_tile``; fill where the row or the tile shows nothing."""
        bottom, r = tile_source(a + jnp.arange(k, dtype=jnp.int32), yc, h)
        t = jnp.where(bottom, bottom_tile, top)
        ok = inside(r, h) & (t >= 0) & visible
        start = jnp.where(ok, w + (t * h + r) * w + shift, 0)
        return jax.vmap(lambda s: lax.dynamic_slice(source, (s, 0), (w, c)))(start)

    def sample(i, out):
        t = tiles[i]
        yc, xc = center[i, 0], center[i, 1]
        a = jnp.clip(yc - h, 0, oh - k)
        # Each side's tile column; a side outside the output becomes a strip of fill next
        # to the other tile's far end (where a cut tile's strip shows the images' next row).
        x_left, x_right = tile_offset(False, xc, w), tile_offset(True, xc, w)
        seen_left = (x_left < ow) & (x_right > 0)
        seen_right = (x_right < ow) & (x_right + w > 0)
        col_left = jnp.clip(jnp.where(xc < 0, xc + w, x_left), 0, ow - w)
        col_right = jnp.clip(jnp.where(xc > ow, xc - 2 * w, x_right), 0, ow - w)
        left = (t[0], t[2], seen_left, col_left, col_left - x_left)
        right = (t[1], t[3], seen_right, col_right, col_right - x_right)
        right_first = (xc < 0) | ((xc > ow - w) & (xc <= ow))
        order = [jax.tree.map(lambda r, l_: jnp.where(right_first, r, l_), right, left),
                 jax.tree.map(lambda r, l_: jnp.where(right_first, l_, r), right, left)]
        for top, bot, seen, col, shift in order:
            block = strip(top, bot, seen, yc, a, jnp.clip(shift, -w, w))
            out = lax.dynamic_update_slice(out, block[None], (i, a, col, 0))
        return out

    out = jnp.broadcast_to(fill, (n, oh, ow, c))
    return lax.fori_loop(0, n, sample, out)
