"""A first call's two compiles at once: the apply program compiles while the sampler does.

On the CPU a call on arrays runs two programs, the sampler and the apply program
(:mod:`augjax._runtime.execution.program`; views and clips likewise). The first call of a batch
shape in a process traces, lowers and compiles each, one after the other, and XLA's compile is most
of a cold first call (the timm-style chain: 5.5 s for the sampler, 9 s for the apply program on 2
cores). XLA compiles without Python's GIL, so :func:`compile_apply` compiles the apply program
on a helper thread, for the params' shapes (the sampler's ``eval_shape``: a trace the sampler's
own compile reuses), while the caller's thread compiles and runs the sampler; the caller then
waits for the helper before it calls the apply program, which finds its executable compiled.
A cold first call costs about the larger compile instead of the sum where two cores are free.
:func:`at_once` does the same for independent pieces of one first call (the groups of views on
a list of images of different sizes), each on a helper thread, joined before the call returns.

The programs are those the call compiles anyway (the same trace, options and stored program):
the same bits. The helper runs in a copy of the caller's context; where it would not see the
caller's JAX settings (a thread-local one, e.g. ``jax.default_device(...)``, would trace
another program) or anything fails in it, it does nothing and the call compiles as before.
It is joined before the call goes on, so nothing runs behind the caller (no thread at exit).

It helps only where a core is free: on a machine already loaded (the 1-minute load average at
least the cores this process may use, less one) the two compiles only share the same cores,
and on a shared 2-core machine at load 7 to 10 the helper bought no wall time and cost up to a
tenth more CPU (``benchmarks/first_calls.py``); there the call compiles as before. With
``AUGJAX_COMPILE_AHEAD=1`` the helper always runs, with ``0`` never.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from typing import Any

import jax

__all__ = ["at_once", "compile_apply", "enabled", "first_call"]

_OFF = ("0", "false", "off", "no")


def enabled() -> bool:
    """Whether first calls compile their apply program on a helper thread: as
    ``AUGJAX_COMPILE_AHEAD`` says, else where a core is free (module doc)."""
    setting = os.environ.get("AUGJAX_COMPILE_AHEAD", "").strip().lower()
    if setting:
        return setting not in _OFF
    return _free_core()


def _free_core() -> bool:
    """Whether this process's cores are not all busy: the 1-minute load average below their
    count less one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average (Windows): the helper runs
        return cores > 1
    return cores > 1 and load < cores - 1


def _nothing() -> None:
    return None


def first_call(apply: Any, signature: Any) -> bool:
    """Whether ``apply`` has not been called for ``signature`` (a call's shapes) yet; from
    now on it has (a race of two threads at most compiles ahead twice, which costs nothing
    but the helper)."""
    seen = apply.__dict__.setdefault("_ahead_seen", set())
    if signature in seen:
        return False
    seen.add(signature)
    return True


def compile_apply(shapes: Callable[[], Any], inputs: Any, apply: Any,
                  apply_args: Callable[[Any], tuple[Any, ...]]) -> Callable[[], None]:
    """Starts compiling ``apply`` (a :class:`~augjax._runtime.store.programs.StoredProgram`) on a
    helper thread for ``apply_args(params)``, ``params`` being ``shapes()`` (the sampler's
    abstract output, e.g. its ``eval_shape``) placed where the sampler on ``inputs`` puts its
    outputs; returns the function that waits for it. Does nothing (returns a no-op) when
    off, under a trace, or when the params' shapes cannot be read (the call then raises its
    own error)."""
    if not enabled() or not hasattr(apply, "precompile"):
        return _nothing
    leaves = jax.tree_util.tree_leaves(inputs)
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        return _nothing
    try:
        device = _device(leaves)
        sharding = jax.sharding.SingleDeviceSharding(device)
        params = jax.tree_util.tree_map(
            lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding,
                                           weak_type=getattr(s, "weak_type", False)), shapes())
        args = apply_args(params)
        if any(isinstance(a, jax.core.Tracer) for a in jax.tree_util.tree_leaves(args)):
            return _nothing  # a caller's trace: nothing compiles on its own
    except Exception:  # noqa: BLE001  (the call itself traces the sampler and says why)
        return _nothing
    from augjax._runtime.execution.padding import _settings

    caller = _settings()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            if _settings() == caller:  # the helper sees the caller's JAX settings
                context.run(apply.precompile, *args)
        except Exception:  # noqa: BLE001  (the caller's own call compiles and says why)
            pass

    thread = threading.Thread(target=work, name="augjax-compile-apply", daemon=False)
    try:
        thread.start()
    except RuntimeError:  # no new thread at the interpreter's shutdown
        return _nothing
    return thread.join


def at_once(jobs: list[Callable[[], Any]]) -> list[Any]:
    """``[job() for job in jobs]``, the jobs after the first each on a helper thread where a
    core is free (:func:`enabled`): independent pieces of one call (the groups of views on a
    list of images) whose first call compiles programs of their own, which XLA compiles without
    the GIL. Each helper runs in a copy of the caller's context; one that would not see the
    caller's JAX settings leaves its job to the caller. All are joined before this returns, and
    the first job's error (in the jobs' order) is raised, as the loop would."""
    if len(jobs) < 2 or not enabled():
        return [job() for job in jobs]
    from augjax._runtime.execution.padding import _settings

    caller = _settings()
    done: list[tuple[bool, Any, BaseException | None]] = [(False, None, None)] * len(jobs)

    def work(i: int, context: contextvars.Context) -> None:
        if _settings() != caller:
            return  # left to the caller
        try:
            done[i] = (True, context.run(jobs[i]), None)
        except BaseException as err:  # noqa: BLE001  (raised by the caller, in order)
            done[i] = (True, None, err)

    threads = []
    for i in range(1, len(jobs)):
        thread = threading.Thread(target=work, args=(i, contextvars.copy_context()),
                                  name="augjax-at-once", daemon=False)
        try:
            thread.start()
        except RuntimeError:  # no new thread at the interpreter's shutdown
            break
        threads.append(thread)
    try:
        first = jobs[0]()
    finally:
        for thread in threads:
            thread.join()
    out = [first]
    for i in range(1, len(jobs)):
        ran, value, err = done[i]
        if not ran:
            value = jobs[i]()
        elif err is not None:
            raise err
        out.append(value)
    return out


def _device(leaves: list[Any]) -> Any:
    """The device the sampler runs on, where its outputs land (a stored program's rule)."""
    from augjax._runtime.store.programs import _call_device

    return _call_device(leaves)
