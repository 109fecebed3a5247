"""The JAX profiler (CUPTI) around a step: every GPU kernel and copy per batch, how busy the GPU
is, and the kernels that take the most time. Where the busy time is far below the wall time, the
batch waits on the host (Python, DLPack, DALI's scheduling), not on kernels. CUPTI sees the whole
process, so DALI's own kernels are included.

``e2e.py --profile`` calls :func:`profile` on a few rows; it is a library, not a script.
"""

from __future__ import annotations

import collections
import glob
import os
import tempfile
import time

import jax


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
