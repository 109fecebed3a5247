"""Segmentation training batches in DALI: JPEGs of different sizes and their PNG class masks to
uniform batches whose masks stay aligned through every augmentation.

    python examples/segmentation.py                       # CPU, the sample dataset in a temp dir
    python examples/segmentation.py --device gpu          # decode ("mixed") and augment on GPU 0
    python examples/segmentation.py --no-color            # geometry only: also prints how well
                                                          # each mask still covers its colour
    python examples/segmentation.py --save masks.png      # first batch: images over their masks
    python examples/segmentation.py --root DIR            # DIR/images/NN.jpg + DIR/masks/NN.png
                                                          # (written there first if missing)

The pipeline:

1. Two ``fn.readers.file`` read the images and their masks in the same order (both shuffled with
   the same seed, or neither); ``fn.decoders.image`` decodes the JPEGs (RGB) and the PNG masks
   (``output_type=types.GRAY``: (H, W, 1) uint8 class ids). Both are ragged batches.
2. One augjax chain: ``random_resized_crop`` reads the ragged images (each window drawn from the
   image's true size) and the masks go through the same window (DALI's ``fn.slice`` +
   ``fn.resize`` with nearest sampling), then flip, rotation and colour jitter in one
   ``jax_function``; masks follow every geometric op with nearest sampling, pixels from outside
   the image get ``mask_fill`` (255 here: "ignore"), colour ops leave them alone.
3. With ``boxes=True`` (``build_pipeline``) the images come from ``fn.readers.coco`` instead,
   with each object's box: boxes move with the same params (instance segmentation).

It returns ``images`` (N, S, S, 3) uint8 and ``masks`` (N, S, S, 1) uint8.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detection import to_numpy
from sample_dataset import CLASSES, make_dataset

#: the mask id of pixels that come from outside the image (rotation corners)
IGNORE = 255


def chain(size: int, color: bool = True):
    """The augmentation chain: a ragged-input crop first, then geometry, then colour."""
    import augjax

    ops = [augjax.ops.random_resized_crop.bind(size=size, scale=(0.3, 1.0)),
           augjax.ops.flip.bind(p=0.5),
           augjax.ops.rotate.bind(degrees=(-20, 20))]
    if color:
        ops.append(augjax.ops.color_jitter.bind(brightness=0.3, contrast=0.3, saturation=0.3,
                                                hue=0.05))
    return augjax.compose(ops)


def build_pipeline(root: str | Path, *, batch_size: int = 8, size: int = 256,
                   device: str = "cpu", seed: int = 0, color: bool = True, shuffle: bool = True,
                   boxes: bool = False, max_boxes: int = 4, num_threads: int = 2):
    """The DALI pipeline (built): outputs images, masks (and boxes, boxes_valid, classes with
    ``boxes=True``)."""
    from nvidia.dali import fn, pipeline_def, types

    root = Path(root)
    names = sorted(p.stem for p in (root / "images").glob("*.jpg"))
    decoder = "mixed" if device == "gpu" else "cpu"

    @pipeline_def(batch_size=batch_size, num_threads=num_threads,
                  device_id=0 if device == "gpu" else None, seed=seed)
    def pipe():
        # The same seed and settings: both readers shuffle the same way.
        read = {"random_shuffle": shuffle, "seed": seed + 1}
        if boxes:
            from detection import pad_boxes

            jpegs, b, classes = fn.readers.coco(
                file_root=str(root / "images"), annotations_file=str(root / "annotations.json"),
                images=[f"{n}.jpg" for n in names], ltrb=True, **read)
            b, classes, count = pad_boxes(b, classes, max_boxes)
            targets = {"boxes": b, "boxes_valid": count}
        else:
            jpegs, _ = fn.readers.file(files=[str(root / "images" / f"{n}.jpg") for n in names],
                                       **read)
            targets = {}
        pngs, _ = fn.readers.file(files=[str(root / "masks" / f"{n}.png") for n in names], **read)
        images = fn.decoders.image(jpegs, device=decoder, output_type=types.RGB)
        masks = fn.decoders.image(pngs, device=decoder, output_type=types.GRAY)
        out = chain(size, color)(images, masks=masks, mask_fill=IGNORE, **targets)
        if boxes:
            return out["images"], out["masks"], out["boxes"], out["boxes_valid"], classes
        return out["images"], out["masks"]

    p = pipe()
    p.build()
    return p


def _erode(region: np.ndarray, r: int) -> np.ndarray:
    """``region`` (H, W bool) without the pixels within ``r`` of its outside (or the border)."""
    out = region.copy()
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            out &= np.roll(np.roll(region, dy, 0), dx, 1)
    out[:r], out[-r:], out[:, :r], out[:, -r:] = False, False, False, False
    return out


def agreement(images: np.ndarray, masks: np.ndarray, margin: int = 2) -> float:
    """The fraction of the class pixels (each class region without a ``margin``: resampling
    blends edges) whose colour is their class's colour (within 80 levels per channel): 1.0 when
    the masks are aligned with the image (without colour augmentation)."""
    hits = total = 0
    for image, mask in zip(images, masks[..., 0]):
        for k, (_, colour) in CLASSES.items():
            inner = _erode(mask == k, margin)
            near = np.all(np.abs(image.astype(int) - colour) <= 80, axis=-1)
            hits, total = hits + int((near & inner).sum()), total + int(inner.sum())
    return hits / max(total, 1)


def save(path: str, images, masks) -> None:
    """The batch as one image: each sample with its mask's classes tinted in, side by side."""
    from PIL import Image

    palette = np.zeros((256, 3), np.uint8)
    palette[1], palette[2], palette[3], palette[IGNORE] = (255, 255, 0), (255, 0, 255), \
        (0, 255, 255), (90, 90, 90)
    tint = palette[masks[..., 0]]
    blend = np.where(masks > 0, images // 2 + tint // 2, images).astype(np.uint8)
    rows = [np.concatenate([images[i], blend[i]], 1) for i in range(len(images))]
    Image.fromarray(np.concatenate(rows, 0)).save(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", help="dataset dir (images/NN.jpg, masks/NN.png); default: the "
                    "sample dataset in a temp dir")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-color", action="store_true", help="geometry only (and the alignment "
                    "check: each mask region still has its class colour)")
    ap.add_argument("--save", help="PNG of the first batch: images and masks over them")
    args = ap.parse_args(argv)

    tmp = None
    root = Path(args.root) if args.root else Path(tmp := tempfile.mkdtemp(prefix="augjax-seg-"))
    if not (root / "masks").exists():
        make_dataset(root)
        print(f"wrote the sample dataset to {root}")
    t0 = time.perf_counter()
    p = build_pipeline(root, batch_size=args.batch_size, size=args.size, device=args.device,
                       seed=args.seed, color=not args.no_color)
    print(f"pipeline built in {time.perf_counter() - t0:.1f} s ({args.device})")
    problems, scores = [], []
    for it in range(args.iters):
        t0 = time.perf_counter()
        images, masks = to_numpy(p.run())
        ms = (time.perf_counter() - t0) * 1e3
        if images.shape[:3] != masks.shape[:3]:
            problems.append("masks of another size than the images")
        ids = {int(v): int(c) for v, c in zip(*np.unique(masks, return_counts=True))}
        line = (f"batch {it}: images {images.shape} {images.dtype}, masks {masks.shape} "
                f"{masks.dtype}, pixels per id {ids}")
        if args.no_color:
            scores.append(agreement(images, masks))
            line += f", mask/colour agreement {scores[-1]:.3f}"
        print(line + f", {ms:.0f} ms")
        if it == 0 and args.save:
            save(args.save, images, masks)
            print(f"saved {args.save}")
    if scores and min(scores) < 0.98:
        problems.append(f"mask/colour agreement {min(scores):.3f} < 0.98")
    print(f"segmentation: {args.iters} batches"
          + (f", mask/colour agreement min {min(scores):.3f}" if scores else "")
          + f", checks {'ok' if not problems else 'FAILED: ' + '; '.join(problems)}")
    if tmp:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
