"""augjax vs DALI native operators vs pure JAX, in the same run (GPU or CPU).

    python benchmarks/pipeline_bench.py --device gpu --batch 32 256 1024 --out results.json
    python benchmarks/pipeline_bench.py --device cpu --batch 64 --size 224

Every row is milliseconds per batch of B x S x S x 3 uint8 images (median of ``--reps``
repetitions of ``--iters`` pipeline runs, after warm-up). Pipeline rows measure DALI pipeline
throughput (``pipe.run()`` in a loop, prefetch queue 2, data from ``external_source`` cycling
through 4 batches already on the device); "jax:" rows time the same augjax programs called on
``jax.Array`` batches (dispatch pipelined, one sync at the end), i.e. the kernel; "floor" is the
time to read and write the batch once at the measured copy bandwidth. Ratios are taken against
DALI's native rows of the same run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import time

import numpy as np

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
JITTER = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)
#: The same ranges as the DALI color_twist rows (hue 0.1 turns = 36 degrees).
TWIST = dict(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-36.0, 36.0))
#: DALI executor for every pipeline of a run: "dynamic" (DALI 2's default) or "legacy"
#: (``exec_dynamic=False``, the async pipelined executor).
EXECUTOR = {"name": "dynamic"}


def _batches(device: str, b: int, s: int):
    rng = np.random.default_rng(0)
    host = [rng.integers(0, 256, (b, s, s, 3), dtype=np.uint8) for _ in range(4)]
    if device == "gpu":
        import cupy as cp

        return [cp.asarray(h) for h in host], host
    return host, host


def _pipeline(device: str, b: int, batches, build, labels: bool = False):
    from nvidia.dali import fn, pipeline_def

    state = {"i": 0}

    def source():
        state["i"] += 1
        return batches[state["i"] % len(batches)]

    lab = np.arange(b, dtype=np.int32).reshape(b, 1) % 10

    @pipeline_def(batch_size=b, num_threads=4, device_id=0 if device == "gpu" else None,
                  prefetch_queue_depth=2, seed=0,
                  exec_dynamic=EXECUTOR["name"] == "dynamic")
    def pipe():
        x = fn.external_source(source=source, batch=True, layout="HWC",
                               device="gpu" if device == "gpu" else "cpu")
        if labels:
            y = fn.external_source(source=lambda: lab, batch=True)
            return build(x, y)
        return build(x)

    p = pipe()
    p.build()
    return p


def _sync(device: str) -> None:
    if device == "gpu":
        import cupy as cp

        cp.cuda.Device().synchronize()


def time_pipeline(device, p, iters, reps, warmup=10) -> float:
    for _ in range(warmup):
        p.run()
    _sync(device)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            p.run()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(times)


def time_jax(fn, iters, reps, warmup=3) -> float:
    for _ in range(warmup):
        out = fn()
    _block(out)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            out = fn()
        _block(out)
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(times)


def array_parser(description: str) -> argparse.ArgumentParser:
    """The options of the scripts that time programs on arrays (kernel_lab, chain_profile, the
    probes and labs)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--batch", type=int, nargs="+", default=[256])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    return ap


def array_batch(device, b: int, size: int):
    """``(images, labels, keys)`` on ``device`` (a ``jax.Device``): B x size x size x 3 uint8
    from a fixed seed, labels ``i % 10``, one key per sample."""
    import jax

    rng = np.random.default_rng(0)
    x = jax.device_put(rng.integers(0, 256, (b, size, size, 3), dtype=np.uint8), device)
    y = jax.device_put(np.arange(b, dtype=np.int32) % 10, device)
    keys = jax.device_put(jax.random.split(jax.random.key(0), b), device)
    return x, y, keys


def write_json(path, result) -> None:
    """``result`` as indented JSON at ``path`` (nothing when ``path`` is None)."""
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)


def _block(out):
    import jax

    jax.block_until_ready(out)


def copy_bandwidth(device: str) -> float:
    """Bytes read + written per second by a large device copy."""
    import jax
    import jax.numpy as jnp

    dev = jax.devices(device)[0]
    x = jax.device_put(jnp.zeros((256 * 2**20,), jnp.uint8), dev)
    copy = jax.jit(lambda a: a + jnp.uint8(1))
    t = time_jax(lambda: copy(x), 20, 3)
    return 2 * x.size / (t / 1e3)


def native_rows(device: str):
    from nvidia.dali import fn, types

    def cpu_param(**kw):
        return fn.random.uniform(**kw)

    def color_twist(x):
        return fn.color_twist(
            x,
            brightness=cpu_param(range=[0.6, 1.4]),
            contrast=cpu_param(range=[0.6, 1.4]),
            saturation=cpu_param(range=[0.6, 1.4]),
            hue=cpu_param(range=[-36.0, 36.0]),
        )

    return {
        "empty pipeline": lambda x: x,
        "DALI flip": lambda x: fn.flip(x, horizontal=fn.random.coin_flip()),
        "DALI color_twist": color_twist,
        "DALI flip + color_twist": lambda x: color_twist(
            fn.flip(x, horizontal=fn.random.coin_flip())),
        "DALI crop_mirror_normalize": lambda x: fn.crop_mirror_normalize(
            x, mirror=fn.random.coin_flip(), dtype=types.FLOAT, output_layout="CHW",
            mean=[255 * m for m in MEAN], std=[255 * s for s in STD]),
    }


def augjax_rows(device: str):
    import jax
    from nvidia.dali.plugin.jax import fn as jax_fn

    import augjax

    ops = augjax.ops
    chain_fc = augjax.compose(ops.flip.bind(p=0.5), ops.color_jitter.bind(**JITTER))
    chain_ft = augjax.compose(ops.flip.bind(p=0.5), ops.color_twist.bind(**TWIST))
    chain_fn = augjax.compose(ops.flip.bind(p=0.5), ops.normalize.bind(mean=MEAN, std=STD,
                                                                       chw=True))
    chain4 = augjax.compose(
        ops.flip.bind(p=0.5), ops.color_jitter.bind(**JITTER),
        ops.mixup.bind(alpha=0.2, num_classes=10),
        ops.normalize.bind(mean=MEAN, std=STD, chw=True))
    identity = jax_fn.jax_function(jax.jit(lambda x: x), output_layouts="HWC")
    return {
        "jax_function identity": (lambda x: identity(x), False),
        "augjax flip": (lambda x: ops.flip(x, p=0.5), False),
        "augjax color_jitter": (lambda x: ops.color_jitter(x, **JITTER), False),
        "augjax flip + color_jitter (one crossing)": (lambda x: chain_fc(x), False),
        "augjax color_twist": (lambda x: ops.color_twist(x, **TWIST), False),
        "augjax flip + color_twist (one crossing)": (lambda x: chain_ft(x), False),
        "augjax flip + normalize CHW (one crossing)": (lambda x: chain_fn(x), False),
        "augjax flip + color_jitter + mixup + normalize": (lambda x, y: chain4(x, y), True),
        "augjax the same 4 ops as 4 crossings": (lambda x, y: _separately(chain4, x, y), True),
    }, {"flip+cj": chain_fc, "flip+ct": chain_ft, "flip+norm": chain_fn, "chain4": chain4}


def _separately(chain, x, y):
    """The ops of ``chain`` as one DALI operator each (same keys: each keeps its position)."""
    import augjax

    for i in range(len(chain)):
        step = augjax.compose(chain[i], start=chain.start + i)
        if "labels" in step.inputs:
            x, y = step(x, y)
        else:
            x = step(x)
    return x, y


def jax_rows(device: str, host_batch, chains):
    import jax

    import augjax

    dev = jax.devices(device)[0]
    x = jax.device_put(host_batch, dev)
    b = x.shape[0]
    y = jax.device_put(np.arange(b, dtype=np.int32) % 10, dev)
    keys = jax.device_put(jax.random.split(jax.random.key(0), b), dev)
    ops = augjax.ops
    return {
        "jax: flip": lambda: ops.flip(x, key=keys, p=0.5),
        "jax: color_jitter": lambda: ops.color_jitter(x, key=keys, **JITTER),
        "jax: flip + color_jitter": lambda: chains["flip+cj"](x, key=keys),
        "jax: color_twist": lambda: ops.color_twist(x, key=keys, **TWIST),
        "jax: flip + color_twist": lambda: chains["flip+ct"](x, key=keys),
        "jax: mixup": lambda: ops.mixup(x, y, key=keys, alpha=0.2, num_classes=10),
        "jax: flip + normalize CHW": lambda: chains["flip+norm"](x, key=keys),
        "jax: flip + color_jitter + mixup + normalize": lambda: chains["chain4"](x, y, key=keys),
    }


def run(device: str, batch: int, size: int, iters: int, reps: int, only=None
        ) -> dict[str, float]:
    batches, host = _batches(device, batch, size)
    rows: dict[str, float] = {}
    keep = (lambda name: any(o in name for o in only)) if only else (lambda name: True)
    for name, build in native_rows(device).items():
        if not keep(name):
            continue
        rows[name] = time_pipeline(device, _pipeline(device, batch, batches, build), iters, reps)
        print(f"  B={batch:<5} {name:<48} {rows[name]:9.3f} ms", flush=True)
    aug, chains = augjax_rows(device)
    for name, (build, labels) in aug.items():
        if not keep(name):
            continue
        p = _pipeline(device, batch, batches, build, labels=labels)
        rows[name] = time_pipeline(device, p, iters, reps)
        print(f"  B={batch:<5} {name:<48} {rows[name]:9.3f} ms", flush=True)
    for name, fn in jax_rows(device, host[0], chains).items():
        if not keep(name):
            continue
        rows[name] = time_jax(fn, iters, reps)
        print(f"  B={batch:<5} {name:<48} {rows[name]:9.3f} ms", flush=True)
    return rows


def versions() -> dict[str, str]:
    import jax
    import nvidia.dali

    import augjax

    return {"augjax": augjax.__version__, "dali": nvidia.dali.__version__,
            "jax": jax.__version__, "python": platform.python_version(),
            "devices": str(jax.devices())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--batch", type=int, nargs="+", default=[32, 256, 1024])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--machine", default=platform.node())
    ap.add_argument("--only", nargs="*", default=None, help="rows whose name contains one of these")
    ap.add_argument("--executor", choices=("dynamic", "legacy"), default="dynamic",
                    help="DALI executor of every pipeline (legacy: exec_dynamic=False)")
    args = ap.parse_args(argv)
    EXECUTOR["name"] = args.executor
    bw = copy_bandwidth(args.device)
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": args.machine,
        "device": args.device,
        "executor": args.executor,
        "versions": versions(),
        "size": args.size,
        "iters": args.iters,
        "reps": args.reps,
        "copy_bandwidth_GBps": bw / 1e9,
        "batches": {},
    }
    for b in args.batch:
        rows = run(args.device, b, args.size, args.iters, args.reps, args.only)
        rows["floor (read + write once)"] = 2 * b * args.size * args.size * 3 / bw * 1e3
        result["batches"][str(b)] = rows
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
    print_table(result)
    return 0


def print_table(result: dict) -> None:
    bs = list(result["batches"])
    names = list(result["batches"][bs[0]])
    print(f"\n{result['device']} {result['machine']} {result['versions']['devices']} "
          f"executor {result.get('executor', 'dynamic')}  ms/batch")
    print(f"{'':<48}" + "".join(f"{'B=' + b:>12}" for b in bs))
    for n in names:
        print(f"{n:<48}" + "".join(f"{result['batches'][b][n]:12.3f}" for b in bs))
    print("\nratios (lower is better for augjax):")
    for b in bs:
        r = result["batches"][b]
        pairs = [
            ("augjax flip / DALI flip", "augjax flip", "DALI flip"),
            ("augjax color_jitter / DALI color_twist", "augjax color_jitter", "DALI color_twist"),
            ("augjax color_twist / DALI color_twist", "augjax color_twist", "DALI color_twist"),
            ("augjax flip+color_twist / DALI flip+color_twist",
             "augjax flip + color_twist (one crossing)", "DALI flip + color_twist"),
            ("augjax flip+cj / DALI flip+color_twist",
             "augjax flip + color_jitter (one crossing)", "DALI flip + color_twist"),
            ("augjax flip+normalize / DALI cmn",
             "augjax flip + normalize CHW (one crossing)", "DALI crop_mirror_normalize"),
            ("augjax 4-op chain / DALI flip+color_twist",
             "augjax flip + color_jitter + mixup + normalize", "DALI flip + color_twist"),
        ]
        txt = ", ".join(f"{label} {r[a] / r[c]:.2f}" for label, a, c in pairs if a in r and c in r)
        if "jax_function identity" in r and "empty pipeline" in r:
            txt += f"; bare crossing {r['jax_function identity'] - r['empty pipeline']:.3f} ms"
        four = r.get("augjax the same 4 ops as 4 crossings")
        one = r.get("augjax flip + color_jitter + mixup + normalize")
        if four and one:
            txt += f"; 4-op chain one crossing / four crossings {one / four:.2f}"
        print(f"  B={b}: {txt}")


if __name__ == "__main__":
    raise SystemExit(main())
