"""The composition benchmark (benchmarks/compose.py) compares a chain with its two ops alone
doing the same work: each op alone draws the params it draws in the chain, and the chain's
program is the two ops' programs (the same fused loops, a boundary between them).

Before, the second op alone was ``compose(b)``, which folds 0 into its key where ``b`` in
``compose(a, b)`` folds 1: another draw. cutmix reads its partner only inside its box, so with
key 0 the chain's cutmix (a box of 35% of the image) was compared with a cutmix alone of 14%:
flip + cutmix and vflip + cutmix 1.10-1.17x "their parts" on identical programs. No timing."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import jax
import numpy as np
import pytest
from helpers import images

import augjax
from augjax import compose
from augjax._runtime.execution.program import apply_program
from augjax.kernels.boundary import boundary_compiler_options

#: The program store on in this process, as in compose.py's warming processes: their stored
#: programs' compiles are the cache entries the warmed-pairs test reads, and the programs the
#: module's other tests make (kept for the module) must take the same path
#: (tests/conftest.py: STORE_OFF_ROOMS).
pytestmark = pytest.mark.program_store

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import compose as bench  # noqa: E402  (benchmarks/compose.py)
from test_boundaries import _computations  # noqa: E402

ops = augjax.ops

#: Ops whose draws change their cost (cutmix's box, erasing's box, a crop's window), before
#: and after another op.
PAIRS = [
    (ops.flip.bind(p=0.5, horizontal=False, vertical=True),
     ops.cutmix.bind(alpha=1.0, num_classes=5)),
    (ops.brightness.bind(factor=(0.6, 1.4)), ops.cutmix.bind(alpha=1.0, num_classes=5)),
    (ops.random_erasing.bind(p=0.5), ops.cutmix.bind(alpha=1.0, num_classes=5)),
    (ops.mixup.bind(alpha=0.2, num_classes=5), ops.random_erasing.bind(p=0.5)),
    (augjax.rand_augment(n=2, m=9), ops.random_resized_crop.bind(size=40)),
]


def _leaves(tree):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(tree)]


def _run(chain, x, labels, key):
    if "labels" in chain.inputs:
        return chain(x, labels, key=key)
    return chain(x, key=key), labels


def _sample(chain, x, labels, key):
    return chain.sample(*((x, labels) if "labels" in chain.inputs else (x,)), key=key)


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "+".join(s.name for s in p))
@pytest.mark.parametrize("seed", [0])
def test_each_op_alone_draws_what_it_draws_in_the_chain(pair, seed):
    """The benchmark's two parts draw the chain's params, and the second on the first's output
    gives the chain's output, bit for bit."""
    first, second = pair
    x, labels = images(4, 48, 44, seed=seed), np.arange(4, dtype=np.int32) % 5
    key = jax.random.key(seed)
    chain = compose(first, second)
    alone_a, alone_b = bench.part(first, 0), bench.part(second, 1)
    mid = _run(alone_a, x, labels, key)
    drawn = _sample(alone_a, x, labels, key) + _sample(alone_b, *mid, key)
    want = _sample(chain, x, labels, key)
    for a, b in zip(_leaves(drawn), _leaves(want), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_leaves(_run(alone_b, *mid, key)), _leaves(_run(chain, x, labels, key))):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_own_draws_are_another_draw():
    """``--parts own-draws`` (the runs before) times ``compose(b)``, which draws another box
    than cutmix draws in the chain (with the benchmark's key 0)."""
    first, second = PAIRS[0]
    x, labels = images(4, 64, 64), np.arange(4, dtype=np.int32)
    key = jax.random.key(0)
    bench.PARTS["same_draws"] = False
    try:
        alone = bench.part(second, 1)
    finally:
        bench.PARTS["same_draws"] = True
    in_chain = _sample(compose(first, second), x, labels, key)[1]["box"]
    assert not np.array_equal(np.asarray(_sample(alone, x, labels, key)[0]["box"]),
                              np.asarray(in_chain))
    np.testing.assert_array_equal(
        np.asarray(_sample(bench.part(second, 1), x, labels, key)[0]["box"]),
        np.asarray(in_chain))


def _loops(chain, x, labels):
    """The opcode counts of each fused loop of ``chain``'s apply program (as augjax compiles
    it on the CPU), as a multiset."""
    params = _sample(chain, x, labels, jax.random.key(1))
    lab = labels if "labels" in chain.inputs else None
    compiled = apply_program(tuple(chain), "HWC").lower(x, lab, params).compile(
        boundary_compiler_options())
    comps = _computations(compiled.as_text())
    return Counter(frozenset(c.items()) for name, c in comps.items()
                   if name.startswith("fused") or "fusion" in name), compiled.as_text()


@pytest.mark.fast_tier("vflip")
@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the boundaries are CPU-only")
@pytest.mark.parametrize("first", [ops.flip.bind(p=0.5, horizontal=False, vertical=True),
                                   ops.brightness.bind(factor=(0.6, 1.4))],
                         ids=["vflip", "brightness"])
def test_a_chain_into_cutmix_runs_the_loops_of_its_parts(first):
    """compose(vflip, cutmix) and compose(brightness, cutmix) compile to the fused loops of the
    two ops alone, and a boundary between them: no loop is computed twice, none is merged."""
    second = ops.cutmix.bind(alpha=1.0, num_classes=5)
    x, labels = images(4, 48, 40), np.arange(4, dtype=np.int32)
    chain, text = _loops(compose(first, second), x, labels)
    alone_a, _ = _loops(compose(first), x, labels)
    mid = np.asarray(compose(first)(x, key=jax.random.key(0)))
    alone_b, _ = _loops(compose(second), mid, labels)
    assert chain == alone_a + alone_b
    assert text.count(" opt-barrier(") == 2  # between the ops, and after the last one


def test_warming_the_pairs_side_by_side_gives_each_pairs_own_chain_and_parts():
    """``--warm-threads``: every pair's chain and both parts are made and called once from a
    pool of threads before any is timed; each chain returned is the pair's (its output equals a
    fresh ``compose(a, b)``'s, bit for bit) and each part is cached under its op and start."""
    import argparse

    steps = {"flip": ops.flip.bind(p=0.5), "brightness": ops.brightness.bind(factor=(0.6, 1.4)),
             "rotate": ops.rotate.bind(degrees=30)}
    pairs = [("flip", "rotate"), ("rotate", "brightness"), ("brightness", "flip")]
    x, labels, key = images(2, 24, 20), np.arange(2, dtype=np.int32), jax.random.key(2)
    alone: dict = {}
    chains = bench.warm(argparse.Namespace(warm_threads=3), steps, pairs, x, labels, key, alone)
    assert set(chains) == set(pairs)
    assert set(alone) == {(a, 0) for a, _ in pairs} | {(b, 1) for _, b in pairs}
    for a, b in pairs:
        np.testing.assert_array_equal(
            np.asarray(chains[(a, b)](x, key=key)),
            np.asarray(compose(steps[a], steps[b])(x, key=key)))


@pytest.mark.slow
def test_pairs_warmed_in_other_processes_compile_nothing_here(monkeypatch):
    """``--warm-procs``: processes that each make and call a slice of the pairs fill the
    persistent compilation cache (the session's, tests/conftest.py), so the timing process
    compiles none of those programs itself: every compile of the chains and parts is a cache
    hit. Shapes no other test uses, so no program is in this process's memory already."""
    import argparse

    from jax import monitoring

    args = argparse.Namespace(device="cpu", batch=3, size=29, out_size=23, parts="same-draws",
                              warm_procs=2)
    pairs = [("flip", "rotate"), ("rotate", "brightness"), ("hue", "random_resized_crop")]
    from augjax._runtime.store.compile_cache import compilation_cache_dir

    assert compilation_cache_dir() is not None  # tests/conftest.py: the session's cache
    monkeypatch.setitem(bench.PARTS, "same_draws", True)  # what main() sets for --parts
    assert bench.warm_in_processes(args, pairs) == 0
    dev = jax.devices("cpu")[0]
    x = jax.device_put(images(3, 29, 29), dev)
    labels = jax.device_put(np.arange(3, dtype=np.int32) % bench.CLASSES, dev)
    key = jax.random.key(0)
    events: Counter = Counter()

    def count(event, **kw):
        events.update([event])

    monitoring.register_event_listener(count)
    try:
        chains = bench.warm(argparse.Namespace(warm_threads=1), bench.pair_ops(23), pairs, x,
                            labels, key, {})
    finally:
        monitoring.unregister_event_listener(count)
    assert set(chains) == set(pairs)
    # a program the warming processes made is read from the cache (or augjax's program store,
    # which skips JAX's compile altogether); one they did not make would be a miss here
    assert events["/jax/compilation_cache/cache_misses"] == 0, events
