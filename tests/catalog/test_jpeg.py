"""jpeg (augjax.catalog.quality) against Pillow's JPEG round trip (libjpeg-turbo).

The op is libjpeg's integer arithmetic, so the comparison is exact: every pixel equal to
``Image.save(buf, "JPEG", quality=q)`` then ``Image.open(buf)``, for colour (4:2:0) and grayscale,
sizes that are not whole blocks or MCUs, the tiny widths where libjpeg upsamples without its
triangle filter, and every quality class (the table scale changes at 50; baseline caps at 255).
"""

from __future__ import annotations

import io

import jax
import numpy as np
import pytest
from helpers import images
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from augjax.catalog.quality import jpeg
from augjax.errors import InputError, ParamError
from augjax.kernels.jpeg import jpeg_roundtrip, quant_table

KEY = jax.random.key(0)
ROUNDTRIP = jax.jit(jpeg_roundtrip)


def pil_jpeg(image: np.ndarray, quality: int) -> np.ndarray:
    gray = image.shape[-1] == 1
    buf = io.BytesIO()
    Image.fromarray(image[..., 0] if gray else image).save(buf, "JPEG", quality=int(quality))
    out = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("L" if gray else "RGB"))
    return out[..., None] if gray else out


def quant_tables_in_file(quality: int) -> list[np.ndarray]:
    buf = io.BytesIO()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(buf, "JPEG", quality=quality)
    return [np.asarray(t) for t in Image.open(io.BytesIO(buf.getvalue())).quantization.values()]


@pytest.mark.parametrize("quality", [1, 10, 25, 49, 50, 51, 75, 95, 100])
def test_tables_are_the_ones_pillow_writes(quality):
    luma, chroma = quant_tables_in_file(quality)
    # Pillow reports the tables in zigzag order; compare as multisets per table and in order
    # of the DC term (first in both orders), which pins the scaling.
    for ours, theirs in ((quant_table(quality), luma), (quant_table(quality, chroma=True), chroma)):
        assert ours[0] == theirs[0]
        np.testing.assert_array_equal(np.sort(ours), np.sort(theirs))


@pytest.mark.fast_tier("50-shape0")
@pytest.mark.parametrize("shape", [(16, 16, 3), (17, 23, 3), (33, 50, 3), (5, 3, 3), (9, 4, 3),
                                   (8, 8, 1), (19, 13, 1)])
@pytest.mark.parametrize("quality", [5, 50, 90, 100])
def test_equals_pillow(shape, quality):
    image = images(1, *shape)[0]
    np.testing.assert_array_equal(np.asarray(ROUNDTRIP(image, quality)), pil_jpeg(image, quality))


@pytest.mark.slow
def test_equals_pillow_on_a_photo():
    from augjax.data import sample_paths

    photo = np.asarray(Image.open(sample_paths()[0]).convert("RGB"))[:97, :131]
    for quality in (15, 60, 92):
        np.testing.assert_array_equal(np.asarray(ROUNDTRIP(photo, quality)),
                                      pil_jpeg(photo, quality))


@pytest.mark.slow
@settings(max_examples=5, deadline=None)
@given(h=st.integers(1, 40), w=st.integers(1, 40), quality=st.integers(1, 100),
       seed=st.integers(0, 2**16))
def test_equals_pillow_any_size(h, w, quality, seed):
    image = images(1, h, w, 3, seed=seed)[0]
    np.testing.assert_array_equal(np.asarray(ROUNDTRIP(image, quality)), pil_jpeg(image, quality))


@pytest.mark.slow
def test_op_draws_a_whole_quality_per_sample_and_applies_it():
    x = images(6, 24, 20, 3)
    params = jpeg.sample(x, key=KEY, quality=(20, 90))
    q = np.asarray(params["quality"])
    assert q.shape == (6,) and np.all(q == np.round(q)) and q.min() >= 20 and q.max() <= 90
    assert len(set(q.tolist())) > 1
    out = np.asarray(jpeg(x, key=KEY, quality=(20, 90)))
    expected = np.stack([pil_jpeg(s, int(v)) for s, v in zip(x, q)])
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.asarray(jpeg.apply(x, params=params)), expected)


@pytest.mark.slow
def test_float_images_go_through_8_bit_levels():
    x = images(3, 16, 24, 3, dtype=np.float32)
    out = np.asarray(jpeg(x, key=KEY, quality=70))
    levels = np.clip(np.round(x * 255), 0, 255).astype(np.uint8)
    expected = np.stack([pil_jpeg(s, 70) for s in levels]).astype(np.float32) / 255
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, atol=1e-7)


def test_bad_arguments_are_named():
    x = images(2, 16, 16, 3)
    with pytest.raises(ParamError, match="quality"):
        jpeg(x, key=KEY, quality=0)
    with pytest.raises(ParamError, match="quality"):
        jpeg(x, key=KEY, quality=(90, 10))
    with pytest.raises(InputError, match="jpeg"):
        jpeg(images(2, 16, 16, 4), key=KEY)


def test_the_three_components_share_one_dct_in_the_program():
    """Y, Cb and Cr are coded as one batch of 8x8 blocks (augjax.kernels.jpeg._code_blocks):
    the colour program holds the DCTs' multiplies once, plus the colour conversions', not three
    times (1,212 equations and 171 multiplies before, 572 and 73 now: half the compile, the same
    bits, test_equals_pillow*; benchmarks/jpeg_program.py). A trace, nothing compiles."""
    from collections import Counter

    def muls(channels):
        jaxpr = jax.make_jaxpr(jpeg_roundtrip)(np.zeros((37, 53, channels), np.uint8), 50)
        return Counter(e.primitive.name for e in jaxpr.eqns)["mul"]

    one, three = muls(1), muls(3)
    assert three - one < one, (one, three)  # less than a second DCT's worth for the colour
