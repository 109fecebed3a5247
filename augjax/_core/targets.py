"""How an op's targets (masks, boxes, keypoints) follow its image: a declared part of the op.

Every :class:`~augjax._core.spec.OpSpec` holds a :class:`Follow`. ``@op`` derives it from the
declaration unless the op passes ``targets=``:

- an op that does not move pixels (colour, erasing, noise, blur): targets are kept as they are;
- a geometric op with a ``matrix``: masks go through the op's own kernel with nearest sampling
  (so mask pixels follow exactly the image's sampling), boxes and keypoints through the matrix;
- a geometric op without a matrix (elastic warps): masks through the kernel; boxes and keypoints
  are refused (an error naming the op);
- a batch-level op (mixing): refused, unless it declares a ``batch`` hook
  ``fn(targets, params, **config) -> targets`` (augjax's mixing ops do, for masks).

A kernel that carries masks is called on a uint8 image of any channel count (the ids' bytes,
then a channel that is 255 inside the image), with ``interpolation="nearest"``,
``antialias=False`` and a zero ``fill`` where the op has those parameters.

Importing this module imports no JAX.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["KEEP", "KERNEL", "MATRIX", "REFUSE", "HOOK", "Follow", "TARGET_KEYWORDS",
           "default_follow"]

KEEP, KERNEL, MATRIX, REFUSE, HOOK = "keep", "kernel", "matrix", "refuse", "hook"

#: The keyword arguments of a call that carry targets (reserved: no op parameter may use them).
TARGET_KEYWORDS = frozenset({"masks", "boxes", "keypoints", "boxes_valid", "keypoints_valid",
                             "mask_fill"})


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
            ``(N, H, W, C)`` integer array) and ``params`` the batch's params.
        reason: why targets are refused (completes the error message).
    """

    masks: str = KEEP
    points: str = KEEP
    batch: Callable[..., Any] | None = None
    reason: str = ""

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
