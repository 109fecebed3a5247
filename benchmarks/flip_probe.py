"""Where flip's time goes on arrays: augjax's op call vs the same program jitted vs XLA
formulations of a per-sample mirror, next to a copy, at several batch sizes (GPU or CPU).

    python benchmarks/flip_probe.py --batch 32 256 1024
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from pipeline_bench import array_batch, array_parser, time_jax


def variants(x, keys):
    import augjax

    ops = augjax.ops
    coins = jax.jit(jax.vmap(lambda k: jax.random.bernoulli(jax.random.split(k)[0], 0.5)))(keys)
    w = x.shape[2]
    copy = jax.jit(lambda a: a + jnp.uint8(1))
    inner = jax.jit(lambda k, a: ops.flip(a, key=k, p=0.5))
    bound = ops.flip.bind(p=0.5)
    where = jax.jit(lambda c, a: jnp.where(c[:, None, None, None], a[:, :, ::-1], a))
    cols = jnp.arange(w)
    gather = jax.jit(jax.vmap(lambda ci, ai: ai[:, jnp.where(ci, w - 1 - cols, cols)]))
    return {
        "copy (x + 1)": lambda: copy(x),
        "ops.flip (the op call)": lambda: ops.flip(x, key=keys, p=0.5),
        "ops.flip.bind(p=0.5) once, then called": lambda: bound(x, key=keys),
        "ops.flip inside jax.jit": lambda: inner(keys, x),
        "where(coin, x[:, :, ::-1], x), coins given": lambda: where(coins, x),
        "gather along W by a per-sample index, coins given": lambda: gather(coins, x),
    }


def main(argv=None) -> int:
    args = array_parser(__doc__.splitlines()[0]).parse_args(argv)
    dev = jax.devices(args.device)[0]
    for b in args.batch:
        x, _, keys = array_batch(dev, b, args.size)
        for name, fn in variants(x, keys).items():
            print(f"B={b:<5} {name:<52} {time_jax(fn, args.iters, args.reps):8.3f} ms",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
