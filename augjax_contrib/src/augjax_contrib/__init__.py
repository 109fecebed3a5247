"""augjax-contrib: extra augjax ops, installed as a plugin pack.

The ops are found by augjax through this distribution's ``augjax.ops`` entry points (one per op)
and imported on first use; this package imports nothing at import time. Use them as
``augjax.ops.motion_blur(images, key=key)`` on arrays, or ``augjax.ops.water(images)`` inside a
DALI ``@pipeline_def``. ``augjax list --all`` shows them with the distribution ``augjax-contrib``.

Modules: :mod:`augjax_contrib.blur` (box_blur, motion_blur, median_blur, pixelate; the
Gaussian blur is augjax's own, :mod:`augjax.catalog.blur`), :mod:`augjax_contrib.noise` (gaussian_noise, shot_noise, salt_and_pepper),
:mod:`augjax_contrib.dropout` (grid_mask, channel_dropout, pixel_dropout),
:mod:`augjax_contrib.distort` (water, sphere, elastic_transform).
"""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("augjax-contrib")
        except PackageNotFoundError:  # imported from a source tree, not installed
            return "0+unknown"
    raise AttributeError(f"module 'augjax_contrib' has no attribute {name!r}")
