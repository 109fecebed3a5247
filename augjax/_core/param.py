"""Param: one declared parameter of an op (kind, default, valid range, neutral value, magnitude map)."""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from augjax.errors import ParamError

__all__ = ["F32_MAX", "F32_TINY", "I32_MAX", "Param", "KINDS", "PER_SAMPLE_KINDS",
           "kernel_number", "per_sample_value", "show_value", "suggest"]

#: The kernels compute in float32 (and index in int32, JAX's default without x64): a value must
#: be a finite float32 there. The largest finite float32, its smallest normal number (below it
#: a value is a subnormal that GPUs flush to zero, or 0 outright), and the largest int32.
F32_MAX = 3.4028234663852886e38
F32_TINY = 1.1754943508222875e-38
I32_MAX = 2**31 - 1

#: The kinds a parameter can have, and what a value of that kind looks like.
KINDS = {
    "float": "a finite number",
    "int": "an integer",
    "bool": "True or False",
    "str": "one of the listed choices",
    "pair": "a pair (low, high) of finite numbers with low <= high",
    "float_or_pair": "a finite number or a pair (low, high) with low <= high",
    "int_or_pair": "an integer or a pair (low, high) of integers with low <= high",
    "floats": "a sequence of finite numbers",
    "size": "an int or a pair of ints (height, width)",
}

#: Kinds whose value augjax draws per sample (a pair is a range; a number is used as is).
PER_SAMPLE_KINDS = ("float_or_pair", "int_or_pair")

_FACTOR_DOC = "factor (1 = unchanged); a number is used as is, a pair (lo, hi) is drawn per sample"


@dataclasses.dataclass(frozen=True)
class Param:
    """A declared op parameter.

    Args:
        default: the value used when the caller gives none.
        kind: one of :data:`KINDS`; inferred from ``default`` when omitted.
        low: smallest valid value (each element, for pairs and sequences); ``None`` = unbounded.
        high: largest valid value; ``None`` = unbounded.
        low_exclusive: ``low`` itself is not valid (``low=0, low_exclusive=True``: > 0); shown
            as ``(0, ...`` by ``augjax info``.
        high_exclusive: ``high`` itself is not valid.
        neutral: the value for which the op is the identity (``None`` if there is none).
        choices: the allowed values of a ``str`` parameter.
        optional: whether ``None`` is an allowed value.
        required: the caller must give a value (the default, ``None``, is only a placeholder).
        magnitude: how policies (RandAugment and friends) set this parameter from a magnitude:
            ``(value at magnitude 0, value at the largest magnitude)``, or a full
            :class:`augjax.MagnitudeMap`. Policies read it (:attr:`magnitude_map`); reference
            tables only override what a reference does differently. ``augjax show`` sweeps
            this range, ``augjax demo`` shows its end, and the conformance kit tests away from
            ``neutral`` with it.
        signed: whether policies negate the magnitude-derived value with probability 1/2
            (reflected about ``neutral``).
        validate: an extra check ``value -> value`` that raises ``ValueError`` with a message;
            its return value replaces the given one (normalisation).
        doc: one line for ``augjax info``.
        aliases: names other libraries give this parameter, each mapped to the library, e.g.
            ``{"probability": "timm"}``: a call that uses one gets "did you mean ..." (accepted
            as a mapping or a sequence of names; stored as ``((alias, library), ...)``).
        levels: the value is in uint8 levels (0..255) whatever the image dtype (a threshold,
            an addition); the kernel receives it in the image's scale: as given for uint8,
            times 1/255 for float images (:meth:`in_scale`). ``op.sample`` / ``op.apply`` and
            policies keep the levels.
        per_channel: a ``floats`` parameter (the kind it implies) with one value or one per
            channel (a mean, a std); the kernel receives one value per channel of the images,
            and a call whose images have another channel count is refused.
        usual: ``(low, high)``, where a value usually lies: a value outside it is valid but
            warns (:class:`augjax.AugjaxWarning`, naming the op, the parameter, the range and
            ``doc``): a mean of 0..255 levels given to a 0..1 ``normalize``.
    """

    default: Any
    kind: str | None = None
    low: float | None = None
    high: float | None = None
    neutral: Any = None
    choices: tuple[Any, ...] | None = None
    optional: bool = False
    required: bool = False
    magnitude: Any = None
    signed: bool = False
    validate: Callable[[Any], Any] | None = dataclasses.field(default=None, compare=False)
    doc: str = ""
    low_exclusive: bool = False
    high_exclusive: bool = False
    aliases: Any = ()
    levels: bool = False
    per_channel: bool = False
    usual: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.kind is None:
            object.__setattr__(self, "kind",
                               "floats" if self.per_channel else _infer_kind(self.default))
        if self.kind not in KINDS:
            raise ValueError(f"Param kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        if self.per_channel and self.kind != "floats":
            raise ValueError(f"Param per_channel=True needs kind 'floats', got {self.kind!r}")
        if self.levels and self.kind not in ("float", "int", "float_or_pair", "int_or_pair"):
            raise ValueError(f"Param levels=True needs a number (or a pair), got kind "
                             f"{self.kind!r}")
        object.__setattr__(self, "aliases", _aliases(self.aliases))
        for flag, bound in (("low_exclusive", self.low), ("high_exclusive", self.high)):
            if getattr(self, flag) and bound is None:
                raise ValueError(f"Param {flag}=True needs a finite {flag.split('_')[0]}")
        from augjax.errors import ParamError

        if self.low is not None and self.high is not None and self.low > self.high:
            raise ParamError(f"Param(low={self.low!r}, high={self.high!r}): low is above high; "
                             f"the valid range is [low, high] (swap them?)")
        if self.magnitude is not None and self.kind in ("bool", "str", "size"):
            what = (f"choices {self.choices!r}" if self.kind == "str" else f"kind {self.kind!r}")
            raise ParamError(
                f"Param({self.default!r}, magnitude={self.magnitude!r}): a magnitude maps a "
                f"policy's strength to a number, but this parameter is {what}; drop "
                f"magnitude=, or make the parameter a number (kind='float' or "
                f"'float_or_pair') that the kernel reads from params")

    @classmethod
    def probability(cls, default: float = 0.5,
                    doc: str = "probability that a sample is changed") -> Param:
        """A probability in [0, 1] whose 0 leaves every sample as it is (the ``p`` of a random
        flip, grayscale or perspective): ``Param(default, low=0, high=1, neutral=0)``."""
        return cls(default, low=0.0, high=1.0, neutral=0.0, doc=doc)

    @classmethod
    def factor(cls, doc: str = _FACTOR_DOC, *, aliases: Any = ()) -> Param:
        """An enhance factor (PIL ``ImageEnhance``, torchvision ``adjust_brightness`` /
        ``contrast`` / ``saturation`` / ``sharpness``): 1 leaves the image unchanged; a number
        is used as is, a pair drawn per sample (default ``(0.6, 1.4)``); policies set it from
        torchvision RandAugment's 31-bin map ``1 + linspace(0, 0.9)``, reflected around 1
        (:data:`augjax._core.magnitude.ENHANCE`)."""
        from augjax._core.magnitude import ENHANCE

        return cls((0.6, 1.4), kind="float_or_pair", low=0.0, neutral=1.0, magnitude=ENHANCE,
                   signed=True, doc=doc, aliases=aliases)

    def in_scale(self, value: Any, dtype: Any) -> Any:
        """``value`` as the kernel receives it for images of ``dtype``: for a ``levels``
        parameter, times 1/255 on float images (as given on integer ones)."""
        import numpy as np

        if not self.levels or value is None or np.issubdtype(np.dtype(dtype), np.integer):
            return value
        return value * (1.0 / 255.0)

    def for_channels(self, op: str, name: str, value: Any, channels: int) -> Any:
        """A ``per_channel`` parameter's ``value`` as one value per channel.

        Raises:
            InputError: neither one value nor ``channels`` values.
        """
        if not self.per_channel or value is None or len(value) == channels:
            return value
        if len(value) == 1:
            return tuple(value) * channels
        from augjax.errors import InputError

        raise InputError(
            f"{op}: parameter '{name}' has {len(value)} values but the images have {channels} "
            f"channels (give one value, or one per channel)", op=op, argument="images")

    @property
    def interval(self) -> str:
        """The numeric range in interval notation: ``[0, 1]``, ``(0, inf)``, ``(-inf, inf)``."""
        lo = "(-inf" if self.low is None else ("(" if self.low_exclusive else "[") + _fmt(self.low)
        hi = "inf)" if self.high is None else _fmt(self.high) + (
            ")" if self.high_exclusive else "]")
        return f"{lo}, {hi}"

    @property
    def magnitude_map(self) -> Any:
        """The declared magnitude as a :class:`augjax.MagnitudeMap` (None without one): a pair
        ``(start, end)`` is the linear map between them; for ``signed`` parameters the negation
        reflects about ``neutral`` (``neutral +- |value - neutral|``)."""
        from augjax._core.magnitude import MagnitudeMap

        m = self.magnitude
        if m is None or isinstance(m, MagnitudeMap):
            return m
        start, end = (float(v) for v in m)
        if self.signed:
            centre = float(self.neutral or 0.0)
            return MagnitudeMap(start - centre, end - centre, signed=True, plus=centre)
        return MagnitudeMap(start, end)

    @property
    def per_sample(self) -> bool:
        """Whether augjax hands the kernel this parameter per sample, in ``params``: ranges
        (``float_or_pair``/``int_or_pair``) drawn per sample, and parameters with a magnitude
        map (a policy sets their value per sample)."""
        return self.kind in PER_SAMPLE_KINDS or self.magnitude is not None

    def describe_range(self) -> str:
        """The valid values, in words, for messages and ``augjax info``."""
        if self.kind == "str":
            text = "one of " + ", ".join(repr(c) for c in self.choices or ())
        elif self.kind == "bool":
            text = "True or False"
        else:
            text = f"{KINDS[self.kind]} in {self.interval}"
        return text + (" or None" if self.optional else "")

    def check(self, op: str, name: str, value: Any) -> Any:
        """Validates ``value`` and returns it normalised (tuples for sequences, floats for numbers).

        Raises:
            ParamError: naming the op, the parameter, what was expected and what came.
        """

        def fail(detail: str = "") -> ParamError:
            msg = (f"{op}: parameter '{name}' expects {self.describe_range()}, got "
                   f"{show_value(value)}")
            return ParamError(msg + (f" ({detail})" if detail else ""), op=op, param=name)

        if value is None:
            if self.optional:
                return None
            if self.required:
                raise ParamError(
                    f"{op}: parameter '{name}' is required ({self.describe_range()})",
                    op=op,
                    param=name,
                )
            raise fail()
        try:
            out = _CHECKS[self.kind](self, value)
        except (TypeError, ValueError, OverflowError) as err:
            raise fail(str(err)) from None
        try:
            if self.validate is not None:
                out = self.validate(out)
            _kernel_values(self.kind, out)  # what the kernel gets must be a float32
        except (TypeError, ValueError, OverflowError) as err:
            raise fail(str(err)) from None
        if self.usual is not None:
            self._warn_unusual(op, name, out)
        return out

    def _warn_unusual(self, op: str, name: str, value: Any) -> None:
        """Warns when a number of ``value`` lies outside :attr:`usual` (valid, but likely a
        mistake: the declaration's ``doc`` says what is expected)."""
        lo, hi = self.usual
        values = value if isinstance(value, (tuple, list)) else (value,)
        if all(lo <= v <= hi for v in values if isinstance(v, numbers.Real)):
            return
        import os
        import sys
        import warnings

        from augjax.errors import AugjaxWarning

        package, frame, level = os.path.dirname(os.path.dirname(__file__)), sys._getframe(), 1
        while frame is not None and frame.f_code.co_filename.startswith(package):
            frame, level = frame.f_back, level + 1  # the warning points at the user's line
        warnings.warn(f"{op}: parameter '{name}' is {show_value(value)}, outside its usual range "
                      f"[{_fmt(float(lo))}, {_fmt(float(hi))}] ({self.doc}); it runs as given",
                      AugjaxWarning, stacklevel=level)


def suggest(params: Mapping[str, Param], name: str) -> str:
    """A "did you mean ..." hint for the unknown parameter ``name``: the parameters that declare
    it as an alias (another library's name for them), else close spellings; "" if none."""
    owners = [(pname, lib) for pname, p in params.items() for alias, lib in p.aliases
              if alias == name]
    if owners:
        libs = sorted({lib for _, lib in owners if lib})
        where = f"{'/'.join(libs)} {name!r}" if libs else f"alias {name!r}"
        return f"did you mean {', '.join(p for p, _ in owners)} ({where})?"
    close = difflib.get_close_matches(name, list(params), n=3)
    return f"did you mean {', '.join(map(repr, close))}?" if close else ""


def _aliases(value: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(value, str):
        value = (value,)
    items = value.items() if isinstance(value, Mapping) else (
        (v, "") if isinstance(v, str) else tuple(v) for v in value)
    out = tuple((str(a), str(lib)) for a, lib in items)
    if any(not a.isidentifier() for a, _ in out):
        raise ValueError(f"Param aliases must be parameter names, got {value!r}")
    return out


def _fmt(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _infer_kind(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, numbers.Integral):
        return "int"
    if isinstance(default, numbers.Real):
        return "float"
    if isinstance(default, str):
        return "str"
    if isinstance(default, Sequence) and len(default) == 2:
        return "pair"
    raise ValueError(f"cannot infer the kind of a Param with default {default!r}; pass kind=")


def show_value(v: Any, limit: int = 60) -> str:
    """``repr(v)`` for a message, cut in the middle when longer than ``limit`` characters (a
    400-digit integer from a config)."""
    text = repr(v)
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-limit // 4:]} ({len(text)} characters)"


def kernel_number(v: Any, integral: bool = False) -> float:
    """``v`` as a float, checked to be what the kernels can compute with: finite, and a normal
    float32 (or 0) for numbers; within int32 for integers.

    Raises:
        TypeError: not a real number (bools are not numbers here).
        ValueError: not finite, or not finite (too large) or not representable (too small)
            in float32; an integer outside int32.
    """
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{type(v).__name__} is not a number")
    x = _finite(v, integral)
    if not integral:
        _float32(x)
    return x


def _finite(v: Any, integral: bool) -> float:
    """``float(v)``, finite (int32 for integers)."""
    try:
        x = float(v)
    except OverflowError:
        raise ValueError("too large: not even finite as a float64") from None
    if not math.isfinite(x):
        raise ValueError("not finite")
    if integral and abs(v) > I32_MAX:
        raise ValueError(f"outside int32, the kernels' integer type (|value| <= {I32_MAX})")
    return x


def _float32(x: float) -> None:
    if abs(x) > F32_MAX:
        raise ValueError(f"not finite in float32, the kernels' dtype (|value| <= {F32_MAX:.7g})")
    if 0.0 < abs(x) < F32_TINY:
        raise ValueError(f"too small for float32, the kernels' dtype: it would compute as 0 (use "
                         f"0, or a value of {F32_TINY:.7g} or more)")


def _kernel_values(kind: str, value: Any) -> None:
    """Checks a parameter's normalised value (after ``validate``) against float32: each number
    of a float kind, and a range's width (a value is drawn as ``low + u * (high - low)``)."""
    if kind not in ("float", "float_or_pair", "pair", "floats") or value is None:
        return
    items = value if isinstance(value, tuple) else (value,)
    for x in items:
        if isinstance(x, numbers.Real) and not isinstance(x, bool):
            _float32(float(x))
    if kind in ("pair", "float_or_pair") and isinstance(value, tuple) and len(value) == 2 and \
            float(value[1]) - float(value[0]) > F32_MAX:
        raise ValueError(f"the range's width high - low is not finite in float32, the kernels' "
                         f"dtype (<= {F32_MAX:.7g})")


def _number(p: Param, v: Any, integral: bool = False) -> float | int:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{type(v).__name__} is not a number")
    if integral and not isinstance(v, numbers.Integral):
        if not math.isfinite(float(v)) or not float(v).is_integer():
            raise TypeError("not an integer")
    _finite(v, integral)
    if p.low is not None and (v <= p.low if p.low_exclusive else v < p.low):
        raise ValueError(f"must be > {_fmt(p.low)}" if p.low_exclusive else
                         f"below {_fmt(p.low)}")
    if p.high is not None and (v >= p.high if p.high_exclusive else v > p.high):
        raise ValueError(f"must be < {_fmt(p.high)}" if p.high_exclusive else
                         f"above {_fmt(p.high)}")
    return int(v) if integral else float(v)


def _pair(p: Param, v: Any) -> tuple[float, float]:
    if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or len(v) != 2:
        raise TypeError("not a pair")
    lo, hi = (_number(p, x) for x in v)
    if lo > hi:
        raise ValueError("low > high")
    return (lo, hi)


def _int_pair(p: Param, v: Any) -> tuple[int, int]:
    lo, hi = _pair(p, v)
    if not (float(lo).is_integer() and float(hi).is_integer()):
        raise TypeError("not a pair of integers")
    return (int(lo), int(hi))


def per_sample_value(param: Param, value: Any, u: Any) -> Any:
    """The float32 value of a per-sample parameter for one uniform draw ``u`` in [0, 1):
    ``low + u * (high - low)`` for a float range, ``min(low + floor(u * (high - low + 1)), high)``
    (a whole number) for an integer range, the value itself otherwise. ``u`` may be an array
    (one draw per sample)."""
    import jax.numpy as jnp

    if isinstance(value, tuple):
        lo, hi = value
        if param.kind == "int_or_pair":
            k = jnp.floor(u * jnp.float32(hi - lo + 1))
            return jnp.minimum(jnp.float32(lo) + k, jnp.float32(hi))
        return jnp.float32(lo) + u * jnp.float32(hi - lo)
    return jnp.broadcast_to(jnp.asarray(value, jnp.float32), jnp.shape(u))


def _choice(p: Param, v: Any) -> Any:
    if v not in (p.choices or ()):
        raise ValueError("not a listed choice")
    return v


def _floats(p: Param, v: Any) -> tuple[float, ...]:
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return (_number(p, v),)
    if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or not v:
        raise TypeError("not a non-empty sequence of numbers")
    return tuple(_number(p, x) for x in v)


def _size(p: Param, v: Any) -> tuple[int, int]:
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        v = (v, v)
    if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or len(v) != 2:
        raise TypeError("not an int or a pair of ints")
    return tuple(_number(p, x, integral=True) for x in v)  # type: ignore[return-value]


def _bool(p: Param, v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{type(v).__name__} is not a bool")
    return v


_CHECKS: dict[str, Callable[[Param, Any], Any]] = {
    "float": lambda p, v: _number(p, v),
    "int": lambda p, v: _number(p, v, integral=True),
    "bool": _bool,
    "str": _choice,
    "pair": _pair,
    "float_or_pair": lambda p, v: _pair(p, v) if isinstance(v, Sequence) else _number(p, v),
    "int_or_pair": lambda p, v: _int_pair(p, v) if isinstance(v, Sequence) else
    _number(p, v, integral=True),
    "floats": _floats,
    "size": _size,
}
