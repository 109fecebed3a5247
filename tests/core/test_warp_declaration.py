"""An op declared by its geometry (``@op`` over ``augjax.kernels.geometry.warp``): one function
gives its pixels and its matrix, so masks, boxes, keypoints and ``invert`` follow the pixels
(checked by the conformance kit's geometry check against a coordinate image), and ``@op``
refuses a declaration that states its geometry twice or cannot sample pixels."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from augjax import Param, op
from augjax.errors import OpDefinitionError
from augjax.kernels.geometry import Warp, warp
from augjax.kernels.warp import INTERPOLATIONS, inverse_affine_matrix
from augjax.testing import check_op

_PARAMS = {
    "degrees": Param((-20.0, 20.0), kind="float_or_pair", neutral=0.0),
    "interpolation": Param("bilinear", choices=INTERPOLATIONS),
    "fill": Param(0.0, kind="floats", low=0.0, high=1.0, optional=True),
}


@op("turn", params=_PARAMS)
@warp
def turn(params, meta, **_):
    """Turns about the centre by ``degrees`` (torchvision's centred inverse)."""
    inverse = inverse_affine_matrix((0.0, 0.0), params["degrees"], (0.0, 0.0), 1.0, (0.0, 0.0))
    return Warp.affine(inverse, meta)


@op("lean", params={**_PARAMS, "degrees": Param((-0.3, 0.3), kind="float_or_pair",
                                               neutral=0.0)})
@warp
def lean(params, meta, **_):
    """Shears along the height axis as PIL's affine transform does."""
    s = params["degrees"]
    return Warp.pil(jnp.stack([1.0, 0.0, 0.0, s, 1.0, 0.0]), meta)


@op("skew", params={**_PARAMS, "degrees": Param((-0.3, 0.3), kind="float_or_pair",
                                               neutral=0.0)})
@warp
def skew(params, meta, **_):
    """Shifts row ``y`` by ``t * (y - cy)`` pixels, given by the forward matrix."""
    t, cy = params["degrees"], (meta.height - 1) / 2.0
    m = jnp.eye(3, dtype=jnp.float32).at[0, 1].set(t).at[0, 2].set(-t * cy)
    return Warp.forward(m, meta)


@pytest.mark.fast_tier("forward")
@pytest.mark.parametrize("spec", [turn, lean, skew], ids=["affine", "pil", "forward"])
def test_an_op_declared_by_its_geometry_passes_the_geometry_check(spec):
    assert spec.geometric and spec.matrix is not None and spec.targets.points == "matrix"
    report = check_op(spec, on_fail="raise", checks=["check_geometry", "check_jit_matches_eager",
                                                      "check_sample_apply"])
    assert [r.status for r in report] == ["passed"] * 3, report


def test_the_matrix_is_the_pixels_geometry():
    """A keypoint moved by the derived matrix lands where a bright pixel moved (nearest)."""
    x = np.zeros((1, 15, 15, 1), np.uint8)
    x[0, 3, 5] = 255
    key = jax.random.key(3)
    out = turn(x, key=key, degrees=90.0, interpolation="nearest",
               keypoints=np.array([[[5.0, 3.0]]], np.float32))
    y, xx = np.argwhere(np.asarray(out["images"])[0, ..., 0] == 255)[0]
    assert np.allclose(np.asarray(out["keypoints"])[0, 0], [xx, y], atol=1e-3)


def test_declaring_the_geometry_twice_is_refused():
    with pytest.raises(OpDefinitionError, match="drop matrix="):
        op("twice", params=_PARAMS, matrix=lambda params, meta, **_: jnp.eye(3))(turn.kernel)


def test_warp_brings_the_parameters_the_pixels_are_sampled_with():
    """``@warp`` adds ``interpolation`` and ``fill`` (``convention`` on request) after the op's
    own parameters; one the op declares itself is kept; the op samples with them."""
    geometry = turn.kernel.geometry
    plain = op("plain_turn", params={"degrees": _PARAMS["degrees"]})(warp(geometry))
    assert list(plain.params) == ["degrees", "interpolation", "fill"]
    assert plain.params["interpolation"].default == "nearest"
    assert plain.params["fill"].optional and plain.params["fill"].kind == "floats"
    smooth = op("smooth_turn", params={"degrees": _PARAMS["degrees"]})(
        warp(interpolation="bilinear", convention=True)(geometry))
    assert list(smooth.params) == ["degrees", "interpolation", "fill", "convention"]
    assert smooth.params["interpolation"].default == "bilinear"
    own = Param("bilinear", choices=("bilinear",))
    kept = op("own_turn", params={"degrees": _PARAMS["degrees"], "interpolation": own})(
        warp(geometry))
    assert kept.params["interpolation"] is own
    x = np.zeros((1, 9, 9, 1), np.uint8)
    x[0, 2, 4] = 255
    for spec, expected in ((plain, "nearest"), (smooth, "bilinear")):
        out = spec(x, key=jax.random.key(0), degrees=37.0)
        ref = turn(x, key=jax.random.key(0), degrees=37.0, interpolation=expected, fill=0.0)
        assert np.array_equal(np.asarray(out), np.asarray(ref))
    with pytest.raises(ValueError, match="interpolation must be one of"):
        warp(interpolation="cubic")


def test_a_geometry_without_fill_or_interpolation_is_refused():
    from augjax.kernels.geometry import WarpKernel

    with pytest.raises(OpDefinitionError, match="'interpolation' and 'fill'"):
        op("nofill", params={"degrees": _PARAMS["degrees"]})(
            WarpKernel(turn.kernel.geometry, params={}))


def test_a_geometry_with_a_wrong_signature_is_refused():
    def bad(image, params):
        """Takes the image: a kernel, not a geometry."""
        return Warp.affine(jnp.zeros(6), None)

    with pytest.raises(OpDefinitionError, match=r"def bad\(params, meta"):
        op("bad", params=_PARAMS)(warp(bad))


def test_compute_bound_is_deprecated_and_ignored():
    def kernel(image, params):
        """Identity."""
        return image

    with pytest.warns(DeprecationWarning, match="compute_bound"):
        spec = op("hinted", compute_bound=True)(kernel)
    assert spec.compute_bound is False
    with pytest.raises(TypeError, match="unexpected keyword"):
        op("typo", compte_bound=True)(kernel)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert op("plain")(kernel).compute_bound is False


def test_random_is_deprecated_and_derived_from_the_declaration():
    def kernel(image, params):
        """Identity."""
        return image

    def drawn(image, params):
        """Identity; ``params["amount"]`` is drawn per sample."""
        return image

    amount = {"amount": Param((0.1, 0.9), kind="float_or_pair")}
    with pytest.warns(DeprecationWarning, match="random"):
        assert op("still_fixed", random=True)(kernel).random is False
    with pytest.warns(DeprecationWarning, match="random"):
        assert op("still_drawn", params=amount, random=True)(drawn).random is True
    with pytest.warns(DeprecationWarning), pytest.raises(OpDefinitionError, match="random=False"):
        op("contradicts", params=amount, random=False)(drawn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert op("fixed")(kernel).random is False
        assert op("drawn", params=amount)(drawn).random is True
