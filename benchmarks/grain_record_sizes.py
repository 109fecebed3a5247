"""Records of many sizes through ``augjax.grain.RandomMap``, as raw JPEGs come: the CPU seconds
of each run of 25 records of new sizes (150..520 pixels a side, as ImageNet's), in a fresh
process with an empty program store, for two chains of the same ops:

- ``crop_first``: ``random_resized_crop(224)`` then ``flip``: a record runs as a list of one
  image, its programs keyed by the canvas bucket of the region the crop reads;
- ``flip_first``: ``flip`` then ``random_resized_crop(224)``: a record runs as a batch of one,
  a program pair per record size (what every chain paid before).

Then the CPU milliseconds per record at one size (all programs compiled), both chains.

    python benchmarks/grain_record_sizes.py --out benchmarks/results/grain-record-sizes-cpu-<date>.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import machine, today, versions  # noqa: E402

CHAINS = ("crop_first", "flip_first")


def child(chain_name: str, runs: int, per_run: int) -> dict:
    import time

    import numpy as np

    import augjax
    import augjax.grain as ag

    crop = augjax.ops.random_resized_crop.bind(size=224)
    flip = augjax.ops.flip.bind(p=0.5)
    chain = augjax.compose(crop, flip) if chain_name == "crop_first" else augjax.compose(flip,
                                                                                         crop)
    transform = ag.RandomMap(chain)
    rng = np.random.default_rng(0)
    seen: set = set()
    run_cpu_s = []
    for _ in range(runs):
        records = []
        while len(records) < per_run:  # sizes not met before
            shape = (int(rng.integers(150, 521)), int(rng.integers(150, 521)), 3)
            if shape not in seen:
                seen.add(shape)
                records.append({"image": rng.integers(0, 256, shape, dtype=np.uint8)})
        t = time.process_time()
        for i, record in enumerate(records):
            transform.random_map(record, np.random.default_rng(i))
        run_cpu_s.append(round(time.process_time() - t, 3))
    record = {"image": rng.integers(0, 256, (375, 500, 3), dtype=np.uint8)}
    for i in range(5):
        transform.random_map(record, np.random.default_rng(i))
    t = time.process_time()
    for i in range(200):
        transform.random_map(record, np.random.default_rng(i))
    one_size_ms = (time.process_time() - t) / 200 * 1000
    return {"cpu_s_per_run_of_new_sizes": run_cpu_s, "records_per_run": per_run,
            "cpu_ms_per_record_one_size": round(one_size_ms, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--per-run", type=int, default=25)
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", choices=CHAINS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.runs, args.per_run)))
        return
    results = {}
    for name in CHAINS:
        with tempfile.TemporaryDirectory(prefix="augjax-sizes-") as cache:
            env = dict(os.environ, AUGJAX_CACHE_DIR=cache, JAX_PLATFORMS="cpu")
            done = subprocess.run([sys.executable, __file__, "--child", name, "--runs",
                                   str(args.runs), "--per-run", str(args.per_run)],
                                  env=env, capture_output=True, text=True, check=False)
            if done.returncode:
                raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
            results[name] = json.loads(done.stdout.strip().splitlines()[-1])
        r = results[name]
        print(f"{name:10s} CPU-s per {args.per_run} records of new sizes: "
              f"{r['cpu_s_per_run_of_new_sizes']}; one size {r['cpu_ms_per_record_one_size']} "
              "CPU-ms a record", flush=True)
    crop, flip = (results[c]["cpu_s_per_run_of_new_sizes"] for c in CHAINS)
    results["later_runs_cpu_s"] = {"crop_first": sum(crop[2:]), "flip_first": sum(flip[2:])}
    out = {"benchmark": "grain_record_sizes", "date": today(), "machine": machine(),
           "versions": versions(), "results": results}
    path = Path(args.out or Path(__file__).resolve().parent / "results" /
                f"grain-record-sizes-cpu-{today()}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
