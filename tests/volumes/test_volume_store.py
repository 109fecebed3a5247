"""Volume programs in augjax's program store, in fresh processes: a second process runs the
first one's volume sampler and apply programs without tracing, with the bits of a process
without the store; a damaged file is refused with a warning and rebuilt with the same bits; an
edited volume op (its kernel in the script's own file) traces afresh with its new values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from store_process import run_with_store, stored

#: A volume chain holding an op defined in this script's own file (its kernel counts its
#: traces), with masks and keypoints; prints digests of every output.
SCRIPT = '''
import hashlib, json, sys, warnings
import jax, jax.numpy as jnp, numpy as np
import augjax
from augjax._runtime.store import programs as program_store
from augjax.volumes import VolumeOp

TRACES = [0]

def _sampler(key, meta, *, mask, amount):
    return {"apply": jax.random.bernoulli(key, 0.5)}

def _kernel(volume, params, meta, *, amount):
    TRACES[0] += 1
    return jnp.where(params["apply"], volume * amount, volume)

scaled = VolumeOp("volume_store_scale", _kernel, _sampler, {"amount": 0.5},
                  active=lambda p: p["apply"])
vol = augjax.volume_ops
chain = vol.chain(vol.affine.bind(rotate=0.3, p=1.0), scaled.bind(amount=0.75),
                  vol.noise.bind(p=0.5), vol.flip.bind(p=0.5), name="stored")
rng = np.random.default_rng(0)
x = rng.random((2, 6, 5, 4, 1), dtype=np.float32)
masks = (rng.random((2, 6, 5, 4)) > 0.5).astype(np.int32)
points = rng.uniform(0, 4, (2, 3, 3)).astype(np.float32)

def digest(a):
    a = np.asarray(a)
    return f"{a.dtype}{a.shape}:" + hashlib.sha256(a.tobytes()).hexdigest()

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = chain(augjax.Volumes(x), key=jax.random.key(3), masks=masks, keypoints=points)
print(json.dumps({"traces": TRACES[0], "loads": program_store.load_count(),
                  "out": {k: digest(getattr(v, "array", v)) for k, v in out.items()},
                  "refused": sum(issubclass(w.category, augjax.ProgramStoreWarning)
                                 for w in caught)}))
'''


@pytest.fixture
def script(tmp_path) -> Path:
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    path = tmp_path / "volume_script.py"
    path.write_text(SCRIPT)
    return path


@pytest.mark.slow
def test_a_warm_process_runs_volume_programs_without_tracing(script, tmp_path):
    cache = tmp_path / "cache"
    off = run_with_store(script, tmp_path / "off", 0, AUGJAX_PROGRAM_CACHE="0")
    cold = run_with_store(script, cache, 0)
    assert len(stored(cache)) == 2  # the sampler and the apply program
    warm = run_with_store(script, cache, 0)
    assert cold["traces"] > 0 and warm["traces"] == 0 and warm["loads"] == 2
    assert off["out"] == cold["out"] == warm["out"]  # bitwise: the store only saves time
    assert cold["refused"] == warm["refused"] == 0

    for i, path in enumerate(stored(cache)):  # damaged: refused, rebuilt, the same bits
        blob = bytearray(path.read_bytes())
        rng = np.random.default_rng(i)
        blob[int(rng.integers(len(blob) // 2, len(blob)))] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(blob))
    damaged = run_with_store(script, cache, 0)
    assert damaged["refused"] == 2 and damaged["traces"] > 0 and damaged["out"] == off["out"]

    script.write_text(SCRIPT.replace("volume * amount", "volume * amount * 0.5"))
    edited = run_with_store(script, cache, 0)
    edited_off = run_with_store(script, tmp_path / "off2", 0, AUGJAX_PROGRAM_CACHE="0")
    assert edited["refused"] == 0 and edited["traces"] > 0
    assert edited["out"] == edited_off["out"] and edited["out"]["images"] != off["out"]["images"]
