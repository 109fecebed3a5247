"""Which ops a demo shows and with which parameters.

Each op is shown with demo-worthy parameters from :data:`DEMO_PARAMS` (strong enough to see,
random enough to vary between draws). An op that is not in the table is shown at its defaults,
except that a parameter whose default is its neutral value (the op would do nothing) and that
declares a magnitude range is set to the top of that range. Required parameters get a value from
the context (``num_classes``) or from their declaration. Every departure (a table value the op
rejects, a parameter the op does not have) is recorded as a note, never dropped silently.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

from augjax._demo import DemoInputError
from augjax._plugins.registry import REGISTRY
from augjax.errors import AugjaxError

__all__ = ["DEMO_PARAMS", "Row", "Step", "demo_params", "fmt", "jsonable", "parse_rows"]

#: Demo parameters per op name. Values the op does not accept fall back to its defaults (noted).
DEMO_PARAMS: dict[str, dict[str, Any]] = {
    # geometry
    "flip": {"p": 0.5, "horizontal": True, "vertical": True},
    "rotate": {"degrees": 30.0, "interpolation": "bilinear"},
    "affine": {"degrees": 15.0, "translate": (0.1, 0.1), "scale": (0.8, 1.2), "shear": 10.0,
               "interpolation": "bilinear"},
    "shear_x": {"interpolation": "bilinear"},
    "shear_y": {"interpolation": "bilinear"},
    "perspective": {"distortion_scale": 0.5, "p": 1.0},
    # crop (a required size is 3/4 of the image)
    "random_resized_crop": {"scale": (0.25, 1.0)},
    "random_crop": {"padding": 8.0},
    "resize": {"size": (48, 96)},  # squeezed: visibly a resize at any demo size
    "pad": {"padding": 16.0, "pad_mode": "reflect"},
    # colour
    "color_jitter": {"brightness": 0.4, "contrast": 0.4, "saturation": 0.6, "hue": 0.1},
    "brightness": {"factor": (0.5, 1.5)},
    "contrast": {"factor": (0.4, 1.6)},
    "saturation": {"factor": (0.0, 2.0)},
    "hue": {"factor": (-0.3, 0.3)},
    "random_grayscale": {"p": 0.5},
    # tone
    "solarize": {"threshold": 128.0},
    "solarize_add": {"addition": 96.0},
    "posterize": {"bits": 3},
    "sharpness": {"factor": 4.0},
    "gamma": {"gamma": (0.5, 2.0)},
    # erasing
    "random_erasing": {"p": 1.0},
    "cutout": {"count": 2},
    # mixing (num_classes comes from the reader's labels)
    "mixup": {"alpha": 1.0},
    "cutmix": {"alpha": 1.0},
    "mixup_cutmix": {"mixup_alpha": 0.8, "cutmix_alpha": 1.0},
    # augjax-contrib, where the defaults are too faint at demo sizes
    "pixel_dropout": {"prob": 0.05},
    "median_blur": {"kernel_size": 5},
    "box_blur": {"kernel_size": 5},
    "grid_mask": {"tile": (24.0, 40.0)},
}

_NUMERIC = ("float", "int", "float_or_pair", "pair", "floats", "size")


@dataclasses.dataclass
class Step:
    """One op of a row, with the parameters the demo gives it (the rest are its defaults)."""

    name: str
    spec: Any = None
    bound: Any = None
    given: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Row:
    """One row of the grid: an op, or a chain ``a+b`` of ops applied in order."""

    name: str
    steps: list[Step]
    error: str = ""
    seconds: float = 0.0  # the row's own run (rows run a few at a time)


def parse_rows(ops: str) -> list[Row]:
    """The rows ``--ops`` asks for: comma-separated fnmatch patterns over the registered ops
    (each match one row, in natural order, without repeats) and chains ``a+b+c`` of exact names.

    Raises:
        DemoInputError: an item matches no registered op, or the argument is empty.
    """
    items = [item.strip() for item in ops.split(",")]
    if not any(items):
        raise DemoInputError("argument --ops: expected op names or patterns, got an empty string")
    rows: list[Row] = []
    seen: set[str] = set()
    for item in items:
        if not item:
            continue
        if "+" in item:
            names = [n.strip() for n in item.split("+")]
            for n in names:
                _check_known(n, item)
            key = "+".join(names)
            if key not in seen:
                seen.add(key)
                rows.append(Row(key, [Step(n) for n in names]))
            continue
        names = REGISTRY.list_ops(item)
        if not names:
            raise DemoInputError(f"argument --ops: {_no_match(item)}")
        for n in names:
            if n not in seen:
                seen.add(n)
                rows.append(Row(n, [Step(n)]))
    return rows


def _check_known(name: str, item: str) -> None:
    if not name or not REGISTRY.list_ops(name):
        raise DemoInputError(f"argument --ops: in the chain {item!r}, {_no_match(name)}")


def _no_match(pattern: str) -> str:
    known = REGISTRY.list_ops()
    close = difflib.get_close_matches(pattern, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return f"no registered op matches {pattern!r}{hint} (see `augjax list`)"


def _fallback(pname: str, p: Any, spec: Any, num_classes: int, size: int) -> tuple[Any, str]:
    """A value for a required parameter: from the context or the declaration."""
    if pname == "num_classes":
        return num_classes, f"num_classes={num_classes} from the reader's labels"
    if p.magnitude is not None and p.kind in _NUMERIC:
        return _of_kind(p, p.magnitude[1]), f"{pname} set to the top of its magnitude range"
    if p.kind == "str" and p.choices:
        return p.choices[0], f"{pname} set to its first choice"
    if p.kind == "bool":
        return True, f"{pname} set to True"
    if p.kind == "size":
        return (size * 3 // 4, size * 3 // 4), f"{pname} set to 3/4 of the image size"
    if p.kind in _NUMERIC and p.low is not None and p.high is not None:
        mid = (p.low + p.high) / 2
        return _of_kind(p, mid), f"{pname} set to the middle of its range"
    raise DemoInputError(
        f"{spec.name}: parameter {pname!r} is required and the demo has no value for it "
        f"(add it to augjax._demo.params.DEMO_PARAMS)"
    )


def _of_kind(p: Any, value: float) -> Any:
    """``value`` as a value of the parameter's kind."""
    if p.kind == "int":
        return int(round(value))
    if p.kind == "pair":
        return (float(value), float(value))
    if p.kind == "floats":
        return (float(value),)
    if p.kind == "size":
        return int(round(value))
    return float(value)


def demo_params(spec: Any, *, num_classes: int, size: int) -> tuple[dict[str, Any], list[str]]:
    """The parameters the demo gives ``spec`` and the notes on how they were chosen.

    Raises:
        DemoInputError: a required parameter has no demo value.
    """
    table = DEMO_PARAMS.get(spec.name)
    given: dict[str, Any] = {}
    notes: list[str] = []
    for pname, value in (table or {}).items():
        if pname not in spec.params:
            notes.append(f"demo value {pname}={value!r} not used: {spec.name} has no parameter "
                         f"{pname!r}")
            continue
        try:
            spec.params[pname].check(spec.name, pname, value)
        except AugjaxError as err:
            notes.append(f"demo value {pname}={value!r} not used ({err}); the default is used")
            continue
        given[pname] = value
    for pname, p in spec.params.items():
        if pname in given:
            continue
        if p.required or (pname == "num_classes" and "labels" in spec.inputs):
            given[pname], note = _fallback(pname, p, spec, num_classes, size)
            notes.append(note)
        elif (table is None and p.magnitude is not None and p.neutral is not None
              and p.default == p.neutral and p.kind in _NUMERIC):
            given[pname] = _of_kind(p, p.magnitude[1])
            notes.append(f"{pname} set to the top of its magnitude range (the default is neutral)")
    return given, notes


def fmt(value: Any) -> str:
    """A parameter value, short: floats with 3 significant digits, tuples without spaces."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(fmt(v) for v in value) + ")"
    return str(value)


def jsonable(value: Any) -> Any:
    """Parameter values for JSON: tuples as lists, mappings recursively, others as strings."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    return repr(value)
