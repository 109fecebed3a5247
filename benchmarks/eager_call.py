"""The host cost of an eager op call on arrays: ``augjax.ops.flip(x, key=k, p=0.5)`` vs the op
bound once and called vs the jitted program alone, on a tiny batch (so the time is Python and
dispatch, not the kernel). Best of ``--reps`` rounds of ``--iters`` calls, in microseconds.

Run it under two checkouts, alternating processes, to compare them (the machine's noise is
larger than the differences within one process):

    for i in 1 2 3 4; do PYTHONPATH=../old python eager_call.py; python eager_call.py; done
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    import augjax
    from augjax._runtime.program import array_program

    ops = augjax.ops
    x = jnp.zeros((4, 8, 8, 3), jnp.uint8)
    keys = jax.random.split(jax.random.key(0), 4)
    bound = ops.flip.bind(p=0.5)
    program = array_program((bound,), "HWC")
    calls = {
        "ops.flip(x, key=k, p=0.5)": lambda: ops.flip(x, key=keys, p=0.5),
        "flip.bind(p=0.5) once, then called": lambda: bound(x, key=keys),
        "the jitted program alone": lambda: program(x, None, keys)[0],
    }
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(args.reps):
        for name, call in calls.items():
            t0 = time.perf_counter()
            for _ in range(args.iters):
                out = call()
            out.block_until_ready()
            best[name] = min(best[name], (time.perf_counter() - t0) / args.iters * 1e6)
    print(f"augjax at {augjax.__file__}")
    for name, us in best.items():
        print(f"{name:<40} {us:7.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
