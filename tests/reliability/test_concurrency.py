"""Concurrency: pipelines in threads of one process sharing ops, and ops resolved and
compiled concurrently for the first time.

- Four DALI pipelines built and run at once in four threads, all using the same augjax chain:
  each gives exactly the batches it gives when run alone, and the chain's program is traced
  once (``augjax.trace_count()``), shared by all four ``jax_function`` operators.
- A fresh ``augjax._plugins.registry.Registry()`` asked for every op by 16 threads at once: each op is
  loaded once and every thread gets the same op object.
- 16 threads apply the same ops to the same batch at once, on a shape no one compiled before:
  each op is traced once, and every thread gets the same result as a sequential call.
"""

from __future__ import annotations

import random
import threading

import jax
import numpy as np
import pytest
from _reliability import OPS, call, channels_for, lively_params, op_names, random_images

import augjax
import augjax._plugins.registry as registry_module
from augjax._plugins.registry import Registry

THREADS = 16


def _in_threads(n: int, target, *args):
    """Runs ``target(i, *args)`` in ``n`` threads released together; returns the results and
    re-raises the first exception."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def body(i):
        try:
            barrier.wait(timeout=60)
            results[i] = target(i, *args)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


# -- DALI pipelines in threads -----------------------------------------------------------------
def _chain():
    ops = augjax.ops
    # Parameter values used nowhere else, so this program is compiled by this test.
    return augjax.compose(
        ops.flip.bind(p=0.37),
        ops.color_jitter.bind(brightness=0.31, contrast=0.29),
        ops.mixup.bind(alpha=0.33, num_classes=5, mode="elem"),
    )


def _pipeline(chain, seed):
    from nvidia.dali import fn, pipeline_def

    x = random_images(6, 14, 18, 3, np.uint8, seed=seed)
    labels = (np.arange(6, dtype=np.int32) % 5).reshape(6, 1)

    @pipeline_def(batch_size=6, num_threads=1, device_id=None, seed=seed,
                  prefetch_queue_depth=2)
    def pipe():
        images = fn.external_source(source=lambda: x, batch=True, layout="HWC")
        lab = fn.external_source(source=lambda: labels, batch=True)
        return chain(images, lab)

    p = pipe()
    p.build()
    return p


def _run(p, iterations=4):
    out = []
    for _ in range(iterations):
        images, soft = p.run()
        out.append((np.array(images.as_tensor()), np.array(soft.as_tensor())))
    return out


@pytest.mark.slow
def test_pipelines_in_threads_share_one_compiled_chain_and_stay_correct():
    chain = _chain()
    before = augjax.trace_count()
    threaded = _in_threads(4, lambda i: _run(_pipeline(chain, seed=100 + i)))
    assert augjax.trace_count() - before == 1, "the chain was traced more than once"
    for i, batches in enumerate(threaded):
        alone = _run(_pipeline(chain, seed=100 + i))
        for (a_img, a_soft), (b_img, b_soft) in zip(batches, alone):
            np.testing.assert_array_equal(a_img, b_img)
            np.testing.assert_array_equal(a_soft, b_soft)
    assert augjax.trace_count() - before == 1
    # Different seeds gave different batches (the pipelines did not share a stream).
    assert not np.array_equal(threaded[0][0][0], threaded[1][0][0])


# -- the registry, cold, from many threads -----------------------------------------------------
def test_a_cold_registry_loads_each_op_once_under_concurrent_gets(monkeypatch):
    loads: dict[str, int] = {}
    lock = threading.Lock()
    real = registry_module.load_entry_point

    def counting(record):
        with lock:
            loads[record.name] = loads.get(record.name, 0) + 1
        return real(record)

    monkeypatch.setattr(registry_module, "load_entry_point", counting)
    reg = Registry()
    names = [n for n, (spec, _) in OPS.items() if spec is not None]

    def resolve(i):
        order = names[:]
        random.Random(i).shuffle(order)
        return {name: reg.get(name) for name in order}

    got = _in_threads(THREADS, resolve)
    for name in names:
        specs = {id(g[name]) for g in got}
        assert len(specs) == 1, f"{name}: threads got {len(specs)} different objects"
        assert got[0][name] is augjax.get_op(name)
        assert loads.get(name) == 1, f"{name} loaded {loads.get(name)} times"


# -- first compilation from many threads -------------------------------------------------------
@pytest.mark.slow
def test_ops_first_called_from_many_threads_are_traced_once():
    names = op_names(lambda s: s.level == "sample")
    names = [n for n in names if OPS[n][0] is not None][:: max(1, len(names) // 8)]
    if not names:
        pytest.skip("no sample-level op loads")
    specs = [OPS[n][0] for n in names]
    configs = [(s, lively_params(s, hw=(13, 11))) for s in specs]
    # A shape no other test uses, so every program below is compiled here.
    batches = {c: random_images(3, 13, 11, c, np.float32, seed=c) for c in (1, 3, 4)}
    key = jax.random.key(5)
    before = augjax.trace_count()

    def apply_all(i):
        order = list(range(len(configs)))
        random.Random(i).shuffle(order)
        out = {}
        for j in order:
            spec, params = configs[j]
            x = batches[channels_for(spec)]
            out[j] = np.asarray(call(spec, x, key=key, **params)[0])
        return out

    results = _in_threads(THREADS, apply_all)
    assert augjax.trace_count() - before == len(configs), (
        f"{len(configs)} ops, {augjax.trace_count() - before} traces")
    for j, (spec, params) in enumerate(configs):
        expected = np.asarray(call(spec, batches[channels_for(spec)], key=key, **params)[0])
        for r in results:
            np.testing.assert_array_equal(r[j], expected, err_msg=spec.name)
    assert augjax.trace_count() - before == len(configs)
