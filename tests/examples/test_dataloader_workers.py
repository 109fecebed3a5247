"""docs/PYTORCH.md's "In a torch DataLoader": the page's ``loader.py`` in spawned worker
processes gives the batches of ``num_workers=0`` bitwise (each sample keyed by its index and
the epoch), another epoch other draws, and the workers' JAX stays on the CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

CHECK = '''
import numpy as np, torch
from torch.utils.data import DataLoader
import augjax, loader

def run(workers):
    data = loader.Photos(list(augjax.data.sample_images(None)))
    sampler = loader.Epochs(len(data))
    kw = dict(multiprocessing_context="spawn", persistent_workers=True,
              worker_init_fn=loader.worker_init) if workers else {}
    dl = DataLoader(data, batch_size=4, sampler=sampler, num_workers=workers, **kw)
    out = []
    for epoch in range(2):
        sampler.epoch = epoch
        out.append({int(i): im.numpy() for images, index in dl for im, i in zip(images, index)})
    return out

if __name__ == "__main__":  # (spawned workers import this module)
    a, b = run(0), run(2)
    for epoch in range(2):
        assert sorted(a[epoch]) == list(range(8))
        for i in range(8):
            np.testing.assert_array_equal(a[epoch][i], b[epoch][i])
    assert all(not np.array_equal(a[0][i], a[1][i]) for i in range(8))
    print("OK")
'''


def _loader_source() -> str:
    text = (ROOT / "docs" / "PYTORCH.md").read_text(encoding="utf-8")
    start = text.index("# file: loader.py")
    return text[start:text.index("```", start)]


@pytest.mark.slow
def test_the_pages_dataloader_workers_equal_no_workers(tmp_path):
    (tmp_path / "loader.py").write_text(_loader_source(), encoding="utf-8")
    (tmp_path / "check.py").write_text(CHECK, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stderr[-3000:]


FORKED = '''
import numpy as np, jax, augjax
from torch.utils.data import DataLoader, Dataset
from augjax.grain_workers import worker_init

class Flips(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return np.asarray(augjax.ops.flip(np.zeros((1, 8, 8, 3), np.uint8), key=jax.random.key(i)))

if __name__ == "__main__":
    augjax.ops.flip(np.zeros((1, 8, 8, 3), np.uint8), key=jax.random.key(0))  # JAX started
    loader = DataLoader(Flips(), batch_size=2, num_workers=2, worker_init_fn=worker_init,
                        multiprocessing_context="fork")
    try:
        list(loader)
    except augjax.BackendUnavailableError as err:
        print("REFUSED", err)
'''


def test_worker_init_refuses_a_worker_forked_after_jax_started(tmp_path):
    """A DataLoader worker forked from a process whose JAX ran deadlocks in its first JAX call;
    ``worker_init`` says so at once (a typed error naming spawn/forkserver) instead."""
    (tmp_path / "forked.py").write_text(FORKED, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "forked.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    assert "REFUSED" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    assert "forked from a process that had already started JAX" in done.stdout
    assert "spawn" in done.stdout
