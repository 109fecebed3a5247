"""Batch history: an op's output for a batch never depends on the batch sizes that ran before
in the process (augjax._runtime.execution.padding; docs/RELIABILITY.md, "Partial batches").

The reference for a batch of ``n`` is its own program, compiled in a fresh program cache with
padding off. Every registered op (each mode of the mixing ops), chains and augmentation
policies then run after a batch of 16 in a fresh cache under the partial-batch policies in
turn: ``pad`` (padded to 16, as every size's first batch is), ``buckets`` (at the next power of
two), ``recurring`` (padded while the size's own program compiles behind, then that program),
and each output must be bitwise the reference's. Batches of 11 take both of the CPU's ways
through a compute-bound op (chunks of 8 and a tail) and have a middle sample for the mixing
ops. The rule itself (which program runs when) is tested in tests/runtime/test_padding.py.
"""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest
from _reliability import (
    OPS,
    channels_for,
    is_mixing,
    lively_params,
    op_names,
    random_images,
    spec_or_skip,
)
from helpers import fresh_programs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiers import op_sweep

import augjax
import augjax._runtime.execution.padding as _padding
from augjax import ops

#: The program store on in this process (tests/conftest.py: STORE_OFF_ROOMS): each batch size's
#: program runs again after fresh_programs, and the store loads it instead of tracing it
#: (benchmarks/results/suite-time-cpu-2026-12-05-h37r.md).
pytestmark = pytest.mark.program_store

BIG, N, HW, CLASSES = 16, 11, (16, 16), 8


def _cases() -> list[tuple[str, str | None]]:
    """(op name, mode): every op; a mixing op once per mode (its draws are shaped by it)."""
    out = []
    for name in op_names():
        spec = OPS[name][0]
        modes = spec.params["mode"].choices if spec is not None and is_mixing(spec) and \
            "mode" in spec.params else (None,)
        out.extend((name, mode) for mode in modes)
    return out


CASES = _cases()


def _op_and_batch(name: str, mode: str | None):
    spec = spec_or_skip(name)
    params = lively_params(spec, num_classes=CLASSES, hw=HW)
    if mode is not None:
        params["mode"] = mode
    dtype = "uint8" if spec.dtypes is None or "uint8" in spec.dtypes else spec.dtypes[0]
    x = random_images(BIG, *HW, channels_for(spec), dtype, seed=5)
    y = (np.arange(BIG) * 3 % CLASSES).astype(np.int32)
    op = spec.bind(**params)

    def run(n: int):
        args = (x[:n], y[:n]) if is_mixing(spec) else (x[:n],)
        out = op(*args, key=jax.random.key(7)) if spec.random else op(*args)
        return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]

    return run


def _reference(run, monkeypatch, n: int = N):
    fresh_programs()
    with monkeypatch.context() as m:
        m.setenv(_padding.ENV, "off")
        return run(n)


def assert_history_free(run, monkeypatch, label: str, n: int = N) -> None:
    """``run(n)`` after a batch of ``BIG``, under each policy, equals ``run(n)`` alone: padded
    (``pad``: the path of every size's first batch), at its bucket (``buckets``), then under
    ``recurring`` padded while its own program compiles behind, and its own program."""
    ref = _reference(run, monkeypatch, n)
    fresh_programs()
    run(BIG)
    for policy, calls in (("pad", 1), ("buckets", 1), ("recurring", 2)):
        monkeypatch.setenv(_padding.ENV, policy)
        for i in range(calls):
            got = run(n)
            for j, (a, b) in enumerate(zip(got, ref)):
                np.testing.assert_array_equal(
                    a, b, err_msg=f"{label}: output {j} of a batch of {n} after a batch of "
                                  f"{BIG} ({policy}, call {i + 1}) differs from the batch alone")


@pytest.fixture(autouse=True)
def _padding_on(monkeypatch):
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "1")  # the default, which conftest turns off
    yield
    fresh_programs()


@pytest.mark.fast_tier(
    "brightness", "cutout", "equalize", "gaussian_blur", "gaussian_noise", "normalize", "rotate")
@pytest.mark.parametrize("name, mode", op_sweep(CASES, op=lambda case: case[0]),
                         ids=[n if m is None else f"{n}-{m}" for n, m in CASES])
def test_op_output_does_not_depend_on_earlier_batch_sizes(name, mode, monkeypatch):
    assert_history_free(_op_and_batch(name, mode), monkeypatch, name if mode is None else
                        f"{name}(mode={mode!r})")


def _chain_run(chain, mixing: bool, hw=(24, 24), per_sample: bool = False):
    x = random_images(BIG, *hw, 3, "uint8", seed=9)
    y = (np.arange(BIG) % CLASSES).astype(np.int32)
    keys = jax.random.split(jax.random.key(3), BIG)

    def run(n: int):
        key = keys[:n] if per_sample else jax.random.key(3)
        out = chain(x[:n], y[:n], key=key) if mixing else chain(x[:n], key=key)
        return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]

    return run


def _crop_chain():
    return augjax.compose(
        ops.random_resized_crop.bind(size=(16, 16)), ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.normalize.bind(chw=True))


CHAINS = {
    "crop-flip-jitter-normalize": (_crop_chain, False),
    "rand_augment": (lambda: augjax.rand_augment(n=2, m=9), False),
    "trivial_augment_wide": (lambda: augjax.trivial_augment_wide(), False),
    "auto_augment": (lambda: augjax.auto_augment(), False),
    "augmix": (lambda: augjax.augmix(), False),
    "chain-mixup_cutmix-elem": (lambda: augjax.compose(
        ops.flip.bind(p=0.5), ops.color_jitter.bind(brightness=0.4, saturation=0.4),
        ops.normalize.bind(chw=True),
        ops.mixup_cutmix.bind(num_classes=CLASSES, cutmix_alpha=1.0, mode="elem")), True),
    "chain-mixup_cutmix-batch": (lambda: augjax.compose(
        ops.flip.bind(p=0.5), ops.color_jitter.bind(brightness=0.4, saturation=0.4),
        ops.normalize.bind(chw=True),
        ops.mixup_cutmix.bind(num_classes=CLASSES, cutmix_alpha=1.0)), True),
}


#: Each compiles a dozen or more op kernels three times: rand_augment stands for them in the
#: fast tier.
SLOW_CHAINS = {"trivial_augment_wide", "auto_augment", "augmix"}


@pytest.mark.slow
@pytest.mark.parametrize("label", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW_CHAINS
                                   else k for k in sorted(CHAINS)])
def test_chains_and_policies_do_not_depend_on_earlier_batch_sizes(label, monkeypatch):
    make, mixing = CHAINS[label]
    assert_history_free(_chain_run(make(), mixing), monkeypatch, label)


@pytest.mark.slow
def test_a_chain_given_one_key_per_sample_does_not_depend_on_earlier_batch_sizes(monkeypatch):
    """Keys per sample take the other padded layout (both ends, the keys moved with their
    samples); the ops above get one key (the full batches' program as it is)."""
    assert_history_free(_chain_run(_crop_chain(), False, per_sample=True), monkeypatch,
                        "crop-flip-jitter-normalize, keys per sample")


#: Histories tried (each compiles the chain at a few sizes: ~8 s here); raise them locally with
#: AUGJAX_HYPOTHESIS_EXAMPLES=20.
EXAMPLES = int(os.environ.get("AUGJAX_HYPOTHESIS_EXAMPLES", "4"))


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(st.sampled_from([2, 5, 8, 12, 16]), min_size=1, max_size=6),
       policy=st.sampled_from(_padding.POLICIES), n=st.sampled_from([1, 5, 12]))
def test_any_history_and_policy_gives_the_batch_alone(history, policy, n, monkeypatch):
    """A cheap chain ending in a mixing op with per-sample draws: random histories of batch
    sizes under a random policy, then ``n`` three times."""
    chain = augjax.compose(ops.flip.bind(p=0.5), ops.brightness.bind(),
                           ops.mixup.bind(num_classes=CLASSES, mode="elem"))
    run = _chain_run(chain, True, hw=(8, 8))
    ref = _reference(run, monkeypatch, n)
    fresh_programs()
    monkeypatch.setenv(_padding.ENV, policy)
    for size in history:
        run(size)
    for _ in range(3):
        for a, b in zip(run(n), ref):
            np.testing.assert_array_equal(a, b, err_msg=f"{policy}: {history} then {n}")


@pytest.mark.slow
def test_dali_cpu_pipeline_does_not_depend_on_earlier_batch_sizes(monkeypatch):
    """A DALI CPU pipeline whose batch size varies (external_source): each batch of 5 after
    batches of 16 equals the array path's batch of 5 alone (keys from the same seeds)."""
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import fn, pipeline_def, types

    chain = augjax.compose(ops.flip.bind(p=0.5), ops.color_jitter.bind(brightness=0.4),
                           ops.mixup.bind(num_classes=CLASSES, mode="elem"))
    x = random_images(BIG, 16, 16, 3, "uint8", seed=2)
    y = (np.arange(BIG) % CLASSES).astype(np.int32)
    seeds = np.random.default_rng(4).integers(0, 2**30, (BIG, 2), dtype=np.int32)
    sizes = [BIG, 5, BIG, 5, 5, 5]
    with monkeypatch.context() as m, jax.default_device(jax.devices("cpu")[0]):
        m.setenv(_padding.ENV, "off")  # (on the CPU, where the pipeline's operator runs)
        keys = augjax.keys_from_seeds(seeds[:5])
        ref = [np.asarray(o) for o in chain(x[:5], y[:5], key=keys)]
    fresh_programs()

    def source(info):  # (DALI reads ahead: past the end, more of the last size)
        n = sizes[min(info.iteration, len(sizes) - 1)]
        return list(x[:n]), list(y[:n, None]), list(seeds[:n])

    @pipeline_def(batch_size=BIG, num_threads=1, device_id=None, exec_dynamic=True)
    def pipe():
        images, labels, s = fn.external_source(source, num_outputs=3, batch=True,
                                               batch_info=True, layout=["HWC", "", ""],
                                               dtype=[types.UINT8, types.INT32, types.INT32])
        return chain(images, labels, seeds=s)

    p = pipe()
    p.build()
    for i, n in enumerate(sizes):
        images, soft = p.run()
        if n == 5:
            np.testing.assert_array_equal(np.array(images.as_tensor()), ref[0],
                                          err_msg=f"DALI batch {i}: images")
            np.testing.assert_array_equal(np.array(soft.as_tensor()), ref[1],
                                          err_msg=f"DALI batch {i}: labels")
