"""One sample per call on the CPU, as a loader worker runs it: augjax against torchvision in
the same process, on the same decoded images, one thread each.

- ``crop_flip``: RandomResizedCrop(224) + horizontal flip. augjax as docs/PYTORCH.md's
  ``Dataset.__getitem__`` writes it (``keys_from_seeds(index_seeds([i], epoch, seed))``, the
  chain on a list of one image, the result as NumPy); torchvision v2 on the CHW uint8 tensor.
- ``crop_flip_jitter``: the same with colour jitter (brightness, contrast, saturation 0.4,
  hue 0.1).
- ``crop_flip_ta`` / ``crop_flip_ra``: the same with TrivialAugmentWide / RandAugment(n=2,
  m=9) (augjax's ``style="torchvision"`` policies, torchvision v2's transforms).
- ``dino``: DINO's views of one record (2 x 224 + 8 x 96, bicubic as the reference:
  ``augjax.recipes.dino(interpolation="bicubic")``) through ``augjax.grain.RandomMap.random_map``
  (what a grain worker runs per record), against DINO's reference ``DataAugmentationDINO`` (PIL,
  torchvision v1; facebookresearch/dino main_dino.py): the same work, crops from the image as
  decoded.

Each is warmed up (programs compiled, every canvas bucket seen), then timed over ``--samples``
calls; wall ms and CPU ms per sample (``time.process_time``: JAX's threads count) are the
medians of ``--rounds`` rounds. JAX runs with ``--xla_cpu_multi_thread_eigen=false`` (what
``augjax.grain_workers.worker_init`` sets in a worker) and torch with one thread.

    python benchmarks/per_sample.py --out benchmarks/results/per-sample-cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_cpu_multi_thread_eigen=false").strip()

import numpy as np  # noqa: E402

JITTER = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)


def _timed(fn, samples: int, rounds: int) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        for k in range(samples):
            fn(k)
        walls.append((time.perf_counter() - w) / samples * 1e3)
        cpus.append((time.process_time() - c) / samples * 1e3)
    return {"wall_ms": statistics.median(walls), "cpu_ms": statistics.median(cpus)}


def augjax_cases(images: list[np.ndarray]) -> dict:
    import augjax
    import augjax.grain as ag

    def loader_call(chain):
        def one(k):
            i = k % len(images)
            key = augjax.keys_from_seeds(augjax.index_seeds([i], k // len(images), 0))
            return np.asarray(chain([images[i]], key=key))[0]
        return one

    crop = augjax.ops.random_resized_crop.bind(size=224)
    record = ag.RandomMap(augjax.recipes.dino(interpolation="bicubic"))
    rng = np.random.default_rng(0)
    return {
        "crop_flip": loader_call(augjax.compose(crop, augjax.ops.flip)),
        "crop_flip_jitter": loader_call(augjax.compose(
            crop, augjax.ops.flip, augjax.ops.color_jitter.bind(**JITTER))),
        "crop_flip_ta": loader_call(augjax.compose(
            crop, augjax.ops.flip, augjax.trivial_augment_wide(style="torchvision"))),
        "crop_flip_ra": loader_call(augjax.compose(
            crop, augjax.ops.flip, augjax.rand_augment(n=2, m=9, style="torchvision"))),
        "dino": lambda k: record.random_map({"image": images[k % len(images)]}, rng),
    }


def torchvision_cases(images: list[np.ndarray]) -> dict:
    import torch
    from PIL import Image, ImageFilter, ImageOps
    from torchvision import transforms as T
    from torchvision.transforms import v2

    torch.set_num_threads(1)
    tensors = [torch.from_numpy(np.array(a)).permute(2, 0, 1) for a in images]
    pils = [Image.fromarray(a) for a in images]
    crop_flip = v2.Compose([v2.RandomResizedCrop(224, antialias=True),
                            v2.RandomHorizontalFlip()])
    crop_flip_jitter = v2.Compose([v2.RandomResizedCrop(224, antialias=True),
                                   v2.RandomHorizontalFlip(), v2.ColorJitter(**JITTER)])
    crop_flip_ta = v2.Compose([v2.RandomResizedCrop(224, antialias=True),
                               v2.RandomHorizontalFlip(), v2.TrivialAugmentWide()])
    crop_flip_ra = v2.Compose([v2.RandomResizedCrop(224, antialias=True),
                               v2.RandomHorizontalFlip(), v2.RandAugment(num_ops=2, magnitude=9)])

    # DINO's DataAugmentationDINO (facebookresearch/dino, main_dino.py), 8 local crops.
    def blur(p):
        def f(img):
            if torch.rand(()) > p:
                return img
            return img.filter(ImageFilter.GaussianBlur(radius=float(
                torch.empty(()).uniform_(0.1, 2.0))))
        return f

    def solarize(p):
        return lambda img: ImageOps.solarize(img) if torch.rand(()) < p else img

    flip_jitter = T.Compose([T.RandomHorizontalFlip(p=0.5),
                             T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
                             T.RandomGrayscale(p=0.2)])
    norm = T.Compose([T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    bicubic = Image.BICUBIC
    g1 = T.Compose([T.RandomResizedCrop(224, scale=(0.4, 1.0), interpolation=bicubic),
                    flip_jitter, blur(1.0), norm])
    g2 = T.Compose([T.RandomResizedCrop(224, scale=(0.4, 1.0), interpolation=bicubic),
                    flip_jitter, blur(0.1), solarize(0.2), norm])
    loc = T.Compose([T.RandomResizedCrop(96, scale=(0.05, 0.4), interpolation=bicubic),
                     flip_jitter, blur(0.5), norm])

    def dino(k):
        img = pils[k % len(pils)]
        return [g1(img), g2(img)] + [loc(img) for _ in range(8)]

    return {
        "crop_flip": lambda k: crop_flip(tensors[k % len(tensors)]).numpy(),
        "crop_flip_jitter": lambda k: crop_flip_jitter(tensors[k % len(tensors)]).numpy(),
        "crop_flip_ta": lambda k: crop_flip_ta(tensors[k % len(tensors)]).numpy(),
        "crop_flip_ra": lambda k: crop_flip_ra(tensors[k % len(tensors)]).numpy(),
        "dino": dino,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=64,
                    help="calls before timing (every canvas bucket of the images seen)")
    ap.add_argument("--cases", default="crop_flip,crop_flip_jitter,crop_flip_ta,crop_flip_ra,dino")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    import augjax
    import jax
    import torch
    import torchvision

    images = [np.asarray(a) for a in augjax.data.sample_images(None)]
    ours, theirs = augjax_cases(images), torchvision_cases(images)
    rows = {}
    for case in args.cases.split(","):
        for k in range(args.warmup):
            ours[case](k)
            theirs[case](k)
        a = _timed(ours[case], args.samples, args.rounds)
        t = _timed(theirs[case], args.samples, args.rounds)
        rows[case] = {"augjax": a, "torchvision": t,
                      "ratio_cpu_torchvision_over_augjax": t["cpu_ms"] / a["cpu_ms"],
                      "ratio_wall_torchvision_over_augjax": t["wall_ms"] / a["wall_ms"]}
        print(f"{case:18s} augjax {a['wall_ms']:6.2f} ms ({a['cpu_ms']:6.2f} CPU-ms)  "
              f"torchvision {t['wall_ms']:6.2f} ms ({t['cpu_ms']:6.2f} CPU-ms)  "
              f"torchvision/augjax CPU {rows[case]['ratio_cpu_torchvision_over_augjax']:.2f}x",
              flush=True)
    result = {
        "benchmark": "per_sample",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.processor()}",
        "versions": {"python": platform.python_version(), "jax": jax.__version__,
                     "augjax": augjax.__version__, "torch": torch.__version__,
                     "torchvision": torchvision.__version__},
        "images": [list(a.shape) for a in images],
        "samples": args.samples, "rounds": args.rounds,
        "rows": rows,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
