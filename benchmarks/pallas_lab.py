"""Where the Pallas colour jitter's time goes: access patterns, branching and schedules.

Times, on arrays (no DALI), Pallas kernels that differ from augjax's committed colour jitter
kernel in one thing each, next to it and to XLA's copy:

- copies with no arithmetic: the committed access (three strided uint8 loads and stores per
  tile), a flat contiguous copy, and a flat copy that gathers each element's pixel
  (``flat-gather``), to tell the access pattern's cost from the arithmetic's;
- ``flat``: the chain pass over contiguous elements: each element gathers its pixel's three
  channels (cache hits), computes the pixel's chain and stores its own channel (coalesced
  stores, three times the arithmetic);
- ``onepass BxW``: one program per image, looping twice over its tiles (contrast's mean, then
  the chain), so the second read comes from L2 and the partial sums never leave the program;
- ``static ORDER``: one order for every image, unrolled (what ``lax.switch`` costs, and what each
  stage costs on its own; not the batch's result, so not checked);
- ``--generic``: the blends as one stage whose operands come as scalars, a branch only to hue.

Each variant is checked against the committed kernel (elements that differ). On an H200
(benchmarks/README.md) the accesses cost nothing and the kernel is bound by its arithmetic.

    python benchmarks/pallas_lab.py --batch 256 --static 0123 3 --generic --flat 1024x4 \
        --onepass 1024x8 --out lab.json
"""

from __future__ import annotations

import datetime
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from kernel_lab import jitter_draws
from pipeline_bench import array_batch, array_parser, time_jax, write_json


def _kernel_module():
    from augjax.catalog import _jitter_kernel as k

    return k


def _params(n, block, warps, interpret):
    k = _kernel_module()
    return dict(grid=(n,), interpret=interpret,
                compiler_params=k.pl_triton.CompilerParams(num_warps=warps, num_stages=1))


# ----- copies -------------------------------------------------------------------------------

def copy_strided(block, warps, interpret):
    def kernel(x_ref, o_ref, *, pixels):
        s = jnp.minimum(pl.program_id(0) * block, pixels - block)
        for c in range(3):
            o_ref[pl.ds(s * 3 + c, block, stride=3)] = x_ref[pl.ds(s * 3 + c, block, stride=3)]

    def one(image):
        pixels = image.shape[0] * image.shape[1]
        flat = image.reshape(-1)
        out = pl.pallas_call(functools.partial(kernel, pixels=pixels),
                             out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                             **_params(pl.cdiv(pixels, block), block, warps, interpret))(flat)
        return out.reshape(image.shape)

    return jax.jit(jax.vmap(one))


def copy_flat(block, warps, interpret, gather=False):
    def kernel(x_ref, o_ref, *, n):
        s = jnp.minimum(pl.program_id(0) * block, n - block)
        if gather:
            e = s + jnp.arange(block)
            base = e - e % 3
            r, g, b = (x_ref[base + c] for c in range(3))
            c = e % 3
            o_ref[pl.ds(s, block)] = jnp.where(c == 0, r, jnp.where(c == 1, g, b))
        else:
            o_ref[pl.ds(s, block)] = x_ref[pl.ds(s, block)]

    def one(image):
        flat = image.reshape(-1)
        n = flat.shape[0]
        out = pl.pallas_call(functools.partial(kernel, n=n),
                             out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                             **_params(pl.cdiv(n, block), block, warps, interpret))(flat)
        return out.reshape(image.shape)

    return jax.jit(jax.vmap(one))


# ----- colour jitter variants -----------------------------------------------------------------

def _chain(p, seq, factors, mean, dtype, before_contrast=False):
    k = _kernel_module()
    branches = k._branches(dtype)
    before = True
    for j in range(4):
        if before_contrast:
            before = before & (seq[j] != 1)
            p = lax.switch(jnp.where(before, seq[j], k.IDENTITY), branches, p, factors, 0.0)
        else:
            p = lax.switch(seq[j], branches, p, factors, mean)
    return p


def _two_passes(image, contrast_kernel, chain_kernel, first, second, interpret, contrast=True):
    """A variant's contrast pass over ``(*first, image)`` (when ``contrast``), then its chain
    pass over ``(*second(mean), image)``, both on the committed kernel's tiling."""
    k = _kernel_module()
    h, w, _ = image.shape
    layout = k._Layout(h * w, image.dtype)
    flat = image.reshape(-1)
    mean = jnp.float32(0.0)
    if contrast:
        sums = k._call(contrast_kernel, lambda m: jax.ShapeDtypeStruct((m,), jnp.float32),
                       layout, interpret, *first, flat)
        mean = jnp.sum(sums) / (h * w)
    out = k._call(chain_kernel, lambda m: jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                  layout, interpret, *second(mean), flat)
    return out.reshape(image.shape)


def flat_chain(block, warps, interpret):
    """Contrast pass as committed; the chain pass over contiguous elements."""
    k = _kernel_module()
    from augjax.kernels.pixels import to_dtype

    def chain_kernel(seq_ref, par_ref, x_ref, o_ref, *, n, dtype):
        seq, factors, mean = k._scalars(seq_ref, par_ref)
        s = jnp.minimum(pl.program_id(0) * block, n - block)
        e = s + jnp.arange(block)
        c = e % 3
        base = e - c
        p = tuple(x_ref[base + ch].astype(jnp.float32) for ch in range(3))
        p = _chain(p, seq, factors, mean, dtype)
        o_ref[pl.ds(s, block)] = to_dtype(jnp.where(c == 0, p[0], jnp.where(c == 1, p[1], p[2])),
                                          dtype)

    def one(image, seq, factors):
        h, w, _ = image.shape
        layout = k._Layout(h * w, image.dtype)
        flat = image.reshape(-1)
        seq = seq.astype(jnp.int32)
        par = jnp.concatenate([factors, jnp.zeros(4, jnp.float32)])
        sums = k._call(k._contrast_kernel, lambda m: jax.ShapeDtypeStruct((m,), jnp.float32),
                       layout, interpret, seq, par, flat)
        mean = jnp.sum(sums) / (h * w)
        par = jnp.concatenate([factors, jnp.stack([mean]), jnp.zeros(3, jnp.float32)])
        n = flat.shape[0]
        out = pl.pallas_call(functools.partial(chain_kernel, n=n, dtype=image.dtype),
                             out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                             **_params(pl.cdiv(n, block), block, warps, interpret))(
                                 seq, par, flat)
        return out.reshape(image.shape)

    return one


def onepass(block, warps, interpret):
    """One program per image: the mean loop, then the chain loop."""
    k = _kernel_module()
    from augjax.kernels.pixels import blend_gray, to_dtype

    def kernel(seq_ref, par_ref, x_ref, o_ref, *, pixels, dtype):
        seq, factors, _ = k._scalars(seq_ref, par_ref)
        tiles = pl.cdiv(pixels, block)

        def load(t):
            s = jnp.minimum(t * block, pixels - block)
            return s, tuple(x_ref[pl.ds(s * 3 + c, block, stride=3)].astype(jnp.float32)
                            for c in range(3))

        def mean_body(t, acc):
            s, p = load(t)
            p = _chain(p, seq, factors, 0.0, dtype, before_contrast=True)
            owned = s + jnp.arange(block) >= t * block
            return acc + jnp.sum(jnp.where(owned, blend_gray(*p, dtype), 0.0))

        mean = lax.fori_loop(0, tiles, mean_body, jnp.float32(0.0)) / pixels

        def chain_body(t, carry):
            s, p = load(t)
            p = _chain(p, seq, factors, mean, dtype)
            for c in range(3):
                o_ref[pl.ds(s * 3 + c, block, stride=3)] = to_dtype(p[c], dtype)
            return carry

        lax.fori_loop(0, tiles, chain_body, 0)

    def one(image, seq, factors):
        h, w, _ = image.shape
        flat = image.reshape(-1)
        par = jnp.concatenate([factors, jnp.zeros(4, jnp.float32)])
        out = pl.pallas_call(functools.partial(kernel, pixels=h * w, dtype=image.dtype),
                             out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                             **_params(1, block, warps, interpret))(
                                 seq.astype(jnp.int32), par, flat)
        return out.reshape(image.shape)

    return one


def static_order(order, interpret):
    """The committed two kernels with one order for every image, unrolled (no ``lax.switch``):
    what the per-image branching costs. Not the same result as the batch's own orders."""
    k = _kernel_module()
    from augjax.kernels.pixels import blend_gray

    def run(p, factors, mean, dtype, stop_at_contrast):
        branches = k._branches(dtype)
        for j in order:
            if stop_at_contrast and j == 1:
                break
            p = branches[j](p, factors, mean)
        return p

    def contrast_kernel(seq_ref, par_ref, x_ref, o_ref, *, layout):
        _, factors, _ = k._scalars(seq_ref, par_ref)
        start = layout.start()
        p = run(layout.load(x_ref, start), factors, 0.0, layout.dtype, True)
        gray = jnp.where(layout.owned(start), blend_gray(*p, layout.dtype), 0.0)
        o_ref[pl.program_id(0)] = jnp.sum(gray)

    def chain_kernel(seq_ref, par_ref, x_ref, o_ref, *, layout):
        _, factors, mean = k._scalars(seq_ref, par_ref)
        start = layout.start()
        p = run(layout.load(x_ref, start), factors, mean, layout.dtype, False)
        layout.store(o_ref, start, p)

    def one(image, seq, factors):
        seq = seq.astype(jnp.int32)

        def second(mean):
            return seq, jnp.concatenate([factors, jnp.stack([mean]), jnp.zeros(3, jnp.float32)])

        first = seq, jnp.concatenate([factors, jnp.zeros(4, jnp.float32)])
        return _two_passes(image, contrast_kernel, chain_kernel, first, second, interpret,
                           contrast=1 in order)

    return one


def generic(interpret, hue=True):
    """Per position one blend whose operands come as scalars computed outside the kernel
    (ratio, the grayscale's weight, a scalar other: brightness (f, 0, 0), contrast (f, 0, mean),
    saturation (f, 1, 0), none (1, 0, 0)) and a two-way branch to hue, instead of a five-way
    switch; the active stages first, the inactive ones left out statically."""
    k = _kernel_module()
    from augjax.catalog._tv_color import hue_planes
    from augjax.kernels.pixels import blend_gray, blend_planes

    def stage(p, j, flags_ref, par_ref, dtype, n):
        ratio, weight, other = par_ref[j], par_ref[n + j], par_ref[2 * n + j]

        def blend(q):
            return blend_planes(q, blend_gray(*q, dtype) * weight + other, ratio, dtype)

        if not hue:
            return blend(p)
        return lax.cond(flags_ref[j] != 0,
                        lambda q: hue_planes(*q, par_ref[3 * n], dtype), blend, p)

    def contrast_kernel(flags_ref, par_ref, x_ref, o_ref, *, layout, n):
        start = layout.start()
        p = layout.load(x_ref, start)
        for j in range(n - 1):  # contrast is among the n active stages
            p = stage(p, j, flags_ref, par_ref, layout.dtype, n)
        gray = jnp.where(layout.owned(start), blend_gray(*p, layout.dtype), 0.0)
        o_ref[pl.program_id(0)] = jnp.sum(gray)

    def chain_kernel(flags_ref, par_ref, x_ref, o_ref, *, layout, n):
        start = layout.start()
        p = layout.load(x_ref, start)
        for j in range(n):
            p = stage(p, j, flags_ref, par_ref, layout.dtype, n)
        layout.store(o_ref, start, p)

    def one(image, seq, factors):
        seq = seq.astype(jnp.int32)
        if not hue:
            seq = jnp.where(seq == 3, k.IDENTITY, seq)
        seq = seq[jnp.argsort(seq == k.IDENTITY, stable=True)]
        n = 4 if hue else 3  # the lab's batch: all four active (hue=False: three)
        kind = seq[:n]
        ratio = jnp.where(kind < 3, factors[jnp.minimum(kind, 2)], 1.0)
        weight = (kind == 2).astype(jnp.float32)
        before = jnp.cumprod(kind != 1).astype(bool)
        pre_ratio = jnp.where(before, ratio, 1.0)
        first = ((before & (kind == 3)).astype(jnp.int32),
                 jnp.concatenate([pre_ratio, weight, jnp.zeros(n), factors[3:]]))

        def second(mean):
            other = jnp.where(kind == 1, mean, 0.0)
            return ((kind == 3).astype(jnp.int32),
                    jnp.concatenate([ratio, weight, other, factors[3:]]))

        return _two_passes(image, functools.partial(contrast_kernel, n=n),
                           functools.partial(chain_kernel, n=n), first, second, interpret)

    return one


def committed(interpret):
    k = _kernel_module()
    return lambda image, seq, factors: k.jitter_kernel(image, seq, factors, True, interpret)


def main(argv=None) -> int:
    ap = array_parser(__doc__.splitlines()[0])
    ap.add_argument("--onepass", nargs="*", default=[], help="BLOCKxWARPS per image program")
    ap.add_argument("--flat", nargs="*", default=[], help="BLOCKxWARPS for the flat chain pass")
    ap.add_argument("--copies", nargs="*", default=["512x4", "2048x4", "4096x8"])
    ap.add_argument("--static", nargs="*", default=[],
                    help="stage orders (digits 0-3: brightness, contrast, saturation, hue) to "
                         "run unrolled for every image, e.g. 0123 023 13")
    ap.add_argument("--generic", action="store_true",
                    help="the blends as one stage with scalar operands, a branch only to hue")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    dev = jax.devices(args.device)[0]
    interpret = dev.platform == "cpu"
    result = {"date": datetime.date.today().isoformat(), "devices": str(jax.devices()),
              "jax": jax.__version__, "batches": {}}
    for b in args.batch:
        x, _, keys = array_batch(dev, b, args.size)
        factors, order = jitter_draws(keys, x)
        rows = {}

        def row(name, fn, ref=None):
            ms = time_jax(fn, args.iters, args.reps)
            entry = {"ms": ms}
            if ref is not None:
                out = np.asarray(fn()).astype(np.int16)
                entry["differ"] = int((out != ref).sum())
                entry["max_levels"] = int(abs(out - ref).max())
            rows[name] = entry
            print(f"B={b:<5} {name:<34} {ms:8.3f} ms  {entry}", flush=True)

        copy = jax.jit(lambda a: a + jnp.uint8(1))
        row("xla copy (x + 1)", lambda: copy(x))
        for tile in args.copies:
            bl, wa = (int(v) for v in tile.split("x"))
            xs = np.asarray(x).astype(np.int16)
            row(f"copy strided {tile}", functools.partial(copy_strided(bl, wa, interpret), x), xs)
            row(f"copy flat {tile}", functools.partial(copy_flat(bl, wa, interpret), x), xs)
            row(f"copy flat-gather {tile}",
                functools.partial(copy_flat(bl, wa, interpret, gather=True), x), xs)
        base = jax.jit(jax.vmap(committed(interpret)))
        ref = np.asarray(base(x, order, factors)).astype(np.int16)
        row("committed kernel", lambda: base(x, order, factors), ref)
        for stages in args.static:
            fn = jax.jit(jax.vmap(static_order(tuple(int(c) for c in stages), interpret)))
            row(f"static order {stages}", lambda: fn(x, order, factors))
        if args.generic:
            fn = jax.jit(jax.vmap(generic(interpret)))
            row("generic blends + hue branch", lambda: fn(x, order, factors), ref)
            fn = jax.jit(jax.vmap(generic(interpret, hue=False)))
            nohue = jax.jit(jax.vmap(lambda im, s, f: _kernel_module().jitter_kernel(
                im, jnp.where(s == 3, 4, s), f, True, interpret)))
            ref3 = np.asarray(nohue(x, order, factors)).astype(np.int16)
            row("committed, no hue", lambda: nohue(x, order, factors), ref3)
            row("generic blends, no hue", lambda: fn(x, order, factors), ref3)
        for tile in args.flat:
            bl, wa = (int(v) for v in tile.split("x"))
            fn = jax.jit(jax.vmap(flat_chain(bl, wa, interpret)))
            row(f"flat chain pass {tile}", lambda: fn(x, order, factors), ref)
        for tile in args.onepass:
            bl, wa = (int(v) for v in tile.split("x"))
            fn = jax.jit(jax.vmap(onepass(bl, wa, interpret)))
            row(f"onepass {tile}", lambda: fn(x, order, factors), ref)
        result["batches"][str(b)] = rows
    write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
