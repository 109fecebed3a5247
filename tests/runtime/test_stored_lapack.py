"""A stored program that calls no LAPACK kernel lowers in a warm process without importing
SciPy's LAPACK (augjax._runtime.store.lapack); one that calls one still gets it set up, with
the right numbers."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from store_process import run_with_store, stored

SCRIPT = textwrap.dedent("""
    import json, sys
    import jax.numpy as jnp
    from augjax._runtime.store.programs import StoredProgram, load_count

    plain = StoredProgram(lambda a: a * 2.0 + 1.0, lambda: ("lapack_test_plain", (), {}))
    inverse = StoredProgram(lambda a: jnp.linalg.inv(a), lambda: ("lapack_test_inverse", (), {}))
    m = jnp.asarray([[2.0, 1.0], [1.0, 3.0]], jnp.float32)
    out = {"plain": plain(m).tolist(), "scipy_after_plain": "scipy.linalg" in sys.modules}
    out["inverse"] = inverse(m).tolist()
    out["scipy_after_inverse"] = "scipy.linalg" in sys.modules
    out["loads"] = load_count()
    print(json.dumps(out))
""")


def test_warm_lowering_skips_lapack_unless_called(tmp_path):
    pytest.importorskip("flatbuffers", reason="jax.export's serialization needs flatbuffers")
    script = tmp_path / "lapack_script.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"
    cold = run_with_store(script, cache, 0)
    assert cold["loads"] == 0 and len(stored(cache)) == 2
    warm = run_with_store(script, cache, 0)
    assert warm["loads"] == 2  # both read from the store, neither traced
    m = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    np.testing.assert_array_equal(warm["plain"], m * 2.0 + 1.0)
    assert not warm["scipy_after_plain"]  # no LAPACK in the program: SciPy not imported
    np.testing.assert_allclose(warm["inverse"], np.linalg.inv(m), rtol=1e-6)
    assert warm["inverse"] == cold["inverse"]
    assert warm["scipy_after_inverse"]  # the program calls LAPACK: set up as JAX does
