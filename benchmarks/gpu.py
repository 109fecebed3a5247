"""The GPU benchmark: one script, one result file, three modes.

    python benchmarks/gpu.py                          # arrays, dali, e2e (< 8 minutes)
    python benchmarks/gpu.py --quick                  # fewer iterations and rows (~2 minutes)
    python benchmarks/gpu.py --modes arrays --ops flip equalize
    python benchmarks/gpu.py --modes dali --all-ops   # every op with a DALI peer, B=32/256/1024
    python benchmarks/gpu.py --device cpu --quick --modes arrays dali   # smoke test on a CPU

Modes (every row in its own try/except: a failed row records its error, the others run):

- ``arrays``: B=256 x 224x224x3 uint8 on the GPU, ms per call: the copy floor (XLA ``x + 1``),
  every registered op (core and installed packs) and every policy as augjax programs on
  ``jax.Array`` batches, next to the same op's peers measured in the same run: DALI's native
  operator (a pipeline fed from GPU memory, ms per batch; the empty pipeline is a row of its own),
  torchvision v2 on CUDA tensors (NCHW uint8, ms per call) and, where it is installed, kornia
  (the same uint8 tensors, converted to float and back inside each call).
- ``dali``: through DALI pipelines at B=32/256/1024 (ms per batch): the empty pipeline, the bare
  ``jax_function`` crossing, augjax's RandAugment / TrivialAugmentWide against DALI's
  ``auto_aug``, augjax's ``random_resized_crop`` and a few ops against DALI's operators
  (``--all-ops``: every op with a DALI peer).
- ``e2e``: ``benchmarks/e2e.py`` (files -> nvJPEG -> random resized crop -> augmentation,
  images/s, both executors, B=64/256/1024); its own file ``results/e2e-<machine>-<date>.json``
  keeps its keys (``decode_crop_img_s``, ``augjax_chain_img_s``, ``augjax_randaug_img_s``,
  ``dali_randaug_img_s`` and the full table); this file holds its summary.

Writes ``benchmarks/results/gpu-<machine>-<date>.json`` (machine ``h200`` by default on an
H200): ``date``, ``machine``, ``versions``
(augjax, jax, jaxlib, DALI, CUDA, driver, Python, torch...), ``config`` (modes, batch sizes,
iterations), ``rows`` (``arrays/op/<name>``, ``arrays/policy/<name>``, ``dali/B=<b>/...``:
each ``{"augjax_ms", "peers": {label: ms}, "fastest_peer", "ratio_fastest_peer",
"x_copy_floor"}`` or ``{"error": ...}``) and ``e2e``. ``report.py`` turns it into the README's
tables. The GPU soak (100 pipelines in one process) is a test: ``pytest -m gpu
tests/reliability/test_soak.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.4")  # leave room for DALI and torch
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402
import harness  # noqa: E402

DALI_OPS = ("flip", "color_twist", "color_jitter", "normalize", "random_resized_crop",
            "rotate", "gaussian_blur")
DALI_POLICIES = ("rand_augment", "trivial_augment_wide")


class Budget:
    """Seconds left to a mode; rows past it are recorded as skipped."""

    def __init__(self, seconds: float):
        self.end = time.perf_counter() + seconds

    def left(self) -> float:
        return self.end - time.perf_counter()


def _err(err: BaseException) -> dict:
    return {"error": f"{type(err).__name__}: {str(err)[:400]}",
            "where": traceback.format_exc(limit=-2)[-600:]}


def _ratios(row: dict, floor: float | None = None) -> dict:
    peers = {k: v for k, v in row.get("peers", {}).items() if isinstance(v, (int, float))}
    if peers:
        best = min(peers, key=peers.get)
        row["fastest_peer"] = best
        if "augjax_ms" in row:
            row["ratio_fastest_peer"] = row["augjax_ms"] / peers[best]
    if floor and "augjax_ms" in row:
        row["x_copy_floor"] = row["augjax_ms"] / floor
    return row


# --------------------------------------------------------------------------------------------
# arrays


def _torch_batch(host):
    import torch

    return torch.from_numpy(host).permute(0, 3, 1, 2).contiguous().cuda()


def _time_torch(f, x, iters, reps):
    import torch

    f(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            f(x)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return harness.median(times)


def _time_array(call, args) -> float:
    """Median ms per call: a slow program (AugMix, the blurs) gets fewer calls per repetition,
    so that one row takes about ``args.row_seconds``."""
    import jax

    jax.block_until_ready(call())  # compiles
    t0 = time.perf_counter()
    jax.block_until_ready(call())
    once = time.perf_counter() - t0
    iters = max(3, min(args.iters, int(args.row_seconds / args.reps / max(once, 1e-6))))
    return harness.median(harness.time_call(call, iters, args.reps, warmup=1))


def _array_call(chain, x, y, keys):
    it = itertools.cycle(keys)
    if cases.takes_labels(chain):
        return lambda: chain(x, y, key=next(it))
    return lambda: chain(x, key=next(it))


def mode_arrays(args, budget: Budget, rows: dict, save) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import augjax

    b = args.array_batch
    host = harness.host_batches(b, args.size, n=1)[0]
    dev = jax.devices(args.device)[0]
    x = jax.device_put(host, dev)
    y = jax.device_put(np.arange(b, dtype=np.int32) % cases.CLASSES, dev)
    keys = [jax.device_put(jax.random.key(i), dev) for i in range(4)]
    it, reps = args.iters, args.reps
    gpu = args.device == "gpu"

    copy = jax.jit(lambda a: a + jnp.uint8(1))
    floor = harness.median(harness.time_call(lambda: copy(x), it, reps))
    rows["arrays/copy_floor"] = {"ms": floor, "what": "XLA x + 1 on the uint8 batch"}
    print(f"arrays B={b}: copy floor {floor:.4f} ms", flush=True)

    batches = harness.device_batches(args.device, [host, host[::-1].copy()])
    try:
        empty = harness.median(harness.time_pipeline(
            harness.pipeline(args.device, b, batches, lambda v: v), args.device, it, reps))
        rows["arrays/dali_empty_pipeline"] = {"ms": empty}
    except Exception as err:  # noqa: BLE001
        rows["arrays/dali_empty_pipeline"] = _err(err)
    tv, kp, xt = {}, {}, None
    if gpu:  # the torch batch apart from either library: one missing leaves the other timed
        try:
            xt = _torch_batch(host)
        except Exception as err:  # noqa: BLE001
            rows["arrays/torch"] = _err(err)
        try:
            tv = cases.torchvision_peers()
        except Exception as err:  # noqa: BLE001
            rows["arrays/torchvision"] = _err(err)
        try:
            kp = cases.kornia_peers()
        except Exception as err:  # noqa: BLE001
            rows["arrays/kornia"] = _err(err)
    for name, policy in cases.augjax_policies().items():
        key = f"arrays/policy/{name}"
        if args.ops or budget.left() <= 0:
            rows[key] = {"skipped": "time limit" if not args.ops else "--ops given"}
            continue
        try:
            call = _array_call(augjax.compose(policy), x, y, keys)
            rows[key] = _ratios({"augjax_ms": _time_array(call, args)}, floor)
        except Exception as err:  # noqa: BLE001
            rows[key] = _err(err)
        _print(key, rows[key])
        save()
    try:
        peers = cases.dali_peers(args.device)
    except ImportError as err:  # no DALI here: the ops are still timed, with their other peers
        peers = {}
        rows["arrays/dali_peers"] = _err(err)
    names = [] if args.policies_only else args.ops or cases.op_names()
    for name in names:
        key = f"arrays/op/{name}"
        if budget.left() <= 0:
            rows[key] = {"skipped": "time limit"}
            continue
        row = {"peers": {}}
        try:
            call = _array_call(cases.op_chain(name), x, y, keys)
            row["augjax_ms"] = _time_array(call, args)
        except Exception as err:  # noqa: BLE001
            row.update(_err(err))
        if name in peers:
            label, body = peers[name]
            try:
                p = harness.pipeline(args.device, b, batches, body)
                row["peers"][label + " (pipeline)"] = harness.median(
                    harness.time_pipeline(p, args.device, it, reps))
                del p
            except Exception as err:  # noqa: BLE001
                row["peers"][label] = _err(err)["error"]
        for torch_peers in (tv, kp):
            if name in torch_peers and xt is not None:
                label, f = torch_peers[name]
                try:
                    row["peers"][label] = _time_torch(f, xt, it, reps)
                except Exception as err:  # noqa: BLE001
                    row["peers"][label] = _err(err)["error"]
        rows[key] = _ratios(row, floor)
        _print(key, rows[key])
        save()


def _print(key: str, row: dict) -> None:
    if "error" in row:
        txt = row["error"]
    elif "skipped" in row:
        txt = "skipped: " + row["skipped"]
    else:
        txt = f"augjax {row.get('augjax_ms', float('nan')):9.4f} ms" if "augjax_ms" in row \
            else f"{row.get('ms', float('nan')):9.4f} ms"
        for label, ms in row.get("peers", {}).items():
            txt += f" | {label} " + (f"{ms:.4f}" if isinstance(ms, float) else str(ms)[:60])
        if "ratio_fastest_peer" in row:
            txt += f" | ratio {row['ratio_fastest_peer']:.2f}"
    print(f"{key:<44} {txt}", flush=True)


# --------------------------------------------------------------------------------------------
# through DALI


def mode_dali(args, budget: Budget, rows: dict, save) -> None:
    import jax
    from nvidia.dali.plugin.jax import fn as jax_fn

    import augjax

    peers = cases.dali_peers(args.device)
    dpol = cases.dali_policies()
    apol = cases.augjax_policies()
    ops = [n for n in (peers if args.all_ops else DALI_OPS) if n in cases.op_names()]
    if args.ops:
        ops = [n for n in ops if n in args.ops]
    for b in args.dali_batch:
        batches = harness.device_batches(args.device, harness.host_batches(b, args.size))
        # iterations scale down with the batch so that B=1024 takes about as long as B=32
        it = max(5, args.iters * 256 // max(b, 256))

        def timed(body, **kw):
            p = harness.pipeline(args.device, b, batches, body, executor=args.executor, **kw)
            try:
                return harness.median(harness.time_pipeline(p, args.device, it, args.reps))
            finally:
                del p

        def run(key, fn):
            if budget.left() <= 0:
                rows[key] = {"skipped": "time limit"}
            else:
                try:
                    rows[key] = fn()
                except Exception as err:  # noqa: BLE001
                    rows[key] = _err(err)
            _print(key, rows[key])
            save()

        base = f"dali/B={b}"
        run(f"{base}/empty", lambda: {"ms": timed(lambda v: v)})
        ident = jax_fn.jax_function(jax.jit(lambda v: v), output_layouts="HWC",
                                    device=args.device)
        run(f"{base}/jax_function_identity", lambda: {"ms": timed(lambda v: ident(v))})
        for name in DALI_POLICIES:
            def pair(name=name):
                row = {"augjax_ms": timed(lambda v: augjax.compose(apol[name])(v)), "peers": {}}
                label, body = dpol[name]
                try:
                    row["peers"][label] = timed(body, conditionals=True)
                except Exception as err:  # noqa: BLE001
                    row["peers"][label] = _err(err)["error"]
                return _ratios(row)
            run(f"{base}/policy/{name}", pair)
        for name in ops:
            def pair(name=name):
                chain = cases.op_chain(name)
                labels = cases.takes_labels(chain)
                body = (lambda v, w: chain(v, w)) if labels else (lambda v: chain(v))
                row = {"augjax_ms": timed(body, labels=labels), "peers": {}}
                label, pbody = peers[name]
                try:
                    row["peers"][label] = timed(pbody)
                except Exception as err:  # noqa: BLE001
                    row["peers"][label] = _err(err)["error"]
                return _ratios(row)
            run(f"{base}/op/{name}", pair)


# --------------------------------------------------------------------------------------------
# e2e


def mode_e2e(args, budget: Budget, result: dict, save) -> None:
    import e2e

    out = HERE / "results" / f"e2e-{result['machine']['name']}-{result['date']}.json"
    if args.out:
        out = Path(args.out).with_name(Path(args.out).stem + "-e2e.json")
    argv = ["--device", args.device, "--machine", result["machine"]["name"], "--out", str(out),
            "--time-limit", str(max(0.0, budget.left()))]
    argv += ["--batch", *map(str, args.e2e_batch)]
    if args.device == "cpu":  # a smoke test of the mode
        argv += ["--images", "16", "--iters", "2", "--reps", "1", "--warmup", "1"]
    elif args.quick:
        argv += ["--iters", "10", "--reps", "2", "--warmup", "3", "--images", "128"]
    else:  # B=256 first: the headline rows run before the time limit can cut the table
        argv += ["--iters", "20", "--reps", "3", "--warmup", "5", "--images", "256"]
    try:
        e2e.main(argv)
        got = json.loads(out.read_text())
        result["e2e"] = {"file": str(out.relative_to(HERE.parent)) if out.is_relative_to(
            HERE.parent) else str(out), "summary": got.get("summary", {}),
            **{k: got.get(k) for k in ("decode_crop_img_s", "augjax_chain_img_s",
                                       "augjax_randaug_img_s", "dali_randaug_img_s")}}
    except Exception as err:  # noqa: BLE001
        result["e2e"] = _err(err)
    save()


# --------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", nargs="+", default=["arrays", "dali", "e2e"],
                    choices=("arrays", "dali", "e2e"))
    ap.add_argument("--quick", action="store_true",
                    help="fewer iterations, fewer batch sizes (about 2 minutes)")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--ops", nargs="*", default=None, help="only these ops (arrays, dali)")
    ap.add_argument("--policies-only", action="store_true",
                    help="arrays mode: the policies only, no op rows")
    ap.add_argument("--all-ops", action="store_true",
                    help="dali mode: every op with a DALI peer, not only the few of DALI_OPS")
    ap.add_argument("--executor", choices=("dynamic", "legacy"), default="dynamic",
                    help="dali mode: DALI's executor for every pipeline, augjax's and the peers' "
                         "(legacy: exec_dynamic=False)")
    ap.add_argument("--size", type=int, default=cases.SIZE)
    ap.add_argument("--iters", type=int, default=None, help="calls per repetition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--row-seconds", type=float, default=1.5,
                    help="arrays: timed seconds a row aims at (slow programs get fewer calls)")
    ap.add_argument("--time-limit", type=float, default=450.0,
                    help="seconds for all modes; rows past it are recorded as skipped")
    ap.add_argument("--machine", default=None, help="name in the file name (default: gpu-<kind>)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    gpu = args.device == "gpu"
    args.iters = args.iters or (10 if args.quick else 30)
    args.array_batch = 256 if gpu else 16
    args.dali_batch = ([32, 256] if args.quick else [32, 256, 1024]) if gpu else [8]
    args.e2e_batch = ([256, 64] if args.quick else [256, 64, 1024]) if gpu else [8]
    t0 = time.perf_counter()

    import jax

    kind = jax.devices()[0].device_kind.lower().replace("nvidia", "").strip()
    name = args.machine or ("gpu-" + kind.replace(" ", "-") if gpu else "cpu")
    result = {
        "benchmark": "gpu", "date": harness.today(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": harness.machine(gpu, name),
        "versions": harness.versions(gpu),
        "config": {"modes": args.modes, "quick": args.quick, "size": args.size,
                   "batch_sizes": {"arrays": [args.array_batch], "dali": args.dali_batch,
                                   "e2e": args.e2e_batch},
                   "iters": args.iters, "reps": args.reps,
                   "executor": f"{args.executor} (dali mode)",
                   "ops": args.ops or None,
                   "metric": "median over reps of the mean ms per call / per pipeline run"},
        "rows": {},
    }
    stem = name if name.startswith("gpu-") else f"gpu-{name}"
    out = Path(args.out) if args.out else HERE / "results" / f"{stem}-{result['date']}.json"

    def save():
        out.parent.mkdir(parents=True, exist_ok=True)
        result["wall_s"] = time.perf_counter() - t0
        out.write_text(json.dumps(result, indent=1) + "\n")

    # the time limit split between the modes: arrays 40%, dali 15%, the last mode what is left
    share = {"arrays": 0.4, "dali": 0.15, "e2e": 0.45}
    for mode in args.modes:
        left = args.time_limit - (time.perf_counter() - t0)
        budget = Budget(left if mode == args.modes[-1] else min(left, share[mode]
                                                                  * args.time_limit))
        try:
            if mode == "arrays":
                mode_arrays(args, budget, result["rows"], save)
            elif mode == "dali":
                mode_dali(args, budget, result["rows"], save)
            else:
                mode_e2e(args, budget, result, save)
        except Exception as err:  # noqa: BLE001 - a mode that fails leaves the others
            result["rows"][f"{mode}/error"] = _err(err)
            save()
    save()
    print(f"wrote {out} ({result['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
