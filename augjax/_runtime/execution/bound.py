"""BoundOp: an op with its parameters validated and fixed, the step the runtime runs."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from augjax._core.param import suggest
from augjax._core.step import BaseStep, Structure
from augjax._runtime.execution.values import Lifted, abstract_value, marker_kind
from augjax.errors import ParamError

__all__ = ["BoundOp", "bound"]

#: Validated ops by (spec, parameters as given): an eager ``ops.flip(x, key=k, p=0.5)`` skips
#: validating the same parameters again (with the key-dtype cache in ``_keys``: 62 -> 50 us per
#: call on a 2-core CPU, of which 14-18 us is the jitted call itself).
_BOUND: dict[tuple[Any, Any, Any], BoundOp] = {}
_BOUND_MAX = 1024
_SCALARS = (bool, int, float, str, type(None))


@dataclasses.dataclass(frozen=True)
class BoundOp(BaseStep):
    """An op spec plus validated parameter values (hashable: it keys the compile caches): the
    :class:`augjax._core.step.Step` of an op, answered from its declaration (the only place that
    reads it).

    What ``op.bind(...)`` gives is :class:`augjax.calls.BoundOp`, this with the public calls
    (``op.bind(p=0.5)(images, key=...)``; ``sample`` / ``apply`` give and replay its
    per-sample values, documented per op: ``degrees``, ``box``, ``lam``, ...). The runtime
    makes its own skeletons (:meth:`lift`) of this class.
    """

    spec: Any
    params: tuple[tuple[str, Any], ...]

    #: The type of the step's config node (``augjax.to_dict``).
    kind = "op"

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

    def to_config(self) -> dict[str, Any]:
        """The op's config node (without ``type``): its registered name and every parameter.

        Raises:
            ParamError: the op is not the registered op of its name (see
                :meth:`augjax._plugins.registry.Registry.config_name`).
        """
        from augjax._plugins.registry import REGISTRY

        return {"name": REGISTRY.config_name(self.spec), "params": dict(self.params)}

    # -- the Step contract (shared with composites): structure -----------------------------
    @property
    def inputs(self) -> tuple[str, ...]:
        """The positional inputs a call takes."""
        return tuple(self.spec.inputs)

    @property
    def outputs(self) -> tuple[str, ...]:
        """What a call returns."""
        return tuple(self.spec.outputs)

    @property
    def level(self) -> str:
        """``"sample"`` or ``"batch"``."""
        return self.spec.level

    @property
    def layouts(self) -> tuple[str, ...]:
        """The layouts the op takes."""
        return self.spec.layouts

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The image dtypes the op takes."""
        return self.spec.dtypes

    @property
    def channels(self) -> tuple[int, ...] | None:
        """The channel counts the op takes (None: any)."""
        return self.spec.channels

    @property
    def compute_bound(self) -> bool:
        """Much arithmetic per pixel (see ``op(compute_bound=)``)."""
        return self.spec.compute_bound

    def after(self, structure: Structure) -> Structure:
        """The op's output structure for one sample of ``structure``: the declared output
        size, dtype and layout (each kept where the op declares none)."""
        spec, (h, w, c, dtype, layout) = self.spec, structure
        if spec.output_size is not None and h is not None:  # (None: not known yet)
            h, w = spec.output_size(h, w, **self.kwargs)
            h, w = int(h), int(w)
        layout = spec.layout_after(layout, self.kwargs)
        return Structure(h, w, c, spec.output_dtype or dtype, layout)

    @property
    def ragged(self) -> bool:
        """Whether the op takes images of different sizes (it declares ``ragged=``)."""
        return self.spec.ragged is not None

    def window(self, params: Any, height: Any, width: Any) -> Any:
        """How the op reads one image of its true size (the declared ``ragged`` window)."""
        return self.spec.ragged(params, height, width, **self.kwargs)

    # -- randomness ------------------------------------------------------------------------
    @property
    def random(self) -> bool:
        """Whether the op draws anything."""
        return self.spec.random

    @property
    def sample_targets(self) -> tuple[str, ...]:
        """The targets the op's sampler reads."""
        return self.spec.sample_targets

    def draw(self, key: Any, meta: Any, overrides: Any = None,
             targets: Any = None) -> dict[str, Any]:
        """One sample's params (the batch's, for batch-level ops); ``targets``: the sample's
        targets, for an op whose sampler reads them (``sample_targets``); traced."""
        return self.spec.draw(key, meta, self.kwargs, overrides, targets)

    # -- application -----------------------------------------------------------------------
    @property
    def declared(self) -> Any:
        """The op's declared parameters (``Param`` by name)."""
        return self.spec.params

    def run(self, image: Any, params: Any) -> Any:
        """The kernel on one HWC image with its params; traced, deterministic."""
        return self.spec.run((image,), params, self.kwargs)

    def check_image(self, image: Any, where: str) -> None:
        """The checks :meth:`run_checked` makes of its input (one HWC image the op takes),
        without running the op."""
        import jax

        from augjax._runtime.execution.inputs import check_images
        from augjax.errors import InputError

        if image.ndim != 3:
            raise InputError(f"{where}: expects one HWC image per sample, got shape "
                             f"{image.shape}")
        layout = "HWC" if "HWC" in self.layouts else "CHW"
        h, w, c = image.shape
        shape = (1, h, w, c) if layout == "HWC" else (1, c, h, w)
        check_images(jax.ShapeDtypeStruct(shape, image.dtype), self, layout, op=where,
                     batch=False)

    def run_checked(self, image: Any, params: Any, where: str) -> Any:
        """The op on one HWC image inside a composite (``where`` names it in messages:
        ``"random_apply/flip"``), checking the input and the output its declaration promises."""
        import jax.numpy as jnp

        from augjax.errors import OpDefinitionError

        self.check_image(image, where)
        out = self.run(image, params)
        want = self.after(Structure(*image.shape, jnp.dtype(image.dtype).name))
        expected = (want.shape, jnp.dtype(want.dtype))
        if (tuple(out.shape), jnp.dtype(out.dtype)) != expected:
            raise OpDefinitionError(
                f"op {self.name!r}: the kernel returned {out.dtype} {tuple(out.shape)} for one "
                f"image, but its declaration promises {expected[1]} {expected[0]} (HWC)")
        return out

    def run_batch(self, inputs: tuple[Any, ...], params: Any) -> Any:
        """A batch-level kernel on ``(images[, labels])`` with the batch's params."""
        return self.spec.run(inputs, params, self.kwargs)

    @property
    def pads_exactly(self) -> bool:
        """Whether padding the batch keeps the real samples' bits: a sample-level op, or one
        of augjax's mirror-paired mixing ops drawing once per batch (``mode="batch"``)."""
        from augjax._runtime.execution.padding import MIRROR_PAIRED

        spec = self.spec
        return spec.level != "batch" or (
            spec.name in MIRROR_PAIRED and spec.kernel.__module__ == "augjax.catalog.mix"
            and self.kwargs.get("mode", "batch") == "batch")

    # -- geometry and targets --------------------------------------------------------------
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

    @property
    def follow(self) -> Any:
        """How the op's targets follow it (its declared :class:`augjax.Follow`)."""
        return self.spec.targets

    def stages(self, params: Any, meta: Any) -> tuple[tuple[Any, tuple[int, int]], ...]:
        """The op's geometry for boxes and keypoints, by its ``targets`` rule: its matrix and
        output size, or nothing (points kept).

        Raises:
            InputError: the op refuses boxes and keypoints.
        """
        from augjax._core.targets import KEEP, REFUSE
        from augjax.errors import InputError

        rule = self.spec.targets
        if rule.points == REFUSE:
            raise InputError(f"{self.name}: boxes and keypoints cannot follow this op"
                             f"{': ' + rule.reason if rule.reason else ''}",
                             op=self.name, argument="boxes")
        if rule.points == KEEP:
            return ()
        out = self.after(Structure(meta.height, meta.width, meta.channels, meta.dtype))
        return ((self.matrix(params, meta), (out.height, out.width)),)

    def run_masks(self, mask: Any, params: Any) -> Any:
        """The op on one encoded mask (see :mod:`augjax._runtime.targets.follow`), as its
        ``targets`` rule says: unchanged, or the kernel with nearest sampling and zero fill.

        Raises:
            InputError: the op refuses masks.
        """
        from augjax._runtime.targets.masks import run_op_on_mask

        return run_op_on_mask(self.spec, self.kwargs, mask, params)

    # -- values as program arguments (augjax._runtime.execution.values) ----------------------------
    def lift(self) -> tuple[BoundOp, tuple[Any, ...]]:
        """``(skeleton, values)``: the op with its liftable float values taken out (see
        :func:`liftable`); ``(self, ())`` where none is."""
        names = liftable(self.spec, self.params)
        if not names:
            return self, ()
        params = tuple((k, Lifted(marker_kind(v)) if k in names else v) for k, v in self.params)
        return BoundOp(self.spec, params), tuple(v for k, v in self.params if k in names)

    def with_values(self, values: tuple[Any, ...]) -> BoundOp:
        """The skeleton with ``values`` (traced) in place of its markers."""
        it = iter(values)
        params = tuple((k, next(it) if isinstance(v, Lifted) else v) for k, v in self.params)
        return _Filled(self.spec, params, self)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params)
        return f"{self.name}.bind({args})"


class _Filled(BoundOp):
    """A skeleton filled with traced values, inside one trace: hashed and compared by identity
    (its values are tracers); ``skeleton`` is the op the program is keyed by."""

    def __init__(self, spec: Any, params: tuple[tuple[str, Any], ...], skeleton: BoundOp):
        super().__init__(spec, params)
        object.__setattr__(self, "skeleton", skeleton)

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other


#: Parameter kinds whose float values a program may take as arguments.
_NUMERIC_KINDS = ("float", "float_or_pair", "pair", "int", "int_or_pair")


def _structure(value: Any) -> Any:
    """What the key of :func:`liftable` keeps of another parameter's value: a float (or a
    range of floats) only as its kind, anything else (ints: often sizes) as it is."""
    kind = marker_kind(value)
    return kind if kind in ("float", "pair/float") else value
_LIFTABLE: dict[tuple[Any, ...], bool] = {}


def liftable(spec: Any, params: tuple[tuple[str, Any], ...]) -> frozenset[str]:
    """The parameters of ``spec`` whose values (``params``) a program takes as arguments: a
    float or int value, or a range of two, of a numeric parameter whose every use in the op's
    code (sampler, kernel, matrix, output size and layout) takes a traced value, as
    :func:`_takes_traced` found once per op, parameter, the value's kind and the other
    parameters (or a process before this one: :mod:`augjax._runtime.store.lifts`). The rest
    (sizes, choices, switches, values the code branches on or computes with in Python) stay in
    the program's key."""
    out = []
    for name, value in params:
        kind = marker_kind(value)
        if kind is None or spec.params[name].kind not in _NUMERIC_KINDS:
            continue
        # decided per op, parameter, kind and the other parameters' structure (their floats
        # and float ranges aside)
        key = (spec, name, kind, tuple((k, _structure(v)) for k, v in params if k != name))
        known = _LIFTABLE.get(key)
        if known is None:
            from augjax._runtime.store.lifts import decided

            if len(_LIFTABLE) >= _BOUND_MAX:
                _LIFTABLE.clear()
            # kept on disk beside the stored programs, for exactly these values and this code
            known = _LIFTABLE[key] = decided(spec, params, name, _takes_traced)
        if known:
            out.append(name)
    return frozenset(out)


def _takes_traced(spec: Any, config: dict[str, Any], name: str) -> bool:
    """Whether the op takes ``name`` as a traced float32 with the computation it does for the
    value as a Python float: it traces (abstractly, on a small image) with the value as an
    argument (no branch on it, no size from it), and into the same primitives as with the
    value itself. Python arithmetic on the value before it meets the image (``1 - s + s / k``,
    in double precision) adds primitives to the traced form, and would give other bits."""
    import jax
    import jax.numpy as jnp

    from augjax._core.meta import Meta

    channels = 3 if spec.channels is None or 3 in spec.channels else spec.channels[0]
    dtype = spec.dtypes[0]
    batch = None if spec.level == "sample" else 2
    meta = Meta(16, 16, channels, dtype, batch)

    def run(value: Any, image: Any) -> Any:
        op = BoundOp(spec, tuple((k, value if k == name else v) for k, v in config.items()))
        op = _Filled(spec, op.params, op)
        op.after(Structure(16, 16, channels, dtype))
        key = jax.random.key(0) if spec.random else None
        params = op.draw(key, meta)
        if batch is None:
            out = op.run(image[0], params)
        else:
            inputs = (image,) + ((jnp.array([0, 1]),) if "labels" in spec.inputs else ())
            out = op.run_batch(inputs, params)
        if spec.matrix is not None:
            op.matrix(jax.tree_util.tree_map(lambda v: v[0], params)
                      if batch is not None else params, meta)
        return params, out

    image = jax.ShapeDtypeStruct((2, 16, 16, channels), jnp.dtype(dtype))
    weak = abstract_value(marker_kind(config[name]))
    try:
        traced = jax.make_jaxpr(run)(weak, image)
        constant = jax.make_jaxpr(lambda x: run(config[name], x))(image)
    except Exception:  # noqa: BLE001  (the code needs the value itself: it stays static)
        return False
    ints = marker_kind(config[name]) in ("int", "pair/int")
    return _primitives(traced.jaxpr, ints) == _primitives(constant.jaxpr, ints)


def _primitives(jaxpr: Any, ints: bool = False) -> list[str]:
    """The primitives of ``jaxpr`` in order, those of the jaxprs inside included; a conversion
    that changes only the weak type (a traced value's, folded for a literal) is left out, and
    with ``ints`` one from an integer to a float type (exact for the whole numbers a lifted
    int holds, below 2**24: :func:`augjax._runtime.execution.values.marker_kind`; folded for a
    literal)."""
    import numpy as np

    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "convert_element_type":
            new, old = eqn.params.get("new_dtype"), getattr(eqn.invars[0].aval, "dtype", None)
            if new == old or (ints and old is not None and np.issubdtype(old, np.integer)
                              and np.issubdtype(new, np.floating)):
                continue
        out.append(eqn.primitive.name)
        for value in eqn.params.values():
            for inner in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns"):
                    out += _primitives(inner, ints)
    return out


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


def bound(spec: Any, params: dict[str, Any], kind: type[BoundOp] = BoundOp) -> BoundOp:
    """``kind.create(spec, params)``, remembered for parameters given as plain Python values
    (``kind``: the class to make, :class:`augjax.calls.BoundOp` for the public calls)."""
    items = tuple(sorted((k, _frozen(v)) for k, v in params.items()))
    if any(f is None for _, f in items):
        return kind.create(spec, params)
    key = (kind, spec, items)
    op = _BOUND.get(key)
    if op is None:
        op = kind.create(spec, params)  # raises for bad parameters: nothing is remembered
        if len(_BOUND) >= _BOUND_MAX:
            _BOUND.clear()
        _BOUND[key] = op
    return op
