"""mosaic: against a NumPy reference (rectangles pasted tile by tile, on the params the op drew;
pixels bitwise, boxes and keypoints exactly), its properties (every valid box inside its
tile's quadrant and the output; the boxes of per-instance masks equal the masks' extents per
quadrant; validity counts; replay; keys), the Sanitize rule after it, DALI == arrays, errors."""

from __future__ import annotations

import itertools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import compose
from augjax.catalog.geometry import flip
from augjax.catalog._mosaic_rows import fits, mosaic_rows
from augjax.catalog.paste import _gather, mosaic, mosaic_box_labels, mosaic_gather
from augjax.errors import InputError, ParamError

N, H, W = 5, 12, 16


def _data(seed=0, n=N, h=H, w=W, m=3):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, h, w, 3), dtype=np.uint8)
    masks = np.zeros((n, h, w, m), np.uint8)
    boxes = np.zeros((n, m, 4), np.float32)
    for i in range(n):
        for j in range(m):
            x1, y1 = rng.integers(0, w - 3), rng.integers(0, h - 3)
            x2, y2 = rng.integers(x1 + 2, w + 1), rng.integers(y1 + 2, h + 1)
            masks[i, y1:y2, x1:x2, j] = j + 1
            boxes[i, j] = (x1, y1, x2, y2)
    points = rng.uniform(0, [w - 0.01, h - 0.01], (n, 4, 2)).astype(np.float32)
    return x, masks, boxes, points


def _quadrants(center, oh, ow):
    """Each tile's quadrant in the output: (x_lo, y_lo, x_hi, y_hi) per tile, ints."""
    yc, xc = int(center[0]), int(center[1])
    cx = [(-10**9, xc), (xc, 10**9)]
    cy = [(-10**9, yc), (yc, 10**9)]
    out = []
    for q in range(4):
        (y0, y1), (x0, x1) = cy[q // 2], cx[q % 2]
        out.append((max(x0, 0), max(y0, 0), min(x1, ow), min(y1, oh)))
    return out


def reference(x, tiles, center, oh, ow, fill):
    """The mosaic by pasting each tile's image at its corner, cut to its quadrant."""
    n, h, w, c = x.shape
    out = np.empty((n, oh, ow, c), x.dtype)
    for i in range(n):
        out[i] = fill
        yc, xc = int(center[i, 0]), int(center[i, 1])
        for q, (x0, y0, x1, y1) in enumerate(_quadrants(center[i], oh, ow)):
            t = tiles[i, q]
            if t < 0:
                continue
            dy = yc - h if q < 2 else yc
            dx = xc - w if q % 2 == 0 else xc
            for y in range(y0, y1):
                for xx in range(x0, x1):
                    r, cc = y - dy, xx - dx
                    if 0 <= r < h and 0 <= cc < w:
                        out[i, y, xx] = x[t, r, cc]
    return out


def reference_boxes(boxes, valid, tiles, center, h, w, oh, ow):
    n, m, _ = boxes.shape
    out = np.zeros((n, 4 * m, 4), np.float32)
    ok = np.zeros((n, 4 * m), bool)
    for i in range(n):
        yc, xc = int(center[i, 0]), int(center[i, 1])
        for q, (x0, y0, x1, y1) in enumerate(_quadrants(center[i], oh, ow)):
            t = tiles[i, q]
            dy = yc - h if q < 2 else yc
            dx = xc - w if q % 2 == 0 else xc
            for j in range(m):
                b = boxes[max(t, 0), j] + np.array([dx, dy, dx, dy], np.float32)
                b = np.minimum(np.maximum(b, [x0, y0, x0, y0]), [x1, y1, x1, y1])
                b = np.clip(b, 0, [ow, oh, ow, oh])
                out[i, q * m + j] = b
                bw, bh = b[2] - b[0], b[3] - b[1]
                ok[i, q * m + j] = (t >= 0 and valid[max(t, 0), j] and bw >= 1 and bh >= 1
                                    and bw * bh >= 1)
    return out, ok


@pytest.mark.fast_tier("size1-float32")
@pytest.mark.parametrize("size,dtype", [(None, np.uint8), ((10, 20), np.float32)])
def test_matches_the_numpy_reference(size, dtype):
    x, masks, boxes, points = _data()
    if dtype == np.float32:
        x = x.astype(np.float32) / 255.0
    op = mosaic.bind(size=size, fill=0.25, p=0.8)
    key = jax.random.key(3)
    params = op.sample(x, key=key)
    out = op(x, key=key, boxes=boxes, masks=masks, keypoints=points)
    tiles, center = np.asarray(params["tiles"]), np.asarray(params["center"])
    oh, ow = size or (H, W)
    fill = np.float32(0.25) if dtype == np.float32 else np.uint8(64)
    np.testing.assert_array_equal(np.asarray(out["images"]), reference(x, tiles, center, oh,
                                                                      ow, fill))
    np.testing.assert_array_equal(np.asarray(out["masks"]),
                                  reference(masks, tiles, center, oh, ow, 0))
    want_b, want_v = reference_boxes(boxes, np.ones((N, 3), bool), tiles, center, H, W, oh, ow)
    np.testing.assert_array_equal(np.asarray(out["boxes"]), want_b)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]), want_v)
    # keypoints: shifted by the tile, valid inside its quadrant
    kp, kv = np.asarray(out["keypoints"]), np.asarray(out["keypoints_valid"])
    for i in range(N):
        yc, xc = center[i]
        for q, (x0, y0, x1, y1) in enumerate(_quadrants(center[i], oh, ow)):
            t = tiles[i, q]
            d = np.array([xc - W if q % 2 == 0 else xc, yc - H if q < 2 else yc], np.float32)
            want = points[max(t, 0)] + d
            np.testing.assert_array_equal(kp[i, 4 * q:4 * q + 4], want)
            inside = ((want[:, 0] >= x0) & (want[:, 0] < x1) & (want[:, 1] >= y0)
                      & (want[:, 1] < y1) & (t >= 0))
            np.testing.assert_array_equal(kv[i, 4 * q:4 * q + 4], inside)
    assert (tiles[:, 1:] == -1).all(axis=1).any() and (tiles[:, 1:] >= 0).all(axis=1).any()


def test_draws_partners_and_centres_as_documented():
    x = np.zeros((6, H, W, 3), np.uint8)
    params = mosaic.sample(x, key=jax.random.key(1), center_range=(0.75, 1.25))
    tiles, center = np.asarray(params["tiles"]), np.asarray(params["center"])
    np.testing.assert_array_equal(tiles[:, 0], np.arange(6))
    assert (tiles[:, 1:] != np.arange(6)[:, None]).all()  # partners are other samples
    assert ((tiles >= 0) & (tiles < 6)).all()
    # centre on the 2s canvas in [0.75 s, 1.25 s), in the output minus s // 2
    assert (center[:, 0] >= int(0.75 * H) - H // 2).all() and (center[:, 0] < 1.25 * H - H // 2).all()
    assert (center[:, 1] >= int(0.75 * W) - W // 2).all() and (center[:, 1] < 1.25 * W - W // 2).all()


def test_every_valid_box_lies_in_its_tile_and_equals_its_mask_extent():
    """Boxes made from per-instance masks: after the mosaic each valid box is inside its
    tile's quadrant and the output, and equals the extent of its instance's mask pixels in
    that quadrant; an invalid one has no such pixels (or under 1 pixel of side)."""
    x, masks, boxes, _ = _data(seed=2, n=8)
    for seed in range(4):
        out = mosaic(x, key=jax.random.key(seed), boxes=boxes, masks=masks, size=(14, 18))
        params = mosaic.sample(x, key=jax.random.key(seed), size=(14, 18))
        b, v, mk = (np.asarray(out[k]) for k in ("boxes", "boxes_valid", "masks"))
        assert b.shape == (8, 12, 4) and v.shape == (8, 12)
        for i in range(8):
            quads = _quadrants(np.asarray(params["center"])[i], 14, 18)
            for q, (x0, y0, x1, y1) in enumerate(quads):
                for j in range(3):
                    box, ok = b[i, 3 * q + j], v[i, 3 * q + j]
                    region = np.zeros((14, 18), bool)
                    region[max(y0, 0):max(y1, 0), max(x0, 0):max(x1, 0)] = True
                    pix = (mk[i, ..., j] != 0) & region
                    if ok:
                        assert x0 <= box[0] <= box[2] <= x1 and y0 <= box[1] <= box[3] <= y1
                        ys, xs = np.nonzero(pix)
                        np.testing.assert_array_equal(
                            box, [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
                    else:
                        ys, xs = np.nonzero(pix)
                        assert len(ys) == 0 or np.ptp(xs) + 1 < 1 or np.ptp(ys) + 1 < 1


def test_valid_count_and_box_labels():
    x, _, boxes, _ = _data(seed=5)
    valid = np.array([[True, False, True]] * N)
    out = mosaic(x, key=jax.random.key(0), boxes=boxes, boxes_valid=valid, p=1.0,
                 center_range=(1.0, 1.0))  # centre in the middle: every box is cut, some kept
    params = mosaic.sample(x, key=jax.random.key(0), p=1.0, center_range=(1.0, 1.0))
    v = np.asarray(out["boxes_valid"])
    assert v.sum() <= 4 * 2 * N and not v.reshape(N, 4, 3)[:, :, 1].any()
    labels = np.arange(N * 3).reshape(N, 3)
    got = np.asarray(mosaic_box_labels(labels, params))
    tiles = np.asarray(params["tiles"])
    np.testing.assert_array_equal(got, labels[tiles].reshape(N, 12))


def test_replay_same_key_and_keys_matter():
    x, masks, boxes, _ = _data(seed=1)
    key = jax.random.key(7)
    a = mosaic(x, key=key, boxes=boxes, masks=masks)
    b = mosaic(x, key=key, boxes=boxes, masks=masks)
    params = mosaic.sample(x, key=key, boxes=boxes, masks=masks)
    c = mosaic.apply(x, params=params, boxes=boxes, masks=masks)
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]))
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(c[k]))
    d = mosaic(x, key=jax.random.key(8), boxes=boxes, masks=masks)
    assert not np.array_equal(np.asarray(a["images"]), np.asarray(d["images"]))
    p0 = mosaic(x, key=key, p=0.0)
    np.testing.assert_array_equal(np.asarray(p0), x)


@pytest.mark.slow
def test_in_a_chain_after_a_flip_and_with_min_visibility():
    x, masks, boxes, _ = _data(seed=3)
    chain = compose(flip.bind(p=1.0), mosaic.bind(center_range=(1.0, 1.0)))
    out = chain(x, key=jax.random.key(0), boxes=boxes, masks=masks,
                sanitize={"min_visibility": 0.6})
    flipped = flip(x, key=jax.random.key(0), boxes=boxes, masks=masks, p=1.0)
    assert out["boxes"].shape == (N, 12, 4)
    b = np.asarray(out["boxes"])
    params = chain.sample(x, key=jax.random.key(0), boxes=boxes, masks=masks)[1]
    tiles = np.asarray(params["tiles"])
    fb = np.asarray(flipped["boxes"])
    area0 = (fb[..., 2] - fb[..., 0]) * (fb[..., 3] - fb[..., 1])
    area1 = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    frac = area1 / area0[tiles].reshape(N, 12)
    v = np.asarray(out["boxes_valid"])
    assert (frac[v] >= 0.6).all() and v.any()
    assert not v[(frac < 0.6)].any()


def test_dali_cpu_pipeline_equals_the_arrays_path():
    pytest.importorskip("nvidia.dali.plugin.jax")
    from helpers import run_dali, seeds

    x, masks, boxes, _ = _data(seed=4, n=4)
    s = seeds(4, seed=2)

    def build(im, mk, bx, sd):
        out = mosaic(im, masks=mk, boxes=bx, seeds=sd, size=(10, 14))
        return out["images"], out["masks"], out["boxes"], out["boxes_valid"]

    got, = run_dali(build, x, masks, boxes, s, layouts=["HWC", None, None, None])
    ref = mosaic(x, key=augjax.keys_from_seeds(s), masks=masks, boxes=boxes, size=(10, 14))
    for g, k in zip(got, ("images", "masks", "boxes", "boxes_valid")):
        np.testing.assert_array_equal(g, np.asarray(ref[k]))


def test_bad_input_errors():
    x = np.zeros((2, H, W, 3), np.uint8)
    with pytest.raises(ParamError, match="mosaic.*center_range"):
        mosaic(x, key=jax.random.key(0), center_range=(1.5, 0.5))
    with pytest.raises(ParamError, match="mosaic.*size"):
        mosaic(x, key=jax.random.key(0), size=(0, 4))
    with pytest.raises(InputError, match="mosaic.*boxes"):
        mosaic(x, key=jax.random.key(0), boxes=np.zeros((2, 3, 5), np.float32))


def test_grouped_keypoints_become_four_times_the_groups():
    """Grouped keypoints (N, G, K, 2) come back as (N, 4 G, K, 2): each tile's groups, in the
    order of the flat (N, 4 G K, 2) call."""
    x = np.zeros((3, 8, 8, 3), np.uint8)
    kp = np.random.default_rng(0).uniform(0, 7, (3, 2, 5, 2)).astype(np.float32)
    key = jax.random.key(0)
    out = mosaic(x, key=key, keypoints=kp)
    flat = mosaic(x, key=key, keypoints=kp.reshape(3, 10, 2))
    assert out["keypoints"].shape == (3, 8, 5, 2) and out["keypoints_valid"].shape == (3, 8, 5)
    np.testing.assert_array_equal(np.asarray(out["keypoints"]).reshape(3, 40, 2),
                                  np.asarray(flat["keypoints"]))
    np.testing.assert_array_equal(np.asarray(out["keypoints_valid"]).reshape(3, 40),
                                  np.asarray(flat["keypoints_valid"]))


# -- the CPU's row form (augjax/catalog/_mosaic_rows.py) --------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_wide_output_matches_the_numpy_reference(dtype):
    """An output at least twice the input's width (YOLO's 2s canvas: the CPU copies rows),
    centres drawn over the whole of (0, 2) s, so that tiles leave the output on every side."""
    x, masks, boxes, points = _data(seed=6, n=6)
    if dtype == np.float32:
        x = x.astype(np.float32) / 255.0
    op = mosaic.bind(size=(30, 40), center_range=(0.0, 2.0), fill=0.25, p=0.8)
    for seed in range(3):
        key = jax.random.key(seed)
        params = op.sample(x, key=key)
        out = op(x, key=key, masks=masks, boxes=boxes)
        tiles, center = np.asarray(params["tiles"]), np.asarray(params["center"])
        fill = np.float32(0.25) if dtype == np.float32 else np.uint8(64)
        np.testing.assert_array_equal(np.asarray(out["images"]),
                                      reference(x, tiles, center, 30, 40, fill))
        np.testing.assert_array_equal(np.asarray(out["masks"]),
                                      reference(masks, tiles, center, 30, 40, 0))


@pytest.mark.parametrize("n,h,w,oh,ow,c,dtype", [
    (3, 4, 5, 10, 10, 3, np.uint8),    # ow == 2 w: a cut side on either edge
    (4, 6, 3, 7, 6, 1, np.float32),    # oh < 2 h
    (2, 5, 4, 20, 9, 2, np.uint8),     # oh > 2 h, ow > 2 w
    (2, 1, 1, 5, 5, 1, np.bool_),      # one-pixel tiles, masks
])
def test_rows_form_equals_the_pixel_gather_at_every_centre(n, h, w, oh, ow, c, dtype):
    """Every centre from beyond the top-left to beyond the bottom-right corner (tiles cut on
    each edge, or gone), tiles of -1 among them: the rows and the pixel gather agree."""
    assert fits(h, w, oh, ow)
    rng = np.random.default_rng(h * 100 + w)
    x = (rng.integers(0, 2, (n, h, w, c)) if dtype == np.bool_
         else rng.integers(0, 256, (n, h, w, c))).astype(dtype)
    fill = jnp.asarray(rng.integers(0, 2 if dtype == np.bool_ else 256, (c,))).astype(dtype)
    rows = jax.jit(lambda x, t, ce: mosaic_rows(x, t, ce, fill, oh=oh, ow=ow))
    pixels = jax.jit(lambda x, t, ce: _gather(x, t, ce, oh, ow, fill))
    centres = np.array(list(itertools.product(range(-h - 2, oh + h + 3),
                                              range(-w - 2, ow + w + 3))), np.int32)
    centres = np.concatenate([centres, centres[:(-len(centres)) % n]]).reshape(-1, n, 2)
    for ce in centres:
        tiles = rng.integers(-1, n, (n, 4)).astype(np.int32)
        np.testing.assert_array_equal(np.asarray(rows(x, tiles, ce)),
                                      np.asarray(pixels(x, tiles, ce)))


def test_rows_form_gradient_equals_the_pixel_gathers():
    """float32 images: ``jax.grad`` through ``mosaic_gather``'s rows equals the pixel
    gather's bitwise (each input pixel's weights summed over the output pixels that show it,
    in the same order)."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.uniform(0, 1, (3, 4, 5, 3)).astype(np.float32))
    weights = jnp.asarray(rng.uniform(-1, 1, (3, 9, 12, 3)).astype(np.float32))
    tiles = jnp.asarray([[0, 1, 2, -1], [1, 2, 0, 0], [2, 2, 1, 0]], jnp.int32)
    center = jnp.asarray([[3, 4], [-1, 9], [7, 13]], jnp.int32)
    fill = jnp.full((3,), 0.5, jnp.float32)
    got = jax.grad(lambda v: jnp.sum(mosaic_gather(v, tiles, center, 9, 12, fill)
                                     * weights))(x)
    want = jax.grad(lambda v: jnp.sum(_gather(v, tiles, center, 9, 12, fill) * weights))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_cpu_mosaic_copies_rows_not_pixels():
    """The compiled CPU program of a 2s mosaic gathers whole tile rows (``(w, C)`` slices)
    and holds no per-pixel index (no int32 array of an output's size): the pixel form's
    gather of ``(1, 1, 1, C)`` slices through an ``(N, oh * ow)`` tile index cost 1.6-2 ms per
    640x640 canvas on the CPU, the rows ~0.2-0.3 (benchmarks/yolo_stages.py)."""
    if jax.default_backend() != "cpu":
        pytest.skip("the row form is the CPU's")
    n, h, w, oh, ow = 4, 24, 32, 48, 64
    args = (jnp.zeros((n, h, w, 3), jnp.uint8), jnp.zeros((n, 4), jnp.int32),
            jnp.zeros((n, 2), jnp.int32))
    text = jax.jit(lambda x, t, c: mosaic_gather(x, t, c, oh, ow, jnp.zeros(3))).lower(
        *args).compile().as_text()
    slices = re.findall(r"gather\(.*?slice_sizes=\{([\d,]+)\}", text)
    assert slices and set(slices) == {f"{w},3"}, slices
    int_arrays = [math.prod(int(d) for d in dims.split(","))
                  for dims in re.findall(r"s32\[([\d,]+)\]", text)]
    assert max(int_arrays) < oh * ow, max(int_arrays)
