"""Performance hints on the catalog's own op specs (internal: not part of ``op()``)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["compute_bound"]


def compute_bound(spec: Any) -> Any:
    """Marks an op spec (above ``@op``) as doing much arithmetic per pixel (HSV, random-order
    chains): on CPU a run of per-sample ops that holds one goes through the batch in
    cache-sized chunks; memory-bound ops (flip, normalize) run faster over the whole batch."""
    return dataclasses.replace(spec, compute_bound=True)
