"""GPU paths of real inputs (``pytest -m gpu`` on a CUDA machine; skipped with the reason
elsewhere): JPEGs of different sizes decoded by nvJPEG (``device="mixed"``) straight into a chain
that starts with a crop or a resize, masks and boxes following a chain through a DALI GPU
pipeline, and GPU images under DALI's legacy executor (``exec_dynamic=False``).

Both are compared with the array path replayed from the pipeline's seeds
(``augjax.keys_from_seeds``) on the GPU: the targets bitwise, the ragged chain within DALI's
resampling difference (tests/dali/test_ragged.py states it).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_dali, seeds, write_jpegs

import augjax
from augjax import compose, ops

pytestmark = pytest.mark.gpu
pytest.importorskip("nvidia.dali.plugin.jax")

SIZES = [(75, 100), (100, 75), (67, 100), (96, 128), (102, 102), (60, 90), (128, 96),
         (41, 120)]
B = len(SIZES)
OUT = 48


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    return write_jpegs(tmp_path_factory.mktemp("ragged_gpu_jpegs"), SIZES)


def test_ragged_nvjpeg_batch_through_a_chain_replays_on_arrays(jpeg_root):
    from nvidia.dali import fn, pipeline_def, types

    chain = compose(ops.random_resized_crop.bind(size=OUT), ops.flip.bind(p=0.5),
                    ops.brightness.bind(factor=(0.7, 1.3)))

    @pipeline_def(batch_size=B, num_threads=2, device_id=0, seed=3)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root, random_shuffle=True, seed=1)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
        s = augjax.dali.sample_seeds(device="cpu")
        return images, s, chain(images, seeds=s)

    p = pipe()
    p.build()
    for _ in range(2):
        decoded, s, out = p.run()
        images = [np.array(decoded.as_cpu()[i]) for i in range(B)]
        assert len({im.shape for im in images}) >= 5
        got = np.array(out.as_cpu().as_tensor())
        assert got.shape == (B, OUT, OUT, 3) and got.dtype == np.uint8
        want = np.asarray(chain(images, key=augjax.keys_from_seeds(np.array(s.as_tensor()))))
        d = np.abs(got.astype(np.int32) - want.astype(np.int32))
        # the same windows, flips and factors; only the resampling differs (nvJPEG's decode
        # may also differ from the CPU decode by a level or two)
        assert d.mean() <= 1.0 and np.percentile(d, 99) <= 8, (d.mean(), np.percentile(d, 99))


def test_masks_and_boxes_follow_a_chain_in_a_gpu_pipeline():
    rng = np.random.default_rng(0)
    n, h, w = 8, 40, 48
    x = rng.integers(0, 256, (n, h, w, 3), dtype=np.uint8)
    masks = np.zeros((n, h, w), np.int32)
    masks[:, 8:24, 10:30] = 3
    boxes = np.tile(np.array([[[10, 8, 30, 24], [2, 2, 12, 40]]], np.float32), (n, 1, 1))
    s = seeds(n, seed=5)
    chain = compose(ops.flip, ops.rotate.bind(degrees=(-20.0, 20.0)),
                    ops.random_resized_crop.bind(size=(32, 32), scale=(0.5, 1.0)),
                    ops.brightness)

    def build(im, mk, bx, sd):
        out = chain(im, masks=mk, boxes=bx, seeds=sd)
        return out["images"], out["masks"], out["boxes"], out["boxes_valid"]

    (img, mk, bx, valid), = run_dali(build, x, masks, boxes, s, device="gpu",
                                     layouts=["HWC", None, None, None])
    ref = chain(x, key=augjax.keys_from_seeds(s), masks=masks, boxes=boxes)
    np.testing.assert_array_equal(mk, np.asarray(ref["masks"]))
    np.testing.assert_allclose(bx, np.asarray(ref["boxes"]), atol=1e-4)
    np.testing.assert_array_equal(valid, np.asarray(ref["boxes_valid"]))
    d = np.abs(img.astype(np.int32) - np.asarray(ref["images"]).astype(np.int32))
    assert d.max() <= 1, d.max()
    # every valid box encloses its moved mask's pixels (up to the half pixel of nearest)
    for i in range(n):
        ys, xs = np.nonzero(mk[i] == 3)
        if len(xs) and valid[i, 0]:
            x1, y1, x2, y2 = bx[i, 0]
            assert xs.min() + 0.5 >= x1 - 1 and xs.max() + 0.5 <= x2 + 1
            assert ys.min() + 0.5 >= y1 - 1 and ys.max() + 0.5 <= y2 + 1


def test_ragged_nvjpeg_batch_resized_to_a_fixed_size_replays_on_arrays(jpeg_root):
    """``resize`` to (h, w) draws nothing: its CPU plan's one output depends on no input, and
    must still come back on the CPU on a machine whose default JAX device is the GPU."""
    from nvidia.dali import fn, pipeline_def, types

    chain = compose(ops.resize.bind(size=(OUT, OUT)), ops.flip.bind(p=0.5))

    @pipeline_def(batch_size=B, num_threads=2, device_id=0, seed=3)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=jpeg_root, seed=1)
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
        s = augjax.dali.sample_seeds(device="cpu")
        return images, s, chain(images, seeds=s)

    p = pipe()
    p.build()
    decoded, s, out = p.run()
    images = [np.array(decoded.as_cpu()[i]) for i in range(B)]
    assert len({im.shape for im in images}) >= 5
    got = np.array(out.as_cpu().as_tensor())
    assert got.shape == (B, OUT, OUT, 3)
    want = np.asarray(chain(images, key=augjax.keys_from_seeds(np.array(s.as_tensor()))))
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert d.mean() <= 1.0 and np.percentile(d, 99) <= 8, (d.mean(), np.percentile(d, 99))


def _legacy_pipeline(source, chain):
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=8, num_threads=2, device_id=0, seed=3, exec_dynamic=False)
    def pipe():
        x = fn.external_source(source=source, batch=True, layout="HWC", device="gpu")
        s = augjax.dali.sample_seeds(device="cpu")
        return x, s, chain(x, seeds=s)

    p = pipe()
    p.build()
    return p


def test_a_crop_chain_under_the_legacy_executor_reads_gpu_batches_in_jax():
    """DALI's legacy executor cannot bring GPU images' sizes to the CPU: a chain that starts
    with a crop takes them at one size per batch, in its one ``jax_function``, bitwise the
    array path on the GPU."""
    import jax

    chain = compose(ops.random_resized_crop.bind(size=OUT), ops.flip.bind(p=0.5))
    x = np.random.default_rng(0).integers(0, 256, (8, 60, 80, 3), dtype=np.uint8)
    _, s, out = _legacy_pipeline(lambda: x, chain).run()
    gpu = jax.devices("gpu")[0]
    keys = jax.device_put(augjax.keys_from_seeds(np.array(s.as_tensor())), gpu)
    want = np.asarray(chain(jax.device_put(x, gpu), key=keys))
    np.testing.assert_array_equal(np.array(out.as_cpu().as_tensor()), want)


def test_ragged_gpu_images_under_the_legacy_executor_name_the_executor():
    chain = compose(ops.random_resized_crop.bind(size=OUT))
    rng = np.random.default_rng(0)
    x = [rng.integers(0, 256, (40 + 4 * i, 50, 3), dtype=np.uint8) for i in range(8)]
    p = _legacy_pipeline(lambda: x, chain)
    with pytest.raises(RuntimeError) as info:
        p.run()
    cause = augjax.dali.error_cause(info.value)
    assert "images of different sizes" in cause and "exec_dynamic=True" in cause, cause
