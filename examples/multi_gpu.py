"""Data-parallel augjax: one DALI pipeline per local GPU, sharded global batches for JAX.

    python examples/multi_gpu.py --iters 50                      # every local GPU
    CUDA_VISIBLE_DEVICES=0 python examples/multi_gpu.py --dump one.npz
    python examples/multi_gpu.py --dump all.npz
    python examples/multi_gpu.py --compare one.npz all.npz       # bitwise equal per sample
    python examples/multi_gpu.py --cpu --shards 2                # no GPU: shards as CPU pipelines
    python examples/multi_gpu.py --source sample --read python   # the per-sample source, for A/B
    python examples/multi_gpu.py --workers 4 --read python       # callbacks in 4 processes/GPU

Each sample's augmentation keys come from its global index and the epoch
(``augjax.ShardedSource`` -> ``augjax.index_seeds``), so a sample looks the same on 1, 2 or 8
GPUs and on any number of hosts. Several hosts: call ``jax.distributed.initialize()`` first (one
process per host, or per GPU); ``jax.devices()`` then spans the hosts, DALI's ``data_iterator``
builds one pipeline per local device with ``shard_id = device.id`` and
``num_shards = jax.device_count()``, and the global batch is assembled across processes.

Input side: DALI runs every pipeline's non-parallel ``external_source`` callback in the thread
that schedules the pipelines, one pipeline after the other, under one GIL; per-sample callbacks
cost every GPU's samples there and stop the input from scaling with the GPUs. The default source
is therefore one call per batch (``--source batch``: vectorised seeds) that returns file paths,
read by DALI's ``fn.io.file.read`` in its worker threads (``--read dali``). ``--workers N`` runs
the callbacks in N Python processes per pipeline instead (DALI's parallel ``external_source``,
started with "spawn"). All forms give bitwise the same samples.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def dataset(root: str | None, repeat: int) -> tuple[list[str], list[int]]:
    """Files and labels: ``root/<class>/*.jpg``, or the bundled sample photos (one class each)."""
    if root:
        classes = sorted(p for p in Path(root).iterdir() if p.is_dir())
        pairs = [(str(f), c) for c, d in enumerate(classes) for f in sorted(d.glob("*.jp*g"))]
    else:
        import augjax

        bundled = Path(augjax.__file__).parent / "data" / "images"
        pairs = [(str(f), i) for i, f in enumerate(sorted(bundled.glob("*.jpg")))]
    pairs = pairs * repeat
    return [p for p, _ in pairs], [c for _, c in pairs]


def chain():
    """The augmentation chain: sample-level ops only (mixing depends on the batch, so its
    partner would change with the number of devices)."""
    import augjax

    ops = augjax.ops
    return augjax.compose(
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.rotate.bind(degrees=(-15.0, 15.0), interpolation="bilinear"),
        ops.normalize.bind(mean=MEAN, std=STD),
    )


def pipeline_body(files, labels, shard_batch, shard_id, num_shards, size, device, seed=0,
                  source="batch", read="dali", workers=0):
    """The graph of one shard: read, decode, resize, augment with per-sample index seeds."""
    from nvidia.dali import fn, types

    import augjax

    src = augjax.ShardedSource(files, labels, batch_size=shard_batch, shard_id=shard_id,
                               num_shards=num_shards, seed=seed, mode=source, read=read)
    # Parallel batch mode: each worker computes a whole batch, so keep them all busy.
    depth = max(2, workers) if workers else None
    encoded, label, seeds, index = src.external_source(parallel=workers > 0,
                                                       prefetch_queue_depth=depth)
    # hw_decoder_load=0: every image takes the same (CUDA) decoding path. With the default
    # split, which images go to the H200's hardware JPEG decoder depends on the per-GPU batch,
    # and the two decoders differ by a few levels: measured on 2 H200s, 22 of 256 samples
    # differed by up to 0.12 (normalized) between 1 and 2 GPUs.
    decode = {"hw_decoder_load": 0.0} if device == "gpu" else {}
    images = fn.decoders.image(encoded, device="mixed" if device == "gpu" else "cpu",
                               output_type=types.RGB, **decode)
    images = fn.resize(images, size=(size, size))
    images = chain()(images, seeds=seeds)
    if device == "gpu":
        label, index = label.gpu(), index.gpu()
    return images, label, index


def workers_kwargs(workers: int) -> dict:
    """Pipeline arguments of DALI's parallel external source: "spawn", as forking a process
    that already started JAX or CUDA is unsafe."""
    return {"py_num_workers": workers, "py_start_method": "spawn"} if workers else {}


def gpu_iterator(files, labels, global_batch, size, seed, source, read, workers, threads):
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from nvidia.dali.plugin.jax import data_iterator

    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))
    shard_batch = global_batch // jax.device_count()

    # With several pipelines DALI's iterator needs the epoch size: every full global batch.
    epoch_size = len(files) // global_batch * global_batch

    @data_iterator(output_map=["images", "labels", "index"], sharding=sharding, size=epoch_size,
                   auto_reset=True)
    def iterator(shard_id, num_shards):
        return pipeline_body(files, labels, shard_batch, shard_id, num_shards, size, "gpu", seed,
                             source, read, workers)

    return iterator(batch_size=global_batch, num_threads=threads, seed=seed,
                    prefetch_queue_depth=2, **workers_kwargs(workers))


def cpu_batches(files, labels, global_batch, shards, size, seed, iters, source, read, workers,
                threads):
    """CPU fallback: ``shards`` CPU pipelines, their outputs concatenated as a global batch
    (``iters`` of them, across epoch ends)."""
    from nvidia.dali import pipeline_def

    shard_batch = global_batch // shards
    pipes = []
    # Synchronous executors: the callbacks run in this thread, one shard after the other (CPU
    # mode is for checking results, not for speed). Parallel sources need the pipelined one.
    sync = {} if workers else {"exec_async": False, "exec_pipelined": False,
                               "prefetch_queue_depth": 1}
    for s in range(shards):
        @pipeline_def(batch_size=shard_batch, num_threads=threads, device_id=None, seed=seed,
                      **sync, **workers_kwargs(workers))
        def pipe(s=s):
            return pipeline_body(files, labels, shard_batch, s, shards, size, "cpu", seed,
                                 source, read, workers)

        p = pipe()
        p.build()
        pipes.append(p)
    for _ in range(iters):
        outs = run_all(pipes)
        if outs is None:  # epoch end: restart, as DALI's auto-resetting iterators do
            for p in pipes:
                p.reset()
            outs = run_all(pipes)
        yield {k: np.concatenate([np.array(o[i].as_tensor()) for o in outs])
               for i, k in enumerate(("images", "labels", "index"))}


def run_all(pipes):
    """One batch of every pipeline, or None at the epoch end. Every pipeline runs (and reaches
    the end of its shard) before any is reset: DALI resets only a pipeline that reached it."""
    outs = []
    for p in pipes:
        try:
            outs.append(p.run())
        except StopIteration:
            pass
    return outs if len(outs) == len(pipes) else None


def _epochs(iterator, iters):
    """``iters`` batches from an auto-resetting iterator, across epoch ends."""
    count = 0
    while count < iters:
        for batch in iterator:
            yield batch
            count += 1
            if count >= iters:
                return


def default_threads(pipelines: int) -> int:
    """DALI threads per pipeline: this process's cores shared by its pipelines, 2 to 8."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, min(8, (cores or 2) // max(1, pipelines)))


def train_step():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(images, labels):
        # Stand-in for a model: a global reduction over the sharded batch.
        return jnp.mean(images), jnp.sum(labels)

    return step


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", default=None, help="root/<class>/*.jpg (default: bundled)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="repeat the file list this often (default: an epoch of max(4, iters/2) "
                         "global batches, so a run crosses an epoch end at most once or twice)")
    ap.add_argument("--global-batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu", action="store_true", help="CPU pipelines instead of GPUs")
    ap.add_argument("--shards", type=int, default=1, help="CPU mode: number of shards")
    ap.add_argument("--source", choices=("batch", "sample"), default="batch",
                    help="one source call per batch (default) or per sample")
    ap.add_argument("--read", choices=("dali", "python"), default="dali",
                    help="files read by DALI's fn.io.file.read (default) or in the callback")
    ap.add_argument("--workers", type=int, default=0,
                    help="Python worker processes per pipeline for the source (0: none, the "
                         "callbacks run in this process; >0: DALI's parallel external source)")
    ap.add_argument("--threads", type=int, default=None,
                    help="DALI CPU threads per pipeline (default: cores / pipelines, 2 to 8)")
    ap.add_argument("--dump", default=None, help="write outputs keyed by global index (npz)")
    ap.add_argument("--compare", nargs=2, default=None, help="compare two dumps bitwise")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.workers < 0 or (args.threads is not None and args.threads < 1):
        ap.error(f"--workers expects >= 0 and --threads >= 1, got {args.workers}, {args.threads}")
    files, labels = dataset(args.images, 1)
    per_epoch = max(4, -(-args.iters // 2))  # global batches per epoch
    repeat = args.repeat or max(1, -(-per_epoch * args.global_batch // len(files)))
    files, labels = files * repeat, labels * repeat
    source = (args.source, args.read, args.workers)
    if args.cpu:
        threads = args.threads or default_threads(args.shards)
        batches = cpu_batches(files, labels, args.global_batch, args.shards, args.size,
                              args.seed, args.iters, *source, threads)
        devices = f"{args.shards} CPU pipeline(s)"
    else:
        import jax

        threads = args.threads or default_threads(jax.local_device_count())
        it = gpu_iterator(files, labels, args.global_batch, args.size, args.seed, *source,
                          threads)
        batches = _epochs(it, args.iters)
        devices = f"{jax.device_count()} GPU(s): {jax.devices()}"
    print(f"source: mode {args.source}, read {args.read}, {args.workers} worker(s) and "
          f"{threads} DALI threads per pipeline, {len(files)} files")
    step = train_step()
    dump: dict[int, np.ndarray] = {}
    n = 0
    t0 = None
    # zip stops before asking for one batch more: the pipelines (and their workers) are torn
    # down after the clock stops.
    for i, batch in zip(range(args.iters), batches):
        loss = step(batch["images"], batch["labels"])
        if i == 1:  # the first batch pays the compiles
            loss[0].block_until_ready() if hasattr(loss[0], "block_until_ready") else None
            t0, n = time.perf_counter(), 0
        n += len(batch["index"])
        if args.dump:
            for idx, img in zip(np.asarray(batch["index"]).reshape(-1), np.asarray(batch["images"])):
                dump.setdefault(int(idx), img)
    if hasattr(loss[0], "block_until_ready"):
        loss[0].block_until_ready()
    rate = n / (time.perf_counter() - t0) if t0 else float("nan")
    print(f"{devices}: {rate:.0f} images/s over {n} images (global batch {args.global_batch})")
    if args.dump:
        keys = sorted(dump)
        np.savez(args.dump, index=np.array(keys), images=np.stack([dump[k] for k in keys]))
        print(f"wrote {args.dump} ({len(keys)} samples)")
    return 0


def compare(a: str, b: str) -> int:
    with np.load(a) as fa, np.load(b) as fb:  # read each array once (NpzFile re-reads per access)
        xa, xb, ya, yb = fa["index"], fa["images"], fb["index"], fb["images"]
    common = np.intersect1d(xa, ya)
    xi = {int(k): i for i, k in enumerate(xa)}
    yi = {int(k): i for i, k in enumerate(ya)}
    same = sum(np.array_equal(xb[xi[k]], yb[yi[k]]) for k in common)
    diff = max((float(np.abs(xb[xi[k]].astype(np.float64) - yb[yi[k]]).max()) for k in common),
               default=0.0)
    print(f"{len(common)} common samples, {same} bitwise equal, max |diff| {diff:.3g}")
    return 0 if common.size and same == len(common) else 1


if __name__ == "__main__":
    sys.exit(main())
