"""Outputs stay bitwise what they were: every registered op, representative chains and the four
policies, uint8 and float32, on the CPU, against the digests recorded in ``bitwise_fixture.json``
(``bitwise_cases.py`` holds the cases and records them). A refactor that changes no formula
changes no bit; a case that differs names what moved."""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import jax
import pytest

import augjax
from augjax.kernels.portable import YNN_FUSIONS, portable_compiler_options
from bitwise_cases import FIXTURE, cases

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(jax.default_backend() != "cpu",
                                 reason="the fixture is recorded on the CPU")]

RECORDED: dict[str, object] = json.loads(FIXTURE.read_text())


@functools.cache
def _runs() -> dict[str, object]:
    return dict(cases())


def test_fixture_covers_every_registered_op():
    recorded = {case.split("/")[1] for case in RECORDED if case.startswith("op/")}
    assert recorded == set(augjax.list_ops()), (
        "ops registered or removed since the fixture was recorded: run "
        "`python tests/reliability/bitwise_cases.py` and commit the fixture")


#: The cases whose programs XLA:CPU handed to YNNPACK, whose kernels are chosen by the CPU that
#: runs them (``augjax.kernels.portable``): a dot (scale_jitter's resample, before its taps
#: form) or a reduction.
YNN_CASES = ("op/scale_jitter/float32", "op/contrast/float32", "op/color_twist/float32",
             "op/random_photometric_distort/float32")
_X86 = platform.machine().lower() in ("x86_64", "amd64")


def _print_cases(tmp_path: Path, xla_flags: str, *only: str) -> dict[str, object]:
    """The digests of the fixture's cases (``only``: those) in a fresh process under
    ``XLA_FLAGS=xla_flags``, with augjax's caches off there (a real compile)."""
    env = {**os.environ, "XLA_FLAGS": xla_flags, "AUGJAX_COMPILATION_CACHE": "0",
           "AUGJAX_PROGRAM_CACHE": "0", "AUGJAX_CACHE_DIR": str(tmp_path / "cache")}
    script = Path(__file__).with_name("bitwise_cases.py")
    done = subprocess.run([sys.executable, str(script), "--print", *only], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not _X86, reason="XLA:CPU's --xla_cpu_max_isa=AVX2 is an x86-64 option")
def test_outputs_keep_their_bits_on_a_cpu_without_avx512(tmp_path):
    """The same bits where XLA:CPU may emit no AVX-512 (an AMD EPYC with AVX2 and FMA): every
    case, compiled in a fresh process under ``--xla_cpu_max_isa=AVX2``, gives the recorded
    digests. This option governs XLA's own code generation only; what XLA:CPU picks at run time
    by the CPU it finds (YNNPACK's kernels, its dot's summation order) is kept out of augjax's
    programs (``augjax.kernels.portable``, ``test_no_program_runs_ynnpack``,
    ``test_scale_jitter_multiplies_no_dense_matrices``); the whole fixture was also checked
    under an emulated EPYC (``qemu-x86_64 -cpu EPYC-Milan``), where ``scale_jitter`` float32
    gave ``ade592f1...`` before its taps form only by chance (YNNPACK's AVX2 dot) and
    ``2ed326a6...`` with XLA's dot."""
    got = _print_cases(tmp_path, "--xla_cpu_max_isa=AVX2")
    moved = sorted(case for case in RECORDED if got.get(case) != RECORDED[case])
    assert not moved, f"{len(moved)} cases differ under --xla_cpu_max_isa=AVX2: {moved}"


def test_no_program_runs_ynnpack(tmp_path):
    """augjax compiles its CPU programs with YNNPACK's fusions off: the programs of the cases
    that XLA:CPU handed to YNNPACK (a dot, a reduction) hold no ``__ynn_fusion`` and keep the
    recorded bits. Fails where the option is not passed (XLA's default takes their dots)."""
    if portable_compiler_options("cpu") is None:
        pytest.skip(f"this jaxlib's XLA:CPU has no {YNN_FUSIONS} option (no YNNPACK fusions)")
    dump = tmp_path / "dump"
    got = _print_cases(tmp_path, f"--xla_dump_to={dump} --xla_dump_hlo_as_text "
                                 "--xla_dump_hlo_module_re=jit_(call|stage|program).*", *YNN_CASES)
    assert {case: got[case] for case in YNN_CASES} == {c: RECORDED[c] for c in YNN_CASES}
    optimized = list(dump.glob("*after_optimizations.txt"))
    assert optimized, f"no optimized program was dumped to {dump}"
    ynn = [p.name for p in optimized if "__ynn_fusion" in p.read_text()]
    assert not ynn, f"programs with YNNPACK fusions: {ynn}"


def test_scale_jitter_multiplies_no_dense_matrices():
    """scale_jitter's program holds no dot: XLA:CPU's dot sums in an order that follows the
    CPU's vector width (float32 ``2ed326a6...`` on an emulated AMD EPYC against ``ade592f1...``
    with AVX-512); its taps are summed in order by elementwise code. Fails on the dense form."""
    import numpy as np

    from augjax import ops

    x = np.zeros((2, 32, 32, 3), np.float32)
    step = ops.scale_jitter.bind(target_size=(8, 10))
    params = step.sample(x, key=jax.random.key(0))
    text = jax.jit(lambda x, p: step.apply(x, params=p)).lower(x, params).as_text()
    assert "dot_general" not in text and "stablehlo.dot" not in text


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_outputs_are_bitwise_recorded(case):
    run, recorded = _runs()[case], RECORDED[case]
    if isinstance(recorded, dict):  # an error is recorded as its type
        with pytest.raises(Exception) as err:
            run()
        assert type(err.value).__name__ == recorded["error"]
        return
    assert run() == recorded
