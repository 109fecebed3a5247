"""augjax.data: the bundled sample photographs, as paths and as a decoded batch."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from PIL import Image

import augjax
from augjax.data import sample_dir, sample_images, sample_paths


def test_paths_are_the_bundled_jpegs_with_their_licence():
    paths = sample_paths()
    assert [p.name[:3] for p in paths] == [f"{i:02d}-" for i in range(1, 9)]
    assert all(p.parent == sample_dir() and p.suffix == ".jpg" for p in paths)
    licences = (sample_dir() / "LICENSES.md").read_text(encoding="utf-8")
    assert all(f"`{p.name}`" in licences for p in paths)
    assert augjax.data.sample_paths() == paths  # reachable as augjax.data


def test_batch_is_resize_and_centre_crop_of_each_photo():
    batch = sample_images(size=(48, 64), count=3)
    assert batch.shape == (3, 48, 64, 3) and batch.dtype == np.uint8
    # independent reference: Pillow's ImageOps.fit is "scale to cover, then centre-crop"
    for img, path in zip(batch, sample_paths()):
        with Image.open(path) as im:
            rgb = im.convert("RGB").resize(_cover(im.size, (64, 48)), Image.BILINEAR)
        ref = np.asarray(rgb)
        h, w = ref.shape[:2]
        top, left = (h - 48) // 2, (w - 64) // 2
        np.testing.assert_array_equal(img, ref[top:top + 48, left:left + 64])
    floats = sample_images(size=16, count=2, dtype="float32")
    assert floats.shape == (2, 16, 16, 3) and floats.dtype == np.float32
    np.testing.assert_allclose(floats, sample_images(size=16, count=2) / 255.0, atol=1e-7)
    native = sample_images(size=None)
    assert len(native) == 8 and max(native[0].shape[:2]) == 256  # stored at 256 px, long side


def _cover(size: tuple[int, int], target: tuple[int, int]) -> tuple[int, int]:
    (w, h), (tw, th) = size, target
    s = max(th / h, tw / w)
    return max(tw, round(w * s)), max(th, round(h * s))


def test_the_batch_runs_through_an_op():
    x = sample_images(size=32, count=2)
    out = np.asarray(augjax.ops.flip(x, key=jax.random.key(0), p=1.0))
    np.testing.assert_array_equal(out, x[:, :, ::-1])


@pytest.mark.parametrize("kwargs, words", [
    (dict(size=0), "argument 'size' expects a positive int"),
    (dict(size=(8, 8, 8)), "argument 'size'"),
    (dict(count=9), "argument 'count' expects an int in [1, 8], got 9"),
    (dict(dtype="float16"), "argument 'dtype' expects 'uint8' or 'float32'"),
])
def test_bad_arguments(kwargs, words):
    with pytest.raises(augjax.InputError) as info:
        sample_images(**kwargs)
    assert words in str(info.value)
