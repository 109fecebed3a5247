"""Separable operations on one 3D volume ``(D, H, W, C)`` as one matrix per axis: gaussian
blur (SciPy's ``gaussian_filter``), the smoothing of an elastic field (MONAI's
``GaussianFilter``), and low-resolution simulation (downsample nearest, upsample linear, as
batchgeneratorsv2's ``SimulateLowResolutionTransform``), all with traced per-sample sizes and
sigmas and static shapes.

A matrix ``M`` ``(n, n)`` applied along an axis is ``out[i] = sum_j M[i, j] x[j]``: a
correlation with edge handling folded in (``mode``: ``"reflect"`` SciPy's half-sample
symmetric ``d c b a | a b c d``, ``"constant"`` zeros, ``"nearest"`` the edge voxel), a
resize, or their product. Products run at full float32 precision (``Precision.HIGHEST``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = [
    "along",
    "gaussian_matrix",
    "lowres_matrix",
    "max_radius",
    "radius",
    "separable",
]

_HIGHEST = jax.lax.Precision.HIGHEST


def radius(sigma: float, truncate: float) -> int:
    """SciPy's kernel radius ``int(truncate * sigma + 0.5)``."""
    return int(truncate * float(sigma) + 0.5)


def _source(index: jax.Array, n: int, mode: str) -> tuple[jax.Array, jax.Array]:
    """(the voxel index read for a tap at ``index``, whether it counts) under ``mode``."""
    if mode == "reflect":
        period = index % (2 * n)
        return jnp.where(period < n, period, 2 * n - 1 - period), jnp.ones(index.shape, bool)
    if mode == "nearest":
        return jnp.clip(index, 0, n - 1), jnp.ones(index.shape, bool)
    return jnp.clip(index, 0, n - 1), (index >= 0) & (index < n)


def gaussian_matrix(n: int, sigma: jax.Array, max_radius: int, *, truncate: float = 4.0,
                    mode: str = "reflect") -> jax.Array:
    """``(n, n)``: a 1D gaussian of ``sigma`` (traced) along an axis of length ``n``, SciPy's
    ``gaussian_filter1d`` weights (``exp(-x^2 / 2 sigma^2)`` on ``|x| <= int(truncate * sigma +
    0.5)``, normalised) with ``max_radius`` the largest radius a sigma of the op can have.
    ``sigma <= 0`` gives the identity."""
    sigma = jnp.asarray(sigma, jnp.float32)
    taps = jnp.arange(-max_radius, max_radius + 1, dtype=jnp.float32)
    r = jnp.floor(truncate * sigma + 0.5)
    safe = jnp.maximum(sigma, 1e-6)
    w = jnp.where(jnp.abs(taps) <= r, jnp.exp(-0.5 * (taps / safe) ** 2), 0.0)
    w = w / jnp.sum(w)
    w = jnp.where(sigma > 0, w, (taps == 0).astype(jnp.float32))
    rows = jnp.arange(n)[:, None] + jnp.arange(-max_radius, max_radius + 1)[None, :]
    src, counts = _source(rows, n, mode)
    weights = jnp.where(counts, w[None, :], 0.0)
    onehot = jax.nn.one_hot(src, n, dtype=jnp.float32)  # (n, taps, n)
    return jnp.einsum("it,itj->ij", weights, onehot, precision=_HIGHEST)


def lowres_matrix(n: int, m: jax.Array) -> jax.Array:
    """``(n, n)``: down to ``m`` voxels (traced, ``1 <= m <= n``) by nearest
    (``floor((k + 0.5) * n / m)``, torch's ``"nearest-exact"``), then back up to ``n`` by
    linear interpolation with ``align_corners=False`` (torch's ``"trilinear"`` per axis: source
    ``(i + 0.5) * m / n - 0.5``, clamped at 0 and at ``m - 1``)."""
    m = jnp.asarray(m, jnp.float32)
    k = jnp.arange(n, dtype=jnp.float32)
    pick = jnp.clip(jnp.floor((k + 0.5) * n / m), 0, n - 1).astype(jnp.int32)
    down = jnp.where((k < m)[:, None], jax.nn.one_hot(pick, n, dtype=jnp.float32), 0.0)
    src = jnp.maximum((k + 0.5) * m / n - 0.5, 0.0)
    lo = jnp.floor(src)
    frac = src - lo
    lo = jnp.minimum(lo, m - 1).astype(jnp.int32)
    hi = jnp.minimum(lo + 1, (m - 1).astype(jnp.int32))
    up = ((1.0 - frac)[:, None] * jax.nn.one_hot(lo, n, dtype=jnp.float32)
          + frac[:, None] * jax.nn.one_hot(hi, n, dtype=jnp.float32))
    return jnp.matmul(up, down, precision=_HIGHEST)


def along(x: jax.Array, matrix: jax.Array, axis: int) -> jax.Array:
    """``matrix`` ``(n, n)`` (or one per channel ``(C, n, n)``) applied along spatial ``axis``
    (0, 1, 2) of ``x`` ``(D, H, W, C)``."""
    letters = "dhw"
    src = letters.replace(letters[axis], "j")
    out = letters
    if matrix.ndim == 3:
        spec = f"c{letters[axis]}j,{src}c->{out}c"
    else:
        spec = f"{letters[axis]}j,{src}c->{out}c"
    return jnp.einsum(spec, matrix, x, precision=_HIGHEST)


def separable(x: jax.Array, matrices: tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
    """``x`` ``(D, H, W, C)`` through one matrix per spatial axis (in float32)."""
    x = x.astype(jnp.float32)
    for axis, m in enumerate(matrices):
        x = along(x, m, axis)
    return x


def max_radius(sigmas: tuple[float, ...], truncate: float) -> int:
    """The largest kernel radius of sigmas up to ``max(sigmas)``."""
    return radius(max(sigmas), truncate) if sigmas else 0

