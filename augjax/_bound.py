"""BoundOp: an op with its parameters validated and fixed, ready to apply or to chain."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from augjax._dispatch import apply_steps
from augjax._param import suggest
from augjax.errors import ParamError

__all__ = ["BoundOp", "CALL_KEYWORDS", "bound"]

#: Keywords of a call that are not op parameters.
CALL_KEYWORDS = frozenset({"key", "seeds", "seed", "device", "layout"})

#: Validated ops by (spec, parameters as given): an eager ``ops.flip(x, key=k, p=0.5)`` skips
#: validating the same parameters again (with the key-dtype cache in ``_keys``: 62 -> 50 us per
#: call on a 2-core CPU, of which 14-18 us is the jitted call itself).
_BOUND: dict[tuple[Any, Any], BoundOp] = {}
_BOUND_MAX = 1024
_SCALARS = (bool, int, float, str, type(None))


@dataclasses.dataclass(frozen=True)
class BoundOp:
    """An op spec plus validated parameter values (hashable: it keys the compile caches)."""

    spec: Any
    params: tuple[tuple[str, Any], ...]

    @classmethod
    def create(cls, spec: Any, params: dict[str, Any]) -> BoundOp:
        """Validates ``params`` against ``spec`` and fills in the defaults.

        Raises:
            ParamError: an unknown parameter (with close matches) or an invalid value.
        """
        unknown = sorted(set(params) - set(spec.params))
        if unknown:
            name = unknown[0]
            hint = suggest(spec.params, name)
            hint = f"; {hint}" if hint else ""
            raise ParamError(
                f"{spec.name}: unknown parameter {name!r}; the op takes "
                f"{', '.join(spec.params) or 'no parameters'}{hint}",
                op=spec.name,
                param=name,
            )
        values = {
            name: p.check(spec.name, name, params.get(name, p.default))
            for name, p in spec.params.items()
        }
        if spec.check is not None:
            try:
                spec.check(**values)
            except ParamError:
                raise
            except ValueError as err:
                raise ParamError(f"{spec.name}: {err}", op=spec.name) from None
        return cls(spec, tuple(values.items()))

    @property
    def name(self) -> str:
        """The op's name."""
        return self.spec.name

    @property
    def kwargs(self) -> dict[str, Any]:
        """The parameter values, as keyword arguments for the kernel."""
        return dict(self.params)

    def __call__(
        self,
        *inputs: Any,
        key: Any = None,
        seeds: Any = None,
        seed: int | None = None,
        device: str | None = None,
        layout: str = "HWC",
    ) -> Any:
        """Applies the op.

        Args:
            *inputs: ``images`` (and ``labels`` for mixing ops): ``jax.Array`` / NumPy batches, or
                DALI ``DataNode`` values inside a ``@pipeline_def``.
            key: arrays only: a ``jax.random.key`` (split per sample) or one key per sample;
                required for random ops.
            seeds: DALI only: a ``DataNode`` of int32 ``(2,)`` seeds per sample to use instead of
                the ones augjax draws (see :func:`augjax.keys_from_seeds`).
            seed: DALI only: seed of the DALI RNG op that draws the per-sample seeds (default:
                derived from the pipeline seed).
            device: DALI only: ``"cpu"`` or ``"gpu"``; default: the device of ``images``.
            layout: ``"HWC"`` (default) or ``"CHW"``.

        Returns:
            ``images``, or ``(images, soft_labels)`` for ops that output labels.
        """
        return apply_steps(
            (self,),
            inputs,
            name=self.name,
            inputs_decl=self.spec.inputs,
            outputs_decl=self.spec.outputs,
            key=key,
            seeds=seeds,
            seed=seed,
            device=device,
            layout=layout,
        )

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params)
        return f"{self.name}.bind({args})"


def _frozen(value: Any) -> Any:
    """``value`` with its exact type, as a hashable key; ``None`` where it cannot be one (arrays,
    tracers, NumPy scalars, NaN: those are validated on every call). Types are part of the key
    so that ``True``, ``1`` and ``1.0`` (equal in Python) are validated apart, and so is the
    sign of a zero."""
    kind = type(value)
    if kind is float:
        return None if value != value else (kind, value, math.copysign(1.0, value))
    if kind in _SCALARS:
        return (kind, value)
    if kind in (tuple, list):
        items = tuple(_frozen(v) for v in value)
        return None if any(i is None for i in items) else (kind, items)
    return None


def bound(spec: Any, params: dict[str, Any]) -> BoundOp:
    """:meth:`BoundOp.create`, remembered for parameters given as plain Python values."""
    items = tuple(sorted((k, _frozen(v)) for k, v in params.items()))
    if any(f is None for _, f in items):
        return BoundOp.create(spec, params)
    key = (spec, items)
    op = _BOUND.get(key)
    if op is None:
        op = BoundOp.create(spec, params)  # raises for bad parameters: nothing is remembered
        if len(_BOUND) >= _BOUND_MAX:
            _BOUND.clear()
        _BOUND[key] = op
    return op
