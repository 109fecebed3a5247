"""A list of images of different sizes on arrays, with their targets, through a chain's ragged
prefix (crops, resize: :mod:`augjax._runtime.ragged.prefix`) to one batch.

1. The windows are drawn from each image's true size with the per-sample keys
   (:func:`augjax._runtime.ragged.prefix.plan_program`, the DALI pipeline's plan) and read back.
2. The host cuts from each image the region its window reads (NumPy slicing: the resampled box,
   or for a copy the part of the image inside the output window) into one square canvas whose
   side is the largest region's side rounded up to a bucket (:func:`bucket`: 64, 96, 128, 192,
   256, 384, ...).
3. One jitted program reads every window from the canvas
   (:func:`augjax.kernels.window.read_window_taps`; masks with nearest sampling and
   ``mask_fill``), and boxes and keypoints move by the windows' matrices
   (:func:`augjax._runtime.ragged.prefix.move_window_points`, as in DALI). On the CPU a bilinear
   or bicubic read runs image by image (:func:`_read_by_image`): each sample reads only its
   taps that weigh something (one branch a tap count, :func:`augjax.kernels.window.tap_sizes`),
   the values of every tap of every sample. Bicubic reads the taps and weights of the batch
   path (:func:`augjax.kernels.resize.resize_taps`; its regions reach twice as far), its uint8
   width pass clamped to 0..255 as there.

The programs are keyed by the output size, the chain, the batch size and the canvas bucket,
never by the images' sizes: a new list whose regions fall in buckets seen before compiles
nothing. Pixels against the padded batch read with dense weights
(:func:`augjax._runtime.ragged.prefix.ragged_apply`, the arrays path before): copies and nearest
sampling equal; bilinear uses the same weights (the taps are the dense rows' nonzero entries),
but a row's normaliser is summed over its taps here and over the padded row there, so a uint8
value may round to the neighbouring level (0.2% of them in the tests).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax._runtime.execution.lowering import counted
from augjax._runtime.execution.program import build_program, once_cache
from augjax._runtime.ragged.flip import draw_flips, flip_after, flip_targets
from augjax._runtime.ragged.prefix import (
    as_arrays,
    check_list,
    move_window_points,
    plan_program,
    ragged_count,
    window_structure,
)
from augjax._runtime.targets.inputs import ORDER, TargetSpec, prepare_targets
from augjax.errors import InputError
from augjax.kernels.portable import portable_jit
from augjax.kernels.resize import FILTER_SUPPORT
from augjax.kernels.warp import check_fill
from augjax.kernels.window import (
    flip_taps,
    read_by_taps,
    read_taps,
    read_window_taps,
    tap_sizes,
    taps_from_first,
    taps_needed,
)

__all__ = ["bucket", "read_list"]

#: The smallest canvas side.
SMALLEST = 64


def bucket(n: int, smallest: int = SMALLEST) -> int:
    """The canvas length for ``n`` pixels: the smallest of ``smallest * 2^k`` and ``smallest *
    1.5 * 2^k`` that holds ``n`` (64, 96, 128, 192, 256, 384, 512, 768, ...): at most 1.5x the
    region, two programs per octave of image sizes."""
    size = smallest
    while size < n:
        size = size * 3 // 2 if size & (size - 1) == 0 else size // 3 * 4
    return size


def _span(anchor: int, out: int, size: int | None, length: int,
          half: int = 1) -> tuple[int, int]:
    """``[lo, hi)``: the rows of a box of ``length`` rows that the ``out`` output rows from
    ``anchor`` read after it is resampled to ``size`` (None: copied), with the filter's reach
    (``half``: its half-width before the shrink widens it, 2 for bicubic,
    :data:`augjax.kernels.resize.FILTER_SUPPORT`) and a margin."""
    if size is None:
        lo, hi = max(anchor, 0), min(anchor + out, length)
        return (lo, hi) if hi > lo else (0, 0)
    lo, hi = max(anchor, 0), min(anchor + out, size)
    if hi <= lo:
        return 0, 0
    scale = length / size
    reach = half * max(scale, 1.0) + 2.0
    return max(math.floor(lo * scale - reach), 0), min(math.ceil(hi * scale + reach), length)


def _regions(sizes: np.ndarray, box: Any, size: Any, anchor: Any, out: tuple[int, int],
             half: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, the region of the image to cut (int ``(N, 4)``: top, left, height, width)
    and the window's box relative to it (int32 ``(N, 4)``); ``half``: as :func:`_span`'s."""
    n = len(sizes)
    regions = np.zeros((n, 4), np.int64)
    rel = np.zeros((n, 4), np.int32)
    for i, (h, w) in enumerate(sizes):
        t, l, bh, bw = (int(v) for v in box[i]) if box is not None else (0, 0, int(h), int(w))
        s = (None, None) if size is None else (int(size[i][0]), int(size[i][1]))
        a = (0, 0) if anchor is None else (int(anchor[i][0]), int(anchor[i][1]))
        y0, y1 = _span(a[0], out[0], s[0], bh, half)
        x0, x1 = _span(a[1], out[1], s[1], bw, half)
        regions[i] = (t + y0, l + x0, y1 - y0, x1 - x0)
        rel[i] = (-y0, -x0, bh, bw)
    return regions, rel


#: The alignment (bytes) at which JAX's CPU client reads a NumPy array in place: a canvas
#: so aligned is not copied again on its way into the program (jaxlib 0.10.2: 16 MB per
#: batch of 16 512^2 canvases, ~0.17 CPU-ms per image).
ALIGN = 64


def _canvas(arrays: Sequence[np.ndarray], regions: np.ndarray, hc: int, wc: int,
            zero: bool = True) -> np.ndarray:
    """The regions at the top left of one canvas per image, 64-byte aligned. ``zero=False``:
    the rest is left as it was allocated (for a bilinear read of integer images, whose taps
    beyond a region weigh 0: a finite value times 0 adds nothing)."""
    first = arrays[0]
    shape = (len(arrays), hc, wc, *first.shape[2:])
    nbytes = int(np.prod(shape)) * first.dtype.itemsize
    raw = (np.zeros if zero else np.empty)(nbytes + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    canvas = raw[start:start + nbytes].view(first.dtype).reshape(shape)
    for i, (a, (t, l, h, w)) in enumerate(zip(arrays, regions)):
        canvas[i, :h, :w] = a[t:t + h, l:l + w]
    return canvas


def _taps(rel: np.ndarray, size: Any, canvas: tuple[int, int], out: tuple[int, int],
          config: dict[str, Any]) -> tuple[int, int]:
    """The taps per axis: enough for the canvas's side over the output's (so a program serves
    every batch of its bucket), more only where a box shrinks further (a resize smaller than
    the crop after it), rounded up to a power of two."""
    interpolation = config.get("interpolation", "bilinear")
    antialias = bool(config.get("antialias", True))
    if size is None:
        return 1, 1
    taps = []
    for axis in (0, 1):
        widest = canvas[axis] / out[axis]
        data = float(np.max(rel[:, 2 + axis] / np.maximum(np.asarray(size)[:, axis], 1)))
        if data > widest:
            widest = 2.0 ** math.ceil(math.log2(data))
        taps.append(taps_needed(widest, interpolation, antialias))
    return taps[0], taps[1]


#: XLA's options for the CPU's image-by-image bilinear read of integer images
#: (:func:`_read_by_image`): loops vectorised 128 bits wide (``xla_cpu_prefer_vector_width``,
#: XLA's default 256). Each branch is one loop of scalar byte gathers and multiply-adds; at 256
#: bits LLVM vectorises its edges into code that costs more than it saves. The arithmetic is
#: the same (the same multiply-adds in the same order: the same bits, tested); the read takes
#: 8-12% less CPU for 320^2 outputs, ~5% less for 224^2, the same for 200^2 and 96^2 (2-core
#: VM, uint8, B=16, 2026-12-05). Float32 images read ~5% slower so, and keep XLA's default.
BY_IMAGE_OPTIONS = {"xla_cpu_prefer_vector_width": 128}


def _by_image(copy: bool, interpolation: str) -> bool:
    """Whether the read runs image by image (:func:`_read_by_image`): a bilinear or bicubic
    resample on the CPU."""
    return not copy and interpolation != "nearest" and jax.default_backend() == "cpu"


@once_cache(maxsize=256)
def _read_program(out: tuple[int, int], copy: bool, interpolation: str, antialias: bool,
                  taps: tuple[int, int], integer: bool = False, flipped: bool = False):
    """``f(canvas, box, size, anchor, fill[, flip]) -> batch`` for one output size and sampling
    (``integer``: for integer images, compiled with :data:`BY_IMAGE_OPTIONS` where the read
    runs image by image; ``flipped``: ``flip``, bools ``(N, 2)``, mirrors each output
    top-bottom / left-right as it is read, :func:`augjax.kernels.window.flip_taps`)."""

    def program(canvas, box, size, anchor, fill, flip=None):
        if not _by_image(copy, interpolation):
            def one(img, b, s, a, f):
                return read_window_taps(img, b, None if copy else s, a, out, fill,
                                        interpolation, antialias, taps, flip=f)

            return jax.vmap(one)(canvas, box, size, anchor, flip)
        return _read_by_image(canvas, box, size, anchor, fill, out, interpolation, antialias,
                              taps, flip)

    options = BY_IMAGE_OPTIONS if integer and _by_image(copy, interpolation) else None
    # Kept in the program store (a warm process loads it: no trace); its code is augjax's own
    # (the store keys it by augjax's source), its shape the config below.
    return build_program("read", counted(program), "list-read", (),
                         {"out": list(out), "copy": copy, "interpolation": interpolation,
                          "antialias": antialias, "taps": list(taps), "integer": integer,
                          "flipped": flipped, "backend": jax.default_backend()},
                         options=options)


def _read_by_image(canvas, box, size, anchor, fill, out, interpolation, antialias, taps,
                   flip=None):
    """The CPU form: image by image, each sample's branch reading only its taps that weigh
    something (moved to the first columns, :func:`augjax.kernels.window.taps_from_first`; the
    first ``K`` of them, ``K`` in :func:`~augjax.kernels.window.tap_sizes`: 2, 3, 4, 6, 8, 12,
    ... the widest), its image indexed from the canvas inside the branch (read in place). No
    branch per span of canvas rows (a quarter, half, ... of them, 2026-12-05: four times the
    branches, and the read cost the same without them); a scale jitter to 128^2 from 0.1x
    compiled 200 branches for ~110 CPU-s on a list of 8 images, now 13 for ~7. The taps are
    computed for the whole batch (under ``vmap``, as the every-tap form: one image's would
    round a weight differently), so the values are the every-tap form's (each sum stops
    before adding zeros). ``flip``: bools ``(N, 2)``, the outputs mirrored as they are read
    (:func:`augjax.kernels.window.flip_taps`)."""
    side = canvas.shape[1:3]
    iy, wy, ix, wx = jax.vmap(lambda b, s, a: read_taps(side, b, s, a, out, interpolation,
                                                        antialias, taps))(box, size, anchor)
    all_taps = (*taps_from_first(iy, wy), *taps_from_first(ix, wx))
    if flip is not None:
        all_taps = flip_taps(all_taps, flip)
    sizes = tap_sizes(max(taps))

    def one(args):
        i, s, a, t, f = args
        _, wy, _, wx = t
        used = jnp.maximum(_used(wy), _used(wx))
        k_index = jnp.searchsorted(jnp.array(sizes, jnp.int32), used)

        def branch(k):
            cut = tuple(v[:, :min(k, v.shape[1])] for v in t)

            def read(c):
                img = jax.lax.dynamic_index_in_dim(c, i, keepdims=False)
                return read_by_taps(img, cut, s, a, out, fill, interpolation, flip=f)

            return read

        return jax.lax.switch(k_index, [branch(k) for k in sizes], canvas)

    # The map runs over the images' indices and each branch takes its image from the canvas:
    # indexed inside the branch's loop fusion, it is read in place (mapped over the canvas,
    # the loop copied each image's canvas out first; the read costs about the same either
    # way, 0.84-0.88 CPU-ms per image, the whole call ~4% less, 2026-12-05).
    return jax.lax.map(one, (jnp.arange(canvas.shape[0]), size, anchor, all_taps, flip))


def _used(weight):
    """1 + the last column of ``weight`` (rows, K) that weighs something in any row."""
    k = jnp.arange(weight.shape[1], dtype=jnp.int32)
    return jnp.max(jnp.where(jnp.any(weight != 0.0, axis=0), k + 1, 1))


@once_cache(maxsize=256)
def _points_program(struct: Any, names: tuple[str, ...]):
    def program(shapes, box, size, anchor, *arrays):
        window = (None if struct.box is None else box, None if struct.size is None else size,
                  None if struct.anchor is None else anchor)
        return tuple(move_window_points(struct, shapes, window, dict(zip(names, arrays))))

    return portable_jit(counted(program))


def _read(prefix: tuple[Any, ...], arrays: list[np.ndarray], sizes: np.ndarray, window: Any,
          fill: Any, mask: bool = False, flip: np.ndarray | None = None) -> jax.Array:
    """The images (or masks, ``mask``: nearest, ``fill`` an id) through the windows (and
    mirrored where ``flip``, bools ``(N, 2)``: top-bottom, left-right)."""
    struct = window_structure(prefix)
    box, size, anchor = window
    out = struct.out
    config = dict(prefix[0].kwargs)
    if mask:
        config.update(interpolation="nearest", antialias=False)
    interpolation = config.get("interpolation", "bilinear")
    regions, rel = _regions(sizes, box, size, anchor, out,
                            FILTER_SUPPORT.get(interpolation, 1))
    # One side for both: RandomResizedCrop's boxes of a batch reach about as far in height as
    # in width, and a square bucket makes one program per bucket, not per pair of buckets.
    hc = wc = bucket(int(regions[:, 2:].max()))
    taps = _taps(rel, size, (hc, wc), out, config)
    n = len(arrays)
    program = _read_program(out, size is None, interpolation,
                            bool(config.get("antialias", True)), taps,
                            bool(np.issubdtype(arrays[0].dtype, np.integer)),
                            flip is not None)
    zeros = np.zeros((n, 2), np.int32)
    zero = size is None or interpolation != "bilinear" or not np.issubdtype(arrays[0].dtype,
                                                                            np.integer)
    return program(_canvas(arrays, regions, hc, wc, zero), rel,
                   zeros if size is None else np.asarray(size, np.int32),
                   zeros if anchor is None else np.asarray(anchor, np.int32), fill,
                   *(() if flip is None else (flip,)))


def read_list(steps: tuple[Any, ...], images: Sequence[Any], keys: Any, start: int, name: str,
              targets: dict[str, Any] | None = None) -> tuple[jax.Array, tuple[Any, ...], int,
                                                              dict[str, Any]]:
    """The chain's ragged prefix on a list of images (and ``targets``: the call's target
    keywords, lists or padded arrays), with a flip right after it folded into the read
    (:mod:`augjax._runtime.ragged.flip`): ``(batch, the params of the steps run, how many
    steps ran, moved targets)``; the moved targets are a call's target keywords for the rest
    of the chain (``masks`` ``(N, H, W[, K])``, ``boxes`` ``(N, M, 4)`` with ``boxes_valid``,
    ``keypoints`` with ``keypoints_valid``, ``mask_fill``), empty without targets.

    Raises:
        InputError: see :func:`check_list`, :func:`augjax._runtime.ragged.prefix.ragged_count` and
            :func:`ragged_targets`.
    """
    arrays = as_arrays(images, name)
    sizes = check_list(arrays, name)
    n = ragged_count(steps, name)
    prefix = steps[:n]
    spec, given = ragged_targets(prefix[0].name, dict(targets or {}), sizes)
    shapes = np.concatenate([sizes, np.full((len(sizes), 1), arrays[0].shape[-1], np.int32)], 1)
    dtype = arrays[0].dtype.name
    params, window = plan_program(prefix, start, dtype)(shapes, keys)
    host = tuple(None if v is None else np.asarray(v) for v in window)
    struct = window_structure(prefix)
    fill = check_fill(struct.fill, arrays[0][:1, :1], prefix[0].name)
    # A flip right after the prefix is folded into the read (augjax._runtime.ragged.flip).
    mirror, flip = flip_after(steps, n, keys), None
    if mirror is not None:
        flip_params, flip = draw_flips(mirror, start + n, keys, struct.out,
                                       int(shapes[0, 2]), dtype)
        params = (*params, flip_params)
    out = _read(prefix, arrays, sizes, host, fill, flip=flip)
    used = n + (mirror is not None)
    if spec is None:
        return out, params, used, {}
    moved: dict[str, Any] = {"mask_fill": spec.mask_fill}
    if "masks" in given:
        masks = given["masks"]
        rank = masks[0].ndim
        read = _read(prefix, [m if rank == 3 else m[..., None] for m in masks], sizes, host,
                     np.asarray(spec.mask_fill).astype(masks[0].dtype), mask=True, flip=flip)
        moved["masks"] = read if rank == 3 else read[..., 0]
    names = tuple(k for k in spec.names if k != "masks")
    if names:
        zeros = np.zeros((len(sizes), 2), np.int32)
        res = list(_points_program(struct, names)(
            shapes, np.zeros((len(sizes), 4), np.int32) if host[0] is None else host[0],
            zeros if host[1] is None else host[1], zeros if host[2] is None else host[2],
            *(given[k] for k in names)))
        for k in ("boxes", "keypoints"):
            if k in names:
                moved[k], moved[f"{k}_valid"] = res.pop(0), res.pop(0)
        if mirror is not None:
            moved = flip_targets(mirror, flip_params, moved, (len(sizes), *struct.out,
                                                              int(shapes[0, 2])), dtype, name)
    return out, params, used, moved


def _fail(op: str, argument: str, expected: str, got: str) -> InputError:
    return InputError(f"{op}: argument '{argument}' expects {expected}, got {got}", op=op,
                      argument=argument)


def _listed(op: str, key: str, value: Any, n: int) -> list[np.ndarray] | None:
    """``value`` as one NumPy array per image when given as a list (None for an array)."""
    if not isinstance(value, (list, tuple)):
        return None
    if len(value) != n:
        raise _fail(op, key, f"one entry per image ({n}, like the list of images)",
                    f"{len(value)}")
    bad = [type(v).__name__ for v in value if not isinstance(v, (np.ndarray, jax.Array))]
    if bad:
        raise _fail(op, key, "a list of arrays (NumPy or jax.Array)", f"{bad[0]} items")
    return [np.asarray(v) for v in value]


def _pad_points(op: str, key: str, items: list[np.ndarray], width: int,
                valid: Any) -> tuple[np.ndarray, np.ndarray]:
    """A list of ``(M_i, width)`` arrays as ``(N, M, width)`` with ``M`` the largest ``M_i``
    rounded up to a power of two (at least 4: a new count of boxes rarely compiles), and
    their flags ``(N, M)`` (given ones, a list of ``(M_i,)``, or all true), padding false."""
    for i, v in enumerate(items):
        if v.ndim != 2 or v.shape[1] != width:
            shape = "(M_i, 4) XYXY" if width == 4 else "(K_i, 2) x, y"
            raise _fail(op, key, f"one {shape} array per image", f"{key}[{i}] of shape "
                        f"{tuple(v.shape)}")
    flags = _listed(op, f"{key}_valid", valid, len(items)) if valid is not None else None
    if valid is not None and flags is None:
        raise _fail(op, f"{key}_valid", f"a list of (M_i,) bool flags like {key}",
                    f"{type(valid).__name__}")
    m = 4
    while m < max(v.shape[0] for v in items):
        m *= 2
    points = np.zeros((len(items), m, width), np.float32)
    ok = np.zeros((len(items), m), np.bool_)
    for i, v in enumerate(items):
        points[i, :len(v)] = v
        f = np.ones(len(v), np.bool_) if flags is None else flags[i]
        if f.shape != (len(v),) or f.dtype != np.bool_:
            raise _fail(op, f"{key}_valid", f"bool ({len(v)},) for {key}[{i}]",
                        f"{f.dtype} {tuple(f.shape)}")
        ok[i, :len(v)] = f
    return points, ok


def ragged_targets(op: str, targets: dict[str, Any],
                   sizes: np.ndarray) -> tuple[TargetSpec | None, dict[str, Any]]:
    """The targets of a list of images of ``sizes``, checked: ``(spec, arrays)`` with masks a
    list of ``(H_i, W_i[, K])`` arrays and boxes / keypoints padded ``(N, M, ...)`` with
    their flags.

    Raises:
        InputError: a list whose length is not the images', a mask whose size is not its
            image's, masks of mixed dtypes or ranks, a bad box or keypoint array, or boxes
            other than pixel XYXY under the default rule (as in DALI).
    """
    n = len(sizes)
    given = {k: v for k, v in targets.items() if v is not None}
    out: dict[str, Any] = {}
    for key, width in (("boxes", 4), ("keypoints", 2)):
        if key not in given:
            continue
        items = _listed(op, key, given[key], n)
        if items is not None:
            out[key], out[f"{key}_valid"] = _pad_points(op, key, items, width,
                                                        given.get(f"{key}_valid"))
        else:
            out[key] = given[key]
            if given.get(f"{key}_valid") is not None:
                out[f"{key}_valid"] = given[f"{key}_valid"]
    # The rest (options, flags without their points) is checked as for a batch.
    rest = {k: v for k, v in given.items() if k != "masks" and k not in out}
    spec, arrays = prepare_targets(op, {**rest, **out}, n, 0, 0, concrete=True)
    if spec is not None and not spec.plain:
        arg = "sanitize" if spec.sanitize is not None else "boxes_format"
        raise _fail(op, arg, "pixel XYXY boxes under the default rule with images of different "
                    "sizes (as in DALI); convert the boxes with augjax.convert_boxes first",
                    repr(targets.get(arg)))
    checked = dict(zip(spec.names, arrays)) if spec is not None else {}
    names = list(spec.names) if spec is not None else []
    if "masks" in given:
        masks = _listed(op, "masks", given["masks"], n)
        if masks is None:
            raise _fail(op, "masks", f"a list of {n} (H_i, W_i) or (H_i, W_i, K) masks, one per "
                        f"image", f"{type(given['masks']).__name__}")
        for i, (m, (h, w)) in enumerate(zip(masks, sizes)):
            if m.ndim not in (2, 3) or tuple(m.shape[:2]) != (h, w):
                raise _fail(op, "masks", f"masks[{i}] of shape ({h}, {w}) or ({h}, {w}, K) like "
                            f"its image", f"{tuple(m.shape)}")
        kinds = {(m.dtype, m.shape[2:]) for m in masks}
        if len(kinds) != 1 or not (masks[0].dtype == np.bool_
                                   or np.issubdtype(masks[0].dtype, np.integer)):
            raise _fail(op, "masks", "integer or bool ids of one dtype and rank",
                        ", ".join(sorted(f"{d} {s}" for d, s in kinds)))
        checked["masks"] = masks
        names.append("masks")
        fill = targets.get("mask_fill", 0)
        spec = TargetSpec(tuple(k for k in ORDER if k in names),
                          spec.mask_fill if spec is not None else _mask_fill(op, fill))
    return spec, checked


def _mask_fill(op: str, fill: Any) -> int:
    if isinstance(fill, bool) or not isinstance(fill, (int, np.integer)):
        raise _fail(op, "mask_fill", "an int (the id of pixels from outside the image)",
                    repr(fill))
    return int(fill)
