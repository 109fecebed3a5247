"""3D volumes: a batch of N x 1 x S^3 float32 with its mask through a random 3D affine + elastic
deformation (one resample: trilinear images, nearest masks) and the intensity ops (noise, blur,
brightness, contrast, low resolution, gamma), every op applied (p=1: the worst case), as one
augjax volume chain on arrays; on the CPU also against a per-volume NumPy/SciPy pipeline doing
the same work in the same run (batchgeneratorsv2, the issue's peer, needs PyTorch and is not
installed here: SciPy's ndimage is what batchgenerators v1 calls for these transforms).

    python benchmarks/volumes.py --device cpu --size 64
    python benchmarks/volumes.py --device gpu --size 128 --no-reference

Writes ``results/volumes-<machine>-<date>.json`` (``--out`` to choose): ms per batch (median of
``--repeats`` warm calls), the reference's, their ratio, and the versions.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--size", type=int, default=128, help="side of the cubic volume")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sigma", type=float, nargs=2, default=(5.0, 8.0),
                   help="elastic smoothing sigma range (MONAI Rand3DElastic's sigma_range)")
    p.add_argument("--no-reference", action="store_true", help="skip the SciPy pipeline")
    p.add_argument("--out", default=None)
    return p.parse_args()


def _chain(vol, sigma):
    return vol.chain(
        vol.affine.bind(rotate=0.5, scale=0.2, p_elastic=1.0, sigma=tuple(sigma),
                        magnitude=(100.0, 200.0)),
        vol.noise.bind(p=1.0), vol.blur.bind(p=1.0, p_per_channel=1.0),
        vol.brightness.bind(p=1.0), vol.contrast.bind(p=1.0),
        vol.lowres.bind(p=1.0, p_per_channel=1.0), vol.gamma.bind(p=1.0), name="bench")


def _reference(x: np.ndarray, mask: np.ndarray, rng: np.random.Generator, sigma) -> tuple:
    """One volume (D, H, W) through the same steps with scipy.ndimage, per volume."""
    from scipy import ndimage

    shape = np.array(x.shape)
    c = (shape - 1) / 2
    a = rng.uniform(-0.5, 0.5, 3)
    s = 1 + rng.uniform(-0.2, 0.2, 3)
    cs, sn = np.cos(a), np.sin(a)
    rx = np.array([[1, 0, 0], [0, cs[0], -sn[0]], [0, sn[0], cs[0]]])
    ry = np.array([[cs[1], 0, sn[1]], [0, 1, 0], [-sn[1], 0, cs[1]]])
    rz = np.array([[cs[2], -sn[2], 0], [sn[2], cs[2], 0], [0, 0, 1]])
    lin = rx @ ry @ rz @ np.diag(s)
    sig, mag = rng.uniform(*sigma), rng.uniform(100, 200)
    disp = np.stack([ndimage.gaussian_filter(rng.uniform(-1, 1, x.shape).astype(np.float32),
                                             sig, mode="constant", truncate=3.0)
                     for _ in range(3)]) * mag
    grid = np.stack(np.meshgrid(*(np.arange(n, dtype=np.float32) for n in x.shape),
                                indexing="ij"))
    coords = np.einsum("ij,jdhw->idhw", lin, grid - c[:, None, None, None] + disp) \
        + c[:, None, None, None]
    y = ndimage.map_coordinates(x, coords, order=1, mode="grid-constant")
    m = ndimage.map_coordinates(mask, coords, order=0, mode="grid-constant")
    y = y + rng.uniform(0, 0.1) * rng.standard_normal(x.shape, dtype=np.float32)
    y = ndimage.gaussian_filter(y, rng.uniform(0.5, 1.0, 3), mode="reflect")
    y = y * rng.uniform(0.75, 1.25)
    mean, lo, hi = y.mean(), y.min(), y.max()
    y = np.clip((y - mean) * rng.uniform(0.75, 1.25) + mean, lo, hi)
    scale = rng.uniform(0.5, 1.0)
    small = ndimage.zoom(y, scale, order=0, grid_mode=True, mode="nearest")
    y = ndimage.zoom(small, shape / np.array(small.shape), order=1, grid_mode=True,
                     mode="nearest")
    mn, sd, low = y.mean(), y.std(), y.min()
    span = y.max() - low
    y = ((y - low) / span) ** rng.uniform(0.7, 1.5) * span + low
    y = (y - y.mean()) / y.std() * sd + mn
    return y, m


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main() -> None:
    args = _args()
    if args.device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    import augjax

    vol = augjax.volume_ops
    rng = np.random.default_rng(0)
    shape = (args.batch, args.size, args.size, args.size)
    x = rng.random((*shape, 1), dtype=np.float32)
    mask = (rng.random(shape) > 0.9).astype(np.int32)
    device = jax.devices(args.device)[0]
    xs, ms = jax.device_put(x, device), jax.device_put(mask, device)
    chain = _chain(vol, args.sigma)
    keys = iter(jax.random.split(jax.random.key(0), 1000))

    def run():
        out = chain(augjax.Volumes(xs), key=next(keys), masks=ms)
        jax.block_until_ready((out["images"].array, out["masks"]))

    t = time.perf_counter()
    run()
    first = (time.perf_counter() - t) * 1e3
    times = _time(run, args.repeats)
    result = {
        "benchmark": "volumes", "date": datetime.date.today().isoformat(),
        "machine": platform.node() and args.device, "device": str(device),
        "cpu_count": os.cpu_count(), "batch": args.batch, "size": args.size,
        "elastic_sigma": list(args.sigma),
        "pipeline": "affine+elastic (one resample, trilinear images, nearest masks) + noise, "
                    "blur, brightness, contrast, lowres, gamma; every op applied",
        "augjax_first_call_ms": round(first, 1),
        "augjax_ms_per_batch": round(statistics.median(times), 2),
        "augjax_ms_runs": [round(v, 2) for v in times],
        "versions": {"python": sys.version.split()[0], "jax": jax.__version__,
                     "numpy": np.__version__},
    }
    if not args.no_reference and args.device == "cpu":
        import scipy

        ref_rng = np.random.default_rng(1)
        reps = max(2, args.repeats // 2)
        ref = _time(lambda: [_reference(x[i, ..., 0], mask[i], ref_rng, args.sigma)
                             for i in range(args.batch)], reps)
        result.update({
            "reference": "per-volume NumPy/SciPy ndimage pipeline, one process "
                         "(batchgeneratorsv2 not installed: it needs PyTorch)",
            "reference_ms_per_batch": round(statistics.median(ref), 1),
            "reference_ms_runs": [round(v, 1) for v in ref],
            "speedup_vs_reference": round(statistics.median(ref) / statistics.median(times), 2),
        })
        result["versions"]["scipy"] = scipy.__version__
    name = f"volumes-{args.device}-{result['date']}.json"
    out = Path(args.out) if args.out else Path(__file__).with_name("results") / name
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
