"""Masks of every documented layout and dtype through a chain in a DALI CPU pipeline, equal to
the array path with the pipeline's seeds.

Masks ``(H, W)`` and ``(H, W, 1)`` of uint8, int32 and int64 ids (ids above 255 among them) go
through a chain that starts with a crop (``random_resized_crop``: DALI reads it with
``fn.slice`` and ``fn.resize``, which take neither ``HW`` samples nor int32) and one that does
not (the masks go straight into the ``jax_function``). The crop draws an 8 x 8 window of the
16 x 16 images and scales it up 4x: at an integer upscale DALI's nearest (centre sampling) and
the array path's (ATen's legacy nearest) pick the same source pixels, so the two paths agree
bitwise. One pipeline per chain carries all six masks.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import images, run_dali

import augjax
from augjax import ops

pytest.importorskip("nvidia.dali.plugin.jax")

N, H, W = 2, 16, 16
FILL = 3
CHAINS = {
    "crop_first": augjax.compose(
        ops.random_resized_crop.bind(size=32, scale=(0.25, 0.25), ratio=(1.0, 1.0)),
        ops.flip.bind(p=0.5)),
    "flip_first": augjax.compose(ops.flip.bind(p=0.5), ops.rotate.bind(degrees=30)),
}
LAYOUTS = {"HW": (H, W), "HW1": (H, W, 1)}
DTYPES = ("uint8", "int32", "int64")
IDS = {"uint8": (0, 7, 200, 255), "int32": (0, 7, 300, 70_000, 2**31 - 1),
       "int64": (0, 7, 300, 70_000, 2**31 - 1)}
CASES = [(layout, dtype) for layout in LAYOUTS for dtype in DTYPES]


def _masks(layout: str, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(len(layout) * 10 + DTYPES.index(dtype))
    ids = np.asarray(IDS[dtype], dtype)
    # 2 x 2 blocks of ids: every window keeps several of them
    blocks = rng.integers(0, len(ids), (N, H // 2, W // 2))
    m = ids[np.repeat(np.repeat(blocks, 2, 1), 2, 2)]
    return m.reshape((N, *LAYOUTS[layout]))


@pytest.fixture(scope="module", params=list(CHAINS))
def chain_outputs(request):
    """``(name, images, masks per case, seeds, DALI masks per case)``: one pipeline run."""
    chain = CHAINS[request.param]
    batch = images(N, H, W)
    masks = [_masks(*case) for case in CASES]

    def build(x, *nodes):
        seeds = augjax.dali.sample_seeds(device="cpu")
        return (seeds, *(chain(x, seeds=seeds, masks=m, mask_fill=FILL)["masks"]
                         for m in nodes))

    seeds, *outs = run_dali(build, batch, *masks, layouts=["HWC"] + [""] * len(masks))[0]
    return request.param, batch, dict(zip(CASES, masks)), seeds, dict(zip(CASES, outs))


@pytest.mark.parametrize("layout, dtype", CASES)
def test_masks_in_dali_equal_the_array_path(chain_outputs, layout, dtype):
    name, batch, masks, seeds, outs = chain_outputs
    m, got = masks[layout, dtype], outs[layout, dtype]
    ref = CHAINS[name](batch, key=augjax.keys_from_seeds(seeds), masks=m,
                       mask_fill=FILL)["masks"]
    ref = np.asarray(ref)
    size = 32 if name == "crop_first" else H
    assert got.shape == ref.shape == (N, size, size, *LAYOUTS[layout][2:])
    assert got.dtype == ref.dtype  # int64 ids come back as JAX's int32 (x64 off), both ways
    np.testing.assert_array_equal(got, ref)
    # lossless: the ids are the mask's own (or the fill), the large ones among them
    ids = set(np.unique(got).tolist())
    assert ids <= set(IDS[dtype]) | {FILL}
    if dtype != "uint8":
        assert max(ids) > 255


@pytest.mark.gpu
def test_masks_on_the_gpu_through_a_crop_first_chain_equal_the_array_path():
    """GPU images and masks (``(H, W)`` int32 with ids above 255, ``(H, W, 1)`` uint8): the
    windows are drawn on the CPU, the masks read on the GPU, equal to the array path."""
    chain = CHAINS["crop_first"]
    batch = images(N, H, W)
    masks = [_masks("HW", "int32"), _masks("HW1", "uint8")]

    def build(x, *nodes):
        seeds = augjax.dali.sample_seeds(device="cpu")
        return (seeds, *(chain(x, seeds=seeds, masks=m, mask_fill=FILL)["masks"]
                         for m in nodes))

    seeds, *outs = run_dali(build, batch, *masks, layouts=["HWC", "", ""], device="gpu")[0]
    for m, got in zip(masks, outs):
        ref = chain(batch, key=augjax.keys_from_seeds(seeds), masks=m, mask_fill=FILL)["masks"]
        assert got.dtype == m.dtype and got.shape == (N, 32, 32, *m.shape[3:])
        np.testing.assert_array_equal(got, np.asarray(ref))
