"""The fast tier's budget cut (CONTRIBUTING.md, "The tests"), written from a CPU profile by
``python tests/suite_profile.py <profile> --cut``: a parametrized test whose sets are costly
together keeps its cheapest set, a costly test leaves the tier where its module keeps a cheaper
one (else the module's cheapest test stays), the per-op sweeps and the conformance kit keep their
own sets, and a test its module marks slow is no candidate. The file it writes is the cut."""

from __future__ import annotations

import importlib.util
import json

import conftest
import fast_tier_cut
import pytest
import suite_profile

SWEEP = sorted(conftest.OP_SWEEPS)[0]


def _profile(folder, rows) -> str:
    folder.mkdir()
    lines = [json.dumps({"slow": False, "marked": False, "jax": {}, **r}) for r in rows]
    (folder / "gw0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(folder)


@pytest.fixture
def no_cut(monkeypatch):
    monkeypatch.setattr(fast_tier_cut, "ONE_PARAM", {})
    monkeypatch.setattr(fast_tier_cut, "LEFT_OUT", frozenset())


def test_the_cut_keeps_the_cheapest_set_and_a_test_of_every_module(tmp_path, no_cut):
    big = suite_profile.TEST_BUDGET + 1.0
    rows = [
        {"id": "tests/a/test_x.py::test_p[one]", "cpu": suite_profile.PARAM_BUDGET},
        {"id": "tests/a/test_x.py::test_p[two]", "cpu": 0.2},
        {"id": "tests/a/test_x.py::test_cheap_sweep[a]", "cpu": 0.1},
        {"id": "tests/a/test_x.py::test_cheap_sweep[b]", "cpu": 0.1},
        {"id": "tests/a/test_x.py::test_costly", "cpu": big},
        {"id": "tests/a/test_x.py::test_marked", "cpu": big, "slow": True, "marked": True},
        {"id": "tests/b/test_y.py::test_costliest", "cpu": big + 1.0},
        {"id": "tests/b/test_y.py::test_costly_but_cheapest", "cpu": big},
        {"id": f"{SWEEP}[rotate]", "cpu": big},
        {"id": f"{SWEEP}[normalize]", "cpu": 0.1},
        {"id": f"{conftest.KIT_TEST}rotate-check_geometry]", "cpu": big},
    ]
    params, out = suite_profile.fast_tier_cut(_profile(tmp_path / "prof", rows))
    assert params == {"tests/a/test_x.py::test_p": "two"}
    # the sweep's costly op leaves as a costly test of its module (tests/reliability keeps a
    # cheaper one: its normalize set); the kit's test keeps its sets
    assert out == sorted(["tests/a/test_x.py::test_costly", "tests/b/test_y.py::test_costliest",
                          f"{SWEEP}[rotate]"])
    left = {r["id"] for r in rows if suite_profile.left_out_by_cut(params, out, r["id"])}
    assert left == {"tests/a/test_x.py::test_p[one]", *out}


def test_a_costly_kept_set_takes_its_test_out_and_the_written_file_is_the_cut(
        tmp_path, no_cut, monkeypatch):
    big = suite_profile.TEST_BUDGET + 1.0
    rows = [{"id": "tests/a/test_x.py::test_p[one]", "cpu": big},
            {"id": "tests/a/test_x.py::test_p[two]", "cpu": big + 1.0},
            {"id": "tests/a/test_x.py::test_cheap", "cpu": 0.1}]
    folder = _profile(tmp_path / "prof", rows)
    monkeypatch.setattr(suite_profile, "CUT_FILE", tmp_path / "cut.py")
    suite_profile.write_cut(folder)
    spec = importlib.util.spec_from_file_location("written_cut", tmp_path / "cut.py")
    written = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(written)
    assert written.ONE_PARAM == {} and written.LEFT_OUT == {"tests/a/test_x.py::test_p"}
    assert suite_profile.left_out_by_cut(written.ONE_PARAM, written.LEFT_OUT,
                                         "tests/a/test_x.py::test_p[one]")
    assert not suite_profile.left_out_by_cut(written.ONE_PARAM, written.LEFT_OUT,
                                             "tests/a/test_x.py::test_cheap")


def test_a_later_profile_gives_the_cost_of_the_tests_it_ran(tmp_path, no_cut):
    """A test that a profile of the whole suite found cheap (the slow tests warmed the cache
    for it) leaves the tier when the fast tier's own profile finds it costly."""
    big = suite_profile.TEST_BUDGET + 1.0
    whole = _profile(tmp_path / "whole", [{"id": "tests/a/test_x.py::test_warmed", "cpu": 0.1},
                                          {"id": "tests/a/test_x.py::test_cheap", "cpu": 0.1},
                                          {"id": "tests/a/test_x.py::test_slow", "cpu": big,
                                           "slow": True, "marked": True}])
    fast = _profile(tmp_path / "fast", [{"id": "tests/a/test_x.py::test_warmed", "cpu": big},
                                        {"id": "tests/a/test_x.py::test_cheap", "cpu": 0.1}])
    assert suite_profile.fast_tier_cut(whole) == ({}, [])
    assert suite_profile.fast_tier_cut(whole, fast) == ({}, ["tests/a/test_x.py::test_warmed"])
