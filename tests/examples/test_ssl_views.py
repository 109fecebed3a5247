"""``examples/ssl_views.py`` on the CPU: the DINO recipe through a DALI CPU pipeline (one
jax_function making every view) into a jitted training step, and SimCLR's two views on arrays."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nvidia.dali.plugin.jax")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ssl_views.py"
SMALL = ["--batch", "4", "--size", "64", "--global-size", "32", "--local-size", "16",
         "--local-count", "2"]


@pytest.fixture(scope="module")
def ssl():
    spec = importlib.util.spec_from_file_location("augjax_example_ssl_views", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_dino_step_on_dali_views(ssl, capsys):
    losses = ssl.train(ssl.parse(["--steps", "2", *SMALL]))
    assert len(losses) == 2 and np.isfinite(losses).all()
    out = capsys.readouterr().out
    assert "'global': ((4, 2, 32, 32, 3), 'float32')" in out
    assert "'local': ((4, 2, 16, 16, 3), 'float32')" in out


def test_dali_views_differ_per_view(ssl):
    """The example's pipeline draws per-sample seeds; the views it yields are distinct per view
    (each view its own key), normalized floats."""
    recipe = ssl.make_recipe("dino", 32, 16, 2)
    views = next(ssl.dali_batches(recipe, 4, 64, "cpu", 0))
    glob, loc = views["global"], views["local"]
    assert glob.dtype == np.float32 and abs(glob.mean()) < 3
    flat = loc.reshape(8, -1)
    assert len({row.tobytes() for row in flat}) == 8


@pytest.mark.slow
def test_simclr_on_arrays_main(ssl):
    assert ssl.main(["--recipe", "simclr", "--source", "arrays", "--steps", "2", *SMALL]) == 0
