"""A warm process reads a sampler's XLA options (unoptimised for a few values per sample,
optimised for fields) off its stored program instead of tracing the sampler for its params'
shapes (augjax._runtime.store.chosen): the same options and bits as the cold process, no trace
of the sampler."""

from __future__ import annotations

import textwrap

import pytest

from store_process import run_with_store

SCRIPT = textwrap.dedent("""
    import gc, hashlib, json
    import jax, numpy as np
    import augjax
    from augjax._runtime.execution import program as prog
    from augjax._runtime.store.programs import StoredProgram, load_count

    traced = []  # the samplers' traces (a probe of the params' shapes included)
    sample_steps = prog.sample_steps
    prog.sample_steps = lambda *a, **k: traced.append(1) or sample_steps(*a, **k)
    x = np.random.default_rng(0).integers(0, 256, (2, 24, 24, 3), dtype=np.uint8)
    out = {"bits": {}, "levels": {}}
    for name in ("rotate", "gaussian_noise"):
        y = getattr(augjax.ops, name)(x, key=jax.random.key(1))
        out["bits"][name] = hashlib.sha256(np.asarray(y).tobytes()).hexdigest()
    for p in gc.get_objects():
        if isinstance(p, StoredProgram) and p._by_outputs is not None:
            level = (p._chosen or {}).get("xla_backend_optimization_level")
            out["levels"][p._describe()[1][0].name] = level
    out["sampler_traces"], out["loads"] = len(traced), load_count()
    print(json.dumps(out))
""")


def test_warm_sampler_options_come_from_the_store(tmp_path):
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    import jax

    if jax.default_backend() != "cpu":
        pytest.skip("the CPU's sampler options")
    script = tmp_path / "choice_script.py"
    script.write_text(SCRIPT)
    cold = run_with_store(script, tmp_path / "cache", 0)
    warm = run_with_store(script, tmp_path / "cache", 0)
    # rotate draws an angle per sample (unoptimised), gaussian_noise a field (optimised)
    assert cold["levels"] == {"rotate": 0, "gaussian_noise": None}
    assert warm["levels"] == cold["levels"]
    assert cold["sampler_traces"] >= 2 and cold["loads"] == 0
    assert warm["sampler_traces"] == 0 and warm["loads"] == 4  # two samplers, two applies
    assert warm["bits"] == cold["bits"]
