"""A list of decoded images of different sizes with boxes, on arrays (no DALI): augjax's
``random_resized_crop(320) + flip`` on the list against torchvision v2 (``RandomResizedCrop(320,
antialias=True)`` + ``RandomHorizontalFlip`` on ``tv_tensors.Image`` + ``BoundingBoxes``) in a
map-style dataset under a ``DataLoader`` (2 workers, and 0), B=16, the 16 sizes of
``bench_ragged.py`` (256x341 .. 640x480, made from the bundled photos), 1..5 boxes per image.
Decoding is left out of both (the images are decoded once, in memory).

    python benchmarks/bench_ragged_arrays.py [--iters 10] [--rounds 5] [--out FILE]

Prints images/s (wall) and CPU-milliseconds per image (the process's CPU time, all threads,
plus the persistent DataLoader workers', from /proc) per pipeline, medians over rounds,
pipelines interleaved in each round; ratios against torchvision with 2 workers. Also: the list
without boxes, the images padded to the largest and read by dense weights (the arrays path
before), and how many XLA compiles all pipelines made after their warm-up run (a new canvas
bucket the random boxes reach compiles once).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

SIZES = [(375, 500), (500, 375), (333, 500), (480, 640), (427, 640), (512, 512), (300, 450),
         (640, 480), (281, 500), (500, 333), (360, 480), (400, 600), (450, 300), (366, 500),
         (375, 499), (256, 341)]
B, OUT = 16, 320


def make_data():
    from PIL import Image

    from augjax.data import sample_images

    photos = sample_images(None)
    rng = np.random.default_rng(0)
    images, boxes = [], []
    for i, (h, w) in enumerate(SIZES):
        images.append(np.asarray(Image.fromarray(photos[i % len(photos)]).resize(
            (w, h), Image.BILINEAR)))
        m = 1 + i % 5
        x0, y0 = rng.uniform(0, w * 0.6, m), rng.uniform(0, h * 0.6, m)
        x1, y1 = x0 + rng.uniform(8, w * 0.4, m), y0 + rng.uniform(8, h * 0.4, m)
        boxes.append(np.stack([x0, y0, x1, y1], 1).astype(np.float32))
    return images, boxes


def _cpu_seconds(pids=()) -> float:
    """This process's CPU time (all threads) plus that of ``pids`` (the live DataLoader
    workers, from /proc)."""
    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


class _Detection:
    """torchvision's map-style dataset: one image with its boxes through the transform."""

    def __init__(self, images, boxes, transform):
        import torch
        from torchvision import tv_tensors

        self.items = [(tv_tensors.Image(torch.from_numpy(np.array(im)).permute(2, 0, 1)
                                        .contiguous()),
                       tv_tensors.BoundingBoxes(torch.from_numpy(b), format="XYXY",
                                                canvas_size=im.shape[:2]))
                      for im, b in zip(images, boxes)]
        self.transform = transform

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.transform(*self.items[i])


def _collate(batch):
    import torch

    return torch.stack([im for im, _ in batch]), [b for _, b in batch]


def torchvision_loader(images, boxes, workers, iters):
    """One run is one epoch of ``iters * B`` items (drawn from the 16): persistent workers
    (started once, in the warm-up) compute exactly those; they prefetch nothing beyond it."""
    import torch
    from torchvision.transforms import v2

    torch.set_num_threads(1)
    transform = v2.Compose([v2.RandomResizedCrop(OUT, antialias=True),
                            v2.RandomHorizontalFlip()])
    pick = np.random.default_rng(2).integers(0, len(images), iters * B)
    data = _Detection([images[i] for i in pick], [boxes[i] for i in pick], transform)
    loader = torch.utils.data.DataLoader(data, batch_size=B, shuffle=True,
                                         num_workers=workers, collate_fn=_collate,
                                         persistent_workers=workers > 0)

    def run():
        for _ in loader:
            pass

    def pids():
        it = getattr(loader, "_iterator", None)
        return [w.pid for w in getattr(it, "_workers", [])]

    return run, pids


def augjax_list(images, boxes, iters, with_boxes=True):
    import jax

    import augjax

    chain = augjax.compose([augjax.ops.random_resized_crop.bind(size=OUT),
                            augjax.ops.flip.bind(p=0.5)])
    rng = np.random.default_rng(1)
    count = [0]

    def run(iters=iters):
        for _ in range(iters):
            order = rng.permutation(len(images))
            key = jax.random.key(count[0])
            count[0] += 1
            if with_boxes:
                out = chain([images[i] for i in order], key=key,
                            boxes=[boxes[i] for i in order])
            else:
                out = chain([images[i] for i in order], key=key)
            jax.block_until_ready(out)

    return run, lambda: []


def augjax_padded(images, iters):
    """The arrays path before: the list padded to its largest image, read by dense weights
    (compiled per padded shape; here the same 16 images, so one shape)."""
    import jax

    import augjax
    from augjax._runtime.ragged.prefix import pad_images, ragged_apply

    steps = (augjax.ops.random_resized_crop.bind(size=OUT),)
    flip = augjax.ops.flip.bind(p=0.5)
    count = [0]

    def run(iters=iters):
        for _ in range(iters):
            padded, sizes = pad_images(images, "bench")
            key = jax.random.key(count[0])
            count[0] += 1
            keys = jax.random.split(key, B)
            out, _, _ = ragged_apply(steps, padded, sizes, keys, 0, "bench")
            jax.block_until_ready(flip(out, key=key))

    return run, lambda: []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import jax
    import torch
    import torchvision

    images, boxes = make_data()
    compiles: list[str] = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, _d, **_kw: compiles.append(event)
        if event == "/jax/core/compile/backend_compile_duration" else None)
    runners = {
        "torchvision_2_workers": torchvision_loader(images, boxes, 2, args.iters),
        "torchvision_0_workers": torchvision_loader(images, boxes, 0, args.iters),
        "augjax_list_boxes": augjax_list(images, boxes, args.iters),
        "augjax_list": augjax_list(images, boxes, args.iters, with_boxes=False),
        "augjax_padded_before": augjax_padded(images, args.iters),
    }
    for run, _ in runners.values():
        run()  # warm-up: compiles (the canvas buckets the batches reach), workers start
    warm = len(compiles)
    wall: dict[str, list[float]] = {k: [] for k in runners}
    cpu: dict[str, list[float]] = {k: [] for k in runners}
    rng = np.random.default_rng(0)
    load = os.getloadavg()
    for _ in range(args.rounds):
        for k in rng.permutation(list(runners)):
            run, pids = runners[k]
            t, c = time.perf_counter(), _cpu_seconds(pids())
            run()
            wall[k].append(B * args.iters / (time.perf_counter() - t))
            cpu[k].append((_cpu_seconds(pids()) - c) * 1e3 / (B * args.iters))
    base_w = statistics.median(wall["torchvision_2_workers"])
    base_c = statistics.median(cpu["torchvision_2_workers"])
    rows = {}
    lines = [f"benchmarks/bench_ragged_arrays.py, {time.strftime('%Y-%m-%d')}, "
             f"{platform.node()} {os.cpu_count()} CPU cores shared with other work (load "
             f"average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end), "
             f"jax {jax.__version__}, torch {torch.__version__}, torchvision "
             f"{torchvision.__version__}; B={B}, out {OUT}x{OUT}, 16 sizes 256x341..640x480, "
             f"1..5 boxes each; --iters {args.iters} --rounds {args.rounds}",
             "images/s (wall) and CPU-ms per image (process + DataLoader workers); medians; "
             "ratios against torchvision with 2 workers (speed: higher is better for augjax)"]
    for k in runners:
        w, c = statistics.median(wall[k]), statistics.median(cpu[k])
        rows[k] = {"wall_img_s": w, "cpu_ms_per_img": c, "wall_ratio": w / base_w,
                   "cpu_ratio": base_c / c, "wall_rounds": wall[k], "cpu_rounds": cpu[k]}
        lines.append(f"{k:24s} wall {w:7.1f} img/s ({w / base_w:.2f}x)   cpu {c:6.2f} ms/img "
                     f"({base_c / c:.2f}x)   wall rounds {[round(x) for x in wall[k]]}")
    lines.append(f"XLA compiles after the warm-up batches (all pipelines): "
                 f"{len(compiles) - warm}")
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"),
                       "machine": {"cpu_count": os.cpu_count(), "load_average_1min": load[0],
                                   "shared": "with other work"},
                       "versions": {"jax": jax.__version__, "torch": torch.__version__,
                                    "torchvision": torchvision.__version__},
                       "summary": lines, "rows": rows,
                       "compiles_after_warmup": len(compiles) - warm}, f, indent=1)


if __name__ == "__main__":
    main()
