"""The checks ``op()`` runs on a declaration before it builds the :class:`~augjax.OpSpec`: the
name, level, inputs, dtypes, layouts and parameters; the kernel's signature against them (with
the 1.x -> 2.0 migration in every refusal); ``sample_targets=``; an op declared by its geometry
(:func:`augjax.kernels.geometry.warp`); ``data_files=`` and ``env_vars=``; the options ``op()``
no longer takes. Each failure is an :class:`~augjax.OpDefinitionError` naming the op."""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from augjax._core.param import Param
from augjax._core.step import CALL_KEYWORDS
from augjax._core.targets import TARGET_KEYWORDS
from augjax.errors import OpDefinitionError, ParamError

#: What a 1.x kernel must change, in every message that refuses one.
MIGRATION = (
    "augjax's authoring API 2.0 is params-first; to port the op: (1) drop the key argument: the "
    "kernel is deterministic, kernel(image, params, *, <static params>) (batch level: "
    "kernel(images[, labels], params, *, ...)); (2) read each per-sample value from "
    "params['<name>'] instead of drawing it (per-sample parameters, float_or_pair, int_or_pair "
    "or with a magnitude, are drawn by augjax); (3) move every other random draw (coins, boxes, "
    "noise) into @op(..., sample=fn) with fn(key, meta, params, **config) -> dict of arrays, "
    "which the kernel reads from params; (4) declare api_version='2.0' and require augjax>=0.2. "
    "Before/after: docs/PACKS.md 'Porting a pack from authoring API 1.x to 2.0'; writing a pack: "
    "docs/authoring/pack.md"
)

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_LEVELS = ("sample", "batch")
_IO = (("images",), ("images", "labels"))
DTYPES = ("uint8", "float32")
#: One image's layouts (a batch leads with N): channels last (the default), channels first.
LAYOUTS = (HWC, CHW) = ("HWC", "CHW")
#: One clip's layouts, frames first (DALI's sequences; a batch leads with N).
CLIP_LAYOUTS = (FHWC, FCHW) = ("F" + HWC, "F" + CHW)
#: One 3D volume's layout, depth first (DALI's ``fn.readers.numpy``; a batch leads with N).
VOLUME_LAYOUTS = (DHWC,) = ("D" + HWC,)
#: What a sampler may ask to see (``sample_targets=``).
SAMPLE_TARGETS = ("boxes", "masks")


#: Options ``op()`` took before and takes no more: the reason (in its warning).
_DEPRECATED = {
    "compute_bound": "a CPU performance hint internal to augjax (its catalog sets it with its "
                     "own decorator); it is ignored on a pack's op",
    "random": "whether an op is random follows from its declaration (a sample= hook or a "
              "per-sample parameter); it is ignored",
}


def deprecated_options(name: str, given: Mapping[str, Any]) -> None:
    import warnings

    unknown = sorted(set(given) - set(_DEPRECATED))
    if unknown:
        raise TypeError(f"op() got unexpected keyword argument(s) {unknown} (op {name!r})")
    for option in given:
        warnings.warn(f"op {name!r}: op({option}=...) is deprecated and will be removed: "
                      f"{_DEPRECATED[option]}; drop the argument", DeprecationWarning,
                      stacklevel=3)


def with_kernel_params(kernel, params: dict[str, Param]) -> dict[str, Param]:
    """The op's parameters: its own, then those the kernel of an op declared by its geometry
    brings (:func:`augjax.kernels.geometry.warp`: what the pixels are sampled with) that the
    op does not declare itself."""
    brought = getattr(kernel, "params", None) if hasattr(kernel, "geometry") else None
    if not isinstance(brought, Mapping):
        return params
    return {**params, **{k: p for k, p in brought.items() if k not in params}}


def geometry_matrix(name, kernel, params, level, matrix) -> Callable[..., Any] | None:
    """The matrix of an op declared by its geometry (a kernel made by
    :func:`augjax.kernels.geometry.warp`: it has ``geometry`` and ``matrix``), after checking
    the geometry function's signature; None for any other kernel."""
    geometry = getattr(kernel, "geometry", None)
    if geometry is None or not callable(getattr(kernel, "matrix", None)):
        return None

    def bad(msg: str) -> OpDefinitionError:
        return OpDefinitionError(f"op {name!r}: {msg}")

    if matrix is not None:
        raise bad("declared by its geometry (@warp), which gives its matrix; drop matrix=")
    if level != "sample":
        raise bad("an op declared by its geometry (@warp) is level='sample'")
    static = [k for k, p in params.items() if not p.per_sample]
    missing = [k for k in ("interpolation", "fill") if k not in static]
    if missing:
        raise bad(f"an op declared by its geometry (@warp) needs the static parameters "
                  f"'interpolation' and 'fill' (what the pixels are sampled with); missing "
                  f"{missing}")
    try:
        sig = inspect.signature(geometry)
    except (TypeError, ValueError) as err:
        raise bad(f"cannot read the geometry's signature: {err}") from None
    kinds = [p.kind for p in sig.parameters.values()]
    positional = [p.name for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword = [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY]
    fn = getattr(geometry, "__name__", "geometry")
    if positional != ["params", "meta"] or not set(keyword) <= set(params) or (
            inspect.Parameter.VAR_KEYWORD not in kinds and set(keyword) != set(params)):
        raise bad(f"the geometry must be def {fn}(params, meta, *, <parameters it reads>, **_) "
                  f"-> Warp; got {fn}{sig}")
    return kernel.matrix


def check_sample_targets(name, names, sample, level, params) -> tuple[str, ...]:
    def bad(msg: str) -> OpDefinitionError:
        return OpDefinitionError(f"op {name!r}: sample_targets= {msg}")

    if isinstance(names, str) or not isinstance(names, (tuple, list)):
        raise bad(f"must be a tuple of names from {SAMPLE_TARGETS}, got {names!r}")
    names = tuple(names)
    if not set(names) <= set(SAMPLE_TARGETS) or len(set(names)) != len(names):
        raise bad(f"must be a tuple of distinct names from {SAMPLE_TARGETS}, got {names!r}")
    if names and sample is None:
        raise bad("needs a sample= hook (got sample=None)")
    if names and "targets" in params:
        raise bad("reserves the keyword 'targets' of the sample hook; rename the parameter")
    return tuple(n for n in SAMPLE_TARGETS if n in names)


def check_declaration(name, kernel, params, level, inputs, outputs, dtypes, layouts) -> None:
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
    if not dtypes or set(dtypes) - set(DTYPES):
        raise bad(f"dtypes must be a non-empty subset of {DTYPES}, got {dtypes!r}")
    if not layouts or set(layouts) - set(LAYOUTS):
        raise bad(f"layouts must be a non-empty subset of {LAYOUTS}, got {layouts!r}")
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


def check_signature(name, kernel, params, level, inputs) -> None:
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
    static = [k for k, p in params.items() if not p.per_sample]
    per_sample = [k for k, p in params.items() if p.per_sample]
    expected = (["image"] if level == "sample" else list(inputs)) + ["params"]
    fn = getattr(kernel, "__name__", "kernel")
    want = f"def {fn}({', '.join(expected)}{', *, ' + ', '.join(static) if static else ''})"
    if "key" in positional or "key" in keyword:
        raise OpDefinitionError(
            f"op {name!r}: the kernel takes a key (authoring API 1.x: {fn}{sig}); this op "
            f"becomes {want}"
            f"{f', reading {per_sample} from params' if per_sample else ''}. {MIGRATION}")
    if (len(positional) != len(expected) or positional[-1:] != ["params"]
            or sorted(keyword) != sorted(static)):
        hint = ""
        as_keyword = [k for k in keyword if k in per_sample]
        if as_keyword:
            hint = (f"; {as_keyword} are per-sample (a range, or a magnitude) and come in "
                    f"params['<name>'], not as keywords")
        raise OpDefinitionError(
            f"op {name!r}: the kernel must be {want} for level={level!r} (per-sample "
            f"parameters {per_sample} come in params); got {fn}{sig}{hint}"
        )


# Keywords the call itself takes; a parameter may not use them.
_RESERVED = CALL_KEYWORDS | TARGET_KEYWORDS | {"images", "labels", "image", "params"}


def check_store_inputs(name, kernel, data_files, env_vars) -> tuple[tuple[str, ...],
                                                                      tuple[str, ...]]:
    """``data_files=`` and ``env_vars=``: what the op's code reads besides its code (a table
    loaded at import, a setting read from the environment). Each is a tuple (a list is taken);
    files are paths, a relative one taken from the folder of the kernel's source file, returned
    absolute; variables are names. The program store keys the op's programs by them."""

    def bad(arg: str, msg: str, got: Any) -> OpDefinitionError:
        return OpDefinitionError(f"op {name!r}: {arg}= {msg}, got {got!r}")

    if isinstance(data_files, (str, bytes, os.PathLike)) or not isinstance(
            data_files, (tuple, list)):
        raise bad("data_files", "must be a tuple of file paths (str or os.PathLike)",
                  data_files)
    if isinstance(env_vars, str) or not isinstance(env_vars, (tuple, list)):
        raise bad("env_vars", "must be a tuple of environment variable names", env_vars)
    base = _source_folder(kernel)
    files = []
    for path in data_files:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise bad("data_files", "must hold non-empty paths (str or os.PathLike)", path)
        files.append(os.path.abspath(os.path.join(base, os.fspath(path))))
    for var in env_vars:
        if not isinstance(var, str) or not var or "=" in var or "\0" in var:
            raise bad("env_vars", "must hold non-empty variable names without '='", var)
    return tuple(dict.fromkeys(files)), tuple(dict.fromkeys(env_vars))


def _source_folder(kernel: Any) -> str:
    """The folder of the file a kernel (or the geometry it wraps) is written in; the working
    directory where it has none (``python -c``: such programs are not stored anyway)."""
    fn = getattr(kernel, "__wrapped__", kernel)
    code = getattr(fn, "__code__", None)
    path = getattr(code, "co_filename", "") if code is not None else ""
    return os.path.dirname(os.path.abspath(path)) if path and os.path.isfile(path) \
        else os.getcwd()
