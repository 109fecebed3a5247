"""torchvision ``grid_sample``'s per-pixel formulas (``align_corners=False``), written once.

Every form that samples by torchvision's rule calls these: :func:`augjax.kernels.warp.sample`
(XLA, whole images) and the Pallas forms (:mod:`augjax.kernels.sample_pallas`, the policy
layer's warps), on a tile's pixels. They are elementwise in their array arguments (plain
``jnp`` arithmetic, which Pallas lowers as it is), so each form computes the same operations
in the same order; reading the taps from the image is the form's own.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.division import exact_div

__all__ = ["affine_grid", "bilinear_taps", "centred", "elastic_source", "fill_blend",
           "grid_rows", "nearest_tap", "tap", "unnormalize"]

_F32 = jnp.float32


def centred(index: jax.Array, size: int) -> jax.Array:
    """``_affine_grid``'s base coordinate of the integer pixel ``index``: ``index - (size - 1)
    / 2`` in float32."""
    return index.astype(_F32) - (size - 1) / 2.0


def grid_rows(m, h: int, w: int) -> tuple[jax.Array, jax.Array]:
    """``_affine_grid``'s theta rows: the first three and the last three of the ``(6,)`` (or
    more) coefficients ``m`` divided by ``W / 2`` and ``H / 2`` (correctly rounded)."""
    return exact_div(m[0:3], 0.5 * w), exact_div(m[3:6], 0.5 * h)


def affine_grid(xs: jax.Array, ys: jax.Array, rx, ry) -> tuple[jax.Array, jax.Array]:
    """``_affine_grid``: the normalised source of the centred coordinates ``xs``, ``ys``, with
    ``rx``, ``ry`` the inverse matrix's rows divided by ``W / 2`` and ``H / 2``."""
    return xs * rx[0] + ys * rx[1] + rx[2], xs * ry[0] + ys * ry[1] + ry[2]


def unnormalize(g: jax.Array, size: int) -> jax.Array:
    """grid_sample's pixel coordinate of the normalised ``g`` (ATen GridSamplerKernel:
    ``(g + 1) * size / 2 - 0.5``)."""
    return (g + 1.0) * (size / 2.0) - 0.5


def elastic_source(g: jax.Array, size: int) -> jax.Array:
    """torchvision ``F.elastic``'s pixel coordinate ``((g + 1) * size - 1) / 2`` of the grid
    value ``g`` (the identity grid plus the displacement)."""
    return ((g + 1.0) * size - 1.0) * 0.5


def tap(ix: jax.Array, iy: jax.Array, h: int, w: int) -> tuple[jax.Array, jax.Array]:
    """The tap at the whole (float) coordinates ``ix``, ``iy``: its pixel index ``row * w +
    col`` (int32, clamped into the image) and whether it lies inside."""
    inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
    row = jnp.clip(iy, 0, h - 1).astype(jnp.int32)
    return row * w + jnp.clip(ix, 0, w - 1).astype(jnp.int32), inside


def nearest_tap(x: jax.Array, y: jax.Array, h: int, w: int,
                rnd=jnp.round) -> tuple[jax.Array, jax.Array]:
    """The nearest tap of the source coordinates ``x``, ``y``: :func:`tap` of their rounding
    half to even (ATen's nearbyint; ``rnd`` is that rounding, a form's own where ``jnp.round``
    does not lower)."""
    return tap(rnd(x), rnd(y), h, w)


def bilinear_taps(x: jax.Array, y: jax.Array, h: int, w: int):
    """The four bilinear taps of the source coordinates ``x``, ``y``: ``([(index, weight)] * 4,
    mask)`` in the order north-west, north-east, south-west, south-east, a tap outside the
    image weighing 0, and ``mask`` the sum of the weights (torchvision's warped ones channel).
    The value is ``sum(image[index] * weight)`` in that order."""
    x0, y0 = jnp.floor(x), jnp.floor(y)
    e_w = x - x0  # weight of the east column
    e_s = y - y0  # weight of the south row
    weights = ((1.0 - e_s) * (1.0 - e_w), (1.0 - e_s) * e_w, e_s * (1.0 - e_w), e_s * e_w)
    taps = []
    mask = 0.0
    for (dx, dy), wt in zip(((0, 0), (1, 0), (0, 1), (1, 1)), weights, strict=True):
        index, inside = tap(x0 + dx, y0 + dy, h, w)
        wt = jnp.where(inside, wt, 0.0)
        taps.append((index, wt))
        mask = mask + wt
    return taps, mask


def fill_blend(value: jax.Array, fill, mask: jax.Array) -> jax.Array:
    """torchvision's bilinear fill rule: ``mask * (value - fill) + fill``, computed as
    ``(value - fill) * mask + fill``."""
    return (value - fill) * mask + fill
