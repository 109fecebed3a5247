"""``augjax demo``'s views and clips pictures: the PNGs read back, cell by cell, and checked
against the array calls with the seeds the pipelines drew (recorded in demo.json), and against
what one draw per clip / per frame must give frame by frame."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from PIL import Image

import augjax
from augjax._demo.pipeline_structures import clip_step
from augjax._demo.structures import views_of
from augjax.cli.main import main

pytest.importorskip("nvidia.dali", reason="DALI is not installed")

BATCH, SIZE, FRAMES = 2, 32, 3


def _run(out, *extra: str) -> dict:
    rc = main(["demo", "--ops", "invert", "--batch", str(BATCH), "--draws", "1", "--size",
               str(SIZE), "--seed", "3", "--frames", str(FRAMES), "--out", str(out),
               "--no-progress", *extra])
    assert rc == 0
    return json.loads((out / "demo.json").read_text())


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo with DINO's views (two groups of two sizes) and a clip chain
    (rotate+color_jitter)."""
    out = tmp_path_factory.mktemp("structures")
    return out, _run(out, "--views", "dino", "--clip", "rotate+color_jitter")


def _cells(out, record: dict, row: int, shapes: list[tuple[int, int]]) -> list[np.ndarray]:
    """The images of one row of ``record``'s picture: cell ``c`` holds an image of
    ``shapes[c]`` (h, w), centred in its cell as render_grid pastes it."""
    grid = np.asarray(Image.open(out / record["file"]).convert("RGB"))
    layout = record["grid"]
    assert (grid.shape[1], grid.shape[0]) == (layout["width"], layout["height"])
    cell, y0 = layout["cell"], layout["row_y"][row]
    cells = []
    for x0, (h, w) in zip(layout["column_x"], shapes, strict=True):
        y, x = y0 + (cell - h) // 2, x0 + (cell - w) // 2
        cells.append(grid[y:y + h, x:x + w])
    return cells


@pytest.mark.slow  # DINO's programs: over a minute on 2 loaded cores
def test_views_picture_holds_the_recipe_with_the_pipeline_seeds(demo):
    out, summary = demo
    rec = summary["views"]
    assert rec["status"] == "ok" and rec["recipe"] == "dino"
    small = SIZE * 96 // 224
    assert rec["groups"] == {"global": [2, SIZE, SIZE, 3], "local": [8, small, small, 3]}
    side = rec["source_size"]
    shapes = [(side, side)] + [(SIZE, SIZE)] * 2 + [(small, small)] * 8
    assert [c.get("group", "original") for c in rec["grid"]["columns"]] == \
        ["original"] + ["global"] * 2 + ["local"] * 8
    rows = [_cells(out, rec, i, shapes) for i in range(BATCH)]
    originals = np.stack([r[0] for r in rows])
    seeds = np.asarray(rec["seeds"], np.int32)
    assert seeds.shape == (BATCH, 2)
    ref = views_of("dino", SIZE)(originals, key=augjax.keys_from_seeds(seeds))
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(np.stack(row[1:3]), np.asarray(ref["global"][i]))
        np.testing.assert_array_equal(np.stack(row[3:]), np.asarray(ref["local"][i]))
        # every view its own key: no two of an image's views are equal
        views = [v.tobytes() for v in row[1:]]
        assert len(set(views)) == len(views)


def _pan_shift(a: np.ndarray, b: np.ndarray) -> int:
    """The dx > 0 with ``b[:, :-dx] == a[:, dx:]`` (b is a panned right), or 0."""
    for dx in range(1, a.shape[1]):
        if np.array_equal(b[:, :-dx], a[:, dx:]):
            return dx
    return 0


@pytest.mark.slow  # the demo's pipelines and the image calls it is checked against
def test_clips_picture_one_draw_per_clip_and_per_frame(demo):
    out, summary = demo
    rec = summary["clips"]
    assert rec["status"] == "ok" and rec["ops"] == "rotate+color_jitter"
    assert [s["op"] for s in rec["steps"]] == ["rotate", "color_jitter"]
    shapes = [(SIZE, SIZE)] * (3 * FRAMES)
    rows = [_cells(out, rec, n, shapes) for n in range(BATCH)]
    clips = np.stack([np.stack(r[:FRAMES]) for r in rows])
    per_clip = np.stack([np.stack(r[FRAMES:2 * FRAMES]) for r in rows])
    per_frame = np.stack([np.stack(r[2 * FRAMES:]) for r in rows])
    for clip in clips:  # a clip is a pan across one photo: each frame the last moved left
        for t in range(FRAMES - 1):
            assert _pan_shift(clip[t], clip[t + 1]) > 0
    step, _ = clip_step(rec["ops"], SIZE)
    keys = augjax.keys_from_seeds(np.asarray(rec["seeds"], np.int32))
    np.testing.assert_array_equal(per_clip, np.asarray(step(augjax.Clips(clips), key=keys)))
    np.testing.assert_array_equal(per_frame, np.asarray(step(augjax.Clips(clips), key=keys,
                                                             per_frame=True)))
    for t in range(FRAMES):
        # one draw per clip: frame t is the image call on the frames t with the clips' keys
        np.testing.assert_array_equal(per_clip[:, t], np.asarray(step(clips[:, t], key=keys)))
        # one draw per frame: with the keys fold_in(k_n, t)
        frame_keys = jax.vmap(lambda k, t=t: jax.random.fold_in(k, t))(keys)
        np.testing.assert_array_equal(per_frame[:, t],
                                      np.asarray(step(clips[:, t], key=frame_keys)))
    assert not np.array_equal(per_frame[:, 1:], per_clip[:, 1:])


def test_the_plain_demo_draws_views_and_clips():
    """``augjax demo`` (the README's) draws SimCLR's views and rotate+color_jitter on clips:
    their programs are in the program store, so a warm run traces nothing
    (tests/reliability/test_quickstart_warm.py runs it twice)."""
    from augjax.cli.main import build_parser

    args = build_parser().parse_args(["demo"])
    assert (args.views, args.clip) == ("simclr", "rotate+color_jitter")


def test_none_skips_the_pictures(tmp_path):
    summary = _run(tmp_path, "--views", "none", "--clip", "none")
    assert "views" not in summary and "clips" not in summary
    assert not (tmp_path / "demo-views.png").exists()
    assert not (tmp_path / "demo-clips.png").exists()


def test_bad_clip_is_refused_before_any_work(tmp_path, capsys):
    rc = main(["demo", "--clip", "rotat", "--out", str(tmp_path / "out"), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "argument --clip: no registered op matches 'rotat'" in err and "'rotate'" in err
    assert not (tmp_path / "out" / "demo.json").exists()
    rc = main(["demo", "--clip", "mixup", "--out", str(tmp_path / "out"), "--no-progress"])
    assert rc == 2 and "mixes labels" in capsys.readouterr().err


# -- GPU (run on the GPU machine: pytest -m gpu) ---------------------------------------------------
@pytest.mark.gpu
def test_demo_structures_on_the_gpu(tmp_path):
    summary = _run(tmp_path, "--device", "gpu", "--views", "simclr", "--clip",
                   "rotate+color_jitter")
    assert summary["views"]["status"] == "ok" and summary["clips"]["status"] == "ok"
    rec = summary["clips"]
    rows = [_cells(tmp_path, rec, n, [(SIZE, SIZE)] * (3 * FRAMES)) for n in range(BATCH)]
    clips = np.stack([np.stack(r[:FRAMES]) for r in rows])
    per_clip = np.stack([np.stack(r[FRAMES:2 * FRAMES]) for r in rows])
    step, _ = clip_step(rec["ops"], SIZE)
    keys = augjax.keys_from_seeds(np.asarray(rec["seeds"], np.int32))
    gpu = jax.devices("gpu")[0]
    ref = step(jax.device_put(clips, gpu), key=jax.device_put(keys, gpu))
    np.testing.assert_array_equal(per_clip, np.asarray(ref))
