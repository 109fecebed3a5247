"""The call's program on GPUs: the sampler and the apply program compiled as one
(:func:`augjax._runtime.execution.program.call_program`), one dispatch per call.

The call must still equal ``apply(sample(...))`` bitwise. On a GPU that is checked through the
public API for every registered op and policy. On the CPU, where calls run the two programs,
the fused program is checked against the apply program fed by the sampler compiled as the
fused one compiles it (optimised, inside a ``jax.jit``): the barrier keeps the sampler's
arithmetic apart from the kernels'. Also here: the program caches' keys (``once_cache``) and
the samplers' compiler options on the CPU."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax
from augjax._plugins.registry import REGISTRY
from augjax._runtime.execution import program as prog
from augjax.testing._examples import example_params

N, SIZE, CLASSES = 6, 32, 10

POLICIES = {
    "rand_augment": lambda: augjax.policies.rand_augment(n=2, m=9),
    "trivial_augment_wide": augjax.policies.trivial_augment_wide,
    "auto_augment": augjax.policies.auto_augment,
    "augmix": augjax.policies.augmix,
}


def _step(name: str):
    if name in POLICIES:
        return POLICIES[name]()
    spec = REGISTRY.get(name)
    params = example_params(spec)
    if "num_classes" in spec.params:
        params["num_classes"] = CLASSES
    return spec.bind(**params)


def _inputs(step, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = jax.numpy.asarray(rng.integers(0, 256, (N, SIZE, SIZE, 3), dtype=np.uint8))
    y = jax.numpy.asarray(np.arange(N, dtype=np.int32) % CLASSES)
    return (x, y) if "labels" in step.inputs else (x,)


def _leaves(out):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(out)]


def _assert_same(got, want, name):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w, err_msg=name)


#: The CPU check: the policies and the ops whose samplers compute floats the kernels use.
CPU_CASES = [*POLICIES, "color_jitter", "elastic_transform", "mixup", "mixup_cutmix",
             "random_resized_crop", "rotate"]


@pytest.mark.fast_tier("rotate")
@pytest.mark.parametrize("name", CPU_CASES)
def test_the_fused_program_equals_apply_of_the_sampler_it_holds(name):
    step = _step(name)
    steps, start = step.program()
    steps = tuple(steps)
    inputs = _inputs(step)
    x, labels = inputs[0], (inputs[1] if len(inputs) > 1 else None)
    key = jax.random.key(7)
    sampler = prog.sample_program(steps, "HWC", start, tuple(x.shape), "uint8", True)
    params = jax.jit(lambda k: sampler(k))(key)  # traced: compiled as inside the fused one
    want = prog.apply_program(steps, "HWC")(x, labels, params)
    got = prog.call_program(steps, "HWC", start, tuple(x.shape), "uint8", "key")(x, labels, key)
    _assert_same(got, want, name)


@pytest.mark.slow
def test_seeds_give_the_keys_of_keys_from_seeds_in_the_fused_program():
    step = _step("color_jitter")
    steps = tuple(step.program()[0])
    x = _inputs(step)[0]
    seeds = augjax.index_seeds(np.arange(N), seed=3)
    fused = prog.call_program(steps, "HWC", 0, tuple(x.shape), "uint8", "seeds")(x, None, seeds)
    keyed = prog.call_program(steps, "HWC", 0, tuple(x.shape), "uint8", "keys")(
        x, None, augjax.keys_from_seeds(seeds))
    _assert_same(fused, keyed, "color_jitter")


@pytest.mark.slow
def test_calls_on_the_cpu_run_the_two_programs(monkeypatch):
    """On the CPU the samplers compile unoptimised (fast to compile): calls keep them."""
    if jax.default_backend() != "cpu":
        pytest.skip("the CPU's dispatch: JAX's default device here is not a CPU")
    built = []
    monkeypatch.setattr(prog, "call_program", lambda *a, **k: built.append(a))
    step = _step("color_jitter")
    x = _inputs(step, seed=1)[0]
    out = augjax.compose(step)(x, key=jax.random.key(0))
    assert not built
    _assert_same(out, step.apply(x, params=step.sample(x, key=jax.random.key(0))), "jitter")


@pytest.mark.gpu
def test_every_call_on_a_gpu_equals_apply_of_sample_bitwise():
    """On a GPU calls run the fused program: for every registered op and policy the call
    equals ``apply(sample(...))`` through the public API, bitwise."""
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("needs a GPU as JAX's default device")
    # Fresh programs (an earlier call may have kept its fused run): every call below builds one.
    prog.array_program.cache_clear()
    prog.call_program.cache_clear()
    names = sorted(augjax.list_ops()) + list(POLICIES)
    for name in names:
        step = _step(name)
        inputs = _inputs(step, seed=len(name))
        key = jax.random.key(len(name))
        call = augjax.compose(step)
        got = call(*inputs, key=key)
        want = call.apply(*inputs, params=call.sample(*inputs, key=key))
        _assert_same(got, want, name)
    assert prog.call_program.cache_info().misses >= len(names)


def test_the_program_caches_key_every_spelling_of_a_call_once():
    """``f(a)``, ``f(a, 1)``, ``f(a, b=1)`` and ``f(a=a)`` are one entry, built once (each
    entry would trace and compile its own program); a missing argument is still refused."""
    built = []

    @prog.once_cache()
    def f(a, b=1, c="x"):
        built.append((a, b, c))
        return object()

    first = f(2)
    assert f(2, 1) is first and f(2, 1, "x") is first and f(2, b=1) is first
    assert f(a=2, c="x") is first
    assert f(2, 3) is not first and built == [(2, 1, "x"), (2, 3, "x")]
    with pytest.raises(TypeError):
        f()


def _targets(seed: int = 0):
    """Instance masks, boxes and keypoints for :func:`_inputs`' batch."""
    rng = np.random.default_rng(seed)
    masks = rng.integers(0, 4, (N, SIZE, SIZE)).astype(np.int32)
    corners = np.sort(rng.uniform(0, SIZE, (N, 3, 2, 2)), axis=2)  # two (x, y), sorted
    boxes = corners.reshape(N, 3, 4).astype(np.float32)  # x1, y1, x2, y2
    keypoints = rng.uniform(0, SIZE, (N, 5, 2)).astype(np.float32)
    return {"masks": masks, "boxes": boxes, "keypoints": keypoints}


@pytest.mark.gpu
def test_calls_with_targets_layouts_and_padding_on_a_gpu_equal_apply_of_sample():
    """The fused program with what else a call takes: masks, boxes and keypoints following a
    geometric chain; channels-first images; labels; a smaller batch run padded to a larger
    one's program. Each equals ``apply(sample(...))`` bitwise."""
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("needs a GPU as JAX's default device")
    ops = augjax.ops
    key = jax.random.key(11)
    geometric = augjax.compose(ops.rotate, ops.shear_x, ops.flip,
                               ops.random_crop.bind(size=(28, 24), padding=2))
    x = _inputs(geometric)[0]
    targets = _targets()
    got = geometric(x, key=key, **targets)
    want = geometric.apply(x, params=geometric.sample(x, key=key), **targets)
    assert set(got) >= {"images", "masks", "boxes", "keypoints"}
    for name in want:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), name)

    jitter = augjax.compose(ops.color_jitter.bind(brightness=0.4, contrast=0.4, hue=0.1),
                            ops.rotate)
    chw = jax.numpy.transpose(x, (0, 3, 1, 2))
    got = jitter(chw, key=key, layout="CHW")
    want = jitter.apply(chw, params=jitter.sample(chw, key=key, layout="CHW"), layout="CHW")
    _assert_same(got, want, "CHW")

    mix = augjax.compose(_step("mixup_cutmix"))
    inputs = _inputs(mix, seed=2)
    _assert_same(mix(*inputs, key=key), mix.apply(*inputs, params=mix.sample(*inputs, key=key)),
                 "labels")

    jitter(x, key=key)  # compiles for N; a smaller batch then runs padded to N
    part = x[: N - 2]
    got = jitter(part, key=key)
    assert got.shape[0] == N - 2
    _assert_same(got, jitter.apply(part, params=jitter.sample(part, key=key)), "padded")


@pytest.mark.slow
def test_samplers_that_draw_fields_compile_optimised_on_the_cpu():
    """On the CPU a sampler of a few values per sample compiles unoptimised (fast to compile);
    one that draws a field per sample (noise, per-pixel draws) keeps XLA's optimisation, its
    run time being the draws'. Both give the draws of the sampler traced in a ``jax.jit``."""
    if jax.default_backend() != "cpu":
        pytest.skip("the CPU's compiler options: JAX's default device here is not a CPU")
    from augjax.kernels.portable import known_option, portable_compiler_options

    def portable():  # every CPU program's options (augjax.kernels.portable)
        return portable_compiler_options("cpu") or {}

    few = {"angle": jax.ShapeDtypeStruct((N,), np.float32),
           "box": jax.ShapeDtypeStruct((N, 4), np.int32)}
    field = {"noise": jax.ShapeDtypeStruct((N, SIZE, SIZE, 3), np.float32)}
    unoptimised = {"xla_backend_optimization_level": 0, **portable(),
                   **({prog.FUSION_EMITTERS: False}
                      if known_option(prog.FUSION_EMITTERS, False) else {})}
    assert prog.sampler_compiler_options(lambda: few).decide() == unoptimised
    assert prog.sampler_compiler_options(lambda: field).decide() == (portable() or None)
    assert prog.sampler_compiler_options() == unoptimised
    x = _inputs(_step("flip"))[0]
    key = jax.random.key(4)
    for name, optimised in (("salt_and_pepper", True), ("gaussian_noise", True),
                            ("rotate", False), ("flip", False)):
        steps, start = _step(name).program()
        sampler = prog.sample_program(tuple(steps), "HWC", start, tuple(x.shape), "uint8", True)
        level = (sampler._options or {}).get("xla_backend_optimization_level")
        assert (level is None) is optimised, name
        if optimised:  # compiled as inside a jit: the same draws
            _assert_same(sampler(key), jax.jit(lambda k, s=sampler: s(k))(key), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted({*POLICIES, *REGISTRY.list_ops()}))
def test_few_values_samplers_draw_the_same_bits_through_either_fusion_emitter(name):
    """On the CPU a sampler of a few values per sample compiles through XLA's older loop
    emitters (its MLIR fusion emitters off: hundreds of small kernels compile in less time).
    Its draws must be the ones XLA's default emitters give, for every op and policy."""
    if jax.default_backend() != "cpu":
        pytest.skip("the CPU's compiler options: JAX's default device here is not a CPU")
    from augjax.kernels.portable import known_option

    if not known_option(prog.FUSION_EMITTERS, False):
        pytest.skip(f"this jaxlib's XLA:CPU has no {prog.FUSION_EMITTERS} option")
    step = _step(name)
    steps, start = step.program()
    x = _inputs(step)[0]
    sampler = prog.sample_program(tuple(steps), "HWC", start, tuple(x.shape), "uint8", True)
    options = sampler._options or {}
    if options.get(prog.FUSION_EMITTERS) is not False:
        assert options.get("xla_backend_optimization_level") is None, (name, options)
        return  # a sampler of fields: compiled optimised, with XLA's default emitters
    key = jax.random.key(11)
    shipped = jax.jit(sampler._own, compiler_options=options)(key)
    default = jax.jit(sampler._own, compiler_options={**options,
                                                      prog.FUSION_EMITTERS: True})(key)
    _assert_same(shipped, default, name)
