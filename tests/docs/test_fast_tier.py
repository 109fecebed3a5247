"""The fast tier comes from marks on the tests (CONTRIBUTING.md, "The tests"; tests/tiers.py):
``@pytest.mark.fast_tier(*ids)`` keeps those parameter sets of a test in the tier and marks the
others slow, an id that names no parameter set stops the collection, and the per-op sweeps mark
slow the ops outside ``FAST_TIER_OPS``."""

from __future__ import annotations

import conftest
import pytest
import tiers


class _Item:
    """What conftest._fast_tier reads of a collected test."""

    def __init__(self, nodeid: str, mark=None) -> None:
        self.nodeid = nodeid
        self.marks = [mark] if mark is not None else []
        if "[" in nodeid:
            self.callspec = type("CallSpec", (), {"id": nodeid.partition("[")[2][:-1]})()

    def get_closest_marker(self, name):
        return next((m.mark for m in reversed(self.marks) if m.name == name), None)

    def add_marker(self, mark) -> None:
        self.marks.append(mark)

    @property
    def slow(self) -> bool:
        return self.get_closest_marker("slow") is not None


def test_fast_tier_marks_the_sets_it_does_not_name_slow():
    keep = pytest.mark.fast_tier("b-uint8")
    items = [_Item(f"tests/a/test_x.py::test_p[{p}]", keep) for p in ("a-uint8", "b-uint8", "c")]
    items.append(_Item("tests/a/test_x.py::test_plain"))
    conftest._fast_tier(items)
    assert [i.slow for i in items] == [True, False, True, False]


def test_a_fast_tier_id_that_names_no_parameter_set_stops_the_collection():
    keep = pytest.mark.fast_tier("renamed")
    items = [_Item(f"tests/a/test_x.py::test_p[{p}]", keep) for p in ("a", "b")]
    with pytest.raises(pytest.UsageError, match=r"test_p: .*\['renamed'\]"):
        conftest._fast_tier(items)
    # one test id asked for on the command line: its own set only is collected
    conftest._fast_tier([_Item("tests/a/test_x.py::test_p[a]", keep)])


def test_op_sweeps_and_the_kit_keep_the_heavy_work_of_the_fast_tier_ops_only():
    swept = tiers.op_sweep(["rotate", "sharpness", ("mixup_cutmix", "pair"), ("mixup", "pair")],
                           op=lambda v: v[0] if isinstance(v, tuple) else v)
    assert swept[0] == "rotate" and swept[2] == ("mixup_cutmix", "pair")
    assert [p.values for p in swept[1::2]] == [("sharpness",), ("mixup", "pair")]
    assert all(m.name == "slow" for p in swept[1::2] for m in p.marks)
    params = [pytest.param("x", "y", id=i) for i in
              ("rotate-check_geometry", "sharpness-check_geometry", "sharpness-check_loads")]
    kit = tiers.kit_tiers(pytest.mark.parametrize("op, check", params))
    assert [[m.name for m in p.marks] for p in kit.args[1]] == [[], ["slow"], []]
