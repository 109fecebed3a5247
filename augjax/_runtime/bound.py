"""BoundOp: an op with its parameters validated and fixed, ready to apply or to chain."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from augjax._core.param import suggest
from augjax._core.step import Step
from augjax.errors import ParamError

__all__ = ["BoundOp", "bound"]

#: Validated ops by (spec, parameters as given): an eager ``ops.flip(x, key=k, p=0.5)`` skips
#: validating the same parameters again (with the key-dtype cache in ``_keys``: 62 -> 50 us per
#: call on a 2-core CPU, of which 14-18 us is the jitted call itself).
_BOUND: dict[tuple[Any, Any], BoundOp] = {}
_BOUND_MAX = 1024
_SCALARS = (bool, int, float, str, type(None))


@dataclasses.dataclass(frozen=True)
class BoundOp(Step):
    """An op spec plus validated parameter values (hashable: it keys the compile caches).

    Call it like the op (see :meth:`augjax._core.step.Step.__call__`); ``sample`` / ``apply`` give
    and replay its per-sample values (documented per op: ``degrees``, ``box``, ``lam``, ...).
    """

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

    # -- the Step contract (shared with composites) -----------------------------------------
    def draw(self, key: Any, meta: Any, overrides: Any = None) -> dict[str, Any]:
        """One sample's params (the batch's, for batch-level ops); traced."""
        return self.spec.draw(key, meta, self.kwargs, overrides)

    def run(self, image: Any, params: Any) -> Any:
        """The kernel on one HWC image with its params; traced, deterministic."""
        return self.spec.run((image,), params, self.kwargs)

    def size_after(self, height: int, width: int) -> tuple[int, int]:
        """The output's spatial size for an input of ``height`` x ``width``."""
        if self.spec.output_size is None:
            return (height, width)
        h, w = self.spec.output_size(height, width, **self.kwargs)
        return (int(h), int(w))

    def dtype_after(self) -> str | None:
        """The output dtype, or None when it is the input's."""
        return self.spec.output_dtype

    def layout_effect(self) -> str | None:
        """The layout the op sets on its output (normalize to CHW), or None if it keeps it."""
        out = self.spec.output_layout
        return None if out is None else out(**self.kwargs)

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

    @property
    def geometric(self) -> bool:
        """Whether the op moves pixels (its targets then follow it)."""
        return bool(self.spec.geometric)

    def run_masks(self, mask: Any, params: Any) -> Any:
        """The op on one encoded mask (see :mod:`augjax._runtime.targets`), as its
        ``targets`` rule says: unchanged, or the kernel with nearest sampling and zero fill.

        Raises:
            InputError: the op refuses masks.
        """
        from augjax._runtime.targets import run_op_on_mask

        return run_op_on_mask(self, mask, params)

    def run_batch(self, inputs: tuple[Any, ...], params: Any) -> Any:
        """A batch-level kernel on ``(images[, labels])`` with the batch's params."""
        return self.spec.run(inputs, params, self.kwargs)

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
