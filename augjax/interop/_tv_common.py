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


def _per_type(t: Any, fill: dict, state: dict, nearest: str) -> Any:
    """The images' value of a per-type ``fill`` as torchvision looks it up
    (``_get_fill``: the input's type, else ``"others"``, else none: 0); a masks' value that is
    not 0 is the call's ``mask_fill=`` in augjax, said by a warning (``state["warnings"]``,
    given when the conversion ends)."""
    by_name = {getattr(k, "__name__", k): v for k, v in fill.items()}
    image = [by_name[k] for k in ("Image", "Tensor") if k in by_name]
    if len(image) == 2 and repr(image[0]) != repr(image[1]):
        raise _fail(t, f"fill={fill!r} gives tv_tensors.Image and torch.Tensor inputs other "
                    "values: keep one", argument="fill", nearest=nearest)
    mask = by_name.get("Mask", by_name.get("others"))
    if mask not in (None, 0, 0.0) and not (isinstance(mask, (list, tuple)) and not any(mask)):
        state.setdefault("warnings", []).append(
            f"from_torchvision: {_name(t)}: fill={fill!r} fills masks with {mask!r}; augjax fills "
            f"masks with the call's mask_fill= (default 0): call the chain with "
            f"mask_fill={mask!r}")
    return image[0] if image else by_name.get("others")


def _fill(t: Any, state: dict, *, nearest: str) -> Any:
    fill = t.fill
    if isinstance(fill, dict):
        fill = _per_type(t, fill, state, nearest)
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
