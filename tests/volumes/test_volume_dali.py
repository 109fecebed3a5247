"""Volume chains in a DALI CPU pipeline: volumes read by ``fn.readers.numpy`` (samples
(D, H, W, C)) with their masks (a second reader) through one jax_function, equal to the array
path with the pipeline's seeds bitwise; wrong rank and layout are typed errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax.errors import InputError

pytest.importorskip("nvidia.dali", reason="DALI is not installed")

N, S = 2, 16


def _files(tmp_path, arrays, prefix):
    names = []
    for i, a in enumerate(arrays):
        names.append(f"{prefix}{i}.npy")
        np.save(tmp_path / names[-1], a)
    return names


def _run(tmp_path, body, volumes, masks=None):
    """One batch of a CPU pipeline reading ``volumes`` (and ``masks``) from .npy files, through
    ``body(volumes, masks, seeds)``; returns (seeds, outputs...)."""
    from nvidia.dali import fn, pipeline_def, types

    # a fresh folder per pipeline: the reader maps its files, and a failed pipeline may still
    # hold them when the next one writes its own
    tmp_path = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    tmp_path.mkdir()
    vfiles = _files(tmp_path, volumes, "v")
    mfiles = _files(tmp_path, masks, "m") if masks is not None else None

    @pipeline_def(batch_size=N, num_threads=1, device_id=None, seed=2)
    def pipe():
        v = fn.readers.numpy(file_root=str(tmp_path), files=vfiles, name="volumes")
        m = fn.readers.numpy(file_root=str(tmp_path), files=mfiles) if mfiles else None
        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32, seed=7)
        out = body(v, m, seeds)
        if isinstance(out, dict):
            return (seeds, *(out[k] for k in sorted(out)))
        return seeds, out

    p = pipe()
    p.build()
    return [np.array(o.as_tensor()) for o in p.run()]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.random((N, S, S, S, 1)).astype(np.float32)
    masks = (rng.random((N, S, S, S)) > 0.8).astype(np.uint8) * rng.integers(1, 3, (N, S, S, S),
                                                                             dtype=np.uint8)
    return x, masks


@pytest.mark.slow
def test_nnunet_in_dali_equals_arrays_with_masks(tmp_path, data):
    """The nnU-Net recipe (crop with foreground oversampling reading the masks, affine, the
    intensity ops, mirroring) on numpy-read volumes and masks equals the array call with
    ``keys_from_seeds(seeds)``, volumes and masks, bitwise."""
    x, masks = data
    recipe = augjax.recipes.nnunet((12, 12, 12))
    seeds, got_images, got_masks = _run(
        tmp_path, lambda v, m, s: recipe(v, masks=m, seeds=s), x, masks)
    ref = recipe(augjax.Volumes(x), key=augjax.keys_from_seeds(seeds), masks=masks)
    assert got_images.shape == (N, 12, 12, 12, 1)
    np.testing.assert_array_equal(got_images, np.asarray(ref["images"]))
    np.testing.assert_array_equal(got_masks, np.asarray(ref["masks"]))
    assert not np.array_equal(got_images, x[:, :12, :12, :12])  # it did something


def test_volume_chain_in_dali_equals_arrays_and_draws_its_own_seeds(tmp_path, data):
    """A chain that reads the masks (foreground crop), moves them (flip) and changes the
    intensities equals the array call bitwise, volumes (as ``augjax.Volumes(node)`` too) and
    masks; without ``seeds=`` the chain draws them in the pipeline from ``seed=``, the same for
    the same seed."""
    x, masks = data
    vol = augjax.volume_ops
    step = vol.chain(vol.crop.bind(size=(8, 12, 12), p_foreground=1.0), vol.flip.bind(p=0.5),
                     vol.noise.bind(p=1.0, std=(0.1, 0.1)))
    seeds, got, got_masks = _run(
        tmp_path, lambda v, m, s: step(augjax.Volumes(v), masks=m, seeds=s), x, masks)
    ref = step(augjax.Volumes(x), key=augjax.keys_from_seeds(seeds), masks=masks)
    np.testing.assert_array_equal(got, np.asarray(ref["images"]))
    np.testing.assert_array_equal(got_masks, np.asarray(ref["masks"]))
    assert (got_masks > 0).any()  # the patches are centred on foreground
    a = _run(tmp_path, lambda v, m, s: step(v, masks=m, seed=11), x, masks)[1]
    b = _run(tmp_path, lambda v, m, s: step(v, masks=m, seed=11), x, masks)[1]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, got)


def test_dali_volumes_refuse_wrong_rank_layout_and_key(tmp_path, data):
    from nvidia.dali import fn

    from augjax.dali import error_cause

    x, _ = data
    flip = augjax.volume_ops.flip
    with pytest.raises(RuntimeError) as err:  # samples (D, H, W): no channel axis
        _run(tmp_path, lambda v, m, s: flip(v, seeds=s), x[..., 0])
    assert "InputError" in error_cause(err.value) and "(N, D, H, W, C)" in error_cause(err.value)
    with pytest.raises(RuntimeError) as err:  # tagged channel-first by the pipeline
        _run(tmp_path, lambda v, m, s: flip(fn.reshape(v, layout="CDHW"), seeds=s),
             np.moveaxis(x, -1, 1))
    cause = error_cause(err.value)
    assert "InputError" in cause and "'CDHW'" in cause and "'DHWC'" in cause
    with pytest.raises(InputError, match="'key' is for arrays"):
        _run(tmp_path, lambda v, m, s: flip(v, key=jax.random.key(0)), x)
    with pytest.raises(InputError, match="'seeds' is for DALI"):
        flip(x, key=jax.random.key(0), seeds=np.zeros((N, 2), np.int32))
