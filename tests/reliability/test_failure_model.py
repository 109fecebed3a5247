"""The failure model (docs/RELIABILITY.md): where each kind of mistake surfaces, and
what a failure does to a DALI pipeline. Each documented behaviour has a test here.

1. Definition time (``pipe()``, before ``build``): parameter values and names, call keywords
   (``key=`` in a pipeline), inputs that mix DataNodes and arrays, the number of inputs.
2. First batch (trace time, inside ``run()``): rank, dtype, channel count, labels shape, and
   anything the kernel raises while tracing; later, per batch: class ids vs ``num_classes``
   (checkify), and DALI's own checks (non-uniform batches).
3. An error inside the callback is fatal to that pipeline: ``run()`` raises ``RuntimeError``
   naming the op call and the augjax error, then every later ``run()`` raises again ("Current
   pipeline object is no longer valid"); nothing hangs. Other pipelines that use the same ops,
   and new pipelines, keep working, and reuse the compiled programs.
4. On arrays, every check runs before or while tracing, in the caller's thread, and raises the
   augjax error itself; the next valid call works.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import images

import augjax
from augjax.errors import InputError, ParamError

DEAD = "Current pipeline object is no longer valid"


def _source(array):
    return lambda: array


def _pipeline(build, *arrays, layouts=None, batch=None):
    from nvidia.dali import fn, pipeline_def

    layouts = layouts or ["HWC"] + [None] * (len(arrays) - 1)

    @pipeline_def(batch_size=batch or len(arrays[0]), num_threads=1, device_id=None, seed=3,
                  prefetch_queue_depth=1)
    def pipe():
        nodes = [fn.external_source(source=_source(a), batch=True,
                                    **({"layout": lay} if lay else {}))
                 for a, lay in zip(arrays, layouts)]
        out = build(*nodes)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    return pipe


def _built(build, *arrays, **kw):
    p = _pipeline(build, *arrays, **kw)()
    p.build()
    return p


# -- 1. definition time ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "build, exc, fragments",
    [
        (lambda x: augjax.ops.flip(x, p=2.0), ParamError, ["flip", "'p'", "2.0"]),
        (lambda x: augjax.ops.flip(x, prob=0.5), ParamError, ["flip", "unknown parameter"]),
        (lambda x: augjax.ops.color_jitter(x, hue=float("nan")), ParamError,
         ["color_jitter", "'hue'"]),
        (lambda x: augjax.ops.mixup(x, x), ParamError, ["mixup", "'num_classes'", "required"]),
        (lambda x: augjax.ops.mixup(x, num_classes=3), InputError,
         ["mixup", "2 positional input(s)"]),
        (lambda x: augjax.ops.flip(x, key=jax.random.key(0)), InputError, ["'key' is for arrays"]),
        (lambda x: augjax.ops.mixup(x, np.zeros(2, np.int32), num_classes=2), InputError,
         ["mix DALI DataNodes and arrays"]),
        (lambda x: augjax.ops.flip(x, device="tpu"), InputError, ["flip", "'device'", "tpu"]),
        (lambda x: augjax.compose(augjax.ops.flip.bind(p=0.5), augjax.ops.hue.bind(factor=0.7))(x),
         ParamError, ["hue", "'factor'"]),
    ],
)
def test_mistakes_in_the_pipeline_definition_raise_when_the_pipeline_is_defined(
        build, exc, fragments):
    pipe = _pipeline(build, images(2))
    with pytest.raises(exc) as info:
        pipe()  # defining the graph; nothing is built or run
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


# -- 2 and 3. first batch; fatal to the pipeline -----------------------------------------------
def _fails_then_dead(p, *fragments):
    with pytest.raises(RuntimeError) as first:
        p.run()
    msg = str(first.value)
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)
    assert DEAD in msg
    for _ in range(2):  # later runs fail again at once (each re-runs the failing step); no hang
        with pytest.raises(RuntimeError, match=DEAD):
            p.run()
    return msg


def test_input_checks_run_on_the_first_batch_and_kill_only_that_pipeline():
    good_x = images(2)
    chain = augjax.compose(augjax.ops.flip.bind(p=0.5), augjax.ops.brightness.bind(factor=1.2))
    good = _built(lambda x: chain(x), good_x)
    expected = np.array(good.run()[0].as_tensor())
    bad = _built(lambda x: chain(x), good_x.astype(np.int16))  # build() succeeds
    msg = _fails_then_dead(bad, "InputError", "flip: argument 'images' expects dtype",
                           "int16", "chain(x)")
    assert "Traceback" in msg or "traceback" in msg
    bad_rank = _built(lambda x: chain(x), np.ascontiguousarray(good_x[:, :, :, 0]),
                      layouts=["HW"])
    _fails_then_dead(bad_rank, "InputError", "rank 4", "rank 3")
    bad_c = _built(lambda x: augjax.ops.hue(x), images(2, c=4))
    _fails_then_dead(bad_c, "InputError", "hue: argument 'images' expects 3 channels")
    # The pipeline that works keeps working: its stream goes on as a new pipeline's does, and
    # neither it nor a rebuilt pipeline compiles anything again.
    traces = augjax.trace_count()
    later = [np.array(good.run()[0].as_tensor()) for _ in range(3)]
    again = _built(lambda x: chain(x), good_x)
    fresh = [np.array(again.run()[0].as_tensor()) for _ in range(4)]
    for got, want in zip([expected, *later], fresh):
        np.testing.assert_array_equal(got, want)
    assert augjax.trace_count() == traces


def test_an_exception_in_a_kernel_is_fatal_to_the_pipeline_and_names_its_cause():
    @augjax.op("boom_at_trace")
    def boom(image, params):
        """Raises while it is traced."""
        raise ValueError("boom from the kernel")

    p = _built(lambda x: boom(x), images(2))
    _fails_then_dead(p, "ValueError: boom from the kernel", "boom(x)")


def test_out_of_range_labels_poison_that_batch_and_the_pipeline_keeps_running():
    """Class ids are not read back to the host (a sync per batch): a batch with an id outside
    [0, num_classes) gets all-NaN soft labels, the batches around it are untouched."""
    from nvidia.dali import fn, pipeline_def

    x = images(2)

    def labels(info):  # iteration 2 holds class 5 of 3
        return np.array([[0], [5 if info.iteration == 2 else 1]], np.int32)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3, prefetch_queue_depth=1,
                  exec_dynamic=False, exec_async=False, exec_pipelined=False)
    def pipe():
        a = fn.external_source(source=lambda: x, batch=True, layout="HWC")
        b = fn.external_source(source=labels, batch=True, batch_info=True)
        return augjax.ops.mixup(a, b, num_classes=3)

    p = pipe()
    p.build()
    for it in range(4):
        soft = np.array(p.run()[1].as_tensor())
        if it == 2:
            assert np.isnan(soft).all()
        else:
            assert np.isfinite(soft).all()
            np.testing.assert_allclose(soft.sum(1), 1.0, rtol=1e-6)


def test_a_non_uniform_batch_is_fatal_and_names_the_augjax_call():
    rng = np.random.default_rng(0)
    samples = [rng.integers(0, 256, (8 + i, 10, 3), dtype=np.uint8) for i in range(3)]
    chain = augjax.compose(augjax.ops.flip.bind(p=0.5), augjax.ops.invert)
    p = _built(lambda x: chain(x), samples, batch=3)
    _fails_then_dead(p, "uniform shape", "chain(x)")


# -- 4. arrays ---------------------------------------------------------------------------------
def test_on_arrays_errors_are_raised_in_the_caller_and_the_next_call_works():
    x = images(3)
    k = jax.random.key(0)
    with pytest.raises(InputError, match="dtype"):
        augjax.ops.flip(x.astype(np.int16), key=k)
    with pytest.raises(ParamError, match="'p'"):
        augjax.ops.flip(x, key=k, p=-1)
    with pytest.raises(InputError, match=r"\[0, 2\)"):
        augjax.ops.mixup(x, np.array([0, 1, 2], np.int32), key=k, num_classes=2)
    out = augjax.ops.flip(x, key=k, p=1.0)
    np.testing.assert_array_equal(np.asarray(out), x[:, :, ::-1])
