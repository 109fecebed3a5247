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


FILL = (0.2, 0.5, 1.0)


def _pairwise(shapes, first):
    """Every shape with both interpolations and both fills, and every (interpolation, fill)
    pair, in two cases per shape (a covering array of strength 2; each case is seconds of
    interpreted compiling): shape ``first`` takes nearest with a fill and bilinear without,
    the others nearest without and bilinear with the fill (bilinear's four reads blended with a
    fill: over the overlapping tiles and the 5 channels too). The interpolation and the fill
    meet in the kernel's last step (the taps read, then the fill where outside), the shape in
    its tiling and channel loop: no case of the cross product holds a path that these miss."""
    out = []
    for shape in shapes:
        pairs = ((FILL, "nearest"), (None, "bilinear")) if shape == first else (
            (None, "nearest"), (FILL, "bilinear"))
        for fill, interpolation in pairs:
            ident = "-".join(map(str, shape)) + f"-{'None' if fill is None else 'fill1'}"
            out.append(pytest.param(*shape, fill, interpolation, id=f"{ident}-{interpolation}"))
    return out


@pytest.mark.fast_tier("10-12-10-12-1-None-bilinear")
@pytest.mark.parametrize("h,w,ho,wo,c,fill,interpolation", _pairwise(
    [(12, 9, 7, 11, 3), (33, 40, 33, 40, 3),  # tiles overlap
     (10, 12, 10, 12, 1), (9, 9, 8, 8, 5)],  # masks' channels
    first=(10, 12, 10, 12, 1)))
def test_the_sample_kernel_interpreted_gives_the_xla_pixels(interpolation, fill, h, w, ho, wo, c):
    from augjax.kernels.sample_pallas import sample_kernel

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


@pytest.mark.slow
# Each case's interpreted kernels cost seconds to compile, growing with the taps (the kernels
# unroll ``rows + taps - 1`` loads and ``rows * taps`` multiply-adds). reflect101's two forms:
# the one reflection (reach = taps // 2 + rows < n: 9 taps over 18 and 14 rows, several row
# blocks, the last partial; 3 taps over 70 rows) and the period form (5 taps over 9 and 7
# rows, 15 over 6 and 5). 9 taps here took the place of 25 (the same blocks and partial last
# block, one reflection too; the long kernel's repeated reflection is the 15-tap case's).
@pytest.mark.parametrize("taps,h,w,c", [(9, 18, 14, 1), (5, 9, 7, 3), (15, 6, 5, 1),
                                        (3, 70, 300, 1)])  # 300 columns: two column blocks
def test_the_correlate_kernels_interpreted_give_the_xla_sums(taps, h, w, c):
    """Kernels longer than the image (15 taps over 5 or 6 pixels: the reflection repeats);
    several row blocks, blocks past the last row or column. The height pass alone is bitwise XLA's. The forms that
    store transposed or interleaved tiles are checked to float rounding: XLA on a CPU fuses
    multiply-adds into FMAs where its fusions allow, and the interpreted stores change the
    fusions (1 ulp here and there); compiled on a GPU they are bitwise (the ``gpu`` test)."""
    from augjax.kernels._correlate_pallas import (
        correlate_planes_kernel,
        correlate_rows,
        correlate_separable_kernel,
    )

    x = images(2, h, w, c, dtype=np.float32, seed=taps) * 2.0 - 1.0
    kernel1d = jax.jit(gaussian_kernel1d, static_argnums=0)  # one program, not ~11 eager ones
    k_rows = kernel1d(taps, jnp.float32(taps / 5.0))
    k_cols = kernel1d(taps, jnp.float32(taps / 7.0))
    want = np.asarray(jax.jit(jax.vmap(lambda v: correlate1d(v, k_rows, 0)))(x))
    got = np.asarray(jax.jit(jax.vmap(
        lambda v: correlate_rows(v.reshape(h, w * c), k_rows, interpret=True)))(x))
    np.testing.assert_array_equal(got.reshape(x.shape), want)
    got = np.asarray(jax.jit(jax.vmap(lambda v: correlate_rows(
        v.reshape(h, w * c), k_rows, interpret=True, transposed=True)))(x))
    np.testing.assert_allclose(got, want.reshape(2, h, w * c).transpose(0, 2, 1), atol=3e-7,
                               rtol=0)
    want = np.asarray(jax.jit(jax.vmap(
        lambda v: filters.correlate_separable(v, k_rows, k_cols)))(x))
    got = np.asarray(jax.jit(jax.vmap(
        lambda v: correlate_separable_kernel(v, k_rows, k_cols, interpret=True)))(x))
    np.testing.assert_allclose(got, want, atol=3e-7, rtol=0)
    # planes: each with its own kernels and scale, stacked as channels (elastic's field)
    k_small = kernel1d(3, jnp.float32(0.8))
    kernels = [(k_rows, k_cols), (k_small, k_rows)]
    scale = jnp.asarray([30.0 / w, -12.0 / h], jnp.float32)
    want = np.asarray(jax.jit(jax.vmap(lambda v: filters.correlate_planes(
        [v[..., 0], v[..., 0] * 0.5], kernels, scale)))(x))
    got = np.asarray(jax.jit(jax.vmap(lambda v: correlate_planes_kernel(
        [v[..., 0], v[..., 0] * 0.5], kernels, scale, interpret=True)))(x))
    assert got.shape == (2, h, w, 2)
    np.testing.assert_allclose(got, want, atol=3e-7 * 30.0 / w, rtol=0)
    for i, (kr, kc) in enumerate(kernels):  # the XLA form is correlate_separable, scaled
        plane = x[..., :1] * (1.0, 0.5)[i]
        ref = np.asarray(jax.jit(jax.vmap(lambda v, kr=kr, kc=kc: filters.correlate_separable(
            v, kr, kc)))(plane))[..., 0] * np.asarray(scale)[i]
        np.testing.assert_allclose(want[..., i], ref, atol=1e-7, rtol=0)


@pytest.mark.fast_tier("10-12-1-fill1-nearest")
@pytest.mark.parametrize("h,w,c,fill,interpolation", _pairwise(
    [(12, 9, 3), (33, 40, 3), (10, 12, 1)], first=(10, 12, 1)))
def test_the_elastic_kernel_interpreted_gives_the_xla_pixels(interpolation, fill, h, w, c):
    """The displacement read, added to the grid and sampled in one pass: the pixels of
    ``elastic``'s XLA form (the same operations in the same order), past the edges too."""
    from augjax.kernels.sample_pallas import elastic_kernel

    x = images(3, h, w, c, dtype=np.uint8, seed=h)
    disp = np.random.default_rng(w).uniform(-0.4, 0.4, (3, h, w, 2)).astype(np.float32)
    disp[:, 0, :, 0] = 0.0  # whole pixels
    f = None if fill is None else jnp.resize(jnp.asarray(fill, jnp.float32), (c,)) * 255.0
    yy, xx = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32),
                          indexing="ij")
    base_x, base_y = (2.0 * xx + 1.0) / w - 1.0, (2.0 * yy + 1.0) / h - 1.0
    want = np.asarray(jax.jit(jax.vmap(
        lambda im, d: warp.elastic(im, d, interpolation, f)))(x, disp))
    got = np.asarray(jax.jit(jax.vmap(lambda im, d: elastic_kernel(
        im, base_x, base_y, d, interpolation, f, interpret=True)))(x, disp))
    np.testing.assert_array_equal(got, want)
    # the XLA form is sample at the documented coordinates
    ix = ((base_x + disp[..., 0] + 1.0) * w - 1.0) / 2.0
    iy = ((base_y + disp[..., 1] + 1.0) * h - 1.0) / 2.0
    ref = np.asarray(jax.jit(jax.vmap(lambda im, a, b: warp.sample(
        im, a, b, interpolation, f)))(x, ix, iy))
    np.testing.assert_array_equal(want, ref)


def test_elastic_and_correlate_planes_reject_bad_arguments_by_name():
    """Each error names the function (or the calling op), the argument, what was expected
    and what came."""
    x = jnp.zeros((8, 6, 3), jnp.uint8)
    d = jnp.zeros((8, 6, 2), jnp.float32)
    with pytest.raises(augjax.InputError, match=r"elastic: displacement must be \(H, W, 2\) "
                                                  r"= \(8, 6, 2\).*got \(6, 8, 2\)"):
        warp.elastic(x, jnp.zeros((6, 8, 2), jnp.float32), "bilinear", None)
    with pytest.raises(augjax.InputError, match=r"elastic: interpolation must be one of "
                                                  r".*got 'bicubic'"):
        warp.elastic(x, d, "bicubic", None)
    with pytest.raises(augjax.InputError, match=r"elastic: image must be one \(H, W, C\)"):
        warp.elastic(x[None], d, "bilinear", None)
    # through the op, the error names the op and the param
    op = augjax.get_op("elastic_transform")
    with pytest.raises(augjax.InputError, match=r"elastic_transform: displacement must be \(H, "
                                                  r"W, 2\) = \(8, 6, 2\).*got \(6, 8, 2\)") as e:
        op.apply(x[None].repeat(2, 0), params={"displacement": jnp.zeros((2, 6, 8, 2))})
    assert (e.value.op, e.value.argument) == ("elastic_transform", "displacement")
    k = gaussian_kernel1d(5, jnp.float32(1.0))
    p = jnp.zeros((8, 6), jnp.float32)
    with pytest.raises(augjax.InputError, match=r"planes must be .* of one shape, got shapes "
                                                  r"\[\(8, 6\), \(6, 8\)\]"):
        filters.correlate_planes([p, p.T], [(k, k), (k, k)], (1.0, 1.0))
    with pytest.raises(augjax.InputError, match=r"one \(k_rows, k_cols\) pair per plane: 2 "
                                                  r"planes, got 1 kernel pairs") as e:
        filters.correlate_planes([p, p], [(k, k)], (1.0, 1.0))
    assert e.value.argument == "kernels"
    with pytest.raises(augjax.InputError, match=r"one scale per plane: 2 planes, got a scale of "
                                                  r"shape \(3,\)") as e:
        filters.correlate_planes([p, p], [(k, k), (k, k)], (1.0, 1.0, 1.0))
    assert e.value.argument == "scale"
    with pytest.raises(augjax.InputError, match=r"1-D of odd length, got \(4,\)"):
        filters.correlate_planes([p, p], [(k, k), (k[:4], k)], (1.0, 1.0))


def _exported_for_cuda(f, *shapes):
    from jax import export

    try:
        return export.export(jax.jit(f), platforms=["cuda"])(*shapes).mlir_module()
    except ValueError as e:  # no compatibility guarantee for Triton calls: the message has it
        return str(e)


@pytest.mark.slow
def test_remap_and_the_separable_blur_take_the_kernels_for_cuda(monkeypatch):
    """Exported for CUDA from this host, as a host with a GPU traces them: uint8 remapping and
    elastic sampling, float32 separable correlation and two planes' are Pallas calls; float32
    remapping and ``sample`` (whose coordinates XLA fuses) stay with XLA."""
    from augjax.kernels import platform

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
    field = jax.ShapeDtypeStruct((4, 2, 32, 32), jnp.float32)
    assert pallas in _exported_for_cuda(jax.vmap(lambda v: filters.correlate_planes(
        [v[0], v[1]], [(k, k), (k, k)], (1.0, 2.0))), field)
    assert pallas not in _exported_for_cuda(jax.vmap(lambda v: filters.correlate_planes(
        [v[0], v[1], v[0]], [(k, k)] * 3, (1.0, 2.0, 3.0))), field)  # three planes: XLA
    disp = jax.ShapeDtypeStruct((4, 32, 32, 2), jnp.float32)
    assert pallas in _exported_for_cuda(jax.vmap(
        lambda im, d: warp.elastic(im, d, "bilinear", None)),
        jax.ShapeDtypeStruct((4, 32, 32, 3), jnp.uint8), disp)


@pytest.mark.gpu
@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a CUDA GPU (Triton)")
def test_the_kernels_on_a_gpu_give_the_xla_values():
    """Compiled by Triton: remap's and elastic's pixels (both interpolations, a fill or none),
    the separable blur's sums (one channel, written back transposed; three channels) and the
    planes' scaled, interleaved sums equal the XLA forms' on the same GPU, bitwise."""
    from augjax.kernels._correlate_pallas import (
        correlate_planes_kernel,
        correlate_separable_kernel,
    )
    from augjax.kernels.sample_pallas import elastic_kernel, sample_kernel

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
    u3 = np.concatenate([u, u[..., ::-1, :] * 0.5, u[:, ::-1] * 0.25], axis=-1)  # 3 channels
    np.testing.assert_array_equal(np.asarray(kernel(u3)), np.asarray(xla(u3)))
    kernels = [(k_rows, k_rows), (k_cols, gaussian_kernel1d(25, jnp.float32(3.0)))]
    scale = jnp.asarray([50.0 / 224, 30.0 / 224], jnp.float32)
    planes = [jax.jit(jax.vmap(lambda v, f=f: f(
        [v[..., 0], v[..., 0] * 0.5], kernels, scale))) for f in (
        correlate_planes_kernel, _planes_xla)]
    np.testing.assert_array_equal(np.asarray(planes[0](u)), np.asarray(planes[1](u)))
    disp = np.asarray(planes[0](u)) * 4.0  # beyond the edges too
    yy, xx = jnp.meshgrid(jnp.arange(224.0), jnp.arange(224.0), indexing="ij")
    base_x, base_y = (2.0 * xx + 1.0) / 224 - 1.0, (2.0 * yy + 1.0) / 224 - 1.0
    for interpolation in ("nearest", "bilinear"):
        for f in (None, jnp.asarray([51.0, 127.5, 255.0], jnp.float32)):
            def want(im, d, i=interpolation, f=f):
                return warp.sample(im, ((base_x + d[..., 0] + 1.0) * 224 - 1.0) / 2.0,
                                   ((base_y + d[..., 1] + 1.0) * 224 - 1.0) / 2.0, i, f)

            def got(im, d, i=interpolation, f=f):
                return elastic_kernel(im, base_x, base_y, d, i, f)

            np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(got))(x, disp)),
                                          np.asarray(jax.jit(jax.vmap(want))(x, disp)),
                                          err_msg=f"elastic {interpolation}, fill {f}")


def _planes_xla(planes, kernels, scale):
    """correlate_planes' XLA form: each plane's separable correlation, scaled, stacked."""
    return jnp.stack([filters.correlate1d(jax.lax.optimization_barrier(filters.correlate1d(
        p[..., None], kc, 1)), kr, 0)[..., 0] * scale[i]
        for i, (p, (kr, kc)) in enumerate(zip(planes, kernels, strict=True))], axis=-1)


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
    """The op's sampler and kernel with the Pallas forms (the fields' blur, the sampling) against
    the same functions with the XLA forms on the same GPU, bitwise; the op's call gives the
    kernels' pixels."""
    (disp, pixels), (want_disp, want_pixels), call = _elastic_with_and_without_the_kernels(
        monkeypatch)
    np.testing.assert_array_equal(disp, want_disp)
    np.testing.assert_array_equal(pixels, want_pixels)
    np.testing.assert_array_equal(call, pixels)
