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
from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.param import Param, show_value
from augjax.chain import Composite, Node, json_value
from augjax.errors import ParamError
from augjax.kernels.products import matmul
from augjax.policies._engine import bind_space, draw_branches, run_layers
from augjax.policies._magnitude import PolicyOp
from augjax.policies._targets import geometric_space, layer_stages, run_mask_layers

__all__ = [
    "DEFAULT",
    "STYLES",
    "LayeredPolicy",
    "Policy",
    "check_names",
    "param",
    "registered_entry",
    "shared",
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


def param(default: Any, **declared: Any) -> Any:
    """A policy's configuration field, declared as a :class:`~augjax.Param` (its valid values and
    the names torchvision, timm and DALI give it); :meth:`Policy._check` validates by it."""
    return dataclasses.field(default=default, metadata={"param": Param(default, **declared)})


#: The fields several policies take (geometry, timm's magnitude noise and translations, op
#: lists): ``name -> (default, declaration)``.
_SHARED = {
    "fill": (DEFAULT, dict(kind="floats", low=0.0, high=1.0, optional=True,
                           aliases={"fill_value": "DALI", "img_mean": "timm"})),
    "interpolation": (None, dict(kind="str", choices=("nearest", "bilinear"),
                                 aliases={"interpolation_mode": "torchvision",
                                          "interp_type": "DALI"})),
    "mstd": (0.0, dict(kind="float", low=0.0, aliases={"magnitude_std": "timm"})),
    "mmax": (None, dict(kind="float", low=0.0, optional=True, aliases={"magnitude_max": "timm"})),
    "translate_const": (250.0, dict(kind="float", low=0.0)),
    "translate_pct": (0.45, dict(kind="float", low=0.0, high=1.0)),
    "ops": (None, dict(kind="str", optional=True)),
    "exclude": ((), dict(kind="str", optional=True, aliases={"excluded": "DALI"})),
}


def shared(name: str, *default: Any) -> Any:
    """The field ``name`` that several policies take, declared once (``default``: another
    default)."""
    value, declared = _SHARED[name]
    return param(default[0] if default else value, **declared)


def check_names(owner: str, name: str, value: Any, valid: tuple[str, ...],
                registered: bool = False) -> tuple[str, ...]:
    """A sequence of op names, each one of ``valid`` (the style's names) or, with
    ``registered``, a registered augjax op that declares a magnitude (see
    :func:`registered_entry`)."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ParamError(f"{owner}: parameter '{name}' expects a list of op names, got "
                         f"{show_value(value)}", op=owner, param=name)
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

    @classmethod
    def config_params(cls) -> dict[str, Param]:
        """Each configuration field's declaration."""
        return {f.name: f.metadata["param"] for f in dataclasses.fields(cls)}

    @property
    def name(self) -> str:
        return self.kind

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _check(self, *names: str, **change: Any) -> Any:
        """Validates each field of ``names`` by its declaration (``change``: the declaration's
        fields this configuration sets, e.g. the style's largest level) and sets it normalised;
        returns the last value. ``mstd`` may be ``inf`` (timm's uniform noise)."""
        for name in names:
            value = getattr(self, name)
            if not (name == "mstd" and value == math.inf):
                declared = dataclasses.replace(self.config_params()[name], **change)
                value = declared.check(self.kind, name, value)
            self._set(name, value)
        return value

    def _geometry(self, style: str) -> None:
        """Resolves ``fill`` / ``interpolation`` defaults for ``style`` and validates them."""
        fill, interp = STYLE_GEOMETRY[style]
        if self.fill == DEFAULT:
            self._set("fill", fill)
        if self.interpolation in (None, DEFAULT):
            self._set("interpolation", interp)
        self._check("fill", "interpolation")

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

    def _decisions(self, key, meta, k_sign, op, level, applied, index, **more):
        """The layers' per-sample decisions (leading axes ``S``, those of ``level``): ``op``,
        ``level``, ``negative`` (drawn from ``k_sign``), ``applied``, and ``branches``, every
        entry's params at each layer (its key ``fold_in(key, index)``); ``more``: the
        policy's own."""
        negative = jax.random.bernoulli(k_sign, 0.5, level.shape)
        branches = draw_branches(self.space, self.bound, self.levels, level, negative, index, key,
                                 meta)
        return {"op": op.astype(jnp.int32), "level": level, "negative": negative,
                "applied": applied, "branches": branches, **more}

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
        m = jnp.eye(3, dtype=jnp.float32)
        for stage, _ in self.stages(params, meta):  # the layers' matrices, in order
            m = matmul(stage, m)
        return m

    def run_masks(self, mask, params):
        return run_mask_layers(self.bound, params["op"], params["applied"],
                               params["branches"], mask)

    def stages(self, params, meta):
        return layer_stages(self.bound, params["op"], params["applied"], params["branches"],
                            meta)
