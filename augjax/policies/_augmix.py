"""AugMix: ``width`` chains of 1..3 random ops each, mixed with the original image, per sample.

Styles:

- ``"torchvision"`` (``AugMix(severity, mixture_width, chain_depth, alpha, all_ops)``): ops
  of torchvision's AugMix space (``all_ops=False`` drops the enhance ops), each op's bin drawn
  uniformly from ``[0, severity)`` of 10 bins; ``m ~ Dirichlet(alpha, alpha)``,
  ``w ~ Dirichlet(alpha * width) * m[1]``; ``out = m[0] * x + sum(w_i * chain_i(x))``,
  truncated to uint8. Fill 0, bilinear sampling.
- ``"timm"`` (``augmix-m{severity}-w{width}-d{depth}-a{alpha}-b{blended}-mstd{mstd}``): timm's
  13 ops, level ``U(0, severity)`` on the 0..10 scale (``mstd=inf``, timm's default; a finite
  ``mstd`` gives ``N(severity, mstd)``); ``w ~ Dirichlet(alpha * width)``,
  ``m ~ Beta(alpha, alpha)``; ``mixed = uint8(clip(sum(w_i * chain_i(x))))`` and
  ``out = uint8(x + m * (mixed - x))`` (PIL ``Image.blend``). ``blended=True`` is timm's
  sequential-blend variant. Fill 128/255 (a fraction of the range), bilinear sampling.

The chain depth is ``depth`` or, for ``depth <= 0``, uniform in {1, 2, 3} per chain and sample.
Every chain and depth step is computed for every sample (branch-free), so the cost grows with
``width * 3 * ops``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

import augjax.policies.tables as T
from augjax._core.limits import MAX_AUGMIX_WIDTH
from augjax.kernels.gamma import loggamma
from augjax._runtime.execution.keys import decision_key
from augjax.errors import ParamError
from augjax.kernels.pixels import bound as max_level
from augjax.kernels.pixels import is_int
from augjax.policies._base import DEFAULT, Policy, check_names, param, shared
from augjax.policies._call import data_first
from augjax.policies._engine import (
    Levels,
    draw_level,
    run_layers,
    scan_layers,
)

__all__ = ["AugMix", "augmix"]

_MAX_DEPTH = 3


@dataclasses.dataclass(frozen=True)
class AugMix(Policy):
    """AugMix with per-sample chains and mixing weights, in one compiled program.

    Args:
        severity: magnitude: torchvision draws bins in ``[0, severity)`` of 10 (1..10); timm
            levels ``U(0, severity)`` on 0..10.
        width: number of chains (``mixture_width``), at most 16 (``augjax._core.limits``:
            each chain is compiled into the program).
        depth: ops per chain; ``-1``: uniform in {1, 2, 3} per chain and sample.
        alpha: Dirichlet / Beta concentration.
        all_ops: torchvision: include brightness, color, contrast and sharpness.
        style: ``"torchvision"`` or ``"timm"`` (see the module docstring).
        mstd: timm: magnitude noise (default ``inf``: uniform in ``[0, severity]``).
        blended: timm's ``b1`` sequential-blend mode.
        ops: names of the ops to draw from (a subset of the style's space, e.g.
            ``("AutoContrast", "Equalize")``); default all.
        fill: fill of uncovered pixels, a fraction of the range in [0, 1] (x255 for uint8);
            default None (zeros; torchvision), 128/255 (timm).
        interpolation: ``"nearest"`` or ``"bilinear"`` (default for both styles).
        translate_const: timm's absolute translation hparam (unused by its AugMix ops).
        translate_pct: timm's relative translation hparam.
    """

    severity: int = param(3, low=1, high=10, aliases={"magnitude": "timm"})
    width: int = param(3, low=1, high=MAX_AUGMIX_WIDTH, aliases={"mixture_width": "torchvision"})
    depth: int = param(-1, high=_MAX_DEPTH, aliases={"chain_depth": "torchvision"})
    alpha: float = param(1.0, low=1e-6)
    all_ops: bool = param(True)
    _: dataclasses.KW_ONLY
    style: str = param("torchvision", choices=("torchvision", "timm"))
    mstd: float | None = shared("mstd", None)
    blended: bool = param(False)
    ops: tuple[str, ...] | None = shared("ops")
    fill: Any = shared("fill")
    interpolation: str | None = shared("interpolation")
    translate_const: float = shared("translate_const")
    translate_pct: float = shared("translate_pct")
    kind = "augmix"

    def __post_init__(self) -> None:
        own = self.kind
        timm = self._check("style") == "timm"
        self._check("severity", low=0 if timm else 1)
        self._check("width", "depth", "alpha", "all_ops", "blended")
        if self.depth == 0:
            self._set("depth", -1)
        if timm:
            if not self.all_ops:
                raise ParamError(f"{own}: all_ops=False is torchvision's; timm's AugMix has one "
                                 f"op list", op=own, param="all_ops")
            self._set("mstd", math.inf if self.mstd is None else self.mstd)
            self._check("mstd")
        elif self.mstd is not None or self.blended:
            name = "mstd" if self.mstd is not None else "blended"
            raise ParamError(f"{own}: parameter {name!r} is timm's (style='timm'); torchvision "
                             f"draws the bin uniformly below 'severity' and mixes once", op=own,
                             param=name)
        if self.interpolation in (None, DEFAULT) and not timm:
            self._set("interpolation", "bilinear")  # torchvision AugMix's default
        self._check("translate_const", "translate_pct")
        self._geometry(self.style)
        if self.ops is not None:
            valid = tuple(e.name for e in self._space())
            self._set("ops", check_names(own, "ops", self.ops, valid))
            if not self.ops:
                raise ParamError(f"{own}: parameter 'ops' is empty", op=own, param="ops")
        self._bind_now()

    def _space(self):
        if self.style == "timm":
            return T.space(T.timm_ops(self.translate_const, self.translate_pct), T.TIMM_AUGMIX)
        return T.TV_AUGMIX if self.all_ops else T.TV_AUGMIX_PARTIAL

    @functools.cached_property
    def entries(self):
        return T.space(self._space(), self.ops)

    @functools.cached_property
    def levels(self) -> Levels:
        """torchvision: 10 bins (``t = bin / 9``); timm: 0..10."""
        if self.style == "torchvision":
            return Levels(9.0, 9.0, True)
        return Levels(10.0, 10.0, self.mstd == 0)

    @property
    def max_depth(self) -> int:
        """Depth steps computed per chain."""
        return self.depth if self.depth > 0 else _MAX_DEPTH

    def draw(self, key, meta):
        ks = jax.random.split(decision_key(key), 7)
        shape = (self.width, self.max_depth)
        count = len(self.entries)
        # One Gamma draw for every Dirichlet / Beta of the sample (one sampler to
        # compile, no loop): Dirichlet(alpha * width) = softmax(log-gammas), and the original-vs-mix
        # pair, Dirichlet(alpha, alpha) = (Beta(alpha, alpha), 1 - Beta(alpha, alpha)).
        lg = loggamma(ks[1], jnp.full((self.width + 2,), self.alpha, jnp.float32))
        weights = jax.nn.softmax(lg[:self.width])
        pair = jax.nn.softmax(lg[self.width:])
        if self.style == "torchvision":
            level = jax.random.randint(ks[0], shape, 0, self.severity).astype(jnp.float32)
            weights = weights * pair[1]
        else:
            lkeys = jax.random.split(ks[0], self.width * self.max_depth)
            level = jax.vmap(lambda k: draw_level(k, self.severity, self.mstd, 10.0))(lkeys)
            level = level.reshape(shape)
        original = pair[0]
        if self.depth > 0:
            depth = jnp.full((self.width,), self.depth, jnp.int32)
        else:
            depth = jax.random.randint(ks[3], (self.width,), 1, _MAX_DEPTH + 1)
        index = (jnp.arange(self.width)[:, None] * _MAX_DEPTH
                 + jnp.arange(self.max_depth)[None, :])
        return self._decisions(
            key, meta, ks[5], jax.random.randint(ks[4], shape, 0, count), level,
            jnp.arange(self.max_depth)[None, :] < depth[:, None], index,
            depth=depth.astype(jnp.int32), weights=weights.astype(jnp.float32),
            m=jnp.asarray(original, jnp.float32))

    def run(self, image, params):
        dtype = image.dtype
        x = image.astype(jnp.float32)
        top = max_level(dtype)
        w, m = params["weights"], params["m"]
        fields = (params["op"], params["applied"], params["branches"])
        blended = self.style == "timm" and self.blended
        if blended:  # timm _apply_blended: the running image is blended with each chain in turn
            ws, alphas, cump = w * m, [], jnp.float32(1.0)
            for i in range(self.width - 1, -1, -1):
                alphas.append(ws[i] / cump)
                cump = cump * (1.0 - alphas[-1])
            mix = jnp.stack(alphas[::-1])
        else:
            mix = w

        def chain(acc, xs):
            (op_index, applied, branches), weight = xs
            out = run_layers(self.space, self.bound, op_index, applied, branches, image,
                             self.kind).astype(jnp.float32)
            if blended:
                return _quantize(acc + weight * (out - acc), dtype), None
            return acc + weight * out, None

        start = x if blended else jnp.zeros_like(x)
        acc = scan_layers(chain, start, (fields, mix))
        if self.style == "torchvision":
            out = jnp.clip(m * x + acc, 0.0, top)
        elif blended:
            out = acc
        else:
            mixed = _quantize(jnp.clip(acc, 0.0, top), dtype)
            out = x + m * (mixed - x)
        return _quantize(out, dtype).astype(dtype)


def _quantize(x: jax.Array, dtype: Any) -> jax.Array:
    """uint8: truncate to whole levels (torch ``.to(uint8)``, numpy ``astype``, PIL blend)."""
    return jnp.floor(x) if is_int(dtype) else x


augmix = data_first("augmix", AugMix)
