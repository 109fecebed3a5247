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

Each composite serializes itself: a class with a ``kind`` registers in :data:`KINDS` when it is
defined, and writes / reads its node with ``to_config`` / ``from_config``; this module knows only
the op leaf. Non-finite numbers (``mstd = inf``) are written as the string ``"inf"``, so the
output is strict JSON (``json.dumps(d, allow_nan=False)`` works).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from augjax.calls import BoundOp
from augjax._plugins.registry import REGISTRY
from augjax._core.spec import OpSpec
from augjax._core.param import show_value
from augjax.errors import AugjaxError, OpNotFoundError, ParamError, PluginLoadError

__all__ = ["CONFIG_VERSION", "KINDS", "Node", "from_dict", "from_json", "json_value", "to_dict",
           "to_json", "value_from_json"]

#: The config format version this augjax writes and reads.
CONFIG_VERSION = 1
#: The deepest nesting of steps a config may have (``random_choice`` inside ``random_choice``
#: ..., 32 levels): tracing 56 nested choices ran out of Python's stack (limit 1000 frames).
MAX_NESTING = 32
#: The deepest nesting of JSON containers (dicts and lists) read; a step level is one or two.
MAX_CONTAINERS = 3 * MAX_NESTING + 8
_VERSION_KEY = "augjax_config"

#: Node type -> the class that reads it (``cls.from_config(node)``); filled as composite classes
#: are defined (``Composite.__init_subclass__``).
KINDS: dict[str, type] = {}


def json_value(v: Any) -> Any:
    """``v`` as JSON-ready data: tuples as lists, infinities as ``"inf"``/``"-inf"``, dicts
    value by value (JSON-ready data comes back as it is)."""
    if isinstance(v, dict):
        return {k: json_value(x) for k, x in v.items()}
    if isinstance(v, tuple | list):
        return [json_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "inf" if v > 0 else "-inf"
    return v


def value_from_json(v: Any) -> Any:
    """The inverse of :func:`json_value` (lists come back as tuples)."""
    if v in ("inf", "-inf"):
        return math.inf if v == "inf" else -math.inf
    if isinstance(v, list):
        return tuple(value_from_json(x) for x in v)
    return v


def encode(step: Any) -> dict[str, Any]:
    """One node, read through the Step protocol (``kind``, ``to_config``): every step writes
    its own fields; an op declaration is written as the op with its defaults."""
    if isinstance(step, OpSpec):  # a declaration, not a step
        step = step.bind()
    kind = getattr(step, "kind", None)
    if hasattr(step, "to_config") and (kind == "op" or kind in KINDS):
        return {"type": kind, **json_value(step.to_config())}
    raise ParamError(f"to_dict: cannot write a {type(step).__name__}; expected an op, a chain, "
                     f"a composite or a policy", op="to_dict", param="step")


def to_dict(step: Any) -> dict[str, Any]:
    """``step`` (an op spec, a bound op, a chain, a composite or a policy) as a JSON-ready dict.
    """
    return {_VERSION_KEY: CONFIG_VERSION, **encode(step)}


def to_json(step: Any, **kwargs: Any) -> str:
    """:func:`to_dict` as a JSON string (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``)."""
    return json.dumps(to_dict(step), allow_nan=False, **kwargs)


def fail(path: str, detail: str) -> ParamError:
    """A config error naming the node's path."""
    return ParamError(f"from_dict: {path}: {detail}", op="from_dict", param=path)


class Node:
    """A node being read: its dict, its path (for messages) and the reader of child nodes."""

    def __init__(self, data: dict[str, Any], path: str,
                 decode: Callable[[Any, str], Any]) -> None:
        self.data, self.path, self._decode = data, path, decode

    def keys(self, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
        """Checks the node's keys (besides ``type``)."""
        node, path = self.data, self.path
        missing = [k for k in required if k not in node]
        unknown = sorted(set(node) - set(required) - set(optional) - {"type"})
        if missing:
            raise fail(path, f"missing key(s) {missing} for a {node['type']!r} node")
        if unknown:
            raise fail(path, f"unknown key(s) {unknown} for a {node['type']!r} node; it takes "
                             f"{sorted(set(required) | set(optional))}")

    def get(self, key: str, default: Any = None) -> Any:
        """A plain value of the node (infinities and lists decoded)."""
        return value_from_json(self.data.get(key, default))

    def child(self, key: str) -> Any:
        """The child node under ``key``, decoded."""
        return self._decode(self.data[key], f"{self.path}.{key}")

    def children(self, key: str) -> list[Any]:
        """The list of child nodes under ``key``, decoded."""
        value = self.data[key]
        if not isinstance(value, list):
            raise fail(f"{self.path}.{key}", f"expects a list, got {type(value).__name__}")
        return [self._decode(s, f"{self.path}.{key}[{i}]") for i, s in enumerate(value)]


def _prefix(err: Exception, path: str) -> None:
    """Puts the node's path in front of ``err``'s message (once), keeping its class."""
    text = str(err)
    if not text.startswith("from_dict:"):
        err.args = (f"from_dict: {path}: {text}", *err.args[1:])
        if isinstance(err, ImportError):  # str() of an ImportError is its .msg
            err.msg = err.args[0]


def _decode(node: Any, path: str) -> Any:
    if not isinstance(node, dict):
        raise fail(path, f"expects a dict node, got {type(node).__name__}")
    if path.count(".") > MAX_NESTING:  # one "." per level: config.steps[0].op...
        raise fail(path, f"nests steps more than {MAX_NESTING} levels deep; augjax reads "
                         f"configs up to that depth (deeper programs exhaust Python's stack "
                         f"when traced)")
    kind = node.get("type")
    try:
        if kind == "op":
            Node(node, path, _decode).keys(("name",), ("params",))
            return _op(node, path)
        if kind in KINDS:
            return KINDS[kind].from_config(Node(node, path, _decode))
    except (OpNotFoundError, ParamError) as err:  # keep the class (and its attributes)
        _prefix(err, path)
        raise
    raise fail(path, f"unknown node type {kind!r}; expected one of {['op', *KINDS]}")


def _op(node: dict[str, Any], path: str) -> BoundOp:
    name, params = node["name"], node.get("params", {})
    if not isinstance(name, str):
        raise fail(f"{path}.name", f"expects an op name, got {name!r}")
    if not isinstance(params, dict):
        raise fail(f"{path}.params", f"expects a dict, got {type(params).__name__}")
    try:
        spec = REGISTRY.get(name)
    except PluginLoadError as err:  # the same class (disabled, incompatible, timed out, ...)
        _prefix(err, path)
        raise
    return BoundOp.create(spec, {k: value_from_json(v) for k, v in params.items()})


def from_dict(config: Any) -> Any:
    """Rebuilds what :func:`to_dict` wrote, validating every node.

    Raises:
        ParamError: a wrong version, node type, key or parameter value (the message names the
            node's path, e.g. ``steps[1].params``).
        OpNotFoundError: an op that is not installed (with close matches).
    """
    if not isinstance(config, dict):
        raise fail("config", f"expects a dict (parsed JSON), got {type(config).__name__}")
    _check_depth(config)
    version = config.get(_VERSION_KEY)
    if version != CONFIG_VERSION:
        got = ("no version key" if _VERSION_KEY not in config else
               f"version {show_value(version)}")
        raise fail("config", f"expects {{'{_VERSION_KEY}': {CONFIG_VERSION}}}, got {got}; this "
                             f"augjax reads config version {CONFIG_VERSION}")
    try:
        return _decode({k: v for k, v in config.items() if k != _VERSION_KEY}, "config")
    except (AugjaxError, MemoryError):
        raise
    except Exception as err:  # noqa: BLE001 - any other failure is the config's, typed
        raise fail("config", f"could not be read ({type(err).__name__}: {err})") from err


def _check_depth(config: Any) -> None:
    """Refuses JSON containers nested deeper than :data:`MAX_CONTAINERS` (walked without
    recursion, so a 100,000-deep config is refused, not a ``RecursionError``)."""
    stack = [(config, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_CONTAINERS:
            raise fail("config", f"nests dicts and lists more than {MAX_CONTAINERS} deep; "
                                 f"augjax reads configs of up to {MAX_NESTING} nested steps")
        items = value.values() if isinstance(value, dict) else value
        stack.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))


def from_json(text: str) -> Any:
    """:func:`from_dict` of a JSON string."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise fail("config", f"expects JSON text, got {type(text).__name__}")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise fail("config", f"not valid JSON: {err}") from None
    except (ValueError, RecursionError) as err:  # an integer of > 4300 digits; deep nesting
        raise fail("config", f"cannot be read as JSON: {type(err).__name__}: {err}") from None
    return from_dict(config)
