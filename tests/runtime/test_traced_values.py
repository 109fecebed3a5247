"""Numeric values are a program's arguments: a new value of a float or int parameter, or a new
magnitude of a policy, traces and compiles nothing; the value still reaches
the op (checked against NumPy), and structure (a range, a size) still keys the program."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from jax import monitoring

import augjax
from augjax._runtime.store import programs as program_store

#: JAX's events for a trace, a lowering, a compile and a persistent-cache request.
_DURATIONS = ("/jax/core/compile/jaxpr_trace_duration",
              "/jax/core/compile/jaxpr_to_mlir_module_duration",
              "/jax/core/compile/backend_compile_duration")
_EVENTS = ("/jax/compilation_cache/compile_requests_use_cache",)
_seen: list[str] = []
monitoring.register_event_duration_secs_listener(
    lambda event, _secs, **_kw: _seen.append(event) if event in _DURATIONS else None)
monitoring.register_event_listener(
    lambda event, **_kw: _seen.append(event) if event in _EVENTS else None)


@contextlib.contextmanager
def compiles():
    """Counts what JAX traced, lowered and compiled (and augjax traced or loaded) inside."""
    counted: dict[str, int] = {}
    start, traces, loads = len(_seen), augjax.trace_count(), program_store.load_count()
    yield counted
    for event in _seen[start:]:
        name = event.rsplit("/", 1)[-1]
        counted[name] = counted.get(name, 0) + 1
    for name, n in (("augjax traces", augjax.trace_count() - traces),
                    ("store loads", program_store.load_count() - loads)):
        if n:
            counted[name] = n


@pytest.fixture(autouse=True)
def _traced(monkeypatch):
    monkeypatch.setenv("AUGJAX_PROGRAM_CACHE", "0")  # programs come from tracing, not the store
    # Every value shares one program: a batch size it ran with in an earlier test of the process
    # would make these tests' size a partial batch, whose own program compiles on its second
    # call (the recurring rule, padding.py). Here each size compiles at its first call.
    monkeypatch.setenv("AUGJAX_PARTIAL_BATCHES", "off")


def _images(dtype=np.uint8):
    x = np.random.default_rng(3).integers(0, 256, (4, 16, 16, 3), dtype=np.uint8)
    return x if dtype == np.uint8 else x.astype(np.float32) / 255


KEY = jax.random.key(5)


def in_a_fresh_process(test):
    """Runs ``test`` in a fresh interpreter (this file, that test only): compile counts then
    depend on the test alone, not on what other tests left in the process's bounded caches
    (in the full suite, after the hostile-input tests over every op, one of ten values
    compiled once more)."""
    @functools.wraps(test)
    def run():
        if os.environ.get("AUGJAX_FRESH_CHILD") == "1":
            return test()
        env = {**os.environ, "AUGJAX_FRESH_CHILD": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", f"{__file__}::{test.__name__}", "-q", "-n", "0",
             "-p", "no:cacheprovider"], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return run


@pytest.mark.slow
@in_a_fresh_process
def test_ten_values_of_flip_p_compile_nothing_after_the_first():
    x = _images()
    augjax.ops.flip(x, key=KEY, p=0.05)
    with compiles() as counted:
        outs = {p: np.asarray(augjax.ops.flip(x, key=KEY, p=p))
                for p in (0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0)}
    assert counted == {}
    np.testing.assert_array_equal(outs[0.0], x)  # the value reached the op: NumPy's mirror
    np.testing.assert_array_equal(outs[1.0], x[:, :, ::-1])


@pytest.mark.slow
@in_a_fresh_process
def test_ten_values_of_brightness_factor_compile_nothing_after_the_first():
    x = _images(np.float32)
    augjax.ops.brightness(x, key=KEY, factor=0.5)
    factors = [0.55 + 0.1 * i for i in range(10)]
    with compiles() as counted:
        outs = [np.asarray(augjax.ops.brightness(x, key=KEY, factor=f)) for f in factors]
    assert counted == {}
    for f, out in zip(factors, outs):  # torchvision's adjust_brightness: clip(x * f, 0, 1)
        np.testing.assert_allclose(out, np.clip(x * np.float32(f), 0, 1), atol=1e-6)


@pytest.mark.slow
@in_a_fresh_process
def test_a_magnitude_schedule_compiles_nothing_after_the_first_epoch():
    x = _images()
    augjax.rand_augment(n=2, m=0)(x, key=KEY)
    with compiles() as counted:
        outs = [np.asarray(augjax.rand_augment(n=2, m=m)(x, key=KEY)) for m in range(1, 11)]
    assert counted == {}
    assert not np.array_equal(outs[0], outs[-1])  # m reached the policy


@pytest.mark.slow
@in_a_fresh_process
def test_eight_values_of_posterize_bits_compile_nothing_after_the_first():
    """An int value is an argument too (posterize's ``bits``); each equals PIL's posterize
    (NumPy: keep the top ``bits`` bits of every level)."""
    x = _images()
    augjax.ops.posterize(x, key=KEY, bits=8)
    with compiles() as counted:
        outs = {b: np.asarray(augjax.ops.posterize(x, key=KEY, bits=b)) for b in range(1, 8)}
    assert counted == {}
    for b, out in outs.items():
        np.testing.assert_array_equal(out, x & np.uint8((0xFF << (8 - b)) & 0xFF))


@pytest.mark.slow
@in_a_fresh_process
def test_random_apply_p_and_its_ops_values_compile_nothing_after_the_first():
    """A composite's probability is an argument, and so are the values of the op inside it:
    ``random_apply(rotate(degrees=d), p)`` over five p and five d compiles once. p = 0 leaves
    every sample as it was, p = 1 rotates every one (as the op alone)."""
    x = _images()
    step = augjax.random_apply(augjax.ops.rotate.bind(degrees=5.0), p=0.5)
    augjax.compose(step)(x, key=KEY)
    with compiles() as counted:
        outs = {(p, d): np.asarray(augjax.compose(augjax.random_apply(
                    augjax.ops.rotate.bind(degrees=d), p=p))(x, key=KEY))
                for p, d in ((0.0, 10.0), (0.2, 15.0), (0.6, 20.0), (0.9, 25.0), (1.0, 30.0))}
    assert counted == {}
    np.testing.assert_array_equal(outs[(0.0, 10.0)], x)
    alone = augjax.compose(augjax.ops.rotate.bind(degrees=30.0))
    params = augjax.compose(augjax.random_apply(augjax.ops.rotate.bind(degrees=30.0),
                                                p=1.0)).sample(x, key=KEY)
    np.testing.assert_array_equal(outs[(1.0, 30.0)],
                                  alone.apply(x, params=[params[0]["op"]]))


def test_an_int_that_sizes_the_output_keys_the_program():
    """An int the op's structure reads (rot90's quarter turns, which swap height and width)
    stays in the program's key: no value is lifted where the code needs it as a number."""
    from augjax._runtime.execution.bound import liftable

    for k in (1, 2):
        op = augjax.ops.rot90.bind(k=k)
        assert "k" not in liftable(op.spec, op.params)
        np.testing.assert_array_equal(op(_images(), key=KEY), np.rot90(_images(), k, (1, 2)))


def test_a_traced_value_equals_the_same_value_compiled_in():
    """The value as an argument gives the bits the value as a constant gives (the sample/apply
    programs of ``step.sample``/``step.apply`` and the call take the same values)."""
    x = _images()
    for p in (0.3, 0.7):
        op = augjax.ops.flip.bind(p=p)
        np.testing.assert_array_equal(op(x, key=KEY), op.apply(x, params=op.sample(x, key=KEY)))


def test_structure_still_keys_the_program():
    x = _images(np.float32)
    augjax.ops.brightness(x, key=KEY, factor=0.5)
    with compiles() as counted:  # a range is drawn per sample: another program
        augjax.ops.brightness(x, key=KEY, factor=(0.5, 1.5))
    assert counted.get("augjax traces", 0) >= 1
    with compiles() as counted:  # another size: another program
        augjax.ops.center_crop(x, size=8)
        augjax.ops.center_crop(x, size=10)
    assert counted.get("augjax traces", 0) >= 2
