"""normalize to channels-first after other ops: what XLA makes of the fused transpose.

On an H200 (B=256, 2026-12-01) ``normalize(chw=True)`` alone runs at 3.4 TB/s (0.057 ms), but
after an op that reads its input reversed (flip's mirror, mixup's partner ``x[::-1]``) the fused
kernel is 2.4x slower than the same chain with ``chw=False`` (flip + normalize 0.145 vs 0.061
ms; the 4-op chain 0.444 vs 0.302 ms, 1.634 vs 1.080 at B=1024). This script times each
producer followed by the normalization written several ways, all inside one ``jax.jit``, and
checks that every way gives augjax's bits:

- ``op``: augjax's ``normalize(chw=True)`` (the cast, the multiply-add and the transpose fused);
- ``hwc``: ``normalize(chw=False)``, the same values channels-last (what the transpose costs);
- ``barrier``: the producer's uint8 output materialised first (``lax.optimization_barrier``);
- ``u8-transpose``: the uint8 batch transposed to CHW first (behind a barrier), then normalized
  per channel plane;
- ``f32-then-transpose``: normalized channels-last, then the float32 batch transposed.

    python benchmarks/chw_probe.py --batch 256 1024
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from pipeline_bench import JITTER, MEAN, STD, TWIST, array_batch, array_parser, time_jax


def forms():
    """``name -> f(images) -> float32 NCHW`` (``hwc``: NHWC)."""
    import augjax

    ops = augjax.ops
    chw = ops.normalize.bind(mean=MEAN, std=STD, chw=True)
    hwc = ops.normalize.bind(mean=MEAN, std=STD, chw=False)
    scale = np.asarray([1.0 / (255.0 * s) for s in STD], np.float32)
    offset = np.asarray([-m / s for m, s in zip(MEAN, STD)], np.float32)

    def u8_transpose(img):
        t = lax.optimization_barrier(jnp.transpose(img, (0, 3, 1, 2)))
        return t.astype(jnp.float32) * scale[:, None, None] + offset[:, None, None]

    def f32_then_transpose(img):
        return jnp.transpose(lax.optimization_barrier(hwc(img)), (0, 3, 1, 2))

    return {
        "op": chw,
        "hwc": hwc,
        "barrier": lambda img: chw(lax.optimization_barrier(img)),
        "u8-transpose": u8_transpose,
        "f32-then-transpose": f32_then_transpose,
    }


def producers():
    """``name -> f(keys, images, labels) -> uint8 images``."""
    import augjax

    ops = augjax.ops
    fct = augjax.compose(ops.flip.bind(p=0.5), ops.color_twist.bind(**TWIST))
    fcm = augjax.compose(ops.flip.bind(p=0.5), ops.color_jitter.bind(**JITTER),
                         ops.mixup.bind(alpha=0.2, num_classes=10))
    return {
        "none": lambda k, x, y: x,
        "flip": lambda k, x, y: ops.flip(x, key=k, p=0.5),
        "brightness": lambda k, x, y: ops.brightness(x, key=k, factor=0.4),
        "flip + color_twist": lambda k, x, y: fct(x, key=k),
        "mixup": lambda k, x, y: ops.mixup(x, y, key=k, alpha=0.2, num_classes=10)[0],
        "flip + color_jitter + mixup": lambda k, x, y: fcm(x, y, key=k)[0],
    }


def main(argv=None) -> int:
    args = array_parser(__doc__.splitlines()[0]).parse_args(argv)
    dev = jax.devices(args.device)[0]
    for b in args.batch:
        x, y, keys = array_batch(dev, b, args.size)
        for pname, produce in producers().items():
            cells, ref = [], None
            for fname, form in forms().items():
                fn = jax.jit(lambda k, a, l, p=produce, f=form: f(p(k, a, l)))
                out = np.asarray(fn(keys, x, y))
                if fname == "hwc":
                    out = out.transpose(0, 3, 1, 2)
                ref = out if ref is None else ref
                same = "" if np.array_equal(out, ref) else " (differs)"
                ms = time_jax(lambda: fn(keys, x, y), args.iters, args.reps)
                cells.append(f"{fname} {ms:.3f}{same}")
            print(f"B={b:<5} {pname:<28} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
