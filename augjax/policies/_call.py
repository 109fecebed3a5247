"""The two call forms of a policy factory, and "did you mean" for other libraries' names.

``rand_augment(n=2, m=9)`` builds the policy (for chains and configs);
``rand_augment(images, n=2, m=9)`` builds it and applies it at once: DALI's own call form
(``images`` a ``DataNode`` inside a ``@pipeline_def``), or on arrays with ``key=``. A keyword
torchvision, timm or DALI uses for the same setting (``num_ops``, ``magnitude``,
``monotonic_mag``, ...) gets a :class:`~augjax.ParamError` naming augjax's parameter (the
aliases its field's declaration lists).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from augjax._core.param import suggest
from augjax._core.step import CALL_KEYWORDS
from augjax._core.targets import TARGET_KEYWORDS
from augjax._runtime.execution.dispatch import is_data_node
from augjax.errors import ParamError

__all__ = ["data_first", "is_batch"]


def is_batch(x: Any) -> bool:
    """Whether ``x`` is image data (a DALI ``DataNode`` or an array of rank >= 1), not a number
    or a configuration value."""
    if is_data_node(x):
        return True
    return hasattr(x, "shape") and hasattr(x, "dtype") and len(getattr(x, "shape", ())) >= 1


def data_first(name: str, policy: type) -> Callable[..., Any]:
    """The factory ``name`` of the policy class ``policy``: builds it, and also takes the
    images first and applies it.

    ``factory(images, *config, key=..., seed=..., seeds=..., device=..., layout=...,
    **config)`` is ``policy(*config, **config)(images, key=..., ...)``; without images the
    call keywords are refused with the two forms that take them.
    """
    signature = inspect.signature(policy)
    params = list(signature.parameters)

    def build(*args: Any, **kwargs: Any) -> Any:
        images = None
        if args and is_batch(args[0]):
            images, args = args[0], args[1:]
        call = {k: kwargs.pop(k) for k in list(kwargs) if k in CALL_KEYWORDS | TARGET_KEYWORDS}
        for keyword in kwargs:
            if keyword not in params:
                hint = suggest(policy.config_params(), keyword)
                raise ParamError(f"{name}: unknown parameter {keyword!r}; the policy takes "
                                 f"{', '.join(params)}" + (f"; {hint}" if hint else ""),
                                 op=name, param=keyword)
        if images is None and call:
            first = next(iter(call))
            raise ParamError(
                f"{name}: {first!r} is an argument of applying the policy, not of building it; "
                f"pass the images first, {name}(images, {first}=..., ...), or apply the built "
                f"policy, {name}(...)(images, {first}=...)", op=name, param=first)
        built = policy(*args, **kwargs)
        return built if images is None else built(images, **call)

    build.__name__ = build.__qualname__ = name
    build.__module__ = policy.__module__
    build.policy = policy  # the class (its declared fields)
    build.__signature__ = signature.replace(return_annotation=policy.__name__)
    build.__doc__ = (policy.__doc__ or "").rstrip() + _CALL_DOC.format(name=name)
    return build


_CALL_DOC = """

    Call forms: ``{name}(...)`` builds the policy (for chains and configs);
    ``{name}(images, ...)`` builds it and applies it to ``images``: a ``DataNode`` inside a DALI
    ``@pipeline_def`` (optionally ``seed=`` / ``seeds=`` / ``device=``), or an array batch with
    ``key=``. ``layout="CHW"`` for channels-first data.
"""
