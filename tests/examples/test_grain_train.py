"""``examples/grain_train.py`` runs as a user runs it (``python examples/grain_train.py ...``, in
a process forked from the test process's server: tests/forkrun.py): grain with 2 worker processes, augjax per
record in the workers and per batch in the main process, a flax/optax step; the loss is finite
and the batches after a mid-run iterator state come back bitwise."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "grain_train.py"


@pytest.mark.slow
def test_grain_train_runs_with_two_workers_and_resumes_bitwise(fork_server, tmp_path):
    # a process forked from the test process's server (tests/forkrun.py): python SCRIPT ...
    proc = fork_server.run([str(SCRIPT), "--workers", "2", "--steps", "4", "--batch", "4",
                            "--size", "32", "--check-resume"], tmp_path, env=dict(os.environ),
                           timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, last = map(float, re.search(r"loss (\S+) -> (\S+)", proc.stdout).groups())
    assert math.isfinite(first) and math.isfinite(last)
    assert "resume: bitwise equal" in proc.stdout
    # both iterators closed: no worker's shared memory left for the resource tracker to find
    assert "leaked shared_memory" not in proc.stderr, proc.stderr[-2000:]
