"""Other libraries' pipelines as augjax chains.

- :func:`from_torchvision`: a ``torchvision.transforms.v2`` pipeline (:mod:`.torchvision`).
- :func:`from_albumentations`: not provided; see :func:`from_albumentations` for why.

None of these imports torch, torchvision or albumentations: the transforms are read by duck
typing, so a user install without torch can still convert a pipeline it was handed.
"""

from __future__ import annotations

from typing import Any

from augjax.errors import UnsupportedTransformError
from augjax.interop.torchvision import from_torchvision

__all__ = ["from_torchvision", "from_albumentations"]


def from_albumentations(transform: Any) -> Any:
    """Not provided: always raises :class:`augjax.UnsupportedTransformError`.

    albumentations 2.0's common transforms compute with OpenCV: resampling with 11-bit
    fixed-point weights and no antialiasing, ``reflect_101`` borders by default, colour jitter
    through uint8 HSV (hue in 0..179 steps) and blurs whose kernel size follows the sigma
    differently; no augjax op reproduces those within one level, and only flips, crops and
    normalisation would convert exactly. docs/MIGRATING.md shows the hand translation.
    """
    name = type(transform).__name__
    raise UnsupportedTransformError(
        f"from_albumentations: {name}: albumentations pipelines are not converted (OpenCV "
        "resampling, borders and HSV colour differ from augjax's torchvision semantics); "
        "translate by hand, docs/MIGRATING.md; nearest: augjax.from_torchvision",
        transform=name, nearest="from_torchvision")
