"""The program: a sequence of configured ops turned into one traced JAX function.

The same function serves the array path (``jax.jit`` over it, keys given by the caller) and the
DALI path (one ``jax_function`` whose keys are built from the per-sample seeds DALI draws). Both
are cached per (ops, layout, inputs), so building a pipeline twice or calling an op again never
recompiles for shapes already seen.
"""

from __future__ import annotations

import functools
import inspect
import math
import threading
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax.kernels.boundary import barrier, boundary_compiler_options, kept_in_caller
from augjax._runtime.execution.ahead import compile_apply
from augjax._runtime.store.compile_cache import enable as enable_compile_cache
from augjax._runtime.execution.inputs import check_images
from augjax._runtime.execution.lowering import (
    _hwc_shape,
    apply_params,
    final_layout,
    sample_steps,
    trace_count,
)
from augjax._runtime.execution.keys import keys_from_seeds, per_sample_keys
from augjax.kernels.partition import tracing
from augjax.kernels.portable import known_option, portable_compiler_options, with_portable
from augjax._runtime.store.chosen import ByOutputs
from augjax._runtime.store.programs import StoredProgram
from augjax._runtime.targets.samplers import sees_targets
from augjax._runtime.targets.follow import follow_targets
from augjax._runtime.execution.values import abstract, fill, given

__all__ = [
    "ROLES",
    "apply_params",
    "array_program",
    "build_program",
    "call_program",
    "sample_program",
    "apply_program",
    "sample_steps",
    "final_layout",
    "once_cache",
    "seeded_program",
    "trace_count",
]

#: The roles of augjax's programs, each with its XLA options (:func:`build_program`): a sampler
#: that draws a few values per sample (unoptimised on the CPU: :func:`sampler_compiler_options`),
#: a sampler that computes over whole images or fields (optimised), an apply program (its
#: steps' boundaries kept: :func:`augjax.kernels.boundary.boundary_compiler_options`), and a
#: call that samples and applies in one program (XLA's defaults), and the plan and read of a list
#: of images of different sizes (:mod:`augjax._runtime.ragged.read`: the options it gives).
ROLES = ("sample", "sample_fields", "apply", "call", "read")


def build_program(role: str, function: Any, kind: str, steps: Sequence[Any],
                  config: dict[str, Any] | None = None, *, draws: Any = None,
                  kept: bool = True, options: dict[str, Any] | None = None) -> StoredProgram:
    """Every augjax program (images, clips, views, lists) is built here: ``function`` jitted as
    a :class:`~augjax._runtime.store.programs.StoredProgram` with the options of its ``role``
    (:data:`ROLES`; ``draws``: a sampler's params' shapes, see :func:`sampler_compiler_options`;
    ``options``: a read's own) and, when ``kept``, its identity in the program store:
    ``(kind, steps, config)``, the program's kind, every step it runs in order, and what else
    its trace depends on."""
    if role not in ROLES:
        raise ValueError(f"build_program: role must be one of {ROLES}, got {role!r}")
    if options is not None and role != "read":
        raise ValueError(f"build_program: options= is for role 'read', got role {role!r}")
    options = {"sample": lambda: sampler_compiler_options(draws),
               "sample_fields": lambda: None,
               "apply": boundary_compiler_options,
               "call": lambda: None,
               "read": lambda: options}[role]()
    steps = tuple(steps)
    config = {} if config is None else config
    return StoredProgram(function, (lambda: (kind, steps, config)) if kept else None, options)

def once_cache(maxsize: int = 512):
    """``functools.lru_cache`` that builds each value once even when threads ask for the same
    key at the same time (``lru_cache`` may call the function twice then, and two jitted
    programs for one key would each trace and compile), keyed by the arguments with defaults
    applied. Keeps ``cache_info``/``cache_clear``."""

    def decorate(fn):
        cached = functools.lru_cache(maxsize=maxsize)(fn)
        lock = threading.Lock()
        signature = inspect.signature(fn)
        arity = len(signature.parameters)
        # The trailing defaults, for the positional forms that leave them out (no binding).
        defaults: list[Any] = []
        for param in reversed(signature.parameters.values()):
            if param.default is param.empty or param.kind is not param.POSITIONAL_OR_KEYWORD:
                break
            defaults.insert(0, param.default)
        fewest = arity - len(defaults)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            # One key per call, however it is spelled: lru_cache tells f(a, b=1), f(a, 1) and
            # f(a) apart, and each key would trace and compile its own program.
            if not kwargs and fewest <= len(args) < arity:  # positional: defaults appended
                args = args + tuple(defaults[len(args) - fewest:])
            elif kwargs or len(args) != arity:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                args = bound.args
            with lock:
                return cached(*args)

        wrapper.cache_info = cached.cache_info
        wrapper.cache_clear = cached.cache_clear
        return wrapper

    return decorate


#: Runs an array program keeps at hand by input signature (beyond, the shared caches serve).
_RUNS_PER_PROGRAM = 64


@once_cache(maxsize=512)
def array_program(steps: tuple[Any, ...], layout: str, start: int = 0,
                  partitioned: bool = False, targets: Any = None, seeded: bool = False):
    """The program for arrays: ``f(images, labels, keys) -> (images, labels)``; ``partitioned``
    for inputs laid out over several devices (no custom kernels). ``keys`` is one key per
    sample, or one typed key (shape ``()``) that the sampler splits itself; with ``seeded``,
    int32 seeds ``(N, 2)`` that become the keys first (:func:`keys_from_seeds`, DALI's path).

    On the CPU (and under a trace, or over several devices) it runs the two compiled programs
    that ``sample`` and ``apply`` run, one after the other (:func:`sample_program`, then
    :func:`apply_program`), so a call equals ``apply(sample(...))`` bitwise by construction.
    On a GPU it runs :func:`call_program`: the same functions in one compiled program with an
    optimisation barrier between them. That is one dispatch per call where the two programs
    cost twice the host's time, and a GPU's short calls are bound by the host's dispatch.
    """
    enable_compile_cache()
    apply = apply_program(steps, layout, partitioned, targets)
    runs: dict[tuple[Any, ...], Any] = {}
    last: list[Any] = [()]  # the values of the last call (a background compile reuses them)

    def program(images, labels, keys, *arrays):
        values = given()
        if values is None:
            values = last[0]
        last[0] = values
        form = _key_form(keys, seeded)
        device = None if isinstance(images, jax.core.Tracer) else getattr(images, "sharding",
                                                                          None)
        lookup = (images.shape, images.dtype, form, device)
        run = runs.get(lookup)
        if run is None:  # the cached lookups hash every step: once per input signature
            if len(runs) >= _RUNS_PER_PROGRAM:  # many shapes: hold no program alive
                runs.clear()
            shape, dtype = tuple(images.shape), jnp.dtype(images.dtype).name
            if _fuses(device, partitioned):
                run = call_program(steps, layout, start, shape, dtype, form, targets)
            else:
                run = _two_programs(apply, sample_program(
                    steps, layout, start, shape, dtype, form == "key",
                    sees_targets(steps, targets)), form == "seeds", partitioned)
            runs[lookup] = run
        return run(images, labels, keys, values, *arrays)

    return program


def _key_form(keys: Any, seeded: bool) -> str:
    """How a program's ``keys`` argument holds the randomness: "none", "keys" (one per sample),
    "key" (one typed key, split per sample) or "seeds" (int32 ``(N, 2)``)."""
    if keys is None:
        return "none"
    if seeded:
        return "seeds"
    return "key" if keys.ndim == 0 else "keys"


def _fuses(device: Any, partitioned: bool) -> bool:
    """Whether sampler and apply run as one program: on one device that is not a CPU (on the
    CPU most samplers compile unoptimised, see :func:`sampler_compiler_options`)."""
    return (device is not None and not partitioned and len(device.device_set) == 1
            and next(iter(device.device_set)).platform != "cpu")


def _two_programs(apply: Any, sample: Any, seeded: bool, partitioned: bool = False):
    """``apply(images, labels, sample(keys))``, the keys made from seeds first if ``seeded``.
    ``partitioned``: the params go to every device the images are on (replicated) first; a
    stored sampler's outputs are committed to the keys' device, which a program over the
    images' devices would refuse."""

    first = [not partitioned]  # the first call compiles the apply program ahead (ahead.py)

    def run(images, labels, keys, values, *arrays):
        if seeded:
            keys = _keys_from_seeds(keys)
        drawn = (keys, values, *arrays) if getattr(sample, "sees", False) else (keys, values)
        join = None
        if first[0]:
            first[0] = False
            join = compile_apply(lambda: sample.out_shapes(*drawn), drawn, apply,
                                 lambda p: (images, labels, p, values, *arrays))
        params = sample(*drawn)
        if join is not None:
            join()
        if isinstance(images, jax.core.Tracer) or isinstance(keys, jax.core.Tracer):
            params = kept_in_caller(params)  # a caller's: no sampler arithmetic in kernels
        sharding = getattr(images, "sharding", None)
        if partitioned and sharding is not None and not isinstance(images, jax.core.Tracer):
            params = jax.device_put(params, _replicated(sharding))
        return apply(images, labels, params, values, *arrays)

    return run


def _replicated(sharding: Any) -> Any:
    """A sharding that holds a whole array on every device of ``sharding``."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    if isinstance(sharding, NamedSharding):
        return NamedSharding(sharding.mesh, PartitionSpec())
    devices = sorted(sharding.device_set, key=lambda d: d.id)
    return NamedSharding(Mesh(devices, ("devices",)), PartitionSpec())


@once_cache(maxsize=512)
def call_program(steps: tuple[Any, ...], layout: str, start: int, shape: tuple[int, ...],
                 dtype: str, keys: str, targets: Any = None):
    """The jitted sampler and apply program in one: ``f(images, labels, keys, *targets)``,
    ``keys`` in the form :func:`_key_form` names.

    The params pass through :func:`~augjax.kernels.boundary.barrier`: XLA computes them as the sampler's
    own program does and fuses none of their arithmetic into the kernels, which read them from
    memory as the apply program does. The GPU tests check the call against
    ``apply(sample(...))`` bitwise for every op and policy."""
    enable_compile_cache()
    seen = sees_targets(steps, targets)
    sample = sample_program(steps, layout, start, shape, dtype, keys == "key", seen)
    apply = apply_program(steps, layout, False, targets)

    def program(images, labels, keys_in, values=(), *arrays):
        k = keys_from_seeds(keys_in) if keys == "seeds" else keys_in
        drawn = sample(k, values, *arrays) if seen is not None else sample(k, values)
        params = barrier(drawn)
        return apply(images, labels, params, values, *arrays)

    config = {"layout": layout, "start": start, "shape": shape, "dtype": dtype, "keys": keys,
              "targets": targets}
    return build_program("call", program, "call", steps, config)


_keys_from_seeds = jax.jit(keys_from_seeds)


@once_cache(maxsize=512)
def seeded_program(
    steps: tuple[Any, ...], layout: str, with_labels: bool, with_seeds: bool, start: int = 0,
    partitioned: bool = False, targets: Any = None,
):
    """The program for DALI: ``f(images[, labels][, seeds])`` returning a tuple; ``partitioned``
    where ``jax_function`` gets a sharding over several devices. The keys come from the seeds
    (``keys_from_seeds``: integer arithmetic, the same keys inside a program or before it),
    then the sampler and the apply program run as on arrays (:func:`array_program`), so the
    DALI path equals the array path with ``key=keys_from_seeds(seeds)`` bitwise."""
    enable_compile_cache()
    run = array_program(steps, layout, start, partitioned, targets, seeded=True)

    def program(*arrays):
        images, rest = arrays[0], list(arrays[1:])
        labels = rest.pop(0) if with_labels else None
        seeds = rest.pop(0) if with_seeds else None
        out, labels, *moved = run(images, labels, seeds, *rest)
        moved = tuple(moved[0]) if moved else ()
        return ((out, labels) if with_labels else (out,)) + moved

    return program


@once_cache(maxsize=512)
def sample_program(steps: tuple[Any, ...], layout: str, start: int, shape: tuple[int, ...],
                   dtype: str, split: bool = False, targets: Any = None):
    """The jitted sampler for arrays of ``shape`` and ``dtype``: ``f(keys) -> params``; with
    ``split``, ``f(key)`` for one typed key, split into one key per sample first. With
    ``targets`` (a :class:`TargetSpec`, for steps whose samplers read targets):
    ``f(keys, values, *arrays)``, the target arrays in ``targets.names`` order."""
    enable_compile_cache()
    struct = jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))

    def program(keys, values=(), *arrays):
        with tracing(False):
            for step in steps[:1]:
                check_images(struct, step, layout)
            if split:
                keys = per_sample_keys(keys, shape[0])
            return sample_steps(fill(steps, values), shape, dtype, keys, layout, start,
                                targets, arrays)

    def draws():  # the params' shapes (JAX keeps the trace for the compile that follows)
        key = jax.random.key(0)
        keys = key if split else jax.ShapeDtypeStruct((shape[0],), key.dtype)
        return jax.eval_shape(program, keys if any(s.random for s in steps) else None,
                              abstract(steps))

    # A batch-level sampler that reads targets computes over whole masks (copy_paste: an
    # (N, H, W) paste mask, a field), and draws() has no target arrays to size it: optimised.
    batch_seer = targets is not None and any(
        s.level == "batch" and s.sample_targets for s in steps)
    config = dict(layout=layout, start=start, shape=shape, dtype=dtype)
    if split:  # (the stored name of the other samplers stays as it was)
        config["split"] = True
    if targets is not None:  # (likewise)
        config["targets"] = targets
    stored = build_program("sample_fields" if batch_seer else "sample", program, "sample", steps,
                           config, draws=draws)
    stored.sees = targets is not None
    return stored


#: A sampler that draws more values per sample than this (a noise field, per-pixel draws)
#: compiles optimised on the CPU too: its run time is then the draws'.
FIELD_VALUES = 1024


def sampler_compiler_options(draws: Any = None) -> dict[str, Any] | ByOutputs | None:
    """XLA options for a sampler called outside a trace: on the CPU, no LLVM optimisation for a
    sampler that draws a few values per sample (``draws``: a function returning the params'
    shapes; None: a few values). Optimising such code buys nothing at run time, while
    compiling it optimised took half of a chain's first call (the timm-style chain's sampler,
    55 values per sample: 4.4-5.0 s optimised, 1.3-1.8 s not, ~0.6 ms per B=16 batch either
    way). A sampler that draws fields (more than :data:`FIELD_VALUES` values per sample)
    keeps XLA's optimisation: unoptimised, its draws ran 10x slower (B=16, 224x224:
    salt_and_pepper 31 -> 3.1 ms, gaussian_noise 89 -> 8.4, elastic_transform 61 -> 8.1).
    Inside a user's ``jax.jit`` the sampler is part of the user's program and compiles as it
    does (floats drawn there may differ in the last bit: XLA then contracts multiply-adds).
    Every CPU option set includes :func:`augjax.kernels.portable.portable_compiler_options`.
    With ``draws``, on the CPU, the choice itself (a
    :class:`~augjax._runtime.store.chosen.ByOutputs`, whose ``decide()`` gives the options):
    a warm process reads the params' shapes off the stored sampler instead of tracing it."""
    if jax.default_backend() != "cpu":
        return None
    if draws is None:
        return _sampler_options(None)
    return ByOutputs(_sampler_options, draws,
                     (_sampler_options(None), portable_compiler_options("cpu")))


def _sampler_options(params: Any) -> dict[str, Any] | None:
    """A sampler's CPU options for its params' shapes (None: unknown, a few values)."""
    if params is not None and _values_per_sample(params) > FIELD_VALUES:
        return portable_compiler_options("cpu")
    return with_portable({"xla_backend_optimization_level": 0, **_few_values_emitters()}, "cpu")


#: XLA:CPU's option for its MLIR fusion emitters (on by default; off: its older loop emitters).
FUSION_EMITTERS = "xla_cpu_use_fusion_emitters"


def _few_values_emitters() -> dict[str, Any]:
    """A few-values sampler's fusions through XLA:CPU's older loop emitters, where this XLA
    has them: a sampler is hundreds of small integer kernels (the per-sample keys' threefry
    rounds), which those emitters compile in less time. Same bits: the demo's 59 ops, views
    and clips, and the recorded fixture, gave the same outputs either way; ``augjax demo``
    cold 86.8 -> 74.7 CPU-s (``benchmarks/results/first-calls-cpu-2026-12-07.json``)."""
    return {FUSION_EMITTERS: False} if known_option(FUSION_EMITTERS, False) else {}


def _values_per_sample(params: Any) -> int:
    """How many values a sampler's params hold per sample (their leading axis is the batch)."""
    return sum(math.prod(leaf.shape[1:]) for leaf in jax.tree_util.tree_leaves(params))


@once_cache(maxsize=512)
def apply_program(steps: tuple[Any, ...], layout: str, partitioned: bool = False,
                  targets: Any = None):
    """The jitted deterministic program for arrays: ``f(images, labels, params, *targets)``
    returning ``(images, labels)``, or ``(images, labels, moved targets)`` when ``targets`` (a
    :class:`augjax._runtime.targets.inputs.TargetSpec`) names target arrays. Called at the top level
    on the CPU it compiles with :func:`augjax.kernels.boundary.boundary_compiler_options`, so
    that each step reads the one before from memory (:func:`apply_params`)."""
    enable_compile_cache()

    def program(images, labels, params, values=(), *arrays):
        with tracing(partitioned):
            filled = fill(steps, values)
            out, new_labels = apply_params(filled, images, labels, params, layout)
            if targets is None:
                return out, new_labels
            shape = _hwc_shape(tuple(images.shape), layout)
            moved = follow_targets(filled, params, targets, arrays, shape, images.dtype,
                                   _first_name(steps))
            return out, new_labels, moved

    # Partitioned programs run over several devices: not kept (the store is per device).
    # The compiler options keep the boundaries between steps (boundary.py).
    return build_program("apply", program, "apply", steps, dict(layout=layout, targets=targets),
                         kept=not partitioned)


def _first_name(steps: Sequence[Any]) -> str:
    return getattr(steps[0], "name", "augjax") if steps else "augjax"
