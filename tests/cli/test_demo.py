"""``augjax demo`` and ``augjax show`` end to end: real DALI CPU pipelines over real photos, the
PNG read back and its cells checked against what each op must do to the originals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from PIL import Image

import augjax
from augjax._demo import DemoInputError
from augjax._demo import runner as demo_runner
from augjax._demo.params import DEMO_PARAMS, demo_params
from augjax._demo.render import EMPTY
from augjax._demo.sources import bundled_dir
from augjax._demo.sweep import run_show
from augjax.cli.main import main

OPS = "flip,invert,mixup,to_float,invert+flip"
ROWS = ["originals", "flip", "invert", "mixup", "to_float", "invert+flip"]
BATCH, DRAWS, SIZE = 3, 2, 32


def _demo(out: Path, *extra: str, ops: str = OPS, seed: int = 5) -> int:
    """The demo's op grid only (its views and clips pictures: test_demo_structures.py)."""
    return main(["demo", "--ops", ops, "--batch", str(BATCH), "--draws", str(DRAWS),
                 "--size", str(SIZE), "--seed", str(seed), "--out", str(out), "--no-progress",
                 "--views", "none", "--clip", "none", *extra])


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    rc = _demo(out)
    summary = json.loads((out / "demo.json").read_text())
    grid = np.asarray(Image.open(out / "demo.png").convert("RGB"))
    return rc, out, summary, grid


def _cell(grid: np.ndarray, summary: dict, row: int, col: int, size: int = SIZE) -> np.ndarray:
    x, y = summary["grid"]["column_x"][col], summary["grid"]["row_y"][row]
    return grid[y:y + size, x:x + size].astype(np.int64)


def _row(grid, summary, row, size=SIZE):
    return [_cell(grid, summary, row, c, size) for c in range(len(summary["grid"]["column_x"]))]


# -- the grid ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_demo_writes_the_grid_and_the_summary(demo_run):
    rc, out, summary, grid = demo_run
    assert rc == 0
    assert (out / "demo.png").is_file() and (out / "demo.json").is_file()
    assert summary["grid"]["rows"] == ROWS
    assert [r["status"] for r in summary["ops"]] == ["ok"] * (len(ROWS) - 1)
    assert summary["failed"] == []
    assert summary["seed"] == 5 and summary["batch"] == BATCH and summary["draws"] == DRAWS
    assert summary["images"]["bundled"] and summary["images"]["count"] == BATCH
    assert summary["images"]["files"] == sorted(p.name for p in bundled_dir().glob("*.jpg"))[:BATCH]
    for record in summary["ops"]:
        assert record["output"]["shape"][:3] == [BATCH, SIZE, SIZE]
        assert record["timing"]["first_batch_s"] > 0 and record["timing"]["next_batch_s"] > 0
        assert record["steps"][0]["distribution"]["name"] == "augjax"
    assert summary["versions"]["nvidia-dali"] and summary["versions"]["jax"]
    # image size: one column per (image, draw), one row per op plus the originals
    assert grid.shape[1] == summary["grid"]["width"] and grid.shape[0] == summary["grid"]["height"]
    assert len(summary["grid"]["column_x"]) == BATCH * DRAWS
    assert len(summary["grid"]["row_y"]) == len(ROWS)
    assert summary["grid"]["column_x"][-1] + SIZE < grid.shape[1]
    assert summary["grid"]["row_y"][-1] + SIZE < grid.shape[0]
    for r in range(len(ROWS)):  # every row holds pictures, not placeholders
        for cell in _row(grid, summary, r):
            assert not (cell == EMPTY).all(axis=-1).all()
            assert cell.std() > 5


def test_originals_row_holds_the_decoded_photos(demo_run):
    _, _, summary, grid = demo_run
    cells = _row(grid, summary, 0)
    for i in range(BATCH):
        a, b = cells[i * DRAWS], cells[i * DRAWS + 1]
        assert np.array_equal(a, b)  # the original repeated above each of its draws
        # An independent decode + resize (Pillow, bilinear with antialiasing; DALI's filter
        # differs a little): the same photo, center-cropped to SIZE x SIZE.
        pil = Image.open(bundled_dir() / summary["images"]["files"][i]).convert("RGB")
        s = SIZE / min(pil.size)
        w, h = max(SIZE, round(pil.width * s)), max(SIZE, round(pil.height * s))
        ref = np.asarray(pil.resize((w, h), Image.Resampling.BILINEAR), dtype=np.int64)
        top, left = (h - SIZE) // 2, (w - SIZE) // 2
        ref = ref[top:top + SIZE, left:left + SIZE]
        assert np.abs(a - ref).mean() < 8
        others = [j for j in range(BATCH) if j != i]
        assert all(np.abs(cells[j * DRAWS] - ref).mean() > 20 for j in others)


def _flips(x):
    return [x, x[:, ::-1], x[::-1], x[::-1, ::-1]]


def test_op_rows_show_what_each_op_does(demo_run):
    _, _, summary, grid = demo_run
    rows = {name: _row(grid, summary, r) for r, name in enumerate(ROWS)}
    orig = rows["originals"]
    # invert: exactly 255 - x
    for o, c in zip(orig, rows["invert"]):
        assert np.array_equal(c, 255 - o)
    # flip (p=0.5, both axes): each draw is one of the four flips, and not all are the identity
    kinds = []
    for o, c in zip(orig, rows["flip"]):
        match = [k for k, f in enumerate(_flips(o)) if np.array_equal(c, f)]
        assert match, "a flip row cell is no flip of its original"
        kinds.append(match[0])
    assert set(kinds) != {0}
    # the chain invert+flip: inverted, then flipped
    for o, c in zip(orig, rows["invert+flip"]):
        assert any(np.array_equal(c, f) for f in _flips(255 - o))
    # to_float: float32 in [0, 1], shown x255 -> the original within one level
    for o, c in zip(orig, rows["to_float"]):
        assert np.abs(c - o).max() <= 1
    rec = {r["name"]: r for r in summary["ops"]}
    assert rec["to_float"]["output"]["dtype"] == "float32"
    assert rec["to_float"]["output"]["display"] == "float [0,1] shown x255"
    # mixup (one lambda per batch, partner = reversed batch): x_i = lam x_i + (1-lam) x_{N-1-i}
    assert rec["mixup"]["output"]["labels_shape"] == [BATCH, BATCH]  # soft labels, 3 classes
    assert rec["mixup"]["steps"][0]["params"]["num_classes"] == BATCH
    for d in range(DRAWS):
        cells = [rows["mixup"][i * DRAWS + d] for i in range(BATCH)]
        xs = [orig[i * DRAWS] for i in range(BATCH)]
        a, b = xs[0] - xs[-1], cells[0] - xs[-1]
        lam = float((a * b).sum() / (a * a).sum())
        assert 0.0 <= lam <= 1.0
        for i in range(BATCH):
            expect = lam * xs[i] + (1 - lam) * xs[BATCH - 1 - i]
            assert np.abs(cells[i] - expect).max() <= 1.5


def test_copy_paste_row_pastes_instances_not_whole_images(tmp_path):
    """The demo gives ``copy_paste`` two instances per image (a disc at the upper left, a box at
    the lower right): a cell differs from its original only inside them (whole images were
    pasted before), and some instance is pasted."""
    assert _demo(tmp_path, ops="copy_paste") == 0
    summary = json.loads((tmp_path / "demo.json").read_text())
    grid = np.asarray(Image.open(tmp_path / "demo.png").convert("RGB"))
    orig, cells = _row(grid, summary, 0), _row(grid, summary, 1)
    yy, xx = (np.mgrid[0:SIZE, 0:SIZE] + 0.5) / SIZE
    inside = ((xx - 0.32) ** 2 + (yy - 0.36) ** 2 < 0.2 ** 2) | (
        (xx > 0.55) & (xx < 0.9) & (yy > 0.5) & (yy < 0.88))
    near = inside.copy()  # one pixel of slack at the shapes' edges
    for axis in (0, 1):
        for shift in (-1, 1):
            near |= np.roll(inside, shift, axis=axis)
    changed = [np.any(c != o, axis=-1) for o, c in zip(orig, cells)]
    assert not any((ch & ~near).any() for ch in changed)
    assert any((ch & inside).any() for ch in changed)
    assert "masks=: 2 instances per image (a disc, a box)" in summary["ops"][0]["adapted"]


def test_a_long_grid_header_wraps_inside_the_picture():
    """A header longer than the grid is wide (the views picture's title ran off it) wraps onto
    more lines: every line is drawn, the rows move down; a short one keeps one line."""
    from augjax._demo.render import BACKGROUND, GridRow, render_grid

    rows = [GridRow("row", [], [np.zeros((SIZE, SIZE, 3), np.uint8)])]
    short, layout = render_grid(rows, cell=SIZE, groups=0, header="short")
    long, long_layout = render_grid(rows, cell=SIZE, groups=0, header="a long title " * 12)
    ink = np.any(np.asarray(long)[:, :, :] != np.asarray(BACKGROUND, np.uint8), axis=-1)
    top = long_layout["rows"][0]
    lines = top - layout["rows"][0]
    assert lines >= 3 * 15 and long.width == short.width  # 15 px a line: 4 lines or more
    band = ink[:top]
    text_rows = np.flatnonzero(band.any(axis=1))
    assert text_rows.max() > top - 15 - 10  # the last line is drawn, just above the rows


def test_same_seed_gives_the_same_png_bytes(demo_run, tmp_path, capsys):
    _, out, _, _ = demo_run
    assert _demo(tmp_path / "again") == 0
    assert (tmp_path / "again" / "demo.png").read_bytes() == (out / "demo.png").read_bytes()
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("augjax demo: 5 rows (5 ok)")
    assert str(tmp_path / "again" / "demo.png") in line and str(tmp_path / "again" / "demo.json") in line
    assert _demo(tmp_path / "other", seed=6) == 0
    assert (tmp_path / "other" / "demo.png").read_bytes() != (out / "demo.png").read_bytes()


def test_user_folder_recursive_and_cycled(tmp_path):
    images = tmp_path / "mine"
    (images / "a").mkdir(parents=True)
    (images / "b").mkdir()
    colours = {"a/red.png": (255, 0, 0), "b/green.bmp": (0, 200, 0), "c_blue.png": (0, 0, 255)}
    sizes = [(40, 50), (64, 33), (32, 32)]
    for (rel, colour), size in zip(colours.items(), sizes):
        Image.new("RGB", size, colour).save(images / rel)
    (images / "notes.txt").write_text("not an image")
    out = tmp_path / "out"
    rc = main(["demo", "--images", str(images), "--ops", "invert", "--batch", "4", "--draws", "1",
               "--size", str(SIZE), "--out", str(out), "--no-progress", "--views", "none",
               "--clip", "none"])
    assert rc == 0
    summary = json.loads((out / "demo.json").read_text())
    assert summary["images"]["files"] == sorted(colours)  # recursive, sorted, images only
    assert summary["images"]["num_classes"] == 3
    grid = np.asarray(Image.open(out / "demo.png").convert("RGB"))
    expected = [colours[f] for f in sorted(colours)]
    expected.append(expected[0])  # 4 slots over 3 images: the list cycles
    for col, colour in enumerate(expected):
        assert (_cell(grid, summary, 0, col) == colour).all()
        assert (_cell(grid, summary, 1, col) == 255 - np.array(colour)).all()


# -- failures ------------------------------------------------------------------------------------
@augjax.op("invert", params={})
def _broken(image, params):
    """Raises when traced."""
    raise ValueError("broken on purpose")


def test_a_failing_op_is_reported_and_the_grid_still_written(tmp_path, capsys, monkeypatch):
    real_get = demo_runner.REGISTRY.get
    monkeypatch.setattr(demo_runner.REGISTRY, "get",
                        lambda name: _broken if name == "invert" else real_get(name))
    out = tmp_path / "out"
    assert _demo(out, ops="flip,invert") == 0
    err = capsys.readouterr().err
    assert "invert failed: ValueError: broken on purpose" in err
    summary = json.loads((out / "demo.json").read_text())
    assert summary["grid"]["rows"] == ["originals", "flip", "invert"]
    assert summary["failed"] == ["invert"] and summary["ok"] == ["flip"]
    rec = summary["ops"][1]
    assert rec["status"] == "failed" and rec["error"] == "ValueError: broken on purpose"
    grid = np.asarray(Image.open(out / "demo.png").convert("RGB"))
    for cell in _row(grid, summary, 2):
        assert (cell == EMPTY).all()
    # nothing worked: still a grid, exit status 1
    assert _demo(tmp_path / "none", ops="invert") == 1
    assert "no op worked" in capsys.readouterr().err
    assert (tmp_path / "none" / "demo.png").is_file()


def _bad(tmp_path: Path, capsys, *args: str) -> str:
    rc = main(["demo", "--out", str(tmp_path / "out"), "--no-progress", "--size", "32", *args])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("augjax demo: error: ") and "Traceback" not in err
    return err


def test_bad_images_folder(tmp_path, capsys):
    assert "does not exist" in _bad(tmp_path, capsys, "--images", str(tmp_path / "missing"))
    (tmp_path / "file.jpg").write_bytes(b"x")
    assert "is not a folder" in _bad(tmp_path, capsys, "--images", str(tmp_path / "file.jpg"))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("no images here")
    assert "no image files" in _bad(tmp_path, capsys, "--images", str(empty))


def test_unreadable_images(tmp_path, capsys):
    folder = tmp_path / "imgs"
    folder.mkdir()
    good = (bundled_dir() / "01-astronaut.jpg").read_bytes()
    (folder / "a_good.jpg").write_bytes(good)
    (folder / "b_garbage.jpg").write_bytes(b"this is not a JPEG at all")
    (folder / "c_truncated.jpg").write_bytes(good[:400])
    err = _bad(tmp_path, capsys, "--images", str(folder))
    assert "2 of the 3 images" in err
    assert "b_garbage.jpg" in err and "c_truncated.jpg" in err and "a_good.jpg" not in err


def test_unknown_ops(tmp_path, capsys):
    err = _bad(tmp_path, capsys, "--ops", "flipp")
    assert "no registered op matches 'flipp'" in err and "did you mean 'flip'" in err
    assert "'nope'" in _bad(tmp_path, capsys, "--ops", "flip+nope")
    assert "no registered op matches 'zz*'" in _bad(tmp_path, capsys, "--ops", "flip,zz*")
    assert "empty" in _bad(tmp_path, capsys, "--ops", " , ")


def test_bad_input_exits_2_without_traceback_from_the_command_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "augjax.cli.main", "demo", "--images", str(tmp_path / "nope"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


# -- demo parameters -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DEMO_PARAMS))
def test_demo_table_matches_the_op(name):
    if name not in augjax.list_ops():
        pytest.skip(f"{name} is not registered here (its distribution is not installed)")
    spec = augjax.get_op(name)
    for pname, value in DEMO_PARAMS[name].items():
        assert pname in spec.params, f"{name} has no parameter {pname!r}"
        spec.params[pname].check(name, pname, value)  # raises ParamError if the value is invalid
    given, notes = demo_params(spec, num_classes=4, size=64)
    spec.bind(**given)
    assert not [n for n in notes if "not used" in n]


def test_demo_params_fallbacks():
    @augjax.op("fake_mix", params={
        "num_classes": augjax.Param(None, kind="int", low=1, required=True),
        "count": augjax.Param(None, kind="int", low=2, high=10, required=True),
        "size": augjax.Param(None, kind="size", low=1, required=True),
        "mode": augjax.Param(None, kind="str", choices=("a", "b"), required=True),
        "strength": augjax.Param(0.0, neutral=0.0, magnitude=(0.0, 0.8)),
        "p": augjax.Param(0.5, low=0.0, high=1.0),
    }, level="batch", inputs=("images", "labels"))
    def fake_mix(images, labels, params, *, num_classes, count, size, mode, p):
        """Fake."""
        return images, labels

    given, notes = demo_params(fake_mix, num_classes=7, size=64)
    assert given == {"num_classes": 7, "count": 6, "size": (48, 48), "mode": "a",
                     "strength": 0.8}
    assert len(notes) == 5
    fake_mix.bind(**given)

    @augjax.op("fake_need", params={"thing": augjax.Param(None, kind="float", required=True)})
    def fake_need(image, params, *, thing):
        """Fake."""
        return image

    with pytest.raises(DemoInputError, match="'thing' is required"):
        demo_params(fake_need, num_classes=2, size=32)


# -- augjax show ---------------------------------------------------------------------------------
def _strip_cells(path: Path, result) -> list[np.ndarray]:
    strip = np.asarray(Image.open(path).convert("RGB")).astype(np.int64)
    return [strip[y:y + c.shape[0], x:x + c.shape[1]] for (x, y), c in zip(result.boxes,
                                                                           result.cells)]


def test_show_copy_paste_pastes_the_partner_photos_instances(tmp_path):
    """``augjax show copy_paste`` (the gallery's picture) pastes a partner photo's instances (a
    disc and a box): the cell is the original outside them and the partner inside where
    pasted (one photo alone pasted onto itself, showing nothing, before)."""
    out = tmp_path / "copy_paste.png"
    result = run_show("copy_paste", size=40, out=out)
    original, pasted = (c.astype(np.int64) for c in result.cells)
    h, w = original.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w] + 0.5
    yy, xx = yy / h, xx / w
    inside = ((xx - 0.32) ** 2 + (yy - 0.36) ** 2 < 0.2 ** 2) | (
        (xx > 0.55) & (xx < 0.9) & (yy > 0.5) & (yy < 0.88))
    changed = np.any(pasted != original, axis=-1)
    assert changed.any() and not (changed & ~inside).any()


def test_show_sweeps_the_magnitude_range(tmp_path):
    out = tmp_path / "rotate.png"
    result = run_show("rotate", size=40, out=out)
    lo, hi = augjax.get_op("rotate").params["degrees"].magnitude
    assert result.sweep.param == "degrees"
    assert result.sweep.values == [(v, v) for v in np.linspace(lo, hi, 5).tolist()]
    cells = _strip_cells(out, result)
    assert len(cells) == 6 and Image.open(out).size == result.size
    assert max(cells[0].shape[:2]) == 40
    for c, expect in zip(cells, result.cells):
        assert np.array_equal(c, expect)  # what was drawn is what the op returned
    assert np.array_equal(cells[1], cells[0])  # degrees=(0, 0) is the identity
    assert not np.array_equal(cells[-1], cells[0])


def test_show_sweeps_a_magnitude_map(tmp_path):
    # brightness declares an augjax.MagnitudeMap (1 + 0.9 t, signed), not a (start, end) pair
    out = tmp_path / "brightness.png"
    result = run_show("brightness", size=40, out=out, steps=3)
    assert result.sweep.param == "factor"
    assert result.sweep.values == [(1.0, 1.0), (1.45, 1.45), (1.9, 1.9)]
    cells = _strip_cells(out, result)
    assert np.array_equal(cells[1], cells[0])  # factor 1: the identity
    expect = np.clip(np.round(cells[0] * 1.9), 0, 255)  # full strength: 1.9 times brighter
    assert np.abs(cells[-1] - expect).max() <= 1


def test_show_an_op_without_a_magnitude_range_once_with_the_demo_parameters(tmp_path):
    # color_jitter declares no magnitude range: one picture, with what augjax demo gives it
    result = run_show("color_jitter", size=40, out=tmp_path / "cj.png")
    assert result.sweep.param is None and "no magnitude range" in result.sweep.how
    cells = _strip_cells(tmp_path / "cj.png", result)
    assert len(cells) == 2 and not np.array_equal(cells[1], cells[0])
    given, _ = demo_params(augjax.get_op("color_jitter"), num_classes=2, size=40)
    x = result.cells[0][None]
    again = augjax.ops.color_jitter(x, key=jax.random.key(0), **given)  # show's key: seed 0
    assert np.array_equal(cells[1], np.asarray(again)[0])


def test_show_given_values_and_an_op_without_parameters(tmp_path, capsys):
    out = tmp_path / "flip.png"
    assert main(["show", "flip", "--magnitudes", "0", "1", "--size", "40", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    strip = np.asarray(Image.open(out).convert("RGB")).astype(np.int64)
    result = run_show("flip", magnitudes=[0, 1], size=40, out=tmp_path / "again.png")
    assert (tmp_path / "again.png").read_bytes() == out.read_bytes()
    (x0, y0), (x1, y1), (x2, y2) = result.boxes
    h, w = result.cells[0].shape[:2]
    orig = strip[y0:y0 + h, x0:x0 + w]
    assert np.array_equal(strip[y1:y1 + h, x1:x1 + w], orig)  # p=0
    assert np.array_equal(strip[y2:y2 + h, x2:x2 + w], orig[:, ::-1])  # p=1, horizontal
    result = run_show("invert", size=40, out=tmp_path / "invert.png")
    assert result.sweep.param is None
    cells = _strip_cells(tmp_path / "invert.png", result)
    assert len(cells) == 2 and np.array_equal(cells[1], 255 - cells[0])


def test_show_bad_input(tmp_path, capsys):
    def bad(*args: str) -> str:
        assert main(["show", *args, "--out", str(tmp_path / "x.png")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("augjax show: error: ") and "Traceback" not in err
        return err

    assert "no op named 'nope'" in bad("nope")
    assert "does not exist" in bad("flip", "--image", str(tmp_path / "missing.png"))
    (tmp_path / "garbage.png").write_bytes(b"nope")
    assert "not a readable image" in bad("flip", "--image", str(tmp_path / "garbage.png"))
    assert "has no parameter 'q'" in bad("flip", "--param", "q")
    assert "is not numeric" in bad("flip", "--param", "horizontal")
    assert "no numeric parameter" in bad("invert", "--magnitudes", "1")
    assert "parameter 'p'" in bad("flip", "--magnitudes", "2")  # outside [0, 1]


# -- GPU (run on the GPU machine: pytest -m gpu) ---------------------------------------------------
@pytest.mark.gpu
def test_demo_on_the_gpu(tmp_path):
    out = tmp_path / "gpu"
    assert _demo(out, "--device", "gpu", ops="flip,invert,mixup") == 0
    summary = json.loads((out / "demo.json").read_text())
    assert summary["device"] == "gpu" and summary["failed"] == []
    grid = np.asarray(Image.open(out / "demo.png").convert("RGB"))
    orig, flips, inv = (_row(grid, summary, r) for r in range(3))
    for o, c, i in zip(orig, flips, inv):
        assert any(np.array_equal(c, f) for f in _flips(o))
        assert np.array_equal(i, 255 - o)


def _jax_has_gpu() -> bool:
    import jax

    try:
        return any(d.platform == "gpu" for d in jax.devices())
    except RuntimeError:
        return False


@pytest.mark.skipif(_jax_has_gpu(), reason="checks the message given where there is no GPU")
def test_gpu_without_a_gpu_is_a_clear_error(tmp_path, capsys):
    err = _bad(tmp_path, capsys, "--device", "gpu", "--ops", "flip")
    assert "'gpu' needs JAX with CUDA and a GPU" in err


@augjax.op("invert", params={}, dtypes=("float32",), layouts=("CHW",), channels=(1,))
def _gray_float_chw_invert(image, params):
    """1 - x on one-channel float images (kernels see HWC; the op accepts CHW input only)."""
    return 1.0 - image


def test_inputs_are_adapted_to_what_an_op_accepts(tmp_path, monkeypatch):
    real_get = demo_runner.REGISTRY.get
    monkeypatch.setattr(demo_runner.REGISTRY, "get",
                        lambda name: _gray_float_chw_invert if name == "invert" else real_get(name))
    out = tmp_path / "out"
    assert _demo(out, ops="invert") == 0
    summary = json.loads((out / "demo.json").read_text())
    rec = summary["ops"][0]
    assert rec["status"] == "ok", rec.get("error")
    assert rec["adapted"] == ["invert: input converted RGB -> gray",
                              "invert: input converted uint8 -> float32 in [0, 1]",
                              "invert: input transposed to CHW"]
    assert rec["output"] == {"dtype": "float32", "layout": "CHW", "shape": [BATCH, 1, SIZE, SIZE],
                             "labels_shape": [BATCH, 1], "display": "float [0,1] shown x255"}
    grid = np.asarray(Image.open(out / "demo.png").convert("RGB"))
    for o, c in zip(_row(grid, summary, 0), _row(grid, summary, 1)):
        gray = o @ np.array([0.299, 0.587, 0.114])  # ITU-R BT.601, DALI's RGB -> GRAY
        assert (c[..., 0] == c[..., 1]).all() and (c[..., 0] == c[..., 2]).all()
        assert np.abs(c[..., 0] - (255 - gray)).max() <= 2
