"""Rotated boxes through affine on the CPU: augjax against torchvision v2 in the same run.

Each case moves a batch of ``B`` uint8 HWC images with ``M`` CXCYWHR boxes each through one
affine warp (rotation, translation, scale, shear; the same params for both libraries):

- ``augjax``: ``ops.affine.apply(images, params=..., boxes=..., boxes_format="cxcywhr")``,
  one compiled call for the batch (images and boxes);
- ``augjax-images``: the same call without boxes (what the boxes add);
- ``torchvision``: ``F.affine`` per sample on a ``tv_tensors.Image`` and its ``BoundingBoxes``
  (the v2 way: one call per sample), one thread;
- ``torchvision-boxes``: ``F.affine`` on the ``BoundingBoxes`` alone, per sample.

Each case runs ``--repeats`` times, the cases interleaved round by round after a warm-up
(compilation excluded); ratios are augjax's fastest time over the peer's (lower: augjax
faster), medians are recorded too. Usage::

    python benchmarks/rotated_boxes.py --batch 64 --boxes 32 --out benchmarks/results/x.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import jax
import numpy as np


def _times_ms(fns: dict, repeats: int) -> dict:
    """Each callable's times (ms), interleaved round by round after one warm-up each, so that
    load from other work falls on all of them alike."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1e3)
    return times


def main() -> None:
    import torch
    import torchvision
    from torchvision import tv_tensors
    from torchvision.transforms.v2 import functional as F

    import augjax
    from augjax import ops

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--boxes", type=int, default=32)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    n, m, s = args.batch, args.boxes, args.size
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, s, s, 3), dtype=np.uint8)
    boxes = np.concatenate([rng.uniform(0, s, (n, m, 2)), rng.uniform(4, s / 4, (n, m, 2)),
                            rng.uniform(-180, 180, (n, m, 1))], -1).astype(np.float32)
    op = ops.affine.bind(degrees=30.0, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=10.0)
    params = op.sample(images, key=jax.random.key(0))
    p = jax.tree_util.tree_map(np.asarray, params)

    def ours():
        out = op.apply(images, params=params, boxes=boxes, boxes_format="cxcywhr")
        jax.block_until_ready(out)

    def ours_images():
        jax.block_until_ready(op.apply(images, params=params))

    timgs = [tv_tensors.Image(torch.from_numpy(images[i]).permute(2, 0, 1)) for i in range(n)]
    tboxes = [tv_tensors.BoundingBoxes(torch.from_numpy(boxes[i]), format="CXCYWHR",
                                       canvas_size=(s, s)) for i in range(n)]
    kw = [dict(angle=float(p["degrees"][i]), translate=[float(v) for v in p["translate"][i]],
               scale=float(p["scale"][i]), shear=[float(v) for v in p["shear"][i]])
          for i in range(n)]

    def theirs():
        for i in range(n):
            F.affine(timgs[i], **kw[i])
            F.affine(tboxes[i], **kw[i])

    def theirs_boxes():
        for i in range(n):
            F.affine(tboxes[i], **kw[i])

    times = _times_ms({"augjax": ours, "augjax-images": ours_images, "torchvision": theirs,
                       "torchvision-boxes": theirs_boxes}, args.repeats)
    ms = {k: min(v) for k, v in times.items()}
    result = {
        "what": "affine with CXCYWHR rotated boxes, CPU, ms per batch (ratios of the minima)",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores "
                   f"(shared with other work during the run: times are noisy)",
        "versions": {"augjax": augjax.__version__, "jax": jax.__version__,
                     "torch": torch.__version__, "torchvision": torchvision.__version__},
        "batch": n, "boxes_per_image": m, "size": s, "repeats": args.repeats,
        "torch_threads": 1, "ms_min": {k: round(v, 3) for k, v in ms.items()},
        "ms_median": {k: round(statistics.median(v), 3) for k, v in times.items()},
        "ratios": {"augjax/torchvision": round(ms["augjax"] / ms["torchvision"], 3),
                   "boxes: (augjax - augjax-images)/torchvision-boxes":
                       round((ms["augjax"] - ms["augjax-images"]) / ms["torchvision-boxes"], 3)},
    }
    print(json.dumps(result, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
