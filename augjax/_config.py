"""Configs: any op, chain, composite or policy as a JSON-ready dict, and back.

``to_dict(step)`` gives ``{"augjax_config": 1, "type": ..., ...}``; ``from_dict(d)`` validates
the whole tree on load (version, node types, keys, op names, parameter values) and raises a
typed error whose message names the path of the bad node (``steps[2].op``). A round trip is
exact: ``from_dict(to_dict(x)) == x``, so the rebuilt step reuses ``x``'s compiled program.
Node types::

    {"type": "op", "name": "flip", "params": {"p": 0.5, ...}}       every parameter is written
    {"type": "compose", "steps": [...], "start": 0}
    {"type": "random_apply", "op": {...}, "p": 0.5}
    {"type": "random_choice", "ops": [...], "weights": null}
    {"type": "some_of", "ops": [...], "n": [1, 2]}
    {"type": "rand_augment" | "trivial_augment_wide" | "auto_augment" | "augmix", <fields>}

Non-finite numbers (``mstd = inf``) are written as the string ``"inf"``, so the output is strict
JSON (``json.dumps(d, allow_nan=False)`` works).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from augjax._bound import BoundOp
from augjax.errors import OpNotFoundError, ParamError, PluginLoadError

__all__ = ["CONFIG_VERSION", "from_dict", "from_json", "to_dict", "to_json"]

#: The config format version this augjax writes and reads.
CONFIG_VERSION = 1
_VERSION_KEY = "augjax_config"


def _json_value(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_json_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "inf" if v > 0 else "-inf"
    return v


def _policies() -> dict[str, type]:
    from augjax.policies import AugMix, AutoAugment, RandAugment, TrivialAugmentWide

    return {c.kind: c for c in (RandAugment, TrivialAugmentWide, AutoAugment, AugMix)}


def _encode(step: Any) -> dict[str, Any]:
    from augjax.chain import Chain, RandomApply, RandomChoice, SomeOf
    from augjax.policies import Policy

    if isinstance(step, BoundOp):
        return {"type": "op", "name": step.name,
                "params": {k: _json_value(v) for k, v in step.params}}
    if isinstance(step, Chain):
        return {"type": "compose", "steps": [_encode(s) for s in step.steps],
                "start": step.start}
    if isinstance(step, RandomApply):
        return {"type": "random_apply", "op": _encode(step.op), "p": step.p}
    if isinstance(step, RandomChoice):
        return {"type": "random_choice", "ops": [_encode(s) for s in step.ops],
                "weights": _json_value(step.weights)}
    if isinstance(step, SomeOf):
        return {"type": "some_of", "ops": [_encode(s) for s in step.ops], "n": list(step.n)}
    if isinstance(step, Policy):
        fields = {f.name: _json_value(getattr(step, f.name)) for f in dataclasses.fields(step)}
        return {"type": step.kind, **fields}
    if hasattr(step, "spec") and hasattr(step.spec, "bind"):
        return _encode(step.spec.bind())
    raise ParamError(f"to_dict: cannot write a {type(step).__name__}; expected an op, a chain, "
                     f"a composite or a policy", op="to_dict", param="step")


def to_dict(step: Any) -> dict[str, Any]:
    """``step`` (an op spec, a bound op, a chain, a composite or a policy) as a JSON-ready dict.
    """
    from augjax._spec import OpSpec

    if isinstance(step, OpSpec):
        step = step.bind()
    return {_VERSION_KEY: CONFIG_VERSION, **_encode(step)}


def to_json(step: Any, **kwargs: Any) -> str:
    """:func:`to_dict` as a JSON string (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``)."""
    return json.dumps(to_dict(step), allow_nan=False, **kwargs)


def _fail(path: str, detail: str) -> ParamError:
    return ParamError(f"from_dict: {path}: {detail}", op="from_dict", param=path)


def _keys(node: dict[str, Any], path: str, required: tuple[str, ...],
          optional: tuple[str, ...] = ()) -> None:
    missing = [k for k in required if k not in node]
    unknown = sorted(set(node) - set(required) - set(optional) - {"type"})
    if missing:
        raise _fail(path, f"missing key(s) {missing} for a {node['type']!r} node")
    if unknown:
        raise _fail(path, f"unknown key(s) {unknown} for a {node['type']!r} node; it takes "
                          f"{sorted(set(required) | set(optional))}")


def _list(node: dict[str, Any], key: str, path: str) -> list[Any]:
    value = node[key]
    if not isinstance(value, list):
        raise _fail(f"{path}.{key}", f"expects a list, got {type(value).__name__}")
    return value


def _from_json_value(v: Any) -> Any:
    if v in ("inf", "-inf"):
        return math.inf if v == "inf" else -math.inf
    if isinstance(v, list):
        return tuple(_from_json_value(x) for x in v)
    return v


def _decode(node: Any, path: str) -> Any:
    from augjax import chain

    if not isinstance(node, dict):
        raise _fail(path, f"expects a dict node, got {type(node).__name__}")
    kind = node.get("type")
    policies = _policies()
    try:
        if kind == "op":
            _keys(node, path, ("name",), ("params",))
            return _op(node, path)
        if kind == "compose":
            _keys(node, path, ("steps",), ("start",))
            steps = [_decode(s, f"{path}.steps[{i}]")
                     for i, s in enumerate(_list(node, "steps", path))]
            return chain.compose(*steps, start=node.get("start", 0))
        if kind == "random_apply":
            _keys(node, path, ("op",), ("p",))
            return chain.random_apply(_decode(node["op"], f"{path}.op"), node.get("p", 0.5))
        if kind in ("random_choice", "some_of"):
            extra = ("weights",) if kind == "random_choice" else ("n",)
            _keys(node, path, ("ops",), extra)
            ops = [_decode(s, f"{path}.ops[{i}]") for i, s in enumerate(_list(node, "ops", path))]
            if kind == "random_choice":
                return chain.random_choice(ops, _from_json_value(node.get("weights")))
            return chain.some_of(ops, _from_json_value(node.get("n", 1)))
        if kind in policies:
            cls = policies[kind]
            names = [f.name for f in dataclasses.fields(cls)]
            _keys(node, path, (), tuple(names))
            return cls(**{k: _from_json_value(v) for k, v in node.items() if k != "type"})
    except OpNotFoundError as err:
        if str(err).startswith("from_dict:"):
            raise
        raise OpNotFoundError(f"from_dict: {path}: {err}", name=err.name,
                              suggestions=err.suggestions) from None
    except ParamError as err:
        if str(err).startswith("from_dict:"):
            raise
        raise ParamError(f"from_dict: {path}: {err}", op=err.op, param=err.param) from None
    types = ["op", "compose", "random_apply", "random_choice", "some_of", *policies]
    raise _fail(path, f"unknown node type {kind!r}; expected one of {types}")


def _op(node: dict[str, Any], path: str) -> BoundOp:
    import augjax

    name, params = node["name"], node.get("params", {})
    if not isinstance(name, str):
        raise _fail(f"{path}.name", f"expects an op name, got {name!r}")
    if not isinstance(params, dict):
        raise _fail(f"{path}.params", f"expects a dict, got {type(params).__name__}")
    try:
        spec = augjax.get_op(name)
    except PluginLoadError as err:
        raise PluginLoadError(f"from_dict: {path}: {err}", op=err.op,
                              distribution=err.distribution, version=err.version,
                              entry_point=err.entry_point) from err
    return BoundOp.create(spec, {k: _from_json_value(v) for k, v in params.items()})


def from_dict(config: Any) -> Any:
    """Rebuilds what :func:`to_dict` wrote, validating every node.

    Raises:
        ParamError: a wrong version, node type, key or parameter value (the message names the
            node's path, e.g. ``steps[1].params``).
        OpNotFoundError: an op that is not installed (with close matches).
    """
    if not isinstance(config, dict):
        raise _fail("config", f"expects a dict (parsed JSON), got {type(config).__name__}")
    version = config.get(_VERSION_KEY)
    if version != CONFIG_VERSION:
        got = "no version key" if _VERSION_KEY not in config else f"version {version!r}"
        raise _fail("config", f"expects {{'{_VERSION_KEY}': {CONFIG_VERSION}}}, got {got}; this "
                              f"augjax reads config version {CONFIG_VERSION}")
    return _decode({k: v for k, v in config.items() if k != _VERSION_KEY}, "config")


def from_json(text: str) -> Any:
    """:func:`from_dict` of a JSON string."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise _fail("config", f"not valid JSON: {err}") from None
    return from_dict(config)
