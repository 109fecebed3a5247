"""The two call forms of a policy factory, and "did you mean" for other libraries' names.

``rand_augment(n=2, m=9)`` builds the policy (for chains and configs);
``rand_augment(images, n=2, m=9)`` builds it and applies it at once: DALI's own call form
(``images`` a ``DataNode`` inside a ``@pipeline_def``), or on arrays with ``key=``. A keyword
torchvision, timm or DALI uses for the same setting (``num_ops``, ``magnitude``,
``monotonic_mag``, ...) gets a :class:`~augjax.ParamError` naming augjax's parameter.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from augjax._core.step import CALL_KEYWORDS
from augjax._core.targets import TARGET_KEYWORDS
from augjax._runtime.dispatch import is_data_node
from augjax.errors import ParamError

__all__ = ["ALIASES", "data_first", "is_batch"]

# Other libraries' keyword -> (augjax parameter, library), per policy.
_TV_GEOMETRY = {"interpolation_mode": ("interpolation", "torchvision")}
_DALI = {"fill_value": ("fill", "DALI"), "interp_type": ("interpolation", "DALI"),
         "excluded": ("exclude", "DALI"), "monotonic_mag": ("increasing", "DALI")}
_TIMM = {"magnitude_std": ("mstd", "timm"), "magnitude_max": ("mmax", "timm"),
         "img_mean": ("fill", "timm"), "increasing": ("increasing", "timm")}

#: Other libraries' names for each policy's parameters: ``{policy: {alias: (param, library)}}``.
ALIASES: dict[str, dict[str, tuple[str, str]]] = {
    "rand_augment": {"num_ops": ("n", "torchvision"), "magnitude": ("m", "torchvision"),
                     "num_layers": ("n", "timm"), **_TV_GEOMETRY, **_DALI, **_TIMM},
    "trivial_augment_wide": {**_TV_GEOMETRY, **_DALI},
    "auto_augment": {"policy_name": ("policy", "DALI"), **_TV_GEOMETRY, **_DALI, **_TIMM},
    "augmix": {"mixture_width": ("width", "torchvision"), "chain_depth": ("depth", "torchvision"),
               "magnitude": ("severity", "timm"), **_TV_GEOMETRY, **_TIMM},
}


def is_batch(x: Any) -> bool:
    """Whether ``x`` is image data (a DALI ``DataNode`` or an array of rank >= 1), not a number
    or a configuration value."""
    if is_data_node(x):
        return True
    return hasattr(x, "shape") and hasattr(x, "dtype") and len(getattr(x, "shape", ())) >= 1


def _unknown(name: str, keyword: str, params: list[str],
             aliases: Mapping[str, tuple[str, str]]) -> ParamError:
    if keyword in aliases:
        target, library = aliases[keyword]
        hint = f"; did you mean {target} ({library} {keyword!r})?"
    else:
        close = difflib.get_close_matches(keyword, params, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return ParamError(f"{name}: unknown parameter {keyword!r}; the policy takes "
                      f"{', '.join(params)}{hint}", op=name, param=keyword)


def data_first(factory: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a policy factory so that it also takes the images first and applies the policy.

    ``factory(images, *config, key=..., seed=..., seeds=..., device=..., layout=...,
    **config)`` is ``factory(*config, **config)(images, key=..., ...)``; without images the
    call keywords are refused with the two forms that take them.
    """
    name = factory.__name__
    params = list(inspect.signature(factory).parameters)
    aliases = ALIASES.get(name, {})

    @functools.wraps(factory)
    def build(*args: Any, **kwargs: Any) -> Any:
        images = None
        if args and is_batch(args[0]):
            images, args = args[0], args[1:]
        call = {k: kwargs.pop(k) for k in list(kwargs) if k in CALL_KEYWORDS | TARGET_KEYWORDS}
        for keyword in kwargs:
            if keyword not in params:
                raise _unknown(name, keyword, params, aliases)
        if images is None and call:
            first = next(iter(call))
            raise ParamError(
                f"{name}: {first!r} is an argument of applying the policy, not of building it; "
                f"pass the images first, {name}(images, {first}=..., ...), or apply the built "
                f"policy, {name}(...)(images, {first}=...)", op=name, param=first)
        policy = factory(*args, **kwargs)
        return policy if images is None else policy(images, **call)

    build.__doc__ = (factory.__doc__ or "").rstrip() + _CALL_DOC.format(name=name)
    return build


_CALL_DOC = """

    Call forms: ``{name}(...)`` builds the policy (for chains and configs);
    ``{name}(images, ...)`` builds it and applies it to ``images``: a ``DataNode`` inside a DALI
    ``@pipeline_def`` (optionally ``seed=`` / ``seeds=`` / ``device=``), or an array batch with
    ``key=``. ``layout="CHW"`` for channels-first data.
"""
