"""Checks of the data given to an op: type, rank, dtype, layout, channels, labels.

They run on static shapes, so they cost nothing per batch: on arrays before the jitted call, and
in DALI while the function is traced (the first batch of each shape). The one value check,
class ids against ``num_classes`` (:func:`check_label_range`), reads the labels: on arrays before
the jitted call, in DALI inside the program (see ``augjax.dali._bridge``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.declaration import CHW, HWC, LAYOUTS
from augjax._core.kinds import Images, check_rank, layout_hint, pil_hint, torch_hint
from augjax.errors import InputError, InputTypeError

__all__ = [
    "LAYOUT_AXES",
    "as_array",
    "check_arguments",
    "check_images",
    "check_label_range",
    "check_labels",
    "check_layout",
    "check_layout_shape",
    "check_pixels",
    "committed",
    "integer_hint",
    "label_classes",
    "row_major",
]

#: Position of (height, width, channels) in a batch of each layout.
LAYOUT_AXES = {HWC: (1, 2, 3), CHW: (2, 3, 1)}


def check_layout(layout: str, op: str) -> None:
    """Raises InputError for a layout of images other than ``"HWC"`` / ``"CHW"``."""
    if layout not in LAYOUTS:
        raise InputError(f"{op}: argument 'layout' expects {' or '.join(map(repr, LAYOUTS))}, "
                         f"got {layout!r}{layout_hint(layout)}", op=op, argument="layout")


#: The devices a DALI operator runs on.
DALI_DEVICES = ("cpu", "gpu")


def check_arguments(name: str, *, nodes: bool, key: Any, seeds: Any, seed: Any, device: Any,
                    source: str = "cpu") -> str | None:
    """A call's ``key`` / ``seeds`` / ``seed`` / ``device``, checked in one place for every
    front end (images, clips, views): on arrays ``key=`` only (the others are DALI's), in a DALI
    pipeline (``nodes``) no ``key=`` and ``device`` ``"cpu"`` or ``"gpu"``, by default the
    images' (``source``), never ``"cpu"`` for GPU images. Returns the DALI device (None on
    arrays).

    Raises:
        InputError: an argument of the other mode; a bad ``device``.
    """
    if not nodes:
        for arg, value in (("seeds", seeds), ("seed", seed), ("device", device)):
            if value is not None:
                raise InputError(f"{name}: argument '{arg}' is for DALI pipelines; on arrays "
                                 f"pass key=", op=name, argument=arg)
        return None
    if key is not None:
        raise InputError(f"{name}: argument 'key' is for arrays; in a DALI pipeline pass seed= "
                         f"(an int) or seeds= (a DataNode of per-sample seeds)", op=name,
                         argument="key")
    device = device or source
    if device not in DALI_DEVICES:
        raise InputError(f"{name}: argument 'device' expects 'cpu' or 'gpu', got {device!r}",
                         op=name, argument="device")
    if device == "cpu" and source == "gpu":
        raise InputError(f"{name}: argument 'device' is 'cpu' but the images are on the GPU; "
                         f"DALI cannot move GPU data back to the CPU inside a pipeline (drop "
                         f"device= or decode on the CPU)", op=name, argument="device")
    return device


def as_array(x: Any, op: str, argument: str) -> jax.Array:
    """Returns ``x`` as a ``jax.Array`` (NumPy arrays are converted; a ``jax.Array`` laid out
    in another order than row-major is copied: :func:`row_major`), or raises InputTypeError."""
    if isinstance(x, jax.Array):
        return row_major(x)
    if isinstance(x, np.ndarray):
        if x.dtype == object:  # np.array(images) of images of different sizes
            hint = (": a list of images of different sizes goes as a Python list, list(x), "
                    "to a chain that starts with a crop" if argument == "images" else "")
            raise InputTypeError(f"{op}: argument '{argument}' expects a numeric array, got a "
                                 f"NumPy array of dtype object {x.shape}{hint}", op=op,
                                 argument=argument)
        if argument == "images" and x.dtype.kind in "iu" and x.dtype.itemsize == 8:
            # JAX (without x64) would make it int32 and the dtype check would name that
            raise InputError(f"{op}: argument 'images' expects dtype uint8 or float32 (augjax's "
                             f"image dtypes), got {x.dtype}{integer_hint(x.dtype, [x])}", op=op,
                             argument=argument)
        return jnp.asarray(x)
    raise InputTypeError(
        f"{op}: argument '{argument}' expects a jax.Array, a NumPy array or a DALI DataNode, "
        f"got {type(x).__module__}.{type(x).__qualname__}{torch_hint(x, argument)}"
        f"{pil_hint(x) if argument == 'images' else ''}",
        op=op,
        argument=argument,
    )


def integer_hint(dtype: Any, arrays: Any = ()) -> str:
    """How integer images become augjax's (uint8 or float32 in [0, 1]), for a dtype error: read
    off the values of ``arrays`` where they are on the host (NumPy; the error path only), else
    off the dtype. Dividing by the dtype's largest value is right for 16-bit levels only: 0..255
    values in an int64 array so divided would come out black."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        return ""
    host = [a for a in arrays if isinstance(a, np.ndarray) and a.size]
    if host:
        lo, hi = min(int(a.min()) for a in host), max(int(a.max()) for a in host)
        if 0 <= lo and hi <= 255:
            return f" (its values are 0..{hi}, 8-bit levels: image.astype(np.uint8))"
        if 0 <= lo and hi <= 65535:
            return (f" (its values reach {hi}: 16-bit levels as float32, (image / 65535)."
                    f"astype(np.float32), or divided by the data's own top level)")
        return (f" (its values are {lo}..{hi}: float32 in [0, 1] by the data's own range, "
                f"((image - low) / (high - low)).astype(np.float32))")
    if dtype.itemsize == 2:
        return (" (16-bit levels: (image / 65535).astype(np.float32), or image.astype(np.uint8) "
                "if the values are 0..255)")
    return (" (image.astype(np.uint8) if the values are 0..255, else float32 in [0, 1] by the "
            "data's own range)")


def row_major(x: jax.Array) -> jax.Array:
    """``x`` in the row-major layout augjax's programs are compiled for. An array JAX took
    through DLPack keeps the tensor's strides: ``jax.dlpack.from_dlpack(t.permute(0, 2, 3, 1))``
    of an NCHW torch tensor is laid out ``major_to_minor=(0, 3, 1, 2)``, which a compiled (or
    stored) program refuses with XLA's layout error; it is copied to row-major (one copy, the
    values unchanged). Traced arrays, TPU arrays (tiled layouts) and row-major ones pass as
    they are."""
    if isinstance(x, jax.core.Tracer):
        return x
    try:
        layout = x.format.layout
        order = tuple(layout.major_to_minor)
    except Exception:  # noqa: BLE001  (no concrete layout to read: deleted, or not laid out)
        return x
    if order == tuple(range(x.ndim)) or layout.tiling:
        return x
    return jnp.copy(x)


def check_images(x: Any, spec: Any, layout: str, op: str | None = None,
                 batch: bool = True) -> None:
    """Checks a batch against an op's declared dtypes, layouts and channels."""
    name = op or spec.name
    shape = tuple(x.shape)
    if layout not in spec.layouts:
        raise InputError(
            f"{name}: argument 'layout' expects one of {spec.layouts}, got {layout!r}"
            f"{layout_hint(layout)}",
            op=name,
            argument="layout",
        )
    check_rank(len(shape), Images.rank(layout), name, "images", Images.describe(layout), shape)
    dtype = jnp.dtype(x.dtype).name
    if dtype not in spec.dtypes:
        raise InputError(
            f"{name}: argument 'images' expects dtype {' or '.join(spec.dtypes)}, got {dtype}"
            f"{integer_hint(dtype, [x]) if 'float32' in spec.dtypes else ''}",
            op=name,
            argument="images",
        )
    check_layout_shape(shape, layout, name)
    check_pixels(shape, layout, name)
    hi, wi, ci = LAYOUT_AXES[layout]
    channels = shape[ci]
    if spec.channels is not None and channels not in spec.channels:
        # the batch's shape where it is the caller's (not for one sample checked inside a
        # policy or views: ``batch=False``, whose batch axis is the check's own)
        raise InputError(
            f"{name}: argument 'images' expects {' or '.join(map(str, spec.channels))} channels "
            f"in layout {layout}, got {channels} ({shape[hi]} x {shape[wi]} images with "
            f"{channels} channel{'' if channels == 1 else 's'}"
            f"{f', batch shape {shape}' if batch else ''})"
            + (f" (is the layout right? pass layout='{CHW}' for channels-first data)"
               if layout == HWC and shape[1] in spec.channels else "")
            + _channel_hint(channels, spec.channels, layout),
            op=name,
            argument="images",
        )


def _channel_hint(channels: int, wanted: tuple[int, ...], layout: str) -> str:
    """How to convert images of ``channels`` to a count in ``wanted`` (gray to RGB, RGBA or CMYK
    to RGB), or nothing; the channel axis counted from the end (the same for clips)."""
    axis, first3 = (-1, "x[..., :3]") if layout == HWC else (-3, "x[..., :3, :, :]")
    if channels == 1 and 3 in wanted:
        return (f"; gray images: repeat the channel to RGB first (np.repeat(x, 3, "
                f"axis={axis}), or PIL's .convert('RGB') when decoding)")
    if channels == 4 and 3 in wanted:
        return (f"; RGBA or CMYK images: convert them to RGB first (PIL's .convert('RGB') "
                f"when decoding, or drop alpha: {first3})")
    return ""


#: Channel counts of images: a batch whose channel axis holds another count while the other
#: layout's channel axis holds one of these was given in the wrong layout.
IMAGE_CHANNELS = (1, 3, 4)


def check_layout_shape(shape: tuple[int, ...], layout: str, op: str,
                       takes_layout: bool = True) -> None:
    """Raises InputError when a batch's shape says channels-first data was given as ``"HWC"``
    (last axis not 1, 3 or 4 while axis 1 is) or channels-last data as ``"CHW"``; the fix named
    is ``layout=`` where the call takes one (``takes_layout``), else the transpose."""
    other = CHW if layout == HWC else HWC
    here, there = shape[LAYOUT_AXES[layout][2]], shape[LAYOUT_AXES[other][2]]
    if here in IMAGE_CHANNELS or there not in IMAGE_CHANNELS:
        return
    which, kind = ("axis 1", "channels-first") if other == CHW else ("the last axis",
                                                                      "channels-last")
    fix = (f"pass layout='{other}' (or transpose the batch to {layout})" if takes_layout else
           f"transpose the batch to {layout} (np.moveaxis(images, 1, -1)); there is no "
           f"layout= here: only {layout} batches are taken")
    raise InputError(
        f"{op}: argument 'images' has shape {shape}: in layout {layout} that is {here} "
        f"channels, but {which} has {there}, as {kind} data would; {fix}",
        op=op,
        argument="layout" if takes_layout else "images",
    )


def check_pixels(shape: tuple[int, ...], layout: str, op: str) -> None:
    """Raises InputError when the images of a batch have no pixel (a height or width of 0: a
    failed decode, an empty crop upstream), which no op can sample from; an empty batch (N = 0)
    is fine."""
    h, w = shape[LAYOUT_AXES[layout][0]], shape[LAYOUT_AXES[layout][1]]
    if h < 1 or w < 1:
        raise InputError(
            f"{op}: argument 'images' expects images of at least 1 x 1 pixels, got shape "
            f"{shape} (height {h}, width {w} in layout {layout})",
            op=op,
            argument="images",
        )


def check_labels(labels: Any, batch: int, op: str) -> jax.Array:
    """Checks labels: integer class ids ``(N,)`` or ``(N, 1)``, or soft labels ``(N, K)``.

    Returns integer labels flattened to ``(N,)`` and soft labels unchanged.
    """
    shape = tuple(labels.shape)
    if not shape or shape[0] != batch:
        raise InputError(
            f"{op}: argument 'labels' expects one label per image ({batch}), got shape {shape}",
            op=op,
            argument="labels",
        )
    if jnp.issubdtype(labels.dtype, jnp.integer):
        if len(shape) == 1 or (len(shape) == 2 and shape[1] == 1):
            return labels.reshape(batch)
    elif jnp.issubdtype(labels.dtype, jnp.floating) and len(shape) == 2:
        return labels
    raise InputError(
        f"{op}: argument 'labels' expects integer class ids of shape (N,) or (N, 1), or float "
        f"soft labels (N, num_classes); got {jnp.dtype(labels.dtype).name} {shape}",
        op=op,
        argument="labels",
    )


def label_classes(steps: Any) -> tuple[str, int] | None:
    """``(op name, num_classes)`` of the first step that takes labels, when it declares an int
    ``num_classes``; ``None`` otherwise (later steps see that op's soft labels)."""
    for step in steps:
        if "labels" in step.inputs:
            k = step.kwargs.get("num_classes")
            if isinstance(k, int) and not isinstance(k, bool):
                return step.name, k
            return None
    return None


def label_range_message(op: str, num_classes: int, low: Any, high: Any) -> str:
    """The message for class ids outside ``[0, num_classes)``."""
    return (
        f"{op}: argument 'labels' expects class ids in [0, {num_classes}) (num_classes="
        f"{num_classes}), got ids from {low} to {high}"
    )


def check_label_range(labels: Any, steps: Any) -> None:
    """Raises InputError when concrete integer ``labels`` hold a class id outside
    ``[0, num_classes)`` of the first step that mixes labels (one_hot would silently give an
    all-zero row). Soft labels and traced labels (inside the user's ``jax.jit``) are not read.
    """
    found = label_classes(steps)
    if found is None or isinstance(labels, jax.core.Tracer):
        return
    dtype = labels.dtype
    if not np.issubdtype(dtype, np.integer) or labels.size == 0:
        return
    if isinstance(labels, np.ndarray):
        low, high = labels.min(), labels.max()
    else:
        low, high = np.asarray(jnp.stack([labels.min(), labels.max()]))
    op, k = found
    if low < 0 or high >= k:
        raise InputError(label_range_message(op, k, int(low), int(high)), op=op,
                         argument="labels")


def committed(x: Any) -> Any:
    """``x`` committed to the one device it is on, for a cached ``jax.jit``
    program whose callers hand both kinds: ``jax.jit`` compiles once per input signature and
    commitment is part of it, so that DALI's ``jax_function`` (committed arrays) and array
    callers (``jnp.asarray``, ``jax.device_put(x)``: uncommitted) would each trace and compile
    the same program. Tracers, NumPy arrays, ``None``, committed arrays and arrays over several
    devices are returned as they are."""
    if not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer) or x.committed:
        return x
    devices = x.devices()
    if len(devices) != 1:
        return x
    return jax.device_put(x, next(iter(devices)))
