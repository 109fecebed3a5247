"""Every registered op, by name: ``augjax.ops.flip``, ``augjax.ops.color_jitter``, ...

The attributes are resolved from the registry on first use (built-in ops and ops of every
installed pack alike); ``dir(augjax.ops)`` lists them. Unknown names raise
:class:`augjax.OpNotFoundError` (also an ``AttributeError``) with close matches.
"""

from __future__ import annotations

from typing import Any

from augjax._plugins.registry import REGISTRY


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return REGISTRY.get(name)


def __dir__() -> list[str]:
    return sorted(n for n in globals() if n.startswith("__")) + REGISTRY.list_ops()
