"""OpSpec and the ``@op`` decorator: the public authoring API.

An op is a frozen value: a kernel plus its declared parameters, level, inputs, outputs, dtypes and
layouts. Declaring one registers nothing; the registry finds ops through the ``augjax.ops``
entry points of installed distributions.

Kernel signatures (checked when the op is declared):

- ``level="sample"``: ``kernel(key, image, *, <params>)`` with one image ``(H, W, C)``; augjax
  vmaps it over the batch. Ops declared ``random=False`` drop the ``key`` argument.
- ``level="batch"``: ``kernel(key, images, *, <params>)`` with the whole batch ``(N, H, W, C)``,
  or ``kernel(key, images, labels, *, <params>)`` for ops whose inputs are images and labels;
  they return ``images`` or ``(images, labels)``.

Kernels always see channels-last images; augjax moves CHW data to HWC and back around them.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from augjax._param import Param
from augjax.errors import OpDefinitionError, ParamError

__all__ = ["API_VERSION", "OpSpec", "op"]

#: The authoring-API version this augjax implements. Ops declare the version they were written
#: for; a different major version is refused when the op is loaded.
API_VERSION = "1.0"

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_LEVELS = ("sample", "batch")
_IO = (("images",), ("images", "labels"))
_DTYPES = ("uint8", "float32")
_LAYOUTS = ("HWC", "CHW")


@dataclasses.dataclass(frozen=True, eq=False)
class OpSpec:
    """A declared augmentation. Build one with :func:`op`; call it like a function.

    ``spec(images, key=..., **params)`` runs it on a ``jax.Array`` batch; ``spec(node, **params)``
    inside a ``@pipeline_def`` adds a DALI operator; ``spec.bind(**params)`` configures it
    without data (for chains).
    """

    name: str
    kernel: Callable[..., Any]
    params: Mapping[str, Param]
    level: str = "sample"
    inputs: tuple[str, ...] = ("images",)
    outputs: tuple[str, ...] = ("images",)
    dtypes: tuple[str, ...] = _DTYPES
    layouts: tuple[str, ...] = _LAYOUTS
    channels: tuple[int, ...] | None = None
    random: bool = True
    output_size: Callable[..., tuple[int, int]] | None = None
    output_dtype: str | None = None
    output_layout: Callable[..., str | None] | None = None
    check: Callable[..., None] | None = None
    reference: str = ""
    api_version: str = API_VERSION
    doc: str = ""
    compute_bound: bool = False

    @property
    def summary(self) -> str:
        """The first line of the op's documentation."""
        return self.doc.strip().splitlines()[0] if self.doc.strip() else ""

    def layout_after(self, layout: str, params: Mapping[str, Any]) -> str:
        """The layout of this op's output for an input of ``layout`` and these parameters."""
        if self.output_layout is None:
            return layout
        return self.output_layout(**params) or layout

    @property
    def defaults(self) -> dict[str, Any]:
        """Each parameter's default value."""
        return {k: p.default for k, p in self.params.items()}

    def bind(self, **params: Any) -> Any:
        """Returns this op configured with ``params`` (validated now), ready to apply or chain."""
        from augjax._bound import bound

        return bound(self, params)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        """Applies the op; see :meth:`augjax._bound.BoundOp.__call__` for the call keywords."""
        from augjax._bound import CALL_KEYWORDS, bound

        call = {k: kwargs.pop(k) for k in list(kwargs) if k in CALL_KEYWORDS}
        return bound(self, kwargs)(*inputs, **call)

    def __repr__(self) -> str:
        return f"<augjax op {self.name!r} level={self.level} params={list(self.params)}>"


def op(
    name: str,
    *,
    params: Mapping[str, Param] | None = None,
    level: str = "sample",
    inputs: tuple[str, ...] = ("images",),
    outputs: tuple[str, ...] | None = None,
    dtypes: tuple[str, ...] = _DTYPES,
    layouts: tuple[str, ...] = _LAYOUTS,
    channels: tuple[int, ...] | None = None,
    random: bool = True,
    output_size: Callable[..., tuple[int, int]] | None = None,
    output_dtype: str | None = None,
    output_layout: Callable[..., str | None] | None = None,
    check: Callable[..., None] | None = None,
    reference: str = "",
    api_version: str = API_VERSION,
    compute_bound: bool = False,
) -> Callable[[Callable[..., Any]], OpSpec]:
    """Declares an op: ``@op("name", params={...})`` over its kernel returns an :class:`OpSpec`.

    Args:
        name: the op's name, ``[a-z][a-z0-9_]*``; it must equal its entry point's name.
        params: the user-facing parameters, each a :class:`Param`.
        level: ``"sample"`` (kernel sees one image; augjax vmaps) or ``"batch"``.
        inputs: ``("images",)`` or ``("images", "labels")`` (batch level only).
        outputs: defaults to ``inputs``.
        dtypes: image dtypes accepted (and returned): a subset of ``("uint8", "float32")``.
        layouts: layouts accepted: a subset of ``("HWC", "CHW")``.
        channels: channel counts accepted, or ``None`` for any.
        random: whether the kernel takes a key.
        output_size: ``f(height, width, **params) -> (out_height, out_width)`` for ops that
            change the spatial size; ``None`` means the size is kept.
        output_dtype: the dtype the op returns (e.g. ``"float32"`` for normalize); ``None``
            means the input's dtype.
        output_layout: ``f(**params) -> "HWC" | "CHW" | None`` for ops whose output layout
            depends on a parameter (normalize's CHW output); ``None`` keeps the input layout.
        check: ``f(**params)`` run on the validated parameters when the op is configured, for
            constraints between parameters (``min_area <= max_area``); it raises
            :class:`augjax.ParamError` (or ``ValueError``, which augjax wraps).
        reference: the reference semantics (e.g. "torchvision RandomHorizontalFlip").
        api_version: the authoring-API version the op is written for.
        compute_bound: the kernel does much arithmetic per pixel (HSV, random-order chains). On
            CPU a run of per-sample ops that holds one goes through the batch in cache-sized
            chunks; memory-bound ops (flip, normalize) run faster over the whole batch.

    Raises:
        OpDefinitionError: when the declaration and the kernel disagree.
    """
    params = dict(params or {})
    outputs = inputs if outputs is None else tuple(outputs)

    def decorate(kernel: Callable[..., Any]) -> OpSpec:
        _check_declaration(name, kernel, params, level, tuple(inputs), outputs, dtypes, layouts)
        _check_signature(name, kernel, params, level, tuple(inputs), random)
        return OpSpec(
            name=name,
            kernel=kernel,
            params=MappingProxyType(params),
            level=level,
            inputs=tuple(inputs),
            outputs=outputs,
            dtypes=tuple(dtypes),
            layouts=tuple(layouts),
            channels=None if channels is None else tuple(channels),
            random=random,
            output_size=output_size,
            output_dtype=output_dtype,
            output_layout=output_layout,
            check=check,
            reference=reference,
            api_version=api_version,
            doc=inspect.getdoc(kernel) or "",
            compute_bound=bool(compute_bound),
        )

    return decorate


def _check_declaration(name, kernel, params, level, inputs, outputs, dtypes, layouts) -> None:
    def bad(msg: str) -> OpDefinitionError:
        return OpDefinitionError(f"op {name!r}: {msg}")

    if not isinstance(name, str) or not _NAME.match(name):
        raise bad(f"the name must match {_NAME.pattern}, got {name!r}")
    if not callable(kernel):
        raise bad(f"the kernel must be callable, got {type(kernel).__name__}")
    if level not in _LEVELS:
        raise bad(f"level must be one of {_LEVELS}, got {level!r}")
    if inputs not in _IO or outputs not in _IO:
        raise bad(f"inputs and outputs must each be one of {_IO}, got {inputs!r} -> {outputs!r}")
    if "labels" in inputs and level != "batch":
        raise bad("ops that take labels must be level='batch'")
    if not dtypes or set(dtypes) - set(_DTYPES):
        raise bad(f"dtypes must be a non-empty subset of {_DTYPES}, got {dtypes!r}")
    if not layouts or set(layouts) - set(_LAYOUTS):
        raise bad(f"layouts must be a non-empty subset of {_LAYOUTS}, got {layouts!r}")
    for pname, p in params.items():
        if not isinstance(p, Param):
            raise bad(f"params[{pname!r}] must be an augjax.Param, got {type(p).__name__}")
        if pname in _RESERVED:
            raise bad(f"the parameter name {pname!r} is reserved for the call ({sorted(_RESERVED)})")
        if not p.required:
            try:
                p.check(name, pname, p.default)  # the default itself must be valid
            except ParamError as err:
                raise bad(f"invalid default: {err}") from None


def _check_signature(name, kernel, params, level, inputs, random) -> None:
    try:
        sig = inspect.signature(kernel)
    except (TypeError, ValueError) as err:
        raise OpDefinitionError(f"op {name!r}: cannot read the kernel's signature: {err}") from None
    positional = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    keyword = [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY]
    n_expected = (1 if random else 0) + len(inputs)
    expected = (["key"] if random else []) + (
        ["image"] if level == "sample" else list(inputs)
    )
    if len(positional) != n_expected or sorted(keyword) != sorted(params):
        raise OpDefinitionError(
            f"op {name!r}: the kernel must be def {getattr(kernel, '__name__', 'kernel')}"
            f"({', '.join(expected)}, *, {', '.join(params)}) for level={level!r}, "
            f"random={random}; got {sig}"
        )


# Keywords the call itself takes; a parameter may not use them.
_RESERVED = frozenset({"key", "seeds", "seed", "device", "layout", "images", "labels", "image"})
