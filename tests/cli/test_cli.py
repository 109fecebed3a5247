"""The augjax command line: list and info."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from augjax.cli.main import main


def test_list_plain_pattern_and_json(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    names = [line.split()[0] for line in out.splitlines()]
    assert {"flip", "color_jitter", "mixup"} <= set(names)
    assert "augjax==" in out
    assert main(["list", "color*"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names and all(n.startswith("color") for n in names)
    assert main(["list", "mix*", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    mixup = next(r for r in records if r["name"] == "mixup")
    assert mixup["distribution"] == "augjax"
    assert mixup["entry_point"] == "augjax.catalog.mix:mixup"
    assert mixup["status"] in ("available", "loaded")


def test_info_shows_params_ranges_defaults_level_source(capsys):
    assert main(["info", "color_jitter"]) == 0
    out = capsys.readouterr().out
    for fragment in ("color_jitter:", "level:        sample", "uint8, float32", "HWC, CHW",
                     "augjax==", "brightness:", "hue:", "[-0.5, 0.5]", "default 0.0",
                     "neutral 0.0", "torchvision.transforms.v2.ColorJitter"):
        assert fragment in out, fragment
    assert main(["info", "mixup", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["level"] == "batch" and info["outputs"] == ["images", "labels"]
    assert info["params"]["num_classes"]["required"] is True


def test_info_shows_geometry_and_how_each_target_follows(capsys):
    assert main(["info", "rotate"]) == 0
    out = capsys.readouterr().out
    assert "geometric:    yes (matrix=" in out
    assert "masks:        through the kernel (interpolation='nearest', fill=None)" in out
    assert "boxes:        moved by the matrix" in out and "keypoints:    moved by the matrix" in out
    assert main(["info", "elastic_transform"]) == 0
    out = capsys.readouterr().out
    assert "geometric:    yes, without a matrix" in out and "keypoints:    refused" in out
    assert main(["info", "brightness", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["geometric"].startswith("no") and info["targets"]["how"]["masks"] == (
        "kept unchanged")


def test_info_prints_a_magnitude_map_as_users_read_it(capsys):
    """The values at level 0 and at the largest level and the formula of t (was: the whole
    ``MagnitudeMap(...)`` repr); the JSON gives the map's fields."""
    assert main(["info", "brightness"]) == 0
    out = capsys.readouterr().out
    assert "magnitude (1, 1.9): 1 ± lerp(0, 0.9, t);" in out and "MagnitudeMap(" not in out
    assert "t = level / largest level" in out
    assert main(["info", "rotate"]) == 0
    assert "magnitude (0, 30): ±lerp(0, 30, t)" in capsys.readouterr().out
    assert main(["info", "brightness", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["params"]["factor"]["magnitude"]["plus"] == 1.0
    assert info["params"]["factor"]["map"]["end"] == 0.9



def test_info_prints_the_docstring_after_its_summary_once(capsys):
    """A summary sentence that runs over two lines of the docstring is printed once: the
    details start after it (they repeated its second line: saturation's `"Color"): ...`)."""
    import augjax

    doc = augjax.ops.saturation.doc
    assert doc.splitlines()[1].startswith('"Color")')  # the summary runs over two lines
    assert main(["info", "saturation"]) == 0
    out = capsys.readouterr().out
    summary, details = out.split("\n", 1)[0], out.rsplit("\n\n", 1)[1]
    assert summary.endswith("clamped, truncated for uint8.")
    assert details.strip() == "Params: ``factor``."

def test_unknown_op_exit_code_and_message(capsys):
    assert main(["info", "colr_jitter"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'color_jitter'" in err and "Traceback" not in err


@pytest.mark.fast_tier("args0")
@pytest.mark.parametrize("args", [["list"], ["info", "flip"]])
def test_console_script_runs(args):
    exe = [sys.executable, "-m", "augjax.cli.main", *args]
    res = subprocess.run(exe, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "flip" in res.stdout
