"""RandAugment and TrivialAugmentWide: ``n`` layers, each one op of the space per sample.

Styles (the reference each follows, tables in :mod:`augjax.policies.tables`):

- ``"torchvision"``: ``RandAugment(num_ops=n, magnitude=m, num_magnitude_bins)``: 14 ops
  (Identity included), uniform choice with replacement, every layer applied, ``m`` a bin
  index (``t = m / (bins - 1)``), no fill (zeros), nearest sampling.
- ``"dali"``: DALI ``rand_augment(n, m, num_magnitude_bins, monotonic_mag, excluded)``: the
  same draws on DALI's suite (translations of up to 100 px, fill 128/255, bilinear sampling;
  ``increasing=False`` is ``monotonic_mag=False``).
- ``"timm"``: timm ``rand-m{m}-n{n}-p{p}-mstd{mstd}-mmax{mmax}-inc{0,1}``: 15 ops, ``m`` on
  timm's 0..10 scale (``t = m / 10``; ``m=9`` is 90% of the largest magnitude, about bin 27
  of 31), each layer applied with probability ``p`` (0.5), magnitude noise ``N(m, mstd)``
  (``mstd=inf``: ``U(0, m)``) clipped to ``[0, mmax]`` (10), weighted choice without
  replacement when ``weights`` are given, fill 128/255, bilinear sampling.

Fills are fractions of the value range in [0, 1], as the geometric ops take them (times 255 for
uint8 images): timm's and DALI's uint8 fill 128 is ``128/255`` here.

Magnitude noise (``mstd``) also works with the bin scale (in bins, clipped to
``[0, bins - 1]``), an augjax extension.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

import augjax.policies.tables as T
from augjax._core.limits import MAX_MAGNITUDE_BINS, MAX_POLICY_LAYERS
from augjax._runtime.execution.values import Lifted
from augjax._runtime.execution.keys import decision_key
from augjax.errors import ParamError
from augjax.policies._base import (
    STYLES,
    LayeredPolicy,
    check_names,
    param,
    registered_entry,
    shared,
)
from augjax.policies._call import data_first
from augjax.policies._engine import Levels, draw_level

__all__ = ["RandAugment", "TrivialAugmentWide", "rand_augment", "trivial_augment_wide"]


def _check_ops(policy, space, default=None) -> None:
    """Validates and sets ``ops`` (the style's names or registered ops; None: ``default``, or
    the whole space) and ``exclude`` (the style's names); some op must be left."""
    own, valid = policy.kind, tuple(e.name for e in space)
    if policy.ops is not None:
        policy._set("ops", check_names(own, "ops", policy.ops, valid, registered=True))
    elif default is not None:
        policy._set("ops", tuple(default))
    policy._set("exclude", check_names(own, "exclude", policy.exclude, valid))
    if not policy.entries:
        raise ParamError(f"{own}: no op left after 'exclude'", op=own, param="exclude")


def _entries(policy, space):
    """The entries of ``ops`` but ``exclude``: the style's own, or registered ops by their
    names."""
    table = {e.name: e for e in space}
    names = policy.ops if policy.ops is not None else tuple(table)
    return tuple(table[n] if n in table else registered_entry(n, policy.kind)
                 for n in names if n not in policy.exclude)


def _space_for(style: str, increasing: bool, translate_const: float, translate_pct: float):
    if style == "torchvision":
        return T.TV_RAND_AUGMENT, None
    if style == "dali":
        return (T.DALI_RAND_AUGMENT if increasing else T.DALI_RAND_AUGMENT_NON_MONOTONIC), None
    ops = T.timm_ops(translate_const, translate_pct)
    return tuple(ops.values()), T.TIMM_RAND_INCREASING if increasing else T.TIMM_RAND


@dataclasses.dataclass(frozen=True)
class RandAugment(LayeredPolicy):
    """RandAugment with per-sample op choice, in one compiled program.

    Args:
        n: ops applied per sample (layers), at most 64 (``augjax._core.limits``).
        m: magnitude: a bin index in ``[0, num_magnitude_bins - 1]`` (torchvision, dali) or a
            level on timm's 0..10 scale (``style="timm"``).
        num_magnitude_bins: bins of the torchvision / dali scale (ignored by timm), at most
            1024.
        mstd: magnitude noise per op application: ``N(m, mstd)``, ``inf`` = ``U(0, m)``.
        mmax: upper clip of the noisy level (timm default 10; bins: ``bins - 1``).
        p: probability of applying each layer (default 1.0; timm 0.5).
        increasing: op space whose strength increases with ``m`` (timm ``inc1``, DALI
            ``monotonic_mag``); default True except for timm (False, as timm).
        ops: names of the ops to draw from: the style's names (e.g. ``"ShearX"`` or, for dali,
            ``"shear_x"``) and any registered op that declares a magnitude, by its registered
            name (``"rotate"``, ``"gaussian_blur"``, a pack's op), driven by its own map;
            default the style's whole space. A dict name -> weight also sets ``weights``.
        exclude: names to leave out (DALI's ``excluded``).
        weights: relative weights of ``ops`` (timm ``tweights``): choice without replacement.
        style: ``"torchvision"``, ``"timm"`` or ``"dali"`` (see the module docstring).
        fill: value of pixels from outside the image, a fraction of the value range in [0, 1]
            (x255 for uint8 images: a uint8 level 128 is 128/255), one or one per channel;
            None = zeros; default per style (None for torchvision, 128/255 for timm and DALI).
        interpolation: ``"nearest"`` or ``"bilinear"``; default per style.
        translate_const: timm's ``translate_const`` hparam (px, absolute translations).
        translate_pct: timm's ``translate_pct`` hparam (relative translations).
    """

    n: int = param(2, low=0, high=MAX_POLICY_LAYERS,
                   aliases={"num_ops": "torchvision", "num_layers": "timm"})
    m: float = param(9, kind="float", low=0.0, aliases={"magnitude": "torchvision"})
    num_magnitude_bins: int = param(31, low=2, high=MAX_MAGNITUDE_BINS)
    _: dataclasses.KW_ONLY
    mstd: float = shared("mstd")
    mmax: float | None = shared("mmax")
    p: float | None = param(None, kind="float", low=0.0, high=1.0)
    increasing: bool | None = param(None, kind="bool", aliases={"monotonic_mag": "DALI"})
    ops: tuple[str, ...] | None = shared("ops")
    exclude: tuple[str, ...] = shared("exclude")
    weights: tuple[float, ...] | None = param(None, kind="floats", low=0.0, optional=True)
    style: str = param("torchvision", choices=STYLES)
    fill: Any = shared("fill")
    interpolation: str | None = shared("interpolation")
    translate_const: float = shared("translate_const")
    translate_pct: float = shared("translate_pct")
    kind = "rand_augment"

    def __post_init__(self) -> None:
        own = self.kind
        timm = self._check("style") == "timm"
        if isinstance(self.ops, dict):  # name -> weight
            self._set("weights", tuple(self.ops.values()))
            self._set("ops", tuple(self.ops))
        self._check("n", "num_magnitude_bins", "mstd", "mmax", "translate_const", "translate_pct")
        top = 10.0 if timm else float(self.num_magnitude_bins - 1)
        self._check("m", high=None if timm else top)
        if not timm and self.mstd == 0 and not float(self.m).is_integer():
            raise ParamError(f"{own}: parameter 'm' is a bin index of the {self.style} scale; "
                             f"expects an integer in [0, {int(top)}], got {self.m!r}",
                             op=own, param="m")
        self._set("p", (0.5 if timm else 1.0) if self.p is None else self.p)
        self._check("p")
        inc = (not timm) if self.increasing is None else self.increasing
        if not isinstance(inc, bool) or (self.style == "torchvision" and not inc):
            raise ParamError(f"{own}: parameter 'increasing' expects True or False (torchvision's "
                             f"RandAugment has only the increasing space; use style='dali' or "
                             f"'timm'), got {self.increasing!r}", op=own, param="increasing")
        self._set("increasing", inc)
        self._geometry(self.style)
        _check_ops(self, *_space_for(self.style, inc, self.translate_const, self.translate_pct))
        if self.weights is not None:
            ws = self._check("weights")
            if len(ws) != len(self.entries) or sum(ws) <= 0:
                raise ParamError(f"{own}: parameter 'weights' expects {len(self.entries)} "
                                 f"numbers >= 0 (one per op) with a positive sum, got "
                                 f"{self.weights!r}", op=own, param="weights")
            if self.n > sum(w > 0 for w in ws):
                raise ParamError(f"{own}: weighted choice is without replacement (timm): n="
                                 f"{self.n} exceeds the ops with positive weight", op=own,
                                 param="n")
        self._bind_now()

    @functools.cached_property
    def entries(self):
        return _entries(self, _space_for(self.style, self.increasing, self.translate_const,
                                         self.translate_pct)[0])

    @functools.cached_property
    def levels(self) -> Levels:
        """The level model of this configuration."""
        if self.style == "timm":
            top = 10.0 if self.mmax is None else self.mmax
            denominator = 10.0
        else:
            denominator = float(self.num_magnitude_bins - 1)
            top = denominator if self.mmax is None else min(self.mmax, denominator)
        discrete = self.mstd == 0 and float(min(self.m, top)).is_integer()
        return Levels(denominator, top, discrete)

    @property
    def shares(self) -> tuple[float, ...]:
        count = len(self.entries)
        if self.weights is None:
            return (self.p / count,) * count
        # without replacement an entry's chance grows at later layers: at layer i (from 0) at
        # least the weight of the others but the i heaviest is left beside its own
        ws, total = self.weights, sum(self.weights)
        out = []
        for j, w in enumerate(ws):
            others = sorted((v for k, v in enumerate(ws) if k != j), reverse=True)
            out.append(max((w / (total - sum(others[:i])) if w else 0.0)
                           for i in range(self.n)) * self.p)
        return tuple(out)

    # -- the magnitude as a program argument (augjax._runtime.execution.values) --------------------
    def lift(self) -> tuple[RandAugment, tuple[float, ...]]:
        """``(skeleton, (m,))``: the policy with ``m`` taken out (what its structure reads of
        ``m``, whether levels are whole bins, stays in the marker); a magnitude schedule then
        compiles nothing new."""
        _ = (self.levels, self.bound)  # computed with m, kept by the copies
        skeleton = copy.copy(self)
        exact = "discrete" if self.levels.discrete else "float"
        object.__setattr__(skeleton, "m", Lifted(f"level/{exact}"))
        return skeleton, (float(self.m),)

    def with_values(self, values: tuple[Any, ...]) -> RandAugment:
        """The skeleton with ``m`` traced (inside a program's trace)."""
        filled = copy.copy(self)
        object.__setattr__(filled, "m", values[0])
        object.__setattr__(filled, "skeleton", self)
        return filled

    def _draw_levels(self, key: jax.Array) -> jax.Array:
        keys = jax.random.split(key, self.n)
        return jax.vmap(lambda k: draw_level(k, self.m, self.mstd, self.levels.limit))(keys)

    def draw(self, key, meta):
        k_op, k_sign, k_apply, k_level = jax.random.split(decision_key(key), 4)
        count = len(self.entries)
        if self.weights is None:
            ops = jax.random.randint(k_op, (self.n,), 0, count)
        else:  # without replacement: Gumbel top-n = numpy's sequential weighted draws
            w = jnp.asarray(self.weights, jnp.float32)
            scores = jnp.where(w > 0, jnp.log(w), -jnp.inf) + jax.random.gumbel(k_op, (count,))
            ops = jax.lax.top_k(scores, self.n)[1]
        applied = jax.random.uniform(k_apply, (self.n,)) < self.p if self.p < 1.0 \
            else jnp.ones((self.n,), bool)
        return self._decisions(key, meta, k_sign, ops, self._draw_levels(k_level), applied,
                               jnp.arange(self.n))


rand_augment = data_first("rand_augment", RandAugment)


@dataclasses.dataclass(frozen=True)
class TrivialAugmentWide(LayeredPolicy):
    """TrivialAugmentWide (torchvision, or DALI's suite with ``style="dali"``): one op per
    sample, uniformly, with a uniform magnitude bin, in one compiled program.

    Args:
        num_magnitude_bins: the number of magnitude bins, at most 1024
            (``augjax._core.limits``).
        ops: names of the ops to draw from; default all 14. Registered ops that declare a
            magnitude join by their registered names (driven by their own maps).
        exclude: names to leave out.
        style: ``"torchvision"`` (no fill, nearest) or ``"dali"`` (fill 128/255, bilinear).
        fill: fill of uncovered pixels, a fraction of the range in [0, 1] (x255 for uint8);
            default per style.
        interpolation: ``"nearest"`` or ``"bilinear"``; default per style.
    """

    num_magnitude_bins: int = param(31, low=2, high=MAX_MAGNITUDE_BINS)
    _: dataclasses.KW_ONLY
    ops: tuple[str, ...] | None = shared("ops")
    exclude: tuple[str, ...] = shared("exclude")
    style: str = param("torchvision", choices=("torchvision", "dali"))
    fill: Any = shared("fill")
    interpolation: str | None = shared("interpolation")
    kind = "trivial_augment_wide"

    def __post_init__(self) -> None:
        self._check("style", "num_magnitude_bins")
        self._geometry(self.style)
        _check_ops(self, self._space())
        self._bind_now()

    def _space(self):
        return T.TV_TRIVIAL_AUGMENT_WIDE if self.style == "torchvision" else \
            T.DALI_TRIVIAL_AUGMENT_WIDE

    @functools.cached_property
    def entries(self):
        return _entries(self, self._space())

    @functools.cached_property
    def levels(self) -> Levels:
        top = self.num_magnitude_bins - 1
        return Levels(top, top, True)

    def draw(self, key, meta):
        k_op, k_sign, k_level = jax.random.split(decision_key(key), 3)
        level = jax.random.randint(k_level, (1,), 0, self.num_magnitude_bins).astype(jnp.float32)
        return self._decisions(key, meta, k_sign,
                               jax.random.randint(k_op, (1,), 0, len(self.entries)), level,
                               jnp.ones((1,), bool), jnp.zeros((1,), jnp.int32))


trivial_augment_wide = data_first("trivial_augment_wide", TrivialAugmentWide)
