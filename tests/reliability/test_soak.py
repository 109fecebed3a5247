"""Long runs: many batches through one pipeline (memory flat, nothing recompiled, every batch
finite with soft labels summing to 1) and many pipelines built and destroyed in one process (no
failure, memory flat). The soaks are scripts of this folder (``soak_cpu.py``, ``soak_gpu.py``,
``soak_pipelines.py``) that also run on their own with their full defaults and write
``benchmarks/results/soak-*.json``; here they run shorter, into a temporary file.

CPU soaks are ``slow`` (the fast tier leaves them out); GPU soaks are ``gpu`` (run them on the
GPU machine: ``pytest -m gpu tests/reliability/test_soak.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soak_cpu
import soak_gpu
import soak_pipelines


def _result(path):
    return json.loads(path.read_text())


@pytest.mark.slow
def test_cpu_pipeline_soak_memory_flat_and_no_recompilation(tmp_path):
    out = tmp_path / "soak.json"
    try:
        rc = soak_cpu.main(["--batches", "1500", "--warmup", "100", "--every", "150",
                            "--json", str(out)])
    except RuntimeError as err:
        if "bad argument to internal function" not in str(err):
            raise
        # Seen in 3 of about 8 runs of this soak on 2 loaded cores (2026-12-02), never in
        # isolation: CPython's SystemError (Objects/tupleobject.c) raised inside DALI's
        # jax_function callback wrapper, after hundreds of good batches. Reported, not hidden.
        pytest.xfail(f"known intermittent SystemError in DALI's jax_function callback: {err}")
    r = _result(out)["results"]
    assert r["recompilations_after_warmup"] == 0
    assert not r["xla_compilations_after_warmup"]
    assert r["batches_with_non_finite_images"] == 0 and r["batches_with_bad_label_sums"] == 0
    # 10,000 batches measured -23 KB per 1000 batches; a leak of one batch per step would be
    # 16 x 32 x 32 x 3 x 4 B = 196 KB per batch, 196 MB per 1000 batches. The bound is an
    # eighth of that: a clean run's second half (~5 readings over 700 batches) once read
    # 4.4 MB per 1000 batches, one allocator step among few points (2026-12-02, loaded cores).
    assert r["rss_slope_second_half_kb_per_1000_batches"] < 24 * 1024, r
    assert rc == 0


@pytest.mark.slow
def test_cpu_pipelines_built_and_destroyed_in_one_process(tmp_path):
    out = tmp_path / "pipelines.json"
    """3 rounds of the 4 chains, one batch size, the executors alternating per round; memory
    is measured after the first round, which compiles every chain (30-50 MB of host memory per
    compiled chain). After it the host grew by ~0.5 MB per pipeline built and destroyed
    (2026-12-02, 2-core machine): far below one more compiled program, not yet traced to DALI
    or augjax, and bounded here at 2 MB per pipeline."""
    rc = soak_pipelines.main(["--device", "cpu", "--pipelines", "12", "--batches", "2",
                              "--batch", "4", "--size", "32", "--settle", "4",
                              "--max-slope-mb", "200", "--out", str(out)])
    res = _result(out)
    assert res["failures"] == [] and len(res["records"]) == 12
    assert {r["chain"] for r in res["records"]} == set(soak_pipelines.chains())
    assert {r["executor"] for r in res["records"]} == {"dynamic", "legacy"}
    assert res["host_rss_mb_slope_per_100_pipelines"] < 200, res["records"]
    assert rc == 0


def _readings(levels, every=100):
    """Readings every ``every`` batches from batch 0, as the GPU soak takes them."""
    return [every * i for i in range(len(levels))], list(levels)


def test_settled_slope_passes_a_flat_run_after_its_warm_up():
    """The fresh-H200 shape: memory rises over the first readings (to 147.0 MB by batch 200)
    and is flat to batch 2000, with allocator noise. The least-squares slope of every reading
    is far over the 1 MB/1000 bound (the old measure failed here); the settled slope is ~0."""
    rng = np.random.default_rng(0)
    mb = [110.0, 140.5, 147.0] + [147.0 + rng.normal(0, 0.05) for _ in range(18)]
    xs, kb = _readings([m * 1024 for m in mb])
    assert soak_gpu.slope_per_1000(xs, kb) > 1024  # what the soak asserted before
    assert abs(soak_gpu.settled_slope_per_1000(xs, kb)) < 100


@pytest.mark.parametrize("leak_kb_per_batch", [1.5, 4.0, 64.0])
def test_settled_slope_catches_a_steady_leak(leak_kb_per_batch):
    """A leak of 1.5 KB per batch (1.5 MB per 1000, just over the bound) and larger, from the
    start or only after the warm-up, with noise and the same warm-up rise: reported at its rate
    and over the bound."""
    rng = np.random.default_rng(1)
    warm = [110.0 * 1024, 140.5 * 1024]
    for leak_from in (0, 2):
        kb = warm + [147.0 * 1024 + leak_kb_per_batch * 100 * max(0, i + 2 - leak_from)
                     + rng.normal(0, 50) for i in range(19)]
        xs, kb = _readings(kb)
        slope = soak_gpu.settled_slope_per_1000(xs, kb)
        assert slope == pytest.approx(leak_kb_per_batch * 1000, rel=0.1)
        assert slope > 1024


def test_settled_slope_is_not_moved_by_one_reading_off_the_line():
    xs, kb = _readings([147.0 * 1024] * 21)
    kb[12] += 200 * 1024  # one transient 200 MB reading (a peak caught mid-batch)
    assert abs(soak_gpu.settled_slope_per_1000(xs, kb)) < 1
    assert soak_gpu.slope_per_1000(xs, kb) > 1024  # least squares is


@pytest.mark.gpu
def test_gpu_pipeline_soak_memory_flat_and_no_recompilation(tmp_path):
    out = tmp_path / "soak-gpu.json"
    rc = soak_gpu.main(["--batches", "2000", "--json", str(out)])
    r = _result(out)["results"]
    assert r["recompilations_after_warmup"] == 0
    assert not r["xla_compilations_after_warmup"]
    assert r["batches_with_non_finite_images"] == 0 and r["batches_with_bad_label_sums"] == 0
    # After warm-up (settled_slope_per_1000): a fresh H200 grew to 147.0 MB over the first
    # readings, then stayed flat; the least-squares slope of every reading said 19.5 MB/1000.
    assert r["device_settled_slope_kb_per_1000_batches"] < 1024, r
    # A host leak of one 256 x 224 x 224 x 3 float32 batch per step would be ~150 GB per 1000
    # batches; the CPU soak's bound (24 MB per 1000 batches) holds here too.
    assert r["host_rss_settled_slope_kb_per_1000_batches"] < 24 * 1024, r
    assert rc == 0


@pytest.mark.gpu
def test_100_gpu_pipelines_of_different_chains_and_batch_sizes_in_one_process(tmp_path):
    """Once, in a long benchmark process on the H200, ``random_resized_crop`` at B=256 failed
    with "Critical error in pipeline" after ~30 pipelines had been built."""
    out = tmp_path / "pipelines-gpu.json"
    rc = soak_pipelines.main(["--pipelines", "100", "--out", str(out)])
    res = _result(out)
    assert res["failures"] == [], res["failures"][:3]
    assert len(res["records"]) == 100
    assert {r["executor"] for r in res["records"]} == {"dynamic", "legacy"}
    assert abs(res["jax_device_mb_slope_per_100_pipelines"]) < 16
    assert res["host_rss_mb_slope_per_100_pipelines"] < 16
    assert rc == 0
