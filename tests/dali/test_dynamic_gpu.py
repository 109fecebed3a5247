"""XLA's command buffers (CUDA graphs) against DALI on the GPU (NVIDIA/DALI#6449; run with
``pytest -m gpu`` on a CUDA machine, skipped with the reason elsewhere).

DALI's maintainers recommend ``XLA_FLAGS=--xla_gpu_enable_command_buffer=`` because XLA's graph
capture was seen to fail beside DALI (``STREAM_CAPTURE_INVALIDATED``). Here augjax's programs run
with XLA's *default* flags, in a fresh process (the flags are read once, when JAX starts), in a
DALI GPU pipeline (one ``jax_function``, both executors) and in dynamic mode (GPU batches in and
out, eager and captured), 30 batches each; every output must equal the array path's on the same
GPU with the same seeds, bitwise, and no CUDA error may appear.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

CHILD = textwrap.dedent("""
    import numpy as np, jax
    import nvidia.dali.experimental.dynamic as ndd
    from nvidia.dali import fn, pipeline_def
    import augjax
    from augjax.dali import dynamic

    B, S, STEPS = 8, 64, 30
    # rrc second: a pipeline reads a chain's leading crop with DALI's resize where the seeds
    # are on the CPU (augjax.dali._ragged); here every path reads in JAX
    chain = augjax.compose([augjax.ops.flip.bind(p=0.5),
                            augjax.ops.random_resized_crop.bind(size=48),
                            augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4,
                                                         saturation=0.4, hue=0.1),
                            augjax.ops.normalize.bind(chw=True)])
    rng = np.random.default_rng(0)
    host = [rng.integers(0, 256, (B, S, S, 3), dtype=np.uint8) for _ in range(4)]
    seeds = [rng.integers(0, 2**30, (B, 2), dtype=np.int32) for _ in range(STEPS)]
    gpu = jax.local_devices(backend="gpu")[0]

    def expected(i):
        x = jax.device_put(host[i % 4], gpu)
        return np.asarray(chain(x, key=augjax.keys_from_seeds(jax.device_put(seeds[i], gpu))))

    want = [expected(i) for i in range(STEPS)]
    bad = []
    for executor in (True, False):
        @pipeline_def(batch_size=B, num_threads=2, device_id=0, exec_dynamic=executor,
                      prefetch_queue_depth=2)
        def pipe():
            x = fn.external_source(source=lambda i: host[i.iteration % 4], batch=True,
                                   batch_info=True, layout="HWC").gpu()
            s = fn.external_source(source=lambda i: seeds[i.iteration % STEPS], batch=True,
                                   batch_info=True).gpu()
            return chain(x, seeds=s)
        p = pipe(); p.build()
        for i in range(STEPS):
            (out,) = p.run()
            got = np.asarray(out.as_cpu().as_tensor())
            if not np.array_equal(got, want[i]):
                bad.append(f"pipeline exec_dynamic={executor} step {i}")
        del p
    batches = [ndd.as_batch(jax.device_put(h, gpu), layout="HWC").evaluate() for h in host]
    outs = [chain(batches[i % 4], seeds=seeds[i]) for i in range(STEPS)]  # async, then read
    for i, out in enumerate(outs):
        if not np.array_equal(np.asarray(ndd.as_tensor(out).cpu()), want[i]):
            bad.append(f"dynamic eager step {i}")
    source = ndd.ExternalSource([batches[i % 4] for i in range(STEPS)], device="gpu",
                                layout="HWC")
    for i, x in enumerate(source.captured(batch_size=B)):
        got = np.asarray(chain(x, seeds=seeds[i], output="jax"))
        if not np.array_equal(got, want[i]):
            bad.append(f"dynamic captured step {i}")
    print("XLA_FLAGS=" + repr(__import__("os").environ.get("XLA_FLAGS", "")))
    assert not bad, bad
    print("OK")
""")


def test_default_xla_flags_beside_dali_give_the_array_path_bits():
    env = dict(os.environ)
    flags = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                     if "command_buffer" not in f)
    env["XLA_FLAGS"] = flags  # XLA's default: command buffers on
    res = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                         timeout=900)
    assert "STREAM_CAPTURE_INVALIDATED" not in res.stderr, res.stderr[-4000:]
    assert res.returncode == 0 and "OK" in res.stdout, (res.stdout[-2000:], res.stderr[-4000:])
