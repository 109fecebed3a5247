"""The authoring API: @op declarations, Param validation, frozen specs."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import Param, op
from augjax.errors import OpDefinitionError, ParamError


def _kernel(image, params, *, amount):
    return image


def _coin(key, meta, params, *, amount):
    return {"applied": jax.random.uniform(key, ()) < amount}


def test_op_returns_frozen_spec_and_registers_nothing():
    before = augjax.list_ops()
    spec = op("my_test_op", params={"amount": Param(0.5, low=0.0, high=1.0, neutral=0.0)},
              sample=_coin)(_kernel)
    assert isinstance(spec, augjax.OpSpec)
    assert spec.name == "my_test_op" and spec.level == "sample" and spec.random
    assert spec.static == ("amount",) and spec.per_sample == ()
    assert spec.api_version == augjax.API_VERSION
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"
    with pytest.raises(TypeError):
        spec.params["amount"] = Param(1.0)
    assert augjax.list_ops() == before
    assert "my_test_op" not in augjax.list_ops()


@pytest.mark.parametrize(
    "kwargs, kernel, match",
    [
        ({"params": {"amount": Param(0.5)}}, lambda image, params: image, "kernel must be"),
        ({"params": {}}, _kernel, "kernel must be"),
        ({"params": {"amount": Param(0.5)}}, lambda image, extra, *, amount: image,
         "kernel must be"),
        ({"params": {"amount": Param((0.1, 0.9), kind="float_or_pair")}}, _kernel,
         "per-sample parameters"),
        ({"params": {"amount": Param(0.5)}, "sample": 3}, _kernel, "sample= must be callable"),
        ({"params": {"amount": Param((0.1, 0.9), kind="float_or_pair")}, "random": False},
         lambda image, params: image, "random=False"),
        ({"params": {"amount": Param(0.5)}}, lambda key, image, *, amount: image,
         "takes a key .* 2.0"),
        ({"params": {"amount": Param(0.5)}, "level": "pixel"}, _kernel, "level must be"),
        ({"params": {"amount": 0.5}}, _kernel, "must be an augjax.Param"),
        ({"params": {"amount": Param(2.0, high=1.0)}}, _kernel, "parameter 'amount'"),
        ({"params": {"amount": Param(0.5)}, "dtypes": ("int16",)}, _kernel, "dtypes"),
        ({"params": {"amount": Param(0.5)}, "inputs": ("images", "labels")}, _kernel, "labels"),
    ],
)
def test_bad_declarations_raise_op_definition_error(kwargs, kernel, match):
    with pytest.raises(OpDefinitionError, match=match):
        op("bad_op", **kwargs)(kernel)


def test_bad_name_and_reserved_param():
    with pytest.raises(OpDefinitionError, match="name must match"):
        op("Bad-Name", params={"amount": Param(0.5)})(_kernel)

    def k(image, params, *, seed):
        return image

    with pytest.raises(OpDefinitionError, match="reserved"):
        op("reserved_op", params={"seed": Param(1)})(k)


def test_batch_level_signature_with_labels():
    def kernel(images, labels, params, *, alpha):
        return images, labels

    spec = op("mix_like", params={"alpha": Param(1.0, low=0.0)}, level="batch",
              inputs=("images", "labels"))(kernel)
    assert spec.outputs == ("images", "labels")


@pytest.mark.parametrize(
    "param, value, expected",
    [
        (Param(0.5, low=0.0, high=1.0), 1, 1.0),
        (Param((0.1, 0.2), low=0.0), [0.1, 0.3], (0.1, 0.3)),
        (Param(3, low=1), 4, 4),
        (Param("a", choices=("a", "b")), "b", "b"),
        (Param(224, kind="size", low=1), 32, (32, 32)),
        (Param((0.5,), kind="floats"), [0.1, 0.2, 0.3], (0.1, 0.2, 0.3)),
    ],
)
def test_param_check_normalises(param, value, expected):
    assert param.check("op", "x", value) == expected


@pytest.mark.parametrize(
    "param, value, fragment",
    [
        (Param(0.5, low=0.0, high=1.0), 1.5, "above 1"),
        (Param(0.5, low=0.0, high=1.0), float("nan"), "not finite"),
        (Param(0.5, low=0.0, high=1.0), "0.5", "not a number"),
        (Param(0.5), True, "not a number"),
        (Param(3, low=1), 2.5, "not an integer"),
        (Param("a", choices=("a", "b")), "c", "one of 'a', 'b'"),
        (Param((0.1, 0.2)), (0.3, 0.2), "low > high"),
        (Param(True), 1, "not a bool"),
        (Param(None, kind="int", required=True), None, "is required"),
    ],
)
def test_param_check_errors_name_op_param_expected_and_got(param, value, fragment):
    with pytest.raises(ParamError, match=fragment) as info:
        param.check("my_op", "x", value)
    msg = str(info.value)
    assert "my_op" in msg and "'x'" in msg
    assert info.value.op == "my_op" and info.value.param == "x"


def test_unknown_param_suggests_close_match():
    with pytest.raises(ParamError, match="did you mean 'brightness'"):
        augjax.ops.color_jitter.bind(brightnes=0.4)


def test_bind_is_hashable_and_equal_for_equal_params():
    a = augjax.ops.flip.bind(p=0.5)
    b = augjax.ops.flip.bind(p=0.5, horizontal=True)
    assert a == b and hash(a) == hash(b)
    assert a != augjax.ops.flip.bind(p=0.4)
    assert repr(a) == "flip.bind(p=0.5, horizontal=True, vertical=False)"


def test_bind_remembers_plain_parameters_and_still_validates_each_type():
    flip = augjax.ops.flip
    assert flip.bind(p=0.25) is flip.bind(p=0.25)  # validated once
    # equal in Python but not the same parameter: each is validated on its own
    assert flip.bind(horizontal=True).kwargs["horizontal"] is True
    with pytest.raises(ParamError, match="not a bool"):
        flip.bind(horizontal=1)
    with pytest.raises(ParamError, match="not a bool"):
        flip.bind(horizontal=1)  # a failure is not remembered either
    assert flip.bind(p=1).kwargs["p"] == 1.0
    with pytest.raises(ParamError, match="flip"):
        flip.bind(p=True)
    # the sign of a zero is kept apart
    a, b = augjax.ops.hue.bind(factor=0.0), augjax.ops.hue.bind(factor=-0.0)
    assert a is not b


def test_bind_of_values_it_cannot_key_validates_every_time():

    hue = augjax.ops.hue
    a, b = hue.bind(factor=np.float32(0.1)), hue.bind(factor=np.float32(0.1))
    assert a == b and a is not b
    with pytest.raises(ParamError, match="hue"):
        hue.bind(factor=float("nan"))
    with pytest.raises(ParamError, match="hue"):
        hue.bind(factor=float("nan"))


@pytest.mark.slow
def test_remembered_binding_gives_the_uncached_bindings_batch():
    """Remembered bindings against ones validated afresh (``BoundOp.create``, no cache), for two
    parameter sets in a row: a remembered binding never stands in for other values."""
    import jax

    from augjax.calls import BoundOp

    x = jnp.asarray(np.random.default_rng(0).integers(0, 256, (4, 8, 8, 3), dtype=np.uint8))
    key = jax.random.key(3)
    jitter = augjax.ops.color_jitter
    for params in ({"brightness": 0.4, "hue": (-0.1, 0.1)}, {"brightness": 0.4, "hue": 0.3}):
        expected = np.asarray(BoundOp.create(jitter, dict(params))(x, key=key))
        for _ in range(2):  # the first call remembers, the second is served from memory
            np.testing.assert_array_equal(np.asarray(jitter(x, key=key, **params)), expected)
    assert not np.array_equal(np.asarray(jitter(x, key=key, brightness=0.4, hue=0.3)),
                              np.asarray(jitter(x, key=key, brightness=0.4, hue=(-0.1, 0.1))))


def test_user_op_runs_on_arrays():
    def kernel(image, params, *, amount):
        return (image.astype(jnp.float32) * amount).astype(image.dtype)

    spec = op("scale_test", params={"amount": Param(0.5, low=0.0, high=1.0)})(kernel)
    x = jnp.full((2, 3, 4, 3), 100, jnp.uint8)
    out = spec(x, amount=0.5)
    assert out.dtype == jnp.uint8 and int(out.max()) == 50 and not spec.random


def test_per_sample_parameters_are_drawn_in_declared_order_before_the_hook():
    """The documented draw order: one uniform per per-sample parameter, in declared order, from
    fold_in(op_key, 0); the hook's key is fold_in(op_key, 1) and it sees the drawn values."""
    seen = {}

    def hook(key, meta, params, *, a, b, c):
        seen.update(meta=meta, keys=set(params))
        return {"u": jax.random.uniform(key, ())}

    def kernel(image, params, *, c):
        return image

    spec = op("order_test", params={"a": Param((2.0, 4.0), kind="float_or_pair"),
                                    "c": Param(1.0),
                                    "b": Param((1, 3), kind="int_or_pair")},
              sample=hook)(kernel)
    x = jnp.zeros((3, 5, 6, 3), jnp.uint8)
    keys = jax.random.split(jax.random.key(7), 3)
    p = spec.sample(x, key=keys)
    op_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, 0)
    u = jax.vmap(lambda k: jax.random.uniform(jax.random.fold_in(k, 0), (2,)))(op_keys)
    np.testing.assert_allclose(p["a"], 2.0 + 2.0 * u[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(p["b"], np.minimum(1 + np.floor(u[:, 1] * 3), 3))
    hook_u = jax.vmap(lambda k: jax.random.uniform(jax.random.fold_in(k, 1), ()))(op_keys)
    np.testing.assert_array_equal(p["u"], hook_u)
    assert seen["keys"] == {"a", "b"} and seen["meta"] == augjax.Meta(5, 6, 3, "uint8")
    assert p["a"].dtype == jnp.float32 and p["b"].dtype == jnp.float32


def test_cross_parameter_check_runs_when_configured():
    def kernel(image, params, *, low, high):
        return image

    def check(low, high):
        if low > high:
            raise ValueError(f"low ({low:g}) must be <= high ({high:g})")

    spec = op("range_op", params={"low": Param(0.1), "high": Param(0.9)}, check=check)(kernel)
    spec.bind(low=0.2, high=0.3)
    with pytest.raises(ParamError, match=r"range_op: low \(0.5\) must be <= high \(0.3\)"):
        spec.bind(low=0.5, high=0.3)
    with pytest.raises(ParamError, match="min_area"):  # a catalog op that declares one
        augjax.ops.random_erasing.bind(min_area=0.5, max_area=0.2)


def _wrapped(image, params):
    """Blends the image with its grayscale version (torchvision adjust_saturation; e.g. a
    ``0.5 * x`` blend. RandAugment's "Color"), clamped. Params: ``factor``.

    More detail here.
    """
    return image


def test_summary_is_the_whole_first_sentence_however_the_docstring_wraps():
    spec = op("wrapped_summary_op")(_wrapped)
    assert spec.summary == ("Blends the image with its grayscale version (torchvision "
                            "adjust_saturation; e.g. a ``0.5 * x`` blend. RandAugment's "
                            '"Color"), clamped.')


def test_every_registered_op_has_a_complete_summary():
    for name in augjax.list_ops():
        spec = augjax.get_op(name)
        paragraph = " ".join(spec.doc.strip().split("\n\n")[0].split())
        assert spec.summary.endswith(".") and paragraph.startswith(spec.summary), (name,
                                                                                  spec.summary)
