"""DALI's dynamic mode (``nvidia.dali.experimental.dynamic``, "ndd"): augjax on ``ndd.Batch``.

Dynamic mode runs DALI's readers, decoders and operators imperatively on ``Batch`` objects;
every augjax call (ops, chains, policies, views, clips; ``sample`` and ``apply`` too) takes such
batches where it takes arrays, with no ``jax_function`` callback in between::

    import nvidia.dali.experimental.dynamic as ndd

    reader = ndd.readers.File(file_root=root, random_shuffle=True)
    for jpegs, labels in reader.next_epoch(batch_size=64):
        images = ndd.decoders.image(jpegs)            # a ragged batch (each image its size)
        images = chain(images, key=key)              # an ndd.Batch of 224 x 224 images
        x = chain(images, key=key, output="jax")     # or a jax.Array

**In.** A batch of one shape goes to JAX as one array through DLPack, without a copy where
DALI's buffer is contiguous and aligned (what DALI's operators allocate); a batch of images
of different sizes goes as a list of per-image arrays, through the same windowed reads as a
list given to an op on arrays (``docs/guide/ragged.md``). Labels, targets and ``seeds`` may be
batches too. Samples of rank 3 are images (``layout`` ``"HWC"``/``"CHW"``); samples of rank 4
are clips when DALI tags the batch ``"FHWC"``/``"FCHW"`` or the call says ``layout="FHWC"``
(one draw per clip; an untagged rank-4 batch is not guessed: :mod:`augjax._core.kinds`). A GPU
batch needs JAX's GPU backend.

**Out.** What came in: an ``ndd.Batch`` (tagged with the output's layout), or jax.Arrays with
``output="jax"``; ``output="dali"`` gives batches for array inputs too.

**Keys.** ``key=`` as on arrays; or ``seeds=``: int32 ``(2,)`` seeds per sample (a batch or an
``(N, 2)`` array), the keys being :func:`augjax.keys_from_seeds` of them, as in a pipeline;
or ``seed=`` an ``ndd.random.RNG``: augjax draws the seeds with DALI's RNG operator, the draw a
pipeline makes (``ndd.random.uniform``, ``[0, 2**30]``, int32 ``(2,)``), from that stream (it
advances per batch, and ``ndd.checkpoint`` restores it). :func:`pipeline_seeds` gives the seeds
a pipeline built with ``seed=`` draws, batch after batch: with them a dynamic-mode call gives
the pipeline's bits (tests/dali/test_dynamic.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import numpy as np

from augjax._core.declaration import CLIP_LAYOUTS, LAYOUTS
from augjax._core.kinds import Clips, Images, Kind, frame_layout
from augjax._runtime.execution.inputs import check_arguments
from augjax._runtime.execution.keys import SEED_HIGH, keys_from_seeds
from augjax.errors import InputError, KeyRequiredError

__all__ = ["OUTPUTS", "Adapted", "adapt", "as_batch", "as_jax", "is_dynamic", "pipeline_seeds"]

#: The values of a call's ``output=``: None (the kind that came in), ``"jax"``, ``"dali"``.
OUTPUTS = (None, "jax", "dali")

_MODULE = "nvidia.dali.experimental.dynamic"
#: The rank of a DALI sample in each layout augjax takes: images, clips.
_RANKS = {**{layout: Images.rank(layout) - 1 for layout in LAYOUTS},
          **{layout: Clips.rank(layout) - 1 for layout in CLIP_LAYOUTS}}


def is_dynamic(x: Any) -> bool:
    """Whether ``x`` is a dynamic-mode ``Batch`` or ``Tensor`` (decided without importing
    DALI)."""
    return any(c.__module__.startswith(_MODULE) and c.__name__ in ("Batch", "Tensor")
               for c in type(x).__mro__)


def _ndd() -> Any:
    from augjax.dali._backend import _dali

    _dali()  # the install hint when DALI is missing
    import nvidia.dali.experimental.dynamic as ndd

    return ndd


def _is_batch(x: Any) -> bool:
    return any(c.__name__ == "Batch" for c in type(x).__mro__)


@functools.lru_cache(maxsize=None)
def _cpu() -> Any:
    return jax.local_devices(backend="cpu")[0]


#: Typed keys from ``(N, 2)`` seeds, one compiled program per N (eager, ``vmap`` traces anew
#: at every call: ~3 ms).
_keys_from_seeds = jax.jit(keys_from_seeds)


def _jax_device(kind: str, index: int | None, name: str, argument: str) -> Any:
    """JAX's device for a DALI device (``"cpu"``, or ``"gpu"`` and its index)."""
    if kind == "cpu":
        return _cpu()
    try:
        devices = jax.local_devices(backend="gpu")
    except RuntimeError:
        devices = []
    if not devices:
        raise InputError(
            f"{name}: argument '{argument}' is a DALI batch on the GPU, but JAX has no GPU "
            f"backend (devices: {', '.join(str(d) for d in jax.devices())}); install JAX for "
            f"CUDA (pip install 'jax[cuda13]') or bring the batch to the CPU (batch.cpu())",
            op=name, argument=argument)
    return devices[index or 0]


def as_jax(x: Any, name: str = "as_jax", argument: str = "images",
           uniform: bool = False) -> Any:
    """A dynamic-mode batch (or tensor) as JAX data: one ``jax.Array`` ``(N, ...)`` for
    samples of one shape (through DLPack: no copy where DALI's buffer is contiguous and
    aligned), or a list of per-sample ``jax.Array`` for samples of different shapes.

    Raises:
        InputError: a GPU batch without JAX's GPU backend; samples of different shapes with
            ``uniform``; an empty batch.
    """
    x = x.evaluate()
    device = x.device
    where = _jax_device(device.device_type, device.device_id, name, argument)
    if not _is_batch(x):  # a Tensor: its first axis is the batch
        return _from_dlpack(x, where)
    storage = getattr(x, "_storage", None)
    if storage is not None and storage.is_dense_tensor():  # one buffer: a view of it
        return _from_dlpack(storage.as_tensor(), where)
    if x.batch_size == 0:
        raise InputError(f"{name}: argument '{argument}' is an empty DALI batch", op=name,
                         argument=argument)
    shapes = [tuple(s) for s in x.shape]
    if all(s == shapes[0] for s in shapes):  # samples apart: DALI packs them once (a copy)
        return _from_dlpack(_ndd().as_tensor(x), where)
    if uniform:
        sizes = ", ".join(str(s) for s in sorted(set(shapes))[:4])
        raise InputError(
            f"{name}: argument '{argument}' expects a DALI batch of one shape, got samples of "
            f"shapes {sizes}{', ...' if len(set(shapes)) > 4 else ''}; resize or crop them to "
            f"one size first (a chain that starts with a crop or resize takes them)",
            op=name, argument=argument)
    return [_from_dlpack(t, where) for t in x.tensors]


def _from_dlpack(t: Any, device: Any) -> jax.Array:
    out = jax.dlpack.from_dlpack(t)
    if next(iter(out.devices())) != device:
        out = jax.device_put(out, device)
    return out


def as_batch(x: Any, layout: str | None = None) -> Any:
    """A ``jax.Array`` ``(N, ...)`` (or NumPy array) as a dynamic-mode ``Batch`` of N samples,
    tagged ``layout`` (through DLPack: DALI reads JAX's buffer, no copy)."""
    # DLPack hands JAX's buffer over once the program that writes it is done: JAX's export
    # waits for it on the host (CPU) or makes DALI's stream wait for it (GPU); DALI holds the
    # buffer (through the capsule) as long as the batch lives.
    return _ndd().as_batch(x, layout=layout or None)


def pipeline_seeds(seed: int, batch_size: int, *, device: str = "cpu") -> Iterator[np.ndarray]:
    """The per-sample seeds augjax draws in a DALI pipeline built with ``seed=seed`` (its
    ``fn.random.uniform`` on ``device``), batch after batch, as int32 ``(N, 2)`` arrays: a
    dynamic-mode call with ``seeds=`` these gives the pipeline's outputs bitwise.

    >>> seeds = pipeline_seeds(7, batch_size=8)  # doctest: +SKIP
    >>> out = augjax.ops.flip(images, seeds=next(seeds))  # as augjax.ops.flip(node, seed=7)
    """
    from augjax.dali._backend import _dali
    from augjax.dali._nodes import sample_seeds

    _dali()  # the install hint first
    from nvidia.dali import pipeline_def

    check_arguments("pipeline_seeds", nodes=True, key=None, seeds=None, seed=None, device=device)

    @pipeline_def(batch_size=batch_size, num_threads=1,
                  device_id=0 if device == "gpu" else None, prefetch_queue_depth=1)
    def seeds():
        return sample_seeds(device=device, seed=int(seed))

    pipe = seeds()
    pipe.build()
    while True:
        (out,) = pipe.run()
        out = out.as_cpu() if device == "gpu" else out
        yield np.asarray(out.as_tensor())


class Adapted(NamedTuple):
    """A call's arguments as the array path takes them, and what turns its result back."""

    inputs: tuple[Any, ...]
    key: Any
    targets: dict[str, Any]
    finish: Callable[[Any], Any]


def adapt(name: str, inputs: tuple[Any, ...], *, key: Any = None, seeds: Any = None,
          seed: Any = None, device: str | None = None, layout: str = "HWC",
          output: str | None = None, targets: dict[str, Any] | None = None,
          random: bool = False, uniform: bool = False,
          out_layout: Callable[[], str] | str | None = None) -> Adapted | None:
    """The hook of augjax's public calls (:mod:`augjax.calls`, views): a call with a
    dynamic-mode batch among ``inputs``, ``targets`` or ``seeds``, or with ``output=``, as the
    array path's arguments (``seeds``, ``seed`` and ``device`` turned into ``key`` and placed
    arrays) and the function that turns the result into what the call returns; None when
    nothing is dynamic and no ``output`` is asked (the call goes on as it is).

    ``random``: the step draws (a key is then required); ``uniform``: samples of different
    shapes are refused (views.apply); ``out_layout``: the layout of the output images, or a function
    that gives it, called only when the result is turned into batches (default ``layout``).

    Raises:
        InputError: see :func:`as_jax`; a bad ``output``, ``device`` or ``seed``, a batch
            tagged with another layout, more than one of ``key``/``seeds``/``seed``.
        KeyRequiredError: a random step without any of them.
    """
    if output not in OUTPUTS:
        raise InputError(f"{name}: argument 'output' expects 'jax' or 'dali' (or None: the kind "
                         f"that came in), got {output!r}", op=name, argument="output")
    targets = dict(targets or {})
    dynamic = any(is_dynamic(x) for x in (*inputs, seeds, *targets.values()))
    if not dynamic and output is None:
        return None
    if output is not None and any(type(x).__name__ == "DataNode" for x in inputs):
        raise InputError(f"{name}: argument 'output' is for arrays and dynamic-mode batches; "
                         f"in a DALI pipeline a call gives DataNodes", op=name,
                         argument="output")
    if not dynamic:
        return Adapted(inputs, key, targets,
                       _finisher(output == "dali", out_layout, layout, plain=False))
    given = [k for k, v in (("key", key), ("seeds", seeds), ("seed", seed)) if v is not None]
    if len(given) > 1:
        raise InputError(f"{name}: arguments {' and '.join(repr(g) for g in given)} both give "
                         f"the draws; pass one", op=name, argument=given[1])
    _check_layout(inputs[0] if inputs else None, layout, name)
    converted = tuple(_convert(x, name, arg, uniform) for x, arg in
                      zip(inputs, ("images", "labels", "input")))
    targets = {k: _convert(v, name, k, False) for k, v in targets.items()}
    place = _placement(converted[0] if converted else None, device, name)
    if place is not None:
        converted = tuple(_put(x, place) for x in converted)
        targets = {k: _put(v, place) for k, v in targets.items()}
    first = converted[0] if converted else None
    n = len(first) if isinstance(first, list) else getattr(first, "shape", (0,))[0]
    if seed is not None:
        seeds = _draw_seeds(seed, n, name)
    if seeds is not None:
        s = seeds
        if is_dynamic(s):
            s = as_jax(s, name, "seeds", uniform=True)
        key = _keys_from_seeds(np.asarray(s).reshape(n, -1) if not isinstance(s, jax.Array)
                               else s.reshape(n, -1))
        where = place or _device_of(first)
        if where is not None and next(iter(key.devices())) != where:
            key = jax.device_put(key, where)
    elif key is None and random:
        raise KeyRequiredError(
            f"{name}: a random op on DALI dynamic-mode batches needs key=jax.random.key(...), "
            f"seeds= (int32 (2,) seeds per sample) or seed= (an ndd.random.RNG); got none")
    # A batch DALI tags as sequences is clips: said by the tag, not guessed from the rank.
    tagged = inputs[0].layout if inputs and is_dynamic(inputs[0]) and _is_batch(inputs[0]) \
        else None
    if tagged in CLIP_LAYOUTS and isinstance(first, jax.Array):
        converted = (Clips.of(first, tagged), *converted[1:])
    return Adapted(converted, key, targets,
                   _finisher(output != "jax", out_layout, layout, plain=True))


def _check_layout(images: Any, layout: str, name: str) -> None:
    """A batch tagged by DALI with a layout must be called with it (or, for a sequence, with
    its frames' layout); samples must be images (rank 3) or clips (rank 4)."""
    if not (images is not None and is_dynamic(images) and _is_batch(images)):
        return
    tagged = images.layout
    frames = frame_layout(layout)
    if tagged in _RANKS:
        if tagged not in (layout, frames, "F" + frames):
            raise InputError(
                f"{name}: argument 'images' is tagged layout {tagged!r} by DALI, but the call "
                f"has layout={layout!r}; pass layout={tagged!r}", op=name, argument="layout")
    elif tagged:
        raise InputError(
            f"{name}: argument 'images' is a DALI batch of layout {tagged!r}; augjax takes "
            f"images 'HWC' / 'CHW' and clips 'FHWC' / 'FCHW'", op=name, argument="images")
    if images.ndim not in set(_RANKS.values()):
        raise InputError(
            f"{name}: argument 'images' expects DALI samples of rank 3 (images) or 4 (clips), "
            f"got rank {images.ndim}", op=name, argument="images")


def _convert(x: Any, name: str, argument: str, uniform: bool) -> Any:
    if is_dynamic(x):
        return as_jax(x, name, argument, uniform=uniform or argument != "images")
    return x


def _device_of(x: Any) -> Any:
    x = x[0] if isinstance(x, list) and x else x
    if isinstance(x, jax.Array):
        return next(iter(x.devices()))
    return None


def _placement(first: Any, device: str | None, name: str) -> Any:
    """The JAX device ``device=`` asks for (None: where the data is)."""
    if device is None:
        return None
    # (a dynamic-mode batch may go from the GPU to the CPU: no source to hold it to)
    device = check_arguments(name, nodes=True, key=None, seeds=None, seed=None, device=device)
    return _jax_device(device, None, name, "device")


def _put(x: Any, device: Any) -> Any:
    if isinstance(x, list):
        return [jax.device_put(a, device) for a in x]
    return jax.device_put(x, device) if isinstance(x, (jax.Array, np.ndarray)) else x


def _draw_seeds(rng: Any, n: int, name: str) -> Any:
    """Per-sample seeds from an ``ndd.random.RNG`` with the draw a pipeline makes."""
    ndd = _ndd()
    if not isinstance(rng, ndd.random.RNG):
        raise InputError(
            f"{name}: argument 'seed' on DALI dynamic-mode batches expects an "
            f"ndd.random.RNG (a stream that advances per batch), got {type(rng).__name__}; an "
            f"int would draw the same seeds every batch: pass ndd.random.RNG(seed=...), "
            f"key=, or seeds=pipeline_seeds(...) for a pipeline's draws",
            op=name, argument="seed")
    return ndd.random.uniform(batch_size=n, range=[0, SEED_HIGH], shape=[2], dtype=ndd.int32,
                              device="cpu", rng=rng)


def _plain(result: Any) -> Any:
    """A call's result with its images as arrays (an input kind unwrapped)."""
    if isinstance(result, tuple):
        return tuple(_plain(x) for x in result)
    if isinstance(result, dict):
        return {k: _plain(v) for k, v in result.items()}
    return result.array if isinstance(result, Kind) else result


def _finisher(back: bool, out_layout: Any, layout: str, plain: bool) -> Callable[[Any], Any]:
    """What turns a call's result (images, ``(images, labels)``, a dict of images and targets,
    or views' dict of groups) into batches (``back``), or leaves it as it is (``plain``: the
    images as arrays, when the kind came from DALI's layout tag, not from the caller)."""
    if not back:
        return _plain if plain else (lambda result: result)

    def finish(result: Any) -> Any:
        final = (out_layout() if callable(out_layout) else out_layout) or layout
        frames = frame_layout(final)

        def image_layout(x: Any) -> str | None:
            if isinstance(x, Kind):
                return x.layout
            return {4: frames, 5: "F" + frames}.get(getattr(x, "ndim", 0))

        def batch(x: Any, layout: str | None) -> Any:
            return as_batch(x.array if isinstance(x, Kind) else x, layout)

        if isinstance(result, tuple):
            return tuple(batch(x, image_layout(x) if i == 0 else None)
                         for i, x in enumerate(result))
        if isinstance(result, dict):
            views = "images" not in result
            return {k: batch(v, image_layout(v) if views or k == "images" else None)
                    for k, v in result.items()}
        return batch(result, image_layout(result))

    return finish
