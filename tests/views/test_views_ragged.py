"""Views of images of different sizes (augjax.ragged_views): on a list of arrays each view is its
step on the image alone with the view's key, its window drawn from the image's true size; in a
DALI CPU pipeline on decoded JPEGs of different sizes (``ragged=True``, no resize first) the
windows, the draws and every copied pixel equal the arrays path with the pipeline's seeds.
Also: a Views is a Step, and what it refuses."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import abs_diff, write_jpegs

import augjax
from augjax import ops

SCALE, RATIO = (0.25, 1.0), (3 / 4, 4 / 3)


def _images(sizes):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]


def _chain(size, scale=SCALE):
    return augjax.compose(ops.random_resized_crop.bind(size=(size, size), scale=scale),
                          ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.5, 1.5)))


@pytest.mark.slow
def test_each_view_is_its_step_on_the_image_alone_bitwise():
    images = _images([(12, 12), (40, 30)])
    views = augjax.views({"global": (2, _chain(10)), "local": [_chain(6, (0.05, 0.4))]})
    key = jax.random.key(3)
    out = views(images, key=key)
    assert out["global"].shape == (2, 2, 10, 10, 3) and out["local"].shape == (2, 1, 6, 6, 3)
    keys = views.view_keys(key, len(images))
    for name, steps in views.groups:
        for v, step in enumerate(steps):
            for i, image in enumerate(images):
                alone = step(image[None], key=keys[name][i:i + 1, v])
                np.testing.assert_array_equal(np.asarray(out[name][i, v]), np.asarray(alone)[0])
    assert not np.array_equal(out["global"][1, 0], out["global"][1, 1])


def test_windows_are_drawn_from_each_true_size():
    """A tall and a wide image: every view's box lies inside the image's own (H, W), keeps
    RandomResizedCrop's area and ratio rule on it (or its centred fallback), and is the box
    random_resized_crop draws for that image with the view's key."""
    rrc = ops.random_resized_crop.bind(size=(8, 8), scale=SCALE)
    sizes = [(40, 12), (12, 40)]
    images = [np.zeros((h, w, 1), np.uint8) for h, w in sizes]
    views = augjax.views({"v": (24, rrc)})
    key = jax.random.key(7)
    boxes = np.stack([np.asarray(p["box"]) for p in views.sample(images, key=key)["v"]], 1)
    keys = views.view_keys(key, len(images))["v"]
    for i, (h, w) in enumerate(sizes):
        want = np.asarray(rrc.sample([images[i]] * 24, key=keys[i])["box"])
        np.testing.assert_array_equal(boxes[i], want)
        top, left, bh, bw = boxes[i].T
        assert (top >= 0).all() and (top + bh <= h).all() and (left >= 0).all()
        assert (left + bw <= w).all()
        kept = ((bh * bw >= SCALE[0] * h * w - (bh + bw)) & (bw / bh >= RATIO[0] - 1 / bh)
                & (bw / bh <= RATIO[1] + 1 / bh))
        fallback = (top == (h - bh) // 2) & (left == (w - bw) // 2) & ((bh == h) | (bw == w))
        assert (kept | fallback).all()
        # the long side is cropped along its true length (a square resize would cap it at 12)
        assert (top + bh).max() > 12 if h > w else (left + bw).max() > 12


def test_a_views_is_a_step_that_runs_on_its_own():
    views = augjax.views({"a": (2, ops.random_resized_crop.bind(size=8)),
                          "b": [ops.center_crop.bind(size=6)]})
    assert isinstance(views, augjax.Step)
    assert views.outputs == ("a", "b") and views.ragged and views.random
    assert views.elements()[2].name == "center_crop"
    with pytest.raises(augjax.InputError, match="views: a Views step runs on its own") as info:
        augjax.compose([views, ops.flip])  # refused when built (it was refused when called)
    assert info.value.argument == "ops[0]"
    with pytest.raises(augjax.InputError, match="views: a Views step runs on its own"):
        augjax.random_apply(views, 0.5)
    with pytest.raises(augjax.ParamError, match="views do not nest"):
        augjax.views({"x": (2, views)})
    images = [np.zeros((12, 9, 3), np.uint8), np.zeros((7, 14, 3), np.uint8)]
    with pytest.raises(augjax.InputError, match="views.apply: .*a list"):
        views.apply(images, params={})
    with pytest.raises(augjax.InputError, match="takes images only, got masks="):
        views(images, key=jax.random.key(0), masks=[m[..., 0] for m in images])
    with pytest.raises(augjax.InputError, match="unknown argument 'ragid'; did you mean "
                       "'ragged'") as info:  # a typo is named as one, not as a target
        views(images, key=jax.random.key(0), ragid=True)
    assert info.value.argument == "ragid"
    with pytest.raises(augjax.InputError, match="'layout' expects 'HWC'"):
        views(np.zeros((2, 3, 12, 12), np.uint8), key=jax.random.key(0), layout="CHW")
    with pytest.raises(augjax.InputError, match="'ragged' is for DALI"):
        views(images, key=jax.random.key(0), ragged=True)
    flips = augjax.views({"a": (2, ops.random_resized_crop.bind(size=8)),
                          "b": [ops.flip.bind(p=0.5)]})
    assert not flips.ragged
    with pytest.raises(augjax.InputError, match=r"group 'b' view 0: flip: .*different sizes"):
        flips(images, key=jax.random.key(0))


# -- DALI ------------------------------------------------------------------------------------
B = 4
SIZES = [(30, 40), (40, 30), (24, 36), (36, 26)]
#: DALI's fn.resize against the arrays' resampling, uint8 levels (tests/dali/test_ragged.py).
RESAMPLE_MAX, RESAMPLE_MEAN = 16, 0.5


@pytest.fixture(scope="module")
def dali_views():
    return augjax.views({
        "crops": (2, augjax.compose(ops.random_crop.bind(size=(20, 20), pad_if_needed=True),
                                    ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.5, 1.5)))),
        "rrc": [augjax.compose(ops.random_resized_crop.bind(size=(12, 12), scale=SCALE),
                               ops.flip.bind(p=0.5))],
    })


@pytest.fixture(scope="module")
def dali_runs(tmp_path_factory, dali_views):
    pytest.importorskip("nvidia.dali.plugin.jax")
    from nvidia.dali import fn, pipeline_def, types

    root = write_jpegs(tmp_path_factory.mktemp("views_jpegs"), SIZES)

    @pipeline_def(batch_size=B, num_threads=1, device_id=None, seed=5)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=True, seed=1)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        seeds = augjax.dali.sample_seeds(device="cpu")
        out = dali_views(images, seeds=seeds, ragged=True)
        return images, seeds, out["crops"], out["rrc"]

    p = pipe()
    p.build()
    runs = []
    for _ in range(2):
        images, seeds, crops, rrc = p.run()
        runs.append(([np.array(images[i]) for i in range(B)],
                     *(np.array(o.as_tensor()) for o in (seeds, crops, rrc))))
    assert runs[0][3].shape == (B, 1, 12, 12, 3) and p.run()[2].layout() == "FHWC"
    return runs


@pytest.mark.slow
def test_dali_ragged_views_equal_the_arrays_path(dali_views, dali_runs):
    for images, seeds, crops, rrc in dali_runs:
        assert len({im.shape for im in images}) == B  # decoded at their own sizes
        keys = augjax.keys_from_seeds(seeds)
        want = dali_views(images, key=keys)
        assert crops.shape == (B, 2, 20, 20, 3) and crops.dtype == np.uint8
        # copies: every pixel, every flip and factor the arrays path's
        np.testing.assert_array_equal(crops, np.asarray(want["crops"]))
        # resampled by DALI: the same windows and flips, DALI's resampling
        d = abs_diff(rrc, np.asarray(want["rrc"]))
        assert d.max() <= 1.3 * RESAMPLE_MAX + 1 and d.mean() <= RESAMPLE_MEAN, (d.max(),
                                                                                 d.mean())


def test_dali_views_of_different_sizes_without_ragged_name_ragged_true(tmp_path, dali_views):
    """Left out, ``ragged=True`` is named when the pipeline is defined (the node is a decoder's:
    a warning, since decoded images may all have one size) and by DALI's uniform-shape assert
    at run time (``augjax.dali.error_cause``); a node of another operator gets no warning."""
    import warnings

    pytest.importorskip("nvidia.dali.plugin.jax")
    from nvidia.dali import fn, pipeline_def, types

    root = write_jpegs(tmp_path, SIZES)

    @pipeline_def(batch_size=B, num_threads=1, device_id=None, seed=5)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=root)
        out = dali_views(fn.decoders.image(jpegs, output_type=types.RGB))
        return out["crops"], out["rrc"]

    @pipeline_def(batch_size=B, num_threads=1, device_id=None, seed=5)
    def resized():
        jpegs, _ = fn.readers.file(file_root=root)
        images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=(32, 32))
        return dali_views(images)["crops"]

    with pytest.warns(augjax.AugjaxWarning, match=r"views: the images come from a DALI decoder"
                                                  r".*need ragged=True"):
        p = pipe()
        p.build()
    with warnings.catch_warnings():
        warnings.simplefilter("error", augjax.AugjaxWarning)
        resized().build()
    with pytest.raises(RuntimeError) as info:
        p.run()
    cause = augjax.dali.error_cause(info.value)
    assert "images of different sizes" in cause and "ragged=True" in cause, cause
