"""A stored program's file (augjax._runtime.store.files), in this process: every damaged byte,
cut, swapped, planted or loosely permitted file is refused before JAX parses it, never returned;
a refused file's contents are never handed on. Writes are atomic and leave nothing behind when
they fail. The store's folder must be the user's and closed to others."""

from __future__ import annotations

import os
import random
import stat

import jax
import jax.numpy as jnp
import pytest

from augjax._runtime.store import files as program_file
from augjax._runtime.store.files import Refused

pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")

KEY = '{"kind": "test", "steps": ["brightness", 1.3]}'
CODE = [["augjax", "0" * 64], ["file", "/somewhere/pack.py", "1" * 64]]
CAUGHT = [["builtins.UserWarning", "a warning the trace gave"]]


def _body(scale: float) -> bytes:
    from jax import export

    exported = export.export(jax.jit(lambda x: x * scale))(jnp.zeros((3,), jnp.float32))
    return bytes(exported.serialize())


@pytest.fixture(scope="module")
def bodies():
    return _body(1.3), _body(0.7)


def always(code):  # a code manifest that holds
    return True


def stored_file(tmp_path, body: bytes, key: str = KEY, name: str = "p.jaxprog"):
    path = tmp_path / name
    assert program_file.write(path, key, body, CODE, CAUGHT)
    return path


def test_a_written_file_reads_back_whole(tmp_path, bodies):
    path = stored_file(tmp_path, bodies[0])
    got = program_file.read(path, KEY, always)
    assert got.body == bodies[0] and got.code == CODE and got.warnings == CAUGHT
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert program_file.read(tmp_path / "missing.jaxprog", KEY, always) is None


def test_every_flipped_bit_is_refused_or_changes_nothing(tmp_path, bodies):
    """Each bit of the magic and header, and 3,000 random bits of the body: a read refuses
    the file (``damaged``/``foreign``) or returns exactly what was written (a flip JSON reads
    the same, e.g. the case of a ``\\u`` escape's hex digit); never other contents."""
    path = stored_file(tmp_path, bodies[0])
    blob = path.read_bytes()
    body_at = len(blob) - len(bodies[0])
    rng = random.Random(0)
    bits = list(range(body_at * 8)) + rng.sample(range(body_at * 8, len(blob) * 8), 3000)
    refused = 0
    for bit in bits:
        damaged = bytearray(blob)
        damaged[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(damaged))
        os.chmod(path, 0o600)
        try:
            got = program_file.read(path, KEY, always)
        except Refused as err:
            assert err.reason in ("damaged", "foreign"), err
            refused += 1
            continue
        assert (got.body, got.code, got.warnings) == (bodies[0], CODE, CAUGHT), bit
    assert refused >= len(bits) - 8  # all but the odd JSON-equivalent flip


def test_a_cut_file_is_refused_at_every_length(tmp_path, bodies):
    path = stored_file(tmp_path, bodies[0])
    blob = path.read_bytes()
    for n in list(range(0, 200)) + list(range(200, len(blob), 97)):
        path.write_bytes(blob[:n])
        with pytest.raises(Refused, match="damaged"):
            program_file.read(path, KEY, always)


def test_another_programs_file_under_this_name_is_refused(tmp_path, bodies):
    """contrast's program copied over brightness's: a valid file, but for another key."""
    mine = stored_file(tmp_path, bodies[0])
    other = stored_file(tmp_path, bodies[1], key=KEY.replace("brightness", "contrast"),
                        name="q.jaxprog")
    os.replace(other, mine)
    with pytest.raises(Refused, match="foreign"):
        program_file.read(mine, KEY, always)


def test_a_file_whose_code_changed_is_refused_as_stale(tmp_path, bodies):
    path = stored_file(tmp_path, bodies[0])
    with pytest.raises(Refused, match="stale"):
        program_file.read(path, KEY, lambda code: False)


def test_files_others_may_write_or_not_the_users_are_refused(tmp_path, bodies, monkeypatch):
    path = stored_file(tmp_path, bodies[0])
    for mode in (0o620, 0o602, 0o666):
        os.chmod(path, mode)
        with pytest.raises(Refused, match="unsafe.*writable by others"):
            program_file.read(path, KEY, always)
    os.chmod(path, 0o600)
    monkeypatch.setattr(os, "getuid", lambda: path.stat().st_uid + 1)
    with pytest.raises(Refused, match="unsafe.*owned by uid"):
        program_file.read(path, KEY, always)


def test_a_link_is_refused(tmp_path, bodies):
    target = stored_file(tmp_path, bodies[0])
    link = tmp_path / "link.jaxprog"
    link.symlink_to(target)
    with pytest.raises(Refused, match="unsafe"):
        program_file.read(link, KEY, always)


def test_a_failed_write_leaves_nothing_behind(tmp_path, bodies, monkeypatch):
    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    assert not program_file.write(tmp_path / "p.jaxprog", KEY, bodies[0], CODE, CAUGHT)
    assert list(tmp_path.iterdir()) == []


def test_the_folder_must_be_the_users_and_closed_to_others(tmp_path, monkeypatch):
    folder = tmp_path / "store"
    assert program_file.folder_problem(folder) is None
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    os.chmod(folder, 0o777)
    assert "writable by others" in program_file.folder_problem(folder)
    os.chmod(folder, 0o700)
    monkeypatch.setattr(os, "getuid", lambda: folder.stat().st_uid + 1)
    assert "owned by uid" in program_file.folder_problem(folder)
