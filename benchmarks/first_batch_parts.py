"""Where a fresh process's first batch of the timm-style chain goes, cold and warm, split into
the first transfer of the inputs (on a GPU: JAX's device-memory preallocation), the first key,
the first call's dispatch (trace or load, compile or cache read) and its run; for several
environment variants, each with its own fresh cache folder.

    python benchmarks/first_batch_parts.py                       # B=64 x 224 x 224, JAX's default backend
    python benchmarks/first_batch_parts.py --batch 16 --variants default

Each row is a new interpreter (cold: empty cache folder; warm, warm2: the same folder again).
"process->first" runs from the parent's spawn of the child to the first batch's output.
Results of the H200 lease of 2026-12-02: benchmarks/results/first-batch-parts-gpu-h200-2026-12-02.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

VARIANTS = {
    "default": {},
    "no_prealloc": {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
    "eager_modules": {"CUDA_MODULE_LOADING": "EAGER"},
    "no_cmd_buffer": {"XLA_FLAGS": "--xla_gpu_enable_command_buffer="},
}


def child(batch: int, size: int) -> dict[str, float]:
    import jax

    sys.path.insert(0, os.path.dirname(__file__))
    import first_batch as fb

    jax.devices()
    chain = fb.build_chain()
    x, y = fb.data(batch, size)
    t1 = time.time()
    xd, yd = jax.device_put(x), jax.device_put(y)
    jax.block_until_ready(xd)
    t2 = time.time()
    k = jax.block_until_ready(jax.random.key(0))
    t3 = time.time()
    out = chain(xd, yd, key=k)
    t4 = time.time()
    jax.block_until_ready(out)
    t5 = time.time()
    jax.block_until_ready(chain(xd, yd, key=jax.random.key(1)))
    t6 = time.time()
    return {"put": t2 - t1, "key": t3 - t2, "dispatch": t4 - t3, "run": t5 - t4,
            "second": t6 - t5, "end_first": t5}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--variants", nargs="+", choices=tuple(VARIANTS),
                    default=["default", "no_prealloc"])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.batch, args.size)))
        return
    for name in args.variants:
        with tempfile.TemporaryDirectory(prefix="augjax-parts-") as cache:
            for phase in ("cold", "warm", "warm2"):
                env = {**os.environ, **VARIANTS[name], "AUGJAX_CACHE_DIR": cache}
                start = time.time()
                r = subprocess.run([sys.executable, __file__, "--child", "--batch",
                                    str(args.batch), "--size", str(args.size)],
                                   env=env, capture_output=True, text=True, check=False)
                if r.returncode:
                    print(f"{name} {phase}: failed\n{r.stderr[-2000:]}", flush=True)
                    break
                d = json.loads(r.stdout.strip().splitlines()[-1])
                print(f"{name:14s} {phase:5s}: process->first {d['end_first'] - start:.2f} s | "
                      f"put {d['put']:.3f} key {d['key']:.3f} dispatch {d['dispatch']:.3f} "
                      f"run {d['run']:.3f} | second call {1e3 * d['second']:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
