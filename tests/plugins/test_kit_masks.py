"""The kit's geometry check catches broken mask handling at the op's default parameters:
a geometric op whose masks stay where they were (its default warp too small for
masks left in place to show, so the check binds parameters that move pixels), and an op whose
kernel runs on masks and changes their ids (a mask's set of ids must come back unchanged).
Each failure names the numbers; a correct op with the same small default still passes."""

from __future__ import annotations

import re

import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import Follow, Param, op
from augjax.kernels.geometry import Warp, warp
from augjax.kernels.warp import INTERPOLATIONS
from augjax.testing import OpCheckError, check_op

_SHIFT = {
    "shift": Param((-0.4, 0.4), kind="float_or_pair", neutral=0.0, magnitude=(0.0, 5.0),
                   signed=True, doc="pixels along the width"),
    "interpolation": Param("nearest", choices=INTERPOLATIONS),
    "fill": Param(0.0, kind="floats", low=0.0, high=1.0, optional=True),
}


def _shift(params, meta, **_):
    """Moves the image ``shift`` pixels along the width."""
    return Warp.forward(jnp.eye(3, dtype=jnp.float32).at[0, 2].set(params["shift"]), meta)


kit_shift = op("kit_shift", params=_SHIFT)(warp(_shift))
# the same geometry, masks declared to stay where they were: boxes and keypoints follow
kit_shift_keeps_masks = op("kit_shift_keeps_masks", params=_SHIFT,
                           targets=Follow(masks="keep", points="matrix"))(warp(_shift))



def _fixed(params, meta, **_):
    """Moves the image 3 pixels along the width."""
    return Warp.forward(jnp.eye(3, dtype=jnp.float32).at[0, 2].set(3.0), meta)


# an op without params whose masks stay where they were
kit_fixed_keeps_masks = op("kit_fixed_keeps_masks",
                           targets=Follow(masks="keep", points="matrix"))(warp(_fixed))


@op("kit_mask_levels", params={"amount": Param((0.0, 0.02), kind="float_or_pair", neutral=0.0,
                                                low=0.0, high=1.0)},
    targets=Follow(masks="kernel"))
def kit_mask_levels(image, params):
    """Darkens by ``amount`` of the range (a colour op declared to carry masks through its
    kernel, so the masks' bytes darken too). Params: ``amount``."""
    top = 255.0 if image.dtype == jnp.uint8 else 1.0
    out = image.astype(jnp.float32) * (1.0 - params["amount"]) - params["amount"] * top
    out = jnp.clip(out, 0.0, top)
    return (jnp.floor(out).astype(image.dtype) if image.dtype == jnp.uint8 else out)


def _fails(spec) -> str:
    with pytest.raises(OpCheckError) as info:
        check_op(spec, checks=["check_geometry"])
    return str(info.value)


def test_a_correct_op_with_a_small_default_warp_passes():
    report = check_op(kit_shift, checks=["check_geometry"], on_fail="raise")
    assert [r.status for r in report] == ["passed"]


def test_masks_left_in_place_fail_with_a_warp_that_moves_pixels():
    msg = _fails(kit_shift_keeps_masks)
    assert "op 'kit_shift_keeps_masks' failed check_geometry" in msg
    assert "masks do not follow the pixels" in msg
    # the parameters it was bound to, and the numbers: how far off, of how many pixels
    assert "bound to " in msg and "shift=5.0" in msg
    far, tol = (float(v) for v in re.search(r"([\d.]+) px away \(tolerance ([\d.]+)", msg).groups())
    assert far > tol
    bad, of = (int(v) for v in re.search(r"; (\d+) of (\d+) pixels\)", msg).groups())
    assert 0 < bad <= of


def test_an_op_without_params_is_named_so():
    msg = _fails(kit_fixed_keeps_masks)
    assert "sample 0 (no params): masks do not follow the pixels" in msg
    assert "(params )" not in msg


def test_a_kernel_that_changes_mask_ids_fails():
    msg = _fails(kit_mask_levels)
    assert "op 'kit_mask_levels' failed check_geometry" in msg and "masks changed their ids" in msg
    held = re.search(r"a mask holding ids \[([\d, ]+)\]", msg).group(1)
    assert [int(v) for v in held.split(", ")] == [7, 300, 70007, 16909060]
    new = [int(v) for v in re.findall(r"(\d+) \(\d+ px\)", msg)]
    assert new and not set(new) & {0, 7, 300, 70007, 16909060}
    # what the runtime does with the op: a mask of 7s comes back with other ids
    x = np.zeros((1, 8, 8, 3), np.uint8)
    masks = np.full((1, 8, 8), 7, np.int32)
    out = kit_mask_levels.apply(x, masks=masks, params={"amount": np.array([0.02], np.float32)})
    assert set(np.unique(np.asarray(out["masks"]))) - {0, 7}


@op("kit_sneaky_flip")
def kit_sneaky_flip(image, params):
    """Flips the image upside down without declaring it (no matrix=, masks kept)."""
    return image[::-1]


@op("kit_sneaky_shift")
def kit_sneaky_shift(image, params):
    """Moves the image 4 pixels to the right without declaring it."""
    return jnp.roll(image, 4, axis=1)


@pytest.mark.parametrize("moving, how", [(kit_sneaky_flip, "flipped upside down"),
                                         (kit_sneaky_shift, "shifted 3 px right")])
def test_a_kernel_that_moves_pixels_undeclared_fails(moving, how):
    """An op that keeps its targets in place but moves the image: its masks, boxes and
    keypoints would stay behind; the kit says which move its output matches, with numbers."""
    report = check_op(moving, on_fail=None, checks=["check_targets_stay"])
    (result,) = list(report)
    assert result.status == "failed", result
    assert how in result.reason and "geometric=True" in result.reason, result.reason
    assert re.search(r"correlation \d\.\d\d\) far better than the input in place "
                     r"\(-?\d\.\d\d\)", result.reason), result.reason


def test_ops_that_keep_the_geometry_pass_the_stay_check():
    for name in ("brightness", "gaussian_blur", "random_erasing", "equalize", "invert"):
        report = check_op(name, on_fail=None, checks=["check_targets_stay"])
        assert [r.status for r in report] == ["passed"], (name, list(report))


def test_stronger_parameters_take_a_magnitude_map():
    """Parameters whose magnitude is a policy's MagnitudeMap (brightness's factor) are bound at
    the map's strongest level (was: TypeError, 'MagnitudeMap' object is not subscriptable)."""
    from augjax._plugins.registry import REGISTRY
    from augjax.testing._examples import example_op
    from augjax.testing._geometry import _stronger

    spec = REGISTRY.get("brightness")
    m = spec.params["factor"].magnitude
    assert not isinstance(m, tuple)
    strong = _stronger(example_op(spec))
    assert strong and all(abs(np.max(o.kwargs["factor"]) - 1.0) > 0.5 for o in strong), strong
