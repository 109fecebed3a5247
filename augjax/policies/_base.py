"""Policy: the base of the automatic-augmentation composites (validation helpers, styles).

A policy is a frozen dataclass of its *configuration* (what ``to_dict`` writes); the op space,
the bound augjax ops and the level model are derived from it on first use. ``__post_init__``
validates every field and replaces style defaults by their values, so constructing a policy
from its own ``to_dict`` gives an equal policy.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from typing import Any

from augjax._core.param import kernel_number, show_value
from augjax.chain import Composite, Node, json_value
from augjax.errors import ParamError
from augjax.policies._engine import bind_space, layers_matrix, run_layers
from augjax.policies._magnitude import PolicyOp
from augjax.policies._targets import geometric_space, layer_stages, run_mask_layers

__all__ = [
    "DEFAULT",
    "STYLES",
    "LayeredPolicy",
    "Policy",
    "check_choice",
    "check_fill",
    "check_float",
    "check_int",
    "check_names",
    "registered_entry",
]

#: The reference implementations a policy can follow.
STYLES = ("torchvision", "timm", "dali")

#: Marker for "the style's default" (fill, interpolation, ...).
DEFAULT = "default"

#: Each style's fill (fractions of the value range, as the geometric ops take it: timm's and
#: DALI's uint8 level 128 is 128/255; None = zero padding) and interpolation.
STYLE_GEOMETRY = {
    "torchvision": (None, "nearest"),
    "timm": ((128.0 / 255.0,) * 3, "bilinear"),
    "dali": ((128.0 / 255.0,) * 3, "bilinear"),
}


def _fail(owner: str, name: str, expected: str, value: Any, detail: str = "") -> ParamError:
    return ParamError(f"{owner}: parameter '{name}' expects {expected}, got {show_value(value)}"
                      + (f" ({detail})" if detail else ""), op=owner, param=name)


def _range(low: Any, high: Any) -> str:
    return f" in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"


def check_int(owner: str, name: str, value: Any, low: int | None = None,
              high: int | None = None) -> int:
    """An integer in ``[low, high]`` (whole floats, as JSON may give them, are accepted)."""
    try:
        whole, detail = float(kernel_number(value, integral=True)).is_integer(), ""
    except (TypeError, ValueError) as err:
        whole, detail = False, str(err)
    if not whole or (low is not None and value < low) or (high is not None and value > high):
        raise _fail(owner, name, "an integer" + _range(low, high), value, detail)
    return int(value)


def check_float(owner: str, name: str, value: Any, low: float | None = None,
                high: float | None = None, allow_inf: bool = False) -> float:
    """A real number in ``[low, high]``, finite in float32 (the kernels' dtype); ``inf`` too
    with ``allow_inf``."""
    try:
        ok = (allow_inf and value == math.inf) or kernel_number(value) is not None
        detail = ""
    except (TypeError, ValueError) as err:  # not a number, or not finite in float32
        ok, detail = False, str(err)
    if not ok or (low is not None and value < low) or (high is not None and value > high):
        raise _fail(owner, name, "a number" + _range(low, high), value, detail)
    return float(value)


def check_choice(owner: str, name: str, value: Any, choices: tuple[Any, ...]) -> Any:
    """One of ``choices``."""
    if value not in choices:
        raise _fail(owner, name, "one of " + ", ".join(map(repr, choices)), value)
    return value


_FILL_EXPECTED = ("None, a fraction of the value range in [0, 1] or one per channel (x255 for "
                  "uint8 images: a uint8 level 128 is 128/255)")


def check_fill(owner: str, value: Any) -> tuple[float, ...] | None:
    """A fill as the geometric ops take it: None (zero padding), or a fraction of the value
    range in [0, 1] (multiplied by 255 for uint8 images), one number or one per channel."""
    if value is None:
        return None
    values = (value,) if isinstance(value, numbers.Real) and not isinstance(value, bool) \
        else value
    try:
        out = tuple(check_float(owner, "fill", v, 0.0, 1.0) for v in values)
    except (TypeError, ParamError):
        raise _fail(owner, "fill", _FILL_EXPECTED, value) from None
    if not out:
        raise _fail(owner, "fill", _FILL_EXPECTED, value)
    return out


def check_names(owner: str, name: str, value: Any, valid: tuple[str, ...],
                registered: bool = False) -> tuple[str, ...]:
    """A sequence of op names, each one of ``valid`` (the style's names) or, with
    ``registered``, a registered augjax op that declares a magnitude (see
    :func:`registered_entry`)."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _fail(owner, name, "a list of op names", value)
    problems = []
    for v in value:
        if v in valid:
            continue
        if not registered or not isinstance(v, str):
            problems.append(repr(v))
            continue
        try:
            registered_entry(v, owner)
        except ParamError as err:
            problems.append(f"{v!r} ({err.args[0].split(': ', 1)[-1]})")
    if problems:
        also = (" or a registered op that declares a magnitude (augjax info <op>)"
                if registered else "")
        raise ParamError(
            f"{owner}: parameter '{name}' has unknown op name(s) {', '.join(problems)}; "
            f"this op space has {', '.join(valid)}{also}",
            op=owner,
            param=name,
        )
    return tuple(value)


def registered_entry(name: str, owner: str) -> PolicyOp:
    """An op-space entry for the registered op ``name`` (augjax's or a pack's): its one
    per-sample parameter with a declared magnitude, driven by the op's own map; geometric ops
    (with ``fill`` and ``interpolation``) take the policy's fill and interpolation.

    Raises:
        ParamError: no such op, or it declares no magnitude (or several).
    """
    from augjax._plugins.registry import REGISTRY
    from augjax.errors import AugjaxError

    try:
        spec = REGISTRY.get(name)
    except AugjaxError as err:
        raise ParamError(f"{owner}: no registered op {name!r}: {err}", op=owner,
                         param="ops") from None
    mags = [k for k, p in spec.params.items() if p.per_sample and p.magnitude is not None]
    if len(mags) != 1:
        what = "declares no magnitude" if not mags else f"declares several magnitudes {mags}"
        raise ParamError(f"{owner}: the op {name!r} {what}; a policy drives one parameter",
                         op=owner, param="ops")
    geometric = {"fill", "interpolation"} <= set(spec.params)
    return PolicyOp(name, name, mags[0], None, (), geometric=geometric)


class Policy(Composite):
    """Base of the policy composites; subclasses are frozen dataclasses of their config."""

    def to_config(self) -> dict[str, Any]:
        return {f.name: json_value(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_config(cls, node: Node) -> Policy:
        names = tuple(f.name for f in dataclasses.fields(cls))
        node.keys((), names)
        return cls(**{k: node.get(k) for k in node.data if k != "type"})

    @property
    def name(self) -> str:
        return self.kind

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _geometry(self, style: str) -> None:
        """Resolves ``fill`` / ``interpolation`` defaults for ``style`` and validates them."""
        fill, interp = STYLE_GEOMETRY[style]
        if self.fill == DEFAULT:
            self._set("fill", fill)
        self._set("fill", check_fill(self.kind, self.fill))
        if self.interpolation in (None, DEFAULT):
            self._set("interpolation", interp)
        check_choice(self.kind, "interpolation", self.interpolation, ("nearest", "bilinear"))

    def _bind_now(self) -> None:
        """Binds the op space at construction, so a missing op or a bad fixed parameter is
        reported when the policy is built (or loaded from a config), not at its first batch."""
        _ = self.bound

    @functools.cached_property
    def _bound_space(self):
        return bind_space(self.entries, self.fill, self.interpolation, self.kind)

    @property
    def bound(self):
        """The augjax op of each entry of the op space (None for identity)."""
        return self._bound_space[1]

    @property
    def space(self):
        """The op space's entries with their magnitude maps resolved against the ops (the op's
        declared map with the reference's overrides)."""
        return self._bound_space[0]

    @property
    def op_names(self) -> tuple[str, ...]:
        """The reference names of the op space, in the order of the plan's ``op`` indices."""
        return tuple(e.name for e in self.entries)

    @property
    def entries(self):
        """The op space (``PolicyOp`` entries)."""
        raise NotImplementedError

    @property
    def geometric(self) -> bool:
        """Whether an op of the space moves pixels."""
        return geometric_space(self.bound)


class LayeredPolicy(Policy):
    """A policy whose params are layers in sequence: ``op``, ``applied`` and ``branches`` with a
    leading layer axis (RandAugment's ``n`` layers, an AutoAugment sub-policy's slots)."""

    def run(self, image, params):
        return run_layers(self.space, self.bound, params["op"], params["applied"],
                          params["branches"], image, self.kind, self.shares)

    @property
    def shares(self) -> tuple[float, ...] | None:
        """Each entry's probability of being chosen and applied at a layer (the largest over
        the layers), which sizes a layer's compacted sub-batches on a GPU; None: uniform."""
        return None

    def matrix(self, params, meta):
        return layers_matrix(self.bound, params["op"], params["applied"], params["branches"],
                             meta)

    def run_masks(self, mask, params):
        return run_mask_layers(self.bound, params["op"], params["applied"],
                               params["branches"], mask)

    def stages(self, params, meta):
        return layer_stages(self.bound, params["op"], params["applied"], params["branches"],
                            meta)
