"""Detection training batches in DALI: JPEGs of different sizes and their boxes (COCO json) to
uniform batches whose boxes follow every augmentation.

    python examples/detection.py                          # CPU, the sample dataset in a temp dir
    python examples/detection.py --device gpu             # decode ("mixed") and augment on GPU 0
    python examples/detection.py --save boxes.png         # the first batch with its boxes drawn
    python examples/detection.py --root DIR               # DIR/images/*.jpg + DIR/annotations.json
                                                          # (written there first if missing)

The pipeline:

1. ``fn.readers.coco`` reads each JPEG with its boxes (``ltrb=True``: XYXY pixels) and class ids;
   ``fn.decoders.image`` decodes them: a batch of images of different sizes.
2. ``jax_function`` takes only uniform shapes, so boxes are padded (or cut) to ``M`` per image
   with ``fn.slice``, and the true count goes along as ``boxes_valid`` (``(N,)`` counts).
3. One augjax chain: ``random_resized_crop`` reads the ragged images (each window drawn from the
   image's true size; DALI's ``fn.slice`` + ``fn.resize`` cut and resample it, and the boxes move
   by the same window), then flip, affine (rotation, shift, zoom) and colour jitter in one
   ``jax_function``. Boxes move by each op's matrix, are clamped to the image and flagged in
   ``boxes_valid`` once they leave it or shrink below a pixel (torchvision's
   ``SanitizeBoundingBoxes``); colour ops leave them alone.

It returns ``images`` (N, S, S, 3) uint8, ``boxes`` (N, M, 4) float32 XYXY, ``boxes_valid``
(N, M) bool and ``classes`` (N, M) int32 (-1 where padded). The same pipeline seed gives the same
batches.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sample_dataset import make_dataset  # examples/sample_dataset.py, beside this file


def chain(size: int, color: bool = True):
    """The augmentation chain: a ragged-input crop first, then geometry, then colour."""
    import augjax

    ops = [augjax.ops.random_resized_crop.bind(size=size, scale=(0.3, 1.0)),
           augjax.ops.flip.bind(p=0.5),
           augjax.ops.affine.bind(degrees=(-10, 10), translate=(0.05, 0.05), scale=(0.9, 1.1))]
    if color:
        ops.append(augjax.ops.color_jitter.bind(brightness=0.3, contrast=0.3, saturation=0.3,
                                                hue=0.05))
    return augjax.compose(ops)


def pad_boxes(boxes, classes, max_boxes: int):
    """Ragged per-image boxes (K, 4) and classes (K,) as (M, 4), (M,) and the count min(K, M)."""
    from nvidia.dali import fn, math, types

    count = math.min(boxes.shape(dtype=types.INT32)[0], max_boxes)
    boxes = fn.slice(boxes, start=[0], shape=[max_boxes], axes=[0], out_of_bounds_policy="pad",
                     fill_values=0.0)
    classes = fn.slice(fn.reshape(classes, shape=[-1]), start=[0], shape=[max_boxes], axes=[0],
                       out_of_bounds_policy="pad", fill_values=-1)
    return boxes, classes, count


def build_pipeline(root: str | Path, *, batch_size: int = 8, size: int = 256,
                   max_boxes: int = 8, device: str = "cpu", seed: int = 0, color: bool = True,
                   shuffle: bool = True, num_threads: int = 2):
    """The DALI pipeline (built): outputs images, boxes, boxes_valid, classes."""
    from nvidia.dali import fn, pipeline_def, types

    root = Path(root)

    @pipeline_def(batch_size=batch_size, num_threads=num_threads,
                  device_id=0 if device == "gpu" else None, seed=seed)
    def pipe():
        jpegs, boxes, classes = fn.readers.coco(
            file_root=str(root / "images"), annotations_file=str(root / "annotations.json"),
            ltrb=True, random_shuffle=shuffle, name="reader")
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu",
                                   output_type=types.RGB)
        boxes, classes, count = pad_boxes(boxes, classes, max_boxes)
        out = chain(size, color)(images, boxes=boxes, boxes_valid=count)
        return out["images"], out["boxes"], out["boxes_valid"], classes

    p = pipe()
    p.build()
    return p


def to_numpy(outputs) -> list[np.ndarray]:
    """A pipeline run's outputs (CPU or GPU TensorLists of one shape) as NumPy batches."""
    arrays = []
    for o in outputs:
        o = o.as_cpu() if hasattr(o, "as_cpu") else o
        arrays.append(np.stack([np.asarray(o.at(i)) for i in range(len(o))]))
    return arrays


def check_batch(images, boxes, valid, classes) -> list[str]:
    """What is wrong with one batch (empty when nothing): boxes inside the image, valid boxes
    at least one pixel wide and high, padding never valid."""
    h, w = images.shape[1:3]
    problems = []
    if not (np.all(boxes[..., 0::2] >= 0) and np.all(boxes[..., 0::2] <= w)
            and np.all(boxes[..., 1::2] >= 0) and np.all(boxes[..., 1::2] <= h)):
        problems.append("a box outside the image")
    sides = np.minimum(boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1])
    if np.any(valid & (sides < 1)):
        problems.append("a valid box under one pixel")
    if np.any(valid & (classes < 0)):
        problems.append("a padded box flagged valid")
    return problems


def save(path: str, images, boxes, valid, classes) -> None:
    """The batch as one image (a row per 4 samples) with its valid boxes drawn."""
    from PIL import Image, ImageDraw

    colours = {1: (255, 255, 0), 2: (255, 0, 255), 3: (0, 255, 255)}
    n, h, w = images.shape[:3]
    cols = min(n, 4)
    sheet = Image.new("RGB", (cols * w, -(-n // cols) * h))
    for i in range(n):
        tile = Image.fromarray(images[i])
        draw = ImageDraw.Draw(tile)
        for box, ok, cls in zip(boxes[i], valid[i], classes[i]):
            if ok:
                draw.rectangle([box[0], box[1], box[2] - 1, box[3] - 1],
                               outline=colours.get(int(cls), (255, 255, 255)), width=2)
        sheet.paste(tile, ((i % cols) * w, (i // cols) * h))
    sheet.save(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", help="dataset dir (images/, annotations.json); default: the sample "
                    "dataset in a temp dir")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--max-boxes", type=int, default=8)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", help="PNG of the first batch with its boxes")
    args = ap.parse_args(argv)

    tmp = None
    root = Path(args.root) if args.root else Path(tmp := tempfile.mkdtemp(prefix="augjax-det-"))
    if not (root / "annotations.json").exists():
        make_dataset(root)
        print(f"wrote the sample dataset to {root}")
    t0 = time.perf_counter()
    p = build_pipeline(root, batch_size=args.batch_size, size=args.size,
                       max_boxes=args.max_boxes, device=args.device, seed=args.seed)
    print(f"pipeline built in {time.perf_counter() - t0:.1f} s ({args.device})")
    problems, total, kept = [], 0, 0
    for it in range(args.iters):
        t0 = time.perf_counter()
        images, boxes, valid, classes = to_numpy(p.run())
        ms = (time.perf_counter() - t0) * 1e3
        given = int((classes >= 0).sum())
        total, kept = total + given, kept + int(valid.sum())
        problems += check_batch(images, boxes, valid, classes)
        print(f"batch {it}: images {images.shape} {images.dtype}, boxes {boxes.shape}, "
              f"{int(valid.sum())}/{given} boxes valid, mean level {images.mean():.1f}, "
              f"{ms:.0f} ms")
        if it == 0 and args.save:
            save(args.save, images, boxes, valid, classes)
            print(f"saved {args.save}")
    print(f"detection: {args.iters} batches, {kept}/{total} boxes kept, checks "
          f"{'ok' if not problems else 'FAILED: ' + '; '.join(sorted(set(problems)))}")
    if tmp:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
