"""The helpers :func:`augjax.from_torchvision`'s converters share
(:mod:`augjax.interop._tv_steps`, :mod:`augjax.interop._tv_dtypes`): the refusal that names the
nearest op, the interpolation, the dtype the pipeline is in, fills and levels in it."""

from __future__ import annotations

from typing import Any

from augjax.errors import UnsupportedTransformError


def _name(t: Any) -> str:
    return type(t).__name__


def _fail(t: Any, message: str, *, argument: str | None = None,
          nearest: str | None = None) -> UnsupportedTransformError:
    name = _name(t)
    near = f"; nearest augjax op: {nearest}" if nearest else ""
    return UnsupportedTransformError(f"from_torchvision: {name}: {message}{near}",
                                     transform=name, argument=argument, nearest=nearest)


def _mode(t: Any, *, nearest: str, allowed: tuple[str, ...] = ("nearest", "bilinear")) -> str:
    """``t.interpolation``'s name, refused unless in ``allowed`` (the op's modes: the warps'
    two; ``resize`` and ``random_resized_crop`` take ``"bicubic"`` too)."""
    value = getattr(t.interpolation, "value", t.interpolation)
    if value not in allowed:
        names = ", ".join(map(repr, allowed[:-1])) + f" and {allowed[-1]!r}"
        raise _fail(t, f"interpolation={value!r} is not available (augjax has {names})",
                    argument="interpolation", nearest=nearest)
    return value


def _fill(t: Any, state: dict, *, nearest: str) -> Any:
    fill = t.fill
    if isinstance(fill, dict):
        values = set(map(repr, fill.values()))
        if len(values) != 1:
            raise _fail(t, f"a per-type fill {fill!r} is not available", argument="fill",
                        nearest=nearest)
        fill = next(iter(fill.values()))
    if fill is None:
        return 0.0
    values = [float(fill)] if isinstance(fill, (int, float)) else [float(v) for v in fill]
    scale = 255.0 if any(values) and _dtype(t, state, "fill", fill, nearest) == "uint8" else 1.0
    if isinstance(fill, (int, float)):
        return values[0] / scale
    return tuple(v / scale for v in values)


def _dtype(t: Any, state: dict, argument: str, value: Any, nearest: str) -> str:
    """The pipeline's dtype where ``t``'s ``argument`` is read in the image's own values
    (0..255 on uint8, 0..1 on float); refused where the converter cannot know it."""
    if state["dtype"] is None:
        raise _fail(t, f"{argument}={value!r} is in the image's own values (0..255 for uint8, "
                    "0..1 for float) and the pipeline's dtype is not known here: pass "
                    "from_torchvision(..., dtype='uint8') or dtype='float32', or put a "
                    "ToDtype(..., scale=True) or PILToTensor before it", argument=argument,
                    nearest=nearest)
    if state.get("unscaled"):  # ToDtype(float32, scale=False) of uint8: 0..255 in floats
        return "uint8"
    return state["dtype"]


def _no_center(t: Any, nearest: str) -> None:
    if getattr(t, "center", None) is not None:
        raise _fail(t, f"center={t.center!r} is not available (augjax turns about the image "
                    "centre)", argument="center", nearest=nearest)


def _size(size: Any) -> Any:
    size = tuple(int(s) for s in size) if isinstance(size, (list, tuple)) else int(size)
    return size[0] if isinstance(size, tuple) and len(size) == 1 else size


def _p(step: Any, p: float) -> Any:
    from augjax.chain import random_apply

    return step if p >= 1.0 else random_apply(step, p=float(p))


def _is_v1(t: Any) -> bool:
    """A transform of ``torchvision.transforms`` (v1), not of ``torchvision.transforms.v2``."""
    module = type(t).__module__ or ""
    return not module.startswith("torchvision.transforms.v2")
