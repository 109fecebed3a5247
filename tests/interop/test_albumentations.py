"""augjax.from_albumentations refuses, with the typed error that names the transform and points
at the hand translation (docs/MIGRATING.md), since albumentations' OpenCV kernels differ."""

from __future__ import annotations

import pytest

A = pytest.importorskip("albumentations",
                        reason="the reference extra: pip install -e '.[reference]'")

import augjax  # noqa: E402


def test_from_albumentations_refuses_with_a_typed_error():
    with pytest.raises(augjax.UnsupportedTransformError, match="MIGRATING") as info:
        augjax.from_albumentations(A.Compose([A.HorizontalFlip()]))
    assert info.value.transform == "Compose" and info.value.nearest == "from_torchvision"
