"""What ``augjax info <policy>`` and ``augjax list --policies`` show: each policy's defaults,
magnitude scale and op space (every entry's augjax op, parameter and magnitude map).

The description is computed from a built policy, so it is exactly what runs: options such as
``style="timm"`` or ``policy="v0"`` change the op space and the scale shown.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from augjax._core.magnitude import formula
from augjax.errors import OpNotFoundError
from augjax.policies._augmix import augmix
from augjax.policies._autoaugment import auto_augment
from augjax.policies._randaugment import rand_augment, trivial_augment_wide

__all__ = ["FACTORIES", "describe_policy", "formula", "policy_summaries"]

#: Every policy factory, by name (the name ``augjax info`` and configs use).
FACTORIES: dict[str, Callable[..., Any]] = {
    "rand_augment": rand_augment,
    "trivial_augment_wide": trivial_augment_wide,
    "auto_augment": auto_augment,
    "augmix": augmix,
}

#: The option that selects each policy's reference (its choices are the field's declared ones).
_VARIANTS = {"rand_augment": "style", "trivial_augment_wide": "style", "auto_augment": "policy",
             "augmix": "style"}


def _variant(name: str) -> tuple[str, tuple[str, ...]]:
    option = _VARIANTS[name]
    return option, FACTORIES[name].policy.config_params()[option].choices


#: The image size at which maps relative to the image side are evaluated for display.
SIDE = 224


def _g(x: float) -> str:
    return f"{x:g}"


def _defaults(factory: Callable[..., Any]) -> dict[str, Any]:
    return {name: p.default for name, p in inspect.signature(factory).parameters.items()}


def _summary(factory: Callable[..., Any]) -> str:
    """The docstring's first paragraph, on one line."""
    return " ".join((inspect.getdoc(factory) or "").split("\n\n")[0].split())


def _scale(policy: Any) -> dict[str, Any]:
    lv = policy.levels
    return {"denominator": lv.denominator, "max_level": lv.limit, "discrete": lv.discrete,
            "text": f"t = level / {_g(lv.denominator)}, levels clipped to [0, {_g(lv.limit)}]"
                    + ("" if lv.discrete else " (continuous)")}


def _entry(entry: Any, levels: Any, at: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": entry.name, "op": entry.op, "param": entry.param,
                           "fixed": dict(entry.fixed), "geometric": entry.geometric,
                           "magnitude": None}
    m = entry.magnitude
    if m is not None:
        def value(level: float) -> float:
            return m.value(level, levels.denominator, False, SIDE, SIDE)

        out["magnitude"] = {
            "map": dataclasses.asdict(m),
            "formula": formula(m),
            "at_level_0": value(0.0),
            "at_max_level": value(levels.limit),
            "at_m": None if at is None else value(min(at, levels.limit)),
        }
    return out


def describe_policy(name: str, **options: Any) -> dict[str, Any]:
    """Everything ``augjax info <policy>`` shows, for the policy built with ``options``.

    Raises:
        OpNotFoundError: ``name`` is not a policy.
        ParamError: an option is invalid (as building the policy raises it).
    """
    factory = FACTORIES.get(name)
    if factory is None:
        raise OpNotFoundError(f"augjax: no policy named {name!r}; policies: "
                              f"{', '.join(FACTORIES)}", name=name)
    policy = factory(**options)
    at = getattr(policy, "m", None) if name == "rand_augment" else None
    if name == "augmix" and policy.style == "timm":
        at = float(policy.severity)
    variant, choices = _variant(name)
    out = {
        "name": name,
        "kind": "policy",
        "summary": _summary(factory),
        "doc": inspect.getdoc(factory) or "",
        "signature": f"{name}{inspect.signature(factory)}",
        "defaults": _defaults(factory),
        "options": dict(options),
        "config": policy.to_dict(),
        "variant": {"option": variant, "choices": list(choices)},
        "scale": _scale(policy),
        "image_side": SIDE,
        "ops": [_entry(e, policy.levels, at) for e in policy.space],
        "call": (f"augjax.{name}(images, ...) in a DALI pipeline, or "
                 f"augjax.{name}(images, key=key, ...) on arrays; "
                 f"augjax.{name}(...) alone builds the policy for chains"),
    }
    if name == "auto_augment":
        out["subpolicies"] = [[list(op) for op in sub] for sub in policy.subpolicies]
    return out


def policy_summaries() -> list[dict[str, Any]]:
    """Name, one-line summary and variants of every policy (``augjax list --policies``)."""
    return [{"name": name, "summary": _summary(f), "variant": _variant(name)[0],
             "choices": list(_variant(name)[1])} for name, f in FACTORIES.items()]
