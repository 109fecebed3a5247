"""The CPU suite (pytest-benchmark): augjax against DALI's native CPU operators and timm, in
the same run, B=16 x 224x224x3 uint8 by default, one group per comparison.

    pytest benchmarks/ --benchmark-only                      # everything, ~10 minutes
    pytest benchmarks/ --benchmark-only -k "policy or recipe" # the targets' rows only
    pytest benchmarks/ --benchmark-only -k "op and flip"      # one op against its peer

Groups: ``policy/<name>`` (augjax's policy through a DALI CPU pipeline vs DALI's ``auto_aug``),
``policy/rand_augment-space`` (RandAugment over its 14 ops vs over 3, on arrays),
``recipe/dali`` (the timm-style recipe through DALI vs DALI's native recipe),
``recipe/arrays-vs-timm`` (the recipe on arrays vs timm's per-image transforms in a DataLoader
with one worker per core), ``op/<name>`` (every registered op through DALI vs its DALI peer).
augjax runs in DALI through ``jax_function(device="cpu")``, as augjax's DALI operators do; DALI
pipelines are CPU-only (``device_id=None``) with one DALI thread per core, synchronous by default
(``AUGJAX_BENCH_EXECUTOR``). A group's ratio is augjax's median over the peer's, each row timed
on its own; the peer is also run inside augjax's test, one batch before each augjax batch, for
a paired reading (the median of the per-round ratios; not for timm's DataLoader, whose workers
cannot pause).

The session ends with a table of the ratios (augjax / peer, lower is better) and writes them to
``benchmarks/results/cpu-<date>.json`` (``-partial`` when tests were deselected;
``AUGJAX_BENCH_OUT`` overrides the path). ``AUGJAX_BENCH_BATCH``, ``AUGJAX_BENCH_SIZE`` and
``AUGJAX_BENCH_ROUNDS`` change the batch, the image side and the timed rounds.
"""

from __future__ import annotations

import itertools
import math
import os
import time

import cases
import pytest
from cpu_results import record
from harness import host_batches, labels_for, pipeline

B = int(os.environ.get("AUGJAX_BENCH_BATCH", 16))
S = int(os.environ.get("AUGJAX_BENCH_SIZE", 224))
ROUNDS = int(os.environ.get("AUGJAX_BENCH_ROUNDS", 8))
#: Seconds of timed work a row aims at: a row whose batch takes longer gets fewer rounds (never
#: fewer than 3), which keeps the slow kernels from taking the suite's whole time.
ROW_SECONDS = float(os.environ.get("AUGJAX_BENCH_ROW_SECONDS", 3.0))
THREADS = os.cpu_count() or 2
WARMUP = 2  # runs before timing: compiles augjax's program, fills DALI's prefetch queue
#: "sync" (default): ``exec_async=False, exec_pipelined=False``, each ``run()`` is one batch's
#: whole cost and nothing runs between two timed calls, so augjax's rounds can alternate with
#: its peer's; "async": DALI's default executor with prefetching (throughput; a pipeline's
#: prefetch then overlaps the other's timed call, which pulls the paired ratio towards 1).
EXECUTOR = os.environ.get("AUGJAX_BENCH_EXECUTOR", "sync")


@pytest.fixture(scope="module")
def batches():
    return host_batches(B, S)


def _pipeline(body, **kw):
    """A CPU pipeline (``device_id=None``), one DALI thread per core, on the suite's executor."""
    if EXECUTOR == "sync":
        kw.update(exec_async=False, exec_pipelined=False, prefetch=1)
    return pipeline("cpu", B, kw.pop("batches"), body, threads=THREADS, **kw)


def _measure(benchmark, step, group, role, label, rounds=ROUNDS, partner=None):
    """Warms ``step`` up, then times it for ``rounds`` rounds (fewer for a slow step) and files
    the row under ``group``. With a ``partner`` (the peer's step), each round first runs the
    partner, timed apart (pytest-benchmark's untimed ``setup``): the median of each round's
    ratio is the group's paired ratio, a second reading beside the ratio of the two rows'
    medians (see ``cpu_results``)."""
    for _ in range(WARMUP):
        if partner is not None:
            partner()
        t0 = time.perf_counter()
        step()
        last = time.perf_counter() - t0
    rounds = min(rounds, max(3, math.ceil(ROW_SECONDS / max(last, 1e-6))))
    partner_s: list[float] = []

    def setup():
        t0 = time.perf_counter()
        partner()
        partner_s.append(time.perf_counter() - t0)

    benchmark.group = group
    benchmark.pedantic(step, rounds=rounds, iterations=1,
                       setup=setup if partner is not None else None)
    record(benchmark, group, role, label, B, partner_s=partner_s or None)


def _augjax_body(chain):
    if cases.takes_labels(chain):
        return (lambda x, y: chain(x, y)), True
    return (lambda x: chain(x)), False


# --------------------------------------------------------------------------------------------
# policies


POLICIES = ["rand_augment", "trivial_augment_wide", "auto_augment", "augmix"]


@pytest.mark.parametrize("who", ["peer", "augjax"])
@pytest.mark.parametrize("name", POLICIES)
def test_policy(benchmark, batches, name, who):
    import augjax

    peers = cases.dali_policies()
    peer = None
    if name in peers:
        peer = _pipeline(peers[name][1], batches=batches, conditionals=True)
    elif who == "peer":
        pytest.skip(f"DALI has no {name}")
    if who == "peer":
        _measure(benchmark, peer.run, f"policy/{name}", who, peers[name][0])
        return
    policy = cases.augjax_policies()[name]
    p = _pipeline(lambda x: augjax.compose(policy)(x), batches=batches)
    _measure(benchmark, p.run, f"policy/{name}", who, f"augjax {name}",
             partner=peer.run if peer else None)


@pytest.mark.parametrize("space", ["3ops", "14ops"])
def test_policy_rand_augment_space(benchmark, batches, space):
    """RandAugment(n=2, m=9) on arrays over its whole space vs over 3 ops: the cost should follow
    n, not the size of the space."""
    import jax

    import augjax

    x = jax.device_put(batches[0])
    counter = itertools.count()

    def caller(name):
        chain = augjax.compose(cases.augjax_policies()[name])
        return lambda: jax.block_until_ready(chain(x, key=jax.random.key(next(counter))))

    three = caller("rand_augment_3ops")
    group = "policy/rand_augment-space"
    if space == "3ops":
        _measure(benchmark, three, group, "peer", "augjax rand_augment over 3 ops (arrays)")
    else:
        _measure(benchmark, caller("rand_augment"), group, "augjax",
                 "augjax rand_augment over 14 ops (arrays)", partner=three)


# --------------------------------------------------------------------------------------------
# the timm-style recipe


@pytest.mark.parametrize("who", ["peer", "augjax"])
def test_recipe_through_dali(benchmark, batches, who):
    peer = _pipeline(cases.dali_recipe, batches=batches, conditionals=True)
    label = "DALI flip + rand_augment + color_twist + crop_mirror_normalize"
    if who == "peer":
        _measure(benchmark, peer.run, "recipe/dali", who, label)
        return
    chain = cases.augjax_recipe()
    p = _pipeline(lambda x, y: chain(x, y), batches=batches, labels=True)
    _measure(benchmark, p.run, "recipe/dali", who, "augjax recipe (one crossing)",
             partner=peer.run)


@pytest.fixture
def timm_loader(batches):
    """timm's transforms in a DataLoader, one worker process per core, each worker on one
    torch thread; batches of B with timm's Mixup applied in the main process."""
    import numpy as np
    import torch
    from PIL import Image

    images = [Image.fromarray(im) for im in np.concatenate(batches)]
    transform = cases.timm_transform()

    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return len(images)

        def __getitem__(self, i):
            # timm 1.0's Posterize can ask Pillow 13 for 0 bits at this magnitude with its
            # magnitude noise (ValueError: bits must be between or equal to 1 and 8): the image
            # is drawn again, which costs a rare extra transform.
            while True:
                try:
                    return transform(images[i]), i % cases.CLASSES
                except ValueError as err:
                    if "bits must be" not in str(err):
                        raise

    sampler = torch.utils.data.RandomSampler(Images(), replacement=True, num_samples=10**9)
    loader = torch.utils.data.DataLoader(
        Images(), batch_size=B, sampler=sampler, num_workers=THREADS, drop_last=True,
        persistent_workers=True, prefetch_factor=2,
        worker_init_fn=lambda _: torch.set_num_threads(1))
    it = iter(loader)
    yield it, cases.timm_mixup()
    it._shutdown_workers()  # the workers end with the test, not at the end of the session


@pytest.mark.parametrize("who", ["peer", "augjax"])
def test_recipe_arrays_vs_timm(benchmark, batches, who, request):
    if who == "peer":
        it, mixup = request.getfixturevalue("timm_loader")

        def step():
            x, y = next(it)
            return mixup(x, y)

        label = f"timm per-image transforms, DataLoader with {THREADS} workers, + Mixup"
    else:
        import jax

        chain = cases.augjax_recipe()
        x = jax.device_put(batches[0])
        y = jax.device_put(labels_for(B)[:, 0])
        counter = itertools.count()

        def step():
            return jax.block_until_ready(chain(x, y, key=jax.random.key(next(counter))))

        label = "augjax recipe on arrays"
    _measure(benchmark, step, "recipe/arrays-vs-timm", who, label)


# --------------------------------------------------------------------------------------------
# every op against its DALI peer


def _op_cases():
    names = cases.op_names()
    return [(n, w) for n in names for w in ("peer", "augjax")]


@pytest.mark.parametrize("name, who", _op_cases(), ids=[f"op-{n}-{w}" for n, w in _op_cases()])
def test_op(benchmark, batches, name, who):
    peers = cases.dali_peers("cpu")
    peer = _pipeline(peers[name][1], batches=batches) if name in peers else None
    rounds = max(3, ROUNDS // 2)
    if who == "peer":
        if peer is None:
            pytest.skip(f"no DALI CPU peer for {name}")
        _measure(benchmark, peer.run, f"op/{name}", who, peers[name][0], rounds=rounds)
        return
    body, labels = _augjax_body(cases.op_chain(name))
    p = _pipeline(body, batches=batches, labels=labels)
    _measure(benchmark, p.run, f"op/{name}", who, f"augjax {name}", rounds=rounds,
             partner=peer.run if peer else None)
