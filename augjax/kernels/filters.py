"""Padding and linear filtering of one HWC image: reflect-101 and edge padding, 2D and separable
cross-correlation, torchvision's 1D Gaussian kernel.

Borders are reflect-101 (``dcb|abcd|cba``: torch ``pad(mode="reflect")``, scipy
``mode="mirror"``, OpenCV ``BORDER_REFLECT_101``) unless a function says otherwise; pads may be
larger than the image (the reflection repeats). Pad widths and kernel sizes are static; kernel
values (a Gaussian's sigma, a motion line's angle) may be traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from augjax.kernels.partition import partitioned
from augjax.kernels.platform import platform_dependent
from augjax.errors import InputError
from augjax.kernels.pixels import tap_sum

__all__ = [
    "odd_size",
    "reflect_index",
    "pad_reflect",
    "pad_edge",
    "correlate",
    "correlate1d",
    "correlate_separable",
    "correlate_planes",
    "box_sum",
    "median_filter",
    "gaussian_kernel1d",
]


def reflect_index(index, n: int):
    """Maps any integer index into ``[0, n)`` by reflection without repeating the edge
    (reflect-101), for pads of any size (the pattern repeats with period ``2n - 2``). NumPy in,
    NumPy out; JAX arrays give JAX arrays."""
    if n == 1:
        return index * 0
    period = 2 * n - 2
    m = index % period
    return np.minimum(m, period - m) if isinstance(m, np.ndarray) else jnp.minimum(m, period - m)


def _pad_axis(x: jax.Array, before: int, after: int, axis: int, mode: str) -> jax.Array:
    """Pads one axis reflect-101 (``mode="reflect"``) or by repeating the edge (``"edge"``).
    Slices and reversals where the pad is shorter than the axis (no gather), else a gather of
    the reflected indices."""
    n = x.shape[axis]
    if before == 0 and after == 0:
        return x
    if mode == "reflect" and max(before, after) < n:
        lo = jax.lax.rev(jax.lax.slice_in_dim(x, 1, before + 1, axis=axis), (axis,))
        hi = jax.lax.rev(jax.lax.slice_in_dim(x, n - 1 - after, n - 1, axis=axis), (axis,))
        return jnp.concatenate([lo, x, hi], axis=axis)
    if mode == "edge":
        first = jax.lax.slice_in_dim(x, 0, 1, axis=axis)
        last = jax.lax.slice_in_dim(x, n - 1, n, axis=axis)
        shape = list(x.shape)
        parts = []
        if before:
            shape[axis] = before
            parts.append(jnp.broadcast_to(first, tuple(shape)))
        parts.append(x)
        if after:
            shape[axis] = after
            parts.append(jnp.broadcast_to(last, tuple(shape)))
        return jnp.concatenate(parts, axis=axis)
    idx = reflect_index(np.arange(-before, n + after), n)
    return jnp.take(x, idx, axis=axis)


def pad_reflect(x: jax.Array, ph: int, pw: int) -> jax.Array:
    """Pads an ``(H, W, C)`` image by ``ph`` rows and ``pw`` columns on each side, reflect-101."""
    return _pad_axis(_pad_axis(x, ph, ph, 0, "reflect"), pw, pw, 1, "reflect")


def pad_edge(x: jax.Array, ph: int, pw: int) -> jax.Array:
    """Pads an ``(H, W, C)`` image by repeating its border pixels (OpenCV ``BORDER_REPLICATE``,
    scipy ``mode="nearest"``)."""
    return _pad_axis(_pad_axis(x, ph, ph, 0, "edge"), pw, pw, 1, "edge")


def correlate(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """2D cross-correlation of a float ``(H, W, C)`` image with one ``(kh, kw)`` kernel (odd
    sizes) applied to every channel, reflect-101 borders, same-size output (torch ``conv2d``
    after ``pad(mode="reflect")``; scipy ``ndimage.correlate(mode="mirror")``)."""
    kh, kw = kernel.shape
    padded = pad_reflect(x, kh // 2, kw // 2)
    c = x.shape[-1]
    rhs = jnp.broadcast_to(jnp.asarray(kernel, jnp.float32)[:, :, None, None], (kh, kw, 1, c))
    out = jax.lax.conv_general_dilated(
        padded[None],
        rhs,
        window_strides=(1, 1),
        padding="VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=c,
        precision=jax.lax.Precision.HIGHEST,
    )
    return out[0]


def _shifted(padded: jax.Array, size: int, taps: int, axis: int) -> list[jax.Array]:
    """The ``taps`` windows ``padded[t : t + size]`` along ``axis``."""
    return [jax.lax.slice_in_dim(padded, t, t + size, axis=axis) for t in range(taps)]


def _windows(x: jax.Array, before: int, after: int, axis: int, mode: str) -> list[jax.Array]:
    """The ``before + after + 1`` shifted copies of an ``(H, W, C)`` image along ``axis`` (0 rows,
    1 columns), ``out[t][i] = padded[i + t]``, each of ``x``'s shape.

    Column shifts are taken on the ``(H, W * C)`` view (a shift of one pixel is ``C`` values),
    so XLA's CPU loops run over long contiguous rows instead of an innermost axis of 3.
    """
    h, w, c = x.shape
    padded = _pad_axis(x, before, after, axis, mode)
    taps = before + after + 1
    if axis == 0:
        flat = padded.reshape(padded.shape[0], w * c)
        return [v.reshape(h, w, c) for v in _shifted(flat, h, taps, 0)]
    flat = padded.reshape(h, padded.shape[1] * c)
    return [jax.lax.slice_in_dim(flat, t * c, (t + w) * c, axis=1).reshape(h, w, c)
            for t in range(taps)]


def correlate1d(x: jax.Array, kernel: jax.Array, axis: int) -> jax.Array:
    """1D cross-correlation of a float ``(H, W, C)`` image along ``axis`` (0 rows, 1 columns)
    with an odd ``kernel`` (static length, values may be traced), reflect-101 borders,
    same-size output: ``sum_t kernel[t] * x[i + t - r]`` summed in tap order, as shifted views
    of the padded image (no convolution primitive: XLA fuses the taps into one loop)."""
    kernel = jnp.asarray(kernel, jnp.float32)
    taps = kernel.shape[0]
    r = taps // 2
    return tap_sum(_windows(x, r, r, axis, "reflect"), [kernel[t] for t in range(taps)])


def correlate_separable(x: jax.Array, k_rows: jax.Array, k_cols: jax.Array) -> jax.Array:
    """Separable correlation: ``k_cols`` along the width, then ``k_rows`` along the height
    (reflect-101 borders); :func:`correlate` with ``outer(k_rows, k_cols)`` up to rounding.

    Two :func:`correlate1d` passes, the first stored before the second reads it: fused, XLA
    would compute each first-pass value once per tap of the second (elastic_transform's 41-tap
    blur of its displacement field: 0.99 -> 0.64 ms on an H200 at B=256; 5-tap Gaussian blurs
    unchanged). On CUDA a float32 image takes the Pallas kernels of
    :mod:`augjax.kernels._correlate_pallas` (the same sums, in the same order)."""

    xla = _correlate_separable_xla
    if x.dtype != jnp.float32 or partitioned() or not _pallas_available():
        return xla(x, k_rows, k_cols)

    def pallas(x, kr, kc):
        from augjax.kernels._correlate_pallas import correlate_separable_kernel

        return correlate_separable_kernel(x, kr, kc)

    return platform_dependent(x, jnp.asarray(k_rows, jnp.float32),
                              jnp.asarray(k_cols, jnp.float32), cpu=xla, cuda=pallas,
                              default=xla)


def correlate_planes(planes, kernels, scale) -> jax.Array:
    """Each ``(H, W)`` plane correlated separably with its own ``(k_rows, k_cols)`` (as
    :func:`correlate_separable`) and multiplied by its ``scale``, the planes stacked as the
    channels of an ``(H, W, C)`` result: ``stack([correlate_separable(p, kr, kc) * s])``, the
    same values (elastic_transform's displacement: two blurred noise fields, scaled).

    On CUDA float32 planes (two or four) take the Pallas kernels of
    :mod:`augjax.kernels._correlate_pallas`: each width pass writes back in the plane's layout
    and one kernel runs the height passes, scales and interleaves (no transpose or stack pass)."""
    planes = [jnp.asarray(p) for p in planes]
    shapes = {p.shape for p in planes}
    if not planes or len(shapes) != 1 or len(planes[0].shape) != 2:
        raise InputError("correlate_planes: planes must be one or more (H, W) arrays of one "
                         f"shape, got shapes {[p.shape for p in planes]}", argument="planes")
    kernels = [(jnp.asarray(kr, jnp.float32), jnp.asarray(kc, jnp.float32))
               for kr, kc in kernels]
    scale = jnp.asarray(scale, jnp.float32)
    if len(kernels) != len(planes):
        raise InputError(f"correlate_planes: one (k_rows, k_cols) pair per plane: "
                         f"{len(planes)} planes, got {len(kernels)} kernel pairs",
                         argument="kernels")
    if scale.shape != (len(planes),):
        raise InputError(f"correlate_planes: one scale per plane: {len(planes)} planes, got a "
                         f"scale of shape {scale.shape}", argument="scale")
    for kr, kc in kernels:
        if kr.ndim != 1 or kc.ndim != 1 or kr.shape[0] % 2 == 0 or kc.shape[0] % 2 == 0:
            raise InputError("correlate_planes: kernels must be 1-D of odd length, got "
                             f"{kr.shape} and {kc.shape}", argument="kernels")

    def xla(scale, *args):
        out = [_correlate_separable_xla(p[..., None], kr, kc)[..., 0] * scale[i]
               for i, (p, kr, kc) in enumerate(zip(args[0::3], args[1::3], args[2::3]))]
        return jnp.stack(out, axis=-1)

    args = [a for p, (kr, kc) in zip(planes, kernels, strict=True) for a in (p, kr, kc)]
    if (any(p.dtype != jnp.float32 for p in planes) or len(planes) not in (2, 4)
            or partitioned() or not _pallas_available()):
        return xla(scale, *args)

    def pallas(scale, *args):
        from augjax.kernels._correlate_pallas import correlate_planes_kernel

        return correlate_planes_kernel(list(args[0::3]), list(zip(args[1::3], args[2::3])),
                                       scale)

    return platform_dependent(scale, *args, cpu=xla, cuda=pallas, default=xla)


def _correlate_separable_xla(x, k_rows, k_cols):
    return correlate1d(jax.lax.optimization_barrier(correlate1d(x, k_cols, axis=1)), k_rows,
                       axis=0)


def _pallas_available() -> bool:
    from augjax.kernels._correlate_pallas import AVAILABLE

    return AVAILABLE


def box_sum(x: jax.Array, kh: int, kw: int) -> jax.Array:
    """The sum of the ``kh`` x ``kw`` window (odd sizes) around each value of an ``(H, W, C)``
    image, reflect-101 borders, in ``x``'s dtype (exact for integers that do not overflow:
    pass int32 levels, or uint16 for uint8 levels when ``255 * kh * kw < 65536``). Two 1D
    passes of shifted views."""
    for axis, k in ((1, kw), (0, kh)):
        views = _windows(x, k // 2, k // 2, axis, "reflect")
        acc = views[0]
        for v in views[1:]:
            acc = acc + v
        x = acc
    return x


def _batcher_pairs(n: int) -> list[tuple[int, int]]:
    """Batcher's odd-even merge sort network on the next power of two >= ``n``, without the
    comparators that touch an index >= ``n`` (those inputs act as +inf, so those comparators
    never swap)."""
    size = 1
    while size < n:
        size *= 2
    pairs = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < n:
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


def _median3(a, b, c):
    return jnp.maximum(jnp.minimum(a, b), jnp.minimum(jnp.maximum(a, b), c))


def median_filter(x: jax.Array, k: int) -> jax.Array:
    """The median of the ``k`` x ``k`` window (odd ``k``) around each value of an ``(H, W, C)``
    image, per channel, with replicated borders (OpenCV ``medianBlur``, scipy
    ``median_filter(mode="nearest")``); exact in any dtype (the median is one of the values).

    Built from elementwise ``minimum``/``maximum`` of shifted views, no sort: for ``k = 3``
    each column of three is sorted once and the median of the window is
    ``med3(max(lows), med3(mids), min(highs))`` of its three sorted columns; for ``k <= 7``
    a Batcher sorting network over the ``k * k`` views, of which only the comparators that
    reach the middle output are kept; larger windows sort the stack of views.
    """
    r = k // 2
    if k == 1:
        return x
    if k == 3:
        a, b, c = _windows(x, 1, 1, 0, "edge")
        lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
        mid = jnp.minimum(hi, c)
        hi = jnp.maximum(hi, c)
        lo, mid = jnp.minimum(lo, mid), jnp.maximum(lo, mid)  # each column sorted: lo <= mid <= hi
        lo3 = _windows(lo, 1, 1, 1, "edge")
        mid3 = _windows(mid, 1, 1, 1, "edge")
        hi3 = _windows(hi, 1, 1, 1, "edge")
        low = jnp.maximum(jnp.maximum(lo3[0], lo3[1]), lo3[2])
        high = jnp.minimum(jnp.minimum(hi3[0], hi3[1]), hi3[2])
        return _median3(low, _median3(*mid3), high)
    views = [v for rows in _windows(x, r, r, 0, "edge") for v in _windows(rows, r, r, 1, "edge")]
    if k > 7:
        return jnp.sort(jnp.stack(views), axis=0)[(k * k) // 2]
    for i, j in _batcher_pairs(k * k):  # unused comparators are dead code for XLA
        views[i], views[j] = jnp.minimum(views[i], views[j]), jnp.maximum(views[i], views[j])
    return views[(k * k) // 2]


def gaussian_kernel1d(size: int, sigma) -> jax.Array:
    """torchvision's 1D Gaussian (``_get_gaussian_kernel1d``): ``exp(-t^2 / (2 sigma^2))`` at
    ``t = -(size-1)/2 .. (size-1)/2``, normalised to sum 1; ``sigma`` may be traced."""
    t = jnp.arange(size, dtype=jnp.float32) - (size - 1) / 2.0
    logits = -((t / jnp.asarray(sigma, jnp.float32)) ** 2) / 2.0
    return jax.nn.softmax(logits)


def odd_size(value: tuple[int, int]) -> tuple[int, int]:
    """A ``Param`` normaliser for kernel sizes: both entries odd and positive."""
    if any(v < 1 or v % 2 == 0 for v in value):
        raise ValueError("kernel sizes must be odd and positive")
    return value
