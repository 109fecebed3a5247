"""Where a pixel of ``mosaic``'s output comes from (internal), written once.

The output is cut at the centre ``(yc, xc)`` into four tiles: top left (``q = 0``), top right
(1), bottom left (2), bottom right (3). Along one axis an output coordinate ``o`` lies in the
far tiles (bottom, right) where ``o >= centre``, at ``o - centre`` of that tile's image, and in
the near tiles (top, left) at ``o - centre + size``: each tile's image is shifted by its
:func:`tile_offset`. Both forms of the pixels (:func:`augjax.catalog.paste.mosaic_gather`'s
gather of pixels and :func:`augjax.catalog._mosaic_rows.mosaic_rows`'s copies of rows) and the
targets that follow (masks through the same gather; boxes and keypoints shifted by the
offsets) compute with these, elementwise in their array arguments; integer coordinates stay
exact, so every form reads the same pixel.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["inside", "tile_offset", "tile_source"]


def tile_offset(far, centre, size):
    """Along one axis, the offset of a tile's image in the output: ``centre`` for the far
    tiles (``far``: bottom, right), ``centre - size`` for the near ones."""
    return jnp.where(far, centre, centre - size)


def tile_source(out: jax.Array, centre, size: int) -> tuple[jax.Array, jax.Array]:
    """Along one axis, for output coordinates ``out``: whether each lies in the far tiles
    (``out >= centre``) and its coordinate in that tile's image (``out`` less the tile's
    :func:`tile_offset`; the image shows there only where :func:`inside`)."""
    far = out >= centre
    return far, out - tile_offset(far, centre, size)


def inside(source: jax.Array, size: int) -> jax.Array:
    """Whether the coordinates ``source`` lie in an image of ``size`` along their axis."""
    return (source >= 0) & (source < size)
