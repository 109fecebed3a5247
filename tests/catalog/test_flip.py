"""flip against NumPy, and its per-sample probability."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import images

import augjax


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_flip_always_and_never(dtype):
    x = images(3, 5, 7, dtype=dtype)
    k = jax.random.key(0)
    np.testing.assert_array_equal(augjax.ops.flip(x, key=k, p=1.0), x[:, :, ::-1])
    np.testing.assert_array_equal(augjax.ops.flip(x, key=k, p=0.0), x)
    np.testing.assert_array_equal(
        augjax.ops.flip(x, key=k, p=1.0, horizontal=False, vertical=True), x[:, ::-1])
    np.testing.assert_array_equal(
        augjax.ops.flip(x, key=k, p=1.0, vertical=True), x[:, ::-1, ::-1])


def test_flip_chw_flips_the_width_axis():
    x = images(2, 5, 7)
    chw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    out = augjax.ops.flip(chw, key=jax.random.key(0), p=1.0, layout="CHW")
    np.testing.assert_array_equal(out, chw[..., ::-1])


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_flip_probability_per_sample(p):
    n = 2000
    x = np.broadcast_to(np.arange(4, dtype=np.uint8)[None, None, :, None], (n, 1, 4, 1)).copy()
    out = np.asarray(augjax.ops.flip(x, key=jax.random.key(1), p=p))
    flipped = out[:, 0, 0, 0] == 3
    assert ((out[:, 0, :, 0] == [0, 1, 2, 3]).all(1) | flipped).all()
    # Binomial(n, p): 4 standard deviations.
    assert abs(flipped.mean() - p) < 4 * np.sqrt(p * (1 - p) / n)


def test_flip_axes_have_independent_coins():
    n = 4000
    x = np.arange(4, dtype=np.uint8).reshape(1, 2, 2, 1).repeat(n, 0)
    out = np.asarray(augjax.ops.flip(x, key=jax.random.key(2), p=0.5, vertical=True))
    # Top-left pixel after flips: 0 none, 1 horizontal, 2 vertical, 3 both.
    corner = out[:, 0, 0, 0]
    freq = np.bincount(corner, minlength=4) / n
    np.testing.assert_allclose(freq, 0.25, atol=4 * np.sqrt(0.25 * 0.75 / n))
