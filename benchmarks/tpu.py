"""augjax on a TPU (one chip, one process): every registered op at B=256 against the copy
floor measured beside it, the ImageNet training chain (random_resized_crop 224 from 256^2 +
flip + rand_augment(2, 9) + normalize) and the four policies at B=128, as augjax's own call and
traced inside a caller's ``jax.jit``, each with its first call; and the TPU-vs-CPU parity
table of every op, chain and policy (the cases of ``tests/tpu/test_parity.py``). Writes
``results/tpu-v5e-<date>.json`` (or ``--out``) with the machine and versions::

    python benchmarks/tpu.py --out benchmarks/results/tpu-v5e-<date>.json  # on the TPU machine

``--modes ops,chain,parity`` picks parts; ``--quick`` times fewer rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn, args, rounds: int) -> tuple[float, float]:
    """(first call s, median ms of ``rounds`` later calls)."""
    import jax

    t = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return first, 1e3 * float(np.median(times))


def ops(batch: int, rounds: int, only: str = "") -> dict:
    """``only``: comma-separated op names (default: every op)."""
    import jax
    import jax.numpy as jnp

    import augjax
    from augjax.testing import example_op
    from augjax.testing._examples import channels_for

    dev = jax.devices()[0]
    rng = np.random.default_rng(0)
    key = jax.random.key(0)
    floor_fn = jax.jit(lambda x: x + jnp.uint8(1))
    x3 = jax.device_put(rng.integers(0, 256, (batch, 224, 224, 3), dtype=np.uint8), dev)
    _, floor = _timed(floor_fn, (x3,), rounds)
    rows = {}
    labels = jax.device_put(np.arange(batch, dtype=np.int32) % 10, dev)
    for name in augjax.list_ops():
        if only and name not in only.split(","):
            continue
        spec = augjax.get_op(name)
        if "uint8" not in spec.dtypes:
            continue
        try:
            op = example_op(spec)
            ch = channels_for(spec)
            x = x3 if ch == 3 else jax.device_put(
                rng.integers(0, 256, (batch, 224, 224, ch), dtype=np.uint8), dev)
            args = (x, labels) if "labels" in spec.inputs else (x,)
            first, ms = _timed(lambda *a: op(*a, key=key), args, rounds)
            rows[name] = {"ms": ms, "first_s": first, "x_floor": ms / floor}
        except Exception as err:  # noqa: BLE001  (recorded: the table says which failed)
            rows[name] = {"error": f"{type(err).__name__}: {str(err)[:200]}"}
        print(name, rows[name], flush=True)
    return {"batch": batch, "floor_ms": floor, "floor_img_s": batch / floor * 1e3, "ops": rows}


def chains(batch: int, rounds: int, only: str = "") -> dict:
    """``only``: comma-separated chain names (default: every chain)."""
    import jax

    import augjax
    from augjax import ops as o

    dev = jax.devices()[0]
    rng = np.random.default_rng(1)
    x = jax.device_put(rng.integers(0, 256, (batch, 256, 256, 3), dtype=np.uint8), dev)
    x224 = jax.device_put(rng.integers(0, 256, (batch, 224, 224, 3), dtype=np.uint8), dev)
    key = jax.random.key(0)
    norm = o.normalize.bind(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    made = {
        "rrc_flip_randaugment_normalize": (augjax.compose(
            o.random_resized_crop.bind(size=224), o.flip.bind(p=0.5),
            augjax.rand_augment(n=2, m=9), norm), x),
        "rrc_flip_normalize": (augjax.compose(
            o.random_resized_crop.bind(size=224), o.flip.bind(p=0.5), norm), x),
        "rotate": (o.rotate.bind(degrees=30.0), x224),
        "affine": (o.affine.bind(degrees=10.0, translate=(0.1, 0.1)), x224),
        "flip_normalize": (augjax.compose(o.flip.bind(p=0.5), norm), x224),
        "rand_augment": (augjax.rand_augment(n=2, m=9), x224),
        "trivial_augment_wide": (augjax.trivial_augment_wide(), x224),
        "auto_augment": (augjax.auto_augment(), x224),
        "augmix": (augjax.augmix(), x224),
    }
    rows = {}
    for name, (step, inp) in made.items():
        if only and name not in only.split(","):
            continue
        row = {}
        try:
            first, ms = _timed(lambda a: step(a, key=key), (inp,), rounds)
            row.update(own_ms=ms, own_img_s=batch / ms * 1e3, own_first_s=first)
            inside = jax.jit(lambda a, k: step(a, key=k))  # the caller's training step
            first, ms = _timed(inside, (inp, key), rounds)
            row.update(in_jit_ms=ms, in_jit_img_s=batch / ms * 1e3, in_jit_first_s=first)
            inside = augjax.jit(lambda a, k: step(a, key=k))  # the supported way
            first, ms = _timed(inside, (inp, key), rounds)
            row.update(augjax_jit_ms=ms, augjax_jit_img_s=batch / ms * 1e3,
                       augjax_jit_first_s=first)
        except Exception as err:  # noqa: BLE001
            row["error"] = f"{type(err).__name__}: {str(err)[:300]}"
        rows[name] = row
        print(name, row, flush=True)
    return {"batch": batch, "chains": rows}


def parity(only: str = "") -> dict:
    """``only``: the cases whose id starts with it (``op/``, ``policy/``; several, comma-separated)."""
    import jax

    sys.path.insert(0, str(ROOT / "tests" / "tpu"))
    from test_parity import _all, _tpu, agreement, run_on

    rows = {}
    cpu, tpu = jax.devices("cpu")[0], _tpu()
    for case in sorted(c for c in _all() if c.startswith(tuple(only.split(",")))):
        try:
            share, worst, same = agreement(run_on(cpu, case), run_on(tpu, case))
            rows[case] = {"bitwise": same, "within_1_level": share, "max_levels": worst}
        except Exception as err:  # noqa: BLE001
            rows[case] = {"error": f"{type(err).__name__}: {str(err)[:200]}"}
        print(case, rows[case], flush=True)
    return {"parity": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default="ops,chain,parity")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parity-only", default="", help="parity of the cases starting with this")
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    ap.add_argument("--chains", default="", help="comma-separated chain names (default: all)")
    ap.add_argument("--out")
    args = ap.parse_args()
    import jax

    rounds = 5 if args.quick else 20
    result: dict = {"meta": {
        "date": time.strftime("%Y-%m-%d"), "device": str(jax.devices()[0].device_kind),
        "platform": jax.devices()[0].platform, "jax": jax.__version__,
        "python": platform.python_version(), "rounds": rounds, "host_cpus": os.cpu_count(),
        "statistic": "median ms per call after the first; first_s: the first call"}}
    modes = args.modes.split(",")
    for mode, run in (("ops", lambda: ops(256, rounds, args.ops)),
                      ("chain", lambda: chains(128, rounds, args.chains)),
                      ("parity", lambda: parity(args.parity_only))):
        if mode in modes:
            result[mode] = run()
            if args.out:  # after each mode: a run stopped at its limit keeps what it did
                Path(args.out).write_text(json.dumps(result, indent=1))
    if not args.out:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
