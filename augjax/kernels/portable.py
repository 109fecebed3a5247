"""XLA options under which augjax's CPU programs give the same bits on every x86-64 CPU.

Two parts of XLA:CPU pick their code when they run, by the CPU they find, not by what XLA was
told (``--xla_cpu_max_isa`` changes neither):

- it hands some dots and reductions to YNNPACK (``__ynn_fusion``): augjax's programs compile
  with those fusions off (:func:`portable_compiler_options`, every CPU program);
- its own dot of larger matrices sums in an order that follows the CPU's vector width: a
  kernel whose float bits matter multiplies no dense matrices on the CPU. ``scale_jitter``'s
  resample, two dense products, gave three float32 results: ``641cc95e`` with YNNPACK on an
  AVX-512 CPU, ``ade592f1`` with XLA's dot there (and with YNNPACK on an AMD EPYC with AVX2 and
  FMA), ``2ed326a6`` with XLA's dot on the EPYC; it now sums each output's few nonzero taps in
  order (elementwise code), ``ade592f1`` on both.

XLA's elementwise code and reductions are the same on CPUs with and without AVX-512: the
recorded bitwise fixture, all 138 cases, gave the same digests under ``qemu-x86_64 -cpu
EPYC-Milan`` (an emulated AMD EPYC with AVX2 and FMA) as on an AVX-512 host, and the suite
checks it under ``--xla_cpu_max_isa=AVX2`` as well. YNNPACK off cost nothing measurable where it
had fused (``benchmarks/portable_bits.py``). Inside a caller's ``jax.jit`` a chain compiles
with the caller's options: there ``XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=`` gives
the same bits.
"""

from __future__ import annotations

import functools
from typing import Any

import jax

from augjax.kernels.embedded import in_own_program, owned

__all__ = ["YNN_FUSIONS", "known_option", "portable_compiler_options", "portable_jit",
           "top_level", "with_portable"]

#: The XLA:CPU option that lists the fusions XLA hands to YNNPACK (empty: none).
YNN_FUSIONS = "xla_cpu_experimental_ynn_fusion_type"


@functools.cache
def known_option(option: str, value: Any = "") -> bool:
    """Whether this jaxlib's XLA:CPU has ``option`` (an older or newer one may not: XLA
    refuses an unknown compile option, "No such compile option"), set to ``value``."""
    try:
        jax.jit(lambda x: x, compiler_options={option: value}).lower(0.0).compile()
    except Exception:  # noqa: BLE001  (jax.errors.JaxRuntimeError: INVALID_ARGUMENT)
        return False
    return True


def portable_compiler_options(backend: str | None = None) -> dict[str, Any] | None:
    """The options every augjax program compiles with on ``backend`` (default: JAX's): on a
    CPU, YNNPACK's fusions off (where this XLA has the option); elsewhere None."""
    if (backend or jax.default_backend()) != "cpu":
        return None
    return {YNN_FUSIONS: ""} if known_option(YNN_FUSIONS) else None


def with_portable(options: dict[str, Any] | None,
                  backend: str | None = None) -> dict[str, Any] | None:
    """``options`` with :func:`portable_compiler_options` added (``options`` win where both
    name an option); None when neither has any."""
    merged = {**(portable_compiler_options(backend) or {}), **(options or {})}
    return merged or None


def top_level() -> bool:
    """Whether this call is outside any JAX trace (a jit, vmap or grad of the caller's)."""
    return _trace_state_clean is not None and _trace_state_clean()


try:  # JAX's own test of the trace state; where it is missing, every call counts as traced
    from jax._src.core import trace_state_clean as _trace_state_clean
except ImportError:  # pragma: no cover
    _trace_state_clean = None


class portable_jit:  # noqa: N801  (used as jax.jit is)
    """``jax.jit(fn)`` compiled with :func:`with_portable` ``(options)`` when called outside a
    trace; inside a trace (where JAX refuses compile options on an inner jit) the plain
    jitted ``fn``, which compiles with the trace's program. Traced as augjax's own program
    (:func:`augjax.kernels.embedded.owned`) except inside a caller's trace."""

    def __init__(self, fn: Any, options: dict[str, Any] | None = None):
        self._plain = jax.jit(fn)  # in a caller's trace
        self._own = jax.jit(owned(fn))  # augjax's own (augjax.kernels.embedded)
        merged = with_portable(options)
        self._top = jax.jit(owned(fn), compiler_options=merged) if merged else self._own

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if top_level():
            return self._top(*args, **kwargs)
        return (self._own if in_own_program() else self._plain)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # lower, trace, eval_shape: augjax's own form
        return getattr(self._own, name)
