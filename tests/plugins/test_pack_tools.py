"""Packs in the tools: ``augjax list --all --load`` imports each op and shows the ones that fail,
``augjax check`` warns about shadowed names and prints whole reasons (the error inside DALI's
"Critical error in pipeline" included), and every error class is exported at the top level."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest


from plugin_site import op_source, plugin_modules_imported

import augjax
from augjax import errors
from augjax.cli.main import main
from augjax.testing import CheckReport, CheckResult, check_op, write_distribution


REPO = pathlib.Path(augjax.__file__).resolve().parents[1]
LONG = "the kernel refuses this image because " + "it is not what the kernel wants, " * 8


def _cli(site: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUGJAX_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "augjax.cli.main", *args], capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.mark.slow
def test_list_all_load_reports_a_pack_whose_module_fails_to_import(site):
    write_distribution(site, "broken-pack", "0.2", ops={
        "broken_op": "broken_mod:broken_op", "fine_op": "fine_mod:fine_op"}, modules={
        "broken_mod.py": "import augjax_no_such_dependency\n" + op_source("broken_op"),
        "fine_mod.py": op_source("fine_op")})
    plain = _cli(site, "list", "--all", "--dist", "broken-pack")
    assert plain.returncode == 0, plain.stderr
    assert "available" in plain.stdout and "failed" not in plain.stdout  # metadata only
    assert "augjax list --all --load" in plain.stderr  # says how to find out

    loaded = _cli(site, "list", "--all", "--load", "--dist", "broken-pack")
    assert loaded.returncode == 1
    rows = {line.split()[0]: line for line in loaded.stdout.splitlines() if line.strip()}
    assert "failed" in rows["broken_op"] and "loaded" in rows["fine_op"]
    assert "missing dependency 'augjax_no_such_dependency'" in rows["broken_op"]
    assert "required by broken-pack==0.2" in rows["broken_op"]
    assert "1 op(s) failed to load" in loaded.stderr
    js = _cli(site, "list", "--load", "--json", "--all", "broken_*")
    (record,) = json.loads(js.stdout)
    assert js.returncode == 1 and record["status"] == "failed"


def test_list_load_skips_disabled_and_conflicting_ops(global_registry, site, monkeypatch, capsys):
    write_distribution(site, "shadow-pack", "1.0", ops={"flip": "shadow_mod:flip"},
                       modules={"shadow_mod.py": "raise RuntimeError('must not be imported')\n"})
    augjax.refresh()
    assert main(["list", "--all", "--load", "flip"]) == 0
    out = capsys.readouterr().out
    assert "conflict" in out and plugin_modules_imported(site) == []


SHADOW = op_source("flip", random=True)


def test_check_warns_that_a_pack_op_is_shadowed_by_a_builtin(global_registry, site, capsys):
    write_distribution(site, "shadow-pack", "1.0", ops={"flip": "shadow_mod:flip",
                                                        "own_op": "shadow_mod:own_op"},
                       modules={"shadow_mod.py": SHADOW + "\n" + op_source("own_op")})
    augjax.refresh()
    assert main(["check", "shadow-pack", "-k", "*declaration"]) == 0  # the op itself is fine
    out = capsys.readouterr().out
    block = out[out.index("shadow-pack:flip"):out.index("own_op  (")]
    assert "warning: op 'flip' of shadow-pack==1.0 is shadowed" in block
    assert "belongs to augjax's built-in op" in block and "augjax==" in block
    own = out[out.index("own_op  ("):out.index("passed")]
    assert "warning" not in own and "; 1 warning(s) in" in out
    # the built-in side is told too
    assert main(["check", "flip", "-k", "*declaration"]) == 0
    assert "also registered by shadow-pack==1.0 (conflict)" in capsys.readouterr().out


def test_check_warns_about_two_packs_with_one_name(global_registry, site, capsys):
    for dist, mod in (("pack-a", "pack_a_mod"), ("pack-b", "pack_b_mod")):
        write_distribution(site, dist, "1.0", ops={"dup_op": f"{mod}:dup_op"},
                           modules={f"{mod}.py": op_source("dup_op")})
    augjax.refresh()
    assert main(["check", "pack-a", "-k", "*declaration", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["status"] == "passed"
    assert "warning: op 'dup_op' of pack-a==1.0 is shadowed" in captured.err
    assert "pack-b==1.0 (conflict)" in captured.err


BOOM = f'''
from augjax import op

@op("boom_op")
def boom_op(image, params):
    """Raises while being traced."""
    raise ValueError({LONG!r})
'''


def test_check_prints_the_error_inside_a_dali_pipeline_in_full(global_registry, site, capsys):
    pytest.importorskip("nvidia.dali.plugin.jax")
    write_distribution(site, "boom-pack", "1.0", ops={"boom_op": "boom_mod:boom_op"},
                       modules={"boom_mod.py": BOOM})
    augjax.refresh()
    assert main(["check", "boom_op", "-k", "*dali*"]) == 1
    out = capsys.readouterr().out
    line = next(li for li in out.splitlines() if "check_dali_matches_array" in li)
    assert "FAIL" in line and "the DALI pipeline failed: ValueError: " + LONG.strip() in line
    assert "(in CPU operator " in line and "Critical error" not in line


def test_report_format_keeps_whole_multiline_reasons():
    reason = "AssertionError: " + "x" * 400 + "\nsecond line\nthird line"
    text = CheckReport([CheckResult("op", "check_a", "failed", reason),
                        CheckResult("op", "check_bb", "passed")]).format()
    lines = text.splitlines()
    assert lines[0].endswith("x" * 400) and "..." not in text
    assert lines[1].strip() == "second line" and lines[2].strip() == "third line"
    assert lines[1].index("second") == lines[0].index("AssertionError")  # aligned under it
    assert lines[3].split() == ["check_bb", "PASS"]


def test_dali_error_cause_parsing():
    from augjax.dali import error_cause, is_pipeline_error

    message = ("Critical error in pipeline:\nError in CPU operator `nvidia.dali.fn.jax_function`,"
               "\nwhich was used in the pipeline definition with the following traceback:\n\n"
               "  File \"train.py\", line 3, in pipe\n\nencountered:\n\naugjax.InputError: flip: "
               "argument 'images' must be uint8 or float32, got int16\n__notes__ (len=1):\n"
               "-----\nFor simplicity, JAX has removed its internal frames\n\nAt:\n  x.py(1): f\n"
               "\nCurrent pipeline object is no longer valid.")
    err = RuntimeError(message)
    assert is_pipeline_error(err) and not is_pipeline_error(ValueError("x"))
    assert error_cause(err) == ("augjax.InputError: flip: argument 'images' must be uint8 or "
                                "float32, got int16 (in CPU operator nvidia.dali.fn.jax_function)")
    assert error_cause(RuntimeError("something else")) is None
    assert error_cause("Critical error in pipeline: encountered:\n\n") is None


def test_check_op_reason_for_a_dali_failure_is_the_cause(monkeypatch):
    import augjax.testing._checks as checks

    def fail(*args, **kwargs):
        raise RuntimeError("Critical error in pipeline:\nError in GPU operator `f`,\n...\n"
                           "encountered:\n\nValueError: the real reason\nAt:\n  x")

    monkeypatch.setattr(checks, "run_dali", fail)
    monkeypatch.setattr(checks, "dali_available", lambda: None)
    (result,) = check_op("flip", on_fail=None, checks="*dali*")
    assert result.status == "failed"
    assert result.reason == "the DALI pipeline failed: ValueError: the real reason (in GPU " \
                            "operator f)"


def test_every_error_class_is_exported_at_the_top_level():
    for name in errors.__all__:
        assert getattr(augjax, name) is getattr(errors, name), name
        assert name in augjax.__all__, name
    assert issubclass(augjax.OpDefinitionError, augjax.AugjaxError)
    with pytest.raises(augjax.OpDefinitionError, match="the name must match"):
        augjax.op("Bad-Name")(lambda key, image: image)
