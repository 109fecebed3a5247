"""The conformance kit itself: it passes a correct op, and each check fails on an op broken in
the way that check is about (so the kit can fail); the runner's report, raise/warn modes,
expected failures, pytest parametrization and the ``augjax check`` command line."""

from __future__ import annotations

import dataclasses
import itertools
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import Param, op
from augjax.cli.main import main
from augjax.errors import PluginLoadError
from augjax.testing import (
    CheckSkipped,
    OpCheckError,
    OpCheckFailedWarning,
    check_op,
    example_params,
    neutral_params,
    op_checks,
    parametrize_with_checks,
    write_distribution,
)
from augjax.testing import _checks as checks

AMOUNT = {"amount": Param(0.5, low=0.0, high=1.0, neutral=0.0, magnitude=(0.0, 1.0),
                          doc="shift drawn from U[0, amount] of the range")}



def _finish(x, dtype):
    top = 255.0 if dtype == jnp.uint8 else 1.0
    out = jnp.clip(x, 0.0, top)
    return jnp.round(out).astype(dtype) if dtype == jnp.uint8 else out


def _shift(key, meta, params, *, amount):
    """The ``sample=`` hook: ``shift`` ~ U[0, amount] (amount: the sample's value)."""
    return {"shift": jax.random.uniform(key, ()) * params["amount"]}


@op("kit_good", params=AMOUNT, sample=_shift, reference="a test op")
def kit_good(image, params):
    """Adds U[0, amount] of the value range to each image, clipped. Params: ``amount``,
    ``shift``."""
    top = 255.0 if image.dtype == jnp.uint8 else 1.0
    return _finish(image.astype(jnp.float32) + params["shift"] * top, image.dtype)


def statuses(report) -> dict[str, str]:
    return {r.check: r.status for r in report}


def test_a_correct_op_passes_every_check():
    report = check_op(kit_good, on_fail="raise")
    # every check but check_geometry (for ops that move pixels: tests/plugins/test_packs_doc.py)
    assert report.ok and len(report) == len(checks.CHECKS) - 1
    assert "check_geometry" not in statuses(report)
    assert set(statuses(report).values()) <= {"passed", "skipped"}
    if augjax.testing.dali_available() is None:
        assert statuses(report)["check_dali_matches_array"] == "passed"


# -- each check catches its fault ----------------------------------------------------------------
@op("kit_wrong_dtype", params=AMOUNT, sample=_shift)
def kit_wrong_dtype(image, params):
    """Returns float32 whatever came in (declared to keep the dtype)."""
    return image.astype(jnp.float32) + params["shift"]


@op("kit_swapped", params=AMOUNT, sample=_shift)
def kit_swapped(image, params):
    """Returns the image transposed (H and W swapped)."""
    return jnp.swapaxes(image, 0, 1)


@op("kit_ignores_key", params=AMOUNT, sample=_shift)
def kit_ignores_key(image, params):
    """Declared random but never uses what it draws."""
    return image


_trace_counter = itertools.count()


@op("kit_trace_state", params=AMOUNT, sample=_shift)
def kit_trace_state(image, params):
    """Adds a number taken from Python state at trace time (differs per trace)."""
    return _finish(image.astype(jnp.float32) + float(next(_trace_counter) % 7 + 1), image.dtype)


@op("kit_numpy_rng", params=AMOUNT, sample=_shift)
def kit_numpy_rng(image, params):
    """Uses NumPy's global RNG instead of its params."""
    noise = np.random.default_rng().integers(1, 50, image.shape).astype(np.float32)
    return _finish(image.astype(jnp.float32) + noise, image.dtype)


@op("kit_not_neutral", params=AMOUNT, sample=_shift)
def kit_not_neutral(image, params):
    """Adds 1 + U[0, amount]: never the identity, although amount=0 is declared neutral."""
    return _finish(image.astype(jnp.float32) + 1.0 + params["shift"], image.dtype)


class _Loose(float):
    """A parameter value never equal to another object: each bind is a new compile-cache key."""

    __hash__ = float.__hash__

    def __eq__(self, other):
        return self is other


@op("kit_unhashed", params={"amount": Param(0.5, low=0.0, high=1.0, validate=_Loose)})
def kit_unhashed(image, params, *, amount):
    """Returns the image (its parameter normalises to a value compared by identity)."""
    return image


@op("kit_bad_decl", params={
    "amount": Param(0.5, low=0.0, high=1.0, neutral=2.0),
    "level": Param(1, low=0, high=10, magnitude=(0, 20)),
})
def kit_bad_decl(image, params, *, amount):
    return image


@pytest.mark.parametrize("bad, check, words", [
    (kit_wrong_dtype, "check_output_contract", "returned float32"),
    (kit_swapped, "check_output_contract", "returned uint8 (2, 14, 12, 3)"),
    (kit_ignores_key, "check_different_keys_differ", "32 different keys"),
    (kit_trace_state, "check_jit_matches_eager", "jit vs eager"),
    (kit_numpy_rng, "check_vmap_matches_loop", "batch vs alone"),
    (kit_numpy_rng, "check_jit_matches_eager", "jit vs eager"),
    (kit_not_neutral, "check_neutral_is_identity", "neutral"),
    (kit_unhashed, "check_no_recompilation", "new trace"),
    (kit_bad_decl, "check_declaration", "neutral value 2.0 is outside"),
    (kit_bad_decl, "check_declaration", "magnitude value 20"),
    (kit_bad_decl, "check_declaration", "no docstring"),
])
def test_each_check_catches_its_fault(bad, check, words):
    report = check_op(bad, on_fail=None, checks=check)
    (result,) = report
    assert result.status == "failed", result
    assert words in result.reason and isinstance(result.exception, Exception)


def test_dali_check_catches_a_pipeline_that_differs_from_the_arrays(monkeypatch):
    """The DALI path runs the array path's compiled programs, so an op cannot make them differ
    by itself; a bridge that returned other pixels (a core bug) is what the check catches."""
    if augjax.testing.dali_available() is not None:
        with pytest.raises(CheckSkipped):
            checks.check_dali_matches_array(kit_good.bind())
        return
    real = checks.run_dali

    def shifted(*args, **kwargs):
        out = real(*args, **kwargs)
        return [out[0] + 1, *out[1:]]

    monkeypatch.setattr(checks, "run_dali", shifted)
    (result,) = check_op(kit_good, on_fail=None, checks="*dali*")
    assert result.status == "failed" and "DALI vs array" in result.reason


class _FakeOp:
    """Stands in for a bound op whose call misbehaves (a core bug the kit must notice)."""

    def __init__(self, spec, call):
        self.spec, self.kwargs, self.name, self._call = spec, {"amount": 0.5}, spec.name, call

    def __call__(self, *inputs, **kwargs):
        return self._call(*inputs, **kwargs)


def test_mutation_and_input_error_checks_can_fail():
    def mutating(images, **_):
        images[...] = 0
        return images

    with pytest.raises(AssertionError, match="modified its NumPy images"):
        checks.check_no_input_mutation(_FakeOp(kit_good, mutating))

    def untyped(*_, **__):
        raise ValueError("something")

    with pytest.raises(AssertionError, match="raised ValueError instead of InputTypeError"):
        checks.check_input_errors(_FakeOp(kit_good, untyped))


def test_param_validation_check_can_fail():
    class LenientSpec:
        name = "kit_lenient"
        params = types.MappingProxyType({"amount": Param(0.5, low=0.0, high=1.0)})

        def bind(self, **params):  # accepts anything: what the check must notice
            return None

    fake = types.SimpleNamespace(spec=LenientSpec(), kwargs={"amount": 0.5})
    with pytest.raises(AssertionError, match="amount=-1.0 .below low=0.0. was accepted"):
        checks.check_param_validation(fake)


# -- which checks apply, and with which params ----------------------------------------------------
@op("kit_labels", params={"num_classes": Param(None, kind="int", low=1, required=True),
                          "size": Param(None, kind="size", low=1, required=True),
                          "mode": Param("a", choices=("a", "b"))},
    level="batch", inputs=("images", "labels"))
def kit_labels(images, labels, params, *, num_classes, size, mode):
    """Returns the images and one-hot labels."""
    return images, jax.nn.one_hot(labels, num_classes)


def test_example_params_and_applicable_checks():
    assert example_params(kit_labels) == {"num_classes": 10, "size": (8, 10)}
    assert example_params(kit_good) == {}  # 0.5 is not neutral: kept
    at_neutral = Param(0.0, low=0.0, high=1.0, neutral=0.0)
    assert example_params(dataclasses.replace(kit_good, params={"amount": at_neutral})) == {
        "amount": 0.5}  # halfway to the end of the range
    jitter = Param(0.0, kind="float_or_pair", low=0.0, neutral=0.0)
    assert example_params(dataclasses.replace(kit_good, params={"amount": jitter})) == {
        "amount": 0.5}
    magnitude = Param(0.0, low=0.0, high=1.0, neutral=0.0, magnitude=(0.0, 0.8))
    assert example_params(dataclasses.replace(kit_good, params={"amount": magnitude})) == {
        "amount": 0.8}  # the largest magnitude
    names = [c.name for _, c in op_checks(kit_labels)]
    assert "check_vmap_matches_loop" not in names  # batch level
    assert "check_same_key_reproduces" not in names and "check_different_keys_differ" not in names
    assert "check_neutral_is_identity" not in names  # no neutral value declared
    assert neutral_params(kit_good.bind()) == {"amount": 0.0}
    report = check_op(kit_labels, on_fail="raise")
    assert report.ok


# -- the runner -------------------------------------------------------------------------------------
def test_on_fail_modes_and_expected_failures():
    with pytest.raises(OpCheckError) as info:
        check_op(kit_ignores_key, checks="*keys*")
    assert info.value.result.check == "check_different_keys_differ"
    assert isinstance(info.value.__cause__, AssertionError)
    with pytest.warns(OpCheckFailedWarning) as record:
        report = check_op(kit_ignores_key, on_fail="warn", checks="*keys*")
    assert record[0].message.result is report[0] and not report.ok
    report = check_op(kit_ignores_key, checks="*key*",
                      expected_failed_checks={"check_different_keys_differ": "ignores keys"})
    assert statuses(report) == {"check_same_key_reproduces": "passed",
                                "check_different_keys_differ": "xfail"}
    assert report.ok and "ignores keys" in report[1].reason and "XFAIL" in report.format()
    expected = {"check_same_key_reproduces": "believed broken"}
    report = check_op(kit_good, checks="*same_key*", expected_failed_checks=expected)
    assert statuses(report) == {"check_same_key_reproduces": "xpass"}
    report = check_op(kit_good, checks="*same_key*", expected_failed_checks=lambda spec: expected,
                      xfail_strict=True, on_fail=None)
    assert statuses(report) == {"check_same_key_reproduces": "failed"}
    with pytest.raises(ValueError, match="on_fail"):
        check_op(kit_good, on_fail="ignore")


def test_parametrize_with_checks_ids_and_marks():
    mark = parametrize_with_checks([kit_good, kit_labels],
                                   expected_failed_checks={"check_declaration": "why"})
    assert mark.args[0] == "op, check"
    ids = [p.id for p in mark.args[1]]
    assert "kit_good-check_declaration" in ids and "kit_labels-check_output_contract" in ids
    assert len(ids) == len(set(ids))
    declaration = next(p for p in mark.args[1] if p.id == "kit_good-check_declaration")
    assert declaration.marks[0].name == "xfail" and declaration.marks[0].kwargs["reason"] == "why"
    op_, check = declaration.values
    assert op_.spec is kit_good and check.name == "check_declaration"


@parametrize_with_checks([kit_good.bind(amount=0.25)], checks=("check_declaration",
                                                               "*same_key*"))
def test_parametrize_with_checks_runs_under_pytest(op, check):
    check(op)


def test_a_plugin_that_fails_to_load_is_one_failing_check(global_registry, site):
    write_distribution(site, "kit-broken", "1.0", ops={"kit_broken": "kit_broken_mod:kit_broken"},
                       modules={"kit_broken_mod.py": "raise RuntimeError('kit boom')\n"})
    augjax.refresh()
    pairs = list(op_checks("kit_broken"))
    assert [c.name for _, c in pairs] == ["check_loads"]
    with pytest.raises(OpCheckError) as info:
        check_op("kit_broken")
    assert isinstance(info.value.__cause__, PluginLoadError) and "kit boom" in str(info.value)


def test_a_check_filter_never_hides_an_op_that_fails_to_load(global_registry, site, capsys):
    write_distribution(site, "kit-broken", "1.0", ops={"kit_broken": "kit_broken_mod:kit_broken"},
                       modules={"kit_broken_mod.py": "raise RuntimeError('kit boom')\n"})
    augjax.refresh()
    pairs = list(op_checks("kit_broken", checks=["*dali*"]))
    assert [c.name for _, c in pairs] == ["check_loads"]
    mark = parametrize_with_checks(["kit_broken"], checks=["*dali*"])
    (param,) = mark.args[1]
    assert param.id == "kit_broken-check_loads" and not param.marks
    op_, check = param.values
    with pytest.raises(PluginLoadError, match="kit boom"):
        check(op_)
    assert main(["check", "kit_broken", "-k", "*dali*"]) == 1
    out = capsys.readouterr().out
    assert "check_loads  FAIL" in out and "kit boom" in out and "1 failed" in out


# -- the command line -------------------------------------------------------------------------------
GOOD = '''
import jax, jax.numpy as jnp
from augjax import Param, op


def _draw(key, meta, params, *, amount):
    return {"u": jax.random.uniform(key, ())}


@op("cli_good", params={"amount": Param(0.5, low=0.0, high=1.0, neutral=0.0)}, sample=_draw)
def cli_good(image, params, *, amount):
    """Adds U[0, amount] of the range, clipped. Params: ``u`` (uniform in [0, 1))."""
    top = 255.0 if image.dtype == jnp.uint8 else 1.0
    x = jnp.clip(image.astype(jnp.float32) + params["u"] * amount * top, 0.0, top)
    return jnp.round(x).astype(image.dtype) if image.dtype == jnp.uint8 else x


@op("cli_lazy", params={"amount": Param(0.5, low=0.0, high=1.0)}, sample=_draw)
def cli_lazy(image, params, *, amount):
    """Ignores what it draws."""
    return image
'''


def test_cli_check(global_registry, site, capsys):
    write_distribution(site, "cli-pack", "0.3", ops={"cli_good": "cli_mod:cli_good",
                                                      "cli_lazy": "cli_mod:cli_lazy"},
                       modules={"cli_mod.py": GOOD})
    augjax.refresh()
    assert main(["check", "cli_good", "-k", "*declaration", "-k", "*keys*"]) == 0
    out = capsys.readouterr().out
    assert "cli_good  (cli-pack==0.3)" in out and "check_declaration" in out
    assert "PASS" in out and "FAIL" not in out and "2 passed" in out
    assert main(["check", "cli-pack", "-k", "*keys*"]) == 1  # the whole distribution
    out = capsys.readouterr().out
    assert "2 op(s) of cli-pack==0.3" in out
    lazy = out[out.index("cli_lazy"):]
    assert "check_different_keys_differ  FAIL" in lazy and "32 different keys" in lazy
    assert main(["check", "cli_lazy", "-k", "*keys*",
                 "--expect-fail", "different_keys_differ=lazy on purpose"]) == 0
    assert "XFAIL  lazy on purpose" in capsys.readouterr().out
    assert main(["check", "cli_gooood"]) == 2
    assert "did you mean 'cli_good'" in capsys.readouterr().err
    assert main(["check", "cli_good", "-k", "*no_such_check*"]) == 2  # not "no checks ran", 0
    err = capsys.readouterr().err
    assert "no check matches '*no_such_check*'" in err and "check_declaration" in err
    assert main(["check", "cli_gooood"]) == 2
    assert "did you mean 'cli_good'" in capsys.readouterr().err
    assert main(["check", "cli_good", "--json", "-k", "*declaration"]) == 0
    import json

    (row,) = json.loads(capsys.readouterr().out)
    assert (row["op"], row["check"], row["status"]) == ("cli_good", "check_declaration", "passed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["check", "cli_*", "-k", "*declaration"]) == 0
