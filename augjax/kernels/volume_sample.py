"""Resampling one 3D volume ``(D, H, W, C)`` at voxel coordinates: the affine and elastic maps of
the volume ops, MONAI's conventions.

Coordinates are voxel indices in the array's spatial axis order ``(d, h, w)`` (``(z, y, x)``):
voxel ``i`` has its centre at ``i``. A map is *output to input* (what is sampled where), centred
on each volume's centre ``(size - 1) / 2`` as MONAI's ``create_grid`` centres its grid:

    input = A @ (output - c_out + displacement(output)) + c_in

with ``A`` a 4x4 homogeneous matrix (:func:`affine_matrix`: MONAI's ``AffineGrid`` order
``rotate @ shear @ translate @ scale``) and an optional elastic displacement field in output
space (MONAI's ``Rand3DElastic``: the field is added to the grid, then the affine is applied),
so an affine and an elastic deformation cost one resample (torchio#1052). The same coordinates
sample the images (trilinear, or cubic) and the masks (nearest): they move together by
construction.

Padding (``mode``): ``"zeros"`` (torch ``grid_sample``'s zeros: each of the 8 corners outside
the volume counts 0, SciPy's ``mode="grid-constant"``), ``"border"`` (the nearest edge voxel,
SciPy's ``mode="nearest"``). Nearest picks ``floor(c + 0.5)`` (SciPy's ``order=0`` away from
exact ties).

Cubic (``order=3``) is SciPy's ``map_coordinates(order=3, prefilter=True)`` in the same modes
(``"zeros"``: ``mode="grid-constant"``, ``"border"``: ``mode="nearest"``): the volume padded by
12 voxels per side (zeros, or its edge voxels), prefiltered into cubic B-spline coefficients
along each axis (SciPy's boundary for these modes: mirror for zeros, half-sample reflect for
the edge padding; here each axis's filter is the exact inverse of its B-spline matrix, one
``(n + 24, n)`` matrix with the padding folded in), then the 4 x 4 x 4 coefficients around
each point weighted by the cubic B-spline (coefficients beyond the padding: zero, or the
nearest one).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from augjax.kernels.boundary import barrier

__all__ = [
    "MODES",
    "affine_matrix",
    "coordinates",
    "invert_points",
    "sample",
    "spline_matrix",
]

#: The padding modes of :func:`sample`.
MODES = ("zeros", "border")

_HIGHEST = jax.lax.Precision.HIGHEST


def _rotation(angles: jax.Array) -> jax.Array:
    """MONAI's ``create_rotate(3, angles)``: ``Rx(a0) @ Ry(a1) @ Rz(a2)`` (radians), the first
    about spatial axis 0 (turning axes 1 and 2), and so on."""
    c, s = jnp.cos(angles), jnp.sin(angles)
    one, zero = jnp.ones_like(c[0]), jnp.zeros_like(c[0])
    rx = jnp.array([[one, zero, zero], [zero, c[0], -s[0]], [zero, s[0], c[0]]])
    ry = jnp.array([[c[1], zero, s[1]], [zero, one, zero], [-s[1], zero, c[1]]])
    rz = jnp.array([[c[2], -s[2], zero], [s[2], c[2], zero], [zero, zero, one]])
    return jnp.matmul(jnp.matmul(rx, ry, precision=_HIGHEST), rz, precision=_HIGHEST)


def affine_matrix(rotate: jax.Array, shear: jax.Array, translate: jax.Array,
                  scale: jax.Array) -> jax.Array:
    """The 4x4 output-to-input map (centred voxel coordinates) of MONAI's ``AffineGrid``:
    ``create_rotate(rotate) @ create_shear(shear) @ create_translate(translate) @
    create_scale(scale)``.

    Args:
        rotate: ``(3,)`` radians about spatial axes 0, 1, 2.
        shear: ``(6,)`` MONAI's coefficients ``[[1, s0, s1], [s2, 1, s3], [s4, s5, 1]]``.
        translate: ``(3,)`` voxels.
        scale: ``(3,)`` factors (2: the output shows twice the input's extent, halved).
    """
    rotate, shear, translate, scale = (jnp.asarray(v, jnp.float32)
                                       for v in (rotate, shear, translate, scale))
    sh = jnp.array([[1.0, shear[0], shear[1]], [shear[2], 1.0, shear[3]],
                    [shear[4], shear[5], 1.0]])
    linear = jnp.matmul(_rotation(rotate), sh, precision=_HIGHEST)
    m = jnp.zeros((4, 4), jnp.float32).at[3, 3].set(1.0)
    m = m.at[:3, :3].set(linear * scale[None, :])
    return m.at[:3, 3].set(jnp.matmul(linear, translate, precision=_HIGHEST))


def _centre(shape: tuple[int, ...]) -> jax.Array:
    return (jnp.asarray(shape[:3], jnp.float32) - 1.0) / 2.0


def coordinates(matrix: jax.Array, out_shape: tuple[int, int, int],
                in_shape: tuple[int, int, int], displacement: jax.Array | None = None
                ) -> jax.Array:
    """Input coordinates ``(3, D', H', W')`` of every output voxel: ``matrix @ (out - c_out +
    displacement) + c_in`` (``displacement`` ``(3, D', H', W')`` voxels, or None)."""
    grid = jnp.stack(jnp.meshgrid(*(jnp.arange(n, dtype=jnp.float32) for n in out_shape),
                                  indexing="ij"))
    grid = grid - _centre(out_shape)[:, None, None, None]
    if displacement is not None:
        grid = grid + displacement
    out = jnp.einsum("ij,jdhw->idhw", matrix[:3, :3], grid, precision=_HIGHEST)
    return out + (matrix[:3, 3] + _centre(in_shape))[:, None, None, None]


#: The padding of SciPy's spline prefilter in modes "grid-constant" and "nearest".
SPLINE_PAD = 12


def spline_matrix(n: int, mode: str) -> np.ndarray:
    """``(n + 24, n)`` float32: an axis of ``n`` voxels padded by :data:`SPLINE_PAD` per side
    (zeros for ``mode="zeros"``, the edge voxel for ``"border"``) and prefiltered into cubic
    B-spline coefficients, as SciPy's ``spline_filter1d`` does after its padding (its boundary
    for those modes: mirror ``c[-1] = c[1]`` after zeros, half-sample reflect ``c[-1] = c[0]``
    after edges): the inverse of the ``(1, 4, 1) / 6`` matrix with that boundary, in float64."""
    size = n + 2 * SPLINE_PAD
    a = (np.diag(np.full(size, 4.0)) + np.diag(np.ones(size - 1), 1)
         + np.diag(np.ones(size - 1), -1))
    if mode == "zeros":
        a[0, 1] = a[-1, -2] = 2.0
    else:
        a[0, 0] = a[-1, -1] = 5.0
    rows = np.clip(np.arange(size) - SPLINE_PAD, 0, n - 1)
    pad = np.eye(n)[rows]
    if mode == "zeros":
        pad[:SPLINE_PAD] = pad[-SPLINE_PAD:] = 0.0
    return (np.linalg.inv(a / 6.0) @ pad).astype(np.float32)


def _cubic_weights(t: jax.Array) -> jax.Array:
    """``(4, ...)``: the cubic B-spline's weights of the taps at ``floor(c) - 1 .. + 2``
    (``t = c - floor(c)``)."""
    s = 1.0 - t
    return jnp.stack([s * s * s / 6.0, (3.0 * t * t * t - 6.0 * t * t + 4.0) / 6.0,
                      (-3.0 * t * t * t + 3.0 * t * t + 3.0 * t + 1.0) / 6.0, t * t * t / 6.0])


def _cubic(volume: jax.Array, c: jax.Array, mode: str) -> jax.Array:
    """``volume`` ``(D, H, W, C)`` at points ``c`` ``(3, P)``, cubic (see the module)."""
    from augjax.kernels.volume_axes import separable

    coef = separable(volume, tuple(jnp.asarray(spline_matrix(n, mode))
                                   for n in volume.shape[:3]))
    shape = coef.shape[:3]
    flat = coef.reshape(-1, coef.shape[3])
    size = jnp.asarray(shape, jnp.int32)[:, None]
    c = c + SPLINE_PAD
    base = jnp.floor(c)
    weights = _cubic_weights(c - base)  # (4, 3, P)
    base = base.astype(jnp.int32) - 1
    out = jnp.zeros((c.shape[1], coef.shape[3]), jnp.float32)
    for i in range(4):
        for j in range(4):
            for k in range(4):
                idx = base + jnp.array([i, j, k], jnp.int32)[:, None]
                inside = jnp.all((idx >= 0) & (idx < size), axis=0)
                idx = jnp.clip(idx, 0, size - 1)
                lin = (idx[0] * shape[1] + idx[1]) * shape[2] + idx[2]
                w = weights[i, 0] * weights[j, 1] * weights[k, 2]
                if mode == "zeros":
                    w = jnp.where(inside, w, 0.0)
                out = out + w[:, None] * flat[lin]
    return out


def _padded_reads(volume: jax.Array, c: jax.Array, order: int) -> jax.Array:
    """``sample`` in mode ``"zeros"``, order 0 or 1, without a bounds test per corner: the
    volume padded by one zero voxel before and two after each axis, the points clamped to
    ``[-1, n]`` per axis (a point beyond reads only padding, as it reads only outside corners
    unpadded, weighted 0), one linear index per point, each corner a constant offset from it.
    The same terms in the same order as the tested form: the same values (CPU, 64^3 trilinear:
    12.7 -> 2.6 ms)."""
    shape, channels = volume.shape[:3], volume.shape[3]
    padded = jnp.pad(volume, ((1, 2), (1, 2), (1, 2), (0, 0)))
    sizes = padded.shape[:3]
    flat = padded.reshape(-1, channels)
    c = jnp.clip(c, -1.0, jnp.asarray(shape, jnp.float32)[:, None])
    if order == 0:
        i = jnp.floor(c + 0.5).astype(jnp.int32) + 1
        # the index kept in memory: fused into the gather, XLA:CPU computed it per element
        # outside its vector code (a 64^3 mask: 2.5 -> 1.2 ms; the same values)
        return flat[barrier((i[0] * sizes[1] + i[1]) * sizes[2] + i[2])]
    lo = jnp.floor(c)
    frac = c - lo
    i = lo.astype(jnp.int32) + 1
    base = (i[0] * sizes[1] + i[1]) * sizes[2] + i[2]
    out = jnp.zeros((c.shape[1], channels), jnp.float32)
    for corner in range(8):
        bits = ((corner >> 2) & 1, (corner >> 1) & 1, corner & 1)
        w = [frac[a] if bits[a] else 1.0 - frac[a] for a in range(3)]
        weight = w[0] * w[1] * w[2]
        offset = (bits[0] * sizes[1] + bits[1]) * sizes[2] + bits[2]
        out = out + weight[:, None] * flat[base + offset].astype(jnp.float32)
    return out


def sample(volume: jax.Array, coords: jax.Array, *, order: int = 1,
           mode: str = "zeros") -> jax.Array:
    """``volume`` ``(D, H, W, C)`` read at ``coords`` ``(3, ...)``: cubic (``order=3``),
    trilinear (``order=1``) or nearest (``order=0``), padded by ``mode`` (:data:`MODES`);
    float32 out for ``order`` 1 and 3, the volume's dtype for ``order=0``. Mode ``"zeros"``
    reads a padded volume (:func:`_padded_reads`); ``"border"`` clamps each corner."""
    shape = volume.shape[:3]
    flat = volume.reshape(-1, volume.shape[3])
    size = jnp.asarray(shape, jnp.int32)[:, None]
    lead = coords.shape[1:]
    c = coords.reshape(3, -1)
    if mode == "zeros" and order in (0, 1):
        return _padded_reads(volume, c, order).reshape(*lead, volume.shape[3])
    if order == 3:
        return _cubic(volume, c, mode).reshape(*lead, volume.shape[3])

    def read(idx: jax.Array) -> jax.Array:  # mode "border": each corner clamped to the edge
        idx = jnp.clip(idx, 0, size - 1)
        return flat[(idx[0] * shape[1] + idx[1]) * shape[2] + idx[2]]

    if order == 0:
        return read(jnp.floor(c + 0.5).astype(jnp.int32)).reshape(*lead, volume.shape[3])
    lo = jnp.floor(c)
    frac = c - lo
    lo = lo.astype(jnp.int32)
    out = jnp.zeros((c.shape[1], volume.shape[3]), jnp.float32)
    for corner in range(8):
        bits = jnp.array([(corner >> 2) & 1, (corner >> 1) & 1, corner & 1], jnp.int32)[:, None]
        weight = jnp.prod(jnp.where(bits == 1, frac, 1.0 - frac), axis=0)
        out = out + weight[:, None] * read(lo + bits).astype(jnp.float32)
    return out.reshape(*lead, volume.shape[3])


def invert_points(points: jax.Array, matrix: jax.Array, out_shape: tuple[int, int, int],
                  in_shape: tuple[int, int, int], displacement: jax.Array | None = None,
                  iterations: int = 4) -> jax.Array:
    """Where points ``(K, 3)`` of the input land in the output: the exact inverse of the affine
    map; with an elastic ``displacement`` (defined on the output grid, not invertible in closed
    form) ``iterations`` fixed-point steps ``p <- u - displacement(p)`` (``u`` the affine
    inverse), the displacement read trilinearly (border) at ``p``: exact where the field is
    constant, converging where its gradient is below 1."""
    linear, shift = matrix[:3, :3], matrix[:3, 3]
    u = jnp.linalg.solve(linear, (points - shift - _centre(in_shape)).T).T
    if displacement is None:
        return u + _centre(out_shape)
    field = jnp.moveaxis(displacement, 0, -1)  # (D', H', W', 3)
    p = u
    for _ in range(iterations):
        d = sample(field, (p + _centre(out_shape)).T, order=1, mode="border")
        p = u - d
    return p + _centre(out_shape)
