"""Policy op-space entries: a reference's name for an augjax op, the parameter its magnitude
drives, and the map (the op's own, from its ``Param``, with this reference's overrides)."""

from __future__ import annotations

import dataclasses
from typing import Any

from augjax._core.magnitude import MagnitudeMap, linear

__all__ = ["MagnitudeMap", "PolicyOp", "linear", "resolve"]


@dataclasses.dataclass(frozen=True)
class PolicyOp:
    """One entry of a policy's op space.

    Args:
        name: the reference's name for it ("ShearX", "SolarizeIncreasing", ...).
        op: the augjax op that implements it (None: identity).
        param: the op's magnitude parameter (None for ops without a magnitude).
        magnitude: the level -> value map for ``param``: a :class:`MagnitudeMap` (the
            reference's own), a dict of fields overriding the op's declared map (``{"f32":
            True}``), or None for the op's declared map as it is.
        fixed: other parameters, fixed for this entry (``relative``, ``threshold``, ...).
        geometric: whether the op takes ``fill`` and ``interpolation`` from the policy.
    """

    name: str
    op: str | None
    param: str | None = None
    magnitude: MagnitudeMap | tuple[tuple[str, Any], ...] | None = None
    fixed: tuple[tuple[str, Any], ...] = ()
    geometric: bool = False


def resolve(entry: PolicyOp, spec: Any) -> PolicyOp:
    """``entry`` with its map made concrete from ``spec``'s declared magnitude (the op's
    ``Param.magnitude``) and the entry's overrides.

    Raises:
        ValueError: the entry names a parameter the op does not declare a magnitude for.
    """
    if entry.param is None or isinstance(entry.magnitude, MagnitudeMap):
        return entry
    param = spec.params.get(entry.param)
    base = None if param is None else param.magnitude_map
    if base is None:
        raise ValueError(f"the op {spec.name!r} declares no magnitude for parameter "
                         f"{entry.param!r}, and the entry {entry.name!r} gives no map")
    over = dict(entry.magnitude or ())
    return dataclasses.replace(entry, magnitude=dataclasses.replace(base, **over))
