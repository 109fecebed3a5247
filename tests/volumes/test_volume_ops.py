"""The volume ops (augjax/catalog/volume_*.py) on small volumes: params drawn by the op's sampler,
then applied, against NumPy / scipy.ndimage from those params; masks nearest by the same map;
keys reproducible; errors typed."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy import ndimage

from augjax.catalog import volume_geometry as vg
from augjax.catalog import volume_intensity as vi
from augjax.errors import InputError, ParamError
from augjax.volumes import chain

SHAPE = (2, 12, 10, 8)
KEY = jax.random.key(3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.random((*SHAPE, 2)).astype(np.float32)
    masks = (rng.random(SHAPE) > 0.85).astype(np.int32) * rng.integers(1, 4, SHAPE)
    points = rng.uniform(1, 7, (SHAPE[0], 4, 3)).astype(np.float32)
    return x, masks.astype(np.int32), points


def test_flip_is_numpy_flip_of_the_drawn_axes(data):
    x, masks, points = data
    params = vg.volume_flip.sample(x, key=KEY)
    out = vg.volume_flip.apply(x, params=params, masks=masks, keypoints=points)
    flips = np.asarray(params["flip"])
    assert flips.any()
    for i in range(SHAPE[0]):
        axes = tuple(a for a in range(3) if flips[i, a])
        np.testing.assert_array_equal(out["images"][i], np.flip(x[i], axes))
        np.testing.assert_array_equal(out["masks"][i], np.flip(masks[i], axes))
        want = np.where(flips[i], np.array(SHAPE[1:]) - 1 - points[i], points[i])
        np.testing.assert_allclose(out["keypoints"][i], want)
    again = vg.volume_flip(x, key=KEY, masks=masks, keypoints=points)  # call == apply(sample)
    np.testing.assert_array_equal(again["images"], out["images"])


def test_keys_reproducible_and_per_sample(data):
    x = data[0]
    a = vg.volume_flip.sample(x, key=KEY)
    b = vg.volume_flip.sample(x, key=KEY)
    one = vg.volume_flip.sample(x[:1], key=KEY)  # sample 0 depends on (key, 0) only
    np.testing.assert_array_equal(a["flip"], b["flip"])
    np.testing.assert_array_equal(a["flip"][:1], one["flip"])


def test_rot90_is_numpy_rot90(data):
    rng = np.random.default_rng(1)
    x = rng.random((3, 4, 6, 6, 1)).astype(np.float32)
    masks = rng.integers(0, 3, (3, 4, 6, 6)).astype(np.int32)
    points = rng.integers(0, 4, (3, 2, 3)).astype(np.float32)
    op = vg.volume_rot90.bind(axes=(1, 2), p=1.0)
    params = op.sample(x, key=KEY)
    out = op.apply(x, params=params, masks=masks, keypoints=points)
    for i, k in enumerate(np.asarray(params["k"])):
        assert 1 <= k <= 3
        np.testing.assert_array_equal(out["images"][i], np.rot90(x[i], k, (1, 2)))
        np.testing.assert_array_equal(out["masks"][i], np.rot90(masks[i], k, (1, 2)))
        for p, q in zip(points[i].astype(int), np.asarray(out["keypoints"][i])):
            marker = np.zeros((4, 6, 6))
            marker[tuple(p)] = 1  # a voxel marked at the point lands where the point went
            np.testing.assert_array_equal(np.argwhere(np.rot90(marker, k, (1, 2)))[0], q)
    with pytest.raises(InputError, match="square plane"):
        vg.volume_rot90(x[:, :, :, :5], key=KEY, axes=(1, 2))


def _monai_matrix(params, i):
    a, sh, t, s = (np.asarray(params[k][i], np.float64)
                   for k in ("rotate", "shear", "translate", "scale"))
    c, n = np.cos(a), np.sin(a)
    rx = np.array([[1, 0, 0], [0, c[0], -n[0]], [0, n[0], c[0]]])
    ry = np.array([[c[1], 0, n[1]], [0, 1, 0], [-n[1], 0, c[1]]])
    rz = np.array([[c[2], -n[2], 0], [n[2], c[2], 0], [0, 0, 1]])
    lin = rx @ ry @ rz @ np.array([[1, sh[0], sh[1]], [sh[2], 1, sh[3]], [sh[4], sh[5], 1]])
    return lin @ np.diag(s), lin @ t


def _one(params, i):
    return jax.tree_util.tree_map(lambda v: v[i], params)


def _meta(x):
    from augjax.volumes import VolumeMeta

    return VolumeMeta(*x.shape[1:], x.dtype.name)


def _offsets(params, i, out):
    """Volume ``i``'s elastic offsets, drawn from its key as the kernel draws them."""
    return np.asarray(vg.offsets(_one(params, i), tuple(out)), np.float64)


def test_affine_elastic_one_resample_is_scipy_map_coordinates(data):
    """Images trilinear and masks nearest at the same coordinates: MONAI's affine (rotate @ shear
    @ translate @ scale, centred grid) applied to the grid plus the elastic field (the offsets
    smoothed by scipy's gaussian_filter, truncate 3, zeros, times the magnitude)."""
    x, masks, points = data
    op = vg.volume_affine.bind(rotate=(0.4, 0.2, 0.3), shear=0.05, translate=1.0, scale=0.15,
                               p_elastic=1.0, sigma=(1.0, 2.0), magnitude=(2.0, 3.0))
    params = op.sample(x, key=KEY)
    out = op.apply(x, params=params, masks=masks, keypoints=points)
    c = (np.array(SHAPE[1:]) - 1) / 2
    grid = np.stack(np.meshgrid(*(np.arange(n) for n in SHAPE[1:]), indexing="ij"), 0)
    for i in range(SHAPE[0]):
        lin, shift = _monai_matrix(params, i)
        np.testing.assert_allclose(np.asarray(params["matrix"][i])[:3, :3], lin, atol=1e-5)
        sigma, mag = float(params["sigma"][i]), float(params["magnitude"][i])
        disp = np.stack([ndimage.gaussian_filter(o, sigma, mode="constant", truncate=3.0)
                         for o in _offsets(params, i, SHAPE[1:])]) * mag
        coords = np.einsum("ij,jdhw->idhw", lin, grid - c[:, None, None, None] + disp) \
            + (shift + c)[:, None, None, None]
        for ch in range(2):
            want = ndimage.map_coordinates(x[i, ..., ch], coords, order=1, mode="grid-constant")
            np.testing.assert_allclose(out["images"][i, ..., ch], want, atol=2e-4)
        want_m = ndimage.map_coordinates(masks[i], coords, order=0, mode="grid-constant")
        agree = np.mean(np.asarray(out["masks"][i]) == want_m)
        assert agree > 0.995  # nearest: only exact-tie voxels may round the other way
        # keypoints: the moved point maps back (through the field, trilinear) to the point
        q = np.asarray(out["keypoints"][i])
        d_at_q = np.stack([ndimage.map_coordinates(d, q.T, order=1, mode="nearest") for d in disp])
        back = (lin @ (q.T - c[:, None] + d_at_q)).T + shift + c
        np.testing.assert_allclose(back, points[i], atol=2e-2)


def test_affine_cubic_is_scipy_order_3_and_masks_stay_nearest(data):
    """interpolation="cubic": the images are scipy's map_coordinates(order=3) (prefilter
    included; float32 within 1e-4) at the op's coordinates, the masks exactly what the linear
    configuration gives (nearest at the same coordinates). (Padding "border" is the kernel
    test's, test_volume_kernels.)"""
    x, masks, _ = data
    padding, scipy_mode = "zeros", "grid-constant"
    config = dict(rotate=0.4, translate=1.0, scale=0.15, p_elastic=1.0, sigma=(1.0, 2.0),
                  magnitude=(1.0, 2.0), padding=padding)
    op = vg.volume_affine.bind(interpolation="cubic", **config)
    params = op.sample(x, key=KEY)
    out = op.apply(x, params=params, masks=masks)
    linear = vg.volume_affine.bind(**config).apply(x, params=params, masks=masks)
    np.testing.assert_array_equal(out["masks"], linear["masks"])
    c = (np.array(SHAPE[1:]) - 1) / 2
    grid = np.stack(np.meshgrid(*(np.arange(n) for n in SHAPE[1:]), indexing="ij"), 0)
    for i in range(SHAPE[0]):
        lin, shift = _monai_matrix(params, i)
        disp = np.stack([ndimage.gaussian_filter(o, float(params["sigma"][i]), mode="constant",
                                                 truncate=3.0)
                         for o in _offsets(params, i, SHAPE[1:])]) \
            * float(params["magnitude"][i])
        coords = np.einsum("ij,jdhw->idhw", lin, grid - c[:, None, None, None] + disp) \
            + (shift + c)[:, None, None, None]
        for ch in range(2):
            want = ndimage.map_coordinates(x[i, ..., ch], coords, order=3, mode=scipy_mode)
            np.testing.assert_allclose(out["images"][i, ..., ch], want, atol=1e-4)
    assert not np.allclose(out["images"], linear["images"], atol=1e-3)  # not trilinear
    with pytest.raises(ParamError, match="'interpolation'"):
        vg.volume_affine.bind(interpolation="quintic")


def test_elastic_offsets_are_uniform_keyed_and_flag_independent():
    """The elastic field's raw offsets: uniform in [-1, 1] (16-bit steps, two per hash), the
    same values under either ``jax_threefry_partitionable`` setting, another key others."""
    out = (6, 10, 14)
    params = {"field": jax.random.key(3)}
    a = np.asarray(vg.offsets(params, out))
    with jax.threefry_partitionable(not jax.config.jax_threefry_partitionable):
        b = np.asarray(vg.offsets(params, out))
    np.testing.assert_array_equal(a, b)
    c = np.asarray(vg.offsets({"field": jax.random.key(4)}, out))
    assert a.shape == (3, *out) and np.abs(a - c).max() > 0.5
    big = np.asarray(vg.offsets(params, (40, 50, 50)), np.float64).ravel()  # 300,000 values
    assert -1.0 < big.min() < -0.999 and 0.999 < big.max() < 1.0
    assert abs(big.mean()) < 0.005 and abs(big.std() - 1 / np.sqrt(3)) < 0.003
    counts, _ = np.histogram(big, bins=20, range=(-1, 1))
    expected = big.size / 20
    assert ((counts - expected) ** 2 / expected).sum() < 45  # chi-square, 19 dof: p ~ 1e-3
    steps = np.unique(np.round((big + 1) * 32768 - 0.5, 6))
    np.testing.assert_array_equal(steps, np.round(steps))  # on the 16-bit lattice


def test_one_resample_equals_two_within_interpolation_error():
    """On a smooth volume, elastic-then-affine in one resample and the two resamples in turn
    (scipy) agree within trilinear interpolation error, and the one resample is closer to the
    exact value (the analytic volume at the composed coordinates)."""
    shape = (12, 10, 8)
    f = lambda z, y, w: np.sin(0.5 * z) + np.cos(0.4 * y) * np.sin(0.3 * w)
    vol = f(*np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")).astype(np.float32)
    op = vg.volume_affine.bind(rotate=0.3, scale=0.1, p_elastic=1.0, sigma=(1.5, 2.0),
                               magnitude=(3.0, 4.0), padding="border")
    params = op.sample(vol[None, ..., None], key=KEY)
    one = np.asarray(op.apply(vol[None, ..., None], params=params))[0, ..., 0]
    lin, shift = _monai_matrix(params, 0)
    c = (np.array(shape) - 1) / 2
    grid = np.stack(np.meshgrid(*(np.arange(n) for n in shape), indexing="ij"), 0)
    disp = np.stack([ndimage.gaussian_filter(o, float(params["sigma"][0]), mode="constant",
                                             truncate=3.0)
                     for o in _offsets(params, 0, shape)]) \
        * float(params["magnitude"][0])
    affine = np.einsum("ij,jdhw->idhw", lin, grid - c[:, None, None, None]) + (shift + c)[
        :, None, None, None]
    first = ndimage.map_coordinates(vol, affine, order=1, mode="nearest")
    two = ndimage.map_coordinates(first, grid + disp, order=1, mode="nearest")
    composed = np.einsum("ij,jdhw->idhw", lin, grid - c[:, None, None, None] + disp) \
        + (shift + c)[:, None, None, None]
    inside = np.all((composed > 1) & (composed < (np.array(shape) - 2)[:, None, None, None]), 0)
    exact = f(*composed)
    assert np.abs(one - two)[inside].max() < 0.25
    assert np.abs(one - exact)[inside].mean() < np.abs(two - exact)[inside].mean()


def test_crop_oversamples_foreground(data):
    x = data[0]
    masks = np.zeros(SHAPE, np.int32)
    masks[0, 9, 2, 6] = 1  # one foreground voxel per volume
    masks[1, 1, 8, 1] = 2
    op = vg.volume_crop.bind(size=(4, 4, 4), p_foreground=1.0)
    params = op.sample(x, key=KEY, masks=masks)
    out = op.apply(x, params=params, masks=masks)
    start = np.asarray(params["start"])
    np.testing.assert_array_equal(start, [[7, 0, 4], [0, 6, 0]])  # centred, shifted inside
    for i in range(2):
        s = start[i]
        np.testing.assert_array_equal(out["images"][i],
                                      x[i, s[0]:s[0] + 4, s[1]:s[1] + 4, s[2]:s[2] + 4])
        assert out["masks"][i].sum() == masks[i].sum()
    uniform = vg.volume_crop.bind(size=(4, 4, 4), p_foreground=0.0).sample(
        x, key=KEY, masks=masks)
    assert not np.asarray(uniform["foreground"]).any()
    with pytest.raises(InputError, match="larger than the volumes"):
        vg.volume_crop(x, key=KEY, size=(13, 4, 4))


def test_intensity_ops_against_numpy_and_scipy(data):
    x = data[0]
    ops = chain(vi.volume_noise.bind(p=1.0), vi.volume_blur.bind(p=1.0, p_per_channel=1.0),
                vi.volume_brightness.bind(p=1.0), vi.volume_contrast.bind(p=1.0),
                vi.volume_lowres.bind(p=1.0, p_per_channel=1.0),
                vi.volume_gamma.bind(p=1.0, p_invert=0.5))
    params = ops.sample(x, key=KEY)
    out = np.asarray(ops.apply(x, params=params))
    noise, blur, bright, contrast, lowres, gamma = params
    for i in range(SHAPE[0]):
        y = x[i] + float(noise["std"][i]) * np.asarray(vi.noise_field(_one(noise, i), _meta(x)))
        y = np.stack([ndimage.gaussian_filter(y[..., c], np.asarray(blur["sigma"][i, c]),
                                              mode="reflect", truncate=4.0) for c in range(2)], -1)
        y = y * np.asarray(bright["multiplier"][i])
        mean, lo, hi = y.mean((0, 1, 2)), y.min((0, 1, 2)), y.max((0, 1, 2))
        y = np.clip((y - mean) * np.asarray(contrast["factor"][i]) + mean, lo, hi)
        chans = []
        for c in range(2):
            z = y[..., c]
            ms = [int(np.clip(np.round(n * float(lowres["scale"][i, c])), 1, n))
                  for n in SHAPE[1:]]
            for axis, (n, m) in enumerate(zip(SHAPE[1:], ms)):
                z = np.take(z, np.minimum(np.floor((np.arange(m) + 0.5) * n / m), n - 1)
                            .astype(int), axis)
            chans.append(ndimage.zoom(z, np.array(SHAPE[1:]) / ms, order=1, grid_mode=True,
                                      mode="nearest"))
        y = np.stack(chans, -1)
        sign = -1.0 if bool(gamma["invert"][i]) else 1.0
        z = y * sign
        m, s, low = z.mean((0, 1, 2)), z.std((0, 1, 2)), z.min((0, 1, 2))
        span = z.max((0, 1, 2)) - low
        z = ((z - low) / span) ** np.asarray(gamma["gamma"][i]) * span + low
        z = (z - z.mean((0, 1, 2))) * (s / z.std((0, 1, 2))) + m
        np.testing.assert_allclose(out[i], z * sign, atol=2e-4)
    for k in ("multiplier",):
        f = np.asarray(bright[k])
        assert ((f >= 0.75) & (f <= 1.25)).all()


def test_errors_are_typed(data):
    x = data[0]
    with pytest.raises(InputError, match=r"rank 5 \(N, D, H, W, C\)"):
        vg.volume_flip(x[0], key=KEY)
    with pytest.raises(InputError, match="floating"):
        vg.volume_flip(x.astype(np.int32), key=KEY)
    with pytest.raises(InputError, match="masks"):
        vg.volume_flip(x, key=KEY, masks=np.zeros(SHAPE[:3], np.int32))
    with pytest.raises(ParamError, match="'axes'"):
        vg.volume_flip(x, key=KEY, axes=(3,))
    with pytest.raises(ParamError, match="unknown parameter"):
        vi.volume_noise(x, key=KEY, sigma=1.0)
    with pytest.raises(ParamError, match="'scale'"):
        vg.volume_affine(x, key=KEY, scale=(-1.5, 0.0))
