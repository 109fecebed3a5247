"""The chain run after DALI's JAX iterator (``augjax.dali.augment_batches``): the same bits as the
operator inside the pipeline for the same seeds, in order, with any prefetch depth."""

from __future__ import annotations

import numpy as np
import pytest

import augjax
from augjax.errors import InputError

B, SIZE, CLASSES = 4, 24, 8


def _chain():
    ops = augjax.ops
    return augjax.compose(
        ops.flip.bind(p=0.5),
        ops.brightness.bind(),
        ops.random_erasing.bind(p=0.5),
        ops.mixup_cutmix.bind(num_classes=CLASSES),
        ops.normalize.bind(chw=True),
    )


def _pipe(chain, seed=3):
    """Bundled JPEGs -> CPU decode -> DALI random_resized_crop; outputs the in-pipeline chain's
    result and the raw batch with the seeds it was given."""
    from pathlib import Path

    from nvidia.dali import fn, pipeline_def

    files = sorted(str(p) for p in (Path(augjax.__file__).parent / "data" / "images").glob("*.jpg"))

    @pipeline_def(batch_size=B, num_threads=1, device_id=None, seed=seed)
    def pipe():
        jpegs, labels = fn.readers.file(files=files, labels=list(range(len(files))),
                                        random_shuffle=True)
        images = fn.decoders.image(jpegs, device="cpu")
        images = fn.random_resized_crop(images, size=(SIZE, SIZE))
        seeds = augjax.dali.sample_seeds(device="cpu")
        inside, soft = chain(images, labels, seeds=seeds)
        return inside, soft, images, labels, seeds

    p = pipe()
    p.build()
    return p


def _batches(p, n):
    """``n`` iterations as (in-pipeline outputs, raw dict of jax.Arrays) pairs."""
    import jax.numpy as jnp

    out = []
    for _ in range(n):
        inside, soft, images, labels, seeds = (np.array(o.as_tensor()) for o in p.run())
        out.append(((inside, soft), {"images": jnp.asarray(images), "labels": jnp.asarray(labels),
                                     "seeds": jnp.asarray(seeds), "extra": jnp.arange(B)}))
    return out


@pytest.fixture(scope="module")
def recorded():
    chain = _chain()
    return chain, _batches(_pipe(chain), 5)


@pytest.mark.fast_tier("3")
@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_same_bits_as_the_operator_in_the_pipeline(recorded, prefetch):
    chain, batches = recorded
    got = list(augjax.dali.augment_batches((raw for _, raw in batches), chain,
                                           prefetch=prefetch))
    assert len(got) == len(batches)
    for (inside, soft), out in zip((b for b, _ in batches), got):
        assert out["images"].shape == (B, 3, SIZE, SIZE)
        np.testing.assert_array_equal(np.asarray(out["images"]), inside)
        np.testing.assert_array_equal(np.asarray(out["labels"]), soft)
        np.testing.assert_array_equal(np.asarray(out["extra"]), np.arange(B))  # passed through
    # the seeds differ between iterations, so equal outputs are not a constant
    assert not np.array_equal(batches[0][0][0], batches[1][0][0])


@pytest.mark.slow
def test_prefetch_pulls_ahead_of_the_consumer(recorded):
    chain, batches = recorded
    pulled = []

    def source():
        for i, (_, raw) in enumerate(batches):
            pulled.append(i)
            yield raw

    it = augjax.dali.augment_batches(source(), chain, prefetch=2)
    next(it)
    assert pulled == [0, 1, 2]  # batch 0 handed out, batches 1 and 2 already dispatched
    rest = list(it)
    assert len(rest) == len(batches) - 1 and pulled == list(range(len(batches)))


def test_op_without_labels_and_missing_entries(recorded):
    chain, batches = recorded
    flip = augjax.ops.flip.bind(p=0.5)
    raw = batches[0][1]
    out = next(augjax.dali.augment_batches([raw], flip))
    np.testing.assert_array_equal(np.asarray(out["labels"]), np.asarray(raw["labels"]))
    with pytest.raises(InputError, match="no entry 'seeds'"):
        next(augjax.dali.augment_batches([{"images": raw["images"]}], flip))
    with pytest.raises(InputError, match="'prefetch' expects an int >= 0, got -1"):
        augjax.dali.augment_batches([raw], flip, prefetch=-1)
