"""JSON configs: every chain, composite and policy round-trips exactly (and so reuses the
compiled program), the output is strict JSON, and loading validates with clear errors."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest
from helpers import images

import augjax
from augjax.errors import OpNotFoundError, ParamError

ops = augjax.ops

STEPS = {
    "op": ops.rotate.bind(degrees=(-10.0, 10.0), interpolation="bilinear", fill=(0.1, 0.2, 0.3)),
    "spec": ops.invert,
    "chain": augjax.compose(ops.flip, ops.random_crop.bind(size=(8, 10)), ops.normalize,
                            start=2),
    "composites": augjax.compose(
        augjax.random_apply([ops.invert, ops.equalize], 0.25),
        augjax.random_choice([ops.autocontrast, ops.brightness.bind(factor=(0.5, 1.5))],
                             weights=[1, 3]),
        augjax.some_of([ops.grayscale, ops.posterize.bind(bits=(4, 6))], n=(0, 2)),
        augjax.random_order([ops.invert, ops.solarize.bind(threshold=(64, 192))]),
        ops.mixup.bind(num_classes=10, label_smoothing=0.1)),
    "rand_augment": augjax.rand_augment(n=3, m=5, num_magnitude_bins=11, exclude=["Identity"]),
    "rand_augment_timm": augjax.from_timm("rand-m9-mstd101-tweights"),
    "rand_augment_dali": augjax.rand_augment(style="dali", increasing=False, fill=64 / 255),
    "trivial": augjax.trivial_augment_wide(ops=["shear_x", "rotate"], style="dali"),
    "auto_augment": augjax.auto_augment("svhn", fill=(0.1, 0.2, 0.3)),
    "auto_augment_timm": augjax.from_timm("original-mstd0.5", img_size=160),
    "augmix": augjax.augmix(severity=4, width=2, depth=2, alpha=0.5, all_ops=False),
    "augmix_timm": augjax.from_timm("augmix-m5-w4-d2-b1"),
}


@pytest.mark.parametrize("name", list(STEPS))
def test_round_trip_is_exact_and_strict_json(name):
    step = STEPS[name]
    d = augjax.to_dict(step)
    assert d["augjax_config"] == 1
    text = json.dumps(d, allow_nan=False)  # strict JSON: no NaN / Infinity
    back = augjax.from_json(text)
    expected = step.bind() if isinstance(step, augjax.OpSpec) else step
    assert back == expected and hash(back) == hash(expected)
    assert augjax.to_dict(back) == d
    assert augjax.to_json(back) == augjax.to_json(expected)


def test_inf_is_written_as_a_string():
    d = augjax.to_dict(augjax.from_timm("augmix-m3"))
    assert d["mstd"] == "inf" and augjax.from_dict(d).mstd == math.inf


def test_rebuilt_step_reuses_the_compiled_program():
    step = augjax.compose(ops.flip, augjax.random_apply(ops.invert, 0.5))
    x = images(4, 8, 8)
    keys = jax.random.split(jax.random.key(0), 4)
    first = np.asarray(step(x, key=keys))
    before = augjax.trace_count()
    again = augjax.from_json(augjax.to_json(step))
    np.testing.assert_array_equal(first, np.asarray(again(x, key=keys)))
    assert augjax.trace_count() == before


def _config(**node):
    return {"augjax_config": 1, **node}


@pytest.mark.parametrize("config, error, match", [
    ({"type": "op", "name": "flip"}, ParamError, "augjax_config"),
    ({"augjax_config": 2, "type": "op", "name": "flip"}, ParamError, "version 2"),
    (_config(type="op", name="flipp"), OpNotFoundError, "did you mean 'flip'"),
    (_config(type="compose", steps=[{"type": "op", "name": "flip", "params": {"p": 2}}]),
     ParamError, r"config\.steps\[0\].*'p'"),
    (_config(type="compose", steps=[{"type": "op", "name": "flip",
                                     "params": {"probability": 0.5}}]),
     ParamError, "unknown parameter 'probability'"),
    (_config(type="compose", steps=[{"type": "random_apply", "op": {"type": "op",
                                                                   "name": "rotte"}}]),
     OpNotFoundError, r"steps\[0\]\.op"),
    (_config(type="compose", steps={"type": "op", "name": "flip"}), ParamError,
     "expects a list"),
    (_config(type="shuffle", ops=[]), ParamError, "unknown node type 'shuffle'"),
    (_config(type="random_apply", op={"type": "op", "name": "flip"}, q=1), ParamError,
     r"unknown key\(s\) \['q'\]"),
    (_config(type="random_choice"), ParamError, r"missing key\(s\) \['ops'\]"),
    (_config(type="rand_augment", m=40), ParamError, "'m'"),
    (_config(type="rand_augment", magnitude=9), ParamError, r"unknown key\(s\) \['magnitude'\]"),
    (_config(type="auto_augment", policy="imagenet1k"), ParamError, "'policy'"),
    (_config(type="augmix", ops=["Equalize", "Bogus"]), ParamError, "unknown op name"),
    (_config(type="some_of", ops=[{"type": "op", "name": "invert"}], n=[2, 1]), ParamError,
     "'n'"),
    ([1, 2], ParamError, "expects a dict"),
])
def test_load_errors(config, error, match):
    with pytest.raises(error, match=match):
        augjax.from_dict(config)


def test_from_json_rejects_bad_text():
    with pytest.raises(ParamError, match="not valid JSON"):
        augjax.from_json("{'augjax_config': 1")


def test_op_params_are_all_written():
    d = augjax.to_dict(ops.flip)
    assert d == {"augjax_config": 1, "type": "op", "name": "flip",
                 "params": {"p": 0.5, "horizontal": True, "vertical": False}}
