"""The CUDA (Pallas) forms of ``augjax.kernels.remap`` and ``correlate_separable`` against their
XLA forms: interpreted on the CPU (bitwise: the same operations in the same order), exported for
CUDA from this host (the ops lower to Triton calls), and compiled on a GPU (marked ``gpu``)."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import images

import augjax
from augjax.kernels import correlate1d, gaussian_kernel1d

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
@pytest.mark.parametrize("h,w,ho,wo,c", [(12, 9, 7, 11, 3), (33, 40, 33, 40, 3),  # tiles overlap
                                         (10, 12, 10, 12, 1), (9, 9, 8, 8, 5)])  # masks' channels
def test_the_sample_kernel_interpreted_gives_the_xla_pixels(interpolation, fill, h, w, ho, wo, c):
    from augjax.kernels._sample_pallas import sample_kernel

    x = images(3, h, w, c, dtype=np.uint8, seed=h)
    sx, sy = _coords(3, ho, wo, h, w, seed=ho)
    f = None if fill is None else jnp.resize(jnp.asarray(fill, jnp.float32), (c,)) * 255.0

    def xla(im, a, b):
        return warp.sample(im, a, b, interpolation, f)

    def kernel(im, a, b):
        return sample_kernel(im, a, b, interpolation, f, interpret=True)

    want = np.asarray(jax.jit(jax.vmap(xla))(x, sx, sy))
    got = np.asarray(jax.jit(jax.vmap(kernel))(x, sx, sy))
    np.testing.assert_array_equal(got, want)
    assert got.shape == (3, ho, wo, c)


@pytest.mark.parametrize("taps,h,w,c", [(41, 30, 26, 1), (5, 9, 7, 3), (15, 6, 5, 1),
                                        (3, 70, 300, 1)])  # 300 columns: two column blocks
def test_the_correlate_kernels_interpreted_give_the_xla_sums(taps, h, w, c):
    """Kernels longer than the image (15 taps over 5 or 6 pixels: the reflection repeats);
    blocks past the last row or column."""
    from augjax.kernels._correlate_pallas import (
        correlate_rows,
        correlate_separable_kernel,
    )

    x = images(2, h, w, c, dtype=np.float32, seed=taps) * 2.0 - 1.0
    k_rows = gaussian_kernel1d(taps, jnp.float32(taps / 5.0))
    k_cols = gaussian_kernel1d(taps, jnp.float32(taps / 7.0))
    want = np.asarray(jax.jit(jax.vmap(lambda v: correlate1d(v, k_rows, 0)))(x))
    got = np.asarray(jax.jit(jax.vmap(
        lambda v: correlate_rows(v.reshape(h, w * c), k_rows, interpret=True)))(x))
    np.testing.assert_array_equal(got.reshape(x.shape), want)
    want = np.asarray(jax.jit(jax.vmap(
        lambda v: filters.correlate_separable(v, k_rows, k_cols)))(x))
    got = np.asarray(jax.jit(jax.vmap(
        lambda v: correlate_separable_kernel(v, k_rows, k_cols, interpret=True)))(x))
    np.testing.assert_array_equal(got, want)


def _exported_for_cuda(f, *shapes):
    from jax import export

    try:
        return export.export(jax.jit(f), platforms=["cuda"])(*shapes).mlir_module()
    except ValueError as e:  # no compatibility guarantee for Triton calls: the message has it
        return str(e)


def test_remap_and_the_separable_blur_take_the_kernels_for_cuda(monkeypatch):
    """Exported for CUDA from this host, as a host with a GPU traces them: uint8 remapping and
    float32 separable correlation are Pallas calls; float32 remapping and ``sample`` (whose
    coordinates XLA fuses) stay with XLA."""
    from augjax._runtime import platform

    monkeypatch.setattr(platform, "live_platforms", lambda: frozenset({"cpu", "cuda"}))
    coords = jax.ShapeDtypeStruct((4, 32, 32), jnp.float32)
    k = gaussian_kernel1d(41, jnp.float32(5.0))
    pallas = "__gpu$xla.gpu.triton"

    def sampled(f, dtype):
        return _exported_for_cuda(jax.vmap(lambda im, a, b: f(im, a, b, "bilinear", None)),
                                  jax.ShapeDtypeStruct((4, 32, 32, 3), dtype), coords, coords)

    assert pallas in sampled(warp.remap, jnp.uint8)
    assert pallas not in sampled(warp.remap, jnp.float32)
    assert pallas not in sampled(warp.sample, jnp.uint8)
    blurred = _exported_for_cuda(jax.vmap(lambda v: filters.correlate_separable(v, k, k)),
                                 jax.ShapeDtypeStruct((4, 32, 32, 1), jnp.float32))
    assert pallas in blurred


@pytest.mark.gpu
@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a CUDA GPU (Triton)")
def test_the_kernels_on_a_gpu_give_the_xla_values():
    """Compiled by Triton: remap's pixels (both interpolations, a fill or none) and the
    separable blur's sums equal the XLA forms' on the same GPU, bitwise."""
    from augjax.kernels._correlate_pallas import correlate_separable_kernel
    from augjax.kernels._sample_pallas import sample_kernel

    x = images(8, 224, 224, 3, dtype=np.uint8, seed=5)
    sx, sy = _coords(8, 224, 224, 224, 224, seed=6)
    for interpolation in ("nearest", "bilinear"):
        for f in (None, jnp.asarray([51.0, 127.5, 255.0], jnp.float32)):
            want = jax.jit(jax.vmap(lambda im, a, b, i=interpolation, f=f: warp.sample(
                im, a, b, i, f)))
            got = jax.jit(jax.vmap(lambda im, a, b, i=interpolation, f=f: sample_kernel(
                im, a, b, i, f)))
            np.testing.assert_array_equal(np.asarray(got(x, sx, sy)),
                                          np.asarray(want(x, sx, sy)),
                                          err_msg=f"{interpolation}, fill {f}")
    u = images(8, 224, 224, 1, dtype=np.float32, seed=7) * 2.0 - 1.0
    k_rows = gaussian_kernel1d(41, jnp.float32(5.0))
    k_cols = gaussian_kernel1d(33, jnp.float32(4.0))
    xla = jax.jit(jax.vmap(lambda v: filters.correlate1d(
        jax.lax.optimization_barrier(filters.correlate1d(v, k_cols, 1)), k_rows, 0)))
    kernel = jax.jit(jax.vmap(lambda v: correlate_separable_kernel(v, k_rows, k_cols)))
    np.testing.assert_array_equal(np.asarray(kernel(u)), np.asarray(xla(u)))


def _elastic_with_and_without_the_kernels(monkeypatch):
    """elastic_transform's displacement and pixels through its sampler and kernel, traced anew
    with the kernels and with the XLA forms (fresh functions: augjax's cached programs would
    keep the first trace), and the op's own call; returns the three readings."""
    op = augjax.get_op("elastic_transform")
    x = images(16, 224, 224, 3, dtype=np.uint8, seed=5)
    keys = jax.random.split(jax.random.key(3), 16)
    cfg = {"alpha": (50.0, 50.0), "sigma": (5.0, 5.0)}
    meta = augjax.Meta(224, 224, 3, np.dtype(np.uint8), 16)

    def run():
        disp = jax.jit(jax.vmap(
            lambda k: op.sampler(k, meta, {}, **cfg)["displacement"]))(keys)
        pixels = jax.jit(jax.vmap(lambda im, d: op.kernel(
            im, {"displacement": d}, interpolation="bilinear", fill=0.0, **cfg)))(x, disp)
        return np.asarray(disp), np.asarray(pixels)

    kernels = run()
    call = np.asarray(op.apply(x, params={"displacement": kernels[0]}))
    monkeypatch.setattr(warp, "_pallas_available", lambda: False)
    monkeypatch.setattr(filters, "_pallas_available", lambda: False)
    return kernels, run(), call


@pytest.mark.gpu
@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a CUDA GPU (Triton)")
def test_elastic_transform_on_a_gpu_gives_the_xla_params_and_pixels(monkeypatch):
    """The op's sampler and kernel with the Pallas forms (the field's blur, the remap) against
    the same functions with the XLA forms on the same GPU, bitwise; the op's call gives the
    kernels' pixels."""
    (disp, pixels), (want_disp, want_pixels), call = _elastic_with_and_without_the_kernels(
        monkeypatch)
    np.testing.assert_array_equal(disp, want_disp)
    np.testing.assert_array_equal(pixels, want_pixels)
    np.testing.assert_array_equal(call, pixels)
