"""``Param(levels=True)`` and ``Param(per_channel=True)``: augjax hands the kernel a value in
uint8 levels in the image's scale, and a per-channel value with one entry per channel; the
caller's values (``op.sample``) stay as given."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from augjax import Param, op
from augjax.errors import InputError


@op("lift", params={"amount": Param((10.0, 20.0), kind="float_or_pair", low=0.0, high=255.0,
                                    levels=True),
                    "floor": Param(5.0, low=0.0, high=255.0, levels=True),
                    "gain": Param((1.0,), per_channel=True, low=0.0)},
    output_dtype="float32")
def lift(image, params, *, floor, gain):
    """``max(x, floor) + amount``, times ``gain`` per channel, as float32 (a test op)."""
    x = jnp.maximum(image.astype(jnp.float32), floor)
    return (x + params["amount"]) * jnp.asarray(gain, jnp.float32)


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_levels_reach_the_kernel_in_the_image_scale_and_channels_get_one_value_each(dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 4, 4, 3)).astype(dtype)
    if dtype == "float32":
        x = x / np.float32(255.0)
    key = jax.random.key(1)
    drawn = lift.sample(x, key=key, gain=(1.0, 2.0, 0.5))
    amount = np.asarray(drawn["amount"])
    assert np.all((amount >= 10.0) & (amount <= 20.0))  # op.sample keeps the levels
    out = np.asarray(lift.apply(x, params=drawn, gain=(1.0, 2.0, 0.5)).astype("float32"))
    unit = 1.0 if dtype == "uint8" else 1.0 / 255.0
    expected = (np.maximum(x, np.float32(5.0 * unit))
                + (amount * np.float32(unit))[:, None, None, None]) * np.float32([1.0, 2.0, 0.5])
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    one = np.asarray(lift.apply(x, params=drawn, gain=2.0).astype("float32"))
    np.testing.assert_allclose(one, np.asarray(lift.apply(x, params=drawn, gain=(2.0, 2.0, 2.0))
                                               .astype("float32")))


def test_a_per_channel_value_of_another_length_is_refused():
    x = np.zeros((1, 4, 4, 3), np.float32)
    with pytest.raises(InputError, match=r"lift: parameter 'gain' has 2 values but the images "
                                         r"have 3 channels"):
        lift(x, key=jax.random.key(0), gain=(1.0, 2.0))


def test_the_flags_need_fitting_kinds():
    with pytest.raises(ValueError, match="per_channel"):
        Param(1.0, kind="float", per_channel=True)
    with pytest.raises(ValueError, match="levels"):
        Param("a", choices=("a",), levels=True)
    assert Param((0.5, 0.5, 0.5), per_channel=True).kind == "floats"
