"""timm's augmentation config strings: ``augjax.from_timm("rand-m9-mstd0.5-inc1")``.

The grammar and defaults are timm 1.0's (``timm/data/auto_augment.py``): sections separated by
``-``, the first names the family, each other is a key and a number (``m9``, ``mstd0.5``) or,
for RandAugment, ``t<name>`` (an op set).

- ``rand-...``: ``m`` level (default 10), ``n`` layers (2), ``p`` layer probability (0.5),
  ``mstd`` noise (``> 100`` means uniform), ``mmax`` clip (10), ``inc`` increasing set (0),
  ``t`` set: ``weights`` (``_RAND_WEIGHTED_0``), ``3aw`` (``_RAND_WEIGHTED_3A``), ``3a``.
- ``augmix-...``: ``m`` severity (3), ``w`` width (3), ``d`` depth (-1), ``a`` alpha (1),
  ``b`` blended (0), ``mstd`` (default inf: uniform).
- ``v0``, ``v0r``, ``original``, ``originalr``, ``3a`` (AutoAugment), with ``mstd``.

timm scales magnitudes 0..10 (``m9`` is 90% of the largest magnitude); torchvision and DALI
index 31 bins. ``hparams`` are timm's: ``translate_const`` (250), ``translate_pct`` (0.45),
``img_mean`` (fill in uint8 levels, (128, 128, 128); the policy's ``fill`` is ``img_mean / 255``,
a fraction of the range as augjax's geometric ops take it), ``interpolation``, ``magnitude_std``, ``magnitude_max``
(these two win over the string, as timm's ``setdefault`` does). ``img_size`` and ``mean``
reproduce what timm's ``transforms_imagenet_train`` passes: ``translate_const =
int(0.45 * min(img_size))``, ``img_mean = round(255 * mean)`` and, for AugMix,
``translate_pct = 0.3``.

Geometric ops sample as PIL does (``convention="pil"``: fractional shifts, edge samples
clamped, outside points filled, uint8 bilinear truncated) and move the content the way timm's
do. Deviations from timm (which runs PIL ops on one image at a time): geometric ops sample
with ``interpolation`` ("bilinear" by default; timm picks bilinear or bicubic at random per op,
and augjax has no bicubic), and bilinear uint8 results may be one level off PIL's (float32
versus PIL's float64 before truncation; :func:`augjax.kernels.warp_affine_pil`); the enhance
ops follow torchvision's kernels (PIL may differ by one level); GaussianBlur is a true Gaussian
with a 13-tap kernel (PIL approximates it with box blurs).
"""

from __future__ import annotations

import math
import re
from typing import Any

import augjax.policies.tables as T
from augjax.errors import ParamError
from augjax.policies._augmix import augmix
from augjax.policies._autoaugment import auto_augment
from augjax.policies._randaugment import rand_augment

__all__ = ["from_timm"]

_AA = ("v0", "v0r", "original", "originalr", "3a")
_HPARAMS = ("translate_const", "translate_pct", "img_mean", "interpolation", "magnitude_std",
            "magnitude_max")


def _fail(config: str, detail: str) -> ParamError:
    return ParamError(f"from_timm: cannot read {config!r}: {detail}", op="from_timm",
                      param="config")


def _sections(config: str, keys: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    parts = config.split("-")[1:]
    i = 0
    while i < len(parts):
        part = parts[i]
        i += 1
        if part.startswith("t") and "t" in keys:
            out["t"] = part[1:]
            continue
        if part in keys and i < len(parts) and parts[i].isdigit():  # "d-1": a negative value
            out[part] = "-" + parts[i]
            i += 1
            continue
        pieces = re.split(r"(\d.*)", part)
        if len(pieces) < 2 or not pieces[0]:
            raise _fail(config, f"section {part!r} is not a key and a number "
                                f"(keys: {', '.join(keys)})")
        key, value = pieces[:2]
        if key not in keys:
            raise _fail(config, f"unknown section {part!r} (keys: {', '.join(keys)})")
        out[key] = value
    return out


def _number(config: str, key: str, value: str, kind=float) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise _fail(config, f"section {key!r} expects a number, got {value!r}") from None


def _geometry(hp: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"translate_const": hp["translate_const"],
                           "translate_pct": hp["translate_pct"]}
    # timm's img_mean is in uint8 levels; augjax fills are fractions of the range.
    out["fill"] = tuple(float(v) / 255.0 for v in hp["img_mean"])
    if "interpolation" in hp:
        out["interpolation"] = hp["interpolation"]
    return out


def from_timm(config: str, hparams: dict[str, Any] | None = None, *,
              img_size: int | tuple[int, int] | None = None,
              mean: tuple[float, ...] | None = None):
    """The augjax policy for a timm ``auto_augment`` config string.

    Args:
        config: e.g. ``"rand-m9-mstd0.5-inc1"``, ``"augmix-m5-w4-d2"``, ``"original-mstd0.5"``,
            ``"3a"``, ``"v0"``.
        hparams: timm's hparams (see the module docstring); defaults are timm's.
        img_size: the training image size, as timm's ``transforms_imagenet_train`` uses it.
        mean: the normalisation mean (fractions), giving the fill as timm does.

    Raises:
        ParamError: an unknown family or section, or a bad value.
    """
    if not isinstance(config, str) or not config:
        raise ParamError(f"from_timm: argument 'config' expects a timm config string such as "
                         f"'rand-m9-mstd0.5-inc1', got {config!r}", op="from_timm",
                         param="config")
    hp: dict[str, Any] = dict(T.TIMM_HPARAMS)
    if img_size is not None:
        side = min(img_size) if isinstance(img_size, (tuple, list)) else img_size
        hp["translate_const"] = int(side * 0.45)
    if mean is not None:
        hp["img_mean"] = tuple(min(255, round(255 * x)) for x in mean)
    family = config.split("-")[0]
    if family == "augmix" and img_size is not None:
        hp["translate_pct"] = 0.3
    unknown = sorted(set(hparams or {}) - set(_HPARAMS))
    if unknown:
        raise ParamError(f"from_timm: unknown hparams {unknown}; timm's are {list(_HPARAMS)}",
                         op="from_timm", param="hparams")
    hp.update(hparams or {})
    if family == "rand":
        return _rand(config, hp)
    if family == "augmix":
        return _augmix(config, hp)
    if family in _AA:
        s = _sections(config, ("mstd",))
        mstd = hp.get("magnitude_std", _number(config, "mstd", s.get("mstd", "0")))
        return auto_augment(family, mstd=mstd, mmax=hp.get("magnitude_max"), **_geometry(hp))
    raise _fail(config, f"unknown family {family!r}; timm has 'rand', 'augmix' and the "
                        f"AutoAugment policies {', '.join(_AA)}")


def _rand(config: str, hp: dict[str, Any]):
    s = _sections(config, ("t", "mstd", "mmax", "inc", "m", "n", "p"))
    inc = bool(_number(config, "inc", s.get("inc", "0"), int))
    mstd = _number(config, "mstd", s.get("mstd", "0"))
    if mstd > 100:
        mstd = math.inf
    mstd = hp.get("magnitude_std", mstd)
    mmax = hp.get("magnitude_max", _number(config, "mmax", s["mmax"], int) if "mmax" in s
                  else None)
    ops: Any = None
    if "t" in s:
        sets = {"weights": T.TIMM_RAND_WEIGHTED_0, "3aw": T.TIMM_RAND_WEIGHTED_3A,
                "3a": T.TIMM_RAND_3A}
        if s["t"] not in sets:
            raise _fail(config, f"unknown op set 't{s['t']}' (timm has tweights, t3aw, t3a)")
        ops = sets[s["t"]]
    return rand_augment(
        n=_number(config, "n", s.get("n", "2"), int),
        m=_number(config, "m", s.get("m", "10"), int),
        mstd=mstd, mmax=mmax, p=_number(config, "p", s.get("p", "0.5")), increasing=inc,
        ops=ops, style="timm", **_geometry(hp))


def _augmix(config: str, hp: dict[str, Any]):
    s = _sections(config, ("mstd", "m", "w", "d", "a", "b"))
    mstd = hp.get("magnitude_std", _number(config, "mstd", s["mstd"]) if "mstd" in s
                  else math.inf)
    return augmix(
        severity=_number(config, "m", s.get("m", "3"), int),
        width=_number(config, "w", s.get("w", "3"), int),
        depth=_number(config, "d", s.get("d", "-1"), int),
        alpha=_number(config, "a", s.get("a", "1")),
        blended=bool(_number(config, "b", s.get("b", "0"), int)),
        style="timm", mstd=mstd, **_geometry(hp))
