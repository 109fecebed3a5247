"""Caches only save time: every public path gives bitwise the same output with augjax's caches
off (``AUGJAX_COMPILATION_CACHE=0``: no JAX persistent cache, no program store), cold (a new
cache folder) and warm (the same folder again), each in a fresh process.

The paths: a training chain on arrays (crop, flip, colour jitter, normalize), the four policies,
mixup with labels, rotated boxes through two warps, an op's ``sample`` with one key then its
``apply``, a chain on clips (called, and replayed from its params), a list of images of
different sizes with boxes (the ragged read), jpeg, a partial batch after a full one (padded to the
compiled size), a DALI CPU pipeline, and inputs laid out over two CPU devices (the
partitioned programs, which run beside stored ones: the 2-process ``examples/multi_host.py``
gave other bits with the store on, because the programs it cannot store compiled with other
XLA options). The processes see two CPU devices. ``examples/multi_host.py --check`` itself
runs in tests/dali/test_multi_host.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

#: The program store on in this process, as a user has it (tests/conftest.py: STORE_OFF_ROOMS).
pytestmark = pytest.mark.program_store

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import sys
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
import augjax

ops = augjax.ops
rng = np.random.default_rng(0)
x = rng.integers(0, 256, (8, 40, 40, 3), dtype=np.uint8)
y = rng.integers(0, 10, 8).astype(np.int32)
key = jax.random.key(11)
out = {}
train = augjax.compose(ops.random_resized_crop.bind(size=32), ops.flip.bind(p=0.5),
                       ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4,
                                             hue=0.1),
                       ops.normalize.bind(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)))
out["train"] = train(x, key=key)
out["train_partial"] = train(x[:5], key=key)  # padded to the compiled batch of 8
policies = {"rand": augjax.rand_augment(n=2, m=9), "trivial": augjax.trivial_augment_wide(),
            "auto": augjax.auto_augment(), "augmix": augjax.augmix()}
for name, policy in policies.items():
    out[name] = policy(x, key=key)
out["mixup_images"], out["mixup_labels"] = ops.mixup(x, y, key=key, alpha=0.4, num_classes=10)
# rotated boxes through two warps; sample with one key, then apply; a chain on clips, called and
# replayed from its sampled params
boxes = np.tile(np.array([[20.0, 20.0, 16.0, 10.0, 30.0]], np.float32), (8, 1))[:, None]
geo = augjax.compose(ops.rotate.bind(degrees=30), ops.affine.bind(degrees=10, scale=(0.8, 1.2)))
for name, value in geo(x, key=key, boxes=boxes, boxes_format="cxcywhr").items():
    out[f"rotated_{name}"] = value
rotate = ops.rotate.bind(degrees=30)
sampled = rotate.sample(x, key=key)
out["sampled"] = jax.tree_util.tree_leaves(sampled)[0]
out["sample_apply"] = rotate.apply(x, params=sampled)
clips = augjax.Clips(rng.integers(0, 256, (4, 3, 24, 24, 3), dtype=np.uint8))
crop_flip = augjax.compose(ops.random_resized_crop.bind(size=16), ops.flip.bind(p=0.5))
out["clips"] = crop_flip(clips, key=key)
out["clips_apply"] = crop_flip.apply(clips, params=crop_flip.sample(clips, key=key))
# a list of images of different sizes with boxes (the ragged read: image by image on the CPU,
# a flip folded into it) and a scale jitter that reads many taps a pixel
sizes = [(48, 64), (40, 40), (64, 48), (36, 56), (56, 36), (44, 60), (60, 44), (32, 32)]
listed = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]
listed_boxes = [np.array([[2.0, 3.0, w / 2, h / 2]], np.float32) for h, w in sizes]
for name, value in crop_flip(listed, key=key, boxes=listed_boxes).items():
    out[f"list_{name}"] = value
jitter = augjax.compose(ops.scale_jitter.bind(target_size=24, scale_range=(0.1, 2.0), fill=0.5),
                        ops.flip.bind(p=0.5))
out["list_jitter"] = jitter(listed, key=key)
# jpeg (integer DCTs, its colour planes' blocks coded in one batch)
jpeg = ops.jpeg.bind(quality=(10, 95))
out["jpeg"] = jpeg(x, key=key)

mesh = Mesh(np.array(jax.devices()[:2]), ("b",))
spread = jax.device_put(x, NamedSharding(mesh, PartitionSpec("b")))
out["sharded"] = train(spread, key=key)
out["sharded_rand"] = policies["rand"](spread, key=key)

from nvidia.dali import fn, pipeline_def
@pipeline_def(batch_size=8, num_threads=1, device_id=None, seed=5, prefetch_queue_depth=1)
def pipe():
    images = fn.external_source(source=lambda: x, batch=True, layout="HWC")
    return train(images), policies["rand"](images), jpeg(images)
p = pipe()
p.build()
for i in range(2):
    a, b, c = p.run()
    out[f"dali_train_{i}"], out[f"dali_rand_{i}"] = a.as_tensor(), b.as_tensor()
    out[f"dali_jpeg_{i}"] = c.as_tensor()
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
print("traces", augjax.trace_count())
'''


def _run(tmp_path: Path, name: str, cache: Path, **env_extra: str) -> tuple[dict, int]:
    script = tmp_path / "paths.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AUGJAX_") and k not in ("JAX_COMPILATION_CACHE_DIR",
                                                        "XDG_CACHE_HOME")}
    env.update({"AUGJAX_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu",
                "XLA_FLAGS": "--xla_force_host_platform_device_count=2", **env_extra})
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    out = tmp_path / f"{name}.npz"
    proc = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as f:
        return {k: f[k] for k in f.files}, int(proc.stdout.split()[-1])


@pytest.mark.slow
def test_every_path_is_bitwise_the_same_with_caches_off_cold_and_warm(tmp_path):
    pytest.importorskip("nvidia.dali", reason="the DALI path needs nvidia-dali")
    off, _ = _run(tmp_path, "off", tmp_path / "unused", AUGJAX_COMPILATION_CACHE="0")
    cold, cold_traces = _run(tmp_path, "cold", tmp_path / "cache")
    warm, warm_traces = _run(tmp_path, "warm", tmp_path / "cache")
    assert cold_traces > 0 and warm_traces < cold_traces  # the warm process used the store
    assert set(off) == set(cold) == set(warm)
    for name in off:
        for other, label in ((cold, "cold"), (warm, "warm")):
            assert off[name].dtype == other[name].dtype and off[name].shape == other[name].shape
            differ = int(np.sum(off[name] != other[name]))
            assert differ == 0, f"{name}: {differ} values differ between caches off and {label}"
