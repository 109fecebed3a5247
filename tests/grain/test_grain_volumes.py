"""augjax.grain with volume chains: a record's volume (D, H, W, C) and its masks through
RandomMap, a batch through BatchAugment, each equal to the volume chain's call on arrays with
the keys the image path uses; 0 and 2 workers give the same records."""

from __future__ import annotations

import pickle

import absl.flags
import grain
import numpy as np
import pytest

import augjax
import augjax.grain as ag

N, S = 4, 8

# grain's worker processes read absl flags, which only absl.app parses (not pytest)
if not absl.flags.FLAGS.is_parsed():
    absl.flags.FLAGS.mark_as_parsed()


def _source():
    rng = np.random.default_rng(0)
    x = rng.random((N, S, S, S, 1)).astype(np.float32)
    masks = (rng.random((N, S, S, S)) > 0.7).astype(np.int32)
    return [{"image": x[i], "masks": masks[i], "id": np.int64(i)} for i in range(N)]


def _chain():
    vol = augjax.volume_ops
    return vol.chain(vol.crop.bind(size=(6, 6, 6), p_foreground=0.5), vol.flip.bind(p=0.5),
                     vol.brightness.bind(p=1.0, multiplier=(0.5, 1.5)))


def _seeds(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**30, size=(1, 2), dtype=np.int32)


def test_random_map_runs_a_volume_chain_per_record():
    chain = _chain()
    record = _source()[1]
    out = ag.RandomMap(chain).random_map(record, np.random.default_rng(5))
    ref = chain(record["image"][None], key=augjax.keys_from_seeds(_seeds(5)),
                masks=record["masks"][None])
    np.testing.assert_array_equal(out["image"], np.asarray(ref["images"])[0])
    np.testing.assert_array_equal(out["masks"], np.asarray(ref["masks"])[0])
    assert out["image"].shape == (6, 6, 6, 1) and out["id"] == record["id"]
    # pickled (as grain sends it to a worker): the catalog's ops by reference, same records
    again = pickle.loads(pickle.dumps(ag.RandomMap(chain)))
    assert again.chain.steps[0].op is augjax.volume_ops.crop
    np.testing.assert_array_equal(again.random_map(record, np.random.default_rng(5))["image"],
                                  out["image"])
    with pytest.raises(augjax.InputError, match=r"\(D, H, W, C\) volume per record"):
        ag.RandomMap(chain).random_map({"image": record["image"][0]}, np.random.default_rng(0))
    with pytest.raises(augjax.InputError, match="boxes"):
        ag.RandomMap(chain).random_map(dict(record, boxes=np.zeros((1, 4), np.float32)),
                                       np.random.default_rng(0))


def test_batch_augment_runs_a_volume_chain_per_batch():
    chain = _chain()
    records = _source()
    batch = {"image": np.stack([r["image"] for r in records]),
             "masks": np.stack([r["masks"] for r in records]), "index": np.arange(N)}
    out = ag.BatchAugment(chain, seed=3)(batch)
    ref = chain(batch["image"], key=augjax.keys_from_seeds(augjax.index_seeds(np.arange(N), 0, 3)),
                masks=batch["masks"])
    np.testing.assert_array_equal(np.asarray(out["image"]), np.asarray(ref["images"]))
    np.testing.assert_array_equal(np.asarray(out["masks"]), np.asarray(ref["masks"]))
    halves = [ag.BatchAugment(chain, seed=3)({k: v[s:s + 2] for k, v in batch.items()})
              for s in (0, 2)]  # batch boundaries change nothing
    np.testing.assert_array_equal(np.concatenate([np.asarray(h["image"]) for h in halves]),
                                  np.asarray(out["image"]))


@pytest.mark.slow
def test_zero_and_two_workers_give_the_same_volume_records():
    def run(workers):
        sampler = grain.samplers.IndexSampler(N, shuffle=True, num_epochs=1, seed=3)
        loader = grain.DataLoader(data_source=_source(), sampler=sampler, worker_count=workers,
                                  operations=[ag.RandomMap(_chain()), grain.transforms.Batch(2)])
        return {int(i): (v, m) for b in loader for i, v, m in zip(b["id"], b["image"],
                                                                    b["masks"])}

    one, two = run(0), run(2)
    assert sorted(one) == sorted(two) == list(range(N))
    for i in range(N):
        np.testing.assert_array_equal(one[i][0], two[i][0])
        np.testing.assert_array_equal(one[i][1], two[i][1])
