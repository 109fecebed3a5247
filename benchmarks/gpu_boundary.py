"""Probe: what would bound fusion between a chain's steps on a GPU (XLA:GPU emits no
``opt-barrier``, so :func:`augjax.kernels.boundary.materialize` is the identity there).

Runs ``compose.py`` (its arguments after ``--``) with the chain's boundaries replaced, on a GPU
only, by one of:

- ``none``: as shipped (no boundary off the CPU);
- ``alias``: a Pallas (Triton) call that does nothing, its output aliased to its input
  (``input_output_aliases``): XLA cannot fuse a producer into a custom call, so the step's
  output is written to memory once and the next step reads it; no pixel is moved;
- ``copy``: a Pallas call that copies the image (one read and one write of it).

Both replace every boundary the CPU rules place (on a GPU, where step kinds are not read, that
is between every two steps). Branch ``h42g``'s library form keeps only some (``benchmarks/
gpu_runs.md``, item 7): time it with ``compose.py`` on that branch's wheel.

    python benchmarks/gpu_boundary.py --boundary alias -- --device gpu --batch 256 --no-peers \
        --pairs affine+rotate --out /tmp/b.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _flat_call(kernel, x, aliases: bool):
    import jax
    from augjax.kernels import pallas

    flat = x.reshape(-1)
    out = pallas.call(kernel(flat.size), jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                      (pl_grid(flat.size),), (flat,), num_warps=4, interpret=False,
                      **({"input_output_aliases": {0: 0}} if aliases else {}))
    return out.reshape(x.shape)


BLOCK = 4096


def pl_grid(n: int) -> int:
    return max(1, -(-n // BLOCK))


def _noop(n):
    def kernel(x_ref, o_ref):
        del x_ref, o_ref

    return kernel


def _copy(n):
    from jax.experimental import pallas as pl
    from augjax.kernels import pallas

    block = pallas.tile(n, BLOCK)

    def kernel(x_ref, o_ref):
        start = pallas.tile_start(n, block)
        o_ref[pl.ds(start, block)] = x_ref[pl.ds(start, block)]

    return kernel


def boundary(form: str):
    import jax

    def keep(x, *, row_major: bool = False, whole: bool = False):
        if jax.default_backend() != "gpu":
            return ORIGINAL(x, row_major=row_major, whole=whole)
        if form == "alias":
            return jax.tree_util.tree_map(lambda v: _flat_call(_noop, v, True), x)
        return jax.tree_util.tree_map(lambda v: _flat_call(_copy, v, False), x)

    return keep


ORIGINAL = None


def main() -> int:
    global ORIGINAL
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boundary", choices=("none", "alias", "copy"), default="none")
    args = ap.parse_args(own)
    import augjax._runtime.lowering as lowering
    import compose

    ORIGINAL = lowering.materialize
    if args.boundary != "none":
        lowering.materialize = boundary(args.boundary)
    print(f"boundary: {args.boundary}", flush=True)
    return compose.main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
