"""Conversions (augjax.catalog.convert) against torchvision and a float64 NumPy transcription.

Tolerances: normalize within 1e-6 of the float64 formula and of torchvision (measured 7e-7:
augjax folds 1/255 and 1/std into one multiply-add); to_float bit for bit torchvision
(``x * (1/255)``, within two float32 ulps of x / 255); to_uint8 exact to round-to-nearest, and
within one level of torchvision's truncation.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
import torch
from helpers import images, run_dali
from torchvision.transforms.v2 import functional as F

import augjax
from augjax.errors import InputError, ParamError

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def tv(fn, x: np.ndarray, **kw) -> np.ndarray:
    t = torch.from_numpy(np.array(x)).permute(0, 3, 1, 2)
    return fn(t, **kw).permute(0, 2, 3, 1).numpy()


def tv_normalize(t, mean=MEAN, std=STD):
    return F.normalize(F.to_dtype(t, torch.float32, scale=True), list(mean), list(std))


def maxdiff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_normalize_matches_torchvision_and_formula(dtype):
    x = images(4, 16, 20, dtype=dtype, seed=1)
    out = np.asarray(augjax.ops.normalize(x))
    assert out.dtype == np.float32 and out.shape == x.shape
    unit = x.astype(np.float64) / (255.0 if dtype == np.uint8 else 1.0)
    assert maxdiff(out, (unit - np.array(MEAN)) / np.array(STD)) <= 1e-6
    assert maxdiff(out, tv(tv_normalize, x)) <= 1e-6


def test_normalize_uint8_and_float_inputs_agree():
    x = images(2, 8, 8, seed=2)
    a = augjax.ops.normalize(x, mean=0.5, std=0.25)
    b = augjax.ops.normalize(x.astype(np.float32) / 255, mean=0.5, std=0.25)
    assert maxdiff(a, b) <= 1e-6
    assert maxdiff(a, (x / 255 - 0.5) / 0.25) <= 1e-6


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_normalize_chw_output(layout):
    x = images(3, 6, 7, seed=3)
    src = x.transpose(0, 3, 1, 2).copy() if layout == "CHW" else x
    out = np.asarray(augjax.ops.normalize(src, layout=layout, chw=True))
    assert out.shape == (3, 3, 6, 7)
    np.testing.assert_array_equal(out, np.asarray(augjax.ops.normalize(x)).transpose(0, 3, 1, 2))
    kept = np.asarray(augjax.ops.normalize(src, layout=layout))
    assert kept.shape == src.shape


def test_normalize_after_an_adjustment():
    x = images(2, 8, 8, seed=4)
    key = jax.random.key(1)
    bright = augjax.ops.brightness(x, key=key, factor=1.3)
    np.testing.assert_allclose(augjax.ops.normalize(bright), tv(tv_normalize, np.asarray(bright)),
                               atol=1e-6)


def test_to_float_and_to_uint8():
    x = images(4, 16, 20, seed=5)
    f = np.asarray(augjax.ops.to_float(x))
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f, tv(F.to_dtype, x, dtype=torch.float32, scale=True))
    assert maxdiff(f, x.astype(np.float64) / 255) <= 1.2e-7  # two float32 ulps below 1
    np.testing.assert_array_equal(augjax.ops.to_uint8(f), x)  # round trip is exact
    y = np.linspace(-0.2, 1.2, 4 * 5 * 7 * 3, dtype=np.float32).reshape(4, 5, 7, 3)
    u = np.asarray(augjax.ops.to_uint8(y))
    assert u.dtype == np.uint8
    np.testing.assert_array_equal(u, np.round(np.clip(y.astype(np.float64), 0, 1) * 255))
    inside = np.clip(y, 0, 1)
    assert maxdiff(u, tv(F.to_dtype, inside, dtype=torch.uint8, scale=True)) <= 1


def test_conversions_pass_their_target_dtype_through():
    x = images(2, 8, 8, seed=6)
    f = images(2, 8, 8, dtype=np.float32, seed=6)
    np.testing.assert_array_equal(augjax.ops.to_uint8(x), x)
    np.testing.assert_array_equal(augjax.ops.to_float(f), f)


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_dali_pipeline_equals_array_path(layout):
    x = images(4, 8, 10, seed=7)
    src = x.transpose(0, 3, 1, 2).copy() if layout == "CHW" else x

    def build(imgs):
        f = augjax.ops.to_float(imgs, layout=layout)
        return (augjax.ops.normalize(imgs, layout=layout, chw=True), f,
                augjax.ops.to_uint8(f, layout=layout),
                augjax.ops.normalize(imgs, layout=layout, mean=(0.5,), std=(0.2,)))

    (outs,) = run_dali(build, src, layouts=[layout])
    want = [augjax.ops.normalize(src, layout=layout, chw=True),
            augjax.ops.to_float(src, layout=layout), src,
            augjax.ops.normalize(src, layout=layout, mean=(0.5,), std=(0.2,))]
    for got, w in zip(outs, want):
        assert got.dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(got, w)


def test_dali_normalize_reports_the_chw_layout():
    from nvidia.dali import fn, pipeline_def

    x = images(2, 8, 10, seed=8)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe():
        imgs = fn.external_source(source=lambda: x, batch=True, layout="HWC")
        return augjax.ops.normalize(imgs, chw=True)

    p = pipe()
    p.build()
    (out,) = p.run()
    assert out.layout() == "CHW" and out.as_tensor().shape() == [2, 3, 8, 10]


@pytest.mark.parametrize("kw, param", [({"std": (0.2, 0.0, 0.1)}, "std"), ({"std": ()}, "std"),
                                       ({"mean": "a"}, "mean"), ({"chw": 1}, "chw")])
def test_bad_params_raise_param_error(kw, param):
    with pytest.raises(ParamError, match=f"normalize: parameter '{param}'"):
        augjax.ops.normalize.bind(**kw)


def test_a_mean_and_std_in_0_255_levels_warn_and_run_as_given():
    """torchvision's mean/std are in the 0..1 scale: a mean of 0..255 levels (123.675, ...)
    runs (valid numbers) but warns once at the user's line, naming the op, the parameter, the
    usual range and the scale of both; values in [0, 1] (ImageNet's, the defaults) say
    nothing."""
    mean, std = (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)
    x = images(2, 8, 8, seed=3)
    with pytest.warns(augjax.AugjaxWarning) as caught:
        out = np.asarray(augjax.ops.normalize(x, mean=mean, std=std))
    messages = [str(w.message) for w in caught]
    assert messages == ["normalize: parameter 'mean' is (123.675, 116.28, 103.53), outside its "
                        "usual range [0, 1] (mean and std in the 0..1 scale, as torchvision's: "
                        "0..255 levels divided by 255); it runs as given"], messages
    assert {w.filename for w in caught} == {__file__}
    expected = (x.astype(np.float64) / 255 - np.asarray(mean)) / np.asarray(std)
    assert maxdiff(out, expected) < 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        augjax.ops.normalize(x)
        augjax.ops.normalize.bind(mean=(0.5,), std=(0.5,))
        augjax.ops.normalize.bind(mean=(0.0,), std=(1 / 255,))  # from_torchvision's unscaled end


def test_mean_of_the_wrong_length_is_an_input_error():
    with pytest.raises(InputError, match="normalize: parameter 'mean' has 3 values but the "
                                         "images have 4 channels"):
        augjax.ops.normalize(images(2, 8, 8, c=4))


@pytest.mark.parametrize("name, kw", [("normalize", {}), ("normalize", {"chw": True}),
                                      ("to_float", {}), ("to_uint8", {})])
def test_deterministic_params_are_empty_and_apply_is_the_call(name, kw):
    spec = getattr(augjax.ops, name)
    assert not spec.random
    x = images(3, 6, 7, dtype=np.float32 if name == "to_uint8" else np.uint8, seed=9)
    assert spec.sample(x, key=jax.random.key(0), **kw) == {}
    np.testing.assert_array_equal(spec.apply(x, params={}, **kw), spec(x, **kw))


def test_normalize_apply_is_differentiable_in_the_image():
    x = jax.numpy.asarray(images(2, 5, 6, dtype=np.float32, seed=10))
    grad = jax.grad(lambda v: augjax.ops.normalize.apply(v, params={}).sum())(x)
    np.testing.assert_allclose(np.asarray(grad),
                               np.broadcast_to(1 / np.array(STD, np.float32), x.shape),
                               rtol=1e-6)
