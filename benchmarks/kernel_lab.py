"""The kernels alone, on arrays (no DALI): each program's time, its HBM floor and the number of
kernels XLA compiled it into. Compares colour-jitter schedules and prints the optimised HLO's
kernel count, the first thing to look at when a kernel is far above its floor.

    python benchmarks/kernel_lab.py --device gpu --batch 32 256 1024 --out lab.json

Run it with ``PYTHONPATH`` pointing at another checkout's ``augjax`` to measure that version's
kernels in the same lease (``--tag old``).
"""

from __future__ import annotations

import datetime
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
from pipeline_bench import JITTER, MEAN, STD, array_parser, time_jax


def kernel_count(compiled_text: str) -> int:
    """Fusions and library calls in the entry computation of optimised HLO."""
    entry = compiled_text[compiled_text.index("\nENTRY"):]
    entry = entry[: entry.index("\n}")]
    return len(re.findall(r"= [^=]*\b(fusion|custom-call|copy|transpose|reduce|sort)\(", entry))


def jitter_draws(keys, x):
    """color_jitter's draws for JITTER (its public sampler): factors ``(N, 4)`` (brightness,
    contrast, saturation, hue) and orders ``(N, 4)``."""
    import augjax

    p = augjax.ops.color_jitter.sample(x, key=keys, **JITTER)
    names = ("brightness", "contrast", "saturation", "hue")
    return jnp.stack([p[n] for n in names], axis=-1), p["order"]


def jitter_with(form: str, active=(1, 1, 1, 1)):
    """The colour jitter kernel in one ``form`` as ``f(keys, images)`` (the draws, then the
    jitted kernel)."""
    from augjax.catalog._jitter import jitter

    active = tuple(bool(a) for a in active)
    fn = jax.jit(jax.vmap(lambda image, order, f: jitter(image, order, f, active, form=form)))

    def run(keys, images):
        factors, order = jitter_draws(keys, images)
        return fn(images, order, factors)

    return run


def pallas_alone(x, keys):
    """The two Pallas kernels of the colour jitter without the parameter draws (drawn once,
    outside the timing)."""
    from augjax.catalog import _jitter_kernel as kernel

    factors, order = jitter_draws(keys, x)
    interpret = jax.default_backend() == "cpu"
    fn = jax.jit(jax.vmap(lambda im, s, f: kernel.jitter_kernel(im, s, f, True, interpret)))
    return lambda: fn(x, order, factors)


def programs(x, y, keys):
    import augjax

    ops = augjax.ops
    chain4 = augjax.compose(
        ops.flip.bind(p=0.5), ops.color_jitter.bind(**JITTER),
        ops.mixup.bind(alpha=0.2, num_classes=10),
        ops.normalize.bind(mean=MEAN, std=STD, chw=True))
    fc = augjax.compose(ops.flip.bind(p=0.5), ops.color_jitter.bind(**JITTER))
    copy = jax.jit(lambda a: a + jnp.uint8(1))
    out = {
        "copy (x + 1)": (lambda: copy(x), 2),
        "flip": (lambda: ops.flip(x, key=keys, p=0.5), 2),
        "color_jitter (op)": (lambda: ops.color_jitter(x, key=keys, **JITTER), 2),
        "color_jitter cpu form": (jitter_with("cpu"), 2),
        "color_jitter gpu form": (jitter_with("gpu"), 2),
        "color_jitter gpu form, no contrast (1 pass)": (jitter_with("gpu", (1, 0, 1, 1)), 2),
        "color_jitter gpu form, no hue": (jitter_with("gpu", (1, 1, 1, 0)), 2),
        "color_jitter pallas form": (jitter_with("pallas"), 2),
        "color_jitter pallas form, no contrast (1 pass)": (jitter_with("pallas", (1, 0, 1, 1)), 2),
        "color_jitter pallas form, no hue": (jitter_with("pallas", (1, 1, 1, 0)), 2),
        "color_jitter pallas kernels alone": (pallas_alone(x, keys), 2),
        "brightness": (lambda: ops.brightness(x, key=keys, factor=0.4), 2),
        "hue": (lambda: ops.hue(x, key=keys, factor=0.1), 2),
        "flip + color_jitter": (lambda: fc(x, key=keys), 2),
        "mixup": (lambda: ops.mixup(x, y, key=keys, alpha=0.2, num_classes=10), 2),
        "normalize CHW": (lambda: ops.normalize(x, mean=MEAN, std=STD, chw=True), 5),
        "flip + color_jitter + mixup + normalize": (lambda: chain4(x, y, key=keys), 5),
    }
    return out


def same_forms(x, keys, forms=("cpu", "gpu", "pallas")) -> dict:
    """Elements where the forms of the colour jitter kernel differ from the first on this
    device."""
    a, *others = (np.asarray(jitter_with(form)(keys, x)).astype(np.int16) for form in forms)
    return {f"{forms[0]} vs {form}": {"differ": int((a != b).sum()), "of": int(a.size),
                                      "max_levels": int(abs(a - b).max())}
            for form, b in zip(forms[1:], others)}


def pallas_tiles(x, keys, tiles, iters, reps) -> dict:
    """The Pallas colour jitter's time for each ``BLOCKxWARPS`` tile choice."""
    from augjax.catalog import _jitter_kernel as kernel

    saved = kernel.BLOCK, kernel.NUM_WARPS
    rows = {}
    try:
        for tile in tiles:
            kernel.BLOCK, kernel.NUM_WARPS = (int(v) for v in tile.split("x"))
            fn = jitter_with("pallas")
            rows[tile] = time_jax(lambda: fn(keys, x), iters, reps)
    finally:
        kernel.BLOCK, kernel.NUM_WARPS = saved
    return rows


def compiled_text(fn, *args) -> str:
    """The optimised HLO of a jitted ``fn`` for ``args`` (lowered on abstract arguments: a
    closure over the batch would make XLA constant-fold the whole image)."""
    return fn.lower(*args).compile().as_text()


def main(argv=None) -> int:
    ap = array_parser(__doc__.splitlines()[0])
    ap.add_argument("--tag", default="new")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--hlo", default=None, help="write the optimised HLO of every program here")
    ap.add_argument("--out", default=None)
    ap.add_argument("--tiles", nargs="*", default=[],
                    help="Pallas colour jitter tiles to sweep, BLOCKxWARPS (e.g. 1024x4)")
    args = ap.parse_args(argv)
    dev = jax.devices(args.device)[0]
    result = {"date": datetime.date.today().isoformat(), "tag": args.tag,
              "devices": str(jax.devices()), "jax": jax.__version__, "batches": {}}
    hlo = {}
    copy_gbps = None
    for b in args.batch:
        rng = np.random.default_rng(0)
        x = jax.device_put(rng.integers(0, 256, (b, args.size, args.size, 3), dtype=np.uint8), dev)
        y = jax.device_put(np.arange(b, dtype=np.int32) % 10, dev)
        keys = jax.device_put(jax.random.split(jax.random.key(0), b), dev)
        rows = {}
        for name, (fn, factor) in programs(x, y, keys).items():
            if args.only and not any(o in name for o in args.only):
                continue
            n = -1
            if hasattr(fn, "lower"):  # a jitted f(keys, images): count its kernels
                text = compiled_text(fn, keys, x)
                hlo[f"{b}/{name}"] = text
                n = kernel_count(text)
                fn = (lambda f: lambda: f(keys, x))(fn)
            ms = time_jax(fn, args.iters, args.reps)
            nbytes = x.size * factor  # read the uint8 batch once, write (factor - 1) bytes/elt
            if name.startswith("copy"):
                copy_gbps = 2 * x.size / ms / 1e6
            floor = nbytes / (copy_gbps * 1e6) if copy_gbps else float("nan")
            rows[name] = {"ms": ms, "kernels": n, "floor_ms": floor, "x_floor": ms / floor}
            print(f"[{args.tag}] B={b:<5} {name:<42} {ms:8.3f} ms  {n:3d} kernels  "
                  f"{ms / floor:6.1f}x floor", flush=True)
        if args.tag == "new" and (not args.only or any("color" in o for o in args.only)):
            rows["forms"] = same_forms(x, keys)
            print(f"[{args.tag}] B={b:<5} forms: {rows['forms']}")
        if args.tiles:
            rows["pallas tiles"] = pallas_tiles(x, keys, args.tiles, args.iters, args.reps)
            print(f"[{args.tag}] B={b:<5} pallas tiles (ms): {rows['pallas tiles']}", flush=True)
        result["batches"][str(b)] = rows
    result["copy_GBps"] = copy_gbps
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    if args.hlo:
        with open(args.hlo, "w") as f:
            for k, v in hlo.items():
                f.write(f"===== {k}\n{v}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
