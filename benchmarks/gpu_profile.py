"""The JAX profiler (CUPTI) on augjax's programs and DALI's pipelines: every GPU kernel per
batch, how busy the GPU is, and what the rest of a batch's time is.

For each case the script runs ``--iters`` batches under ``jax.profiler`` and reads the trace
back (``ProfileData``): the kernels and copies on the GPU's streams, DALI's own kernels
included (CUPTI sees the whole process). It reports, per batch, the wall time, the time the GPU
was busy (the union of all its activity), the number of kernels, and the kernels that take the
most time. Where the busy time is far below the wall time, the batch waits on the host (Python,
DLPack, DALI's scheduling), not on kernels.

    python benchmarks/gpu_profile.py --batch 256 --iters 20 --out profile.json
"""

from __future__ import annotations

import collections
import datetime
import glob
import os
import tempfile
import time

import jax
from pipeline_bench import (
    JITTER,
    MEAN,
    STD,
    _batches,
    _pipeline,
    _sync,
    array_batch,
    array_parser,
    augjax_rows,
    native_rows,
    write_json,
)


def device_activity(xplane_path: str):
    """``(events, line names)``: ``(name, start_ns, duration_ns)`` of every kernel and copy on
    the GPU planes of a trace, and the names of the lines they came from."""
    from jax._src.profiler import ProfileData

    lines = []
    for plane in ProfileData.from_file(xplane_path).planes:
        if plane.name.startswith("/device:GPU"):
            lines.extend(plane.lines)
    # CUPTI's per-stream lines hold the kernels and copies; the "XLA Ops" / "XLA Modules" lines
    # repeat XLA's as annotations and would count them twice
    streams = [line for line in lines if line.name.startswith("Stream")] or lines
    events = [(e.name, e.start_ns, e.duration_ns) for line in streams for e in line.events]
    return events, sorted({line.name for line in streams})


def busy_ns(events) -> float:
    """The length of the union of the events' intervals."""
    total, end = 0.0, -1.0
    for _, start, dur in sorted(events, key=lambda e: e[1]):
        stop = start + dur
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def profile(run, iters: int, sync) -> dict:
    """Runs ``run()`` ``iters`` times under the profiler and summarises the GPU's activity."""
    for _ in range(5):
        run()
    sync()
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        t0 = time.perf_counter()
        for _ in range(iters):
            run()
        sync()
        wall = (time.perf_counter() - t0) * 1e3 / iters
        jax.profiler.stop_trace()
        paths = glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)
        events, line_names = device_activity(max(paths, key=os.path.getmtime))
    per = collections.defaultdict(lambda: [0.0, 0])
    for name, _, dur in events:
        per[name][0] += dur
        per[name][1] += 1
    top = sorted(per.items(), key=lambda kv: -kv[1][0])[:12]
    busy = busy_ns(events) / 1e6 / iters
    return {
        "wall_ms": wall,
        "gpu_busy_ms": busy,
        "busy_fraction": busy / wall if wall else float("nan"),
        "kernels_per_batch": len(events) / iters,
        "lines": line_names[:20],
        "top": [{"name": n[:90], "ms": t / 1e6 / iters, "per_batch": c / iters}
                for n, (t, c) in top],
    }


def _wanted(name: str, only) -> bool:
    return not only or any(o in name for o in only)


def cases(b: int, size: int, only=None):
    """``name -> (run, sync)`` for arrays and pipelines (those whose name contains one of
    ``only``, when given: the others are not built)."""
    import augjax

    ops = augjax.ops
    x, y, keys = array_batch(jax.devices("gpu")[0], b, size)
    chain4 = augjax.compose(
        ops.flip.bind(p=0.5), ops.color_jitter.bind(**JITTER),
        ops.mixup.bind(alpha=0.2, num_classes=10),
        ops.normalize.bind(mean=MEAN, std=STD, chw=True))

    state = {}

    def arrays(fn):
        def run():
            state["out"] = fn()
        return run, lambda: jax.block_until_ready(state.get("out"))

    out = {
        "arrays: color_jitter": arrays(lambda: ops.color_jitter(x, key=keys, **JITTER)),
        "arrays: flip + color_jitter + mixup + normalize": arrays(lambda: chain4(x, y, key=keys)),
    }
    batches, _ = _batches("gpu", b, size)
    native = native_rows("gpu")
    ours, _ = augjax_rows("gpu")
    pipes = {
        "DALI: empty pipeline": (native["empty pipeline"], False),
        "DALI: flip + color_twist": (native["DALI flip + color_twist"], False),
        "DALI: jax_function identity": ours["jax_function identity"],
        "DALI: augjax color_jitter": ours["augjax color_jitter"],
        "DALI: augjax flip + color_jitter + mixup + normalize":
            ours["augjax flip + color_jitter + mixup + normalize"],
    }
    for name, (build, labels) in pipes.items():
        if not _wanted(name, only):
            continue
        p = _pipeline("gpu", b, batches, build, labels=labels)
        out[name] = (p.run, lambda: _sync("gpu"))
    return out


def main(argv=None) -> int:
    ap = array_parser(__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args(argv)
    import nvidia.dali

    import augjax

    result = {"date": datetime.date.today().isoformat(), "devices": str(jax.devices()),
              "versions": {"jax": jax.__version__, "dali": nvidia.dali.__version__,
                           "augjax": augjax.__version__}, "batches": {}}
    for b in args.batch:
        rows = {}
        for name, (run, sync) in cases(b, args.size, args.only).items():
            if not _wanted(name, args.only):
                continue
            r = rows[name] = profile(run, args.iters, sync)
            print(f"B={b:<5} {name:<52} wall {r['wall_ms']:7.3f} ms  GPU busy "
                  f"{r['gpu_busy_ms']:7.3f} ms ({100 * r['busy_fraction']:4.1f}%)  "
                  f"{r['kernels_per_batch']:5.1f} kernels/batch", flush=True)
            for t in r["top"][:6]:
                print(f"        {t['ms']:7.4f} ms  x{t['per_batch']:4.1f}  {t['name']}")
        result["batches"][str(b)] = rows
    write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
