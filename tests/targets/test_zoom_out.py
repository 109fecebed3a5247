"""random_zoom_out against torchvision v2 (RandomZoomOut's pad, then Resize) with the same
drawn canvas, and its draws against RandomZoomOut.make_params on the same uniforms."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from augjax.catalog.detection import random_zoom_out

torch = pytest.importorskip("torch")
tv2 = pytest.importorskip("torchvision.transforms.v2")
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

H, W = 24, 32


def test_draws_equal_torchvisions_make_params(monkeypatch):
    rng = np.random.default_rng(0)
    for _ in range(20):
        u = rng.random(4).astype(np.float32)
        u[0] = 0.0  # applied
        from augjax._core.meta import Meta

        key_params = random_zoom_out.sampler  # the hook, fed the same uniforms
        monkeypatch.setattr(jax.random, "uniform", lambda key, shape, *a, **k: jax.numpy.asarray(u))
        got = np.asarray(key_params(jax.random.key(0), Meta(H, W, 3, "uint8"), {}, p=0.5,
                                    side_range=(1.0, 4.0))["canvas"])
        monkeypatch.undo()
        draws = iter([torch.tensor(u[1:2]), torch.tensor(u[2:4])])
        monkeypatch.setattr(torch, "rand", lambda *a, **k: next(draws))
        want = tv2.RandomZoomOut(side_range=(1.0, 4.0)).make_params(
            [tv_tensors.Image(torch.zeros(3, H, W))])["padding"]
        monkeypatch.undo()
        left, top, right, bottom = want
        assert got.tolist() == [top, left, top + H + bottom, left + W + right]


@pytest.mark.slow
def test_apply_equals_torchvision_pad_then_resize():
    rng = np.random.default_rng(1)
    n = 6
    x = rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8)
    boxes = np.tile(np.array([[[2, 3, 20, 15], [10, 0, 32, 24]]], np.float32), (n, 1, 1))
    masks = np.zeros((n, H, W), np.int32)
    masks[:, 5:15, 4:20] = 7
    conf = dict(fill=(0.2, 0.4, 0.6), p=0.7, size=(40, 48))
    params = random_zoom_out.sample(x, key=jax.random.key(2), **conf)
    out = random_zoom_out.apply(x, params=params, boxes=boxes, masks=masks, **conf)
    applied = 0
    for i in range(n):
        top, left, ch, cw = np.asarray(params["canvas"][i]).tolist()
        applied += (ch, cw) != (H, W)
        pad = [left, top, cw - W - left, ch - H - top]
        img = tv_tensors.Image(torch.from_numpy(x[i]).permute(2, 0, 1))
        fill = [round(v * 255) for v in conf["fill"]]
        want = F.resize(F.pad(img, pad, fill=fill), [40, 48], antialias=True)
        d = np.abs(np.asarray(out["images"][i]).astype(int)
                   - want.permute(1, 2, 0).numpy().astype(int))
        assert d.max() <= 1, d.max()  # ATen's uint8 fixed-point weights
        bb = tv_tensors.BoundingBoxes(torch.from_numpy(boxes[i]), format="XYXY",
                                      canvas_size=(H, W))
        wb = F.resize(F.pad(bb, pad), [40, 48]).numpy()
        np.testing.assert_allclose(np.asarray(out["boxes"][i]), wb, atol=1e-4)
        mk = tv_tensors.Mask(torch.from_numpy(masks[i]))
        wm = F.resize(F.pad(mk, pad), [40, 48], interpolation=tv2.InterpolationMode.NEAREST)
        np.testing.assert_array_equal(np.asarray(out["masks"][i]), wm.numpy())
    assert 1 <= applied < n


@pytest.mark.parametrize("dtype,interpolation", [("uint8", "bilinear"), ("int32", "nearest")])
def test_the_unbuilt_canvas_equals_resize_crop_of_the_built_one(dtype, interpolation):
    """resize_canvas (taps read the image or the fill) == the canvas built at its largest size
    and cropped + resized (the op's former kernel), bitwise, for canvases up to 4x."""
    import jax.numpy as jnp

    from augjax.kernels.resize import resize_canvas, resize_crop

    rng = np.random.default_rng(3)
    c = 1 if dtype == "int32" else 3
    image = (rng.uniform(0, 1, (H, W, c)) * (255 if dtype == "uint8" else 8)).astype(dtype)
    value = jnp.asarray([51.0, 128.0, 179.0][:c] if dtype == "uint8" else [0.4][:c])
    big = (4 * H, 4 * W)

    def built(im, place, canvas, out):
        cv = jnp.broadcast_to(value.astype(im.dtype), big + (c,))
        cv = jax.lax.dynamic_update_slice(cv, im, (place[0], place[1], 0))
        return resize_crop(cv, (jnp.int32(0), jnp.int32(0)) + canvas, out, interpolation, True)

    for out in ((30, 44),):  # shrinks most canvases, enlarges the smallest
        want_fn = jax.jit(lambda im, p, cv: built(im, p, cv, out))
        got_fn = jax.jit(lambda im, p, cv: resize_canvas(im, p, cv, big, out, value,
                                                         interpolation, True))
        for _ in range(4):
            r = rng.uniform(1.0, 4.0)
            ch, cw = int(H * r), int(W * r)
            place = (jnp.int32(int((ch - H) * rng.uniform())),
                     jnp.int32(int((cw - W) * rng.uniform())))
            canvas = (jnp.int32(ch), jnp.int32(cw))
            np.testing.assert_array_equal(np.asarray(got_fn(image, place, canvas)),
                                          np.asarray(want_fn(image, place, canvas)))


@pytest.mark.slow
@pytest.mark.parametrize("dtype,size,p", [("uint8", None, 0.5), ("float32", None, 1.0),
                                          ("uint8", (20, 36), 0.6)])
def test_the_cpu_branch_form_gives_every_taps_bits(dtype, size, p):
    """On the CPU a batch runs image by image (a sample left alone copied, the others reading
    only the taps that weigh something): the bits of every tap of every sample computed under
    ``vmap`` (the op's form off the CPU)."""
    import jax.numpy as jnp

    from augjax.catalog.detection import _canvas_shape, _zoom_all
    from augjax.kernels.portable import portable_compiler_options
    from augjax.kernels.warp import check_fill

    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (16, H, W, 3), dtype=np.uint8)
    x = x if dtype == "uint8" else x.astype(np.float32) / 255.0
    conf = dict(fill=(0.48, 0.46, 0.41), p=p, size=size)
    value = check_fill(conf["fill"], x[0], "random_zoom_out")
    value = jnp.clip(jnp.round(value), 0.0, 255.0) if dtype == "uint8" else value
    config = (_canvas_shape(H, W, (1.0, 4.0)), size or (H, W), "bilinear", True)
    # Compiled as augjax compiles its CPU programs (YNNPACK's fusions off,
    # augjax.kernels.portable): the two forms under the same XLA options.
    every = jax.jit(jax.vmap(lambda im, c: _zoom_all(im, c, value, config)),
                    compiler_options=portable_compiler_options())
    seen = set()
    for seed in range(3):
        params = random_zoom_out.sample(x, key=jax.random.key(seed), **conf)
        got = np.asarray(random_zoom_out.apply(x, params=params, **conf))
        np.testing.assert_array_equal(got, np.asarray(every(x, params["canvas"])))
        sides = np.asarray(params["canvas"])[:, 2] / H
        seen |= {int(np.ceil(2 * s)) for s in sides}
    assert len(seen) >= 4  # canvases needing from few taps to many


@pytest.mark.fast_tier("nearest-float32-shape2")
@pytest.mark.parametrize("shape", [(2, 2), (6, 1), (1, 4)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_tiny_images_on_a_canvas_of_their_own_size_come_back(shape, dtype, interpolation):
    """A canvas of the image's own size (side 1) gives the images back: also images too small
    for the image-by-image CPU form (whose loop XLA:CPU failed to compile for some tiny
    shapes)."""
    import augjax

    x = np.random.default_rng(1).integers(0, 256, (2, *shape, 3)).astype(dtype)
    if dtype == np.float32:
        x /= 255.0
    zoom = augjax.ops.random_zoom_out.bind(p=0.5, side_range=(1.0, 1.0),
                                           interpolation=interpolation)
    out = zoom(x, key=jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(out), x)
