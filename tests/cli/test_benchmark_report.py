"""benchmarks/report.py: the newest result file of each kind in the current schema is read, and
every target is judged met, not met or not measured from it (the benchmarks themselves are not
run by the tests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def report(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import report as module

    yield module
    sys.modules.pop("report", None)


def _write(folder: Path, name: str, data: dict) -> None:
    (folder / name).write_text(json.dumps(data))


def _cpu(ratio_randaug: float, partial: bool = False, date: str = "2026-12-02") -> dict:
    def pair(a, p):
        return {"augjax": {"label": "a", "median_ms": a, "images_per_s": 16 / a},
                "peer": {"label": "p", "median_ms": p, "images_per_s": 16 / p},
                "ratio": a / p}

    return {"benchmark": "cpu", "date": date, "partial": partial, "batch": 16, "size": 224,
            "machine": {"cpu_count": 2, "load_average_1min_start": 1.0,
                        "load_average_1min_end": 1.0},
            "versions": {"dali": "2.4.0", "jax": "0.10.2", "python": "3.11", "timm": "1"},
            "groups": {"policy/rand_augment": pair(ratio_randaug * 10, 10.0),
                       "policy/rand_augment-space": pair(14.0, 10.0)}}


def test_targets_are_judged_from_the_newest_complete_files(report, tmp_path, capsys):
    _write(tmp_path, "cpu-2026-12-01.json", _cpu(0.5, date="2026-12-01"))
    _write(tmp_path, "cpu-2026-12-02.json", _cpu(2.0))
    _write(tmp_path, "cpu-2026-12-03-partial.json", _cpu(0.1, partial=True, date="2026-12-03"))
    _write(tmp_path, "cpu-2026-12-04.json", {"ms_per_batch": {}})  # an older schema
    gpu = {"benchmark": "gpu", "date": "2026-12-02", "config": {"batch_sizes": {"arrays": [256]}},
           "machine": {"cpu_count": 16}, "versions": {"gpu": "H200", "dali": "2.4.0",
                                                      "jax": "0.11.2", "python": "3.12"},
           "rows": {"arrays/copy_floor": {"ms": 0.05},
                    "arrays/policy/rand_augment": {"augjax_ms": 0.5},
                    "arrays/op/flip": {"augjax_ms": 0.06, "x_copy_floor": 1.2, "peers": {}},
                    "arrays/op/median_blur": {"augjax_ms": 9.0, "x_copy_floor": 180.0,
                                              "peers": {"DALI median_blur": 3.0},
                                              "fastest_peer": "DALI median_blur",
                                              "ratio_fastest_peer": 3.0},
                    "dali/B=256/policy/rand_augment": {"augjax_ms": 5.0, "ratio_fastest_peer":
                                                       0.25, "peers": {"DALI": 20.0},
                                                       "fastest_peer": "DALI"}}}
    _write(tmp_path, "gpu-h200-2026-12-02.json", gpu)
    assert report.main(["--results", str(tmp_path), "--print"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines()
            if line.startswith("| ")}

    def row(text):
        return next(v for k, v in rows.items() if k.startswith(text))

    assert "2.00x | no | cpu-2026-12-02.json" in row("RandAugment(n=2, m=9) through a DALI CPU")
    assert "1.40x | **yes**" in row("RandAugment over its 14-op space")
    assert "not measured | -" in row("timm-style recipe through DALI")
    assert "0.50 ms | **yes** | gpu-h200-2026-12-02.json" in row(
        "arrays B=256: RandAugment(n=2, m=9)")
    assert "over: median_blur 9.00 ms | no" in row("arrays B=256: every core and contrib op")
    assert "0.25x | **yes**" in row("through DALI, B=256: RandAugment")
    assert "not measured" in row("through DALI, B=32: RandAugment")
    assert "not measured" in row("B=256, dynamic executor: augjax chain")  # no e2e file


def test_the_marked_sections_are_rewritten_and_checked(report, tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{report.SECTION[0]}\nold\n{report.SECTION[1]}\nafter\n")
    monkeypatch.setattr(report, "BENCH_README", readme)
    results = tmp_path / "results"
    results.mkdir()
    _write(results, "cpu-2026-12-02.json", _cpu(0.8))
    args = ["--results", str(results)]
    assert report.main([*args, "--check"]) == 1
    assert report.main(args) == 0
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith(f"{report.SECTION[1]}\nafter\n")
    assert "old" not in text and "0.80x | **yes**" in text
    assert report.main([*args, "--check"]) == 0


def test_a_gpu_target_reads_the_newest_run_that_measured_it(report, tmp_path, capsys):
    """A later run of the policies only: their targets come from it, the per-op targets (and
    the table of every op) from the older complete run."""
    def gpu(date, rows, ops=None, started=None):
        return {"benchmark": "gpu", "date": date, "started": started,
                "machine": {"cpu_count": 16},
                "config": {"batch_sizes": {"arrays": [256]}, "ops": ops},
                "versions": {"gpu": "H200", "dali": "2.4.0", "jax": "0.11.2", "python": "3.12"},
                "rows": {"arrays/copy_floor": {"ms": 0.05}, **rows}}

    old = {"arrays/policy/rand_augment": {"augjax_ms": 1.5},
           "arrays/op/flip": {"augjax_ms": 0.9, "x_copy_floor": 18.0, "peers": {}}}
    _write(tmp_path, "gpu-h200-2026-12-01.json", gpu("2026-12-01", old))
    _write(tmp_path, "gpu-h200-2026-12-02-policies.json", gpu("2026-12-02", {
        "arrays/policy/rand_augment": {"augjax_ms": 0.5},
        "arrays/op/flip": {"skipped": "--policies-only"}}, started="2026-12-02T13:00:00Z"))
    _write(tmp_path, "gpu-h200-2026-12-02-zz.json", gpu("2026-12-02", {  # earlier, more rows
        "arrays/policy/rand_augment": {"augjax_ms": 0.9}, "arrays/policy/augmix": {"augjax_ms": 9},
        "arrays/op/flip": {"augjax_ms": 0.9, "x_copy_floor": 18.0, "peers": {}}},
        started="2026-12-02T08:00:00Z"))
    _write(tmp_path, "gpu-h200-2026-12-03-one-op.json", gpu("2026-12-03", {
        "arrays/op/flip": {"augjax_ms": 0.06, "x_copy_floor": 1.2, "peers": {}}}, ops=["flip"]))
    assert report.main(["--results", str(tmp_path), "--print"]) == 0
    out = capsys.readouterr().out
    ra = next(line for line in out.splitlines() if "RandAugment(n=2, m=9) <=" in line)
    assert "0.50 ms | **yes** | gpu-h200-2026-12-02-policies.json" in ra
    ops = next(line for line in out.splitlines() if "every core and contrib op" in line)
    assert "flip 0.90 ms | no | gpu-h200-2026-12-02-zz.json" in ops


def test_a_run_under_the_legacy_executor_gives_no_target(report, tmp_path, capsys):
    """``gpu.py --executor legacy`` times augjax's and DALI's pipelines with
    ``exec_dynamic=False``: a reading of its own, never a target's (read under the default)."""
    def gpu(date, ratio, executor):
        return {"benchmark": "gpu", "date": date, "started": f"{date}T10:00:00Z",
                "machine": {"cpu_count": 16},
                "config": {"batch_sizes": {"arrays": [256]}, "executor": executor},
                "versions": {"gpu": "H200", "dali": "2.4.0", "jax": "0.11.2", "python": "3.12"},
                "rows": {"dali/B=256/op/random_resized_crop": {
                    "augjax_ms": ratio, "peers": {"DALI random_resized_crop": 1.0},
                    "fastest_peer": "DALI random_resized_crop", "ratio_fastest_peer": ratio}}}

    _write(tmp_path, "gpu-h200-2026-12-02.json", gpu("2026-12-02", 3.0, "dynamic (dali mode)"))
    _write(tmp_path, "gpu-h200-2026-12-03.json", gpu("2026-12-03", 0.9, "legacy (dali mode)"))
    assert report.main(["--results", str(tmp_path), "--print"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines()
                if "B=256: random_resized_crop" in line)
    assert "3.00x | no | gpu-h200-2026-12-02.json" in line
