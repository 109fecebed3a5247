"""What every benchmark of this folder shares: the input batches, DALI pipelines around a body,
the timing loops, and the machine and version facts a result file records.

Pipelines are fed by ``external_source`` cycling through 4 fixed batches of B x S x S x 3 uint8
images (already on the device for GPU pipelines); a pipeline row is ms per ``pipe.run()`` in a
loop (prefetch queue 2), an array row is ms per call with one sync at the end of each repetition.
"""

from __future__ import annotations

import datetime
import importlib
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def host_batches(b: int, s: int, n: int = 4, seed: int = 0) -> list[np.ndarray]:
    """``n`` batches of ``b`` random ``s x s x 3`` uint8 images (fixed seed)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (b, s, s, 3), dtype=np.uint8) for _ in range(n)]


def labels_for(b: int, classes: int = 1000) -> np.ndarray:
    """Class indices ``i % classes`` as DALI feeds them: ``(b, 1)`` int32."""
    return (np.arange(b, dtype=np.int32) % classes).reshape(b, 1)


def device_batches(device: str, host: list[np.ndarray]) -> list:
    """``host`` on the GPU (CuPy arrays, for a GPU ``external_source``) or as they are."""
    if device != "gpu":
        return host
    import cupy as cp

    return [cp.asarray(h) for h in host]


def pipeline(device: str, b: int, batches, body, *, labels: bool = False, threads: int = 4,
             conditionals: bool = False, executor: str = "dynamic", prefetch: int = 2,
             seed: int = 0, **options):
    """A built DALI pipeline: ``body(images)`` (or ``body(images, labels)``) after an
    ``external_source`` cycling through ``batches``. ``device="cpu"`` builds a CPU-only pipeline
    (``device_id=None``); ``options`` go to ``pipeline_def`` (``exec_async=False``, ...)."""
    from nvidia.dali import fn, pipeline_def

    state = {"i": 0}

    def source():
        state["i"] += 1
        return batches[state["i"] % len(batches)]

    lab = labels_for(b)

    @pipeline_def(batch_size=b, num_threads=threads, device_id=0 if device == "gpu" else None,
                  prefetch_queue_depth=prefetch, seed=seed, enable_conditionals=conditionals,
                  exec_dynamic=executor == "dynamic", **options)
    def pipe():
        x = fn.external_source(source=source, batch=True, layout="HWC",
                               device="gpu" if device == "gpu" else "cpu")
        if labels:
            y = fn.external_source(source=lambda: lab, batch=True)
            if device == "gpu":
                y = y.gpu()
            return body(x, y)
        return body(x)

    p = pipe()
    p.build()
    return p


def sync(device: str) -> None:
    """Waits for the GPU (no-op on CPU)."""
    if device == "gpu":
        try:
            import cupy as cp

            cp.cuda.runtime.deviceSynchronize()
        except ImportError:
            import jax

            jax.effects_barrier()


def time_pipeline(p, device: str, iters: int, reps: int, warmup: int = 10) -> list[float]:
    """ms per batch of each of ``reps`` repetitions of ``iters`` ``p.run()`` calls."""
    for _ in range(warmup):
        p.run()
    sync(device)
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            p.run()
        sync(device)
        out.append((time.perf_counter() - t0) * 1e3 / iters)
    return out


def time_call(fn, iters: int, reps: int, warmup: int = 3) -> list[float]:
    """ms per call of each of ``reps`` repetitions of ``iters`` calls of ``fn`` (its outputs
    waited for once per repetition: JAX's dispatch is pipelined as in a training loop)."""
    import jax

    out = None
    for _ in range(warmup):
        out = fn()
    jax.block_until_ready(out)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            out = fn()
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) * 1e3 / iters)
    return times


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def _version(module: str) -> str | None:
    try:
        mod = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - absent or broken: recorded as None
        return None
    return getattr(mod, "__version__", None)


def _driver() -> dict[str, str | None]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return {"gpu": None, "driver": None}
    if not out:
        return {"gpu": None, "driver": None}
    name, driver, mem = (f.strip() for f in out[0].split(","))
    return {"gpu": name, "driver": driver, "gpu_memory": mem, "gpus": len(out)}


def _cuda() -> str | None:
    try:
        import jax

        backend = jax.extend.backend.get_backend() if hasattr(jax, "extend") else None
        version = getattr(backend, "platform_version", None)
        if version and "cuda" in version.lower():
            return version
    except Exception:  # noqa: BLE001
        pass
    try:
        import cupy

        v = cupy.cuda.runtime.runtimeGetVersion()
        return f"{v // 1000}.{v % 1000 // 10}"
    except Exception:  # noqa: BLE001
        return None


def versions(gpu: bool = False) -> dict[str, str | None]:
    """augjax, JAX, jaxlib, DALI, numpy, Python and the peers' versions; on a GPU also CUDA and
    the driver."""
    import jax
    import jaxlib

    import augjax

    out = {"augjax": augjax.__version__, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
           "dali": _version("nvidia.dali"), "numpy": np.__version__,
           "python": platform.python_version()}
    for name in ("torch", "torchvision", "timm", "cupy"):
        out[name] = _version(name)
    if gpu:
        out["cuda"] = _cuda()
        out.update(_driver())
    return out


def machine(gpu: bool = False, name: str | None = None) -> dict[str, object]:
    """Host facts: node, platform, cores, 1-minute load average, JAX's devices."""
    import jax

    info = {"name": name or platform.node(), "node": platform.node(),
            "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "load_average_1min": os.getloadavg()[0], "devices": [str(d) for d in jax.devices()]}
    if gpu:
        info["device_kind"] = jax.devices()[0].device_kind
    return info


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def today() -> str:
    return datetime.date.today().isoformat()
