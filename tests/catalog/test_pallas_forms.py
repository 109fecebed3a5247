"""The CUDA (Pallas) forms of ``augjax.kernels.sample`` and ``correlate_separable`` against their
XLA forms: interpreted on the CPU (bitwise: the same operations in the same order), exported for
CUDA from this host (the ops lower to Triton calls), and compiled on a GPU (marked ``gpu``)."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax.kernels import correlate1d, gaussian_kernel1d
from helpers import images

warp = sys.modules["augjax.kernels.warp"]
filters = sys.modules["augjax.kernels.filters"]


def _coords(n, ho, wo, h, w, seed):
    """Source coordinates over and past the image, with exact half-pixel ties and whole
    pixels (nearest's and bilinear's edge cases)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, w + 1.0, (n, ho, wo)).astype(np.float32)
    y = rng.uniform(-2.0, h + 1.0, (n, ho, wo)).astype(np.float32)
    x[:, 0] = np.round(x[:, 0]) + 0.5
    y[:, 1] = np.round(y[:, 1])
    x[:, -1, :3] = [-0.5, w - 0.5, w - 1.0]
    return x, y


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, (0.2, 0.5, 1.0)])
@pytest.mark.parametrize("h,w,ho,wo", [(12, 9, 7, 11), (33, 40, 33, 40)])  # tiles overlap
def test_the_sample_kernel_interpreted_gives_the_xla_pixels(interpolation, fill, h, w, ho, wo):
    from augjax.kernels._sample_pallas import sample_kernel

    x = images(3, h, w, 3, dtype=np.uint8, seed=h)
    sx, sy = _coords(3, ho, wo, h, w, seed=ho)
    f = None if fill is None else jnp.asarray(fill, jnp.float32) * 255.0

    def xla(im, a, b):
        return warp._sample_xla(im, a, b, interpolation, f)

    def kernel(im, a, b):
        return sample_kernel(im, a, b, interpolation, f, interpret=True)

    want = np.asarray(jax.jit(jax.vmap(xla))(x, sx, sy))
    got = np.asarray(jax.jit(jax.vmap(kernel))(x, sx, sy))
    np.testing.assert_array_equal(got, want)
    assert got.shape == (3, ho, wo, 3)


@pytest.mark.parametrize("taps,h,w,c", [(41, 30, 26, 1), (5, 9, 7, 3), (15, 6, 5, 1)])
@pytest.mark.parametrize("axis", [0, 1])
def test_the_correlate_kernel_interpreted_gives_the_xla_sums(taps, h, w, c, axis):
    """Kernels longer than the image (15 taps over 5 or 6 pixels: the reflection repeats)."""
    from augjax.kernels._correlate_pallas import correlate1d_kernel

    x = images(2, h, w, c, dtype=np.float32, seed=taps) * 2.0 - 1.0
    k = gaussian_kernel1d(taps, jnp.float32(taps / 5.0))
    want = np.asarray(jax.jit(jax.vmap(lambda v: correlate1d(v, k, axis)))(x))
    got = np.asarray(jax.jit(jax.vmap(
        lambda v: correlate1d_kernel(v, k, axis, interpret=True)))(x))
    np.testing.assert_array_equal(got, want)


def _exported_for_cuda(f, *shapes):
    from jax import export

    try:
        return export.export(jax.jit(f), platforms=["cuda"])(*shapes).mlir_module()
    except ValueError as e:  # no compatibility guarantee for Triton calls: the message has it
        return str(e)


def test_sample_and_the_separable_blur_take_the_kernels_for_cuda(monkeypatch):
    """Exported for CUDA from this host, as a host with a GPU traces them: uint8 sampling and
    float32 separable correlation are Triton calls; float32 sampling stays with XLA."""
    from augjax._runtime import platform

    monkeypatch.setattr(platform, "live_platforms", lambda: frozenset({"cpu", "cuda"}))
    coords = jax.ShapeDtypeStruct((4, 32, 32), jnp.float32)
    k = gaussian_kernel1d(41, jnp.float32(5.0))

    def sampled(dtype):
        return _exported_for_cuda(
            jax.vmap(lambda im, a, b: warp.sample(im, a, b, "bilinear", None)),
            jax.ShapeDtypeStruct((4, 32, 32, 3), dtype), coords, coords)

    assert "__gpu$xla.gpu.triton" in sampled(jnp.uint8)
    assert "__gpu$xla.gpu.triton" not in sampled(jnp.float32)
    blurred = _exported_for_cuda(jax.vmap(lambda v: filters.correlate_separable(v, k, k)),
                                 jax.ShapeDtypeStruct((4, 32, 32, 1), jnp.float32))
    assert "__gpu$xla.gpu.triton" in blurred


@pytest.mark.gpu
@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a CUDA GPU (Triton)")
@pytest.mark.parametrize("name", ["elastic_transform", "rotate", "water"])
def test_the_kernels_on_a_gpu_give_the_xla_pixels(name, monkeypatch):
    """Compiled by Triton: an op's params and pixels with the kernels equal those of the XLA
    forms on the same GPU, bitwise."""
    op = augjax.get_op(name)
    x = images(16, 224, 224, 3, dtype=np.uint8, seed=5)
    key = jax.random.key(3)
    params = jax.jit(lambda v, k: op.sample(v, key=k))(x, key)
    got = np.asarray(jax.jit(lambda v, p: op.apply(v, params=p))(x, params))
    monkeypatch.setattr(warp, "_pallas_available", lambda: False)
    monkeypatch.setattr(filters, "_pallas_available", lambda: False)
    want_params = jax.jit(lambda v, k: op.sample(v, key=k))(x, key)
    for k in params:
        np.testing.assert_array_equal(np.asarray(params[k]), np.asarray(want_params[k]),
                                      err_msg=f"{name}: param {k}")
    want = np.asarray(jax.jit(lambda v, p: op.apply(v, params=p))(x, want_params))
    np.testing.assert_array_equal(got, want)
