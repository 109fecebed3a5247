"""What XLA:CPU's compile options would save the suite, and whether they keep the bits.

Every registered op (``augjax demo``'s parameters, a batch of 8 64x64 uint8 images) is run once
in a fresh process per option set, with augjax's caches off (``AUGJAX_PROGRAM_CACHE=0``,
``AUGJAX_COMPILATION_CACHE=0``) so that every program compiles. Reported per set: the process'
CPU seconds for the 59 first calls, JAX's backend-compile seconds, and a digest of every output
(the same digest as XLA's defaults = the same bits). Sets alternate, ``--reps`` rounds.

    python benchmarks/compile_options.py --reps 2 --out benchmarks/results/compile-options-cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SETS = ["", "--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false",
        "--xla_cpu_parallel_codegen_split_count=1",
        "--xla_cpu_enable_concurrency_optimized_scheduler=false"]

CHILD = r"""
import collections, hashlib, json, time
import jax, numpy as np, augjax
from augjax import compose
from augjax._demo.params import demo_params
durations = collections.Counter()
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **kw: durations.__setitem__(event, durations[event] + secs))
x = np.random.default_rng(0).integers(0, 256, (8, 64, 64, 3), dtype=np.uint8)
labels = np.arange(8, dtype=np.int32) % 5
digest = hashlib.sha256()
start = time.process_time()
for name in augjax.list_ops():
    spec = augjax.get_op(name)
    chain = compose(spec.bind(**demo_params(spec, num_classes=5, size=64)[0]))
    out = chain(*((x, labels) if "labels" in chain.inputs else (x,)), key=jax.random.key(1))
    for leaf in jax.tree_util.tree_leaves(out):
        digest.update(np.asarray(leaf).tobytes())
print(json.dumps({"ops": len(augjax.list_ops()), "cpu_s": time.process_time() - start,
                  "backend_compile_s": durations["/jax/core/compile/backend_compile_duration"],
                  "digest": digest.hexdigest()[:16]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    env = dict(os.environ, AUGJAX_PROGRAM_CACHE="0", AUGJAX_COMPILATION_CACHE="0")
    rows = []
    for rep in range(args.reps):
        for flags in SETS:
            res = subprocess.run([sys.executable, "-c", CHILD], env=dict(env, XLA_FLAGS=flags),
                                 capture_output=True, text=True, check=True)
            row = dict(json.loads(res.stdout.strip().splitlines()[-1]), flags=flags, rep=rep)
            rows.append(row)
            print(f"{flags or '(defaults)':58s} {row['cpu_s']:6.1f} CPU-s  compile "
                  f"{row['backend_compile_s']:5.1f} s  digest {row['digest']}", flush=True)
    default = {r["digest"] for r in rows if not r["flags"]}
    for row in rows:
        row["same_bits_as_defaults"] = row["digest"] in default
    if args.out:
        import jax

        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"jax": jax.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
