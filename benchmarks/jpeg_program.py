"""The JPEG round trip's program (augjax.kernels.jpeg) against the one of another commit: the
equations traced, the XLA compile (CPU seconds of a fresh ``jit``), the run time (median of
alternating calls in one process) and whether the outputs are the same bits.

    python benchmarks/jpeg_program.py --old 1cc6230 --out benchmarks/results/jpeg-program-cpu.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("AUGJAX_PROGRAM_CACHE", "0")
os.environ.setdefault("AUGJAX_COMPILATION_CACHE", "0")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from augjax.kernels import jpeg as new  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [(8, 64, 64, 3), (8, 37, 53, 3), (8, 32, 32, 1), (64, 64, 64, 3), (16, 224, 224, 3)]


def _old_module(rev: str):
    """The kernel module of commit ``rev`` (or of the file ``rev`` names, where there is no
    git history: the GPU machine gets a copy made with ``git show REV:augjax/kernels/jpeg.py``)."""
    if Path(rev).is_file():
        source = Path(rev).read_text(encoding="utf-8")
    else:
        source = subprocess.run(["git", "show", f"{rev}:augjax/kernels/jpeg.py"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "jpeg_old.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("jpeg_old", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True,
                        help="the commit to compare with, or a copy of its augjax/kernels/jpeg.py")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out")
    args = parser.parse_args()
    forms = {"old": _old_module(args.old), "new": new}
    rng = np.random.default_rng(0)
    rows = []
    for shape in SHAPES:
        x = rng.integers(0, 256, shape, dtype=np.uint8)
        q = rng.integers(1, 101, shape[0]).astype(np.int32)
        row = {"shape": list(shape)}
        compiled = {}
        for name, module in forms.items():
            fn = jax.vmap(module.jpeg_roundtrip)
            row[f"{name}_eqns"] = len(jax.make_jaxpr(fn)(x, q).eqns)
            lowered = jax.jit(fn).lower(x, q)
            start = time.process_time()
            compiled[name] = lowered.compile()
            row[f"{name}_compile_cpu_s"] = round(time.process_time() - start, 3)
        outs = {name: np.asarray(c(x, q)) for name, c in compiled.items()}
        row["same_bits"] = bool(np.array_equal(outs["old"], outs["new"]))
        times = {name: [] for name in compiled}
        for _ in range(args.rounds):
            for name, c in compiled.items():
                start = time.perf_counter()
                c(x, q).block_until_ready()
                times[name].append(time.perf_counter() - start)
        for name, ts in times.items():
            row[f"{name}_run_ms"] = round(float(np.median(ts)) * 1e3, 3)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "old": args.old, "jax": jax.__version__,
                       "python": sys.version.split()[0], "device": jax.devices()[0].device_kind,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
