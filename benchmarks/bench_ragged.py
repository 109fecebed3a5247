"""Images of different sizes on CPU: augjax's ragged random_resized_crop against DALI's native
``fn.random_resized_crop`` and against a bounded pad (pad the batch to its largest image, crop
and resize in JAX), B=16, JPEGs of 16 sizes (256x341 .. 640x480) made from the bundled photos.

    python benchmarks/bench_ragged.py [--iters 20] [--rounds 5] [--sync]

Prints images/s per pipeline (median over rounds, pipelines interleaved in each round) from the
wall clock and from the process's CPU time (all threads; steadier on a shared machine).
``--sync`` runs the pipelines without prefetch (``exec_async=False, exec_pipelined=False``), so
each ``run()`` is exactly one batch's work.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time

import numpy as np

SIZES = [(375, 500), (500, 375), (333, 500), (480, 640), (427, 640), (512, 512), (300, 450),
         (640, 480), (281, 500), (500, 333), (360, 480), (400, 600), (450, 300), (366, 500),
         (375, 499), (256, 341)]
B = 16


def make_jpegs(root: pathlib.Path) -> None:
    from PIL import Image

    from augjax.data import sample_images

    photos = sample_images(None)
    (root / "c0").mkdir(parents=True)
    for i, (h, w) in enumerate(SIZES):
        im = Image.fromarray(photos[i % len(photos)]).resize((w, h), Image.BILINEAR)
        im.save(root / "c0" / f"{i:02d}.jpg", quality=90)


def pipelines(root: str, sync: bool = False):
    import jax
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.jax import fn as jax_fn

    import augjax
    from augjax._runtime.ragged.prefix import ragged_apply

    def decoded():
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=True, seed=0)
        return fn.decoders.image(jpegs, output_type=types.RGB)

    kw = {"batch_size": B, "num_threads": 2, "device_id": None, "seed": 1}
    if sync:
        kw.update(exec_async=False, exec_pipelined=False)

    @pipeline_def(**kw)
    def native():
        return fn.random_resized_crop(decoded(), size=(224, 224), antialias=True)

    @pipeline_def(**kw)
    def ragged():
        return augjax.ops.random_resized_crop(decoded(), size=224)

    @pipeline_def(**kw)
    def ragged_flip():
        return augjax.compose([augjax.ops.random_resized_crop.bind(size=224),
                               augjax.ops.flip.bind(p=0.5)])(decoded())

    step = augjax.ops.random_resized_crop.bind(size=224)

    @jax.jit
    def padded_rrc(padded, shapes, seeds):
        keys = augjax.keys_from_seeds(seeds)
        return ragged_apply((step,), padded, shapes[:, :2], keys, 0, "bench")[0]

    pad_fn = jax_fn.jax_function(padded_rrc, device="cpu")

    @pipeline_def(**kw)
    def bounded_pad():
        images = decoded()
        shapes = images.shape(dtype=types.INT32, device="cpu")
        seeds = fn.random.uniform(range=[0, 2**30], shape=[2], dtype=types.INT32)
        return pad_fn(fn.pad(images, axis_names="HW"), shapes, seeds)

    return {"dali_native": native, "augjax_ragged": ragged, "augjax_ragged+flip": ragged_flip,
            "bounded_pad_jax": bounded_pad}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sync", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        make_jpegs(pathlib.Path(tmp))
        pipes = {k: v() for k, v in pipelines(tmp, args.sync).items()}
        for p in pipes.values():
            p.build()
            for _ in range(5):
                p.run()
        wall: dict[str, list[float]] = {k: [] for k in pipes}
        cpu: dict[str, list[float]] = {k: [] for k in pipes}
        rng = np.random.default_rng(0)
        for _ in range(args.rounds):
            for k in rng.permutation(list(pipes)):
                p = pipes[k]
                t, c = time.perf_counter(), time.process_time()
                for _ in range(args.iters):
                    p.run()
                wall[k].append(B * args.iters / (time.perf_counter() - t))
                cpu[k].append(B * args.iters / (time.process_time() - c))
        base_w, base_c = (statistics.median(x["dali_native"]) for x in (wall, cpu))
        for k in pipes:
            w, c = statistics.median(wall[k]), statistics.median(cpu[k])
            print(f"{k:20s} wall {w:7.1f} img/s ({w / base_w:.2f}x native)   "
                  f"cpu {c:7.1f} img/cpu-s ({c / base_c:.2f}x native)   "
                  f"wall rounds {[round(x) for x in wall[k]]}")

if __name__ == "__main__":
    main()
