"""How an op's targets (masks, boxes, keypoints) follow its image: a declared part of the op.

Every :class:`~augjax._core.spec.OpSpec` holds a :class:`Follow`. ``@op`` derives it from the
declaration unless the op passes ``targets=``:

- an op that does not move pixels (colour, erasing, noise, blur): targets are kept as they are;
- a geometric op with a ``matrix``: masks go through the op's own kernel with nearest sampling
  (so mask pixels follow exactly the image's sampling), boxes and keypoints through the matrix;
- a geometric op without a matrix (elastic warps): masks through the kernel; boxes and keypoints
  are refused (an error naming the op);
- a batch-level op (mixing, pasting): refused, unless it declares a ``batch`` hook
  ``fn(targets, params, **config) -> targets`` (augjax's mixing ops do, for masks; ``mosaic``
  and ``copy_paste`` for masks and boxes, whose count the hook may change).

A kernel that carries masks is called on a uint8 image of any channel count (the ids' bytes,
then a channel that is 255 inside the image), with ``interpolation="nearest"``,
``antialias=False`` and a zero ``fill`` where the op has those parameters.

Importing this module imports no JAX.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any

__all__ = ["KEEP", "KERNEL", "MATRIX", "REFUSE", "HOOK", "Follow", "Sanitize", "TARGET_KEYWORDS",
           "TARGET_OPTIONS", "default_follow"]

KEEP, KERNEL, MATRIX, REFUSE, HOOK = "keep", "kernel", "matrix", "refuse", "hook"

#: The keyword arguments of a call that carry targets (reserved: no op parameter may use them).
TARGET_KEYWORDS = frozenset({"masks", "boxes", "keypoints", "boxes_valid", "keypoints_valid",
                             "mask_fill", "boxes_format", "boxes_normalized", "sanitize"})

#: The target keywords that are options (static values), not arrays.
TARGET_OPTIONS = frozenset({"mask_fill", "boxes_format", "boxes_normalized", "sanitize"})


@dataclasses.dataclass(frozen=True)
class Sanitize:
    """The validity rule of boxes (a call's ``sanitize=``; a dict of these fields is taken too).

    A box is flagged invalid (``boxes_valid`` False) after an op that moves it once, in output
    pixels, it is narrower or lower than ``min_size``, smaller than ``min_area``, or reaches out
    of the image (torchvision ``SanitizeBoundingBoxes`` with these ``min_size`` / ``min_area``),
    or once less than ``min_visibility`` of its area is left inside the output (albumentations'
    ``min_visibility``: the clamped area over the area before clamping, multiplied over the ops).
    It stays invalid. The default is the rule a call without ``sanitize=`` follows.

    Attributes:
        min_size: smallest width and height, pixels (torchvision's default 1).
        min_area: smallest area, square pixels (torchvision's default 1).
        min_visibility: smallest fraction of a box's area left inside, in [0, 1] (0: off).
        valid_first: also reorder each sample's boxes, valid ones first in their order
            (a stable partition), and return ``boxes_count`` ``(N,)`` int32 (how many are valid)
            and ``boxes_index`` ``(N, M)`` int32 (each returned box's index in the input, to
            reorder per-box labels with ``np.take_along_axis``).
    """

    min_size: float = 1.0
    min_area: float = 1.0
    min_visibility: float = 0.0
    valid_first: bool = False

    def __post_init__(self) -> None:
        from augjax.errors import InputError

        for name in ("min_size", "min_area", "min_visibility"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v >= 0 or \
                    (name == "min_visibility" and v > 1):
                want = "a number in [0, 1]" if name == "min_visibility" else "a number >= 0"
                raise InputError(f"argument 'sanitize': {name} expects {want}, got {v!r}",
                                 argument="sanitize")
        if not isinstance(self.valid_first, bool):
            raise InputError(f"argument 'sanitize': valid_first expects a bool, got "
                             f"{self.valid_first!r}", argument="sanitize")


@dataclasses.dataclass(frozen=True)
class Follow:
    """How targets follow an op.

    Attributes:
        masks: ``"keep"`` (unchanged), ``"kernel"`` (the op's kernel on the mask with
            ``interpolation="nearest"``, ``antialias=False`` and zero fill, then the mask's own
            fill where the pixel came from outside), ``"hook"`` (batch-level: ``batch``) or
            ``"refuse"``.
        points: ``"keep"``, ``"matrix"`` (boxes and keypoints through the op's forward
            matrix), ``"hook"`` or ``"refuse"``.
        batch: for batch-level ops, ``fn(targets, params, **config) -> targets`` where
            ``targets`` is a dict that may hold ``"masks"`` (the batch's masks as an
            ``(N, H, W, C)`` integer array) and ``params`` the batch's params. With
            ``points="hook"`` it also gets ``"boxes"`` (N, M, 4) pixel XYXY, ``"boxes_valid"``,
            ``"boxes_seen"`` (N, M) where ``min_visibility`` is tracked, and ``"keypoints"``
            (N, K, 2) with ``"keypoints_valid"``, and may return more of them than came
            (``mosaic``: ``M -> 4 M``), boxes clamped to the output; the call's
            :class:`Sanitize` rule is applied to the boxes it returns. Rotated boxes (which
            have no XYXY form) are refused for such an op before anything is traced.
        reason: why targets are refused (completes the error message).
        sizes: the hook also takes ``sizes=((H, W), (out_H, out_W))``, the batch's spatial size
            before and after the op.
    """

    masks: str = KEEP
    points: str = KEEP
    batch: Callable[..., Any] | None = None
    reason: str = ""
    sizes: bool = False

    def __post_init__(self) -> None:
        from augjax.errors import OpDefinitionError

        if self.masks not in (KEEP, KERNEL, HOOK, REFUSE) or \
                self.points not in (KEEP, MATRIX, HOOK, REFUSE):
            raise OpDefinitionError(f"targets=Follow(masks={self.masks!r}, points="
                                    f"{self.points!r}): masks is one of keep, kernel, hook, "
                                    f"refuse; points one of keep, matrix, hook, refuse")
        if HOOK in (self.masks, self.points) and not callable(self.batch):
            raise OpDefinitionError("targets=Follow(...): 'hook' needs a callable batch=")


def default_follow(level: str, geometric: bool, has_matrix: bool) -> Follow:
    """The rule ``@op`` gives an op that declares none."""
    if level == "batch":
        return Follow(REFUSE, REFUSE, reason="a batch-level op that declares no target rule")
    if not geometric:
        return Follow(KEEP, KEEP)
    if has_matrix:
        return Follow(KERNEL, MATRIX)
    return Follow(KERNEL, REFUSE, reason="it moves pixels without a matrix (a free-form warp), "
                                         "so points cannot follow it")
