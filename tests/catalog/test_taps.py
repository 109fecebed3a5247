"""``augjax.kernels.taps``: the correlation with few nonzero cells that motion_blur uses, its
XLA form against scipy.ndimage (mirror = reflect-101), the cell list against the kernel, and
the CUDA Pallas kernel (interpreted here) against a float64 NumPy sum. Images smaller than the
kernel (the reflection repeats) are covered."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi
from augjax_contrib.blur import motion_kernel
from helpers import images

from augjax.kernels import _taps_pallas, correlate_taps, filter_taps, nonzero_taps


def _ref(x, kernel):
    """scipy's correlation in float64, the kernel applied to every channel."""
    return ndi.correlate(x.astype(np.float64), np.asarray(kernel, np.float64)[:, :, None],
                         mode="mirror")


@pytest.mark.parametrize("h,w,k", [(13, 11, 3), (9, 12, 7), (4, 5, 7)])  # 4 x 5 < 7 x 7
def test_correlate_taps_matches_scipy_mirror(h, w, k):
    rng = np.random.default_rng(h * w)
    kernel = rng.normal(size=(k, k)).astype(np.float32)
    for dtype in (np.float32, np.uint8):
        x = images(1, h, w, dtype=dtype, seed=k)[0]
        got = np.asarray(jax.jit(correlate_taps)(jnp.asarray(x), kernel))
        scale = 255.0 if dtype == np.uint8 else 1.0
        assert np.abs(got - _ref(x, kernel)).max() <= 2e-5 * scale * np.abs(kernel).sum()


def test_nonzero_taps_lists_the_nonzero_cells_in_row_major_order():
    kernel = np.zeros((5, 5), np.float32)
    cells = [(0, 3, 0.5), (2, 2, -1.0), (2, 4, 0.25), (4, 0, 2.0)]
    for r, c, v in cells:
        kernel[r, c] = v
    count, dy, dx, wt = (np.asarray(a) for a in jax.jit(nonzero_taps, static_argnums=1)(
        jnp.asarray(kernel), 6))
    assert int(count) == 4
    assert [(int(a) + 2, int(b) + 2, float(v)) for a, b, v in
            zip(dy[:4], dx[:4], wt[:4], strict=True)] == cells
    assert np.all(wt[4:] == 0)


@pytest.mark.fast_tier("7")
@pytest.mark.parametrize("size", [3, 7, 15])
def test_a_motion_line_has_at_most_three_cells_per_row_or_column(size):
    """The bound motion_blur passes as ``max_taps``: the band ``|q_y| < 1`` of width 2 meets
    at most 3 cells of each column (or row, when the line is steep)."""
    for angle in np.linspace(-180.0, 180.0, 721):
        k = np.asarray(motion_kernel(size, jnp.float32(angle), jnp.float32(0.4)))
        nz = k != 0
        lines = nz.sum(axis=0) if abs(math.cos(math.radians(angle))) >= 0.7 else nz.sum(axis=1)
        assert nz.sum() <= 3 * size and lines.max() <= 3, angle


@pytest.mark.slow
@pytest.mark.skipif(not _taps_pallas.AVAILABLE, reason="this JAX has no Pallas Triton backend")
# (6, 90): a row spans two column tiles; 2 x 3: within the reach
@pytest.mark.parametrize("h,w", [(23, 31), (6, 90), (5, 4), (2, 3), (1, 9)])
def test_pallas_taps_kernel_matches_a_float64_sum(h, w):
    """The CUDA form, interpreted on the CPU, for uint8 images and motion lines: within one
    level of the float64 correlation (rounded half to even), and equal to the XLA form but
    where a sum lies within float32 rounding of a half."""
    x = images(3, h, w, dtype=np.uint8, seed=h)
    angles, directions = (17.0, -60.0, 90.0), (0.0, 0.5, -1.0)
    got, xla = [], []
    for i, (a, d) in enumerate(zip(angles, directions, strict=True)):
        kernel = motion_kernel(7, jnp.float32(a), jnp.float32(d))
        taps = nonzero_taps(kernel, 21)
        got.append(np.asarray(_taps_pallas.taps_kernel(jnp.asarray(x[i]), *taps, reach=3,
                                                       interpret=True)))
        xla.append(np.asarray(filter_taps(jnp.asarray(x[i]), kernel, 21)))  # CPU: the XLA form
        ref = np.round(np.clip(_ref(x[i], kernel), 0, 255))
        assert got[i].dtype == np.uint8
        assert np.abs(got[i].astype(np.int64) - ref).max() <= 1
    got, xla = np.stack(got), np.stack(xla)
    assert (got != xla).mean() <= 1e-3 and np.abs(got.astype(int) - xla).max() <= 1


@pytest.mark.skipif(not _taps_pallas.AVAILABLE, reason="this JAX has no Pallas Triton backend")
def test_pallas_taps_kernel_rounds_half_to_even_and_clamps():
    x = jnp.asarray(np.array([[[1], [2], [3], [250]]], np.uint8))  # (1, 4, 1)
    for weight, want in ((0.5, [0, 1, 2, 125]), (1.5, [2, 3, 4, 255]), (-1.0, [0, 0, 0, 0])):
        taps = (jnp.int32(1), jnp.zeros(1, jnp.int32), jnp.zeros(1, jnp.int32),
                jnp.full(1, weight, jnp.float32))
        got = np.asarray(_taps_pallas.taps_kernel(x, *taps, reach=0, interpret=True))
        np.testing.assert_array_equal(got[0, :, 0], want)


@pytest.mark.gpu
@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a CUDA GPU (the Pallas form)")
def test_motion_blur_on_the_gpu_matches_the_cpu_form():
    from augjax_contrib import blur

    x = images(8, 64, 48, dtype=np.uint8, seed=3)
    keys = jax.random.split(jax.random.key(0), 8)
    gpu = np.asarray(jax.jit(lambda v: blur.motion_blur(v, key=keys))(x))
    with jax.default_device(jax.devices("cpu")[0]):
        cpu = np.asarray(jax.jit(lambda v: blur.motion_blur(v, key=keys))(x))
    assert (gpu != cpu).mean() <= 1e-3 and np.abs(gpu.astype(int) - cpu).max() <= 1
