"""Outputs stay bitwise what they were: every registered op, representative chains and the four
policies, uint8 and float32, on the CPU, against the digests recorded in ``bitwise_fixture.json``
(``bitwise_cases.py`` holds the cases and records them). A refactor that changes no formula
changes no bit; a case that differs names what moved."""

from __future__ import annotations

import functools
import json

import jax
import pytest

import augjax
from bitwise_cases import FIXTURE, cases

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(jax.default_backend() != "cpu",
                                 reason="the fixture is recorded on the CPU")]

RECORDED: dict[str, object] = json.loads(FIXTURE.read_text())


@functools.cache
def _runs() -> dict[str, object]:
    return dict(cases())


def test_fixture_covers_every_registered_op():
    recorded = {case.split("/")[1] for case in RECORDED if case.startswith("op/")}
    assert recorded == set(augjax.list_ops()), (
        "ops registered or removed since the fixture was recorded: run "
        "`python tests/reliability/bitwise_cases.py` and commit the fixture")


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_outputs_are_bitwise_recorded(case):
    run, recorded = _runs()[case], RECORDED[case]
    if isinstance(recorded, dict):  # an error is recorded as its type
        with pytest.raises(Exception) as err:
            run()
        assert type(err.value).__name__ == recorded["error"]
        return
    assert run() == recorded
