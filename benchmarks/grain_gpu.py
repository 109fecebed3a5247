"""grain + augjax's device-side ``BatchAugment`` on a GPU vs grain's loading alone.

Two pipelines over the same in-memory source of decoded uint8 images, grain ``MapDataset`` with
``mp_prefetch`` workers, batch ``--batch`` (256), each batch moved to the GPU and waited for:

- ``load``: shuffle, ``WithIndex``, batch, workers, ``jax.device_put`` (grain's loading alone);
- ``load+aug``: the same, then ``augjax.grain.BatchAugment`` of RandAugment(n=2, m=9), colour
  jitter and normalize (float32) on the GPU.

Both are run with records of one size (``--size``, 224) and, as a second pair, with a per-record
``RandomMap`` random resized crop from ``--source-size`` (256 x 320) in the workers (``crop``).
Reported: images/s (median of ``--rounds`` alternating rounds) and ``load+aug / load``; the
target is ``>= 0.9`` at B=256 (``load`` pair, the stricter one: nothing else hides the device
work there).

    python benchmarks/grain_gpu.py                  # writes results/grain-gpu-<machine>-<date>.json
    python benchmarks/grain_gpu.py --quick          # fewer batches, a smoke test
    python benchmarks/grain_gpu.py --device cpu --quick --workers 2 --batch 32 --records 256

The last line is a CPU smoke test (about 2.5 min on the shared 2-core machine). Each pipeline
starts its own workers; ``BatchAugment`` is made once per source and compiles on its first
batch only. No round starts that would end past ``--time-limit`` (240 s; the previous round's
duration is the estimate), and the result file is rewritten after every round, so a run cut
short by a wall-clock limit keeps the rounds it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


class ArraySource:
    def __init__(self, images: np.ndarray) -> None:
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> dict:
        return {"image": self.images[i], "label": np.int32(i % 1000)}


def batch_augment(args, epoch_size: int):
    """The device-side transform, made once: its program compiles on the first batch it sees
    and every later pipeline reuses it (a new ``BatchAugment`` per pipeline would compile
    RandAugment again for each row and round)."""
    import jax

    import augjax
    import augjax.grain

    chain = augjax.compose(augjax.rand_augment(n=2, m=9),
                           augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4,
                                                        saturation=0.4),
                           augjax.ops.normalize)
    return augjax.grain.BatchAugment(chain, epoch_size=epoch_size,
                                     device=jax.devices(args.device)[0])


def pipeline(images, args, *, crop: bool, augment):
    import grain
    import jax

    import augjax
    import augjax.grain

    ds = (grain.MapDataset.source(ArraySource(images)).shuffle(seed=0).repeat()
          .map_with_index(augjax.grain.WithIndex()))
    if crop:
        ds = ds.random_map(augjax.grain.RandomMap(augjax.compose(
            augjax.ops.random_resized_crop.bind(size=args.size), augjax.ops.flip)), seed=0)
    # a short read-ahead, so the timed batches are made while the clock runs (grain's default
    # 500 records ahead per worker would be computed during the warm-up)
    read = grain.ReadOptions(num_threads=2, prefetch_buffer_size=args.batch)
    it_ds = (ds.batch(args.batch, drop_remainder=True).to_iter_dataset(read_options=read)
             .mp_prefetch(grain.MultiprocessingOptions(num_workers=args.workers),
                          worker_init_fn=augjax.grain.worker_init))
    device = jax.devices(args.device)[0]
    if augment is not None:
        return iter(it_ds.map(augment))
    return iter(it_ds.map(lambda b: {**b, "image": jax.device_put(b["image"], device)}))


def run(make, args) -> float:
    import jax

    it = make()
    for _ in range(args.warmup):
        jax.block_until_ready(next(it)["image"])
    t0 = time.perf_counter()
    for _ in range(args.batches):
        jax.block_until_ready(next(it)["image"])
    rate = args.batch * args.batches / (time.perf_counter() - t0)
    getattr(it, "close", lambda: None)()
    return rate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--source-size", type=int, nargs=2, default=(256, 320))
    parser.add_argument("--records", type=int, default=2048)
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    parser.add_argument("--time-limit", type=float, default=240.0,
                        help="start no round that would end past this many seconds (the "
                             "result file is written after every round)")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches, args.warmup, args.rounds = 8, 2, 1

    import absl.flags

    if not absl.flags.FLAGS.is_parsed():
        absl.flags.FLAGS.mark_as_parsed()
    from harness import today

    gpu = args.device != "cpu"
    rng = np.random.default_rng(0)
    plain = rng.integers(0, 256, (args.records, args.size, args.size, 3), dtype=np.uint8)
    big = rng.integers(0, 256, (args.records // 4, *args.source_size, 3), dtype=np.uint8)
    aug_plain = batch_augment(args, len(plain))
    aug_big = batch_augment(args, len(big))
    rows = {
        "load": lambda: pipeline(plain, args, crop=False, augment=None),
        "load+aug": lambda: pipeline(plain, args, crop=False, augment=aug_plain),
        "crop": lambda: pipeline(big, args, crop=True, augment=None),
        "crop+aug": lambda: pipeline(big, args, crop=True, augment=aug_big),
    }
    rates = {name: [] for name in rows}
    start = time.perf_counter()
    out = Path(args.out) if args.out else HERE / "results" / \
        f"grain-{'gpu-h200' if gpu else 'cpu'}-{today()}.json"
    for r in range(args.rounds):
        round_start = time.perf_counter()
        for name, make in rows.items():
            try:
                rates[name].append(run(make, args))
                print(f"round {r}: {name}: {rates[name][-1]:.0f} images/s "
                      f"({time.perf_counter() - start:.0f} s in)", flush=True)
            except Exception as err:  # noqa: BLE001 - recorded, the other rows go on
                rates[name].append(None)
                print(f"round {r}: {name}: {type(err).__name__}: {err}", flush=True)
        write(out, args, gpu, rates, time.perf_counter() - start)  # each round: kept if cut
        spent = time.perf_counter() - start
        if r + 1 < args.rounds and spent + (time.perf_counter() - round_start) > args.time_limit:
            print(f"stopping after round {r}: another round would pass --time-limit "
                  f"{args.time_limit:.0f} s ({spent:.0f} s spent)", flush=True)
            break
    result = write(out, args, gpu, rates, time.perf_counter() - start)
    for k, v in result["ratios"].items():
        print(f"{k}: {v:.3f}x" if v else f"{k}: not measured")
    print(f"wrote {out} ({result['seconds']:.0f} s)")
    return 0


def write(out: Path, args, gpu: bool, rates: dict, seconds: float) -> dict:
    """The result file of the rounds run so far."""
    from harness import machine, today, versions

    med = {k: statistics.median([v for v in vs if v is not None])
           if any(v is not None for v in vs) else None for k, vs in rates.items()}

    def ratio(a, b):
        return med[a] / med[b] if med[a] and med[b] else None

    ratios = {"load+aug / load": ratio("load+aug", "load"),
              "crop+aug / crop": ratio("crop+aug", "crop")}
    result = {
        "benchmark": "grain + BatchAugment vs grain loading (benchmarks/grain_gpu.py)",
        "date": today(), "machine": machine(gpu=gpu), "versions": {**versions(gpu=gpu),
                                                                    "grain": _v("grain")},
        "config": {**vars(args), "chain": "rand_augment(n=2, m=9) + color_jitter(0.4, 0.4, 0.4) "
                   "+ normalize, float32 out"},
        "load_average_1min": os.getloadavg()[0], "seconds": seconds,
        "rounds_run": max(len(v) for v in rates.values()),
        "images_per_s": rates, "median_images_per_s": med, "ratios": ratios,
        "target": "load+aug / load >= 0.9 at B=256",
        "target_met": None if ratios["load+aug / load"] is None
        else ratios["load+aug / load"] >= 0.9,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def _v(module: str):
    import importlib.metadata as md

    try:
        return md.version(module)
    except md.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
