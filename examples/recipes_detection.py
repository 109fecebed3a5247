"""Detection training recipes of torchvision's detection references as augjax chains: SSD and
large-scale jitter (LSJ: Mask R-CNN / DETR), each in a DALI pipeline from JPEGs and on arrays,
next to their torchvision v2 counterparts.

    python examples/recipes_detection.py                      # both recipes, DALI CPU pipeline
    python examples/recipes_detection.py --recipe lsj --save lsj.png   # a batch with its boxes
    python examples/recipes_detection.py --arrays             # the arrays path instead of DALI
    python examples/recipes_detection.py --device gpu         # decode and augment on GPU 0

The recipes follow ``references/detection/presets.py`` (``DetectionPresetTrain``) of
pytorch/vision, read 2026-12-04:

- ``"ssd"``: ``RandomPhotometricDistort()``, ``RandomZoomOut(fill=mean)``, ``RandomIoUCrop()``,
  ``RandomHorizontalFlip(0.5)``, then ``SanitizeBoundingBoxes()``; the SSD model resizes to a
  fixed size afterwards (300 x 300), which augjax's ``random_iou_crop(size=...)`` does in the
  crop. :func:`ssd`, :func:`torchvision_ssd`.
- ``"lsj"``: ``ScaleJitter(target_size=(1024, 1024))``, the reference's
  ``FixedSizeCrop(size=(1024, 1024), fill=mean)``, ``RandomHorizontalFlip(0.5)``, then
  ``SanitizeBoundingBoxes()``. augjax's ``scale_jitter`` is ScaleJitter + FixedSizeCrop in one
  op. :func:`lsj`, :func:`torchvision_lsj` (FixedSizeCrop is not in torchvision's package: it
  is rebuilt here with v2 functionals as the reference defines it).

Sanitizing is augjax's default rule (boxes under one pixel, or outside the image, are flagged
in ``boxes_valid``; torchvision drops them). The mean fill is the references' (123, 117, 104)
levels. Differences: augjax's zoom-out canvas is resized back to the input's size before the
IoU crop (torchvision crops the large canvas and the model resizes), so a zoomed-out crop is
resampled twice; and in a DALI pipeline the SSD chain takes decoded batches of one size (its
colour and zoom-out ops read the image's size statically): resize JPEGs of different sizes
first. LSJ takes JPEGs of any sizes (``scale_jitter`` reads each at its own size; in DALI its
resize and window are DALI's ``fn.resize`` and ``fn.slice``).

One file holds both recipes and their torchvision counterparts: they share the dataset, the
pipeline and the drawing, and the tests and the benchmark import the pairs from here.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detection import check_batch, pad_boxes, save, to_numpy  # noqa: E402 (beside this file)
from sample_dataset import make_dataset  # noqa: E402

#: The references' fill, (123, 117, 104) levels, as fractions of the range (augjax's fills).
MEAN = (123.0, 117.0, 104.0)
MEAN_FRACTIONS = tuple(m / 255.0 for m in MEAN)
RECIPES = ("ssd", "lsj")


def ssd(size: int = 300, *, photometric: bool = True, hflip_prob: float = 0.5):
    """torchvision's "ssd" detection preset as one augjax chain ending in ``size`` x ``size``.

    ``photometric=False`` leaves out the colour step (the geometry alone; torchvision's
    "ssdlite" preset drops the zoom-out too)."""
    import augjax
    from augjax import ops

    steps = [ops.random_photometric_distort] if photometric else []
    steps += [ops.random_zoom_out.bind(fill=MEAN_FRACTIONS, side_range=(1.0, 4.0), p=0.5),
              ops.random_iou_crop.bind(size=size),
              ops.flip.bind(p=hflip_prob)]
    return augjax.compose(steps)


def lsj(size: int = 1024, *, scale_range: tuple[float, float] = (0.1, 2.0),
        hflip_prob: float = 0.5):
    """torchvision's "lsj" detection preset (ScaleJitter + FixedSizeCrop + flip) as one augjax
    chain ending in ``size`` x ``size``."""
    import augjax
    from augjax import ops

    return augjax.compose(
        ops.scale_jitter.bind(target_size=size, scale_range=scale_range, fill=MEAN_FRACTIONS),
        ops.flip.bind(p=hflip_prob))


def recipe(name: str, size: int, **kwargs):
    """The augjax chain of recipe ``name`` ("ssd" or "lsj")."""
    if name not in RECIPES:
        raise ValueError(f"recipe: expected one of {RECIPES}, got {name!r}")
    return (ssd if name == "ssd" else lsj)(size, **kwargs)


# ---------------------------------------------------------------------------------------------
# torchvision v2 counterparts (on one image: tv_tensors.Image and {"boxes", "labels"})


def _fixed_size_crop(size: int):
    """The detection reference's ``FixedSizeCrop(size, fill=mean)`` with v2 functionals: a crop
    of at most ``size`` at ``int(r * (H - size))``, ``int(r * (W - size))`` (one draw ``r``), then
    ``mean`` padding below and to the right up to ``size``."""
    import torch
    from torchvision import tv_tensors
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional as F

    class FixedSizeCrop(v2.Transform):
        def make_params(self, flat_inputs):
            image = next(x for x in flat_inputs if isinstance(x, tv_tensors.Image))
            h, w = F.get_size(image)
            r = float(torch.rand(1))
            return {"top": int(max(h - size, 0) * r), "left": int(max(w - size, 0) * r),
                    "height": min(h, size), "width": min(w, size),
                    "bottom": max(size - h, 0), "right": max(size - w, 0)}

        def transform(self, inpt, params):
            if not isinstance(inpt, (tv_tensors.Image, tv_tensors.BoundingBoxes,
                                     tv_tensors.Mask)):
                return inpt
            out = F.crop(inpt, params["top"], params["left"], params["height"],
                         params["width"])
            if params["bottom"] or params["right"]:
                fill = list(MEAN) if isinstance(inpt, tv_tensors.Image) else 0
                out = F.pad(out, [0, 0, params["right"], params["bottom"]], fill=fill)
            return out

    return FixedSizeCrop()


def torchvision_ssd(size: int = 300, *, photometric: bool = True, hflip_prob: float = 0.5):
    """The "ssd" preset in torchvision v2, with the model's fixed resize to ``size``."""
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    steps = [v2.RandomPhotometricDistort()] if photometric else []
    steps += [v2.RandomZoomOut(fill={tv_tensors.Image: list(MEAN), "others": 0}),
              v2.RandomIoUCrop(), v2.RandomHorizontalFlip(hflip_prob),
              v2.Resize((size, size), antialias=True), v2.SanitizeBoundingBoxes()]
    return v2.Compose(steps)


def torchvision_lsj(size: int = 1024, *, scale_range: tuple[float, float] = (0.1, 2.0),
                    hflip_prob: float = 0.5):
    """The "lsj" preset in torchvision v2 (ScaleJitter, the reference's FixedSizeCrop, flip)."""
    from torchvision.transforms import v2

    return v2.Compose([v2.ScaleJitter((size, size), scale_range=scale_range, antialias=True),
                       _fixed_size_crop(size), v2.RandomHorizontalFlip(hflip_prob),
                       v2.SanitizeBoundingBoxes()])


def torchvision_recipe(name: str, size: int, **kwargs):
    """The torchvision v2 counterpart of recipe ``name``."""
    if name not in RECIPES:
        raise ValueError(f"torchvision_recipe: expected one of {RECIPES}, got {name!r}")
    return (torchvision_ssd if name == "ssd" else torchvision_lsj)(size, **kwargs)


# ---------------------------------------------------------------------------------------------
# running them


def build_pipeline(root: str | Path, name: str, *, batch_size: int = 16, size: int = 320,
                   max_boxes: int = 4, device: str = "cpu", seed: int = 0,
                   shuffle: bool = True, num_threads: int = 2, replay: bool = False,
                   **recipe_kwargs):
    """A built DALI pipeline: COCO reader, decoder, recipe ``name``; outputs images, boxes,
    boxes_valid, classes. ``replay=True`` adds the per-sample seeds and the chain's inputs
    (decoded images, padded boxes, counts), to replay a batch on arrays with
    ``augjax.keys_from_seeds(seeds)``. "ssd" needs JPEGs of one size, "lsj" takes any."""
    import augjax
    from nvidia.dali import fn, pipeline_def, types

    root = Path(root)
    chain = recipe(name, size, **recipe_kwargs)

    @pipeline_def(batch_size=batch_size, num_threads=num_threads,
                  device_id=0 if device == "gpu" else None, seed=seed)
    def pipe():
        jpegs, boxes, classes = fn.readers.coco(
            file_root=str(root / "images"), annotations_file=str(root / "annotations.json"),
            ltrb=True, random_shuffle=shuffle, name="reader")
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu",
                                   output_type=types.RGB)
        boxes, classes, count = pad_boxes(boxes, classes, max_boxes)
        seeds = augjax.dali.sample_seeds(device="cpu" if device == "cpu" else "gpu")
        out = chain(images, boxes=boxes, boxes_valid=count, seeds=seeds)
        outputs = (out["images"], out["boxes"], out["boxes_valid"], classes)
        return outputs + (seeds, images, boxes, count) if replay else outputs

    p = pipe()
    p.build()
    return p


def padded(boxes: list[np.ndarray], classes: list[np.ndarray], max_boxes: int):
    """Per-image boxes (K, 4) and classes (K,) as (N, M, 4), (N, M) (class -1 where padded)
    and the counts (N,), for the arrays path."""
    n = len(boxes)
    out = np.zeros((n, max_boxes, 4), np.float32)
    cls = np.full((n, max_boxes), -1, np.int32)
    count = np.zeros((n,), np.int32)
    for i, (b, c) in enumerate(zip(boxes, classes)):
        k = min(len(b), max_boxes)
        out[i, :k], cls[i, :k], count[i] = b[:k], c[:k], k
    return out, cls, count


def run_arrays(name: str, images: np.ndarray, boxes: np.ndarray, count: np.ndarray, key,
               size: int = 320, **recipe_kwargs):
    """Recipe ``name`` on a decoded batch (N, H, W, 3) uint8 of one size: images, boxes,
    boxes_valid as NumPy arrays."""
    out = recipe(name, size, **recipe_kwargs)(images, key=key, boxes=boxes, boxes_valid=count)
    return np.asarray(out["images"]), np.asarray(out["boxes"]), np.asarray(out["boxes_valid"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipe", choices=RECIPES + ("all",), default="all")
    ap.add_argument("--root", help="dataset dir of JPEGs of one size (images/, "
                    "annotations.json; of one size for ssd); default: 32 painted 480x640 "
                    "images in a temp dir")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--arrays", action="store_true", help="the arrays path (PIL decode)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--size", type=int, default=320)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", help="PNG of the first batch with its boxes (one per recipe: "
                    "the recipe's name is put before the suffix when running both)")
    args = ap.parse_args(argv)

    tmp = None
    root = Path(args.root) if args.root else Path(tmp := tempfile.mkdtemp(prefix="augjax-rec-"))
    if not (root / "annotations.json").exists():
        data = make_dataset(root, sizes=((480, 640),) * 32)
        print(f"wrote {len(data['images'])} painted 480x640 JPEGs to {root}")
    names = RECIPES if args.recipe == "all" else (args.recipe,)
    failed = False
    for name in names:
        problems, total, kept = [], 0, 0
        batches = _batches_arrays(root, name, args) if args.arrays else _batches_dali(
            root, name, args)
        for it, (images, boxes, valid, classes, ms) in enumerate(batches):
            total, kept = total + int((classes >= 0).sum()), kept + int(valid.sum())
            problems += check_batch(images, boxes, valid, classes)
            print(f"{name} batch {it}: images {images.shape} {images.dtype}, "
                  f"{int(valid.sum())}/{int((classes >= 0).sum())} boxes valid, {ms:.0f} ms")
            if it == 0 and args.save:
                path = args.save if len(names) == 1 else str(
                    Path(args.save).with_name(f"{Path(args.save).stem}-{name}.png"))
                save(path, images, boxes, valid, classes)
                print(f"saved {path}")
        failed |= bool(problems)
        print(f"{name}: {kept}/{total} boxes kept, checks "
              f"{'ok' if not problems else 'FAILED: ' + '; '.join(sorted(set(problems)))}")
    if tmp:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def _batches_dali(root, name, args):
    p = build_pipeline(root, name, batch_size=args.batch_size, size=args.size,
                       device=args.device, seed=args.seed)
    for _ in range(args.iters):
        t0 = time.perf_counter()
        images, boxes, valid, classes = to_numpy(p.run())
        yield images, boxes, valid, classes, (time.perf_counter() - t0) * 1e3


def _batches_arrays(root, name, args):
    import json

    import jax
    from PIL import Image

    coco = json.loads((root / "annotations.json").read_text())
    files = [root / "images" / im["file_name"] for im in coco["images"]]
    per = {im["id"]: ([], []) for im in coco["images"]}
    for a in coco["annotations"]:
        x, y, w, h = a["bbox"]
        per[a["image_id"]][0].append([x, y, x + w, y + h])
        per[a["image_id"]][1].append(a["category_id"])
    ids = [im["id"] for im in coco["images"]]
    key = jax.random.key(args.seed)
    for it in range(args.iters):
        sel = [(it * args.batch_size + i) % len(files) for i in range(args.batch_size)]
        t0 = time.perf_counter()
        images = np.stack([np.asarray(Image.open(files[i]).convert("RGB")) for i in sel])
        boxes, classes, count = padded([np.array(per[ids[i]][0], np.float32) for i in sel],
                                       [np.array(per[ids[i]][1], np.int32) for i in sel], 4)
        out = run_arrays(name, images, boxes, count, jax.random.fold_in(key, it), args.size)
        yield (*out, classes, (time.perf_counter() - t0) * 1e3)


if __name__ == "__main__":
    sys.exit(main())
