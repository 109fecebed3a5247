"""The volume kernels (augjax.kernels.volume_sample / volume_axes) against scipy.ndimage on a
small volume: affine_transform / map_coordinates (order 1, 0 and 3), gaussian_filter, zoom; the
random fields (augjax.kernels.fields) against jax.random."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import ndimage

from augjax.kernels import volume_axes, volume_sample

SHAPE = (12, 10, 8)


@pytest.fixture(scope="module")
def vol():
    return np.random.default_rng(0).random((*SHAPE, 2)).astype(np.float32)


def _matrix():
    return volume_sample.affine_matrix(jnp.array([0.3, -0.2, 0.4]),
                                       jnp.array([0.1, 0.0, -0.05, 0.0, 0.02, 0.1]),
                                       jnp.array([0.7, -1.2, 0.4]), jnp.array([1.1, 0.9, 1.2]))


def test_affine_matrix_is_monai_order():
    """rotate @ shear @ translate @ scale, built in NumPy from MONAI's create_* formulas."""
    a, b, c = 0.3, -0.2, 0.4
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    h = lambda m3: np.block([[m3, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]])
    sh = np.array([[1, 0.1, 0.0], [-0.05, 1, 0.0], [0.02, 0.1, 1]])
    t = np.eye(4)
    t[:3, 3] = [0.7, -1.2, 0.4]
    want = h(rx @ ry @ rz) @ h(sh) @ t @ np.diag([1.1, 0.9, 1.2, 1.0])
    np.testing.assert_allclose(np.asarray(_matrix()), want, atol=1e-6)


@pytest.mark.parametrize("order,mode,scipy_mode", [(1, "zeros", "grid-constant"),
                                                   (1, "border", "nearest"),
                                                   (0, "zeros", "grid-constant")])
def test_affine_resample_is_scipy_affine_transform(vol, order, mode, scipy_mode):
    m = np.asarray(_matrix(), np.float64)
    c = (np.array(SHAPE) - 1) / 2
    coords = volume_sample.coordinates(_matrix(), SHAPE, SHAPE)
    got = np.asarray(volume_sample.sample(jnp.asarray(vol), coords, order=order, mode=mode))
    for ch in range(vol.shape[-1]):
        want = ndimage.affine_transform(vol[..., ch], m[:3, :3], offset=m[:3, 3] + c - m[:3, :3] @ c,
                                        order=order, mode=scipy_mode, prefilter=False)
        np.testing.assert_allclose(got[..., ch], want, atol=2e-5)


def test_displacement_is_one_map_coordinates(vol):
    """affine + displacement (one resample) equals map_coordinates at the composed coordinates."""
    disp = np.random.default_rng(1).normal(0, 0.8, (3, *SHAPE)).astype(np.float32)
    coords = np.asarray(volume_sample.coordinates(_matrix(), SHAPE, SHAPE, jnp.asarray(disp)))
    m = np.asarray(_matrix(), np.float64)
    c = (np.array(SHAPE) - 1) / 2
    grid = np.stack(np.meshgrid(*(np.arange(n) for n in SHAPE), indexing="ij")).astype(np.float64)
    want_coords = np.einsum("ij,jdhw->idhw", m[:3, :3], grid - c[:, None, None, None] + disp) \
        + (m[:3, 3] + c)[:, None, None, None]
    np.testing.assert_allclose(coords, want_coords, atol=1e-4)
    got = np.asarray(volume_sample.sample(jnp.asarray(vol), jnp.asarray(coords), order=1))
    want = ndimage.map_coordinates(vol[..., 0], want_coords, order=1, mode="grid-constant")
    np.testing.assert_allclose(got[..., 0], want, atol=1e-4)


@pytest.mark.parametrize("mode,scipy_mode", [("zeros", "grid-constant"), ("border", "nearest")])
def test_cubic_is_scipy_map_coordinates_order_3(vol, mode, scipy_mode):
    """Cubic B-spline with SciPy's prefilter (its padding of 12 and its boundaries), at points
    inside, near and far outside the volume; float32 within 1e-5 of SciPy's float64."""
    pts = np.random.default_rng(2).uniform(-3, 14, (3, 600)).astype(np.float32)
    pts[:, :8] = np.array([[0, 11, 0, 11, 5, 5.5, 0.25, -0.5]] * 3)  # on voxels, edges
    got = np.asarray(volume_sample.sample(jnp.asarray(vol), jnp.asarray(pts), order=3,
                                          mode=mode))
    for ch in range(vol.shape[-1]):
        want = ndimage.map_coordinates(vol[..., ch], pts.astype(np.float64), order=3,
                                       mode=scipy_mode)
        np.testing.assert_allclose(got[:, ch], want, atol=1e-5)
    inside = np.all((pts >= 0) & (pts <= np.array(SHAPE)[:, None] - 1), 0)
    assert inside.sum() > 50 and (~inside).sum() > 50  # both kinds of point were checked
    # on voxel centres the spline interpolates: the voxels themselves
    on = volume_sample.sample(jnp.asarray(vol), jnp.asarray(np.array([[3.0], [4.0], [5.0]])),
                              order=3, mode=mode)
    np.testing.assert_allclose(np.asarray(on)[0], vol[3, 4, 5], atol=1e-5)


def test_points_move_by_the_inverse_map():
    pts = jnp.array([[3.0, 4.0, 5.0], [0.5, 9.0, 1.0]])
    out = volume_sample.invert_points(pts, _matrix(), SHAPE, SHAPE)
    c = (np.array(SHAPE) - 1) / 2
    m = np.asarray(_matrix())
    back = (m[:3, :3] @ (np.asarray(out) - c).T).T + m[:3, 3] + c
    np.testing.assert_allclose(back, np.asarray(pts), atol=1e-4)


@pytest.mark.parametrize("mode,truncate", [("reflect", 4.0), ("constant", 3.0)])
def test_gaussian_matrix_is_scipy_gaussian_filter(vol, mode, truncate):
    sigmas = (0.7, 1.3, 2.5)
    r = volume_axes.max_radius((3.0,), truncate)
    mats = tuple(volume_axes.gaussian_matrix(n, s, r, truncate=truncate, mode=mode)
                 for n, s in zip(SHAPE, sigmas))
    got = np.asarray(volume_axes.separable(jnp.asarray(vol), mats))
    want = ndimage.gaussian_filter(vol, sigma=(*sigmas, 0), mode=mode, truncate=truncate)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_lowres_matrix_is_nearest_down_then_linear_up(vol):
    """Down: nearest-exact picks (NumPy); up: scipy.ndimage.zoom(order=1, grid_mode=True,
    mode='nearest'), which is linear interpolation with align_corners=False."""
    ms = (7, 5, 8)
    mats = tuple(volume_axes.lowres_matrix(n, jnp.float32(m)) for n, m in zip(SHAPE, ms))
    got = np.asarray(volume_axes.separable(jnp.asarray(vol), mats))
    x = vol[..., 0]
    for axis, (n, m) in enumerate(zip(SHAPE, ms)):
        x = np.take(x, np.minimum(np.floor((np.arange(m) + 0.5) * n / m).astype(int), n - 1), axis)
    want = ndimage.zoom(x, np.array(SHAPE) / np.array(ms), order=1, grid_mode=True, mode="nearest")
    assert want.shape == SHAPE
    np.testing.assert_allclose(got[..., 0], want, atol=1e-5)


# -- random fields -----------------------------------------------------------------------------


def test_fields_are_jax_random_draws_of_the_counter_form():
    """``fields.normal`` / ``uniform16`` are what ``jax.random.normal`` / ``bits(uint16)`` give
    with ``jax_threefry_partitionable`` off (threefry over a counter), under either setting."""
    from augjax.kernels import fields

    key, shape = jax.random.key(7), (5, 6, 7)
    with jax.threefry_partitionable(False):
        want_normal = np.asarray(jax.random.normal(key, shape))
        want_bits = np.asarray(jax.random.bits(key, shape, np.uint16))
    for flag in (False, True):
        with jax.threefry_partitionable(flag):
            np.testing.assert_array_equal(np.asarray(fields.normal(key, shape)), want_normal)
            u = np.asarray(fields.uniform16(key, shape))
            np.testing.assert_array_equal(u, (want_bits + 0.5) * (2.0 / 65536.0) - 1.0)
    big = np.asarray(fields.normal(jax.random.key(8), (300_000,)), np.float64)
    assert abs(big.mean()) < 0.01 and abs(big.std() - 1.0) < 0.01
    from scipy import stats

    assert stats.kstest(big, "norm").pvalue > 1e-3
