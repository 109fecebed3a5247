"""Soak: every batch's checksum against the array path, over many steps, under JAX's
asynchronous dispatch (NVIDIA/DALI#5617 reports corruption when JAX still reads a buffer DALI
has released and reused).

    python benchmarks/dali_soak.py --device gpu --steps 10000 --machine gpu-h200
    python benchmarks/dali_soak.py --device cpu --steps 20 --batch 4 --size 32   # smoke

Two paths, each ``--steps`` steps over the same inputs (``--pool`` batches of random uint8
``--size``^2 images, cycled) and the same per-step seeds:

- ``pipeline``: a DALI pipeline (``external_source`` -> augjax chain, one ``jax_function``)
  read through DALI's JAX iterator (``DALIGenericIterator``, which hands DALI's buffers to JAX);
- ``dynamic``: dynamic mode, a fresh ``ndd.Batch`` per step (DALI's copy of the pool batch,
  dropped right after the call) -> the chain -> an ``ndd.Batch`` -> JAX.

Each step's output goes into a jitted checksum (a weighted sum of the bits, uint32) without
waiting: the host reads the checksums only every ``--check-every`` steps, so JAX's dispatch runs
ahead of DALI as in a training loop. The reference: the same chain on jax.Arrays with
``key=augjax.keys_from_seeds(seeds)``, one checksum per (pool batch, seeds) computed up front.
Any mismatch is a corrupted batch. Writes ``results/dali-soak-<machine>-<date>.json`` with the
counts, the first mismatches and the flags (``XLA_FLAGS``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402


def make_chain():
    import augjax

    ops = augjax.ops
    return augjax.compose([ops.flip.bind(p=0.5),
                           ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4,
                                                 hue=0.1),
                           ops.normalize.bind(chw=True)])


def checksum_fn():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def checksum(x):
        bits = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.uint32).ravel()
        weights = (jnp.arange(bits.size, dtype=jnp.uint32) * jnp.uint32(2654435761)) | 1
        return jnp.sum(bits * weights, dtype=jnp.uint32)

    return checksum


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--pool", type=int, default=8, help="distinct input batches, cycled")
    ap.add_argument("--seed-sets", type=int, default=64, help="distinct seed batches, cycled")
    ap.add_argument("--check-every", type=int, default=100)
    ap.add_argument("--paths", nargs="+", default=["pipeline", "dynamic"],
                    choices=("pipeline", "dynamic"))
    ap.add_argument("--machine", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import jax
    import nvidia.dali.experimental.dynamic as ndd
    from nvidia.dali import fn, pipeline_def
    from nvidia.dali.plugin.jax import DALIGenericIterator

    import augjax

    gpu = args.device == "gpu"
    dev = jax.local_devices(backend=args.device)[0]
    b, steps = args.batch, args.steps
    rng = np.random.default_rng(0)
    pool = [rng.integers(0, 256, (b, args.size, args.size, 3), dtype=np.uint8)
            for _ in range(args.pool)]
    seed_sets = [rng.integers(0, 2**30, (b, 2), dtype=np.int32) for _ in range(args.seed_sets)]
    chain, checksum = make_chain(), checksum_fn()

    def which(i):  # the step's pool batch and seed set
        return i % args.pool, i % args.seed_sets

    t0 = time.perf_counter()
    want = {}
    for i in range(np.lcm(args.pool, args.seed_sets)):
        p, s = which(i)
        out = chain(jax.device_put(pool[p], dev),
                    key=augjax.keys_from_seeds(jax.device_put(seed_sets[s], dev)))
        want[(p, s)] = int(checksum(out))
    result = {"date": harness.today(), "machine": harness.machine(gpu, args.machine),
              "versions": harness.versions(gpu), "xla_flags": os.environ.get("XLA_FLAGS", ""),
              "args": vars(args), "reference_s": time.perf_counter() - t0, "paths": {}}

    def run(name, outputs):
        """Checksums every step's output (async), reads them in chunks, counts mismatches."""
        pending, bad, t = [], [], time.perf_counter()
        for i, out in enumerate(outputs):
            pending.append((i, checksum(out)))
            if len(pending) >= args.check_every or i == steps - 1:
                for j, c in pending:
                    if int(c) != want[which(j)]:
                        bad.append(j)
                pending.clear()
            if i == steps - 1:
                break
        secs = time.perf_counter() - t
        result["paths"][name] = {"steps": steps, "mismatches": len(bad), "first": bad[:20],
                                 "seconds": secs, "ms_per_step": secs * 1e3 / steps}
        print(f"{name}: {steps} steps, {len(bad)} mismatches, {secs:.1f} s", flush=True)

    if "pipeline" in args.paths:
        @pipeline_def(batch_size=b, num_threads=4, device_id=0 if gpu else None,
                      prefetch_queue_depth=2)
        def pipe():
            x = fn.external_source(source=lambda info: pool[which(info.iteration)[0]],
                                   batch=True, batch_info=True, layout="HWC")
            s = fn.external_source(source=lambda info: seed_sets[which(info.iteration)[1]],
                                   batch=True, batch_info=True)
            if gpu:
                x, s = x.gpu(), s.gpu()
            return chain(x, seeds=s)

        p = pipe()
        p.build()
        it = DALIGenericIterator([p], ["images"], size=-1)
        run("pipeline", (batch["images"] for batch in it))
        del it, p

    if "dynamic" in args.paths:
        def outputs():
            for i in range(steps):
                pi, si = which(i)
                x = ndd.batch(pool[pi], device=args.device, layout="HWC")  # DALI's own copy
                out = chain(x, seeds=seed_sets[si])
                del x  # DALI may release the input now
                yield augjax.dali.dynamic.as_jax(out)

        run("dynamic", outputs())

    result["corrupted"] = sum(v["mismatches"] for v in result["paths"].values())
    machine = args.machine or args.device
    out = Path(args.out) if args.out else harness.RESULTS / (
        f"dali-soak-{machine}-{harness.today()}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return 1 if result["corrupted"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
