"""A call's DALI nodes, made in one place for every front end (images, clips, views): the
device of a node, the per-sample seeds (the one draw, :func:`sample_seeds`) and the nodes placed
on the operator's device (:func:`placed`). The arguments themselves (``key``, ``device``, ...)
are checked by :func:`augjax._runtime.execution.inputs.check_arguments`."""

from __future__ import annotations

from typing import Any

from augjax._runtime.execution.inputs import check_arguments
from augjax._runtime.execution.keys import SEED_HIGH

__all__ = ["from_decoder", "node_device", "placed", "sample_seeds"]


def node_device(node: Any) -> str:
    """``"gpu"`` for a node on the GPU (``"gpu"`` or ``"mixed"``), else ``"cpu"``."""
    return "gpu" if getattr(node, "device", "cpu") in ("gpu", "mixed") else "cpu"


def from_decoder(node: Any) -> bool:
    """Whether ``node`` is a DALI image decoder's output (``fn.decoders.image`` and its kin:
    images of their own sizes), as far as the node tells (False where it does not)."""
    op = getattr(getattr(node, "source", None), "_op", None)
    return type(op).__module__.rsplit(".", 1)[-1] == "decoders" if op is not None else False


def placed(node: Any, device: str) -> Any:
    """``node`` on ``device``: a CPU node moved to the GPU for a GPU operator (DALI moves data
    up only)."""
    return node.gpu() if device == "gpu" and node_device(node) == "cpu" else node


def sample_seeds(*, device: str = "gpu", seed: int | None = None) -> Any:
    """The per-sample seeds an augjax operator draws inside a pipeline, as a DALI DataNode
    (int32 ``(2,)`` per sample in ``[0, 2**30)``, on ``device``): return it from the pipeline
    next to the images to run the chain after DALI's JAX iterator with
    :func:`augjax.dali.augment_batches`, or pass it to an op or chain as ``seeds=`` inside the
    pipeline. Every augjax operator draws its seeds here.

    >>> seeds = augjax.dali.sample_seeds(device="gpu")  # doctest: +SKIP
    """
    check_arguments("sample_seeds", nodes=True, key=None, seeds=None, seed=None, device=device)
    from augjax.dali._backend import _dali

    fn, types, _ = _dali()
    kwargs = {} if seed is None else {"seed": int(seed)}
    return fn.random.uniform(range=[0, SEED_HIGH], shape=[2], dtype=types.INT32, device=device,
                             **kwargs)
