"""``augjax.grain_workers.warm_workers`` with a chain, for a torch ``DataLoader``'s workers
(docs/PYTORCH.md): a warm-up in one pinned process keeps the programs a worker compiles, and a
worker started after it (pinned by ``worker_init``, calling the chain as the docs'
``__getitem__`` does) traces nothing and gives a cold worker's bits. Found by a user trial
(PyTorch): each spawned worker compiled the same programs, tens of seconds on 2 cores, and
the warm-up was grain's alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import augjax
from augjax.grain_workers import warm_workers

pytestmark = pytest.mark.program_store

CHAIN = ("augjax.compose(augjax.ops.random_resized_crop.bind(size=48), augjax.ops.flip, "
         "augjax.ops.color_jitter.bind(brightness=0.3))")

WORKER = f"""
import hashlib, json
import numpy as np
import augjax
from augjax.grain_workers import worker_init

worker_init(0)  # as DataLoader(worker_init_fn=worker_init) runs it in a worker
chain = {CHAIN}
digest = hashlib.sha256()
for i, image in enumerate(list(augjax.data.sample_images(None))[:3]):
    key = augjax.keys_from_seeds(augjax.index_seeds([i], 0, 0))
    digest.update(np.asarray(chain([image], key=key)).tobytes())
print(json.dumps({{"traces": augjax.trace_count(), "digest": digest.hexdigest()}}))
"""


def _worker(cache) -> dict:
    env = {**os.environ, "AUGJAX_CACHE_DIR": str(cache), "AUGJAX_PROGRAM_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", WORKER], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_worker_after_warm_workers_of_a_chain_only_loads(tmp_path, monkeypatch):
    warm = tmp_path / "warm"
    monkeypatch.setenv("AUGJAX_CACHE_DIR", str(warm))
    monkeypatch.setenv("AUGJAX_PROGRAM_CACHE", "1")
    chain = eval(CHAIN)
    photos = list(augjax.data.sample_images(None))[:3]
    # the records as a worker's dataset holds them; draw 0 keys them as epoch 0 does
    done = warm_workers(chain, [{"image": p} for p in photos], draws=1)
    assert done["runs"] == 3
    worker = _worker(warm)
    cold = _worker(tmp_path / "cold")
    assert cold["traces"] > 0 and worker["traces"] == 0, (cold, worker)
    assert worker["digest"] == cold["digest"]
