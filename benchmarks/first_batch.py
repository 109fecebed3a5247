"""Time to the first batch of the timm-style chain in a fresh process: cold (empty compilation
cache) and warm (a second process finding the first one's executables), on arrays and in a DALI
CPU pipeline; and a partial batch (a smaller batch after a full one: padded, no compile).

    python benchmarks/first_batch.py                  # both paths, B=16 x 224 x 224
    python benchmarks/first_batch.py --path arrays --batch 8 --size 64 --json out.json

Each measurement is a child process (``--child``) given its own ``AUGJAX_CACHE_DIR`` (a fresh
temporary directory shared by the cold and the warm child). "first batch" is the time from the
first call (arrays) or the first ``pipe.run()`` (DALI) to the output, after imports and building
the chain/pipeline; ``process`` is the child's whole wall time to that point, imports included.
The chain: flip, ``from_timm("rand-m9-mstd0.5-inc1")``, color_jitter, normalize to float CHW,
random_erasing, mixup_cutmix (1000 classes).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

T0 = time.perf_counter()


def build_chain():
    import augjax
    from augjax import ops

    return augjax.compose(
        ops.flip.bind(p=0.5),
        augjax.from_timm("rand-m9-mstd0.5-inc1"),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
        ops.normalize.bind(chw=True),
        ops.random_erasing.bind(p=0.25),
        ops.mixup_cutmix.bind(num_classes=1000),
    )


def data(batch: int, size: int):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (batch, size, size, 3), dtype=np.uint8)
    y = rng.integers(0, 1000, batch).astype(np.int32)
    return x, y


EVENTS = {"/jax/compilation_cache/cache_hits": "hits",
          "/jax/compilation_cache/cache_misses": "compiled"}


def count_cache_events() -> dict[str, int]:
    """Counts JAX's persistent-cache hits and the programs compiled afresh (and written)."""
    import jax

    counts = dict.fromkeys(EVENTS.values(), 0)

    def listen(event: str, **_: object) -> None:
        if event in EVENTS:
            counts[EVENTS[event]] += 1

    jax.monitoring.register_event_listener(listen)
    return counts


def child_arrays(batch: int, size: int, partial: int) -> dict[str, float]:
    import jax

    import augjax

    chain = build_chain()
    x, y = data(batch, size)
    events = count_cache_events()
    t = time.perf_counter()
    jax.block_until_ready(chain(x, y, key=jax.random.key(0)))
    first = time.perf_counter() - t
    first_events = dict(events)
    process = time.perf_counter() - T0
    t = time.perf_counter()
    jax.block_until_ready(chain(x, y, key=jax.random.key(1)))
    steady = time.perf_counter() - t
    traces = augjax.trace_count()
    t = time.perf_counter()
    jax.block_until_ready(chain(x[:partial], y[:partial], key=jax.random.key(2)))
    part = time.perf_counter() - t
    return {"first_batch_s": first, "process_s": process, "steady_batch_s": steady,
            "partial_batch_s": part, "partial_traces": augjax.trace_count() - traces,
            "first_cache_hits": first_events["hits"],
            "first_compiled": first_events["compiled"]}


def child_dali(batch: int, size: int, partial: int) -> dict[str, float]:
    import numpy as np
    from nvidia.dali import fn, pipeline_def, types

    import augjax

    chain = build_chain()
    x, y = data(batch, size)
    sizes = itertools.chain([batch, batch], itertools.repeat(partial))  # DALI may prefetch

    def source():
        n = next(sizes)
        return list(x[:n]), list(y[:n, None])

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None, seed=0)
    def pipe():
        images, labels = fn.external_source(source, num_outputs=2, batch=True,
                                            layout=["HWC", ""], dtype=[types.UINT8, types.INT32])
        return chain(images, labels)

    events = count_cache_events()
    p = pipe(prefetch_queue_depth=1)
    p.build()
    t = time.perf_counter()
    images, _ = p.run()
    np.array(images.as_tensor())
    first = time.perf_counter() - t
    first_events = dict(events)
    process = time.perf_counter() - T0
    t = time.perf_counter()
    np.array(p.run()[0].as_tensor())
    steady = time.perf_counter() - t
    traces = augjax.trace_count()
    t = time.perf_counter()
    np.array(p.run()[0].as_tensor())
    part = time.perf_counter() - t
    return {"first_batch_s": first, "process_s": process, "steady_batch_s": steady,
            "partial_batch_s": part, "partial_traces": augjax.trace_count() - traces,
            "first_cache_hits": first_events["hits"],
            "first_compiled": first_events["compiled"]}


def run_child(path: str, args: argparse.Namespace, cache: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if cache is None:
        env["AUGJAX_COMPILATION_CACHE"] = "0"
    else:
        env["AUGJAX_CACHE_DIR"] = cache
    cmd = [sys.executable, __file__, "--child", path, "--batch", str(args.batch),
           "--size", str(args.size), "--partial", str(args.partial)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"child {path} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", choices=("arrays", "dali", "both"), default="both")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--partial", type=int, default=5, help="size of the partial batch")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--child", choices=("arrays", "dali"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        fn = child_arrays if args.child == "arrays" else child_dali
        print(json.dumps(fn(args.batch, args.size, args.partial)))
        return
    paths = ("arrays", "dali") if args.path == "both" else (args.path,)
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="augjax-cache-") as cache:
        for path in paths:
            cold = run_child(path, args, cache)
            warm = run_child(path, args, cache)
            results[path] = {"cold": cold, "warm": warm}
            ratio = cold["first_batch_s"] / warm["first_batch_s"]
            print(f"{path:6s} first batch: cold {cold['first_batch_s']:.2f} s, warm "
                  f"{warm['first_batch_s']:.2f} s ({ratio:.1f}x);"
                  f" process to first batch: cold {cold['process_s']:.2f} s, warm "
                  f"{warm['process_s']:.2f} s; steady {1e3 * warm['steady_batch_s']:.1f} ms; "
                  f"partial batch of {args.partial}: {1e3 * warm['partial_batch_s']:.0f} ms, "
                  f"{warm['partial_traces']} traces; programs compiled for the first batch: "
                  f"cold {cold['first_compiled']}, warm {warm['first_compiled']} "
                  f"({warm['first_cache_hits']} loaded)", flush=True)
    if args.json:
        meta = {"batch": args.batch, "size": args.size, "partial": args.partial,
                "load_average_1min": os.getloadavg()[0], "cpu_count": os.cpu_count()}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
