"""3D volumes: a batch of N x 1 x S^3 float32 with its mask through nnU-Net's 3D augmentation
as one augjax volume chain on arrays, against batchgeneratorsv2 (nnU-Net v2's own transforms,
per sample, as its data loader runs them) on the same volumes in the same run, in two settings:

- ``every``: every op applied (p=1, the worst case): the spatial transform with rotation, scale
  and an elastic deformation (augjax: one resample, trilinear images, nearest masks), noise,
  blur, brightness, contrast, low resolution, gamma, mirroring;
- ``nnunet``: nnU-Net's default probabilities and ranges (``augjax.recipes.nnunet()`` against
  ``nnUNetTrainer.get_training_transforms``' transforms, no elastic deformation), the patch the
  whole volume.

On the CPU also a per-volume NumPy/SciPy pipeline for the ``every`` setting (what
batchgenerators v1 calls). batchgeneratorsv2 needs PyTorch; install it outside the project's
dependencies (``pip install --target DIR --no-deps batchgeneratorsv2 pandas scikit-image
lazy-loader`` and ``PYTHONPATH=DIR``); without it the peer is skipped and says so.

    PYTHONPATH=/tmp/bgv2 python benchmarks/volumes.py --device cpu --size 64
    PYTHONPATH=/tmp/bgv2 python benchmarks/volumes.py --device gpu --size 128

On the GPU the batchgeneratorsv2 peer runs on CUDA tensors (torch's own GPU kernels, per
sample, synchronized before each clock read); a transform that fails there is recorded.

Writes ``results/volumes-<machine>-<date>.json`` (``--out`` to choose): ms per batch (median of
``--repeats`` warm calls) per setting, the peers', the ratios, and the versions.
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
    p.add_argument("--no-reference", action="store_true",
                   help="skip the peers (batchgeneratorsv2, SciPy)")
    p.add_argument("--out", default=None)
    return p.parse_args()


def _chain(vol, sigma):
    return vol.chain(
        vol.affine.bind(rotate=0.5, scale=0.2, p_elastic=1.0, sigma=tuple(sigma),
                        magnitude=(100.0, 200.0)),
        vol.noise.bind(p=1.0), vol.blur.bind(p=1.0, p_per_channel=1.0),
        vol.brightness.bind(p=1.0), vol.contrast.bind(p=1.0),
        vol.lowres.bind(p=1.0, p_per_channel=1.0), vol.gamma.bind(p=1.0),
        vol.flip.bind(p=0.5), name="bench")


def _bgv2(size: int, every: bool):
    """nnU-Net v2's 3D training transforms (``nnUNetTrainer.get_training_transforms``, the
    patch the whole volume, no deep-supervision or cascade steps), every op applied with
    ``every``; None where batchgeneratorsv2 is not importable."""
    try:
        from batchgeneratorsv2.transforms.intensity.brightness import (
            MultiplicativeBrightnessTransform,
        )
        from batchgeneratorsv2.transforms.intensity.contrast import BGContrast, ContrastTransform
        from batchgeneratorsv2.transforms.intensity.gamma import GammaTransform
        from batchgeneratorsv2.transforms.intensity.gaussian_noise import GaussianNoiseTransform
        from batchgeneratorsv2.transforms.noise.gaussian_blur import GaussianBlurTransform
        from batchgeneratorsv2.transforms.spatial.low_resolution import (
            SimulateLowResolutionTransform,
        )
        from batchgeneratorsv2.transforms.spatial.mirroring import MirrorTransform
        from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform
        from batchgeneratorsv2.transforms.utils.compose import ComposeTransforms
        from batchgeneratorsv2.transforms.utils.random import RandomTransform
    except ImportError:
        return None

    def p(q):
        return 1.0 if every else q

    rot = 30.0 / 360 * 2.0 * np.pi
    return ComposeTransforms([
        SpatialTransform((size,) * 3, patch_center_dist_from_border=0, random_crop=False,
                         p_elastic_deform=1.0 if every else 0.0, p_rotation=p(0.2),
                         rotation=(-rot, rot), p_scaling=p(0.2), scaling=(0.7, 1.4),
                         p_synchronize_scaling_across_axes=1, bg_style_seg_sampling=False),
        RandomTransform(GaussianNoiseTransform(noise_variance=(0, 0.1), p_per_channel=1,
                                               synchronize_channels=True),
                        apply_probability=p(0.1)),
        RandomTransform(GaussianBlurTransform(blur_sigma=(0.5, 1.0), synchronize_channels=False,
                                              synchronize_axes=False, p_per_channel=p(0.5),
                                              benchmark=True), apply_probability=p(0.2)),
        RandomTransform(MultiplicativeBrightnessTransform(
            multiplier_range=BGContrast((0.75, 1.25)), synchronize_channels=False,
            p_per_channel=1), apply_probability=p(0.15)),
        RandomTransform(ContrastTransform(contrast_range=BGContrast((0.75, 1.25)),
                                          preserve_range=True, synchronize_channels=False,
                                          p_per_channel=1), apply_probability=p(0.15)),
        RandomTransform(SimulateLowResolutionTransform(
            scale=(0.5, 1), synchronize_channels=False, synchronize_axes=True, ignore_axes=None,
            allowed_channels=None, p_per_channel=p(0.5)), apply_probability=p(0.25)),
        RandomTransform(GammaTransform(gamma=BGContrast((0.7, 1.5)), p_invert_image=1,
                                       synchronize_channels=False, p_per_channel=1,
                                       p_retain_stats=1), apply_probability=p(0.1)),
        RandomTransform(GammaTransform(gamma=BGContrast((0.7, 1.5)), p_invert_image=0,
                                       synchronize_channels=False, p_per_channel=1,
                                       p_retain_stats=1), apply_probability=p(0.3)),
        MirrorTransform(allowed_axes=(0, 1, 2)),
    ])


def _time_bgv2(transforms, x: np.ndarray, mask: np.ndarray, repeats: int,
               device: str = "cpu") -> list[float]:
    """ms per batch: each volume through ``transforms`` as nnU-Net's loader calls them (a dict
    of torch tensors, image (C, D, H, W), segmentation (1, D, H, W)); ``device="cuda"``: the
    tensors on the GPU (torch's own kernels there), synchronized before the clock is read."""
    import torch

    images = [torch.from_numpy(np.moveaxis(x[i], -1, 0).copy()).to(device)
              for i in range(x.shape[0])]
    masks = [torch.from_numpy(mask[i][None].astype(np.int16)).to(device)
             for i in range(x.shape[0])]

    def batch():
        for image, seg in zip(images, masks):
            transforms(image=image, segmentation=seg)
        if device != "cpu":
            torch.cuda.synchronize()

    batch()  # warm
    return _time(batch, repeats)


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
    chains = {"every": _chain(vol, args.sigma), "nnunet": augjax.recipes.nnunet()}
    keys = iter(jax.random.split(jax.random.key(0), 1000))
    result = {
        "benchmark": "volumes", "date": datetime.date.today().isoformat(),
        "machine": platform.node() and args.device, "device": str(device),
        "device_kind": device.device_kind,
        "cpu_count": os.cpu_count(), "batch": args.batch, "size": args.size,
        "elastic_sigma": list(args.sigma),
        "settings": {
            "every": "rotation + scale + elastic (augjax: one resample, trilinear images, "
                     "nearest masks), noise, blur, brightness, contrast, lowres, gamma, "
                     "mirror; every op applied",
            "nnunet": "nnU-Net v2's default 3D probabilities and ranges "
                      "(augjax.recipes.nnunet(); batchgeneratorsv2 as get_training_transforms "
                      "builds it), no elastic; the patch the whole volume"},
        "versions": {"python": sys.version.split()[0], "jax": jax.__version__,
                     "numpy": np.__version__},
    }
    for setting, chain in chains.items():
        def run():
            out = chain(augjax.Volumes(xs), key=next(keys), masks=ms)
            jax.block_until_ready((out["images"].array, out["masks"]))

        t = time.perf_counter()
        run()
        first = (time.perf_counter() - t) * 1e3
        times = _time(run, args.repeats)
        result[setting] = {"augjax_first_call_ms": round(first, 1),
                           "augjax_ms_per_batch": round(statistics.median(times), 2),
                           # the draws differ per call (which ops a volume drew): the mean is
                           # the expected cost of a batch, the fair figure beside the peer's
                           "augjax_ms_mean": round(statistics.mean(times), 2),
                           "augjax_ms_runs": [round(v, 2) for v in times]}
    if not args.no_reference:
        peer = {s: _bgv2(args.size, s == "every") for s in chains}
        if peer["every"] is None:
            result["batchgeneratorsv2"] = "not importable: skipped (see the module docstring)"
        else:
            import batchgeneratorsv2
            import torch

            from importlib.metadata import version

            result["versions"].update(batchgeneratorsv2=version("batchgeneratorsv2"),
                                      torch=torch.__version__)
            result["torch_threads"] = torch.get_num_threads()
            torch.manual_seed(0)
            where = "cpu" if args.device == "cpu" else "cuda"
            result["batchgeneratorsv2_device"] = where
            for setting, transforms in peer.items():
                try:
                    bg = _time_bgv2(transforms, x, mask, args.repeats, where)
                except Exception as err:  # noqa: BLE001 - the peer's own failure, recorded
                    why = f"{type(err).__name__}: {err}"
                    result[setting]["batchgeneratorsv2_error"] = why[:300]
                    continue
                mine = result[setting]["augjax_ms_per_batch"]
                result[setting].update({
                    "batchgeneratorsv2_ms_per_batch": round(statistics.median(bg), 1),
                    "batchgeneratorsv2_ms_runs": [round(v, 1) for v in bg],
                    "speedup_vs_batchgeneratorsv2": round(statistics.median(bg) / mine, 2),
                    "batchgeneratorsv2_ms_mean": round(statistics.mean(bg), 1),
                    "speedup_vs_batchgeneratorsv2_mean": round(
                        statistics.mean(bg) / result[setting]["augjax_ms_mean"], 2)})
            del batchgeneratorsv2
    if not args.no_reference and args.device == "cpu":
        import scipy

        ref_rng = np.random.default_rng(1)
        reps = max(2, args.repeats // 2)
        ref = _time(lambda: [_reference(x[i, ..., 0], mask[i], ref_rng, args.sigma)
                             for i in range(args.batch)], reps)
        result["every"].update({
            "scipy_reference": "per-volume NumPy/SciPy ndimage pipeline, one process",
            "scipy_ms_per_batch": round(statistics.median(ref), 1),
            "scipy_ms_runs": [round(v, 1) for v in ref],
            "speedup_vs_scipy": round(statistics.median(ref)
                                      / result["every"]["augjax_ms_per_batch"], 2),
        })
        result["versions"]["scipy"] = scipy.__version__
    name = f"volumes-{args.device}-{result['date']}.json"
    out = Path(args.out) if args.out else Path(__file__).with_name("results") / name
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
