"""The filter, histogram and resize helpers of ``augjax.kernels`` and the shot-noise quantile
table, against independent references: scipy.ndimage (mirror = reflect-101, nearest = edge),
NumPy's bincount, the dense ``resize_weights`` matrix, and the per-value Poisson loop and
scipy's ``poisson.ppf``. Windows larger than the image (the reflection repeats) and the
median's three code paths (3x3 columns, sorting network, sort) are covered."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

from augjax.kernels import (
    box_sum,
    correlate1d,
    correlate_separable,
    gaussian_kernel1d,
    histogram,
    lookup,
    median_filter,
    resize_taps,
    resize_weights,
)
from helpers import images


@pytest.mark.fast_tier("uint8-1", "uint8-3", "float32-5")
@pytest.mark.parametrize("k", [1, 3, 5, 7, 9])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_median_filter_matches_scipy_nearest(k, dtype):
    x = images(2, 13, 11, dtype=dtype, seed=k)
    x[0, :4] = x[0, 0, 0]  # flat regions: ties
    got = np.asarray(jax.jit(jax.vmap(lambda a: median_filter(a, k)))(x))
    np.testing.assert_array_equal(got, ndi.median_filter(x, size=(1, k, k, 1), mode="nearest"))


@pytest.mark.fast_tier("3-11")
@pytest.mark.parametrize("taps,size", [(3, 11), (7, 11), (15, 6)])  # 15 > 2 * 6: repeats
def test_correlate1d_matches_scipy_mirror(taps, size):
    x = images(1, size, size + 2, dtype=np.float32, seed=taps)[0]
    k = np.asarray(gaussian_kernel1d(taps, 1.7))
    # compiled, as the ops run them (eagerly each small operation dispatches and compiles)
    for axis in (0, 1):
        got = np.asarray(jax.jit(correlate1d, static_argnames="axis")(jnp.asarray(x), k,
                                                                       axis=axis))
        ref = ndi.correlate1d(x.astype(np.float64), k.astype(np.float64), axis=axis,
                              mode="mirror")
        assert np.abs(got - ref).max() <= 1e-6
    got = np.asarray(jax.jit(correlate_separable)(jnp.asarray(x), k, k[::-1]))
    ref = ndi.correlate(x.astype(np.float64), np.outer(k, k[::-1])[:, :, None], mode="mirror")
    assert np.abs(got - ref).max() <= 1e-6


@pytest.mark.fast_tier("5-1")
@pytest.mark.parametrize("kh,kw", [(3, 3), (5, 1), (9, 13)])
def test_box_sum_is_exact_in_integers(kh, kw):
    x = images(1, 7, 10, dtype=np.uint8, seed=kh)[0]
    got = np.asarray(jax.jit(box_sum, static_argnums=(1, 2))(jnp.asarray(x).astype(jnp.int32),
                                                             kh, kw))
    ref = ndi.correlate(x.astype(np.int64), np.ones((kh, kw, 1), np.int64), mode="mirror")
    np.testing.assert_array_equal(got, ref)


def test_histogram_and_lookup_match_numpy_alone_and_batched():
    x = images(3, 9, 7, dtype=np.uint8, seed=4)
    ref = np.stack([np.stack([np.bincount(x[i, ..., c].ravel(), minlength=256)
                              for c in range(3)], 1) for i in range(3)])
    alone = jax.jit(histogram, static_argnames="bins")  # compiled, as the ops run it
    np.testing.assert_array_equal(np.asarray(alone(jnp.asarray(x[1]))), ref[1])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(histogram))(x)), ref)
    # levels outside [0, bins) are dropped, not counted in a neighbouring channel
    shifted = jnp.asarray(x[0]).astype(jnp.int32) - 100
    got = np.asarray(alone(shifted, bins=100))
    for c in range(3):
        v = x[0, ..., c].astype(np.int64).ravel() - 100
        np.testing.assert_array_equal(got[:, c], np.bincount(v[(v >= 0) & (v < 100)],
                                                             minlength=100))
    lut = np.random.default_rng(5).integers(0, 256, (3, 256, 3)).astype(np.uint8)
    ref = np.stack([np.stack([lut[i][x[i, ..., c], c] for c in range(3)], -1)
                    for i in range(3)])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(lookup))(x, lut)), ref)


@pytest.mark.parametrize("shape", [(64, 48, 3), (9, 7, 3), (32, 1, 1)])
def test_value_range_is_each_channels_min_and_max(shape):
    from augjax.kernels import value_range

    x = np.random.default_rng(7).normal(0, 50, shape).astype(np.float32)
    lo, hi = jax.jit(value_range)(x)
    np.testing.assert_array_equal(np.asarray(lo), x.min(axis=(0, 1)))
    np.testing.assert_array_equal(np.asarray(hi), x.max(axis=(0, 1)))


@pytest.mark.parametrize("lanes", [1, 32])  # 32: the GPU's layout, checked here on the CPU
def test_histogram_counts_only_the_needed_images_in_any_lane_layout(lanes):
    from augjax.kernels.histogram import _flat_histogram

    x = images(4, 9, 7, dtype=np.uint8, seed=6)
    ref = np.stack([np.stack([np.bincount(x[i, ..., c].ravel(), minlength=256)
                              for c in range(3)], 1) for i in range(4)])
    needed = np.array([True, False, True, False])
    got = np.asarray(jax.jit(_flat_histogram, static_argnums=(1, 3))(x, 256, needed, lanes))
    np.testing.assert_array_equal(got[needed], ref[needed])
    np.testing.assert_array_equal(got[~needed], 0)
    # the public helper under vmap, with the mask batched (a policy layer's form)
    got = np.asarray(jax.jit(jax.vmap(lambda v, m: histogram(v, needed=m)))(x, needed))
    np.testing.assert_array_equal(got[needed], ref[needed])
    np.testing.assert_array_equal(got[~needed], 0)


def _bincounts(x):
    return np.stack([np.stack([np.bincount(im[..., c].ravel(), minlength=256)
                               for c in range(im.shape[-1])], 1) for im in x])


@pytest.mark.fast_tier("64-80-3")
@pytest.mark.parametrize("h,w,c", [(9, 7, 3), (64, 80, 3), (33, 129, 1)])  # tiles overlap
def test_the_pallas_histogram_counts_each_pixel_once(h, w, c):
    """The CUDA form (per-tile Triton histograms, one atomic add per level), interpreted."""
    from augjax.kernels import histogram_pallas as hp

    x = images(3, h, w, c, dtype=np.uint8, seed=h)
    x[0, : h // 2] = 17  # one level many times over
    needed = jnp.asarray([True, False, True])
    got = np.asarray(jax.jit(jax.vmap(lambda a, m: hp.image_histogram(a, m, interpret=True)))(
        x, needed))
    ref = _bincounts(x)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[2], ref[2])
    np.testing.assert_array_equal(got[1], 0)


def test_block_histogram_counts_the_masked_values():
    from augjax.kernels.histogram_pallas import block_histogram

    rng = np.random.default_rng(3)
    v = rng.integers(0, 64, 512).astype(np.int32)
    m = rng.random(512) < 0.7
    got = np.asarray(jax.jit(block_histogram, static_argnums=1)(v, 64, m))
    np.testing.assert_array_equal(got, np.bincount(v[m], minlength=64))
    with pytest.raises(ValueError, match="bins must be a power of two"):
        block_histogram(v, 48, m)


def test_the_pallas_histogram_lowers_to_tritons_histogram_for_cuda():
    """On a CPU host too: the kernel's Triton module, exported for CUDA, holds ``tt.histogram``
    (not one atomic add per pixel)."""
    from jax import export

    from augjax.kernels import histogram_pallas as hp

    if not hp.AVAILABLE:
        pytest.fail("this JAX's Pallas Triton lowering has no histogram: update "
                    "augjax.kernels.histogram_pallas")
    f = jax.jit(jax.vmap(hp.image_histogram))
    try:
        exported = export.export(f, platforms=["cuda"])(
            jax.ShapeDtypeStruct((2, 64, 64, 3), jnp.uint8), jax.ShapeDtypeStruct((2,), bool))
        text = exported.mlir_module()
    except ValueError as e:  # no compatibility guarantee for Triton calls: the message has it
        text = str(e)
    assert "__gpu$xla.gpu.triton" in text
    # the Triton module's operation names, NUL-separated in its bytecode (not the
    # "augjax_block_histogram" of the source locations)
    assert r"\00histogram\00" in text and r"\00atomic_rmw\00" in text


@pytest.mark.gpu
@pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a CUDA GPU (Triton)")
def test_the_histogram_on_a_gpu_matches_numpy():
    """Compiled by Triton: uint8 images take the Pallas kernel, int32 the XLA scatter."""
    x = images(16, 224, 224, 3, dtype=np.uint8, seed=2)
    x[:4] = x[:4] // 4 + 60  # clustered levels: many adds to one level
    ref = _bincounts(x)
    needed = np.arange(16) % 3 != 0
    for levels in (x, x.astype(np.int32)):
        got = np.asarray(jax.jit(jax.vmap(histogram))(levels))
        np.testing.assert_array_equal(got, ref)
        got = np.asarray(jax.jit(jax.vmap(lambda v, m: histogram(v, needed=m)))(levels, needed))
        np.testing.assert_array_equal(got[needed], ref[needed])
        np.testing.assert_array_equal(got[~needed], 0)


def test_broadcast_unbatched_gives_every_argument_the_batch_axis():
    """Inside a custom_vmap rule: unbatched arguments (pytrees too) get the leading batch axis,
    batched ones pass through; checked against the rule's view of an explicit per-sample loop."""
    from augjax.kernels import broadcast_unbatched

    @jax.custom_batching.custom_vmap
    def f(x, tree):
        return x * tree["a"] + tree["b"]

    @f.def_vmap
    def _rule(axis_size, in_batched, x, tree):
        x, tree = broadcast_unbatched(axis_size, in_batched, (x, tree))
        assert x.shape[0] == axis_size and tree["a"].shape[0] == axis_size
        return x * tree["a"][:, None] + tree["b"][:, None], True

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = np.float32(2.0)
    b = np.arange(4, dtype=np.float32)
    got = jax.vmap(f, in_axes=(0, {"a": None, "b": 0}))(x, {"a": a, "b": b})
    np.testing.assert_array_equal(np.asarray(got), x * a + b[:, None])


@pytest.mark.fast_tier("10-40-bilinear-False", "9-20-nearest-True", "10-40-bicubic-True",
                       "31-12-bicubic-False")
@pytest.mark.parametrize("out_size,in_size,interp,antialias", [
    (24, 24, "bilinear", True), (10, 40, "bilinear", True), (10, 40, "bilinear", False),
    (31, 12, "bilinear", True), (9, 20, "nearest", True), (24, 24, "bicubic", True),
    (10, 40, "bicubic", True), (10, 40, "bicubic", False), (31, 12, "bicubic", True),
    (31, 12, "bicubic", False)])
def test_resize_taps_are_the_nonzeros_of_resize_weights(out_size, in_size, interp, antialias):
    """The same weights, up to float32 rounding (the matrix is built eagerly, the taps in one
    program). Bicubic without antialias reads an edge pixel once per tap clamped onto it: the
    taps' weights of one pixel sum to the matrix's entry."""
    rng = np.random.default_rng(out_size)
    # jitted, as XLA may round the tap positions differently from eager mode (one program: the
    # window's start and length are traced)
    taps = jax.jit(lambda s, n: resize_taps(out_size, in_size, s, n, interp, antialias))
    for _ in range(20):
        length = int(rng.integers(1, in_size + 1))
        start = int(rng.integers(0, in_size - length + 1))
        dense = np.asarray(resize_weights(out_size, in_size, start, length, interp, antialias))
        idx, wt = taps(start, length)
        rebuilt = np.zeros_like(dense)
        for o in range(out_size):
            np.add.at(rebuilt[o], np.asarray(idx)[o], np.asarray(wt)[o])
        # bicubic: a rounding of the source coordinate (its float32 step: 4e-6 at 40 pixels)
        # moves a weight by up to the cubic's slope (~1.5) times it
        tol = 1e-5 if interp == "bicubic" else 2e-7
        assert np.abs(rebuilt - dense).max() <= tol, (start, length)


@pytest.mark.fast_tier("3-7-True", "40-10-False")
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("in_size,out_size", [(3, 7), (12, 31), (40, 10), (37, 5), (8, 8)])
def test_bicubic_resize_weights_are_atens(in_size, out_size, antialias):
    """``resize_weights(..., "bicubic")`` is the matrix of ``torch.nn.functional.interpolate(
    mode="bicubic", align_corners=False)`` (each column: the resize of a one-hot row): with
    antialias ATen's ``_upsample_bicubic2d_aa`` (a = -0.5, support 2 widened by the shrink
    factor, normalised), without ``upsample_bicubic2d`` (4 taps of a = -0.75, the edge pixel
    repeated); the static tap count ``K`` holds every nonzero weight."""
    torch = pytest.importorskip("torch")
    eye = torch.eye(in_size, dtype=torch.float32).reshape(in_size, 1, 1, in_size)
    theirs = torch.nn.functional.interpolate(eye, size=(1, out_size), mode="bicubic",
                                             align_corners=False, antialias=antialias)
    theirs = theirs.reshape(in_size, out_size).numpy().T  # (out, in): row o, column i
    ours = np.asarray(resize_weights(out_size, in_size, 0, in_size, "bicubic", antialias))
    assert np.abs(ours - theirs).max() <= 1e-6
    if in_size != out_size:
        assert ours.min() < 0  # the cubic's negative lobes
    index, weight = resize_taps(out_size, in_size, 0, in_size, "bicubic", antialias)
    taps = 4 if not antialias else int(np.ceil(4 * max(in_size / out_size, 1.0))) + 1
    assert index.shape == weight.shape == (out_size, taps)
    rebuilt = np.zeros_like(ours)
    for o in range(out_size):
        np.add.at(rebuilt[o], np.asarray(index)[o], np.asarray(weight)[o])
    assert np.abs(rebuilt - ours).max() <= 2e-7


@pytest.mark.fast_tier("10-40-True", "31-12-False")
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("out_size,length", [(10, 40), (31, 12), (24, 24), (7, 23)])
def test_bicubic_window_taps_are_resize_taps(out_size, length, antialias):
    """:func:`augjax.kernels.window.window_taps` (the reader of images of different sizes,
    sizes traced) gives bicubic the taps of :func:`resize_taps` (the batch path, sizes static):
    the same indices and float32 weights in the same columns (both jitted: measured bitwise
    here; the tolerance allows an ulp, as two programs may round differently), ``K`` from
    ``taps_needed``; the columns past ``K`` and the rows past the output weigh 0."""
    from augjax.kernels.window import taps_needed, window_taps

    in_size = 50
    k = taps_needed(in_size / out_size, "bicubic", antialias)  # resize_taps' K: the axis's
    for start in (0, 3, in_size - length):
        want_i, want_w = jax.jit(lambda s, n: resize_taps(
            out_size, in_size, s, n, "bicubic", antialias))(start, length)
        assert want_i.shape == (out_size, k)
        got_i, got_w = jax.jit(lambda s, n, o: window_taps(
            out_size + 3, 0, o, in_size, s, n, "bicubic", antialias, k + 2))(
                start, length, out_size)
        np.testing.assert_array_equal(np.asarray(got_i)[:out_size, :k], np.asarray(want_i))
        np.testing.assert_allclose(np.asarray(got_w)[:out_size, :k], np.asarray(want_w),
                                   rtol=0, atol=3e-7)
        assert not np.asarray(got_w)[:, k:].any() and not np.asarray(got_w)[out_size:].any()


def test_resize_kernels_refuse_an_unknown_interpolation():
    from augjax.errors import InputError

    for fn, name in ((resize_taps, "resize_taps"), (resize_weights, "window_weights")):
        with pytest.raises(InputError, match=rf"{name}: argument 'interpolation' expects one "
                                             r"of \('nearest', 'bilinear', 'bicubic'\), got "
                                             r"'lanczos'") as err:
            fn(8, 16, 0, 16, "lanczos", True)
        assert err.value.argument == "interpolation"


# tables 64, 128, 256 and 512 wide; 0.3: rates beyond the widest, the per-value loop
@pytest.mark.fast_tier("3.0")
@pytest.mark.parametrize("factor", [30.0, 20.0, 3.0, 0.6, 0.3])
def test_shot_noise_level_table_equals_the_per_value_loop(factor):
    """The table sums each image's window to its largest rate; the loop, given the image's
    values, to its largest value's. The second image holds only dark levels, whose windows are
    shorter: the extra terms must leave the counts as they are."""
    from scipy.stats import poisson

    from augjax_contrib.noise import poisson_quantile, poisson_quantile_levels

    rng = np.random.default_rng(int(factor * 10))
    levels = rng.integers(0, 256, (2, 30, 20, 3)).astype(np.uint8)
    levels[1] //= 8
    u = rng.random(levels.shape).astype(np.float32)
    u[0, 0, :4, 0] = [0.0, 1e-9, 0.99999994, 0.5]
    lam = np.arange(256, dtype=np.float32) / np.float32(factor)
    got = np.asarray(jax.jit(jax.vmap(poisson_quantile_levels, (0, 0, None)))(u, levels, lam))
    loop = np.asarray(jax.jit(jax.vmap(poisson_quantile))(u, lam[levels]))
    np.testing.assert_array_equal(got, loop)  # same sums in the same order
    ref = poisson.ppf(u.astype(np.float64), lam[levels].astype(np.float64))
    assert (got == np.where(levels == 0, 0.0, ref)).mean() >= 0.999
