"""A call's DALI nodes, made in one place for every front end (images, clips, views): the
device of a node, the per-sample seeds (the one draw, :func:`sample_seeds`) and the nodes placed
on the operator's device (:func:`placed`). The arguments themselves (``key``, ``device``, ...)
are checked by :func:`augjax._runtime.execution.inputs.check_arguments`."""

from __future__ import annotations

from typing import Any

from augjax._core.declaration import LAYOUTS
from augjax._runtime.execution.inputs import check_arguments
from augjax._runtime.execution.keys import SEED_HIGH
from augjax.errors import InputKindError

__all__ = ["check_not_sequences", "from_decoder", "node_device", "placed", "sample_seeds"]


def check_not_sequences(sample: tuple[int, ...], name: str, layout: str) -> None:
    """Raises InputKindError for samples of rank 4 in an image layout: sequences (a video
    reader's, frames stacked) called without ``layout="FHWC"``, which DALI's node does not say
    when the pipeline is defined. ``sample``: one sample's shape, as the operator sees it at run
    time (a uniform batch's, or a ragged batch's shapes read by the crop's plan); a cheap check
    of the rank, before any trace."""
    if layout in LAYOUTS and len(sample) == 4:
        raise InputKindError(
            f"{name}: argument 'images' in a DALI pipeline holds sequences (samples "
            f"{tuple(sample)}, rank 4), taken as images in layout {layout!r} (samples of rank 3);"
            f" say the clips' layout on the call: {name}(sequences, layout='FHWC') (or 'FCHW'; "
            f"'DHWC' for volumes)", op=name, argument="layout", shape=tuple(sample),
            kinds=("layout='FHWC'", "layout='FCHW'", "layout='DHWC'"))


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
