"""What the in-memory cache layers of a call on arrays save, measured: the steady per-call time
of an eager op call and of a chain call with every layer in place, and with one layer emptied
before every call (so that each call rebuilds what the layer keeps).

    python benchmarks/cache_layers.py [--json out.json]

The layers: ``bound`` (validated ops by their given parameters,
:mod:`augjax._runtime.execution.bound`) and ``programs`` (the jitted programs by steps, layout and
signature: ``array_program``, ``sample_program``, ``apply_program``, ``call_program``; each holds
its per-signature runs and, where the program store is on, its verified stored programs, so emptying
it costs a load from the store, or a trace where the store is off). With the store on and off
(``AUGJAX_PROGRAM_CACHE=0``). Medians of ``--repeat`` calls after warm-up, B=8, 64^2 uint8.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import jax
import numpy as np

import augjax
from augjax._runtime.execution import bound as bound_mod
from augjax._runtime.execution import program as program_mod


def clear_programs() -> None:
    for fn in (program_mod.array_program, program_mod.sample_program,
               program_mod.apply_program, program_mod.call_program):
        fn.cache_clear()


LAYERS = {"none": lambda: None, "bound": bound_mod._BOUND.clear, "programs": clear_programs}


def measure(call, clear, repeat: int) -> float:
    call()
    call()
    times = []
    for _ in range(repeat):
        clear()
        t = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    x = np.random.default_rng(0).integers(0, 256, (8, 64, 64, 3), dtype=np.uint8)
    key = jax.random.key(0)
    chain = augjax.compose(augjax.ops.flip.bind(p=0.5),
                           augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4))
    calls = {"eager flip(p=0.5)": lambda: augjax.ops.flip(x, key=key, p=0.5),
             "chain flip + color_jitter": lambda: chain(x, key=key)}
    store = os.environ.get("AUGJAX_PROGRAM_CACHE", "1")
    rows = []
    for layer, clear in LAYERS.items():
        for name, call in calls.items():
            ms = measure(call, clear, args.repeat)
            rows.append({"call": name, "layer emptied": layer, "store": store, "ms": round(ms, 3)})
            print(f"{name:28s} store={store} layer emptied: {layer:9s} {ms:10.3f} ms", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": "2-core CPU (shared)",
                       "jax": jax.__version__, "augjax": augjax.__version__, "rows": rows},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
