"""A call's targets as it gives them: the static spec that keys the programs
(:class:`TargetSpec`) and the checks and conversions before anything is traced (shapes,
dtypes, validity, box order, rotated boxes a batch-level hook cannot move). How they follow
the image through a chain: :mod:`augjax._runtime.targets.follow`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.kinds import torch_hint
from augjax._core.targets import HOOK, TARGET_OPTIONS
from augjax._runtime.targets import boxes as _boxes
from augjax._runtime.targets import rotated as _rotated
from augjax.errors import InputError

__all__ = ["ORDER", "TargetSpec", "check_hooks", "check_target_shapes", "is_data_node",
           "prepare_targets"]

#: The target arrays a program carries, in this order.
ORDER = ("masks", "boxes", "boxes_valid", "keypoints", "keypoints_valid")

_F32 = jnp.float32


class TargetSpec(NamedTuple):
    """The static part of a call's targets (it keys the compiled programs): the arrays present
    (a subset of :data:`ORDER`, in that order), the masks' fill, the boxes' format and their
    validity rule (:class:`augjax.Sanitize`; None: the default)."""

    names: tuple[str, ...]
    mask_fill: int = 0
    boxes_format: str = "xyxy"
    boxes_normalized: bool = False
    sanitize: Any = None

    @property
    def outputs(self) -> tuple[str, ...]:
        """The arrays a program returns: the targets given and their validity (and with
        ``valid_first``, the boxes' counts and indices)."""
        out = tuple(k for k in ORDER if k in self.names
                    or (k.endswith("_valid") and k[:-6] in self.names))
        if "boxes" in self.names and self.sanitize is not None and self.sanitize.valid_first:
            out += ("boxes_count", "boxes_index")
        return out

    @property
    def plain(self) -> bool:
        """Whether boxes need no conversion and follow the default rule."""
        return (self.boxes_format, self.boxes_normalized, self.sanitize) == ("xyxy", False,
                                                                            None)


def is_data_node(x: Any) -> bool:
    """Whether ``x`` is a DALI DataNode, decided without importing DALI."""
    return type(x).__module__.startswith("nvidia.dali") and type(x).__name__ == "DataNode"


def _fail(op: str, argument: str, expected: str, got: str) -> InputError:
    return InputError(f"{op}: argument '{argument}' expects {expected}, got {got}", op=op,
                      argument=argument)


def _describe(x: Any) -> str:
    return f"{np.dtype(x.dtype).name} {tuple(x.shape)}"


def _integer_or_bool(dtype: Any) -> bool:
    dt = np.dtype(dtype)
    return dt == np.bool_ or np.issubdtype(dt, np.integer)


def check_target_shapes(op: str, arrays: Mapping[str, Any], n: int, h: int, w: int,
                        boxes_format: str = "xyxy") -> None:
    """Checks ranks, dtypes and sizes of the target arrays against a batch of ``n`` images of
    ``h`` x ``w`` (static shapes: free, and safe inside a trace); boxes' last dimension by
    ``boxes_format`` (4; rotated 5 or 8).

    Raises:
        InputError: naming the op, the argument, what was expected and what came.
    """
    if "masks" in arrays:
        m = arrays["masks"]
        if m.ndim not in (3, 4) or tuple(m.shape[:3]) != (n, h, w):
            raise _fail(op, "masks", f"shape (N, H, W) or (N, H, W, K) = ({n}, {h}, {w}[, K]) "
                        f"like the images", _describe(m))
        if not _integer_or_bool(m.dtype):
            raise _fail(op, "masks", "integer or bool class/instance ids (masks are not "
                        "interpolated; cast float masks with .astype(int32))", _describe(m))
    for name, width in (("boxes", _rotated.WIDTH[boxes_format]), ("keypoints", 2)):
        if name not in arrays:
            continue
        b = arrays[name]
        ranks = (3, 4) if name == "keypoints" else (3,)
        if b.ndim not in ranks or b.shape[0] != n or b.shape[-1] != width:
            shape = ("(N, K, 2) or grouped (N, G, K, 2) x, y" if name == "keypoints" else
                     "(N, M, 4) XYXY (or boxes_format=)" if boxes_format == "xyxy" else
                     f"(N, M, {width}) {boxes_format.upper()} (boxes_format={boxes_format!r})")
            raise _fail(op, name, f"shape {shape} with N = {n}", _describe(b))
        if np.dtype(b.dtype) == np.bool_ or not (np.issubdtype(np.dtype(b.dtype), np.number)):
            raise _fail(op, name, "numbers (float or int pixels)", _describe(b))
        valid = arrays.get(f"{name}_valid")
        if valid is not None and (tuple(valid.shape) != tuple(b.shape[:-1])
                                  or np.dtype(valid.dtype) != np.bool_):
            raise _fail(op, f"{name}_valid", f"bool {tuple(b.shape[:-1])} (one flag per "
                        f"{name[:-1] if name == 'boxes' else 'keypoint'})", _describe(valid))


def prepare_targets(op: str, targets: Mapping[str, Any], n: int, h: int, w: int,
                    concrete: bool) -> tuple[TargetSpec | None, tuple[Any, ...]]:
    """Validates the target keywords of a call and returns ``(spec, arrays)`` in :data:`ORDER`
    (``(None, ())`` without targets). ``concrete``: the arrays are data to read (NumPy / jax
    arrays, not DALI nodes), so box order is checked too.

    Raises:
        InputError: a bad target (rank, dtype, size, batch, box order, fill).
    """
    given = {k: v for k, v in targets.items() if v is not None and k not in TARGET_OPTIONS}
    fill = targets.get("mask_fill", 0)
    fmt, norm = _boxes.parse_format(targets.get("boxes_format") or "xyxy",
                                    targets.get("boxes_normalized"), op=op)
    rule = _boxes.parse_sanitize(targets.get("sanitize"), op)
    if "boxes" not in given:
        for k in ("boxes_format", "boxes_normalized", "sanitize"):
            if targets.get(k) is not None:
                raise _fail(op, k, "boxes= as well (it describes the boxes)", f"{k} alone")
    if not any(k in given for k in ("masks", "boxes", "keypoints")):
        for k in given:
            raise _fail(op, k, f"{k[:-6]}= as well", f"{k} alone")
        return None, ()
    if isinstance(fill, bool) or not isinstance(fill, (int, np.integer)):
        raise _fail(op, "mask_fill", "an int (the id of pixels from outside the image)",
                    repr(fill))
    arrays: dict[str, Any] = {}
    for k, v in given.items():
        if is_data_node(v):
            arrays[k] = v
            continue
        if not concrete:
            raise _fail(op, k, "a DALI DataNode like the images", type(v).__name__)
        if not isinstance(v, (jax.Array, np.ndarray)):
            raise _fail(op, k, "a jax.Array or NumPy array",
                        f"{type(v).__name__}{torch_hint(v, k)}")
        arrays[k] = v
    if concrete:
        arrays = _default_validity(op, arrays, n)
        check_target_shapes(op, arrays, n, h, w, fmt)
        if "masks" in arrays:
            _check_mask_ids(op, arrays["masks"])
        if "boxes" in arrays:
            _check_box_order(op, arrays["boxes"], arrays["boxes_valid"], fmt)
    names = tuple(k for k in ORDER if k in arrays)
    return TargetSpec(names, int(fill), fmt, norm, rule), tuple(arrays[k] for k in names)


def check_hooks(steps: Sequence[Any], spec: TargetSpec | None) -> None:
    """Refuses rotated boxes for a batch-level step whose hook moves boxes, before anything is
    traced (a hook takes pixel XYXY boxes, :class:`augjax.Follow`; rotated ones have no such
    form). :func:`follow_targets` refuses them too, for such a step inside a composite.

    Raises:
        InputError: naming the step and ``boxes_format``.
    """
    if spec is None or "boxes" not in spec.names or spec.boxes_format not in _rotated.ROTATED:
        return
    for step in steps:
        rule = getattr(step, "follow", None) if step.level == "batch" else None
        if rule is not None and rule.points == HOOK:
            raise _rotated_refused(step.name, spec.boxes_format)


def _rotated_refused(op: str, boxes_format: str) -> InputError:
    return InputError(f"{op}: argument 'boxes_format' expects unrotated boxes (xyxy, xywh, "
                      f"cxcywh, or their normalised forms) for this batch-level op, which moves "
                      f"boxes by their XYXY sides; got rotated boxes ({boxes_format!r})", op=op,
                      argument="boxes_format")


def _check_mask_ids(op: str, masks: Any) -> None:
    """NumPy masks of a type wider than int32 (int64, uint32, uint64) must hold ids that int32
    holds where JAX runs without x64 (it would keep int32 and wrap larger ids: 2**32 read as 0,
    the background): read on the host, before any work. jax.Arrays are int32 there already."""
    if not isinstance(masks, np.ndarray) or masks.size == 0:
        return
    dt = masks.dtype
    if dt == np.bool_ or not np.issubdtype(dt, np.integer) or np.can_cast(dt, np.int32):
        return
    if jax.config.jax_enable_x64:
        return
    info = np.iinfo(np.int32)
    low, high = int(masks.min()), int(masks.max())
    if low < info.min or high > info.max:
        raise _fail(op, "masks", "ids in int32's range [-2**31, 2**31) (JAX runs without x64 "
                    "here and keeps masks as int32; renumber the ids, or turn x64 on with "
                    "jax.config.update('jax_enable_x64', True))",
                    f"{dt.name} ids from {low} to {high}")


def _default_validity(op: str, arrays: dict[str, Any], n: int) -> dict[str, Any]:
    out = dict(arrays)
    for name in ("boxes", "keypoints"):
        key = f"{name}_valid"
        if name not in out:
            continue
        count = out[name].shape[1]
        v = out.get(key)
        if v is None:
            out[key] = jnp.ones((n, *out[name].shape[1:-1]), jnp.bool_)
        elif v.ndim == 1 and name == "boxes" and np.issubdtype(np.dtype(v.dtype), np.integer):
            if v.shape[0] != n:
                raise _fail(op, key, f"(N,) counts with N = {n}", _describe(v))
            out[key] = jnp.arange(count)[None, :] < jnp.asarray(v)[:, None]
    return out


def _check_box_order(op: str, boxes: Any, valid: Any, fmt: str = "xyxy") -> None:
    """Boxes must be ordered (x1 <= x2, y1 <= y2; width and height >= 0) where valid: read
    from NumPy for free, from a jax.Array only in checking mode (reading it is a device sync);
    traced boxes are not read."""
    from augjax._runtime.execution.checking import checking_enabled

    if isinstance(boxes, jax.core.Tracer) or isinstance(valid, jax.core.Tracer):
        return
    if not isinstance(boxes, np.ndarray) and not checking_enabled():
        return
    b, v = np.asarray(boxes), np.asarray(valid)
    if fmt == "xyxyxyxy":  # any 4 corners: torchvision rectifies them on the first op
        return
    if fmt == "xyxy":
        bad = ((b[..., 2] < b[..., 0]) | (b[..., 3] < b[..., 1])) & v
        want = ("XYXY boxes (x1 <= x2 and y1 <= y2; pass boxes_format='xywh' or 'cxcywh' for "
                "the others)")
    else:
        bad = ((b[..., 2] < 0) | (b[..., 3] < 0)) & v
        want = f"{fmt.upper()} boxes (width and height >= 0)"
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise _fail(op, "boxes", want, f"boxes[{i}, {j}] = {b[i, j].tolist()}")
