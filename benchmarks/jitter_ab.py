"""A/B/C of color_jitter's random-order kernel: the literal translation (every adjustment at
every slot, selected per sample: 16 evaluations, 4 hue passes), the one-pass schedule (one
generic stage per slot before and after a single hue pass: 7 evaluations, a grayscale mean in
every generic stage: 6 chained reductions) and the two-pass schedule (contrast's mean once, then
everything); augjax picks one per backend. Prints whether the outputs equal the literal's.

    python benchmarks/jitter_ab.py --device gpu --batch 256
"""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np
from pipeline_bench import time_jax

from augjax.catalog._jitter import jitter
from augjax.catalog._tv_color import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
)
from augjax.kernels.pixels import to_dtype

ADJUST = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)


def literal(x, order, factors, dtype):
    for slot in range(4):
        out = x
        for i in range(4):
            out = jnp.where(order[slot] == i, ADJUST[i](x, factors[i], dtype), out)
        x = out
    return x


def means_per_stage(x, order, factors, dtype):
    return jitter(x, order, factors, (True,) * 4, dtype, form="cpu")


def two_pass(x, order, factors, dtype):
    return jitter(x, order, factors, (True,) * 4, dtype, form="gpu")


def build(kernel):
    def one(key, image):
        k1, k2 = jax.random.split(key)
        order = jax.random.permutation(k1, 4)
        lo = jnp.array([0.6, 0.6, 0.6, -0.1])
        factors = lo + jax.random.uniform(k2, (4,)) * (jnp.array([1.4, 1.4, 1.4, 0.1]) - lo)
        out = kernel(image.astype(jnp.float32), order, factors, image.dtype)
        return to_dtype(out, image.dtype)

    return jax.jit(jax.vmap(one))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    dev = jax.devices(args.device)[0]
    x = jax.device_put(np.random.default_rng(0).integers(
        0, 256, (args.batch, args.size, args.size, 3), dtype=np.uint8), dev)
    keys = jax.device_put(jax.random.split(jax.random.key(0), args.batch), dev)
    a, b, c = build(literal), build(means_per_stage), build(two_pass)
    ref = a(keys, x)
    same = {"means_per_stage": bool(jnp.array_equal(ref, b(keys, x))),
            "two_pass": bool(jnp.array_equal(ref, c(keys, x)))}
    ta = time_jax(lambda: a(keys, x), 50, 3)
    tb = time_jax(lambda: b(keys, x), 50, 3)
    tc = time_jax(lambda: c(keys, x), 50, 3)
    res = {"device": args.device, "batch": args.batch, "bitwise_equal_to_literal": same,
           "literal_ms": ta, "means_per_stage_ms": tb, "two_pass_ms": tc,
           "speedup_vs_literal": ta / tc, "speedup_vs_means_per_stage": tb / tc}
    print(json.dumps(res))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
