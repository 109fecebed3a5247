"""The YOLO recipe's steps on arrays, one at a time, in CPU-ms per image (``time.process_time``:
this process's user + system time, XLA's threads included), B=16, 240x320 uint8 tiles (480x640
images resized as YOLO's ``load_image`` does), 640^2 mosaic, 320^2 output, 3 boxes per image.

Each step is the chain's one-step slice (``chain[j:j + 1]``: the same draws), called as a user
calls it (its own compiled programs, not inside a ``jax.jit``) on the batch the step before gave
(boxes and ``boxes_valid`` carried, ``sanitize`` as in the recipe), then the whole chain; the
steps alternate for ``--rounds`` rounds of ``--calls`` calls each after 2 warm-up calls, and the
median per-call CPU time of the rounds is reported (robust on a shared machine).

    python benchmarks/yolo_stages.py                    # prints a table
    python benchmarks/yolo_stages.py --out results/x.json
    python benchmarks/yolo_stages.py --dali-floor       # and the DALI pipeline's own steps

``--dali-floor`` also times what the recipe's DALI CPU pipeline does before the chain, on 64
painted 480x640 JPEGs (``examples/sample_dataset.py``, q95) with one thread: the reader and
``fn.decoders.image``, then with the recipe's ``fn.resize`` to the tiles (``grain_bench``'s
``time_loader``: CPU-ms per image of the process).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))


def _cpu() -> float:
    return time.process_time()


def batch(n: int, hw: tuple[int, int], seed: int = 0):
    """Smooth uint8 images (JPEG-like content) and 3 boxes each."""
    rng = np.random.default_rng(seed)
    h, w = hw
    ys, xs = np.mgrid[0:h, 0:w]
    base = np.stack([(xs * 255 // w), (ys * 255 // h), ((xs + ys) * 255 // (h + w))], -1)
    images = (base[None] + rng.integers(0, 40, (n, 1, 1, 3))).clip(0, 255).astype(np.uint8)
    xy = rng.uniform(0, 0.6, (n, 3, 2)) * [w, h]
    wh = rng.uniform(0.1, 0.4, (n, 3, 2)) * [w, h]
    boxes = np.concatenate([xy, xy + wh], -1).astype(np.float32)
    return images, boxes, np.ones((n, 3), bool)


def stages(size: int):
    """(name, one-step chain) per step of ``recipes_yolo.yolo(size)``, then the whole chain."""
    import recipes_yolo

    chain = recipes_yolo.yolo(size)
    names = [str(s).split(".bind")[0] for s in chain]
    return [(n, chain[j:j + 1]) for j, n in enumerate(names)] + [("chain", chain)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=320)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--dali-floor", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args(argv)

    import jax
    import recipes_yolo

    from harness import machine, today, versions

    hw = recipes_yolo.tile_size((480, 640), args.size)
    images, boxes, valid = batch(args.batch, hw)
    key = jax.random.key(0)
    runs, inputs = [], (images, boxes, valid)
    for name, chain in stages(args.size):
        x, b, v = (images, boxes, valid) if name == "chain" else inputs
        def fn(x, b, v, c=chain):  # called as users call it (its own programs, not in a jit)
            return c(x, key=key, boxes=b, boxes_valid=v, sanitize=recipes_yolo.SANITIZE)

        out = fn(x, b, v)
        jax.block_until_ready(out)
        if name != "chain":
            inputs = (out["images"], out["boxes"], out["boxes_valid"])
        runs.append((name, fn, (x, b, v)))
    times = {name: [] for name, _, _ in runs}
    for _ in range(args.rounds):
        for name, fn, a in runs:
            jax.block_until_ready(fn(*a))
            jax.block_until_ready(fn(*a))
            c0 = _cpu()
            for _ in range(args.calls):
                jax.block_until_ready(fn(*a))
            times[name].append((_cpu() - c0) * 1e3 / (args.calls * args.batch))
    rows = {name: statistics.median(t) for name, t in times.items()}
    print(f"B={args.batch}, tiles {hw}, size {args.size}: CPU-ms per image (median of "
          f"{args.rounds} rounds x {args.calls} calls)")
    for name, ms in rows.items():
        print(f"  {name:14s} {ms:6.3f}   rounds {[round(t, 3) for t in times[name]]}")
    floor = dali_floor(args.batch, hw) if args.dali_floor else None
    for name, ms in (floor or {}).items():
        print(f"  DALI {name:28s} {ms:6.3f}")
    print(f"  load average {os.getloadavg()}")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "date": today(), "machine": machine(), "versions": versions(),
            "load": os.getloadavg(), "batch": args.batch, "size": args.size, "tiles": hw,
            "cpu_ms_per_image": rows, "rounds": times, "dali_floor": floor}, indent=1) + "\n")
    return 0


def dali_floor(batch: int, tiles: tuple[int, int], rounds: int = 2) -> dict[str, float]:
    """CPU-ms per image of the DALI pipeline's steps before the chain: read + decode, and
    read + decode + the recipe's ``fn.resize`` to ``tiles`` (medians of ``rounds``)."""
    import tempfile

    from grain_bench import time_loader
    from nvidia.dali import fn, pipeline_def, types
    from sample_dataset import make_dataset

    root = Path(tempfile.mkdtemp(prefix="augjax-yolo-floor-"))
    make_dataset(root, sizes=((480, 640),) * 64)

    def loader(resize: bool):
        @pipeline_def(batch_size=batch, num_threads=1, device_id=None, seed=0)
        def pipe():
            jpegs, boxes, _ = fn.readers.coco(
                file_root=str(root / "images"),
                annotations_file=str(root / "annotations.json"), ltrb=True,
                random_shuffle=True)
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            if resize:
                images = fn.resize(images, size=list(tiles), antialias=True)
            return images, boxes

        p = pipe()
        p.build()
        while True:
            yield p.run()

    out = {}
    for name, resize in (("read + decode", False), (f"+ fn.resize to {tiles}", True)):
        out[name] = statistics.median(time_loader(lambda r=resize: loader(r), batch, 3, 8)[1]
                                      for _ in range(rounds))
    return out


if __name__ == "__main__":
    sys.exit(main())
