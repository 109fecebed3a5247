"""Probe: what bounds fusion between a chain's steps on a GPU. XLA:GPU emits no ``opt-barrier``;
augjax keeps a step's output behind a Triton call that does nothing, its output aliased to its
input (:func:`augjax.kernels.pallas.kept_in_place`), where :mod:`augjax._runtime.execution.fusion`'s
GPU rules place a boundary.

Runs ``compose.py`` (its arguments after ``--``) with the chain's GPU boundaries, at the places
those rules choose, as one of:

- ``lib``: as shipped (the no-op call aliased to its input);
- ``none``: no boundary on the GPU (how GPU chains compiled before: the baseline);
- ``copy``: a Pallas call that copies the image (one read and one write of it).

The CPU's boundaries are left as they are.

    python benchmarks/gpu_boundary.py --boundary none -- --device gpu --batch 256 --no-peers \
        --pairs affine+rotate --out /tmp/b.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

BLOCK = 4096


def _copied(x):
    """``x`` through a Pallas call that copies it, block by block."""
    import jax
    from jax.experimental import pallas as pl

    from augjax.kernels import pallas

    flat = x.reshape(-1)
    n = flat.size
    block = pallas.tile(n, BLOCK)

    def kernel(x_ref, o_ref):
        start = pallas.tile_start(n, block)
        o_ref[pl.ds(start, block)] = x_ref[pl.ds(start, block)]

    out = pallas.call(kernel, jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                      (max(1, -(-n // BLOCK)),), (flat,), num_warps=4, interpret=False)
    return out.reshape(x.shape)


def boundary(form: str, original):
    """``materialize`` with its GPU form replaced by ``form`` ("none" or "copy")."""
    import jax

    def keep(x, *, row_major: bool = False, whole: bool = False):
        if jax.default_backend() != "gpu":
            return original(x, row_major=row_major, whole=whole)
        return x if form == "none" else jax.tree_util.tree_map(_copied, x)

    return keep


def main() -> int:
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boundary", choices=("lib", "none", "copy"), default="lib")
    args = ap.parse_args(own)
    import augjax._runtime.execution.lowering as lowering
    import compose

    if args.boundary != "lib":
        lowering.materialize = boundary(args.boundary, lowering.materialize)
    print(f"boundary: {args.boundary}", flush=True)
    return compose.main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
