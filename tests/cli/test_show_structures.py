"""``augjax show --views RECIPE`` and ``augjax show NAME --clip T``: the PNGs are written, with a
column per view / frame, and the pictures hold what the calls give."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augjax.cli.main import main


@pytest.mark.slow
def test_show_views(tmp_path, capsys):
    out = tmp_path / "views.png"
    assert main(["show", "simclr", "--views", "--size", "48", "--out", str(out)]) == 0
    assert "views of recipe simclr" in capsys.readouterr().out
    im = np.asarray(Image.open(out))
    assert im.ndim == 3 and im.shape[2] == 3


def test_show_clip_rows_are_the_calls(tmp_path):
    """The picture is written, one column per frame; the clip it draws (a pan across the
    photograph) through flip with p=1 gives every frame mirrored."""
    from augjax._demo.structures import _clip, _photo

    import augjax
    import jax

    out = tmp_path / "clip.png"
    assert main(["show", "flip", "--clip", "3", "--size", "32", "--out", str(out)]) == 0
    assert Image.open(out).width > 3 * 32
    # The same call the picture draws: flip with p=1 on the clip gives every frame mirrored.
    clip = _clip(_photo(None, 48), 3, 32)[None]
    flipped = np.asarray(augjax.ops.flip(augjax.Clips(clip), key=jax.random.key(0), p=1.0))
    np.testing.assert_array_equal(flipped, clip[:, :, :, ::-1])


def test_show_views_unknown_recipe(tmp_path, capsys):
    assert main(["show", "moco", "--views", "--out", str(tmp_path / "x.png")]) != 0
    assert "expects a recipe" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
