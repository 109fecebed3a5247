"""``augjax show``: one op across its magnitude range on one image, on arrays (no DALI)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from augjax._core.magnitude import MagnitudeMap
from augjax._demo import DemoInputError, require_pillow
from augjax._demo.params import _NUMERIC, _of_kind, demo_params, fmt
from augjax._demo.render import display_batch, render_strip, save_png
from augjax._demo.sources import bundled_dir, load_rgb

__all__ = ["ShowResult", "Sweep", "plan_sweep", "run_show"]


@dataclasses.dataclass
class Sweep:
    """The parameter a strip varies and its values (``param`` None: the op once, as is)."""

    param: str | None
    values: list[Any]
    how: str

    @property
    def labels(self) -> list[str]:
        """The values as shown: a fixed range ``(v, v)`` as ``v``."""
        return [fmt(v[0]) if isinstance(v, tuple) and len(set(v)) == 1 else fmt(v)
                for v in self.values]


@dataclasses.dataclass
class ShowResult:
    """What ``augjax show`` wrote: the PNG, the sweep, the strip's size, and per image (the
    original first) its top-left corner in the strip and its pixels."""

    path: Path
    sweep: Sweep
    size: tuple[int, int]
    boxes: list[tuple[int, int]]
    cells: list[np.ndarray]


def _linspace(lo: float, hi: float, steps: int, kind: str) -> list[float]:
    values = [lo + (hi - lo) * i / (steps - 1) for i in range(steps)] if steps > 1 else [hi]
    if kind in ("int", "size"):
        values = list(dict.fromkeys(int(round(v)) for v in values))
    return values


def plan_sweep(spec: Any, *, param: str | None, magnitudes: Sequence[float] | None,
               steps: int) -> Sweep:
    """Which parameter to vary and through which values.

    The parameter is ``param``, else the first one that declares a magnitude range, else the
    first numeric one (probabilities ``p`` last). Its values are ``magnitudes`` when given, else
    ``steps`` evenly spaced values across the declared magnitude range (from the value at
    magnitude 0, its neutral value, to the largest), else from its neutral value to its upper
    bound when both are declared. Values from a range are exact settings (a range parameter
    gets ``(v, v)``); ``magnitudes`` are passed as given. With none of these (no range to
    sweep), the op is shown once (``param`` None) with the parameters ``augjax demo`` gives it.

    Raises:
        DemoInputError: unknown or non-numeric ``param``; ``magnitudes`` for an op without a
            numeric parameter.
    """
    numeric = [k for k, p in spec.params.items() if p.kind in _NUMERIC and k != "num_classes"]
    if param is not None:
        if param not in spec.params:
            close = difflib.get_close_matches(param, list(spec.params), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise DemoInputError(
                f"argument --param: {spec.name} has no parameter {param!r}{hint} "
                f"(it takes {', '.join(spec.params) or 'no parameters'})"
            )
        if param not in numeric:
            raise DemoInputError(
                f"argument --param: {spec.name}'s parameter {param!r} is not numeric "
                f"({spec.params[param].describe_range()})"
            )
        chosen = param
    else:
        with_mag = [k for k in numeric if spec.params[k].magnitude is not None]
        ordered = with_mag + sorted((k for k in numeric if k not in with_mag),
                                    key=lambda k: k == "p")
        chosen = ordered[0] if ordered else None
    if chosen is None:
        if magnitudes:
            raise DemoInputError(
                f"argument --magnitudes: {spec.name} has no numeric parameter to vary"
            )
        return Sweep(None, [], "the op has no numeric parameter; shown once")
    p = spec.params[chosen]
    if magnitudes:
        return Sweep(chosen, [_of_kind(p, float(v)) for v in magnitudes], "values given")
    if p.magnitude is None and _is_number(p.neutral) and p.high is not None:
        values = [_fixed(p, v) for v in _linspace(float(p.neutral), float(p.high), steps, p.kind)]
        return Sweep(chosen, values, f"neutral {fmt(p.neutral)} to the largest {fmt(p.high)}")
    if p.magnitude is None:
        return Sweep(None, [], f"{chosen} declares no magnitude range (--magnitudes V ... "
                               f"sweeps it); shown once with the demo's parameters")
    lo, hi = _magnitude_ends(p.magnitude)
    values = [_fixed(p, v) for v in _linspace(float(lo), float(hi), steps, p.kind)]
    return Sweep(chosen, values, f"magnitude range {fmt(lo)}..{fmt(hi)}")


def _magnitude_ends(magnitude: Any) -> tuple[float, float]:
    """The values at strength 0 and full strength of a ``(start, end)`` pair or a
    :class:`augjax.MagnitudeMap` (its positive side; a map scaled per image side is read at
    side 1, as a fraction)."""
    if isinstance(magnitude, MagnitudeMap):
        return (magnitude.value(0, 1, False, 1, 1), magnitude.value(1, 1, False, 1, 1))
    lo, hi = magnitude
    return lo, hi


def _fixed(p: Any, value: float) -> Any:
    """``value`` as an exact setting: a range parameter gets the range ``(value, value)``, whose
    uniform draw is ``value`` itself (a single number may mean ``[-v, v]`` to an op)."""
    if p.kind in ("float_or_pair", "pair"):
        return (float(value), float(value))
    return _of_kind(p, value)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _prepare(spec: Any, image: np.ndarray) -> tuple[np.ndarray, str, list[str]]:
    """The image as a batch the op accepts (dtype, channels, layout), and the layout name."""
    notes = []
    x = image[None]
    if spec.channels is not None and 3 not in spec.channels and 1 in spec.channels:
        x = np.round(x @ np.array([0.2989, 0.587, 0.114]))[..., None].astype(np.uint8)
        notes.append("input converted to gray")
    if "uint8" not in spec.dtypes:
        x = x.astype(np.float32) / 255.0
        notes.append("input converted to float32 in [0, 1]")
    layout = "HWC"
    if "HWC" not in spec.layouts:
        x, layout = x.transpose(0, 3, 1, 2), "CHW"
    return np.ascontiguousarray(x), layout, notes


def run_show(name: str, *, param: str | None = None, magnitudes: Sequence[float] | None = None,
             steps: int = 5, image: str | Path | None = None, out: str | Path | None = None,
             size: int = 128, seed: int = 0) -> ShowResult:
    """Writes the strip PNG of op ``name`` (the original, then the op for each value of the
    swept parameter, all with the key ``jax.random.key(seed)``).

    Raises:
        DemoInputError, AugjaxError: unknown op, parameter or image; invalid values.
    """
    import jax

    import augjax

    Image, _, _ = require_pillow()
    spec = augjax.get_op(name)
    pil = load_rgb(image if image is not None else bundled_dir() / "01-astronaut.jpg")
    sweep = plan_sweep(spec, param=param, magnitudes=magnitudes, steps=steps)
    scale = size / max(pil.size)
    pil = pil.resize((max(1, round(pil.width * scale)), max(1, round(pil.height * scale))),
                     Image.Resampling.LANCZOS)
    base = np.asarray(pil, dtype=np.uint8)
    x, layout, notes = _prepare(spec, base)
    labels, targets = None, {}
    instances = "masks" in spec.sample_targets  # copy_paste: a partner and its instances
    if "labels" in spec.inputs or instances:
        partner = load_rgb(bundled_dir() / "02-chelsea.jpg").resize(pil.size,
                                                                    Image.Resampling.LANCZOS)
        px, _, _ = _prepare(spec, np.asarray(partner, dtype=np.uint8))
        x = np.concatenate([x, px])
    if "labels" in spec.inputs:
        labels = np.arange(2, dtype=np.int32)
    if instances:
        from augjax._demo.pipeline import instance_masks

        targets["masks"] = np.stack([instance_masks(pil.height, pil.width)] * 2)
        notes.append("masks=: a disc and a box of the partner photo")
    given, _ = demo_params(spec, num_classes=2, size=size)
    # Only what must be given; every other parameter keeps its default, so that the strip shows
    # the effect of the swept one alone. An op shown once gets all of the demo's parameters.
    params = {k: v for k, v in given.items() if spec.params[k].required or k == "num_classes"
              or sweep.param is None}
    if "p" in spec.params and sweep.param != "p":
        params["p"] = 1.0
    key = jax.random.key(seed)
    cells, texts = [base], ["original"]
    shown_as = sweep.labels
    for value in sweep.values or [None]:
        call = dict(params)
        if sweep.param is not None:
            call[sweep.param] = value
        bound = spec.bind(**call)
        result = bound(x, labels, key=key, layout=layout, **targets) if labels is not None \
            else bound(x, key=key, layout=layout, **targets)
        out_x = result["images"] if isinstance(result, dict) else \
            result[0] if isinstance(result, tuple) else result
        shown, how = display_batch(np.asarray(out_x), spec.layout_after(layout, bound.kwargs))
        cells.append(shown[0])
        texts.append(f"{sweep.param}={shown_as[len(texts) - 1]}" if sweep.param else spec.name)
        notes += [how] if how and how not in notes else []
    fixed = {k: v for k, v in params.items() if k != sweep.param}
    header = (f"{spec.name}: {sweep.param + ' ' + sweep.how if sweep.param else sweep.how}"
              + (f"; {', '.join(f'{k}={fmt(v)}' for k, v in fixed.items())}" if fixed else "")
              + f"; key {seed}" + (f"; {'; '.join(notes)}" if notes else ""))
    strip, boxes = render_strip(cells, texts, cell=max(size, 96), header=header)
    path = Path(out) if out is not None else Path(f"augjax-show-{spec.name}.png")
    try:
        save_png(strip, path)
    except OSError as err:
        raise DemoInputError(f"argument --out: cannot write {str(path)!r}: {err}") from None
    return ShowResult(path, sweep, (strip.width, strip.height), boxes, cells)
