"""scale_jitter (large-scale jitter) against torchvision v2: ScaleJitter's resize, then the
detection reference's FixedSizeCrop (crop at one drawn fraction, pad bottom-right), with the same
drawn values; its scale draw against ScaleJitter.make_params on the same uniform."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from augjax._core.meta import Meta
from augjax.catalog.detection import scale_jitter

torch = pytest.importorskip("torch")
tv2 = pytest.importorskip("torchvision.transforms.v2")
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

H, W = 30, 40
CONF = dict(target_size=(32, 32), scale_range=(0.3, 2.0), size=(32, 32), fill=(0.5,))


def test_the_resized_size_equals_scale_jitters_make_params(monkeypatch):
    rng = np.random.default_rng(0)
    for _ in range(20):
        u = rng.random(2).astype(np.float32)
        with monkeypatch.context() as mp:
            mp.setattr(jax.random, "uniform", lambda key, shape, *a, **k: jax.numpy.asarray(u))
            got = scale_jitter.sampler(jax.random.key(0), Meta(H, W, 3, "uint8"), {},
                                       **{**CONF, "interpolation": "bilinear",
                                          "antialias": True})
        with monkeypatch.context() as mp:
            mp.setattr(torch, "rand", lambda *a, **k: torch.tensor(u[:1]))
            want = tv2.ScaleJitter(target_size=(32, 32), scale_range=(0.3, 2.0)).make_params(
                [tv_tensors.Image(torch.zeros(3, H, W))])["size"]
        assert np.asarray(got["resized"]).tolist() == list(want)


def _fixed_size_crop(x, top, left, oh, ow, fill):
    """torchvision's references/detection FixedSizeCrop with the drawn top and left."""
    h, w = x.canvas_size if isinstance(x, tv_tensors.BoundingBoxes) else x.shape[-2:]
    nh, nw = min(h, oh), min(w, ow)
    if (nh, nw) != (h, w):
        x = F.crop(x, top, left, nh, nw)
    return F.pad(x, [0, 0, ow - nw, oh - nh], fill=fill)


def test_apply_equals_torchvision_resize_then_fixed_size_crop():
    rng = np.random.default_rng(1)
    n = 8
    x = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    boxes = np.tile(np.array([[[2, 3, 20, 15], [10, 0, 40, 30]]], np.float32), (n, 1, 1))
    masks = np.zeros((n, H, W), np.int32)
    masks[:, 5:15, 4:20] = 7
    params = scale_jitter.sample(x, key=jax.random.key(2), **CONF)
    out = scale_jitter.apply(x, params=params, boxes=boxes, masks=masks, **CONF)
    big = 0
    for i in range(n):
        nh, nw = np.asarray(params["resized"][i]).tolist()
        top, left = np.asarray(params["offset"][i]).tolist()
        big += nh > 32 or nw > 32
        img = tv_tensors.Image(torch.from_numpy(x[i]).permute(2, 0, 1))
        want = _fixed_size_crop(F.resize(img, [nh, nw], antialias=True), top, left, 32, 32, 128)
        d = np.abs(np.asarray(out["images"][i]).astype(int)
                   - want.permute(1, 2, 0).numpy().astype(int))
        assert d.max() <= 1, (i, d.max())  # ATen's uint8 fixed-point weights
        bb = tv_tensors.BoundingBoxes(torch.from_numpy(boxes[i]), format="XYXY",
                                      canvas_size=(H, W))
        wb = F.clamp_bounding_boxes(_fixed_size_crop(F.resize(bb, [nh, nw]), top, left, 32,
                                                     32, 0)).numpy()
        np.testing.assert_allclose(np.asarray(out["boxes"][i]), wb, atol=1e-4)
        mk = tv_tensors.Mask(torch.from_numpy(masks[i]))
        wm = _fixed_size_crop(F.resize(mk, [nh, nw],
                                       interpolation=tv2.InterpolationMode.NEAREST),
                              top, left, 32, 32, 0)
        np.testing.assert_array_equal(np.asarray(out["masks"][i]), wm.numpy())
    assert 0 < big < n  # both crops and pads were drawn


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("shape,conf", [
    ((H, W), CONF),  # a few taps to 11: the unrolled branches and the loop's
    ((32, 32), dict(target_size=(8, 10))),  # the kit's shrink: up to 63 taps, the loop
    ((2, 2), dict(target_size=(3, 3))),  # a tiny image (XLA:CPU's loop with a barrier failed)
])
def test_the_cpu_branch_form_gives_every_taps_bits(dtype, shape, conf):
    """On the CPU a batch runs image by image, each reading only its taps that weigh
    something (unrolled up to 8, beyond in a loop of 8 a step), the width pass from the
    image's transpose: the bits of every tap of every sample computed under ``vmap`` (the
    op's form off the CPU, and the CPU's before 2026-12-06)."""
    import math

    import jax.numpy as jnp

    from augjax.catalog.detection import _jitter_all
    from augjax.kernels.portable import portable_compiler_options
    from augjax.kernels.warp import check_fill
    from augjax.kernels.window import taps_needed

    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (8, *shape, 3), dtype=np.uint8)
    x = x if dtype == "uint8" else x.astype(np.float32) / 255.0
    bound = scale_jitter.bind(**conf)
    kw = bound.kwargs
    out = kw["size"] or kw["target_size"]
    least = min(kw["target_size"][0] / shape[0], kw["target_size"][1] / shape[1]) * \
        kw["scale_range"][0]
    taps = tuple(taps_needed(n / max(1.0, math.floor(n * least) - 1.0), "bilinear", True)
                 for n in shape)
    value = check_fill(kw["fill"], x[0], "scale_jitter")
    config = (shape, tuple(out), "bilinear", True, taps)
    # Compiled as augjax compiles its CPU programs (YNNPACK's fusions off)
    every = jax.jit(jax.vmap(lambda im, p: _jitter_all(im, p, value, config)),
                    compiler_options=portable_compiler_options())
    shrinks = set()
    for seed in range(2):
        params = bound.sample(x, key=jax.random.key(seed))
        got = np.asarray(bound.apply(x, params=params))
        p = jnp.concatenate([params["resized"], params["offset"]], axis=1)
        np.testing.assert_array_equal(got, np.asarray(every(x, p)))
        resized = np.asarray(params["resized"])
        shrinks |= {int(np.ceil(2 * shape[0] / max(r, 1))) for r in resized[:, 0]}
    assert len(shrinks) >= 2  # samples reading few taps and more


def test_a_strong_shrink_compiles_a_loop_not_a_term_per_tap():
    """The kit's example (8x10 from 224^2, scale down to 0.1: 449 taps an axis for the
    smallest draw) sums its taps beyond 8 in a loop: its program adds ~100 times, not once per
    tap and pass (the every-tap form: ~900 adds, ~25 s to compile on a 2-core CPU)."""
    from augjax import ops

    x = np.zeros((2, 224, 224, 3), np.uint8)
    step = ops.scale_jitter.bind(target_size=(8, 10))
    params = step.sample(x, key=jax.random.key(0))
    text = jax.jit(lambda x, p: step.apply(x, params=p)).lower(x, params).as_text()
    assert text.count("stablehlo.add") < 300
