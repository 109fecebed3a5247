"""AutoAugment: one sub-policy per sample, each of its ops applied with its probability.

Policies: torchvision's ``"imagenet"``, ``"cifar10"``, ``"svhn"`` (``AutoAugmentPolicy``; bins
of a 10-bin scale, ``t = bin / 9``; no fill (zeros), nearest) and timm's ``"v0"``, ``"v0r"``,
``"original"``, ``"originalr"``, ``"3a"`` (levels 0..10, ``t = level / 10``; optional magnitude
noise ``mstd``; fill 128/255, bilinear). Per sample: the sub-policy is drawn uniformly; each of
its ops runs when ``U < p`` (torchvision: ``rand <= p``), with a random sign for signed maps.
Fills are fractions of the value range in [0, 1] (times 255 for uint8 images), as the
geometric ops take them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import augjax.policies.tables as T
from augjax._runtime.execution.keys import decision_key
from augjax.errors import ParamError
from augjax.policies._base import LayeredPolicy, param, shared
from augjax.policies._call import data_first
from augjax.policies._engine import Levels, draw_level

__all__ = ["POLICIES", "AutoAugment", "auto_augment"]

#: Every policy name, torchvision's then timm's.
POLICIES = tuple(T.TV_POLICIES) + tuple(T.TIMM_POLICIES)


@dataclasses.dataclass(frozen=True)
class AutoAugment(LayeredPolicy):
    """AutoAugment with a per-sample sub-policy, in one compiled program.

    Args:
        policy: torchvision's ``"imagenet"``, ``"cifar10"``, ``"svhn"``, or timm's ``"v0"``,
            ``"v0r"``, ``"original"``, ``"originalr"``, ``"3a"`` (``"3a"`` blurs with augjax's
            ``gaussian_blur`` op).
        mstd: timm policies: magnitude noise ``N(level, mstd)`` (``inf``: ``U(0, level)``).
        mmax: timm policies: upper clip of the level (default 10).
        fill: fill of uncovered pixels, a fraction of the range in [0, 1] (x255 for uint8);
            default None (zeros; torchvision), 128/255 (timm).
        interpolation: ``"nearest"`` (torchvision default) or ``"bilinear"`` (timm default).
        translate_const: timm's absolute translation hparam (px).
        translate_pct: timm's relative translation hparam.
    """

    policy: str = param("imagenet", choices=POLICIES, aliases={"policy_name": "DALI"})
    _: dataclasses.KW_ONLY
    mstd: float = shared("mstd")
    mmax: float | None = shared("mmax")
    fill: Any = shared("fill")
    interpolation: str | None = shared("interpolation")
    translate_const: float = shared("translate_const")
    translate_pct: float = shared("translate_pct")
    kind = "auto_augment"

    def __post_init__(self) -> None:
        self._check("policy", "mstd", "mmax", "translate_const", "translate_pct")
        if self.style == "torchvision" and (self.mstd != 0 or self.mmax is not None):
            raise ParamError(f"{self.kind}: parameters 'mstd' and 'mmax' are for timm's policies "
                             f"(v0, original, ...); torchvision's {self.policy!r} uses fixed "
                             f"bins", op=self.kind, param="mstd")
        self._geometry(self.style)
        self._bind_now()

    @property
    def style(self) -> str:
        """``"torchvision"`` or ``"timm"``, from the policy name."""
        return "torchvision" if self.policy in T.TV_POLICIES else "timm"

    @functools.cached_property
    def _table(self):
        if self.style == "torchvision":
            subs, space = T.TV_POLICIES[self.policy], T.space(T.TV_AUTO_AUGMENT)
        else:
            subs = T.TIMM_POLICIES[self.policy]
            space = T.space(T.timm_ops(self.translate_const, self.translate_pct))
        names = sorted({n for sub in subs for n, _, _ in sub}, key=[e.name for e in space].index)
        width = max(len(sub) for sub in subs)
        ops = np.zeros((len(subs), width), np.int32)
        levels = np.zeros((len(subs), width), np.float32)
        probs = np.zeros((len(subs), width), np.float32)
        for i, sub in enumerate(subs):
            for j, (name, p, level) in enumerate(sub):
                ops[i, j], probs[i, j] = names.index(name), p
                levels[i, j] = 0 if level is None else level
        return T.space(space, names), ops, levels, probs

    @property
    def entries(self):
        return self._table[0]

    @property
    def shares(self) -> tuple[float, ...]:
        _, ops, _, probs = self._table
        per_slot = np.zeros((ops.shape[1], len(self.entries)))
        for slot in range(ops.shape[1]):
            np.add.at(per_slot[slot], ops[:, slot], probs[:, slot] / ops.shape[0])
        return tuple(float(v) for v in per_slot.max(axis=0))

    @property
    def subpolicies(self) -> tuple[tuple[tuple[str, float, int | None], ...], ...]:
        """The sub-policies, as the reference lists them."""
        table = T.TV_POLICIES if self.style == "torchvision" else T.TIMM_POLICIES
        return table[self.policy]

    @functools.cached_property
    def levels(self) -> Levels:
        """The level model: 10 bins (torchvision) or timm's 0..10 scale."""
        if self.style == "torchvision":
            return Levels(9.0, 9.0, True)
        limit = 10.0 if self.mmax is None else self.mmax
        return Levels(10.0, limit, self.mstd == 0 and float(limit).is_integer())

    def draw(self, key, meta):
        _, ops, levels, probs = self._table
        k_sub, k_sign, k_apply, k_level = jax.random.split(decision_key(key), 4)
        sub = jax.random.randint(k_sub, (), 0, ops.shape[0])
        width_ = ops.shape[1]
        base = jnp.asarray(levels)[sub]
        keys = jax.random.split(k_level, width_)
        level = jax.vmap(lambda k, m: draw_level(k, m, self.mstd, self.levels.limit))(
            keys, base)
        applied = jax.random.uniform(k_apply, (width_,)) < jnp.asarray(probs)[sub]
        return self._decisions(key, meta, k_sign, jnp.asarray(ops)[sub], level, applied,
                               jnp.arange(width_), subpolicy=sub.astype(jnp.int32))


auto_augment = data_first("auto_augment", AutoAugment)
