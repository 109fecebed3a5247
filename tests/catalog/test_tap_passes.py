"""The TPU's form of the separable tap passes (a matrix product) against the gathered taps the
CPU and GPU run, on the CPU: the same sums up to float32 rounding, clamped edges and canvas
taps included. The TPU runs it in tests/tpu/test_parity.py."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from augjax.kernels import tap_passes, window
from augjax.kernels.resize import crop_taps as _crop_taps

crop_taps = jax.jit(_crop_taps, static_argnums=(0, 2, 3, 4))

CASES = [((5, 7, 40, 50), (32, 24), True),   # antialiased downscale
         ((0, 0, 60, 70), (90, 100), False),  # enlargement: clamped edge taps
         ((3, 2, 20, 30), (8, 10), True),     # many taps per output
         ((10, 20, 1, 1), (5, 6), False)]     # one pixel, every tap the same index


@pytest.fixture(scope="module")
def image():
    return jnp.asarray(np.random.default_rng(0).integers(0, 256, (60, 70, 3)), jnp.float32)


@functools.partial(jax.jit, static_argnums=(3,))
def _forms(image, index, weight, axis):
    """Every form of one pass, in one program (eager, each primitive compiles on its own)."""
    fill = jnp.full((1, 1, 3), 7.0).reshape([1 if a == axis else -1 if a == 2 else 1
                                             for a in range(3)])
    shifted = index - 12  # some taps fall off the image, onto the canvas
    return (tap_passes.taps_gathered(image, index, weight, axis),
            tap_passes.taps_product(image, index, weight, axis),
            window._taps_in_order(image, index, weight, axis),
            tap_passes.canvas_gathered(image, shifted, weight, axis, fill),
            tap_passes.canvas_product(image, shifted, weight, axis, fill))


@pytest.mark.parametrize("box,size,antialias", CASES)
def test_product_equals_gathered_taps(image, box, size, antialias):
    iy, wy, ix, wx = crop_taps(image.shape[:2], jnp.array(box), size, "bilinear", antialias)
    for axis, (index, weight) in ((1, (ix, wx)), (0, (iy, wy))):
        want, got, in_order, canvas_want, canvas_got = map(np.asarray,
                                                           _forms(image, index, weight, axis))
        tol = 255 * 2e-7 * index.shape[1] + 1e-4
        np.testing.assert_allclose(got, want, rtol=0, atol=tol)
        np.testing.assert_allclose(in_order, want, rtol=0, atol=1e-4)
        np.testing.assert_allclose(canvas_got, canvas_want, rtol=0, atol=tol)


def test_matrix_adds_the_weights_of_repeated_taps():
    index = jnp.array([[0, 0, 1], [2, 3, 5]])
    weight = jnp.array([[0.25, 0.5, 0.25], [1.0, 2.0, 3.0]])
    m = np.asarray(tap_passes.taps_matrix(index, weight, 4))
    np.testing.assert_array_equal(m, [[0.75, 0.25, 0, 0], [0, 0, 1.0, 2.0]])  # 5: off x


def test_many_taps_read_from_their_run(image):
    """A strong shrink's many taps (as the conformance kit's 8x10 from the whole image), clamped
    edges included, against the matrix summed tap by tap in float64."""
    iy, wy, ix, wx = crop_taps(image.shape[:2], jnp.array((0, 0, 60, 70)), (3, 4), "bilinear",
                               True)
    assert ix.shape[1] > 8
    for index, weight, n in ((iy, wy, 60), (ix, wx, 70)):
        dense = np.zeros((index.shape[0], n), np.float64)
        idx, wt = np.asarray(index), np.asarray(weight, np.float64)
        for o in range(idx.shape[0]):
            np.add.at(dense[o], idx[o], wt[o])
        np.testing.assert_allclose(np.asarray(jax.jit(tap_passes.taps_matrix, static_argnums=2)(
            index, weight, n)), dense,
                                   rtol=0, atol=1e-7)


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_scale_jitter_dense_form_within_a_level_of_the_taps(dtype):
    """scale_jitter's TPU form (dense weight matrices) against the every-tap form the GPU runs:
    a shrink, an enlargement cut by its window, a strong shrink padded with fill."""
    import math

    from augjax.catalog import detection
    from augjax.kernels.window import taps_needed

    raw = np.random.default_rng(1).integers(0, 256, (48, 64, 3)).astype(np.uint8)
    img = jnp.asarray(raw if dtype == "uint8" else raw / 255.0, dtype)
    taps = tuple(taps_needed(n / max(1.0, math.floor(n * 0.1) - 1.0), "bilinear", True)
                 for n in (48, 64))
    config = ((48, 64), (40, 50), "bilinear", True, taps)
    fill = jnp.full((3,), 9.0 if dtype == "uint8" else 0.25, jnp.float32)
    level = 1.0 if dtype == "uint8" else 1 / 255
    for resized_offset in ((30, 40, 0, 0), (96, 128, 10, 20), (6, 8, 0, 0)):
        p = jnp.array(resized_offset, jnp.int32)
        want = np.asarray(jax.jit(detection._jitter_all, static_argnums=3)(
            img, p, fill, config), np.float64)
        got = np.asarray(jax.jit(detection._jitter_dense, static_argnums=3)(
            img, p, fill, config), np.float64)
        assert np.abs(got - want).max() <= level, resized_offset
