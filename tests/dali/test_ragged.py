"""Decoded JPEGs of different sizes straight into augjax ops in a DALI CPU pipeline.

The JPEGs (7 sizes, made from the bundled photos at test time) go through ``fn.decoders.image``
(a ragged batch) into ``random_resized_crop``, ``random_crop`` (with padding), ``center_crop``,
timm's eval transform (``resize(256)`` + ``center_crop(224)``, scaled down) and a chain that starts
with a crop. Checked: shapes and dtypes, the windows against the array replay with
``keys_from_seeds``, and the pixels against torchvision on those windows (DALI resamples:
tolerance below), and the errors for ops that cannot take images of different sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    abs_diff,
    hwc_to_torch,
    run_on_two_cpu_devices,
    torch_to_hwc,
    write_jpegs,
)

import augjax
from augjax.errors import InputError

pytest.importorskip("nvidia.dali.plugin.jax")
torch = pytest.importorskip("torch")
F = pytest.importorskip("torchvision.transforms.v2.functional")

SIZES = [(75, 100), (100, 75), (67, 100), (96, 128), (102, 102), (60, 90), (128, 96),
         (41, 120)]
B = len(SIZES)
OUT = 48
#: DALI's fn.resize vs torchvision on the same window (antialiased triangle filter both; DALI
#: rounds once in float, ATen between its two passes; at the box's border DALI's wide
#: downscaling filter reads the edge pixel again where ATen renormalises): max, 99.9th
#: percentile and mean |diff| in uint8 levels (README "Different image sizes").
RESAMPLE_MAX, RESAMPLE_P999, RESAMPLE_MEAN = 16, 3, 0.5


def _assert_resampled(d):
    assert (d.max() <= RESAMPLE_MAX and np.percentile(d, 99.9) <= RESAMPLE_P999
            and d.mean() <= RESAMPLE_MEAN), (d.max(), np.percentile(d, 99.9), d.mean())
    assert d[:, 2:-2, 2:-2].max() <= 1  # away from the border: rounding only


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    return write_jpegs(tmp_path_factory.mktemp("ragged_jpegs"), SIZES)


def _steps(*ops):
    return tuple(op for op in ops)


RRC = augjax.ops.random_resized_crop.bind(size=OUT)
CROP = augjax.ops.random_crop.bind(size=(80, 90), padding=6, pad_if_needed=True)
CENTER = augjax.ops.center_crop.bind(size=(90, 110))
EVAL = augjax.compose([augjax.ops.resize.bind(size=56), augjax.ops.center_crop.bind(size=OUT)])
CHAIN = augjax.compose([RRC, augjax.ops.flip.bind(p=0.5),
                        augjax.ops.brightness.bind(factor=(0.7, 1.3))])


@pytest.fixture(scope="module")
def outputs(jpeg_root):
    from nvidia.dali import fn, pipeline_def, types

    from augjax.dali._ragged import plan_function

    @pipeline_def(batch_size=B, num_threads=2, device_id=None, seed=3)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root, random_shuffle=True, seed=1)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        seeds = augjax.dali.sample_seeds(device="cpu")
        shapes = images.shape(dtype=types.INT32, device="cpu")
        box_start, box_shape, _ = plan_function((RRC,), 0, True)(shapes, seeds)
        return (images, seeds, box_start, box_shape, RRC(images, seeds=seeds),
                CROP(images, seeds=seeds), CENTER(images), EVAL(images),
                CHAIN(images, seeds=seeds))

    p = pipe()
    p.build()
    runs = []
    for _ in range(2):
        outs = p.run()
        images = [np.array(outs[0][i]) for i in range(B)]
        rest = [np.array(o.as_tensor()) for o in outs[1:]]
        runs.append((images, *rest))
    return runs


_tv, _np, _diff = hwc_to_torch, torch_to_hwc, abs_diff


def test_decoded_batch_is_ragged_and_outputs_are_uniform(outputs):
    for images, seeds, _, _, rrc, crop, center, ev, chain in outputs:
        assert len({im.shape for im in images}) >= 5
        assert rrc.shape == (B, OUT, OUT, 3) and rrc.dtype == np.uint8
        assert crop.shape == (B, 80, 90, 3) and center.shape == (B, 90, 110, 3)
        assert ev.shape == (B, OUT, OUT, 3) and chain.shape == (B, OUT, OUT, 3)
        assert all(o.dtype == np.uint8 for o in (crop, center, ev, chain))


def test_windows_equal_the_array_replay(outputs):
    for images, seeds, box_start, box_shape, *_ in outputs:
        keys = augjax.keys_from_seeds(seeds)
        boxes = np.asarray(augjax.ops.random_resized_crop.sample(images, size=OUT,
                                                                 key=keys)["box"])
        np.testing.assert_array_equal(np.concatenate([box_start, box_shape], 1), boxes)


def test_random_resized_crop_pixels_vs_torchvision(outputs):
    diffs = []
    for images, seeds, box_start, box_shape, rrc, *_ in outputs:
        for i, img in enumerate(images):
            (t, l), (h, w) = box_start[i], box_shape[i]
            ref = _np(F.resized_crop(_tv(img), int(t), int(l), int(h), int(w), [OUT, OUT],
                                     antialias=True))
            diffs.append(_diff(rrc[i], ref))
    _assert_resampled(np.stack(diffs))


def test_crops_are_exact_replays_of_the_array_path(outputs):
    for images, seeds, _, _, _, crop, center, *_ in outputs:
        keys = augjax.keys_from_seeds(seeds)
        np.testing.assert_array_equal(crop, np.asarray(CROP(images, key=keys)))
        np.testing.assert_array_equal(center, np.asarray(CENTER(images)))
        for i, img in enumerate(images):
            np.testing.assert_array_equal(center[i], _np(F.center_crop(_tv(img), [90, 110])))


def test_timm_eval_transform_vs_torchvision(outputs):
    diffs = []
    for images, *_, ev, _ in outputs:
        for i, img in enumerate(images):
            ref = _np(F.center_crop(F.resize(_tv(img), [56], antialias=True), [OUT]))
            diffs.append(_diff(ev[i], ref))
    _assert_resampled(np.stack(diffs))


@pytest.mark.slow
def test_chain_after_a_ragged_crop_replays_on_arrays(outputs):
    for images, seeds, *_, chain in outputs:
        keys = augjax.keys_from_seeds(seeds)
        want = np.asarray(CHAIN(images, key=keys))
        d = _diff(chain, want)
        # the same windows, flips and factors; only the resampling differs (scaled by <= 1.3)
        assert d.max() <= 1.3 * RESAMPLE_MAX + 1 and d.mean() <= RESAMPLE_MEAN, (d.max(),
                                                                                 d.mean())


def test_an_op_that_cannot_take_ragged_images_says_which_can(jpeg_root):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=B, num_threads=2, device_id=None, seed=3)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root)
        return augjax.ops.flip(fn.decoders.image(jpegs, output_type=types.RGB))

    p = pipe()
    p.build()
    with pytest.raises(RuntimeError) as info:
        p.run()
    cause = augjax.dali.error_cause(info.value)
    assert "images of different sizes" in cause and "random_resized_crop" in cause
    assert "augjax.ops.flip(" in cause  # the call that got them


def test_resize_to_a_shorter_side_then_a_non_crop_is_refused_when_defined(jpeg_root):
    from nvidia.dali import fn, pipeline_def, types

    chain = augjax.compose([augjax.ops.resize.bind(size=32), augjax.ops.flip.bind()])

    @pipeline_def(batch_size=B, num_threads=2, device_id=None)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root)
        return chain(fn.decoders.image(jpegs, output_type=types.RGB))

    with pytest.raises(InputError, match=r"resize: .*center_crop or random_crop"):
        pipe()


@pytest.mark.slow
def test_docs_page_runs():
    import pathlib
    import re

    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "ragged.md")
    code = re.search(r"```python\n(.*?)```", page.read_text(), re.DOTALL).group(1)
    scope: dict = {}
    exec(compile(code, "docs/guide/ragged.md", "exec"), scope)  # noqa: S102
    decoded, train, evaluation = scope["decoded"], scope["train"], scope["evaluation"]
    assert len({im.shape for im in decoded}) >= 5
    for out in (train, evaluation, scope["replay"]):
        assert np.asarray(out.as_tensor() if hasattr(out, "as_tensor") else out).shape == (
            8, 224, 224, 3)
    boxes = np.asarray(scope["boxes"])
    assert all(b[0] + b[2] <= im.shape[0] and b[1] + b[3] <= im.shape[1]
               for b, im in zip(boxes, decoded))


def _targets_batch(rng):
    """Ragged images whose red channel is a random mask of ids, the masks, one box per image
    around a bright block (and an empty padding slot), the block's corner pixel as a keypoint."""
    images, masks, boxes, points = [], [], [], []
    for h, w in SIZES:
        m = rng.integers(0, 7, (h, w, 1)).astype(np.uint8)
        im = np.concatenate([m * 30, np.zeros((h, w, 2), np.uint8)], -1)
        y0, x0, y1, x1 = h // 4, w // 3, h // 4 + h // 3, w // 3 + w // 3
        im[y0:y1, x0:x1, 1] = 255
        images.append(im)
        masks.append(m)
        boxes.append(np.array([[x0, y0, x1, y1], [0, 0, 0, 0]], np.float32))
        points.append(np.array([[x0, y0]], np.float32))
    return images, masks, boxes, points


@pytest.fixture(scope="module")
def target_outputs():
    from nvidia.dali import fn, pipeline_def

    data = _targets_batch(np.random.default_rng(0))
    rrc = augjax.ops.random_resized_crop.bind(size=OUT, scale=(0.2, 1.0), interpolation="nearest")
    chain = augjax.compose([rrc, augjax.ops.flip.bind(p=0.5)])
    crop = augjax.ops.random_crop.bind(size=(70, 90), padding=5, pad_if_needed=True)

    def source(batch):  # DALI passes an iteration number to a callable that takes one
        return lambda: batch

    @pipeline_def(batch_size=B, num_threads=2, device_id=None, seed=11)
    def pipe():
        images, masks, boxes, points = (
            fn.external_source(source=source(data[k]), batch=True,
                               layout="HWC" if k < 2 else "") for k in range(4))
        counts = fn.external_source(source=lambda: [np.array(1, np.int32)] * B, batch=True)
        seeds = augjax.dali.sample_seeds(device="cpu")
        alone = rrc(images, seeds=seeds, masks=masks, boxes=boxes, boxes_valid=counts,
                    keypoints=points, mask_fill=9)
        chained = chain(images, seeds=seeds, masks=masks, boxes=boxes, boxes_valid=counts)
        cropped = crop(images, seeds=seeds, masks=masks, boxes=boxes, boxes_valid=counts,
                       mask_fill=9)
        return (seeds, alone["images"], alone["masks"], alone["boxes"], alone["boxes_valid"],
                alone["keypoints"], alone["keypoints_valid"], chained["images"],
                chained["masks"], chained["boxes"], chained["boxes_valid"], cropped["images"],
                cropped["masks"], cropped["boxes"], cropped["boxes_valid"])

    p = pipe()
    p.build()
    return data, [np.array(o.as_tensor()) for o in p.run()]


@pytest.mark.slow
def test_targets_follow_a_ragged_crop(target_outputs):
    (images, _, boxes, points), outs = target_outputs
    seeds, im, m, b, bv, kp, kv, *_ = outs
    windows = np.asarray(augjax.ops.random_resized_crop.sample(
        images, size=OUT, scale=(0.2, 1.0), key=augjax.keys_from_seeds(seeds))["box"])
    assert m.shape == (B, OUT, OUT, 1) and m.dtype == np.uint8
    # masks: read as the image (nearest, the same window): the image's red channel is the mask
    np.testing.assert_array_equal(m[..., 0] * 30, im[..., 0])
    for i, (t, l, h, w) in enumerate(windows):
        sx, sy = OUT / w, OUT / h
        # boxes: edges moved by the window (reference from the drawn window), clamped
        want = np.clip((boxes[i][0] - [l, t, l, t]) * [sx, sy, sx, sy], 0, OUT)
        np.testing.assert_allclose(b[i, 0], want, atol=1e-3)
        sides = want[2:] - want[:2]
        assert bv[i, 0] == bool(np.all(sides >= 1)) and not bv[i, 1]
        # keypoints: pixel centres moved by the window, flagged once outside
        want_p = (points[i][0] + 0.5 - [l, t]) * [sx, sy] - 0.5
        np.testing.assert_allclose(kp[i, 0], want_p, atol=1e-3)
        assert kv[i, 0] == bool(np.all((want_p >= 0) & (want_p < OUT)))
        # the box's block (green) lies inside the moved box where it is in view
        ys, xs = np.nonzero(im[i, ..., 1] > 128)
        if len(xs) and bv[i, 0]:
            assert xs.min() >= b[i, 0, 0] - 1 and xs.max() + 1 <= b[i, 0, 2] + 1
            assert ys.min() >= b[i, 0, 1] - 1 and ys.max() + 1 <= b[i, 0, 3] + 1


def test_targets_follow_a_chain_that_starts_with_a_ragged_crop(target_outputs):
    _, outs = target_outputs
    _, im, _, b, bv, _, _, ci, cm, cb, cbv, *_ = outs
    np.testing.assert_array_equal(cm[..., 0] * 30, ci[..., 0])  # still read as the image
    flipped = np.array([not np.array_equal(ci[i], im[i]) for i in range(B)])
    assert flipped.any() and not flipped.all()
    for i in range(B):
        want = b[i, 0] if not flipped[i] else [OUT - b[i, 0, 2], b[i, 0, 1], OUT - b[i, 0, 0],
                                               b[i, 0, 3]]
        np.testing.assert_allclose(cb[i, 0], want, atol=1e-4)
        np.testing.assert_array_equal(cbv[i], bv[i])



@pytest.mark.slow
def test_targets_replay_on_a_list_of_arrays(target_outputs):
    """The same images, targets and seeds as a list of arrays: the windows, boxes and
    keypoints equal the pipeline's (one plan, one matrix code); masks read by copies (a random
    crop with padding) equal them pixel for pixel. Resampled masks differ by the samplers
    (DALI's nearest samples centres, the arrays ATen's legacy nearest), so there each mask is
    checked against its own image's red channel, as the pipeline's is."""
    (images, masks, boxes, points), outs = target_outputs
    seeds, im, m, b, bv, kp, kv, ci, cm, cb, cbv, pi, pm, pb, pbv = outs
    keys = augjax.keys_from_seeds(seeds)
    rrc = augjax.ops.random_resized_crop.bind(size=OUT, scale=(0.2, 1.0), interpolation="nearest")
    alone = rrc(images, key=keys, masks=masks, boxes=boxes, boxes_valid=[np.array([True, False])] * B,
                keypoints=points, mask_fill=9)
    np.testing.assert_array_equal(np.asarray(alone["boxes"])[:, :2], b)
    np.testing.assert_array_equal(np.asarray(alone["boxes_valid"])[:, :2], bv)
    np.testing.assert_array_equal(np.asarray(alone["keypoints"])[:, :1], kp)
    np.testing.assert_array_equal(np.asarray(alone["keypoints_valid"])[:, :1], kv)
    np.testing.assert_array_equal(np.asarray(alone["masks"])[..., 0] * 30,
                                  np.asarray(alone["images"])[..., 0])
    chain = augjax.compose([rrc, augjax.ops.flip.bind(p=0.5)])
    chained = chain(images, key=keys, masks=masks, boxes=boxes,
                    boxes_valid=[np.array([True, False])] * B)
    np.testing.assert_array_equal(np.asarray(chained["boxes"])[:, :2], cb)
    np.testing.assert_array_equal(np.asarray(chained["boxes_valid"])[:, :2], cbv)
    crop = augjax.ops.random_crop.bind(size=(70, 90), padding=5, pad_if_needed=True)
    cropped = crop(images, key=keys, masks=masks, boxes=boxes,
                   boxes_valid=[np.array([True, False])] * B, mask_fill=9)
    np.testing.assert_array_equal(np.asarray(cropped["images"]), pi)
    np.testing.assert_array_equal(np.asarray(cropped["masks"]), pm)
    np.testing.assert_array_equal(np.asarray(cropped["boxes"])[:, :2], pb)
    np.testing.assert_array_equal(np.asarray(cropped["boxes_valid"])[:, :2], pbv)


def test_the_cpu_plan_returns_cpu_arrays_whatever_the_default_device(tmp_path):
    """A plan output that depends on no input (``resize``'s fixed size) leaves a jitted program
    on JAX's default device, a GPU on a GPU machine, where DALI's CPU operator refuses it;
    ``on_cpu`` runs it with the CPU as the default device. Here the default is a second CPU
    device."""
    run_on_two_cpu_devices(
        tmp_path,
        "import jax, jax.numpy as jnp\n"
        "from augjax.dali._ragged import on_cpu\n"
        "cpu0, cpu1 = jax.devices('cpu')\n"
        "program = jax.jit(lambda shapes: (jnp.full((shapes.shape[0], 2), 48.0),))\n"
        "with jax.default_device(cpu1):\n"
        "    raw = program(jax.device_put(jnp.ones((4, 3), jnp.int32), cpu0))\n"
        "    outs = on_cpu(program, 'resize')(jnp.ones((4, 3), jnp.int32))\n"
        "assert raw[0].devices() == {cpu1}, raw[0].devices()  # the mechanism\n"
        "assert all(o.devices() == {cpu0} for o in outs), [o.devices() for o in outs]\n"
        "print('ok')\n")


def _gpu_to_cpu_steps(node):
    """The operators of the graph ending at ``node`` that take a GPU input to a CPU output
    (what DALI's legacy executor refuses)."""
    seen, found, todo = set(), [], [node]
    while todo:
        op = todo.pop().source
        if op is None or id(op) in seen:
            continue
        seen.add(id(op))
        ins = list(op.inputs)
        if any(o.device == "cpu" for o in op.outputs) and any(i.device == "gpu" for i in ins):
            found.append(op)
        todo.extend(ins)
    return found


@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic", "legacy"])
def test_gpu_images_read_their_sizes_on_the_cpu_only_under_the_dynamic_executor(dynamic):
    """Defining the graph needs no GPU: under the dynamic executor a crop chain on GPU images
    reads their sizes on the CPU (images of any sizes); under the legacy one it takes no step
    back to the CPU (one ``jax_function`` on the GPU; images of one size per batch)."""
    from nvidia.dali import Pipeline, fn

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=0, exec_dynamic=dynamic)
    with pipe:
        x = fn.external_source(name="x", layout="HWC").gpu()
        out = CHAIN(x)
    assert out.device == "gpu"
    assert bool(_gpu_to_cpu_steps(out)) == dynamic


def test_the_visible_roi_resamples_exactly_the_rows_the_window_sees():
    """``visible_roi``: a box of ``length`` resized to ``size``, the window of ``out`` at
    ``anchor`` (inside, past either end, centred with padding, seeing nothing): the ROI's rows
    resized and sliced from ``start`` with padding are the window's rows of the whole resize,
    and the ROI is those rows' source span (``length / size`` per row)."""
    from augjax.dali._ragged import visible_roi

    pad = -1
    cases = [(480, 600, 100, 320), (480, 600, 400, 320), (480, 200, 0, 320), (300, 250, -35, 320),
             (640, 320, 0, 320), (480, 600, 700, 320), (480, 600, -400, 320), (7, 1, 0, 4)]
    for length, size, anchor, out in cases:
        r0, r1, vis, start = (np.asarray(v)[0, 0] for v in visible_roi(
            np.array([[length, length]], np.int32), np.array([[size, size]], np.int32),
            np.array([[anchor, anchor]], np.int32), (out, out)))
        want = [a if 0 <= a < size else pad for a in range(anchor, anchor + out)]
        lo = int(round(float(r0) * size / length))
        rows = list(range(lo, lo + int(vis)))
        got = [rows[start + i] if 0 <= start + i < len(rows) else pad for i in range(out)]
        assert got == want, (length, size, anchor, out)
        assert int(vis) >= 1 and lo + int(vis) <= size
        np.testing.assert_allclose([r0, r1], np.array([lo, lo + int(vis)]) * length / size,
                                   rtol=1e-6)


def test_bicubic_crop_in_dali_is_dalis_cubic_near_torchvisions_bicubic(jpeg_root):
    """A ragged bicubic crop in DALI resamples with DALI's cubic (the ragged path's own
    pixels, as bilinear is DALI's linear): near torchvision's antialiased bicubic on the same
    windows (measured: max 6 levels, 99.9th percentile 2, mean 0.18, 2 inside the border).
    It was resampled linear silently."""
    from nvidia.dali import fn, pipeline_def, types
    from torchvision.transforms import InterpolationMode

    from augjax.dali._ragged import plan_function

    cubic = augjax.ops.random_resized_crop.bind(size=OUT, interpolation="bicubic")

    @pipeline_def(batch_size=B, num_threads=2, device_id=None, seed=3)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root, random_shuffle=True, seed=1)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        seeds = augjax.dali.sample_seeds(device="cpu")
        shapes = images.shape(dtype=types.INT32, device="cpu")
        box_start, box_shape, _ = plan_function((cubic,), 0, True)(shapes, seeds)
        return images, box_start, box_shape, cubic(images, seeds=seeds)

    p = pipe()
    p.build()
    outs = p.run()
    images = [np.array(outs[0][i]) for i in range(B)]
    box_start, box_shape, out = (np.array(o.as_tensor()) for o in outs[1:])
    diffs = []
    for i, img in enumerate(images):
        (t, l), (h, w) = box_start[i], box_shape[i]
        ref = _np(F.resized_crop(_tv(img), int(t), int(l), int(h), int(w), [OUT, OUT],
                                 antialias=True, interpolation=InterpolationMode.BICUBIC))
        diffs.append(_diff(out[i], ref))
    d = np.stack(diffs)
    assert d.max() <= 8 and np.percentile(d, 99.9) <= 3 and d.mean() <= 0.3, (
        d.max(), np.percentile(d, 99.9), d.mean())
    assert d[:, 2:-2, 2:-2].max() <= 2
