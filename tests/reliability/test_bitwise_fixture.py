"""Outputs stay bitwise what they were: every registered op, representative chains and the four
policies, uint8 and float32, on the CPU, against the digests recorded in ``bitwise_fixture.json``
(``bitwise_cases.py`` holds the cases and records them). A refactor that changes no formula
changes no bit; a case that differs names what moved.

The cases run in a fresh process with the XLA options the suite was started with (XLA's
defaults, as users compile), not the suite's faster compile options (tests/conftest.py): the
digests are those of the programs users get."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

import augjax
from bitwise_cases import FIXTURE
from conftest import STARTING_XLA_FLAGS

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(jax.default_backend() != "cpu",
                                 reason="the fixture is recorded on the CPU")]

RECORDED: dict[str, object] = json.loads(FIXTURE.read_text())
ROOT = Path(__file__).resolve().parents[2]


def test_fixture_covers_every_registered_op():
    recorded = {case.split("/")[1] for case in RECORDED if case.startswith("op/")}
    assert recorded == set(augjax.list_ops()), (
        "ops registered or removed since the fixture was recorded: run "
        "`python tests/reliability/bitwise_cases.py` and commit the fixture")


def test_outputs_are_bitwise_recorded(tmp_path):
    """Every case, recorded again in a fresh process compiled as users compile, equals the
    fixture (an error is recorded as its type)."""
    out = tmp_path / "now.json"
    env = {**os.environ, "XLA_FLAGS": os.environ.get(STARTING_XLA_FLAGS, ""),
           "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "tests" / "reliability"),
                                                      str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    code = ("import sys, bitwise_cases as c; from pathlib import Path; "
            "Path(sys.argv[1]).write_text(c.dumps(c.record()))")
    res = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True,
                         text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    now = json.loads(out.read_text())
    assert sorted(now) == sorted(RECORDED), (
        f"cases added {sorted(set(now) - set(RECORDED))}, gone "
        f"{sorted(set(RECORDED) - set(now))}: record the fixture again")
    moved = {case: (now[case], RECORDED[case]) for case in RECORDED if now[case] != RECORDED[case]}
    assert not moved, (f"{len(moved)} of {len(RECORDED)} cases differ from the fixture "
                       "(now, recorded):\n" + "\n".join(f"{c}: {v}" for c, v in moved.items()))
