"""The declaration checks of the conformance kit: what an op declares (name, level, inputs,
dtypes, layouts, parameters, magnitudes, sizes) is well formed, and configuring it with bad
parameter values raises ``ParamError`` before anything is traced."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from augjax._core.declaration import LAYOUTS
from augjax._core.spec import API_VERSION
from augjax._runtime.execution.bound import BoundOp
from augjax.errors import ParamError
from augjax.testing._examples import SHAPE

__all__ = ["check_declaration", "check_param_validation"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_DTYPES = ("uint8", "float32")
_LAYOUTS = LAYOUTS
_OMIT = object()  # a parameter left out of the configuration


def check_declaration(op: BoundOp) -> None:
    """The declaration is well formed: name, level, inputs/outputs, dtypes, layouts, channels,
    docstring, API version, and every parameter's default, range, neutral value and magnitude."""
    spec, problems = op.spec, []
    if not _NAME.match(spec.name):
        problems.append(f"name {spec.name!r} does not match {_NAME.pattern}")
    if spec.level not in ("sample", "batch"):
        problems.append(f"level {spec.level!r} is not 'sample' or 'batch'")
    for what, value in (("inputs", spec.inputs), ("outputs", spec.outputs)):
        if tuple(value) not in (("images",), ("images", "labels")):
            problems.append(f"{what} {value!r} is not ('images',) or ('images', 'labels')")
    if "labels" in spec.inputs and spec.level != "batch":
        problems.append("an op that takes labels must be level='batch'")
    if not spec.dtypes or set(spec.dtypes) - set(_DTYPES):
        problems.append(f"dtypes {spec.dtypes!r} is not a non-empty subset of {_DTYPES}")
    if not spec.layouts or set(spec.layouts) - set(_LAYOUTS):
        problems.append(f"layouts {spec.layouts!r} is not a non-empty subset of {_LAYOUTS}")
    if spec.channels is not None and (not spec.channels or any(
            not isinstance(c, int) or c < 1 for c in spec.channels)):
        problems.append(f"channels {spec.channels!r} must be positive ints or None")
    if not spec.doc.strip():
        problems.append("the kernel has no docstring (state the reference semantics and every "
                        "deviation from it)")
    if str(spec.api_version).split(".")[0] != API_VERSION.split(".")[0]:
        problems.append(f"api_version {spec.api_version!r} is not major {API_VERSION}")
    if spec.output_dtype is not None and spec.output_dtype not in _DTYPES:
        problems.append(f"output_dtype {spec.output_dtype!r} is not one of {_DTYPES}")
    for name, p in spec.params.items():
        problems += _param_problems(spec.name, name, p)
    if spec.output_size is not None:
        try:
            size = spec.output_size(SHAPE[1], SHAPE[2], **op.kwargs)
            if (len(size) != 2 or not all(isinstance(s, (int, np.integer)) and s > 0
                                          for s in size)):
                problems.append(f"output_size({SHAPE[1]}, {SHAPE[2]}) returned {size!r}, not "
                                f"two positive ints")
        except Exception as err:  # noqa: BLE001 - reported
            problems.append(f"output_size({SHAPE[1]}, {SHAPE[2]}, **params) raised "
                            f"{type(err).__name__}: {err}")
    for layout in spec.layouts:
        try:
            after = spec.layout_after(layout, op.kwargs)
            if after not in _LAYOUTS:
                problems.append(f"output_layout gives {after!r} for {layout} input")
        except Exception as err:  # noqa: BLE001 - reported
            problems.append(f"output_layout(**params) raised {type(err).__name__}: {err}")
    missing = [k for k, p in spec.params.items() if p.required and k not in op.kwargs]
    if missing:
        problems.append(f"the kit found no valid value for required parameter(s) {missing}; "
                        f"check a bound op instead: check_op(op.bind(...))")
    assert not problems, f"op {spec.name!r}: " + "; ".join(problems)


def _param_problems(op: str, name: str, p: Any) -> list[str]:
    out = []
    where = f"parameter {name!r}"
    if p.low is not None and p.high is not None and p.low > p.high:
        out.append(f"{where}: low {p.low} > high {p.high}")
    if p.kind == "str" and not p.choices:
        out.append(f"{where}: a str parameter needs choices")
    if not p.required:
        try:
            p.check(op, name, p.default)
        except ParamError as err:
            out.append(f"{where}: the default {p.default!r} is invalid ({err})")
    elif p.default is not None:
        out.append(f"{where}: a required parameter's default must be None")
    if p.neutral is not None:
        try:
            p.check(op, name, p.neutral)
        except ParamError as err:
            out.append(f"{where}: the neutral value {p.neutral!r} is outside the range ({err})")
    if p.magnitude is not None:
        try:
            mag = p.magnitude_map
        except (TypeError, ValueError):
            mag = None
        if mag is None:
            out.append(f"{where}: magnitude must be (value at 0, value at the largest) or an "
                       f"augjax.MagnitudeMap, got {p.magnitude!r}")
        elif not p.per_sample:
            out.append(f"{where}: a parameter with a magnitude is set per sample by policies")
        else:
            for level in (0.0, 1.0):
                for negative in (False, True) if mag.signed else (False,):
                    m = mag.value(level, 1.0, negative, 224, 224)
                    value = int(m) if p.kind == "int_or_pair" and float(m).is_integer() else m
                    try:
                        p.check(op, name, value)
                    except ParamError as err:
                        out.append(f"{where}: magnitude value {m!r} is outside the range ({err})")
    return out


def check_param_validation(op: BoundOp) -> None:
    """Out-of-range, NaN, wrongly typed, unknown and missing required parameters raise
    ``ParamError`` when the op is configured (before any tracing)."""
    spec, problems = op.spec, []
    base = dict(op.kwargs)

    def expect_error(label: str, **changes: Any) -> None:
        params = {**base, **changes}
        params = {k: v for k, v in params.items() if v is not _OMIT}
        try:
            spec.bind(**params)
        except ParamError:
            return
        except Exception as err:  # noqa: BLE001 - reported
            problems.append(f"{label} raised {type(err).__name__} instead of ParamError: {err}")
            return
        problems.append(f"{label} was accepted")

    expect_error("an unknown parameter '__kit_unknown__'", __kit_unknown__=1)
    for name, p in spec.params.items():
        if p.kind in ("float", "int", "float_or_pair", "floats", "size", "pair"):
            expect_error(f"{name}='not a number'", **{name: "not a number"})
        if p.kind in ("float", "float_or_pair") and p.low is not None:
            expect_error(f"{name}={p.low - 1} (below low={p.low})", **{name: p.low - 1})
        if p.kind in ("float", "float_or_pair") and p.high is not None:
            expect_error(f"{name}={p.high + 1} (above high={p.high})", **{name: p.high + 1})
        if p.kind == "int" and p.low is not None:
            expect_error(f"{name}={int(p.low) - 1} (below low={p.low})", **{name: int(p.low) - 1})
        if p.kind == "float":
            expect_error(f"{name}=nan", **{name: float("nan")})
        if p.kind == "bool":
            expect_error(f"{name}='yes' (not a bool)", **{name: "yes"})
        if p.kind == "str":
            expect_error(f"{name}='__not_a_choice__'", **{name: "__not_a_choice__"})
        if p.required:
            expect_error(f"omitting required parameter {name!r}", **{name: _OMIT})
    assert not problems, f"op {spec.name!r}: " + "; ".join(problems)
