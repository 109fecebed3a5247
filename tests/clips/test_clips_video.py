"""Clips from a video file: a short MJPEG video written with OpenCV, read in a DALI CPU pipeline
by ``fn.experimental.readers.video`` (DALI's CPU video reader; ``fn.readers.video`` is GPU-only)
into sequences (layout ``"FHWC"``), and RandAugment on them, one draw per clip and per frame,
equal to the array path on the same decoded frames with the pipeline's seeds."""

from __future__ import annotations

import numpy as np
import pytest

import augjax

pytest.importorskip("nvidia.dali", reason="DALI is not installed")
cv2 = pytest.importorskip("cv2", reason="writing the video needs OpenCV (the test extra)")

N, T, H, W = 2, 4, 24, 32
FRAMES = N * T


def _write_video(path) -> None:
    """FRAMES frames (H x W) of a square moving right over a colour ramp, MJPEG in AVI (a codec
    DALI's CPU reader decodes and OpenCV writes without FFmpeg's encoders)."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (W, H))
    assert writer.isOpened()
    for i in range(FRAMES):
        frame = np.zeros((H, W, 3), np.uint8)
        frame[:, :] = (20 * i, 100, 200 - 15 * i)
        frame[6:14, 3 * i:3 * i + 8] = 255
        writer.write(frame)
    writer.release()


@pytest.mark.fast_tier("True")
@pytest.mark.parametrize("per_frame", [False, True])
def test_video_reader_sequences_equal_arrays(tmp_path, per_frame):
    from nvidia.dali import fn, pipeline_def, types

    path = tmp_path / "clip.avi"
    _write_video(path)
    ra = augjax.rand_augment(n=2, m=9)

    @pipeline_def(batch_size=N, num_threads=1, device_id=None, seed=3)
    def pipe():
        video = fn.experimental.readers.video(device="cpu", filenames=[str(path)],
                                              sequence_length=T, step=T, name="video")
        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32, seed=5)
        return video, seeds, ra(video, seeds=seeds, layout="FHWC", per_frame=per_frame)

    p = pipe()
    p.build()
    video, seeds, out = p.run()
    assert video.layout() == "FHWC" and out.layout() == "FHWC"
    video, seeds, out = (np.array(x.as_tensor()) for x in (video, seeds, out))
    assert video.shape == (N, T, H, W, 3)
    assert not np.array_equal(video[:, 0], video[:, 1])  # real frames, moving
    keys = augjax.keys_from_seeds(seeds)
    np.testing.assert_array_equal(out, np.asarray(ra(augjax.Clips(video), key=keys,
                                                           per_frame=per_frame)))
    if not per_frame:  # one draw per clip: frame t is the image call on frames t, clip keys
        for t in range(T):
            np.testing.assert_array_equal(out[:, t], np.asarray(ra(video[:, t], key=keys)))
