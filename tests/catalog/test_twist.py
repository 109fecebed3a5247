"""color_twist against DALI's own fn.color_twist (CPU operator), given the same per-sample values.

The per-sample values come from the public params path (``color_twist.sample``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import check_grad, images, run_dali, seeds

import augjax
from augjax.errors import ParamError

N = 6
PARAMS = dict(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.4, 1.6),
              hue=(-40.0, 40.0))


def _dali_twist(x, values):
    """DALI fn.color_twist with per-sample argument inputs (one value per sample each)."""
    from nvidia.dali import fn

    def build(img, b, c, s, h):
        return fn.color_twist(img, brightness=b, contrast=c, saturation=s, hue=h)

    cols = [values[:, i].copy() for i in range(4)]
    return run_dali(build, x, *cols)[0][0]


NAMES = ("brightness", "contrast", "saturation", "hue")


def _values(x, keys, **params):
    """The sampled values, one row per sample: (brightness, contrast, saturation, hue)."""
    p = augjax.ops.color_twist.sample(x, key=keys, **params)
    return np.stack([np.asarray(p[n]) for n in NAMES], axis=1)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_matches_dali_color_twist_with_its_draws(dtype):
    x = images(N, 24, 30, dtype=dtype, seed=3)
    keys = jax.random.split(jax.random.key(5), N)
    out = np.asarray(augjax.ops.color_twist(x, key=keys, **PARAMS))
    values = _values(x, keys, **PARAMS)
    assert values.dtype == np.float32 and len(np.unique(values[:, 3])) == N  # per-sample draws
    for i, (lo, hi) in enumerate(PARAMS.values()):
        assert ((values[:, i] >= lo) & (values[:, i] <= hi)).all()
    ref = _dali_twist(x, values)
    diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    if dtype == np.uint8:
        # float32 rounding of the matrix product: a level where DALI's value sits at .5
        assert diff.max() <= 1 and (diff > 0).mean() < 0.02, (diff.max(), (diff > 0).mean())
    else:
        assert diff.max() <= 2e-6
    assert out.dtype == dtype


def test_float_results_clamped_only_with_clip():
    """DALI leaves float results unclamped; clip=True clamps exactly those values to [0, 1]."""
    x = images(N, 24, 30, dtype=np.float32, seed=8)
    keys = jax.random.split(jax.random.key(2), N)
    params = dict(brightness=(1.3, 1.6), contrast=(1.3, 1.6), saturation=(1.2, 1.6))
    free = np.asarray(augjax.ops.color_twist(x, key=keys, **params))
    clipped = np.asarray(augjax.ops.color_twist(x, key=keys, clip=True, **params))
    assert free.min() < 0.0 and free.max() > 1.0  # the case leaves the range
    np.testing.assert_array_equal(clipped, np.clip(free, 0.0, 1.0))


def test_single_adjustments_match_dali_and_identity_is_exact():
    x = images(2, 16, 20, seed=4)
    keys = jax.random.split(jax.random.key(0), 2)
    np.testing.assert_array_equal(augjax.ops.color_twist(x, key=keys), x)
    for name, value in [("brightness", 1.3), ("contrast", 0.7), ("saturation", 0.5),
                        ("hue", 30.0)]:
        out = np.asarray(augjax.ops.color_twist(x, key=keys, **{name: value}))
        values = _values(x, keys, **{name: value})
        expected = np.array([[1.0, 1.0, 1.0, 0.0]] * 2, np.float32)
        expected[:, NAMES.index(name)] = value
        np.testing.assert_array_equal(values, expected)  # a number is used as is
        ref = _dali_twist(x, values)
        assert np.abs(out.astype(int) - ref).max() <= 1, name


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_sample_then_apply_is_the_call_bitwise(dtype):
    x = images(N, 12, 14, dtype=dtype, seed=9)
    keys = jax.random.split(jax.random.key(7), N)
    out = np.asarray(augjax.ops.color_twist(x, key=keys, **PARAMS))
    p = augjax.ops.color_twist.sample(x, key=keys, **PARAMS)
    assert set(p) == set(NAMES)
    for name, value in p.items():
        assert value.shape == (N,) and f"``{name}``" in augjax.ops.color_twist.doc, name
    np.testing.assert_array_equal(augjax.ops.color_twist.apply(x, params=p, **PARAMS), out)


def test_edited_values_apply_exactly():
    """Neutral values are the identity; one edited value equals the op configured with it."""
    x = images(N, 12, 14, seed=10)
    p = augjax.ops.color_twist.sample(x, key=jax.random.key(1), **PARAMS)
    neutral = {"brightness": np.ones(N, np.float32), "contrast": np.ones(N, np.float32),
               "saturation": np.ones(N, np.float32), "hue": np.zeros(N, np.float32)}
    assert set(neutral) == set(p)
    np.testing.assert_array_equal(augjax.ops.color_twist.apply(x, params=neutral), x)
    edited = dict(neutral, hue=np.full(N, 25.0, np.float32))
    np.testing.assert_array_equal(augjax.ops.color_twist.apply(x, params=edited),
                                  augjax.ops.color_twist(x, key=jax.random.key(0), hue=25.0))


def test_gradient_with_respect_to_float_images():
    """An affine map per sample: jax.grad through apply equals a finite difference."""
    x = images(4, 8, 10, dtype=np.float32, seed=11) * 0.8 + 0.1
    p = augjax.ops.color_twist.sample(x, key=jax.random.key(2), **PARAMS)
    g = check_grad(lambda z: augjax.ops.color_twist.apply(z, params=p, **PARAMS), x)
    assert np.abs(g).mean() > 0.1


def test_dali_pipeline_equals_array_path():
    x = images(4, 16, 20, seed=6)
    s = seeds(4)
    out = run_dali(lambda img, sd: augjax.ops.color_twist(img, seeds=sd, **PARAMS), x, s)[0][0]
    ref = augjax.ops.color_twist(x, key=augjax.keys_from_seeds(jnp.asarray(s)), **PARAMS)
    np.testing.assert_array_equal(out, np.asarray(ref))


@pytest.mark.parametrize("kw, param", [
    ({"brightness": -0.5}, "brightness"),
    ({"contrast": (1.2, 0.8)}, "contrast"),
    ({"saturation": "high"}, "saturation"),
])
def test_bad_parameters_raise_param_error(kw, param):
    with pytest.raises(ParamError, match=f"color_twist.*{param}"):
        augjax.ops.color_twist.bind(**kw)
