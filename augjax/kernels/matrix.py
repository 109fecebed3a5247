"""Per-sample 3x3 geometric matrices: what a geometric op's ``matrix`` gives, and a warp by one.

Convention (kornia's, in torchvision's pixel grid): a matrix ``M`` maps a point ``(x, y, 1)`` of
the op's input (pixel coordinates: ``x`` to the right, ``y`` down, pixel ``j``'s centre at ``j``)
to where it lands in the op's output. Chains compose by multiplication (``M2 @ M1``), and
:func:`warp_by` with ``inv(M)`` undoes an op (what :func:`augjax.invert` does).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.products import matmul, product
from augjax.kernels.warp import sample

__all__ = [
    "identity",
    "mirror",
    "translation",
    "from_centered_inverse",
    "from_perspective_coefficients",
    "from_pil_coefficients",
    "crop_resize_matrix",
    "warp_by",
]

_F32 = jnp.float32


def identity() -> jax.Array:
    """The 3x3 identity (float32)."""
    return jnp.eye(3, dtype=_F32)


def translation(tx, ty) -> jax.Array:
    """The matrix that moves every point by ``(tx, ty)`` pixels."""
    one, zero = jnp.float32(1.0), jnp.float32(0.0)
    tx, ty = jnp.asarray(tx, _F32), jnp.asarray(ty, _F32)
    return jnp.stack([jnp.stack([one, zero, tx]), jnp.stack([zero, one, ty]),
                      jnp.stack([zero, zero, one])])


def mirror(horizontal, vertical, height: int, width: int) -> jax.Array:
    """The matrix of mirroring an image of ``height`` x ``width`` pixels left-right where
    ``horizontal`` and top-bottom where ``vertical`` (bools, traced is fine)."""
    def axis(on, size: int, i: int) -> jax.Array:
        m = jnp.eye(3, dtype=jnp.float32)
        m = m.at[i, i].set(jnp.where(on, -1.0, 1.0))
        return m.at[i, 2].set(jnp.where(on, size - 1.0, 0.0))

    return matmul(axis(vertical, height, 1), axis(horizontal, width, 0))


def _rows(m6: jax.Array) -> jax.Array:
    m = jnp.asarray(m6, _F32)
    return jnp.stack([m[:3], m[3:6], jnp.array([0.0, 0.0, 1.0], _F32)])


def from_centered_inverse(m6: jax.Array, height: int, width: int) -> jax.Array:
    """The forward matrix of an affine warp given as :func:`augjax.kernels.warp.warp_affine`
    takes it: the output-to-input map ``(6,)`` in coordinates centred on the image centre."""
    c = translation(-(width - 1) / 2.0, -(height - 1) / 2.0)  # pixel -> centred
    inverse = product(jnp.linalg.inv(c), _rows(m6), c)  # output pixel -> input pixel
    return jnp.linalg.inv(inverse)


def from_perspective_coefficients(coeffs: jax.Array) -> jax.Array:
    """The forward matrix of a perspective warp given by torchvision's 8 coefficients (the map
    from output pixel corners ``(x + 0.5, y + 0.5)`` to input coordinates, as
    :func:`augjax.kernels.warp.warp_perspective` takes them)."""
    c = jnp.concatenate([jnp.asarray(coeffs, _F32), jnp.ones((1,), _F32)]).reshape(3, 3)
    half = translation(0.5, 0.5)
    inverse = product(jnp.linalg.inv(half), c, half)
    return jnp.linalg.inv(inverse)


def from_pil_coefficients(coeffs: jax.Array) -> jax.Array:
    """The forward matrix of a PIL affine transform given by its data ``(a, b, c, d, e, f)``
    (the output-to-input map in PIL's coordinates, where pixel ``j``'s centre is at ``j + 0.5``,
    as :func:`augjax.kernels.warp_pil.warp_affine_pil` takes it)."""
    half = translation(0.5, 0.5)
    inverse = product(jnp.linalg.inv(half), _rows(coeffs), half)
    return jnp.linalg.inv(inverse)


def crop_resize_matrix(top, left, crop_h, crop_w, out_h: int, out_w: int) -> jax.Array:
    """The forward matrix of cropping the box ``(top, left, crop_h, crop_w)`` and resizing it
    to ``(out_h, out_w)`` with ``align_corners=False`` (``x' = (x - left + 0.5) * out_w / crop_w
    - 0.5``)."""
    sx = jnp.float32(out_w) / jnp.asarray(crop_w, _F32)
    sy = jnp.float32(out_h) / jnp.asarray(crop_h, _F32)
    zero, one = jnp.float32(0.0), jnp.float32(1.0)
    tx = (0.5 - jnp.asarray(left, _F32)) * sx - 0.5
    ty = (0.5 - jnp.asarray(top, _F32)) * sy - 0.5
    return jnp.stack([jnp.stack([sx, zero, tx]), jnp.stack([zero, sy, ty]),
                      jnp.stack([zero, zero, one])])


def warp_by(image: jax.Array, matrix: jax.Array, size: tuple[int, int],
            interpolation: str = "bilinear", fill: jax.Array | None = None) -> jax.Array:
    """Warps one HWC ``image`` by the forward ``matrix`` to an output of ``size`` (height,
    width): output pixel ``q`` takes the input at ``inv(matrix) @ q`` (bilinear or nearest,
    torchvision's fill rule: ``fill`` a ``(C,)`` vector in the image's scale, or None for
    zeros)."""
    h, w = size
    src = jnp.linalg.inv(jnp.asarray(matrix, _F32))
    xs = jnp.broadcast_to(jnp.arange(w, dtype=_F32)[None, :], (h, w))
    ys = jnp.broadcast_to(jnp.arange(h, dtype=_F32)[:, None], (h, w))
    den = src[2, 0] * xs + src[2, 1] * ys + src[2, 2]
    x = (src[0, 0] * xs + src[0, 1] * ys + src[0, 2]) / den
    y = (src[1, 0] * xs + src[1, 1] * ys + src[1, 2]) / den
    return sample(image, x, y, interpolation, fill)
