"""Running a bound op through a real DALI CPU pipeline, with the pipelines cached per op."""

from __future__ import annotations

import collections
import threading
from typing import Any

import numpy as np

__all__ = ["dali_available", "run_dali"]

_CACHE: collections.OrderedDict[tuple[Any, ...], Any] = collections.OrderedDict()
_CACHE_SIZE = 16
_LOCK = threading.Lock()


def dali_available() -> str | None:
    """``None`` when DALI with its JAX plugin imports, else the reason it does not."""
    try:
        import nvidia.dali
        import nvidia.dali.plugin.jax  # noqa: F401
    except ImportError as err:
        return f"NVIDIA DALI with its JAX plugin is not installed ({err})"
    return None


def _build(op: Any, shape: tuple[int, ...], with_labels: bool, layout: str) -> Any:
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=shape[0], num_threads=1, device_id=None, seed=1234,
                  prefetch_queue_depth=1)
    def pipe():
        images = fn.external_source(name="images", layout=layout)
        seeds = fn.external_source(name="seeds")
        inputs = [images]
        if with_labels:
            inputs.append(fn.external_source(name="labels"))
        out = op(*inputs, seeds=seeds, layout=layout)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    return p


def run_dali(op: Any, images: np.ndarray, labels: np.ndarray | None, seeds: np.ndarray,
             layout: str) -> list[np.ndarray]:
    """Outputs of ``op`` applied in a DALI CPU pipeline to one batch, with per-sample ``seeds``.

    Pipelines are cached per (op, dtype, shape, layout, labels), so calling again with new data
    of the same kind reuses the pipeline and its compiled program.
    """
    key = (op, images.dtype.str, images.shape, layout, labels is not None)
    with _LOCK:
        pipe = _CACHE.get(key)
        if pipe is None:
            pipe = _build(op, images.shape, labels is not None, layout)
            _CACHE[key] = pipe
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        _CACHE.move_to_end(key)
        pipe.feed_input("images", images, layout=layout)
        pipe.feed_input("seeds", seeds)
        if labels is not None:
            pipe.feed_input("labels", labels)
        outs = pipe.run()
    return [np.array(o.as_tensor()) for o in outs]
