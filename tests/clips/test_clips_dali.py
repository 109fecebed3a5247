"""Clips in a DALI CPU pipeline: sequences (samples (T, H, W, C), layout "FHWC") through one
jax_function, equal to the array path with the pipeline's seeds."""

from __future__ import annotations

import numpy as np
import pytest

import augjax
from augjax import ops

pytest.importorskip("nvidia.dali", reason="DALI is not installed")

N, T, H, W = 3, 4, 20, 16


def _pipe(batch, body, labels=None):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=N, num_threads=1, device_id=None, seed=2)
    def pipe():
        seqs = fn.external_source(source=lambda: list(batch), batch=True, layout="FHWC")
        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32, seed=7)
        if labels is None:
            return body(seqs, seeds), seeds
        lab = fn.external_source(source=lambda: list(labels), batch=True)
        out, soft = body(seqs, seeds, lab)
        return out, soft, seeds

    p = pipe()
    p.build()
    return p


@pytest.mark.slow
@pytest.mark.parametrize("per_frame", [False, True])
def test_dali_sequences_equal_arrays(per_frame):
    batch = np.random.default_rng(0).integers(0, 256, (N, T, H, W, 3), dtype=np.uint8)
    ra = augjax.rand_augment(n=2, m=9)
    p = _pipe(batch, lambda s, seeds: ra(s, seeds=seeds, layout="FHWC", per_frame=per_frame))
    for _ in range(2):
        out, seeds = p.run()
        assert out.layout() == "FHWC"
        out, seeds = np.array(out.as_tensor()), np.array(seeds.as_tensor())
        ref = ra(augjax.Clips(batch), key=augjax.keys_from_seeds(seeds), per_frame=per_frame)
        np.testing.assert_array_equal(out, np.asarray(ref))
    if not per_frame:  # one draw per clip: identical frames stay identical
        same = np.repeat(batch[:, :1], T, axis=1)
        out, _ = _pipe(same, lambda s, seeds: ra(s, seeds=seeds, layout="FHWC")).run()
        out = np.array(out.as_tensor())
        for t in range(1, T):
            np.testing.assert_array_equal(out[:, t], out[:, 0])


def test_dali_sequences_mixup_whole_clips():
    batch = np.random.default_rng(1).integers(0, 256, (N, T, H, W, 3), dtype=np.uint8)
    labels = np.arange(N, dtype=np.int32).reshape(N, 1)
    mix = ops.mixup.bind(alpha=1.0, num_classes=4)
    p = _pipe(batch, lambda s, seeds, lab: mix(s, lab, seeds=seeds, layout="FHWC"), labels)
    out, soft, seeds = (np.array(o.as_tensor()) for o in p.run())
    ref, ref_soft = mix(augjax.Clips(batch), labels, key=augjax.keys_from_seeds(seeds))
    np.testing.assert_array_equal(out, np.asarray(ref))
    np.testing.assert_allclose(soft, np.asarray(ref_soft))


def _targets_pipe(batch, step, per_frame, **targets):
    """A CPU pipeline: sequences with per-frame ``targets`` (boxes (T, M, 4), masks
    (T, H, W[, 1]), keypoints (T, K, 2)) through ``step``; returns the seeds and every output
    in the order of their names."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=N, num_threads=1, device_id=None, seed=2)
    def pipe():
        def source(x, layout=None):
            return fn.external_source(source=lambda: list(x), batch=True, layout=layout)

        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32, seed=7)
        out = step(source(batch, "FHWC"), seeds=seeds, layout="FHWC", per_frame=per_frame,
                   **{k: source(v) for k, v in targets.items()})
        names = sorted(out)
        return (seeds, *(out[k] for k in names))

    p = pipe()
    p.build()
    seeds, *outs = (np.array(o.as_tensor()) for o in p.run())
    return seeds, outs


@pytest.mark.fast_tier("False")
@pytest.mark.parametrize("per_frame", [False, True])
def test_dali_sequences_with_targets_equal_arrays(per_frame):
    """Boxes, masks and keypoints per frame on DALI sequences follow the clip's draw (one per
    clip, or per frame with per_frame=True), as on arrays, bitwise; with T identical frames and
    targets, one draw per clip gives T identical frames of every output."""
    rng = np.random.default_rng(4)
    step = augjax.compose(ops.flip.bind(p=0.5), ops.affine.bind(degrees=20, translate=(0.1, 0.1)))
    batch = rng.integers(0, 256, (N, T, H, W, 3), dtype=np.uint8)
    corner = rng.uniform(0, 8, (N, T, 2, 2)).astype(np.float32)
    boxes = np.concatenate([corner, corner + 5], -1)
    masks = rng.integers(0, 3, (N, T, H, W), dtype=np.uint8)
    points = rng.uniform(0, 15, (N, T, 5, 2)).astype(np.float32)
    if not per_frame:  # identical frames: every frame's outputs must be identical
        batch, boxes, masks, points = (np.repeat(a[:, :1], T, axis=1)
                                       for a in (batch, boxes, masks, points))
    seeds, outs = _targets_pipe(batch, step, per_frame, boxes=boxes, masks=masks,
                                keypoints=points)
    ref = step(augjax.Clips(batch), key=augjax.keys_from_seeds(seeds), per_frame=per_frame,
               boxes=boxes, masks=masks, keypoints=points)
    assert len(outs) == len(ref) == 6  # images, masks, boxes, keypoints and their validity
    for k, got in zip(sorted(ref), outs):
        np.testing.assert_array_equal(got, np.asarray(ref[k]), err_msg=k)
    if per_frame:  # draws differ between frames: some frame's boxes move otherwise than frame 0
        b = dict(zip(sorted(ref), outs))["boxes"]
        assert any(not np.allclose(b[:, t] - boxes[:, t], b[:, 0] - boxes[:, 0])
                   for t in range(1, T))
    else:
        for got in outs:
            for t in range(1, T):
                np.testing.assert_array_equal(got[:, t], got[:, 0])


@pytest.mark.parametrize("per_frame, channel", [(False, False), (True, True)])
def test_dali_sequences_with_masks_alone_equal_arrays(per_frame, channel):
    """Masks without boxes (the call then has no box options to pass on) on DALI sequences,
    ``(T, H, W)`` or ``(T, H, W, 1)``, equal the array path bitwise."""
    rng = np.random.default_rng(5)
    step = augjax.compose(ops.flip.bind(p=0.5), ops.rotate.bind(degrees=30))
    batch = rng.integers(0, 256, (N, T, H, W, 3), dtype=np.uint8)
    masks = rng.integers(0, 3, (N, T, H, W, 1)[:5 if channel else 4], dtype=np.uint8)
    seeds, outs = _targets_pipe(batch, step, per_frame, masks=masks)
    ref = step(augjax.Clips(batch), key=augjax.keys_from_seeds(seeds), per_frame=per_frame,
               masks=masks)
    assert sorted(ref) == ["images", "masks"] and len(outs) == 2
    for k, got in zip(sorted(ref), outs):
        np.testing.assert_array_equal(got, np.asarray(ref[k]), err_msg=k)
    assert not np.array_equal(outs[1], masks)  # the masks moved


@pytest.mark.parametrize("call", [
    pytest.param((name, body), id=f"{name}-{i}") for i, (name, body) in enumerate([
        ("flip", lambda s, seeds: ops.flip(s, seeds=seeds, p=0.5)),
        ("random_resized_crop", lambda s, seeds: ops.random_resized_crop(s, seeds=seeds,
                                                                         size=8)),
        ("random_resized_crop", lambda s, seeds: augjax.compose(
            ops.random_resized_crop.bind(size=8), ops.flip)(s, seeds=seeds)),
        ("resize", lambda s, seeds: ops.resize(s, seeds=seeds, size=(8, 8))),
        ("random_resized_crop", lambda s, seeds: augjax.views(
            {"g": (2, ops.random_resized_crop.bind(size=8))})(s, seeds=seeds,
                                                               ragged=True)["g"][0]),
    ])])
def test_dali_sequences_without_layout_say_layout_fhwc(call):
    """Sequences called without ``layout="FHWC"`` are refused by the operator their first op
    runs in, before any trace, with an error that says to name the clips' layout (not only that
    a batch of images has rank 4): the image path's ``jax_function``, and the plan that draws
    the windows of a chain that DALI reads at each image's own size (a crop or resize first,
    views with ``ragged=True``), where a sequence's ``(T, H)`` had been read as an image's
    height and width: a window from the wrong axes in every clip, and no error."""
    name, body = call
    batch = np.zeros((N, T, H, W, 3), np.uint8)
    p = _pipe(batch, body)
    with pytest.raises(RuntimeError, match=rf"{name}: argument 'images' in a DALI pipeline "
                                           r"holds sequences .*\(4, 20, 16, 3\).* "
                                           r"layout='FHWC'"):
        p.run()


def test_float_sequences_outside_0_1_warn_as_images_do():
    """Float 0..255 clips in a DALI CPU pipeline warn with the range (the host batch is read
    for free), as image batches do, and raise in a pipeline defined in checking mode; on arrays
    NumPy clips warn, and in checking mode NumPy and jax.Array clips raise."""
    import jax

    clips = np.random.default_rng(0).uniform(0, 255, (N, T, H, W, 3)).astype(np.float32)
    jitter = ops.color_jitter.bind(brightness=0.4)
    p = _pipe(clips, lambda s, seeds: jitter(s, seeds=seeds, layout="FHWC"))
    with pytest.warns(augjax.InputRangeWarning, match=r"color_jitter: argument 'images' expects "
                                                       r"float images in \[0, 1\]"):
        p.run()
    with augjax.checking():  # the pipeline defined in checking mode: an error in DALI's threads
        strict = _pipe(clips, lambda s, seeds: jitter(s, seeds=seeds, layout="FHWC"))
    with pytest.raises(RuntimeError) as err:
        strict.run()
    assert "float images in [0, 1]" in augjax.dali.error_cause(err.value)
    on_host = (lambda: jitter(augjax.Clips(clips), key=jax.random.key(0)),
               lambda: jitter(clips, layout="FHWC", key=jax.random.key(0)))
    for call in on_host:  # NumPy clips: read for free, a warning
        with pytest.warns(augjax.InputRangeWarning, match=r"got values in \[.*, 254\.\d+\]"):
            call()
    on_device = lambda: jitter(augjax.Clips(jax.numpy.asarray(clips)),  # noqa: E731
                               key=jax.random.key(0))
    for call in (*on_host, on_device):  # checking mode: an error, jax.Arrays too
        with augjax.checking(), pytest.raises(augjax.InputError, match="float images in"):
            call()
