"""The YOLO training augmentation (Ultralytics YOLOv5 / YOLOv8) as one augjax chain, in a DALI
pipeline from JPEGs and on arrays, next to an independent NumPy / OpenCV reference of the same
recipe.

    python examples/recipes_yolo.py                   # DALI CPU pipeline, 2 batches
    python examples/recipes_yolo.py --arrays          # the arrays path instead
    python examples/recipes_yolo.py --save yolo.png   # the first batch with its boxes

The recipe follows ``ultralytics/data/augment.py`` (``v8_transforms``: ``Mosaic``,
``RandomPerspective``, ``RandomHSV``, ``RandomFlip``) with the training defaults of
``ultralytics/cfg/default.yaml`` (read 2026-12-04): ``mosaic: 1.0``, ``degrees: 0.0``,
``translate: 0.1``, ``scale: 0.5``, ``shear: 0.0``, ``perspective: 0.0``, ``hsv_h: 0.015``,
``hsv_s: 0.7``, ``hsv_v: 0.4``, ``flipud: 0.0``, ``fliplr: 0.5`` (``mixup`` and
``copy_paste`` 0). Step by step, for an output side ``s`` (``imgsz``):

1. each image is resized so that its longer side is ``s`` (YOLO's ``load_image``): augjax
   ``resize`` to the ``tile`` size (the images of a batch share one size; resize JPEGs of
   different sizes to one size first);
2. 4-image mosaic on a 2s x 2s canvas filled with 114, the centre uniform in [s/2, 3s/2) per
   axis, sample ``i`` at the top left and three others around it: augjax ``mosaic`` with
   ``size=2s`` and ``center_range=(0.75, 1.25)`` (the partners are other samples of the batch,
   YOLO's are random images of the dataset);
3. ``RandomPerspective`` with the mosaic border: a zoom by ``U(1 - 0.5, 1 + 0.5)`` about the
   canvas centre and a shift of ``U(-0.1, 0.1) s`` per axis, bilinear, 114 outside, then the
   middle s x s: augjax ``affine(scale=(0.5, 1.5), translate=(0.05, 0.05), size=s)`` on the
   2s canvas (0.05 of 2s; ``size``: only the middle s x s is resampled, the pixels of
   ``affine`` then ``center_crop(s)``, as YOLO's ``warpAffine`` writes only its output);
   boxes follow (their corners through the matrix) and are
   kept as YOLO's ``box_candidates`` keeps them: at least 2 px wide and high and at least 10%
   of their area left (``sanitize=Sanitize(min_size=2, min_visibility=0.1)``);
4. ``RandomHSV``: hue, saturation and value gains ``1 + U(-1, 1) * (0.015, 0.7, 0.4)`` in
   OpenCV's HSV: augjax ``color_jitter(brightness=0.4, saturation=0.7, hue=0.015)`` (the value
   gain is a brightness factor; saturation blends with the gray image as torchvision does and
   hue is a shift of up to 0.015 turns, where YOLO multiplies OpenCV's hue by its gain; the
   three run in a random order: an approximation, not the same pixels);
5. ``RandomFlip(p=0.5)`` left-right: augjax ``flip(p=0.5)``.

Differences (apart from step 4): YOLO's shift is continuous, augjax's (torchvision
RandomAffine's) is rounded to whole pixels of the 2s canvas; YOLO clips a box's corners, then
tests its area against the box before the perspective, augjax's visibility multiplies the
area fractions left by the mosaic and the crop. Boxes come back as ``4 M`` per image (the
mosaic's four tiles, tile by tile), ``boxes_valid`` says which are kept; their labels:
:func:`box_labels`.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detection import check_batch, pad_boxes, save, to_numpy  # noqa: E402 (beside this file)
from recipes_detection import padded  # noqa: E402
from sample_dataset import make_dataset  # noqa: E402

#: Ultralytics' training defaults (``ultralytics/cfg/default.yaml``) this recipe uses.
HYP = {"mosaic": 1.0, "degrees": 0.0, "translate": 0.1, "scale": 0.5, "shear": 0.0,
       "perspective": 0.0, "hsv_h": 0.015, "hsv_s": 0.7, "hsv_v": 0.4, "flipud": 0.0,
       "fliplr": 0.5}
#: YOLO's gray (114 levels) as a fraction of the range, augjax's fills.
FILL = 114 / 255
#: YOLO's ``box_candidates``: sides over 2 px and more than 10% of the area left.
SANITIZE = {"min_size": 2.0, "min_visibility": 0.1}


def tile_size(hw: tuple[int, int], size: int) -> tuple[int, int]:
    """YOLO's ``load_image`` size: the longer side becomes ``size`` (``ceil``, at most ``size``)."""
    h, w = hw
    r = size / max(h, w)
    return min(math.ceil(h * r), size), min(math.ceil(w * r), size)


def yolo(size: int = 640, input_hw: tuple[int, int] | None = None, *, color: bool = True,
         hyp: dict | None = None):
    """The YOLO train augmentation as one augjax chain ending in ``size`` x ``size``. Images
    of ``input_hw`` are resized to :func:`tile_size` first; ``input_hw=None``: the images are
    already of that size (the DALI pipeline resizes with ``fn.resize``). ``color=False``
    leaves out the HSV step. Call it with ``sanitize=SANITIZE``."""
    import augjax
    from augjax import ops

    hyp = HYP | (hyp or {})
    t, g = hyp["translate"], hyp["scale"]
    steps = [ops.resize.bind(size=tile_size(input_hw, size))] if input_hw else []
    steps += [ops.mosaic.bind(size=(2 * size, 2 * size), center_range=(0.75, 1.25), fill=FILL,
                             p=hyp["mosaic"]),
             ops.affine.bind(translate=(t / 2, t / 2), scale=(1 - g, 1 + g),
                             interpolation="bilinear", fill=FILL, size=size)]
    if color:
        steps.append(ops.color_jitter.bind(brightness=hyp["hsv_v"], saturation=hyp["hsv_s"],
                                           hue=hyp["hsv_h"]))
    steps.append(ops.flip.bind(p=hyp["fliplr"]))
    return augjax.compose(steps)


def box_labels(chain, images_shape: tuple[int, ...], key, classes: np.ndarray) -> np.ndarray:
    """The labels of the chain's output boxes ``(N, 4 M)`` from the input boxes' labels
    ``classes`` ``(N, M)``: the mosaic's params drawn again with the call's ``key`` (in DALI:
    ``augjax.keys_from_seeds(seeds)``); only the shapes of the images matter."""
    from augjax.catalog.paste import mosaic_box_labels

    params = chain.sample(np.zeros(images_shape, np.uint8), key=key)
    mosaic = next(p for p in params if "tiles" in p)
    return np.asarray(mosaic_box_labels(np.asarray(classes), mosaic))


def run_arrays(images, boxes: np.ndarray, count: np.ndarray, key, size: int = 320,
               **kwargs):
    """The recipe on a decoded batch (N, H, W, 3) uint8 of one size: images, boxes,
    boxes_valid (NumPy) of ``4 M`` boxes per image."""
    images = np.asarray(images)
    chain = yolo(size, images.shape[1:3], **kwargs)
    out = chain(images, key=key, boxes=boxes, boxes_valid=count, sanitize=SANITIZE)
    return np.asarray(out["images"]), np.asarray(out["boxes"]), np.asarray(out["boxes_valid"])


def build_pipeline(root: str | Path, *, input_hw: tuple[int, int], batch_size: int = 16,
                   size: int = 320, max_boxes: int = 4, device: str = "cpu", seed: int = 0,
                   shuffle: bool = True, num_threads: int = 2, replay: bool = False,
                   **kwargs):
    """A built DALI pipeline: COCO reader, decoder, the recipe on JPEGs of ``input_hw``;
    outputs images, boxes, boxes_valid (``4 max_boxes`` per image), classes (the input's);
    ``replay=True`` adds the seeds and the chain's inputs (decoded images, boxes, counts).
    The images are resized to :func:`tile_size` by ``fn.resize`` (antialiased), their boxes
    scaled with them; the decoded images of ``replay`` are the resized ones. The output boxes'
    labels: :func:`box_labels` with ``augjax.keys_from_seeds(seeds)``."""
    import augjax
    from nvidia.dali import fn, pipeline_def, types

    root = Path(root)
    chain = yolo(size, None, **kwargs)
    th, tw = tile_size(input_hw, size)
    ratio = np.array([tw / input_hw[1], th / input_hw[0]] * 2, np.float32)

    @pipeline_def(batch_size=batch_size, num_threads=num_threads,
                  device_id=0 if device == "gpu" else None, seed=seed)
    def pipe():
        jpegs, boxes, classes = fn.readers.coco(
            file_root=str(root / "images"), annotations_file=str(root / "annotations.json"),
            ltrb=True, random_shuffle=shuffle, name="reader")
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu",
                                   output_type=types.RGB)
        images = fn.resize(images, size=[th, tw], antialias=True)
        boxes, classes, count = pad_boxes(boxes * types.Constant(ratio), classes, max_boxes)
        seeds = augjax.dali.sample_seeds(device="cpu" if device == "cpu" else "gpu")
        out = chain(images, boxes=boxes, boxes_valid=count, seeds=seeds, sanitize=SANITIZE)
        outputs = (out["images"], out["boxes"], out["boxes_valid"], classes, seeds)
        return outputs + (images, boxes, count) if replay else outputs

    p = pipe()
    p.build()
    return p


# ---------------------------------------------------------------------------------------------
# the reference: the same recipe in NumPy and OpenCV, one output image at a time


def reference(images: list[np.ndarray], boxes: list[np.ndarray], classes: list[np.ndarray],
              i: int, rng: np.random.Generator, size: int = 640, *, color: bool = True,
              hyp: dict | None = None):
    """Ultralytics' YOLO train augmentation of image ``i`` (and three others drawn from
    ``images`` by ``rng``), written from ``v8_transforms``' description: RGB uint8 images,
    XYXY pixel boxes and their classes in; the ``size`` x ``size`` image, the kept boxes and
    their classes out (YOLO drops the others)."""
    import cv2

    hyp = HYP | (hyp or {})
    s = size
    # Mosaic: load_image resizes (longer side s, bilinear in training), 2s canvas of 114
    idx = [i] + [int(j) for j in rng.integers(0, len(images), 3)]
    yc, xc = (int(rng.uniform(s / 2, 3 * s / 2)) for _ in range(2))
    canvas = np.full((2 * s, 2 * s, 3), 114, np.uint8)
    all_boxes, all_cls = [], []
    for q, j in enumerate(idx):
        h0, w0 = images[j].shape[:2]
        h, w = tile_size((h0, w0), s)
        img = cv2.resize(images[j], (w, h), interpolation=cv2.INTER_LINEAR)
        x0, y0 = (xc - w if q in (0, 2) else xc), (yc - h if q in (0, 1) else yc)
        ax0, ay0 = max(x0, 0), max(y0, 0)
        ax1, ay1 = min(x0 + w, 2 * s), min(y0 + h, 2 * s)
        canvas[ay0:ay1, ax0:ax1] = img[ay0 - y0:ay1 - y0, ax0 - x0:ax1 - x0]
        b = np.asarray(boxes[j], np.float64).reshape(-1, 4) * [w / w0, h / h0, w / w0, h / h0]
        all_boxes.append(b + [x0, y0, x0, y0])
        all_cls.append(np.asarray(classes[j]).reshape(-1))
    b = np.clip(np.concatenate(all_boxes), 0, 2 * s)  # YOLO clips to the 2s canvas
    cls = np.concatenate(all_cls)
    # RandomPerspective with border -s/2: centre to 0, zoom, shift to s (0.5 +- translate)
    scale = rng.uniform(1 - hyp["scale"], 1 + hyp["scale"])
    tx, ty = (rng.uniform(0.5 - hyp["translate"], 0.5 + hyp["translate"]) * s for _ in range(2))
    m = np.array([[scale, 0, tx - scale * s], [0, scale, ty - scale * s]])
    out = cv2.warpAffine(canvas, m, (s, s), flags=cv2.INTER_LINEAR, borderValue=(114,) * 3)
    corners = np.stack([b[:, [0, 1]], b[:, [2, 1]], b[:, [0, 3]], b[:, [2, 3]]], 1)
    moved = corners @ m[:, :2].T + m[:, 2]
    nb = np.concatenate([moved.min(1), moved.max(1)], -1)
    nb = np.clip(nb, 0, s)
    # box_candidates(wh_thr=2, ar_thr=100, area_thr=0.1) against the zoomed box before clipping
    w1, h1 = (b[:, 2] - b[:, 0]) * scale, (b[:, 3] - b[:, 1]) * scale
    w2, h2 = nb[:, 2] - nb[:, 0], nb[:, 3] - nb[:, 1]
    ar = np.maximum(w2 / (h2 + 1e-16), h2 / (w2 + 1e-16))
    keep = (w2 > 2) & (h2 > 2) & (w2 * h2 / (w1 * h1 + 1e-16) > 0.1) & (ar < 100)
    nb, cls = nb[keep], cls[keep]
    if color:  # RandomHSV: gains 1 + U(-1, 1) * (h, s, v), LUTs in OpenCV's HSV
        r = rng.uniform(-1, 1, 3) * [hyp["hsv_h"], hyp["hsv_s"], hyp["hsv_v"]] + 1
        hue, sat, val = cv2.split(cv2.cvtColor(out, cv2.COLOR_RGB2HSV))
        x = np.arange(256, dtype=np.float64)
        luts = [((x * r[0]) % 180).astype(np.uint8), np.clip(x * r[1], 0, 255).astype(np.uint8),
                np.clip(x * r[2], 0, 255).astype(np.uint8)]
        hsv = cv2.merge([cv2.LUT(c, lut) for c, lut in zip((hue, sat, val), luts)])
        out = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)
    if rng.random() < hyp["fliplr"]:
        out = out[:, ::-1].copy()
        nb = np.stack([s - nb[:, 2], nb[:, 1], s - nb[:, 0], nb[:, 3]], -1)
    return out, nb.astype(np.float32), cls


# ---------------------------------------------------------------------------------------------
# running it


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arrays", action="store_true", help="the arrays path (PIL decode)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--size", type=int, default=320)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", help="PNG of the first batch with its boxes")
    args = ap.parse_args(argv)

    import augjax
    import jax

    root = Path(tempfile.mkdtemp(prefix="augjax-yolo-"))
    hw = (480, 640)
    data = make_dataset(root, sizes=(hw,) * 32)
    print(f"wrote {len(data['images'])} painted 480x640 JPEGs to {root}")
    problems, kept = [], 0
    if args.arrays:
        from PIL import Image

        decoded = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in data["images"]])
        boxes, classes, count = padded(data["boxes"], data["classes"], 4)
    else:
        p = build_pipeline(root, input_hw=hw, batch_size=args.batch_size, size=args.size,
                           seed=args.seed)
    chain = yolo(args.size, hw) if args.arrays else yolo(args.size)
    th, tw = tile_size(hw, args.size)
    for it in range(args.iters):
        t0 = time.perf_counter()
        if args.arrays:
            sel = [(it * args.batch_size + i) % len(decoded) for i in range(args.batch_size)]
            key = jax.random.fold_in(jax.random.key(args.seed), it)
            images, out_boxes, valid = run_arrays(decoded[sel], boxes[sel], count[sel], key,
                                                  args.size)
            labels = box_labels(chain, decoded[sel].shape, key, classes[sel])
        else:
            images, out_boxes, valid, cls, seeds = to_numpy(p.run())
            labels = box_labels(chain, (len(seeds), th, tw, 3),
                                augjax.keys_from_seeds(seeds), cls)
        ms = (time.perf_counter() - t0) * 1e3
        problems += check_batch(images, out_boxes, valid, labels)
        kept += int(valid.sum())
        print(f"batch {it}: images {images.shape}, {int(valid.sum())} boxes kept, {ms:.0f} ms")
        if it == 0 and args.save:
            save(args.save, images, out_boxes, valid, labels)
            print(f"saved {args.save}")
    print(f"{kept} boxes kept, checks "
          f"{'ok' if not problems else 'FAILED: ' + '; '.join(sorted(set(problems)))}")
    import shutil
    shutil.rmtree(root, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
