"""mosaic and copy_paste against their peers, measured in the same run.

- arrays: augjax ``mosaic`` (with boxes) vs kornia ``RandomMosaic`` (p=1, 2x2, boxes) and
  albumentations ``Mosaic`` (per image, three partners in its metadata, boxes); augjax
  ``copy_paste`` (per-instance masks and boxes) alone (no peer has it on arrays);
- DALI: the augjax ops inside a ``@pipeline_def`` vs ``fn.multi_paste`` doing the same pixel
  work (mosaic: four pastes per output, from the params augjax drew; copy-paste: one paste of
  each chosen instance's box from the partner, i.e. box copy-paste, of the images and of the
  per-instance masks, the partner's pasted beside the own: both pipelines take and return
  the masks). ``--device gpu`` for the
  H200 run (target: no slower than ``fn.multi_paste``).

Times are the median of ``--repeats`` runs of one batch, after a warm-up (compile) run.
``python benchmarks/bench_mosaic.py --batch 16 --size 128 --out results/x.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import jax
import numpy as np

import augjax
from augjax.catalog.paste import copy_paste, mosaic

M = 8  # boxes / instances per image


def _timeit(fn, repeats, warmup=3):
    for _ in range(warmup):  # the compile, then the first runs (program store, caches)
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def data(n, s, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, s, s, 3), dtype=np.uint8)
    xy = rng.uniform(0, s * 0.7, (n, M, 2))
    wh = rng.uniform(4, s * 0.3, (n, M, 2))
    boxes = np.concatenate([xy, xy + wh], -1).astype(np.float32)
    ys, xs = np.mgrid[0:s, 0:s] + 0.5
    b = boxes[:, None, None]
    masks = ((xs[None, :, :, None] >= b[..., 0]) & (xs[None, :, :, None] < b[..., 2])
             & (ys[None, :, :, None] >= b[..., 1]) & (ys[None, :, :, None] < b[..., 3]))
    return x, boxes, masks.astype(np.uint8)


def arrays(n, s, repeats):
    x, boxes, masks = data(n, s)
    xj, bj, mj = (jax.device_put(a) for a in (x, boxes, masks))
    key = jax.random.key(0)
    out = {}

    def run_mosaic():
        jax.block_until_ready(mosaic(xj, key=key, boxes=bj))

    def run_copy_paste():
        jax.block_until_ready(copy_paste(xj, key=key, boxes=bj, masks=mj))

    out["augjax/mosaic"] = _timeit(run_mosaic, repeats)
    out["augjax/copy_paste"] = _timeit(run_copy_paste, repeats)
    try:
        import kornia.augmentation as K
        import torch

        aug = K.RandomMosaic(output_size=(s, s), p=1.0, data_keys=["input", "bbox_xyxy"])
        xt = torch.from_numpy(x).permute(0, 3, 1, 2).float() / 255.0
        bt = torch.from_numpy(boxes)

        def run_kornia():
            with torch.no_grad():
                aug(xt, bt)

        out["kornia/RandomMosaic"] = _timeit(run_kornia, repeats)
    except Exception as err:  # noqa: BLE001  (the peer is optional; say why it is missing)
        out["kornia/RandomMosaic"] = f"unavailable: {err}"
    try:
        import albumentations as A

        aug = A.Compose([A.Mosaic(target_size=(s, s), cell_shape=(s, s), p=1.0)],
                        bbox_params=A.BboxParams(format="pascal_voc", label_fields=["labels"]))
        rng = np.random.default_rng(1)
        meta = [[{"image": x[j], "bboxes": boxes[j], "labels": np.arange(M)}
                 for j in rng.integers(0, n, 3)] for _ in range(n)]

        def run_albu():
            for i in range(n):
                aug(image=x[i], bboxes=boxes[i], labels=np.arange(M), mosaic_metadata=meta[i])

        out["albumentations/Mosaic"] = _timeit(run_albu, repeats)
    except Exception as err:  # noqa: BLE001
        out["albumentations/Mosaic"] = f"unavailable: {err}"
    return out


def _paste_args(n, s, kind):
    """``fn.multi_paste`` arguments doing the pixel work augjax's op does for its params."""
    x, boxes, masks = data(n, s)
    key = jax.random.key(0)
    ids = []  # per output image: (input index, source anchor, shape, output anchor) rows
    if kind == "mosaic":
        p = mosaic.sample(x, key=key)
        tiles, center = np.asarray(p["tiles"]), np.asarray(p["center"])
        for i in range(n):
            yc, xc = center[i]
            rows = []
            for q in range(4):
                dy = yc - s if q < 2 else yc
                dx = xc - s if q % 2 == 0 else xc
                y0, y1 = max(dy, 0, yc if q >= 2 else 0), min(dy + s, s, yc if q < 2 else s)
                x0, x1 = max(dx, 0, xc if q % 2 else 0), min(dx + s, s, xc if q % 2 == 0 else s)
                if y1 > y0 and x1 > x0 and tiles[i, q] >= 0:
                    rows.append((tiles[i, q], (y0 - dy, x0 - dx), (y1 - y0, x1 - x0), (y0, x0)))
            ids.append(rows)
    else:
        p = copy_paste.sample(x, key=key, boxes=boxes)
        perm, pasted = np.asarray(p["perm"]), np.asarray(p["pasted"])
        for i in range(n):
            rows = [(i, (0, 0), (s, s), (0, 0))]  # the image itself, then the pasted boxes
            for m in np.nonzero(pasted[i])[0]:
                x1, y1, x2, y2 = np.floor(boxes[perm[i], m] + 0.5).astype(int)
                rows.append((perm[i], (y1, x1), (y2 - y1, x2 - x1), (y1, x1)))
            ids.append(rows)
    def col(k, dtype=np.int32):
        return [np.array([r[k] for r in rows], dtype).reshape(len(rows), -1) for rows in ids]
    return x, boxes, masks, [np.ascontiguousarray(c[:, 0]) for c in col(0)], col(1), col(2), col(3)


def _const(batch):
    return lambda: batch


def dali(n, s, repeats, device):
    from nvidia.dali import fn, pipeline_def

    out = {}
    for kind in ("mosaic", "copy_paste"):
        x, boxes, masks, in_ids, in_a, shapes, out_a = _paste_args(n, s, kind)
        seeds = np.random.default_rng(3).integers(0, 2**30, (n, 2), dtype=np.int32)
        for impl in ("augjax", "multi_paste"):
            @pipeline_def(batch_size=n, num_threads=4, device_id=0 if device == "gpu" else None,
                          prefetch_queue_depth=1)
            def pipe():
                im = fn.external_source(source=lambda: x, batch=True, layout="HWC")
                im = im.gpu() if device == "gpu" else im
                if impl == "multi_paste":
                    args = [fn.external_source(source=_const(a), batch=True)
                            for a in (in_ids, in_a, shapes, out_a)]
                    pasted = fn.multi_paste(im, in_ids=args[0], in_anchors=args[1],
                                            shapes=args[2], out_anchors=args[3],
                                            output_size=[s, s])
                    if kind == "mosaic":
                        return pasted
                    # Like for like with augjax's targets: the same (N, H, W, M) masks enter
                    # the pipeline, and the partner's masks are pasted with the same
                    # arguments beside the own ones (augjax returns M -> 2M channels).
                    mk = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
                    mk = mk.gpu() if device == "gpu" else mk
                    moved = fn.multi_paste(mk, in_ids=args[0], in_anchors=args[1],
                                           shapes=args[2], out_anchors=args[3],
                                           output_size=[s, s])
                    return pasted, fn.cat(mk, moved, axis=2)
                bx = fn.external_source(source=lambda: boxes, batch=True)
                sd = fn.external_source(source=lambda: seeds, batch=True)
                if device == "gpu":
                    bx, sd = bx.gpu(), sd.gpu()
                if kind == "mosaic":
                    return mosaic(im, boxes=bx, seeds=sd)["images"]
                mk = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
                mk = mk.gpu() if device == "gpu" else mk
                out = copy_paste(im, boxes=bx, masks=mk, seeds=sd)
                return out["images"], out["masks"]

            p = pipe()
            p.build()
            out[f"dali-{device}/{impl}/{kind}"] = _timeit(p.run, repeats)
        out[f"dali-{device}/ratio/{kind}"] = (out[f"dali-{device}/augjax/{kind}"]
                                              / out[f"dali-{device}/multi_paste/{kind}"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--skip-arrays", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    res = {"batch": args.batch, "size": args.size, "boxes": M, "repeats": args.repeats,
           "device": args.device, "jax": jax.__version__, "augjax": augjax.__version__,
           "backend": jax.default_backend(), "machine": platform.processor() or platform.machine(),
           "date": time.strftime("%Y-%m-%d"), "ms": {}}
    if not args.skip_arrays:
        res["ms"].update(arrays(args.batch, args.size, args.repeats))
        ms = res["ms"]
        for peer in ("kornia/RandomMosaic", "albumentations/Mosaic"):
            if isinstance(ms.get(peer), float):
                ms[f"ratio/mosaic-vs-{peer.split('/')[0]}"] = ms["augjax/mosaic"] / ms[peer]
    try:
        res["ms"].update(dali(args.batch, args.size, args.repeats, args.device))
    except ImportError as err:
        res["ms"]["dali"] = f"unavailable: {err}"
    print(json.dumps(res, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
