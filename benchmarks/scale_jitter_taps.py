"""scale_jitter's resample in its three forms, on the same inputs in one process, through the
op's own program (``op.apply``: augjax's CPU compile options): ``dense``, the two weight
matrices multiplied by XLA:CPU's dot (before 92fc09a, 2026-12-06: its float32 sums follow the
CPU's vector width); ``taps``, every sample summing every tap the smallest scale needs, in
order (92fc09a); ``by_image``, the op as shipped (each image reads only the taps that weigh
something, ``augjax.catalog._by_image.jitter_branching``: the taps form's bits). The old forms
are swapped in as the op's kernel (``dataclasses.replace``). Per case: the first call
(compile), then ``--rounds`` rounds of the forms in turn, each the median of ``--reps`` calls;
the minimum over rounds is kept (the machine is shared). Prints a table, checks that
``by_image`` has the taps form's bits, and writes JSON::

    python benchmarks/scale_jitter_taps.py --out benchmarks/results/scale-jitter-taps-cpu-<date>.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from augjax import ops

from harness import cpu_model  # noqa: E402  (benchmarks/ is the script's folder)
from augjax.kernels.pixels import is_int
from augjax.kernels.resize import window_weights
from augjax.kernels.warp import check_fill
from augjax.kernels.window import read_window_taps, taps_needed

#: name: (batch, input side, target_size); uint8 and float32 each.
CASES = {"224->224 B=16": (16, 224, (224, 224)), "640->1024 B=4": (4, 640, (1024, 1024)),
         "224->8x10 B=16 (kit)": (16, 224, (8, 10))}


def dense(image, params, *, target_size, scale_range, size, fill, interpolation, antialias):
    """The kernel before 92fc09a: dense weight matrices, two einsums."""
    h, w, _ = image.shape
    oh, ow = tuple(target_size if size is None else size)
    nh, nw = params["resized"][0], params["resized"][1]
    top, left = params["offset"][0], params["offset"][1]
    wy = window_weights(oh, top, nh, h, 0, h, interpolation, antialias)
    wx = window_weights(ow, left, nw, w, 0, w, interpolation, antialias)
    x = jnp.einsum("ow,hwc->hoc", wx, image.astype(jnp.float32), precision="highest")
    if is_int(image.dtype):
        x = jnp.floor(x + 0.5)
    x = jnp.einsum("oh,hwc->owc", wy, x, precision="highest")
    inside = ((jnp.arange(oh) < nh - top)[:, None] & (jnp.arange(ow) < nw - left)[None, :])
    value = check_fill(fill, image, "scale_jitter")
    if is_int(image.dtype):
        x = jnp.clip(jnp.floor(x + 0.5), 0.0, 255.0)
        value = jnp.clip(jnp.round(value), 0.0, 255.0)
    return jnp.where(inside[..., None], x, value).astype(image.dtype)


def taps(image, params, *, target_size, scale_range, size, fill, interpolation, antialias):
    """The kernel of 92fc09a: every sample reads every tap the smallest scale needs."""
    h, w, _ = image.shape
    oh, ow = tuple(target_size if size is None else size)
    value = check_fill(fill, image, "scale_jitter")
    least = min(target_size[0] / h, target_size[1] / w) * scale_range[0]
    count = tuple(taps_needed(n / max(1.0, math.floor(n * least) - 1.0), interpolation,
                              antialias) for n in (h, w))
    box = jnp.array([0, 0, h, w], jnp.int32)
    return read_window_taps(image, box, params["resized"], params["offset"], (oh, ow), value,
                            interpolation, antialias, count)


def run_case(batch: int, side: int, target, dtype: str, reps: int, rounds: int) -> dict:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (batch, side, side, 3), dtype=np.uint8)
    if dtype == "float32":
        x = x.astype(np.float32) / np.float32(255)
    spec = ops.scale_jitter
    forms = {"dense": dataclasses.replace(spec, kernel=dense), "taps":
             dataclasses.replace(spec, kernel=taps), "by_image": spec}
    steps = {k: s.bind(target_size=target) for k, s in forms.items()}
    params = steps["by_image"].sample(x, key=jax.random.key(1))
    row: dict = {}
    outs = {}
    for name, step in steps.items():
        t = time.perf_counter()
        outs[name] = np.asarray(step.apply(x, params=params))
        row[f"{name}_first_s"] = time.perf_counter() - t
    best = {name: math.inf for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                jax.block_until_ready(step.apply(x, params=params))
                times.append(time.perf_counter() - t)
            best[name] = min(best[name], 1e3 * float(np.median(times)))
    for name in steps:
        row[f"{name}_ms"] = best[name]
    row["by_image_vs_dense"] = best["by_image"] / best["dense"]
    row["by_image_vs_taps"] = best["by_image"] / best["taps"]
    row["by_image_bits_equal_taps"] = bool(np.array_equal(outs["by_image"].view(np.uint8),
                                                          outs["taps"].view(np.uint8)))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dtypes", default="uint8,float32")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = {}
    print(f"{'case':34s} {'dense ms':>9s} {'taps ms':>9s} {'by_image':>9s} {'/dense':>7s} "
          f"{'first s (d/t/b)':>18s} bits")
    for case in args.cases.split(","):
        for dtype in args.dtypes.split(","):
            r = run_case(*CASES[case], dtype, args.reps, args.rounds)
            rows[f"{case} {dtype}"] = r
            print(f"{case + ' ' + dtype:34s} {r['dense_ms']:9.1f} {r['taps_ms']:9.1f} "
                  f"{r['by_image_ms']:9.1f} {r['by_image_vs_dense']:7.2f} "
                  f"{r['dense_first_s']:6.1f}/{r['taps_first_s']:4.1f}/"
                  f"{r['by_image_first_s']:4.1f} {r['by_image_bits_equal_taps']}", flush=True)
    if args.out:
        meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()}-core CPU",
                "cpu": cpu_model(), "nproc": os.cpu_count(), "jax": jax.__version__,
                "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__") else None,
                "python": platform.python_version(), "reps": args.reps, "rounds": args.rounds,
                "load": os.getloadavg()[0],
                "statistic": "min over rounds of the median of reps calls (op.apply, after "
                             "its first call)",
                "env": {k: os.environ.get(k) for k in ("AUGJAX_COMPILATION_CACHE",
                                                       "AUGJAX_PROGRAM_CACHE")}}
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
