"""Fusion boundaries: where a compiled program keeps an intermediate image in memory.

XLA fuses a producer into each consumer that reads it, and a fused producer is computed again
for every read. Between two ops of a chain that can cost far more than both ops alone: in
``compose(random_resized_crop(224), flip(p=0.5))`` XLA:CPU fused the crop's two gather passes
(4 x 4 taps per output pixel) into flip's ``select(coin, reverse(y), y)``, which reads ``y``
twice per pixel, so the whole resample ran twice, element by element (2-core CPU, B=16,
256^2 -> 224^2 uint8: 186 ms against 22 + 1 ms for the two ops alone). The program now keeps
an op's output in memory before the next op reads it (:func:`materialize`, placed by
:func:`augjax._runtime.program.apply_params`), except after a :func:`pointwise` step that
widens its values (normalize: cheaper to recompute from its uint8 input than to write and read
back as float32) or before a pointwise consumer: a chain then costs about what its ops cost
alone, without their dispatches (``benchmarks/compose.py``).

A boundary is ``lax.optimization_barrier``, which XLA:CPU normally expands away before fusion
(its ``cse_barrier_expander`` pass turns barriers into control dependencies, which do not stop
fusion). augjax's top-level apply programs on the CPU are therefore compiled with that pass off
(:func:`boundary_compiler_options`): the barriers stay to the end and no fusion crosses them.
The values are unchanged: a barrier is the identity, and XLA:CPU computed the same bits with
and without it (every op alone against the code before, chains against the unbounded program
in ``tests/compose/test_boundaries.py``).
Inside a caller's ``jax.jit`` the program is compiled with the caller's options, where the
barriers are expanded and XLA fuses as it likes. Other platforms get no barrier (a GPU's
fusion differs, and contracts multiply-adds inside a fusion, so a boundary could move a bit).
"""

from __future__ import annotations

from typing import Any

import jax

from augjax.kernels.platform import platform_dependent

__all__ = ["BARRIER_PASS", "boundary_compiler_options", "materialize"]

#: The XLA pass that removes optimisation barriers before fusion (HLO pass name).
BARRIER_PASS = "cse_barrier_expander"


def _identity(x: Any) -> Any:
    return x


def materialize(x: Any) -> Any:
    """``x`` (an array or pytree), kept in memory where the program's compiler options keep
    barriers (:func:`boundary_compiler_options`): every later read loads it instead of fusing
    its computation again. On platforms other than the CPU, ``x`` itself. Traced."""
    return platform_dependent(x, cpu=jax.lax.optimization_barrier, default=_identity)


def boundary_compiler_options() -> dict[str, Any] | None:
    """XLA options under which :func:`materialize`'s barriers bound fusion: on a CPU backend,
    the barrier expander off; elsewhere None (no barrier is placed there)."""
    if jax.default_backend() != "cpu":
        return None
    return {"xla_disable_hlo_passes": BARRIER_PASS}


#: Primitives that compute each output element from the same element of their inputs (and
#: scalars or broadcast parameters): a step made of these only is cheap to fuse into the next.
_POINTWISE = frozenset({
    "abs", "add", "and", "broadcast_in_dim", "ceil", "clamp", "convert_element_type", "copy",
    "copy_p", "cos", "div", "eq", "exp", "exp2", "floor", "ge", "gt", "integer_pow", "is_finite",
    "le", "log", "log1p", "lt", "max", "min", "mul", "ne", "neg", "not", "or", "pow",
    "reduce_precision", "rem", "round", "rsqrt", "select_n", "sign", "sin", "sqrt", "square",
    "squeeze", "expand_dims", "stop_gradient", "sub", "tan", "tanh", "xor", "erf",
})


def pointwise(fn: Any, *args: Any) -> bool:
    """Whether ``fn(*args)`` (shapes and dtypes are enough) is pointwise: each output element
    computed from the same element of its inputs by a few elementwise primitives. Such a step
    is left to XLA's fusion (a pointwise producer fused into its consumer costs a few
    operations per read, and keeping its output would cost a write and a read); any other
    step (gathers, reversals, slices, reductions, control flow) is kept in memory."""
    structs = jax.tree_util.tree_map(lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype), args)
    try:
        closed = jax.make_jaxpr(fn)(*structs)
    except Exception:  # noqa: BLE001  (the step's own trace reports its errors)
        return False
    return _pointwise_jaxpr(closed.jaxpr)


def _pointwise_jaxpr(jaxpr: Any) -> bool:
    for eqn in jaxpr.eqns:
        subs = [v for v in eqn.params.values() if hasattr(v, "jaxpr") or hasattr(v, "eqns")]
        if subs:  # a nested call (jit, custom_jvp): pointwise if its body is
            if not all(_pointwise_jaxpr(getattr(s, "jaxpr", s)) for s in subs):
                return False
            continue
        if eqn.primitive.name not in _POINTWISE:
            return False
    return True
