"""A small detection / segmentation dataset written from augjax's bundled photos, for
``examples/detection.py`` and ``examples/segmentation.py``.

    python examples/sample_dataset.py /tmp/shapes        # writes it and prints what it wrote

Each of the 8 photos (``augjax.data.sample_images()``) is resized to one of 6 sizes (from 180 x 240
to 320 x 256, portrait and landscape) and gets 1 to 3 objects painted on it, one per class, each
in its class colour and in its own third of the image (so no two overlap):

- ``images/NN.jpg``: the photo with its objects (JPEG, quality 95);
- ``masks/NN.png``: 8-bit class ids (0 background, 1 red rectangle, 2 green ellipse, 3 blue
  triangle), the pixels each object covers;
- ``annotations.json``: COCO (``images``, ``annotations`` with ``bbox`` XYWH pixels enclosing each
  object's mask, ``category_id``, ``area``; ``categories``), what ``fn.readers.coco`` reads.

An object's colour marks its mask: a test can check, after any geometric augmentation, that the
pixels of class k still have colour k.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

#: (height, width) of the 8 images: 6 different sizes.
SIZES = ((240, 320), (320, 240), (200, 200), (180, 240), (256, 320), (320, 256), (240, 320),
         (200, 200))
#: class id -> (name, RGB colour)
CLASSES = {1: ("rectangle", (255, 0, 0)), 2: ("ellipse", (0, 255, 0)), 3: ("triangle", (0, 0, 255))}


def _shape_mask(kind: int, h: int, w: int, box: tuple[int, int, int, int]) -> np.ndarray:
    """A bool (h, w) mask of the object of class ``kind`` inside ``box`` (x1, y1, x2, y2)."""
    x1, y1, x2, y2 = box
    yy, xx = np.mgrid[0:h, 0:w]
    cx, cy = (x1 + x2 - 1) / 2, (y1 + y2 - 1) / 2
    inside = (xx >= x1) & (xx < x2) & (yy >= y1) & (yy < y2)
    if kind == 2:  # ellipse
        return inside & (((xx - cx) / ((x2 - x1) / 2)) ** 2
                         + ((yy - cy) / ((y2 - y1) / 2)) ** 2 <= 1.0)
    if kind == 3:  # triangle, apex at the top centre
        t = (yy - y1 + 0.5) / (y2 - y1)
        return inside & (np.abs(xx - cx) <= t * (x2 - x1) / 2)
    return inside


def make_dataset(root: str | Path, seed: int = 0,
                 sizes: tuple[tuple[int, int], ...] = SIZES, gray: bool = False) -> dict[str, list]:
    """Writes the dataset under ``root`` (see the module docstring) and returns
    ``{"images": [...jpg paths], "masks": [...png paths], "boxes": [(K, 4) XYXY], "classes":
    [(K,) ids]}``, in file order. ``sizes``: one (height, width) per image (the photos repeat
    past the eighth), e.g. ``((480, 640),) * 64`` for 64 images of one size. ``gray=True``
    paints the objects on gray photos, so that only the objects' pixels are saturated (a test
    can find each object by its colour after any geometric augmentation)."""
    from PIL import Image

    import augjax

    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "masks").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    photos = augjax.data.sample_images()
    coco: dict[str, list] = {"images": [], "annotations": [], "categories": [
        {"id": k, "name": name} for k, (name, _) in CLASSES.items()]}
    out: dict[str, list] = {"images": [], "masks": [], "boxes": [], "classes": []}
    for i, (h, w) in enumerate(sizes):
        photo = photos[i % len(photos)]
        image = Image.fromarray(photo).resize((w, h), Image.BILINEAR)
        image = np.asarray(image.convert("L").convert("RGB") if gray else image).copy()
        mask = np.zeros((h, w), np.uint8)
        kinds = rng.permutation(3)[:1 + i % 3] + 1
        boxes = []
        for third, kind in enumerate(kinds):
            bw = int(rng.integers(w // 6, w // 4))
            bh = int(rng.integers(h // 4, h // 2))
            x1 = int(third * w // 3 + rng.integers(2, w // 3 - bw - 1))
            y1 = int(rng.integers(2, h - bh - 2))
            obj = _shape_mask(int(kind), h, w, (x1, y1, x1 + bw, y1 + bh))
            image[obj] = CLASSES[int(kind)][1]
            mask[obj] = kind
            ys, xs = np.nonzero(obj)
            box = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
            boxes.append(box)
            coco["annotations"].append({
                "id": len(coco["annotations"]) + 1, "image_id": i + 1, "category_id": int(kind),
                "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]],
                "area": int(obj.sum()), "iscrowd": 0})
        name = f"{i:02d}"
        Image.fromarray(image).save(root / "images" / f"{name}.jpg", quality=95)
        Image.fromarray(mask).save(root / "masks" / f"{name}.png")
        coco["images"].append({"id": i + 1, "file_name": f"{name}.jpg", "height": h, "width": w})
        out["images"].append(str(root / "images" / f"{name}.jpg"))
        out["masks"].append(str(root / "masks" / f"{name}.png"))
        out["boxes"].append(np.array(boxes, np.float32))
        out["classes"].append(kinds.astype(np.int32))
    (root / "annotations.json").write_text(json.dumps(coco))
    return out


if __name__ == "__main__":
    data = make_dataset(sys.argv[1] if len(sys.argv) > 1 else "shapes")
    for path, boxes in zip(data["images"], data["boxes"]):
        print(path, boxes.astype(int).tolist())
