"""Correctly rounded float32 division, on every backend.

torchvision (ATen) divides exactly: a resize's ``scale = (float)in / out`` and an affine grid's
``theta / (W / 2)`` are IEEE quotients, and a nearest index is ``floor(i * scale)``, so one ulp
moves a pixel. XLA does not promise that: on CPU it rewrites a division by a constant or a
broadcast scalar into a multiplication by the reciprocal, and on CUDA its float32 division is not
correctly rounded at all (measured on an H200, JAX 0.11.2: 303,553 of the 1,048,576 quotients
``a / b`` for ``a, b`` in 1..1024 one ulp off; ``n / n`` under 1.0 for n = 33, 37, 41, ...).

:func:`exact_div` keeps the CPU's true division (a divisor XLA cannot fold); elsewhere it takes
XLA's quotient ``q`` (within 2 ulp) and picks, among ``q`` and its neighbours up to 2 ulp away,
the one whose residual ``a - c * b`` is smallest (:func:`nearest_quotient`). The residual is
computed without rounding error where it matters: ``c`` and ``b`` are split into 12-bit halves by
masking their bits (not by arithmetic that XLA could contract into FMAs), so each partial product
is exact in float32, and the leading one cancels ``a`` exactly (Sterbenz). The error left in the
residual is about ``2^-35 |a|``, far below the half ulp ``2^-25 |a|`` that separates two
candidates, so the pick is the IEEE quotient; exact ties (a quotient halfway between two floats)
keep the lower candidate. Outside magnitudes where those products are exact (``|a|`` in
``(2^-60, 2^120)``, the quotient in ``(2^-100, 2^100)``, finite ``b``: every image size and
coordinate), and for ``a == 0`` or ``b == 0``, the quotient is XLA's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax.kernels.platform import platform_dependent

__all__ = ["exact_div", "nearest_quotient"]

_F32 = jnp.float32
_HIGH = -(1 << 12)  # keeps the sign, exponent and top 11 mantissa bits (12 significant bits)


def _split(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``x == hi + lo`` exactly, ``hi`` with 12 significant bits, ``lo`` with at most 12."""
    bits = jax.lax.bitcast_convert_type(x, jnp.int32)
    hi = jax.lax.bitcast_convert_type(bits & jnp.int32(_HIGH), _F32)
    return hi, x - hi


def _residual(a: jax.Array, c: jax.Array, b_hi: jax.Array, b_lo: jax.Array) -> jax.Array:
    c_hi, c_lo = _split(c)
    return ((a - c_hi * b_hi) - c_hi * b_lo - c_lo * b_hi) - c_lo * b_lo


def exact_div(a, b) -> jax.Array:
    """``a / b`` in float32, rounded to nearest as IEEE (and numpy, and ATen) round it.

    ``a`` and ``b`` broadcast; either may be a Python number or a traced array.
    """
    a = jnp.asarray(a, _F32)
    b = jnp.asarray(b, _F32)
    a, b = jnp.broadcast_arrays(a, b)

    def xla(a, b):
        # ``0 * a`` keeps a divisor that is a constant elementwise (XLA may not fold it under
        # IEEE rules), so XLA's CPU backend keeps its true, correctly rounded division instead
        # of a reciprocal.
        return a / (b + 0.0 * jnp.where(jnp.isfinite(a), a, 0.0))

    def refined(a, b):
        return nearest_quotient(a, b, xla(a, b))

    # The CPU's division is already IEEE's: its programs stay as they were (the same fusions,
    # so the same contractions in the arithmetic around the quotient).
    return platform_dependent(a, b, cpu=xla, default=refined)


def nearest_quotient(a: jax.Array, b: jax.Array, q: jax.Array) -> jax.Array:
    """The IEEE quotient ``a / b``, given ``q`` within 2 ulp of it (float32, same shapes)."""
    b_hi, b_lo = _split(b)
    up, down = jnp.full_like(q, jnp.inf), jnp.full_like(q, -jnp.inf)
    c = jnp.nextafter(jnp.nextafter(q, down), down)
    best, err = c, jnp.abs(_residual(a, c, b_hi, b_lo))
    for _ in range(4):
        c = jnp.nextafter(c, up)
        e = jnp.abs(_residual(a, c, b_hi, b_lo))
        best, err = jnp.where(e < err, c, best), jnp.minimum(e, err)
    # Where the residual's partial products could underflow or overflow, ``q`` stays.
    mag_a, mag_q = jnp.abs(a), jnp.abs(q)
    ok = ((mag_a > 2.0**-60) & (mag_a < 2.0**120) & (mag_q > 2.0**-100) & (mag_q < 2.0**100)
          & jnp.isfinite(b))
    return jnp.where(ok, best, q)
