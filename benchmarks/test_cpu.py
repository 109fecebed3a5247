"""The CPU suite (pytest-benchmark): augjax against DALI's native CPU operators and timm, in
the same run, B=16 x 224x224x3 uint8 by default, one group per comparison.

    pytest benchmarks/ --benchmark-only                      # everything, a few minutes
    pytest benchmarks/ --benchmark-only -k "policy or recipe" # the targets' rows only
    pytest benchmarks/ --benchmark-only -k "op and flip"      # one op against its peer

Groups: ``policy/<name>`` (augjax's policy through a DALI CPU pipeline vs DALI's ``auto_aug``),
``policy/rand_augment-space`` (RandAugment over its 14 ops vs over 3, on arrays),
``recipe/dali`` (the timm-style recipe through DALI vs DALI's native recipe),
``recipe/arrays-vs-timm`` (the recipe on arrays vs timm's per-image transforms in a DataLoader
with one worker per core), ``op/<name>`` (every registered op through DALI vs its DALI peer).
augjax runs in DALI through ``jax_function(device="cpu")``, as augjax's DALI operators do; DALI
pipelines are CPU-only (``device_id=None``) with one DALI thread per core.

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


@pytest.fixture(scope="module")
def batches():
    return host_batches(B, S)


def _measure(benchmark, step, group, role, label, rounds=ROUNDS):
    """Warms ``step`` up, then times it for ``rounds`` rounds (fewer for a slow step) and files
    the row under ``group``."""
    for _ in range(WARMUP):
        t0 = time.perf_counter()
        step()
        last = time.perf_counter() - t0
    rounds = min(rounds, max(3, math.ceil(ROW_SECONDS / max(last, 1e-6))))
    benchmark.group = group
    benchmark.pedantic(step, rounds=rounds, iterations=1)
    record(benchmark, group, role, label, B)


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
    peers = cases.dali_policies()
    if who == "peer":
        if name not in peers:
            pytest.skip(f"DALI has no {name}")
        label, body = peers[name]
        p = pipeline("cpu", B, batches, body, threads=THREADS, conditionals=True)
    else:
        import augjax

        policy = cases.augjax_policies()[name]
        label = f"augjax {name}"
        p = pipeline("cpu", B, batches, lambda x: augjax.compose(policy)(x), threads=THREADS)
    _measure(benchmark, p.run, f"policy/{name}", who, label)


@pytest.mark.parametrize("space", ["3ops", "14ops"])
def test_policy_rand_augment_space(benchmark, batches, space):
    """RandAugment(n=2, m=9) on arrays over its whole space vs over 3 ops: the cost should follow
    n, not the size of the space."""
    import jax

    import augjax

    name = "rand_augment" if space == "14ops" else "rand_augment_3ops"
    chain = augjax.compose(cases.augjax_policies()[name])
    x = jax.device_put(batches[0])
    counter = itertools.count()

    def call():
        return jax.block_until_ready(chain(x, key=jax.random.key(next(counter))))

    _measure(benchmark, call, "policy/rand_augment-space", "augjax" if space == "14ops" else
             "peer", f"augjax rand_augment over {space[:-3]} ops (arrays)")


# --------------------------------------------------------------------------------------------
# the timm-style recipe


@pytest.mark.parametrize("who", ["peer", "augjax"])
def test_recipe_through_dali(benchmark, batches, who):
    if who == "peer":
        p = pipeline("cpu", B, batches, cases.dali_recipe, threads=THREADS, conditionals=True)
        label = "DALI flip + rand_augment + color_twist + crop_mirror_normalize"
    else:
        chain = cases.augjax_recipe()
        p = pipeline("cpu", B, batches, lambda x, y: chain(x, y), labels=True, threads=THREADS)
        label = "augjax recipe (one crossing)"
    _measure(benchmark, p.run, "recipe/dali", who, label)


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
            return transform(images[i]), i % cases.CLASSES

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
    if who == "peer":
        peers = cases.dali_peers("cpu")
        if name not in peers:
            pytest.skip(f"no DALI CPU peer for {name}")
        label, body = peers[name]
        p = pipeline("cpu", B, batches, body, threads=THREADS)
    else:
        body, labels = _augjax_body(cases.op_chain(name))
        label = f"augjax {name}"
        p = pipeline("cpu", B, batches, body, labels=labels, threads=THREADS)
    _measure(benchmark, p.run, f"op/{name}", who, label, rounds=max(3, ROUNDS // 2))
