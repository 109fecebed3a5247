"""Test helpers: sample batches, seeds, and running ops through a real DALI pipeline."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def images(n: int = 4, h: int = 16, w: int = 20, c: int = 3, dtype=np.uint8, seed: int = 0):
    """A batch of random images, uint8 levels or float32 in [0, 1]."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(0, 256, (n, h, w, c), dtype=np.uint8)
    return rng.random((n, h, w, c), dtype=np.float32)


def seeds(n: int, seed: int = 0) -> np.ndarray:
    """Per-sample int32 seeds of shape (n, 2), as augjax draws them in DALI."""
    return np.random.default_rng(seed).integers(0, 2**30, (n, 2), dtype=np.int32)


def _constant(array: np.ndarray) -> Callable[[], np.ndarray]:
    # A zero-argument callable: DALI passes batch info to sources that accept an argument.
    return lambda: array


def run_dali(
    build: Callable[..., object],
    *arrays: np.ndarray,
    layouts: Sequence[str | None] | None = None,
    device: str = "cpu",
    iterations: int = 1,
    seed: int = 7,
) -> list[list[np.ndarray]]:
    """Runs ``build(*nodes)`` in a DALI pipeline fed with ``arrays`` (each a whole batch, the
    same every iteration); returns, per iteration, the outputs as NumPy arrays.

    ``device="gpu"`` needs a GPU: the inputs are moved to the GPU first.
    """
    from nvidia.dali import fn, pipeline_def

    batch = len(arrays[0])
    layouts = layouts or ["HWC"] + [None] * (len(arrays) - 1)

    @pipeline_def(batch_size=batch, num_threads=2, device_id=0 if device == "gpu" else None,
                  seed=seed, prefetch_queue_depth=1)
    def pipe():
        nodes = []
        for a, layout in zip(arrays, layouts):
            kw = {"layout": layout} if layout else {}
            node = fn.external_source(source=_constant(a), batch=True, **kw)
            nodes.append(node.gpu() if device == "gpu" else node)
        out = build(*nodes)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    results = []
    for _ in range(iterations):
        outs = p.run()
        results.append([np.array(o.as_cpu().as_tensor() if device == "gpu" else o.as_tensor())
                        for o in outs])
    return results


def tv(fn: Callable[..., object], x: np.ndarray, **kw) -> np.ndarray:
    """Applies a torchvision kernel to an HWC batch (as one NCHW tensor), back to HWC NumPy."""
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x)).permute(0, 3, 1, 2)
    return fn(t, **kw).permute(0, 2, 3, 1).numpy()


def check_grad(fn: Callable[..., object], x: np.ndarray, *, eps: float = 2e-5,
               rtol: float = 1e-2, seed: int = 0, jit: bool = False) -> np.ndarray:
    """Checks ``jax.grad`` of ``sum(fn(x) * w)`` (``w`` fixed random weights) on a float32 batch
    against a central finite difference along a random direction ``v``: ``grad . v`` and
    ``(L(x + eps v) - L(x - eps v)) / (2 eps)`` (``L`` summed in float64) agree to ``rtol``.
    Returns the gradient (finite). For functions continuous around ``x`` and smooth but for
    kinks (clamps, sector changes) that few pixels lie within ``eps`` of. ``jit``: ``fn`` and
    its gradient compiled (for a kernel function; run eagerly, a kernel of many small
    operations dispatches and compiles each alone)."""
    import jax
    import jax.numpy as jnp

    if jit:
        fn = jax.jit(fn)
    rng = np.random.default_rng(seed)
    x = jnp.asarray(x, jnp.float32)
    w = rng.standard_normal(np.shape(fn(x))).astype(np.float32)

    def loss(z):
        return jnp.sum(jnp.asarray(fn(z), jnp.float32) * w)

    def loss64(z):
        return float(np.sum(np.asarray(fn(z), np.float64) * w))

    g = np.asarray((jax.jit(jax.grad(loss)) if jit else jax.grad(loss))(x))
    assert g.shape == x.shape and np.isfinite(g).all()
    v = rng.standard_normal(x.shape).astype(np.float32)
    fd = (loss64(x + eps * v) - loss64(x - eps * v)) / (2 * eps)
    an = float(np.sum(g.astype(np.float64) * v))
    assert abs(fd - an) <= rtol * max(abs(an), abs(fd), 1.0), (an, fd)
    return g


def write_jpegs(root, sizes: Sequence[tuple[int, int]]) -> str:
    """Writes the bundled photos resized to ``sizes`` ((height, width) each) as JPEGs under
    ``root/c0`` (a ``fn.readers.file`` root); returns ``root`` as a string."""
    from pathlib import Path

    from PIL import Image

    import augjax

    photos = augjax.data.sample_images(None)
    (Path(root) / "c0").mkdir(parents=True, exist_ok=True)
    for i, (h, w) in enumerate(sizes):
        im = Image.fromarray(photos[i % len(photos)]).resize((w, h), Image.BILINEAR)
        im.save(Path(root) / "c0" / f"{i:02d}.jpg", quality=90)
    return str(root)


def hwc_to_torch(img):
    """An HWC NumPy image as a CHW torch tensor."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)


def torch_to_hwc(t) -> np.ndarray:
    """A CHW torch tensor as an HWC NumPy image."""
    return t.permute(1, 2, 0).numpy()


def abs_diff(a, b) -> np.ndarray:
    """``|a - b|`` in float64."""
    return np.abs(np.asarray(a).astype(np.float64) - np.asarray(b).astype(np.float64))


def run_on_two_cpu_devices(tmp_path, source: str) -> None:
    """Runs ``source`` (a script that prints ``ok`` last) in a fresh Python whose JAX sees two
    CPU devices and no other platform; fails with its stderr otherwise."""
    import os
    import subprocess
    import sys

    script = tmp_path / "two_cpu_devices.py"
    script.write_text(source)
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=300, check=False)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]


def fresh_programs() -> None:
    """Forgets every program augjax built (and the batch sizes they ran with): the next call
    traces anew, as in a new process (XLA's executables may come from the compilation cache).
    Waits for background compiles first (augjax._runtime.execution.padding)."""
    from augjax._runtime.execution import padding
    from augjax._runtime.execution.program import (
        apply_program,
        array_program,
        call_program,
        sample_program,
        seeded_program,
    )
    from augjax.dali._bridge import dali_function

    padding.wait_compiles()
    for cache in (array_program, sample_program, apply_program, seeded_program, call_program,
                  dali_function):
        cache.cache_clear()


def compiles(fn, names: list | None = None) -> int:
    """How many programs XLA compiles while ``fn()`` runs (jax_log_compiles' records); their
    names (``jit(NAME)``) are appended to ``names`` when given."""
    import logging
    import re

    import jax

    seen = []

    class Count(logging.Handler):
        def emit(self, record):
            if "Finished XLA compilation" in record.getMessage():
                seen.append(record.getMessage())

    handler, logger = Count(), logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            fn()
    finally:
        logger.removeHandler(handler)
    if names is not None:
        names.extend(m.group(1) for m in (re.search(r"of jit\((\w+)\)", s) for s in seen) if m)
    return len(seen)


def ragged_targets(sizes: Sequence[tuple[int, int]], seed: int = 1):
    """Per image of ``sizes``: a class mask (ids 0..6), 1..3 ordered boxes and 2 keypoints
    inside it, as lists ``(masks, boxes, points)``."""
    rng = np.random.default_rng(seed)
    masks, boxes, points = [], [], []
    for i, (h, w) in enumerate(sizes):
        masks.append(rng.integers(0, 7, (h, w)).astype(np.int32))
        m = 1 + i % 3
        x0, y0 = rng.uniform(0, w / 2, m), rng.uniform(0, h / 2, m)
        x1, y1 = x0 + rng.uniform(1, w / 2, m), y0 + rng.uniform(1, h / 2, m)
        boxes.append(np.stack([x0, y0, x1, y1], 1).astype(np.float32))
        points.append(np.stack([rng.uniform(0, w - 1, 2), rng.uniform(0, h - 1, 2)],
                               1).astype(np.float32))
    return masks, boxes, points
