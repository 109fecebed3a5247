"""BoundOp: an op with its parameters validated and fixed, ready to apply or to chain."""

from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any

from augjax._dispatch import apply_steps, apply_with_params, sample_steps_on
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
            close = difflib.get_close_matches(name, list(spec.params), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
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

    # -- the Step contract (shared with composites) -----------------------------------------
    def draw(self, key: Any, meta: Any, overrides: Any = None) -> dict[str, Any]:
        """One sample's params (the batch's, for batch-level ops); traced."""
        return self.spec.draw(key, meta, self.kwargs, overrides)

    def run(self, image: Any, params: Any) -> Any:
        """The kernel on one HWC image with its params; traced, deterministic."""
        return self.spec.run((image,), params, self.kwargs)

    def struct_after(self, shape: tuple[int, ...], dtype: Any) -> tuple[tuple[int, ...], Any]:
        """``(shape, dtype)`` of the output for one HWC image of ``shape`` and ``dtype``."""
        import jax.numpy as jnp

        h, w, c = shape
        if self.spec.output_size is not None:
            h, w = self.spec.output_size(h, w, **self.kwargs)
        out = self.spec.output_dtype
        return (int(h), int(w), c), jnp.dtype(out if out is not None else dtype)

    def matrix(self, params: Any, meta: Any) -> Any:
        """One sample's forward 3x3 matrix (identity for ops that do not move pixels).

        Raises:
            InputError: a geometric op without a matrix (an elastic warp) cannot give one.
        """
        import jax.numpy as jnp

        from augjax.errors import InputError

        spec = self.spec
        if spec.matrix is not None:
            return jnp.asarray(spec.matrix(params, meta, **self.kwargs), jnp.float32)
        if spec.geometric:
            raise InputError(f"{spec.name}: moves pixels without a matrix (a free-form warp), so "
                             f"its geometry cannot be inverted or carried to points",
                             op=spec.name)
        return jnp.eye(3, dtype=jnp.float32)

    def run_batch(self, inputs: tuple[Any, ...], params: Any) -> Any:
        """A batch-level kernel on ``(images[, labels])`` with the batch's params."""
        return self.spec.run(inputs, params, self.kwargs)

    # -- public: sample, then apply ----------------------------------------------------------
    def sample(self, *inputs: Any, key: Any, layout: str = "HWC") -> dict[str, Any]:
        """The values this op draws for ``inputs`` with ``key``: a dict of arrays with a
        leading axis N (documented per op: ``angle``, ``matrix``, ``box``, ``lam``, ...).
        ``self(x, key=key)`` equals ``self.apply(x, params=self.sample(x, key=key))`` bitwise.

        Args:
            *inputs: ``images`` (only their shape and dtype matter; labels may be given).
            key: as for a call.
            layout: ``"HWC"`` or ``"CHW"``.
        """
        params = sample_steps_on((self,), inputs, name=self.name, inputs_decl=self.spec.inputs,
                                 key=key, layout=layout)
        return params[0]

    def apply(self, *inputs: Any, params: Any, layout: str = "HWC") -> Any:
        """Applies the op with given ``params`` (from :meth:`sample`, maybe edited):
        deterministic, no key. Returns what a call returns."""
        return apply_with_params((self,), inputs, (params,), name=self.name,
                                 inputs_decl=self.spec.inputs, outputs_decl=self.spec.outputs,
                                 layout=layout)

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
