"""CPU pytest-benchmark suite: augjax through a DALI CPU pipeline vs DALI's native CPU operators
vs the same augjax programs on arrays, in one run.

    pytest benchmarks/bench_cpu.py --benchmark-group-by=group [--benchmark-json=out.json]

Each group pits augjax against the native DALI op(s) doing the same work; the terminal summary
ends with the ratios (augjax / DALI native, lower is better) and writes them, with the machine
and versions, to benchmarks/results/cpu-<date>.json (AUGJAX_BENCH_OUT overrides the path).
B=64 images of 224x224x3 uint8 (AUGJAX_BENCH_BATCH, AUGJAX_BENCH_SIZE override).
"""

from __future__ import annotations

import os

import pytest
from pipeline_bench import JITTER, MEAN, STD, TWIST, _batches, _pipeline, native_rows

B = int(os.environ.get("AUGJAX_BENCH_BATCH", 64))
S = int(os.environ.get("AUGJAX_BENCH_SIZE", 224))
ROUNDS = int(os.environ.get("AUGJAX_BENCH_ROUNDS", 15))

RESULTS: dict[str, dict[str, float]] = {}


@pytest.fixture(scope="module")
def data():
    batches, host = _batches("cpu", B, S)
    return batches, host


def _chains():
    import augjax

    ops = augjax.ops
    return {
        "flip+color": augjax.compose(ops.flip.bind(p=0.5), ops.color_jitter.bind(**JITTER)),
        "flip+twist": augjax.compose(ops.flip.bind(p=0.5), ops.color_twist.bind(**TWIST)),
        "mirror+normalize": augjax.compose(
            ops.flip.bind(p=0.5), ops.normalize.bind(mean=MEAN, std=STD, chw=True)),
    }


def _augjax_builds():
    import augjax

    ops = augjax.ops
    chains = _chains()
    return {
        "augjax flip": lambda x: ops.flip(x, p=0.5),
        "augjax color_jitter": lambda x: ops.color_jitter(x, **JITTER),
        "augjax flip + color_jitter": lambda x: chains["flip+color"](x),
        "augjax color_twist": lambda x: ops.color_twist(x, **TWIST),
        "augjax flip + color_twist": lambda x: chains["flip+twist"](x),
        "augjax flip + normalize CHW": lambda x: chains["mirror+normalize"](x),
    }


CASES = [
    ("flip", "DALI flip", "augjax flip"),
    ("color", "DALI color_twist", "augjax color_jitter"),
    ("flip+color", "DALI flip + color_twist", "augjax flip + color_jitter"),
    ("twist", "DALI color_twist", "augjax color_twist"),
    ("flip+twist", "DALI flip + color_twist", "augjax flip + color_twist"),
    ("mirror+normalize", "DALI crop_mirror_normalize", "augjax flip + normalize CHW"),
]


@pytest.mark.parametrize("group, native, ours", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("who", ["native", "augjax"])
def test_pipeline(benchmark, data, group, native, ours, who):
    batches, _ = data
    name = native if who == "native" else ours
    build = native_rows("cpu")[native] if who == "native" else _augjax_builds()[ours]
    p = _pipeline("cpu", B, batches, build)
    for _ in range(3):  # warm-up: compile, fill the prefetch queue
        p.run()
    benchmark.group = group
    benchmark.extra_info["row"] = name
    benchmark.pedantic(p.run, rounds=ROUNDS, iterations=1)
    RESULTS.setdefault(group, {})[who] = benchmark.stats.stats.median * 1e3


@pytest.mark.parametrize("group, ours", [(c[0], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_arrays(benchmark, data, group, ours):
    """The same augjax program on arrays (no DALI): the kernel's own time."""
    import jax

    import augjax

    _, host = data
    x = jax.device_put(host[0])
    keys = jax.random.split(jax.random.key(0), B)
    ops = augjax.ops
    chains = _chains()
    call = {
        "flip": lambda: ops.flip(x, key=keys, p=0.5),
        "color": lambda: ops.color_jitter(x, key=keys, **JITTER),
        "twist": lambda: ops.color_twist(x, key=keys, **TWIST),
    }.get(group) or (lambda: chains[group](x, key=keys))
    call().block_until_ready()
    benchmark.group = group
    benchmark.pedantic(lambda: call().block_until_ready(), rounds=ROUNDS, iterations=1)
    RESULTS.setdefault(group, {})["arrays"] = benchmark.stats.stats.median * 1e3
