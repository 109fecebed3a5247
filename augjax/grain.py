"""grain transforms: an augjax chain per record in grain's worker processes, or per batch on device.

``pip install ".[grain]"`` in a checkout of augjax (``pip install "augjax[grain]"`` once augjax is
on PyPI). Two transforms, for the two places a grain pipeline augments:

- :class:`RandomMap` (``ds.random_map(...)``, or ``grain.DataLoader(operations=[...])``) runs a
  chain on ONE record's image (and its targets) on the CPU, inside grain's worker processes. A
  worker that unpickles it is pinned to JAX's CPU platform before JAX opens a backend, so no
  worker takes memory on an accelerator (grain #820, #1199). The sample key comes from grain's
  per-record generator (grain derives it from the seed and the record's index), so the records do
  not depend on the worker count, and grain's iterator state restores them.
- :class:`BatchAugment` (after ``mp_prefetch``, or on the DataLoader's batches) runs a chain on a
  whole batch on the default device (the accelerator). Each sample's key comes from its index
  (:class:`WithIndex` puts it in the record) and the epoch (:func:`augjax.index_seeds`), so the
  result does not depend on the worker count, the batch boundaries or the process count.

Records are dicts (``{"image": (H, W, C) uint8, "label": ..., "masks": ...}``) or bare images.
A volume chain (``augjax.volume_ops``, ``augjax.recipes.nnunet``) takes records of one volume
``(D, H, W, C)`` float with ``masks`` ``(D, H, W)`` and ``keypoints`` ``(K, 3)``, and batches
``(B, D, H, W, C)``, through the same two transforms and with the same keys.
Outputs are NumPy arrays for :class:`RandomMap` (grain batches them) and ``jax.Array`` for
:class:`BatchAugment`. Details and a whole pipeline: docs/GRAIN.md.
"""

from __future__ import annotations

import numbers
import threading
import warnings
from typing import Any

import numpy as np

from augjax.grain_records import (TARGETS, checked_chain, checked_image, clip_record, is_views,
                                  kind_of_layout, merge, merge_views, mixer, not_a_record,
                                  record_note, split, takes_any_size, unwrapped, views_record,
                                  volume_chain, volume_record, volume_targets)
from augjax.grain_workers import in_worker as _in_worker
from augjax.grain_workers import pin_cpu, warm_workers, worker_init
from augjax.errors import AugjaxError, AugjaxWarning, BackendUnavailableError, InputError

try:
    import grain
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise BackendUnavailableError(
        "augjax.grain needs grain: pip install 'grain>=0.2.12' (or augjax's extra: "
        "pip install '.[grain]' in a checkout of augjax)") from err


def _require_transforms(module: Any) -> None:
    """grain's transform classes (``grain.transforms``, grain 0.2.12 and later) or a typed
    error naming the installed grain: an older grain, or another package named ``grain``,
    once failed here with a bare AttributeError while Python built the classes below."""
    missing = [name for name in ("RandomMap", "MapWithIndex", "Map")
               if not hasattr(getattr(module, "transforms", None), name)]
    if missing:
        from importlib.metadata import PackageNotFoundError, version

        try:
            have = f"grain {version('grain')}"
        except PackageNotFoundError:  # a module named grain that no distribution installed
            have = "a module named grain"
        have += f" at {getattr(module, '__file__', None) or '?'}"
        raise BackendUnavailableError(
            f"augjax.grain needs grain>=0.2.12 (grain.transforms.{', '.join(missing)}); found "
            f"{have}: pip install -U 'grain>=0.2.12'")


_require_transforms(grain)

__all__ = ["RandomMap", "BatchAugment", "WithIndex", "pin_cpu", "warm_workers", "worker_init"]

#: After records of this many sizes, a chain that compiles per size says so (once).
SIZES_WARNED = 16
#: Sample seeds are drawn in [0, 2**30), as augjax's DALI seeds
#(augjax._runtime.execution.keys.SEED_HIGH).
_SEED_HIGH = 2**30


class RandomMap(grain.transforms.RandomMap):
    """Runs ``chain`` on one record on the CPU, with a key from grain's per-record generator.

    ``ds.random_map(augjax.grain.RandomMap(chain))`` or ``grain.DataLoader(operations=[
    augjax.grain.RandomMap(chain), grain.transforms.Batch(256)], ...)``. The record's image
    (field ``image``, or the record itself when it is an array) is ``(H, W, C)``; the targets
    present in the record (``masks``, ``boxes``, ``boxes_valid``, ``keypoints``,
    ``keypoints_valid``, one sample's worth each) follow it. With ``layout="FHWC"`` (or
    ``"FCHW"``) a record is one clip, ``(T, H, W, C)``, run as ``augjax.Clips`` (one draw per
    clip, targets per frame). The sample key is
    ``keys_from_seeds(rng.integers(0, 2**30, (1, 2)))``: the first two draws of the generator
    grain hands over, so the same seed and index give the same record in any worker.

    A chain that starts with a crop (an op that takes images of different sizes and returns
    one size: ``random_resized_crop``, ``resize`` + ``center_crop``, ...) runs a record as a
    list of one image, ``chain([image], key=keys_from_seeds(seeds))``, and equals that call
    bitwise: its programs are keyed by the canvas bucket of the region the crop reads, not by
    the record's size, so records of new sizes compile nothing once their buckets were seen
    (bilinear pixels within a level of the batch-of-one call, as lists of images are).
    Any other chain runs through augjax's own programs for arrays, the ones
    ``chain(image[None], key=keys_from_seeds(seeds))`` runs on the CPU (a sampler, then the
    apply program with a fusion boundary after each op), so a record equals that call bitwise,
    with a program pair per record shape. The first record of each shape goes through that
    call itself (which checks the input and raises augjax's typed errors); later ones call
    its compiled programs directly, without the checks. Views (``augjax.views``, the
    DINO/SimCLR/BYOL recipes) replace the record's image by one field per group.
    Everything runs under ``jax.default_device(cpu)``; in a worker process JAX is first pinned
    to the CPU platform (:func:`pin_cpu`), and a worker whose JAX had already opened an
    accelerator gets an :class:`augjax.AugjaxWarning`.
    """

    def __init__(self, chain: Any, *, image: str = "image", layout: str | None = None) -> None:
        self.chain = checked_chain(chain, "augjax.grain.RandomMap")
        if "labels" in getattr(self.chain, "inputs", ()):
            raise InputError(
                f"augjax.grain.RandomMap: {getattr(self.chain, 'name', 'the chain')} mixes the "
                "samples of a batch (mixup, cutmix: it takes labels), which one record does "
                "not have; put it in augjax.grain.BatchAugment, after batching",
                argument="chain")
        self.image = image
        self.layout = layout
        self._kind = kind_of_layout(layout, "augjax.grain.RandomMap")
        self._state()

    def _state(self) -> None:
        self._lock = threading.Lock()
        self._run = None
        self._ragged = False  # the chain starts with ops that take images of any size
        self._values: Any = ()
        self._cpu = None
        self._checked: set = set()  # record (shape, dtype) that went through the checked call

    def __getstate__(self) -> dict:
        return {"chain": self.chain, "image": self.image, "layout": self.layout}

    def __setstate__(self, state: dict) -> None:
        if _in_worker():  # unpickled in a grain worker: before anything opens a backend
            pin_cpu()
        self.chain = state["chain"]
        self.image = state["image"]
        self.layout = state.get("layout")
        self._kind = kind_of_layout(self.layout, "augjax.grain.RandomMap")
        self._state()

    def _program(self):
        """(augjax's seeded program for arrays of the chain, JAX's CPU device)."""
        with self._lock:
            if self._run is None:
                import jax

                from augjax._runtime.execution.program import array_program
                from augjax._runtime.execution.values import as_arguments, lift

                if _in_worker() and any(d.platform != "cpu" for d in jax.devices()):
                    warnings.warn(AugjaxWarning(
                        "augjax.grain.RandomMap: JAX in this worker process had already opened "
                        f"{jax.devices()[0].platform} before the transform was unpickled; start "
                        "the workers with worker_init_fn=augjax.grain.worker_init or "
                        "JAX_PLATFORMS=cpu"))
                from augjax.calls import Op

                chain = self.chain  # a bare op runs as the op with its defaults
                steps, start = (chain.bind() if isinstance(chain, Op) else chain).program()
                self._cpu = jax.devices("cpu")[0]
                # f(images, labels, seeds) -> (images, labels): keys_from_seeds, the sampler
                # and the apply program, compiled as a call on arrays compiles them (on the
                # CPU the apply program keeps a boundary after each op: a single jit of the
                # chain let XLA fuse the crop's resample into flip's select, 5.2 CPU ms a 224^2
                # record instead of 1.3, and compiled the sampler otherwise, 7 of 300 records
                # then differed from the call by a level).
                # The skeleton and values the checked call runs (dispatch's lift): the records
                # after a shape's first run its programs, not a second set of their own.
                skeletons, values = lift(tuple(steps))
                self._values = as_arguments(values)
                self._run = array_program(skeletons, "HWC", start, False, None, seeded=True)
                self._ragged = takes_any_size(steps)
            return self._run, self._cpu

    def apply(self, element: Any, seeds: np.ndarray) -> Any:
        """The record ``element`` through the chain, with sample seeds ``seeds`` (int32 (1, 2))."""
        import jax

        from augjax._runtime.execution.program import _keys_from_seeds as keys_from_seeds

        record, image, targets = split(element, self.image, "augjax.grain.RandomMap",
                                       self._record_shape())
        image = np.asarray(image)
        if is_views(self.chain):
            return views_record(self.chain, self.image, record, image, targets,
                                np.asarray(seeds, np.int32))
        if volume_chain(self.chain):
            return volume_record(self.chain, self.image, record, image, targets,
                                 np.asarray(seeds, np.int32))
        if self._kind is not None:
            return clip_record(self.chain, self.layout, self.image, record, image, targets,
                               np.asarray(seeds, np.int32))
        checked_image(image, self.image, "augjax.grain.RandomMap")
        seeds = np.asarray(seeds, np.int32)
        run, cpu = self._program()
        if self._ragged:  # a chain that starts with a crop: records of any size, bucketed
            with jax.default_device(cpu):
                listed = {k: [np.asarray(v)] if k == "masks" else np.asarray(v)[None]
                          for k, v in targets.items()}
                out = self.chain([image], key=keys_from_seeds(seeds), **listed)
            return merge(record, self.image, out, lambda a: np.asarray(a)[0])
        signature = (image.shape, image.dtype)
        with jax.default_device(cpu):
            if targets or signature not in self._checked:
                # the call on arrays: its checks and typed errors (and the targets' path)
                batched = {k: np.asarray(v)[None] for k, v in targets.items()}
                # (the jitted keys_from_seeds of the later records' programs: one compile)
                out = self.chain(image[None], key=keys_from_seeds(seeds), **batched)
                self._checked.add(signature)
                if len(self._checked) == SIZES_WARNED:
                    warnings.warn(AugjaxWarning(
                        f"augjax.grain.RandomMap: records of {SIZES_WARNED} sizes so far, each "
                        "compiling its own programs in each worker (the chain does not start "
                        "with a crop); start it with random_resized_crop, random_crop or "
                        "center_crop (records of any size then share programs per size "
                        "bucket), or resize the records to a few sizes in the data source"),
                        stacklevel=2)
            else:
                from augjax._runtime.execution.values import giving

                with giving(self._values):
                    out = run(image[None], None, seeds)[0]
        return merge(record, self.image, out, lambda a: np.asarray(a)[0])

    def _record_shape(self) -> str:
        """The array a record of this transform holds, as messages write it."""
        if volume_chain(self.chain):
            return "(D, H, W, C)"
        if self.layout is not None:
            return "(" + ", ".join("T" if axis == "F" else axis for axis in self.layout) + ")"
        return "(H, W, C)"

    def random_map(self, element: Any, rng: np.random.Generator) -> Any:
        """The record through the chain, its key drawn from ``rng`` (grain's per-record
        generator). InputError when ``rng`` is not a ``numpy.random.Generator``."""
        if not isinstance(rng, np.random.Generator):
            raise InputError(f"augjax.grain.RandomMap.random_map: argument 'rng' expects a "
                             f"numpy.random.Generator (grain hands one over per record; call "
                             f"apply(element, seeds) to give seeds yourself), got "
                             f"{type(rng).__name__}", argument="rng")
        seeds = rng.integers(0, _SEED_HIGH, size=(1, 2), dtype=np.int32)
        try:
            return self.apply(element, seeds)
        except AugjaxError as err:  # which record: its index (WithIndex) and keys, to find it
            err.add_note(record_note(err, element, self.image, seeds))
            raise


class WithIndex(grain.transforms.MapWithIndex):
    """Puts the record's index (grain's, global across epochs) in the record as ``index``.

    A bare image becomes ``{"image": image, "index": index}``; a tuple or list record (such as
    ``(image, label)``) is an InputError: make it a dict first. Use it before batching when a
    :class:`BatchAugment` follows.
    """

    def __init__(self, *, image: str = "image", index: str = "index") -> None:
        self.image = image
        self.index = index

    def map_with_index(self, index: int, element: Any) -> dict:
        if isinstance(element, (tuple, list)):  # it was wrapped as the image
            err = not_a_record(element, "augjax.grain.WithIndex", self.image)
            err.add_note(f"augjax.grain.WithIndex: the record of index {index}")
            raise err
        record = dict(element) if isinstance(element, dict) else {self.image: element}
        record[self.index] = _indices(index, "index")[0]
        return record


def _indices(indices: Any, field: str) -> np.ndarray:
    """Records' indices as int64 ``(B,)``, or InputError: integers in ``[0, 2**63)``."""
    from augjax._runtime.execution.keys import indices_below

    return indices_below(indices, 63, f"augjax.grain: field {field!r} expects record indices, "
                         f"integers", field)


class BatchAugment(grain.transforms.Map):
    """Runs ``chain`` on a batch on the default device, with keys from the samples' indices.

    Place it after ``mp_prefetch`` (``it_ds.mp_prefetch(...).map(augjax.grain.BatchAugment(c))``)
    or call it on a DataLoader's batches (``aug(batch)``): it must run in the main process, where
    the accelerator is. The batch is a dict with the images (``(B, H, W, C)``, field ``image``;
    ``(B, C, H, W)`` with ``layout="CHW"``; with ``layout="FHWC"`` / ``"FCHW"`` clips
    ``(B, T, H, W, C)``, run as ``augjax.Clips``),
    the indices (``(B,)``, field ``index``, from :class:`WithIndex`), and optionally the targets
    and, for a chain that mixes labels (mixup, cutmix), the labels (field ``label``).

    Sample ``i``'s key is ``keys_from_seeds(index_seeds([position], epoch, seed))``: with
    ``epoch_size`` given, ``epoch = index // epoch_size`` and ``position = index % epoch_size``
    (grain's indices run on across epochs with ``repeat()`` or ``num_epochs``); without it, the
    index itself and epoch 0, or the ``epoch=`` passed to the call. ``seed`` is an int in
    ``[0, 2**64)`` (a uint64, as grain's seeds); the indices are integers in ``[0, 2**63)``, and
    each position below ``2**31``. The output is the batch with the images (and targets, labels)
    replaced by ``jax.Array``s; the fields it passes through (``index``, the labels of a chain
    that does not mix them, the others) are returned as they came, except grain's
    ``SharedMemoryArray``s (the batches of ``mp_prefetch``), which become NumPy copies: a batch
    kept after the iterator is closed then holds no shared memory.
    """

    def __init__(self, chain: Any, *, seed: int = 0, epoch_size: int | None = None,
                 image: str = "image", index: str = "index", label: str = "label",
                 device: Any = None, layout: str | None = None) -> None:
        if epoch_size is not None and (isinstance(epoch_size, bool)
                                       or not isinstance(epoch_size, numbers.Integral)
                                       or epoch_size < 1):
            raise InputError(f"augjax.grain.BatchAugment: argument 'epoch_size' expects an int "
                             f">= 1 or None, got {epoch_size!r}", argument="epoch_size")
        epoch_size = None if epoch_size is None else int(epoch_size)  # (a NumPy integer too)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) \
                or not 0 <= seed < 2**64:
            raise InputError(f"augjax.grain.BatchAugment: argument 'seed' expects an int in "
                             f"[0, 2**64), got {seed!r}", argument="seed")
        self.chain = checked_chain(chain, "augjax.grain.BatchAugment")
        self.seed = seed
        self.epoch_size = epoch_size
        self.image, self.index, self.label = image, index, label
        self.device = device
        self.layout = layout
        self._kind = kind_of_layout(layout, "augjax.grain.BatchAugment", images=True)
        self._key_fn = None
        self._lock = threading.Lock()

    def __reduce__(self):
        raise InputError(
            "augjax.grain.BatchAugment runs on the device in the main process and is not sent to "
            "grain's workers: apply it after mp_prefetch (iter_ds.mp_prefetch(...).map(aug)) or "
            "call it on the DataLoader's batches", argument="BatchAugment")

    def seeds(self, indices: Any, *, epoch: int | None = None) -> np.ndarray:
        """The int32 ``(B, 2)`` sample seeds for records with these indices."""
        from augjax._runtime.execution.keys import index_seeds

        idx = _indices(indices, self.index)
        if epoch is not None or self.epoch_size is None:
            if idx.size and int(idx.max()) >= 2**31:  # index_seeds' positions are 31-bit
                raise InputError(
                    f"augjax.grain.BatchAugment: field {self.index!r} holds index "
                    f"{int(idx.max())}, but without epoch_size an index is a position in "
                    f"epoch {epoch or 0} and must be below 2**31; pass epoch_size=len(source) "
                    f"(indices then count on across epochs: epoch = index // epoch_size)",
                    argument="epoch_size")
            return index_seeds(idx, epoch or 0, self.seed)
        epochs, positions = np.divmod(idx, self.epoch_size)
        if epochs.size and int(epochs.max()) >= 2**32:  # index_seeds' epochs are 32-bit
            big = int(idx[int(np.argmax(epochs))])
            raise InputError(f"augjax.grain.BatchAugment: field {self.index!r} expects record "
                             f"indices whose epoch (index // epoch_size = "
                             f"index // {self.epoch_size}) is below 2**32, got index {big} "
                             f"(epoch {big // self.epoch_size})", argument=self.index)
        out = np.empty((idx.size, 2), np.int32)
        for e in np.unique(epochs):  # a batch can straddle an epoch boundary
            rows = epochs == e
            out[rows] = index_seeds(positions[rows], int(e), self.seed)
        return out

    def _keys(self):
        """``keys_from_seeds``, compiled once: the chain then runs as augjax's own program for
        arrays (on a GPU its fused one; inside a user's ``jax.jit`` a chain is traced into that
        jit's program and loses augjax's compiled forms, which cost 0.65x of grain's loading
        alone on the H200)."""
        with self._lock:
            if self._key_fn is None:
                import jax

                from augjax._runtime.execution.keys import keys_from_seeds

                self._key_fn = jax.jit(keys_from_seeds)
            return self._key_fn

    def __call__(self, batch: dict, *, epoch: int | None = None) -> dict:
        """The batch through the chain (``epoch`` overrides the one derived from the indices)."""
        import jax

        if not isinstance(batch, dict) or self.image not in batch or self.index not in batch:
            got = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
            raise InputError(
                f"augjax.grain.BatchAugment: expects a dict batch with fields {self.image!r} and "
                f"{self.index!r} (add augjax.grain.WithIndex() before batching), got {got}",
                argument="batch")
        seeds = self.seeds(batch[self.index], epoch=epoch)
        images = self._check_images(batch)
        count = np.shape(images)[0] if np.ndim(images) else None
        if count is not None and len(seeds) != count:
            raise InputError(
                f"augjax.grain.BatchAugment: field {self.index!r} expects one index per sample, "
                f"{count} for the {count} samples of field {self.image!r}, got {len(seeds)}",
                argument=self.index)
        extra = {k: batch[k] for k in TARGETS if k in batch}
        if volume_chain(self.chain):
            extra = volume_targets(extra, "augjax.grain.BatchAugment")
        mixes = "labels" in getattr(self.chain, "inputs", ())
        if mixes and self.label not in batch:
            raise InputError(
                f"augjax.grain.BatchAugment: the chain mixes labels ({mixer(self.chain)}) and "
                f"expects a field {self.label!r} in the batch (name it with label=...), got "
                f"fields {sorted(batch)}", argument="label")
        args = (images, batch[self.label]) if mixes else (images,)
        if self.device is not None:
            args = jax.device_put(args, self.device)
            extra = jax.device_put(extra, self.device)
            seeds = jax.device_put(seeds, self.device)
        if self._kind is not None:  # a batch of clips, or of channels-first images
            args = (self._kind(args[0], self.layout), *args[1:])
        try:
            if is_views(self.chain):
                if extra:
                    raise InputError(f"augjax.grain.BatchAugment: views take images only; the "
                                     f"batch has {sorted(extra)}", argument=sorted(extra)[0])
                out = self.chain(args[0], key=self._keys()(seeds))
                return _owned(merge_views(batch, self.image, out, lambda a: a))
            out = unwrapped(self.chain(*args, key=self._keys()(seeds), **extra))
        except AugjaxError as err:  # which batch: its records' indices, to find them
            self._note(err, batch)
            raise
        merged = _owned(dict(batch))
        if isinstance(out, tuple):  # (images, labels) from a mixing chain
            merged[self.image], merged[self.label] = out
        elif isinstance(out, dict):
            fields = {"images": self.image, "labels": self.label}
            for name, value in out.items():
                merged[fields.get(name, name)] = value
        else:
            merged[self.image] = out
        return merged

    def _note(self, err: AugjaxError, batch: dict) -> None:
        indices = np.asarray(batch[self.index]).reshape(-1)
        err.add_note(f"augjax.grain.BatchAugment: the batch of records {indices[:8].tolist()}"
                     f"{' ...' if indices.size > 8 else ''} ({indices.size} records)")

    def _check_images(self, batch: dict) -> Any:
        """The batch's images as one array (a list of one shape stacked); InputError for
        records of several sizes in a list or an object array (NumPy's or JAX's raw error)."""
        images = batch[self.image]
        if isinstance(images, (list, tuple)):
            try:
                np.shape(images)
                return np.stack(images)
            except ValueError:  # records of several shapes
                shapes = list(dict.fromkeys(tuple(np.shape(x)) for x in images))
                got = (f"a {type(images).__name__} of {len(images)} images of "
                       f"{len(shapes)} shapes ({', '.join(map(str, shapes[:3]))}"
                       f"{', ...' if len(shapes) > 3 else ''})")
        elif isinstance(images, np.ndarray) and images.dtype == object:
            got = f"an object array of shape {images.shape}"
        else:
            return images
        if volume_chain(self.chain):
            want = "(N, D, H, W, C)"
        elif self.layout is not None:
            want = "(N, " + ", ".join("T" if a == "F" else a for a in self.layout) + ")"
        else:
            want = "(N, H, W, C)"
        err = InputError(f"augjax.grain.BatchAugment: field {self.image!r} expects one {want} "
                         f"array (records of one size), got {got}; crop the records to one size "
                         f"in augjax.grain.RandomMap first (e.g. random_resized_crop), before "
                         f"batching", argument=self.image)
        self._note(err, batch)
        raise err

    def map(self, element: dict) -> dict:
        return self(element)


def _shared_memory(value: Any) -> bool:
    """Whether ``value`` is a grain ``SharedMemoryArray`` (said by its type's name and module,
    so that grain stays an optional import of the checks)."""
    return isinstance(value, np.ndarray) and any(
        t.__name__ == "SharedMemoryArray" and t.__module__.split(".")[0] == "grain"
        for t in type(value).__mro__)


def _owned(value: Any) -> Any:
    """``value`` with grain's ``SharedMemoryArray``s (in dicts, lists, tuples) as NumPy copies:
    one kept after grain's iterator is closed leaked its shared memory (the resource tracker's
    warning, and ``SharedMemoryArray.__del__`` errors at exit)."""
    if _shared_memory(value):
        return np.array(value, copy=True)
    if isinstance(value, dict):
        owned = {k: _owned(v) for k, v in value.items()}
    elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        owned = type(value)(_owned(v) for v in value)
    else:
        return value
    items = owned.values() if isinstance(owned, dict) else owned
    olds = value.values() if isinstance(value, dict) else value
    return value if all(new is old for new, old in zip(items, olds)) else owned
