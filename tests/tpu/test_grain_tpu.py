"""A grain pipeline on a TPU host: records read and batched by grain's worker processes (which
stay on the CPU: one process holds the chip), then :class:`augjax.grain.BatchAugment` runs the
chain on the TPU after batching, giving the CPU's pixels (the parity rule of
``test_parity.py``). Runs only where JAX sees a TPU (``pytest -m tpu -p no:xdist tests/tpu``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_parity import AGREE, _tpu, agreement  # noqa: E402

import augjax  # noqa: E402

grain = pytest.importorskip("grain", reason="needs grain (pip install grain)")
import absl.flags  # noqa: E402

import augjax.grain as ag  # noqa: E402

pytestmark = [pytest.mark.tpu,
              pytest.mark.skipif(_tpu() is None, reason="needs a TPU (JAX sees none)")]

# grain's worker processes read absl flags, which only absl.app parses (not pytest)
if not absl.flags.FLAGS.is_parsed():
    absl.flags.FLAGS.mark_as_parsed()

N, H, W, B = 24, 72, 96, 8


def _source():
    imgs = np.random.default_rng(0).integers(0, 256, (N, H, W, 3), dtype=np.uint8)
    return [{"image": imgs[i], "label": np.int32(i % 5)} for i in range(N)]


def _chain():
    """The batch's chain: a resampling crop and a flip (uint8 out: levels compare). Nothing
    after the crop here: its TPU form (matrix products) is within one level of the CPU's, and
    a later op amplifies that level (measured on a v5e, same pipeline: colour jitter after the
    crop, 99.73% of values within one level, largest difference 6; RandAugment after it,
    99.80%, largest 102, where solarize's threshold flips a pixel); each op and policy alone is
    compared in test_parity.py."""
    return augjax.compose(augjax.ops.random_resized_crop.bind(size=64),
                          augjax.ops.flip.bind(p=0.5))


def _per_record():
    """The workers' per-record step (on their CPU)."""
    return ag.RandomMap(augjax.compose(augjax.ops.color_jitter.bind(brightness=0.4)))


class _Where(grain.transforms.Map):
    """Notes the worker's process and whether its JAX sees only the CPU."""

    def map(self, element):
        import jax as worker_jax

        element["pid"] = np.int64(os.getpid())
        element["all_cpu"] = np.bool_(all(d.platform == "cpu" for d in worker_jax.devices()))
        return element


def _batches(workers: int):
    ds = (grain.MapDataset.source(_source()).shuffle(seed=1)
          .map_with_index(ag.WithIndex()).random_map(_per_record(), seed=2).map(_Where())
          .batch(B).to_iter_dataset())
    if workers:  # a TPU host: the workers must not open the chip the main process holds
        ds = ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers),
                            worker_init_fn=ag.worker_init)
    return ds


def test_batch_augment_runs_the_chain_on_the_tpu_after_grains_workers():
    aug = ag.BatchAugment(_chain(), seed=7, epoch_size=N)
    out = list(_batches(2).map(aug))
    assert len(out) == N // B
    tpu = _tpu()
    for batch in out:
        assert isinstance(batch["image"], jax.Array) and batch["image"].devices() == {tpu}
        assert batch["image"].shape == (B, 64, 64, 3) and batch["image"].dtype == np.uint8
    # the workers read and batched on the CPU, in processes of their own
    pids = {int(p) for b in out for p in b["pid"]}
    assert os.getpid() not in pids and pids
    assert all(b["all_cpu"].all() for b in out)
    # the same batches through the chain on the host CPU: the CPU's pixels, same keys
    on_cpu = ag.BatchAugment(_chain(), seed=7, epoch_size=N, device=jax.devices("cpu")[0])
    plain = list(_batches(0))
    assert [list(b["index"]) for b in plain] == [list(b["index"]) for b in out]
    for got, batch in zip(out, plain, strict=True):
        want = on_cpu(batch)
        share, worst, _ = agreement([np.asarray(want["image"])], [np.asarray(got["image"])])
        assert share >= AGREE, (f"{100 * share:.3f}% of values within one level of the CPU's, "
                                f"largest difference {worst:.1f} levels")
