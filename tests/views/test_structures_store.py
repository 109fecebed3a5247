"""Views and clips programs in augjax's program store, in fresh processes: a second process runs
the first one's views and clips programs (sampler, apply, per-frame sampler, with targets)
without tracing, with the bits of a process without the store; damaged and swapped (another
program's) files are refused with one warning each and rebuilt with the same bits; an edited
op in the views' and clips' steps traces afresh and gives its new pixels; views of another
group count and clips of another config get files of their own."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from store_process import run_with_store, store_script, stored


#: Views (two groups, of two sizes) and clips (one draw per clip, per frame, with boxes) whose
#: steps hold an op defined in this script's own file; prints digests of every output.
SCRIPT = '''
import hashlib, json, sys, warnings
import jax, jax.numpy as jnp, numpy as np
import augjax
from augjax import Param, op, ops
from augjax._runtime.store import programs as program_store

@op("structures_scale_test", params={"amount": Param(0.5, low=0.0, high=1.0)})
def scaled(image, params, *, amount):
    return (image.astype(jnp.float32) * amount).astype(image.dtype)

count = int(sys.argv[1])
scale = scaled.bind(amount=0.75)
flip = ops.flip.bind(p=0.5)
views = augjax.views({
    "big": (count, augjax.compose(flip, scale)),
    "small": [augjax.compose(ops.random_resized_crop.bind(size=(8, 8)), flip),
              augjax.compose(ops.random_resized_crop.bind(size=(8, 8)), scale)]})
clip_step = augjax.compose(flip, scale)
rng = np.random.default_rng(0)
images = rng.integers(0, 256, (3, 12, 12, 3), dtype=np.uint8)
clips = augjax.Clips(rng.integers(0, 256, (2, 3, 12, 12, 3), dtype=np.uint8))
corner = rng.uniform(0, 6, (2, 3, 2, 2)).astype(np.float32)
boxes = np.concatenate([corner, corner + 4], -1)
key = jax.random.key(5)

def digest(x):
    x = np.asarray(x)
    return f"{x.dtype}{x.shape}:" + hashlib.sha256(x.tobytes()).hexdigest()

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = {f"views/{k}": digest(v) for k, v in views(images, key=key).items()}
    out["clips"] = digest(clip_step(clips, key=key))
    out["clips/per_frame"] = digest(clip_step(clips, key=key, per_frame=True))
    moved = clip_step(clips, key=key, boxes=boxes)
    out.update({f"clips/targets/{k}": digest(v) for k, v in moved.items()})
print(json.dumps({"traces": augjax.trace_count(), "loads": program_store.load_count(),
                  "out": out,
                  "refused": sum(issubclass(w.category, augjax.ProgramStoreWarning)
                                 for w in caught)}))
'''


def run(script: Path, cache: Path, count: int = 2, **env_extra: str) -> dict:
    return run_with_store(script, cache, count, **env_extra)


@pytest.fixture
def script(tmp_path):
    return store_script(tmp_path, "structures_script.py", SCRIPT)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict:
    """SCRIPT's output (two views in group "big") in a process without the compilation cache
    and with a store of its own (the tests that compare with it share one such process)."""
    folder = tmp_path_factory.mktemp("plain")
    path = folder / "structures_script.py"
    path.write_text(SCRIPT)
    return run(path, folder / "cache", AUGJAX_COMPILATION_CACHE="0")


def _kinds_by_file(cache: Path) -> list[str]:
    """The kind of every stored program, in :func:`stored`'s order (from the header's key)."""
    kinds = []
    for path in stored(cache):
        header = path.read_bytes().split(b"\n", 2)[1]
        kinds.append(json.loads(json.loads(header)["key"])["kind"])
    return kinds


def _kinds(cache: Path) -> list[str]:
    return sorted(_kinds_by_file(cache))


@pytest.mark.slow
def test_a_warm_process_runs_views_and_clips_without_tracing(script, tmp_path, plain):
    cache = tmp_path / "cache"
    cold = run(script, cache)
    kinds = _kinds(cache)
    # views: sampler and apply; clips: the per-clip sampler (the step's own), the per-frame
    # sampler, and three applies (per clip, per frame, with boxes)
    for kind in ("views_sample", "views_apply", "clips_sample_frames"):
        assert kinds.count(kind) == 1, kinds
    assert kinds.count("clips_apply") == 3, kinds
    warm = run(script, cache)
    assert plain["traces"] > 0 and cold["traces"] == plain["traces"]
    assert warm["traces"] == 0 and warm["loads"] == len(stored(cache))
    assert cold["out"] == warm["out"] == plain["out"]  # bitwise: the store only saves time
    assert cold["refused"] == warm["refused"] == 0


@pytest.mark.slow
def test_damaged_swapped_and_stale_entries_are_rebuilt(script, tmp_path, plain):
    """Every stored views/clips file with a flipped bit, then two of them swapped (each
    another program's file): the next process warns once per refused file, traces afresh and
    gives the bits of a process without the store, and the one after reads the rebuilt files.
    An edited op in the steps (the script's own kernel) traces afresh silently, with its new
    pixels."""
    cache = tmp_path / "cache"
    run(script, cache)
    kinds = dict(zip(stored(cache), _kinds_by_file(cache)))
    structures = [p for p, kind in kinds.items() if kind.startswith(("views_", "clips_"))]
    assert len(structures) == 6
    # the swapped pair: the views' apply and a clips apply (trace_count counts applies; the
    # files' order by name differs between machines, so the pair is chosen by kind)
    swapped = ([p for p in structures if kinds[p] == "views_apply"]
               + [p for p in structures if kinds[p] == "clips_apply"])[:2]

    def check(refused: int) -> None:
        got = run(script, cache)
        assert got["refused"] == refused and got["traces"] > 0
        assert got["out"] == plain["out"]

    for i, path in enumerate(structures):
        blob = bytearray(path.read_bytes())
        rng = np.random.default_rng(i)
        blob[int(rng.integers(len(blob) // 2, len(blob)))] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(blob))
    check(len(structures))
    a, b = swapped[0].read_bytes(), swapped[1].read_bytes()
    swapped[0].write_bytes(b)
    swapped[1].write_bytes(a)
    check(2)
    warm = run(script, cache)
    assert warm["refused"] == 0 and warm["traces"] == 0 and warm["out"] == plain["out"]

    script.write_text(SCRIPT.replace("* amount)", "* amount * 0.5)"))
    edited = run(script, cache)
    edited_plain = run(script, tmp_path / "plain2", AUGJAX_COMPILATION_CACHE="0")
    assert edited["refused"] == 0 and edited["traces"] > 0
    assert edited["out"] == edited_plain["out"]
    assert edited["out"]["views/big"] != plain["out"]["views/big"]
    assert edited["out"]["clips"] != plain["out"]["clips"]


@pytest.mark.slow
def test_another_group_count_gets_its_own_programs(script, tmp_path):
    """Views of three views in group "big" instead of two are another program (their key
    holds the groups' counts): not the stored two-view program, whose output has another
    shape."""
    cache = tmp_path / "cache"
    run(script, cache, count=2)
    before = set(stored(cache))
    three = run(script, cache, count=3)
    plain = run(script, tmp_path / "plain", count=3, AUGJAX_COMPILATION_CACHE="0")
    assert three["out"] == plain["out"] and three["refused"] == 0
    assert three["out"]["views/big"].startswith("uint8(3, 3, 12, 12, 3)")
    added = [p for p in stored(cache) if p not in before]
    assert len(added) == 2  # the views' sampler and apply for three views


@pytest.mark.gpu
def test_gpu_fused_views_and_clips_programs_are_stored(script, tmp_path, plain):
    """On the GPU, views and clips run as one fused program each (``views_call``,
    ``clips_call``): stored, loaded by a warm process without tracing, with the bits of a
    process without the store."""
    cache = tmp_path / "cache"
    cold = run(script, cache)
    kinds = _kinds(cache)
    assert "views_call" in kinds and "clips_call" in kinds, kinds
    warm = run(script, cache)
    assert warm["traces"] == 0 and cold["out"] == warm["out"] == plain["out"]
