"""Lifting decisions kept beside the stored programs (augjax._runtime.store.lifts): a new
process (here: an empty memory of decisions) reads which values are program arguments instead
of tracing each op twice; a decision is reused only for the same op, code, values and settings;
damaged, cut, swapped, loosely permitted or linked files and answers other than 0/1 are refused
with one warning each and decided afresh, never trusted; a decision whose code changed is
decided afresh silently; the traces' warnings are given again when a decision is read."""

from __future__ import annotations

import json
import os
import types
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import Param, ProgramStoreWarning
from augjax._runtime.execution import bound
from augjax._runtime.store import files as program_file
from augjax._runtime.store import programs as program_store
from augjax._runtime.execution.bound import liftable


@pytest.fixture
def store(tmp_path, monkeypatch):
    """The program store in ``tmp_path`` and an empty memory of decisions, with the decisions'
    traces counted (``traced``)."""
    monkeypatch.setattr(program_store, "store_dir", lambda: tmp_path)
    monkeypatch.setattr(bound, "_LIFTABLE", {})
    traced: list[tuple[str, str]] = []
    real = bound._takes_traced

    def counting(spec, config, name):
        traced.append((spec.name, name))
        return real(spec, config, name)

    monkeypatch.setattr(bound, "_takes_traced", counting)
    return types.SimpleNamespace(folder=tmp_path / "decisions", traced=traced)


def _new_process() -> None:
    bound._LIFTABLE.clear()


def _decide(op) -> frozenset[str]:
    return liftable(op.spec, op.params)


def _files(store) -> list:
    return sorted(store.folder.glob("*.jaxlift"))


def _refused(fn) -> tuple[object, int]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, sum(issubclass(w.category, ProgramStoreWarning) for w in caught)


def test_a_new_process_reads_the_decisions_instead_of_tracing(store):
    flip, rot90 = augjax.ops.flip.bind(p=0.5), augjax.ops.rot90.bind(k=1)
    first = (_decide(flip), _decide(rot90))
    assert first == ({"p"}, frozenset())  # rot90's k sizes the output: kept in the key
    assert len(store.traced) == 2 and len(_files(store)) == 2
    _new_process()
    assert (_decide(flip), _decide(rot90)) == first
    assert len(store.traced) == 2  # nothing traced again


def test_a_decision_is_reused_only_for_the_same_values_and_settings(store, monkeypatch):
    _decide(augjax.ops.flip.bind(p=0.5))
    for p in (0.25, -0.0, 0.0):  # the value as the traces had it: -0.0 and 0.0 apart
        _new_process()
        _decide(augjax.ops.flip.bind(p=p))
    assert len(store.traced) == len(_files(store)) == 4
    _new_process()
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=true")  # a trace's setting
    assert _decide(augjax.ops.flip.bind(p=0.5)) == {"p"}
    assert len(store.traced) == len(_files(store)) == 5


def test_the_store_off_decides_in_the_process(store, monkeypatch):
    monkeypatch.setattr(program_store, "store_dir", lambda: None)
    assert _decide(augjax.ops.flip.bind(p=0.5)) == {"p"}
    _new_process()
    assert _decide(augjax.ops.flip.bind(p=0.5)) == {"p"}
    assert len(store.traced) == 2 and not store.folder.exists()


def _flip_bit(path, where: str, seed: int) -> None:
    blob = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    start = len(program_file.MAGIC) if where == "header" else len(blob) - 1
    i = int(rng.integers(start, len(blob)))
    blob[i] ^= 1 << int(rng.integers(8))
    path.write_bytes(bytes(blob))


def _damage(kind: str, flip_file, rot_file) -> int:
    """Damages the two files (flip's answer 1, rot90's 0) as ``kind`` says; how many it
    damaged."""
    if kind == "answer":  # flip's 1 read as 0 would keep p in the key: never trusted
        blob = flip_file.read_bytes()
        flip_file.write_bytes(blob[:-1] + b"0")
        return 1
    if kind == "header":
        _flip_bit(flip_file, "header", 0)
        _flip_bit(rot_file, "header", 1)
        return 2
    if kind == "cut":
        flip_file.write_bytes(flip_file.read_bytes()[:-1])
        rot_file.write_bytes(rot_file.read_bytes()[:40])
        return 2
    if kind == "swapped":  # each holds the other's decision: foreign
        a, b = flip_file.read_bytes(), rot_file.read_bytes()
        flip_file.write_bytes(b)
        rot_file.write_bytes(a)
        return 2
    if kind == "writable":
        os.chmod(flip_file, 0o660)
        return 1
    if kind == "link":
        target = flip_file.with_name("elsewhere")
        os.replace(flip_file, target)
        os.symlink(target, flip_file)
        return 1
    if kind == "not-an-answer":  # whole and of this decision, but neither 0 nor 1
        text = flip_file.read_bytes()
        header = text[len(program_file.MAGIC):].split(b"\n", 1)[0]
        fields = json.loads(header)
        flip_file.unlink()
        assert program_file.write(flip_file, fields["key"], b"2", fields["code"], [])
        return 1
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["answer", "header", "cut", "swapped", "writable", "link",
                                  "not-an-answer"])
def test_a_damaged_decision_is_refused_and_made_afresh(store, kind):
    flip, rot90 = augjax.ops.flip.bind(p=0.5), augjax.ops.rot90.bind(k=1)
    _decide(flip)
    flip_file = _files(store)[0]
    _decide(rot90)
    rot_file = next(f for f in _files(store) if f != flip_file)
    damaged = _damage(kind, flip_file, rot_file)
    _new_process()
    store.traced.clear()
    got, refused = _refused(lambda: (_decide(flip), _decide(rot90)))
    assert got == ({"p"}, frozenset())  # what tracing decides, whatever the file said
    assert refused == damaged and len(store.traced) == damaged
    _new_process()  # rebuilt: the next process reads them
    store.traced.clear()
    got, refused = _refused(lambda: (_decide(flip), _decide(rot90)))
    assert got == ({"p"}, frozenset()) and refused == 0 and store.traced == []


def _scale(image, params, *, amount):
    warnings.warn("lift_store_test_op traced", UserWarning)
    return (image.astype(jnp.float32) * amount).astype(image.dtype)


@pytest.mark.filterwarnings("ignore:lift_store_test_op traced")  # the kernel's own
def test_a_decision_whose_code_changed_is_made_afresh_silently(store, tmp_path):
    table = tmp_path / "table.txt"
    table.write_text("1")
    op = augjax.op("lift_store_test_op", params={"amount": Param(0.5, low=0.0, high=1.0)},
                   data_files=(str(table),))(_scale).bind(amount=0.5)
    _decide(op)
    table.write_text("2")  # in the decision's code manifest, not its key: stale
    _new_process()
    store.traced.clear()
    got, refused = _refused(lambda: _decide(op))
    assert got == {"amount"} and refused == 0 and len(store.traced) == 1
    assert len(_files(store)) == 1  # the same name, rewritten
    _new_process()
    store.traced.clear()
    assert _decide(op) == {"amount"} and store.traced == []


def test_the_decisions_warnings_are_given_again_when_read(store):
    op = augjax.op("lift_store_test_op", params={"amount": Param(0.5, low=0.0, high=1.0)})(
        _scale).bind(amount=0.5)

    def messages():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _decide(op)
        return [str(w.message) for w in caught]

    made = messages()
    assert made and set(made) == {"lift_store_test_op traced"}
    _new_process()
    store.traced.clear()
    assert messages() == made and store.traced == []
