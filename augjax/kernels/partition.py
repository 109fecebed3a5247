"""Whether the program being traced will be partitioned over several devices.

XLA partitions a jitted program over the devices of its inputs' sharding (SPMD). Custom kernels
(Pallas calls) have no partitioning rule: XLA gathers their whole operand onto every device
first, so a data-parallel batch would be copied to every GPU and processed N times. Programs
built for inputs that span several devices are therefore traced with :func:`partitioned` true,
and ops with a custom kernel (the CUDA colour jitter) use their XLA form there, which XLA splits
along the batch.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from typing import Any

import jax

__all__ = ["array_spans_devices", "partitioned", "sharding_spans_devices", "tracing"]

_PARTITIONED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "augjax_partitioned", default=False)


def partitioned() -> bool:
    """True while tracing a program that XLA will partition over several devices."""
    return _PARTITIONED.get()


@contextlib.contextmanager
def tracing(is_partitioned: bool) -> Iterator[None]:
    """Trace the program inside this block as partitioned (or not)."""
    token = _PARTITIONED.set(bool(is_partitioned))
    try:
        yield
    finally:
        _PARTITIONED.reset(token)


def sharding_spans_devices(sharding: Any) -> bool:
    """Whether ``sharding`` (a ``jax.sharding.Sharding`` or None) covers several devices."""
    return sharding is not None and len(sharding.device_set) > 1


def array_spans_devices(x: Any) -> bool:
    """Whether the array ``x`` is laid out over several devices: a concrete ``jax.Array`` by its
    sharding, a traced one by its explicit mesh axes (under a user's ``jax.jit`` with automatic
    sharding the layout is not known when tracing: treated as one device)."""
    try:
        return sharding_spans_devices(x.sharding)
    except AttributeError:  # a tracer (or a NumPy array): the layout is in its type, if anywhere
        pass
    mesh = getattr(jax.typeof(x).sharding, "mesh", None)
    if mesh is None or not mesh.axis_names:
        return False
    explicit = [size for size, kind in zip(mesh.axis_sizes, mesh.axis_types)
                if kind == jax.sharding.AxisType.Explicit]
    return math.prod(explicit) > 1
