"""grain's per-record path on CPU: augjax's ``RandomMap`` vs the same recipe in torchvision v2
(torch ``DataLoader``) and in grain with NumPy/PIL transforms, 2 worker processes each.

The recipe: random resized crop to 224x224 (bilinear, antialiased), horizontal flip (p=0.5),
colour jitter (brightness, contrast, saturation 0.4, hue 0.1), uint8 out. The source is an
in-memory list of decoded uint8 images (``--height`` x ``--width``, default 256 x 320), so the
loaders differ only in the augmentation and their own overheads. Each loader is started, its
first ``--warmup`` batches (worker start, compilation) are dropped, then ``--batches`` batches
are timed; the loaders alternate for ``--rounds`` rounds and the median images/s is reported.
Targets: augjax >= 1.5x torchvision v2, and >= grain with NumPy/PIL. ``--floor`` adds
grain alone (a slice per record): what the loader costs under any recipe.

    python benchmarks/grain_bench.py                       # writes results/grain-cpu-<date>.json
    python benchmarks/grain_bench.py --batches 8 --rounds 1 --out /tmp/g.json
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

SIZE = 224


def make_images(n: int, h: int, w: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


class ArraySource:
    """grain random-access source over a uint8 (N, H, W, 3) array."""

    def __init__(self, images: np.ndarray) -> None:
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> dict:
        return {"image": self.images[i]}


# --- grain + NumPy/PIL (the same recipe, PIL's bilinear resize with its own antialiasing) -----

class PilRecipe:
    """A grain RandomMap: torchvision's RandomResizedCrop box algorithm drawn with NumPy,
    PIL resize of the box, flip, and ColorJitter's four steps in a random order with PIL
    (ImageEnhance; hue through PIL's HSV)."""

    def __new__(cls):
        import grain

        class _Pil(grain.transforms.RandomMap):
            def random_map(self, element, rng):
                return {"image": pil_recipe(element["image"], rng)}

        return _Pil()


class SliceOnly:
    """A grain RandomMap that draws the same two integers as augjax's and cuts a fixed 224x224
    window (a copy): grain's own cost per record, the floor under all three recipes."""

    def __new__(cls):
        import grain

        class _Slice(grain.transforms.RandomMap):
            def random_map(self, element, rng):
                rng.integers(0, 2**30, size=(1, 2), dtype=np.int32)
                return {"image": np.ascontiguousarray(element["image"][:SIZE, :SIZE])}

        return _Slice()


def _rrc_box(rng, h, w, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    area = h * w
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = np.exp(rng.uniform(np.log(ratio[0]), np.log(ratio[1])))
        cw, ch = int(round(np.sqrt(target * aspect))), int(round(np.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1), ch, cw
    return 0, 0, h, w


def pil_recipe(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    from PIL import Image, ImageEnhance

    top, left, ch, cw = _rrc_box(rng, *image.shape[:2])
    im = Image.fromarray(image).resize((SIZE, SIZE), Image.BILINEAR,
                                       box=(left, top, left + cw, top + ch))
    if rng.uniform() < 0.5:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    for fn in rng.permutation(4):
        if fn == 0:
            im = ImageEnhance.Brightness(im).enhance(rng.uniform(0.6, 1.4))
        elif fn == 1:
            im = ImageEnhance.Contrast(im).enhance(rng.uniform(0.6, 1.4))
        elif fn == 2:
            im = ImageEnhance.Color(im).enhance(rng.uniform(0.6, 1.4))
        else:
            hsv = np.asarray(im.convert("HSV")).copy()
            hsv[..., 0] = (hsv[..., 0].astype(np.int16) + int(rng.uniform(-0.1, 0.1) * 255)) % 256
            im = Image.fromarray(hsv, "HSV").convert("RGB")
    return np.asarray(im)


# --- the three loaders --------------------------------------------------------------------

def augjax_chain():
    import augjax

    return augjax.compose(augjax.ops.random_resized_crop.bind(size=SIZE),
                          augjax.ops.flip.bind(p=0.5),
                          augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4,
                                                       saturation=0.4, hue=0.1))


def grain_loader(images, transform, batch: int, workers: int):
    import grain

    import augjax.grain

    # one reading thread and a short read-ahead per worker, as torch's DataLoader prefetches two
    # batches per worker: grain's defaults (16 threads, 500 records ahead) would time records
    # computed before the clock started
    read = grain.ReadOptions(num_threads=1, prefetch_buffer_size=batch)
    ds = (grain.MapDataset.source(ArraySource(images)).shuffle(seed=0).repeat()
          .random_map(transform, seed=0).batch(batch, drop_remainder=True)
          .to_iter_dataset(read_options=read))
    if workers:
        ds = ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers),
                            worker_init_fn=augjax.grain.worker_init)
    return iter(ds)


class TorchDataset:
    def __init__(self, images, transform) -> None:
        self.images, self.transform = images, transform

    def __len__(self) -> int:
        return 10**9

    def __getitem__(self, i: int):
        import torch

        x = torch.from_numpy(self.images[i % len(self.images)]).permute(2, 0, 1)
        return self.transform(x)


def torchvision_loader(images, batch: int, workers: int):
    import torch
    from torchvision.transforms import v2

    recipe = v2.Compose([v2.RandomResizedCrop(SIZE, antialias=True), v2.RandomHorizontalFlip(),
                         v2.ColorJitter(0.4, 0.4, 0.4, 0.1)])
    loader = torch.utils.data.DataLoader(TorchDataset(images, recipe), batch_size=batch,
                                         shuffle=False, num_workers=workers,
                                         persistent_workers=workers > 0, prefetch_factor=2)
    return iter(loader)


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its live child processes (the workers)."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def time_loader(make, batch: int, warmup: int, batches: int) -> tuple[float, float]:
    """(images/s, CPU ms per image of all processes) over ``batches`` batches after ``warmup``.

    The CPU time per image is the steadier reading on a shared machine: it does not depend on
    how much of the cores the other jobs leave."""
    it = make()
    for _ in range(warmup):
        next(it)
    c0, t0 = _cpu_seconds(), time.perf_counter()
    for _ in range(batches):
        next(it)
    rate = batch * batches / (time.perf_counter() - t0)
    cpu_ms = (_cpu_seconds() - c0) * 1e3 / (batch * batches)
    close = getattr(it, "close", None) or getattr(it, "_shutdown_workers", None)
    if close:
        close()
    del it
    return rate, cpu_ms


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--height", type=int, default=256)
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--out", default=None)
    parser.add_argument("--floor", action="store_true",
                        help="also time grain alone (a slice per record, no augmentation)")
    parser.add_argument("--note", default="2-core machine shared with other jobs while this ran")
    args = parser.parse_args(argv)

    import absl.flags

    if not absl.flags.FLAGS.is_parsed():
        absl.flags.FLAGS.mark_as_parsed()
    import augjax.grain
    from harness import machine, today, versions

    images = make_images(64, args.height, args.width)
    loaders = {
        "augjax RandomMap (grain)": lambda: grain_loader(
            images, augjax.grain.RandomMap(augjax_chain()), args.batch, args.workers),
        "torchvision v2 (torch DataLoader)": lambda: torchvision_loader(
            images, args.batch, args.workers),
        "NumPy/PIL (grain)": lambda: grain_loader(images, PilRecipe(), args.batch,
                                                  args.workers),
    }
    if args.floor:
        loaders["grain alone (a 224x224 slice, no augmentation)"] = lambda: grain_loader(
            images, SliceOnly(), args.batch, args.workers)
    load_start = os.getloadavg()[0]
    rates = {name: [] for name in loaders}
    cpu = {name: [] for name in loaders}
    for r in range(args.rounds):
        for name, make in loaders.items():
            rate, cpu_ms = time_loader(make, args.batch, args.warmup, args.batches)
            rates[name].append(rate)
            cpu[name].append(cpu_ms)
            print(f"round {r}: {name}: {rate:.1f} images/s, {cpu_ms:.2f} CPU ms/image",
                  flush=True)
    med = {name: statistics.median(v) for name, v in rates.items()}
    med_cpu = {name: statistics.median(v) for name, v in cpu.items()}
    ours = med["augjax RandomMap (grain)"]
    ratios = {"vs torchvision v2": ours / med["torchvision v2 (torch DataLoader)"],
              "vs NumPy/PIL on grain": ours / med["NumPy/PIL (grain)"]}
    ours_cpu = med_cpu["augjax RandomMap (grain)"]
    cpu_ratios = {  # images per CPU-second, augjax / peer
        "vs torchvision v2": med_cpu["torchvision v2 (torch DataLoader)"] / ours_cpu,
        "vs NumPy/PIL on grain": med_cpu["NumPy/PIL (grain)"] / ours_cpu}
    targets = {"augjax >= 1.5x torchvision v2, 2 workers": ratios["vs torchvision v2"] >= 1.5,
               "augjax >= NumPy/PIL on grain, 2 workers": ratios["vs NumPy/PIL on grain"] >= 1.0}
    result = {
        "benchmark": "grain per-record path (benchmarks/grain_bench.py)",
        "date": today(), "machine": machine(), "versions": {
            **versions(), "grain": _v("grain"), "pillow": _v("PIL")},
        "config": {**vars(args), "size": SIZE, "recipe": "random_resized_crop(224) + "
                   "horizontal flip 0.5 + color_jitter(0.4, 0.4, 0.4, 0.1), uint8"},
        "load_average_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "note": args.note,
        "images_per_s": rates, "median_images_per_s": med, "ratios": ratios,
        "cpu_ms_per_image": cpu, "median_cpu_ms_per_image": med_cpu,
        "ratios_per_cpu_second": cpu_ratios,
        "targets_met": targets,
    }
    for name, value in ratios.items():
        print(f"augjax {name}: {value:.2f}x images/s, {cpu_ratios[name]:.2f}x per CPU-second")
    out = Path(args.out) if args.out else HERE / "results" / f"grain-cpu-{today()}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


def _v(module: str):
    import importlib.metadata as md

    try:
        return md.version({"PIL": "pillow"}.get(module, module))
    except md.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
