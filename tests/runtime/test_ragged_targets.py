"""A list of images of different sizes on arrays, with per-image targets, through a chain that
starts with a crop or resize: one batch, the windows from the true sizes.

References: the padded batch read with dense window weights (``ragged_apply``, the path the
list took before), each image alone through the same op or chain with its own key (the
uniform-batch path), a DALI CPU pipeline with the same seeds (``tests/dali/test_ragged.py``),
and NumPy for the bucket arithmetic. Compile counts come from JAX's monitoring events.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from helpers import ragged_targets
from augjax._runtime.ragged.prefix import pad_images, ragged_apply
from augjax._runtime.ragged.read import bucket
from augjax.errors import InputError

SIZES = [(40, 56), (57, 33), (48, 48), (9, 70), (70, 12), (31, 45), (64, 50)]


def _images(sizes=SIZES, dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]
    return out if dtype == np.uint8 else [(x / 255.0).astype(np.float32) for x in out]


def _targets(sizes=SIZES, seed=1):
    """Per image: a class mask (ids 0..6), 1..3 ordered boxes and 2 keypoints inside it."""
    return ragged_targets(sizes, seed)


def _keys(n, seed=0):
    return jax.random.split(jax.random.key(seed), n)


PIXEL_CASES = {
    "rrc": [augjax.ops.random_resized_crop.bind(size=(20, 24))],
    "rrc_nearest": [augjax.ops.random_resized_crop.bind(size=24, interpolation="nearest")],
    "random_crop": [augjax.ops.random_crop.bind(size=(32, 30), padding=4, pad_if_needed=True,
                                                fill=128 / 255)],
    "center_crop": [augjax.ops.center_crop.bind(size=(45, 47))],
    "resize": [augjax.ops.resize.bind(size=(21, 23))],
    "eval": [augjax.ops.resize.bind(size=40), augjax.ops.center_crop.bind(size=36)],
}


@pytest.mark.fast_tier("rrc_nearest-float32")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("case", sorted(PIXEL_CASES))
def test_pixels_equal_the_padded_batch(case, dtype):
    steps = tuple(PIXEL_CASES[case])
    images = _images(dtype=dtype)
    keys = _keys(len(images))
    out = np.asarray(augjax.compose(list(steps))(images, key=keys))
    padded, sizes = pad_images(images, "test")
    ref, _, _ = ragged_apply(steps, padded, sizes, keys, 0, "test")
    assert out.shape == ref.shape and out.dtype == dtype
    ref = np.asarray(ref)
    if dtype == np.uint8 and case in ("rrc", "resize", "eval"):
        # the same weights, each row's normaliser summed over its taps here and over the
        # padded row there: the float sums may round to the other level
        diff = np.abs(out.astype(int) - ref)
        assert diff.max() <= 1 and (diff > 0).mean() < 0.005, (diff.max(), (diff > 0).mean())
    elif dtype == np.uint8:  # copies and nearest: exact
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out, np.asarray(ref), atol=1e-6)


def _alone(chain, image, key, mask, boxes, points):
    m = len(boxes)
    return chain(image[None], key=key, masks=mask[None], boxes=boxes[None],
                 boxes_valid=np.ones((1, m), bool), keypoints=points[None], mask_fill=9)


@pytest.mark.slow
@pytest.mark.parametrize("ops", [
    pytest.param([augjax.ops.random_resized_crop.bind(size=(24, 20), scale=(0.3, 1.0))],
                 id="rrc"),
    pytest.param([augjax.ops.random_resized_crop.bind(size=24, scale=(0.3, 1.0)),
                  augjax.ops.flip.bind(p=0.5), augjax.ops.rotate.bind(degrees=20)],
                 id="rrc+flip+rotate", marks=pytest.mark.slow),
    pytest.param([augjax.ops.random_crop.bind(size=(30, 40), padding=3, pad_if_needed=True)],
                 id="random_crop"),
    pytest.param([augjax.ops.resize.bind(size=36), augjax.ops.center_crop.bind(size=32)],
                 id="resize+center_crop"),
])
def test_targets_on_a_list_equal_each_image_alone(ops):
    chain = augjax.compose(ops)
    images = _images()
    masks, boxes, points = _targets()
    keys = _keys(len(images), 3)
    out = chain(images, key=keys, masks=masks, boxes=boxes, keypoints=points, mask_fill=9)
    n = len(images)
    assert out["masks"].shape[:3] == out["images"].shape[:3] and out["masks"].dtype == np.int32
    assert out["boxes"].shape == (n, 4, 4) and out["boxes_valid"].shape == (n, 4)
    for i in (0, 3, 4):  # each alone compiles its own size: a portrait, a wide and a tall one
        alone = _alone(chain, images[i], keys[i:i + 1], masks[i], boxes[i], points[i])
        alone = {k: np.asarray(v)[0] for k, v in alone.items()}
        mine = {k: np.asarray(v)[i] for k, v in out.items()}
        # exact, but a resize to a size drawn from the image's (resize with one int) computes
        # its weights from a traced size there, a static one alone: within 1 level
        diff = np.abs(mine["images"].astype(int) - alone["images"]).max()
        assert diff <= (1 if ops[0].name == "resize" else 0), diff
        np.testing.assert_array_equal(mine["masks"], alone["masks"])
        m = len(boxes[i])
        np.testing.assert_allclose(mine["boxes"][:m], alone["boxes"], atol=2e-4)
        np.testing.assert_array_equal(mine["boxes_valid"][:m], alone["boxes_valid"])
        assert not mine["boxes_valid"][m:].any()  # the list's padding stays invalid
        np.testing.assert_allclose(mine["keypoints"][:2], alone["keypoints"], atol=2e-4)
        np.testing.assert_array_equal(mine["keypoints_valid"][:2], alone["keypoints_valid"])
        assert not mine["keypoints_valid"][2:].any()


@pytest.mark.slow
def test_padded_boxes_with_counts_and_keypoint_groups_are_taken():
    images = _images()
    masks, boxes, points = _targets()
    n = len(images)
    padded = np.zeros((n, 3, 4), np.float32)
    for i, b in enumerate(boxes):
        padded[i, :len(b)] = b
    counts = np.array([len(b) for b in boxes], np.int32)
    grouped = np.stack(points)[:, None]  # (N, 1, 2, 2)
    op = augjax.ops.random_resized_crop.bind(size=24)
    keys = _keys(n, 5)
    out = op(images, key=keys, boxes=padded, boxes_valid=counts, keypoints=grouped)
    listed = op(images, key=keys, boxes=boxes, keypoints=points)
    assert out["boxes"].shape == (n, 3, 4) and out["keypoints"].shape == (n, 1, 2, 2)
    for i in range(n):
        m = counts[i]
        np.testing.assert_array_equal(np.asarray(out["boxes"])[i, :m],
                                      np.asarray(listed["boxes"])[i, :m])
        np.testing.assert_array_equal(np.asarray(out["boxes_valid"])[i], (np.arange(3) < m)
                                      & np.asarray(listed["boxes_valid"])[i, :3])
        np.testing.assert_array_equal(np.asarray(out["keypoints"])[i, 0],
                                      np.asarray(listed["keypoints"])[i, :2])


@pytest.mark.slow
def test_boxes_follow_the_drawn_window():
    """The moved boxes against NumPy on the window ``.sample`` returns: edges shifted and
    scaled, clamped to the output (pixel-edge XYXY)."""
    images = _images()
    _, boxes, _ = _targets()
    op = augjax.ops.random_resized_crop.bind(size=(24, 20))
    keys = _keys(len(images), 7)
    out = op(images, key=keys, boxes=boxes)
    windows = np.asarray(op.sample(images, key=keys)["box"])
    for i, (t, l, h, w) in enumerate(windows):
        sx, sy = 20 / w, 24 / h
        want = np.clip((boxes[i] - [l, t, l, t]) * [sx, sy, sx, sy], 0, [20, 24, 20, 24])
        np.testing.assert_allclose(np.asarray(out["boxes"])[i, :len(boxes[i])], want, atol=1e-4)


# -- compiles --------------------------------------------------------------------------------


def _backend_compiles() -> list[str]:
    events: list[str] = []

    def listen(event, duration, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    return events


@pytest.mark.slow
def test_a_second_list_of_other_sizes_compiles_nothing(monkeypatch):
    monkeypatch.setenv("AUGJAX_PROGRAM_CACHE", "0")
    chain = augjax.compose([augjax.ops.random_resized_crop.bind(size=28),
                            augjax.ops.flip.bind(p=0.5)])
    first = [(40, 56), (57, 33), (48, 48), (60, 41)]
    second = [(33, 61), (50, 50), (62, 39), (45, 58)]  # other sizes; canvas bucket 64 both
    compiles = _backend_compiles()
    masks, boxes, points = _targets(first)
    jax.block_until_ready(chain(_images(first), key=_keys(4), masks=masks, boxes=boxes,
                                keypoints=points))
    jax.block_until_ready(chain(_images(first), key=_keys(4)))
    warm = len(compiles)
    masks, boxes, points = _targets(second, seed=2)
    for seed in (1, 2):
        out = chain(_images(second, seed=seed), key=_keys(4, seed), masks=masks, boxes=boxes,
                    keypoints=points)
        jax.block_until_ready(out)
        jax.block_until_ready(chain(_images(second, seed=seed), key=_keys(4, seed)))
    assert len(compiles) == warm, len(compiles) - warm
    # the counter sees compiles: a new output size compiles
    jax.block_until_ready(augjax.ops.random_resized_crop(_images(second), size=27,
                                                         key=_keys(4)))
    assert len(compiles) > warm


@pytest.mark.parametrize("n,want", [(1, 64), (64, 64), (65, 96), (96, 96), (97, 128),
                                    (129, 192), (193, 256), (500, 512), (640, 768)])
def test_canvas_buckets(n, want):
    assert bucket(n) == want


def test_buckets_hold_the_region_within_one_and_a_half():
    sizes = np.arange(64, 5000)
    b = np.array([bucket(int(s)) for s in sizes])
    assert (b >= sizes).all() and (b <= 1.5 * sizes).all() and (np.diff(b) >= 0).all()
    assert len(set(b[(sizes > 256) & (sizes <= 1024)])) == 4  # two per octave


# -- errors ----------------------------------------------------------------------------------


def test_a_target_list_of_another_length_names_the_argument():
    images = _images()
    masks, boxes, points = _targets()
    op = augjax.ops.random_resized_crop.bind(size=16)
    with pytest.raises(InputError, match=r"random_resized_crop: argument 'boxes' expects one "
                                         r"entry per image \(7.*got 6") as err:
        op(images, key=_keys(7), boxes=boxes[:6])
    assert err.value.op == "random_resized_crop" and err.value.argument == "boxes"
    with pytest.raises(InputError, match=r"argument 'masks' expects one entry per image"):
        op(images, key=_keys(7), masks=masks[1:])


def test_a_mask_of_another_size_than_its_image_names_it():
    images = _images()
    masks, _, _ = _targets()
    masks[2] = masks[2][:, :-1]
    with pytest.raises(InputError, match=r"random_resized_crop: argument 'masks' expects "
                                         r"masks\[2\] of shape \(48, 48\).*got \(48, 47\)") as err:
        augjax.ops.random_resized_crop(images, size=16, key=_keys(7), masks=masks)
    assert err.value.argument == "masks"


def test_other_bad_targets_are_refused():
    images = _images()
    masks, boxes, _ = _targets()
    op = augjax.ops.random_resized_crop.bind(size=16)
    with pytest.raises(InputError, match=r"'boxes' expects one \(M_i, 4\) XYXY array per image"):
        op(images, key=_keys(7), boxes=[b[:, :3] for b in boxes])
    with pytest.raises(InputError, match=r"'boxes_format' expects pixel XYXY"):
        op(images, key=_keys(7), boxes=boxes, boxes_format="xywh")
    with pytest.raises(InputError, match=r"'masks' expects a list of 7"):
        op(images, key=_keys(7), masks=np.zeros((7, 9, 9), np.int32))
    with pytest.raises(InputError, match=r"'masks' expects integer or bool ids"):
        op(images, key=_keys(7), masks=[m.astype(np.float32) for m in masks])
    with pytest.raises(InputError, match=r"'boxes_valid' expects boxes= as well"):
        op(images, key=_keys(7), boxes_valid=np.ones((7, 1), bool))


def _boxes_on_canvas(seed: int, n: int, side: int, out: tuple[int, int], low: int, dtype: str):
    """``n`` random boxes (sides ``low`` to ``side``) at the top left of random canvases of
    ``dtype``, each resized to ``out``: ``(canvas, box, size, anchor, heights, taps)``."""
    from augjax.kernels.window import taps_needed

    rng = np.random.default_rng(seed)
    canvas = rng.integers(0, 256, (n, side, side, 3), dtype=np.uint8)
    canvas = canvas if dtype == "uint8" else canvas.astype(np.float32) / 255.0
    heights, widths = rng.integers(low, side + 1, n), rng.integers(low, side + 1, n)
    box = np.stack([np.zeros(n), np.zeros(n), heights, widths], 1).astype(np.int32)
    size = np.tile(np.array(out, np.int32), (n, 1))
    anchor = np.zeros((n, 2), np.int32)
    taps = tuple(taps_needed(side / o, "bilinear", True) for o in out)
    return canvas, box, size, anchor, heights, taps


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_the_cpu_read_by_image_gives_every_taps_bits(dtype):
    """On the CPU the list's read runs image by image (each sample's branch reads only its taps
    that weigh something and the canvas rows they reach): the bits of every tap over every row
    for every sample under ``vmap`` (the read off the CPU), boxes shrunk and enlarged."""
    from augjax._runtime.ragged.read import _read_by_image
    from augjax.kernels.window import read_window_taps

    side, out = 96, (40, 48)
    canvas, box, size, anchor, heights, taps = _boxes_on_canvas(6, 16, side, out, 8, dtype)
    fill = np.float32(0.0)
    every = jax.jit(jax.vmap(lambda c, b, s, a: read_window_taps(
        c, b, s, a, out, fill, "bilinear", True, taps)))(canvas, box, size, anchor)
    got = jax.jit(lambda *a: _read_by_image(*a, fill, out, "bilinear", True, taps))(
        canvas, box, size, anchor)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(every))
    assert (heights < side // 4).any() and (heights > 3 * side // 4).any()
    # As a list's call compiles it (integer images: with BY_IMAGE_OPTIONS), the same bits.
    from augjax._runtime.ragged.read import _read_program

    program = _read_program(out, False, "bilinear", True, taps, dtype == "uint8")
    np.testing.assert_array_equal(np.asarray(program(canvas, box, size, anchor, fill)),
                                  np.asarray(every))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU's image-by-image read")
def test_the_cpu_read_by_image_keeps_no_image_between_its_passes():
    """Compiled as a list's call compiles it (uint8, :data:`BY_IMAGE_OPTIONS`), each branch of
    the image-by-image read writes its output from one loop fusion: the width pass is computed
    inside the height pass's loop (no float image in memory between the passes; keeping one
    there read 15-25% slower, its width pass then indexing every element anew), and nothing
    else in a branch is a float array (at most a copy of the canvas rows it reads)."""
    import re

    from augjax._runtime.ragged.read import _read_program
    from augjax.kernels.window import tap_sizes

    side, out = 96, (40, 48)
    canvas, box, size, anchor, _, taps = _boxes_on_canvas(6, 4, side, out, 8, "uint8")
    program = _read_program(out, False, "bilinear", True, taps, True)
    text = program.lower(canvas, box, size, anchor, np.float32(0.0)).compile().as_text()
    result = f"u8[{out[0]},{out[1]},3]"
    branches = [c for c in re.split(r"\n(?=%|ENTRY)", text)
                if c.split("\n")[0].endswith(f"-> ({result}) {{")]
    assert len(branches) == len(tap_sizes(max(taps))) >= 4  # one a tap count
    for branch in branches:
        fusions = re.findall(r"= (\w+)\[([\d,]*)\]\{[\d,]*\} fusion\(", branch)
        assert [f for f in fusions if f == ("u8", result[3:-1])] == [("u8", result[3:-1])]
        assert all(kind == "u8" for kind, _ in fusions), fusions


def test_the_read_branches_on_few_tap_counts():
    """The image-by-image read compiles one branch a tap count (``tap_sizes``): a read of ``k``
    taps takes the first count at least ``k``, at most 1.5x ``k`` (from 4 on), and the counts
    grow with the log of the widest read, not with it (a scale jitter from 0.1x reads ~100 taps:
    every other count made 50 branches of it, 200 with the row spans, ~110 CPU-s to compile)."""
    import math

    from augjax.kernels.window import tap_sizes

    for widest in range(1, 400):
        sizes = tap_sizes(widest)
        assert sizes == sorted(set(sizes)) and sizes[-1] == widest
        assert len(sizes) <= 2 * math.log2(max(widest, 2)) + 1, (widest, sizes)
        for k in range(1, widest + 1):
            chosen = next(s for s in sizes if s >= k)
            assert chosen <= max(3, math.ceil(1.5 * k)), (widest, k, chosen)


def _moved_and_given_reads(dtype: str):
    """Reads of 12 boxes (enlarged and shrunk) through their taps as given and as moved by
    ``taps_from_first``: ``(moved read, given read, moved taps, given taps, enlarged)``."""
    from augjax.kernels.window import read_by_taps, read_taps, taps_from_first

    side, out = 80, (36, 44)
    canvas, box, size, anchor, _, taps = _boxes_on_canvas(11, 12, side, out, 6, dtype)

    def read(c, b, s, a, moved):
        t = read_taps(c.shape[:2], b, s, a, out, "bilinear", True, taps)
        if moved:
            t = (*taps_from_first(t[0], t[1]), *taps_from_first(t[2], t[3]))
        return read_by_taps(c, t, s, a, out, np.float32(0.0), "bilinear"), t

    given, t0 = jax.jit(jax.vmap(lambda *a: read(*a, False)))(canvas, box, size, anchor)
    moved, t1 = jax.jit(jax.vmap(lambda *a: read(*a, True)))(canvas, box, size, anchor)
    return moved, given, t1, t0, (box[:, 2] < out[0]) & (box[:, 3] < out[1])


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_taps_moved_to_their_first_weight_keep_their_terms(dtype):
    """``taps_from_first`` keeps each row's nonzero taps (index and weight) in order from
    column 0, the freed columns weighing 0 and reading the row's first index: an
    enlargement's taps fit in 2 columns (3 before)."""
    moved, given, t1, t0, enlarged = _moved_and_given_reads(dtype)
    for (i0, w0), (i1, w1) in ((t0[:2], t1[:2]), (t0[2:], t1[2:])):
        i0, w0, i1, w1 = (np.asarray(v) for v in (i0, w0, i1, w1))
        for r in np.ndindex(w0.shape[:-1]):
            k = int((w0[r] != 0).sum())
            np.testing.assert_array_equal(w1[r][:k], w0[r][w0[r] != 0])
            np.testing.assert_array_equal(i1[r][:k], i0[r][w0[r] != 0])
            assert (w1[r][k:] == 0).all() and (i1[r][k:] == i1[r][0]).all()
    assert enlarged.any() and (~enlarged).any()
    assert (np.asarray(t1[1])[enlarged][..., 2:] == 0).all()
    assert (np.asarray(t1[3])[enlarged][..., 2:] == 0).all()
    assert (np.asarray(t0[1])[enlarged][..., 2] != 0).any()  # given: a third column used
    diff = np.abs(np.asarray(moved, np.float64) - np.asarray(given, np.float64))
    assert diff.max() <= (1 if dtype == "uint8" else 1e-6)


@pytest.mark.fast_tier("float32")
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_taps_moved_to_their_first_weight_read_the_same_bits(dtype):
    """Compiled with XLA's default options (as users compile), a read through the moved taps
    has the bits of the read through the given ones: the sums start from a runtime zero, so
    a row's leading zero taps change nothing."""
    moved, given = _moved_and_given_reads(dtype)[:2]
    np.testing.assert_array_equal(np.asarray(moved), np.asarray(given))
