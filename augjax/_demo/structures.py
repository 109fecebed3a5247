"""``augjax show --views RECIPE`` and ``augjax show NAME --clip T``: the views of a recipe, and an
op on a clip (frames side by side), as PNG grids, on arrays (no DALI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from augjax._demo import DemoInputError, require_pillow
from augjax._demo.params import demo_params
from augjax._demo.render import GridRow, display_batch, render_grid, save_png
from augjax._demo.sources import bundled_dir, load_rgb

__all__ = ["RECIPES", "run_show_clip", "run_show_views", "views_of"]

RECIPES = ("dino", "simclr", "byol")


def views_of(recipe: str, size: int) -> Any:
    """The demo's views of ``recipe`` for a demo of ``size`` pixels: global views (DINO) or
    both views (SimCLR, BYOL) of ``size``, DINO's local views of ``size * 96 // 224`` (the
    paper's 224 / 96), uint8; every recipe with its Gaussian blur (augjax's own op)."""
    import augjax

    if recipe == "dino":
        return augjax.recipes.dino(global_size=size, local_size=max(8, size * 96 // 224),
                                   normalize=False)
    return getattr(augjax.recipes, recipe)(size=size, normalize=False)


def _photo(image: str | Path | None, size: int, name: str = "01-astronaut.jpg") -> np.ndarray:
    """The image (or a bundled photograph) resized to ``size`` x ``size``."""
    Image, _, _ = require_pillow()
    pil = load_rgb(image if image is not None else bundled_dir() / name)
    return np.asarray(pil.resize((size, size), Image.Resampling.LANCZOS), dtype=np.uint8)


def _write(canvas: Any, out: str | Path | None, default: str) -> Path:
    path = Path(out) if out is not None else Path(default)
    try:
        save_png(canvas, path)
    except OSError as err:
        raise DemoInputError(f"argument --out: cannot write {str(path)!r}: {err}") from None
    return path


def run_show_views(recipe: str, *, image: str | Path | None = None, out: str | Path | None = None,
                   size: int = 128, seed: int = 0) -> tuple[Path, tuple[int, int]]:
    """Writes the views of ``recipe`` (``dino``, ``simclr``, ``byol``; uint8, not normalized) of
    two photographs (or ``image`` and a photograph): one row per image and group.

    Raises:
        DemoInputError: an unknown recipe, or an unreadable image.
    """
    import jax

    import augjax

    if recipe not in RECIPES:
        raise DemoInputError(f"argument NAME: with --views expects a recipe, one of "
                             f"{', '.join(RECIPES)}; got {recipe!r}")
    views = views_of(recipe, size)
    source = 2 * size
    batch = np.stack([_photo(image, source), _photo(None, source, "02-chelsea.jpg")])
    out_views = views(batch, key=jax.random.key(seed))
    rows = []
    for i in range(batch.shape[0]):
        rows.append(GridRow(f"image {i}", ["original"], [batch[i]]))
        for name, steps in views.groups:
            cells = list(np.asarray(out_views[name][i]))
            rows.append(GridRow(f"{name}", [f"{len(steps)} view(s), "
                                            f"{cells[0].shape[0]} px"], cells))
    header = (f"augjax.recipes.{recipe}(): each view its own key "
              f"(fold_in(fold_in(k_i, group), view)); key {seed}")
    canvas, _ = render_grid(rows, cell=size, groups=0, header=header)
    path = _write(canvas, out, f"augjax-show-{recipe}-views.png")
    return path, (canvas.width, canvas.height)


def _clip(photo: np.ndarray, frames: int, size: int) -> np.ndarray:
    """``frames`` views of a slow pan across ``photo``: a clip (T, size, size, 3)."""
    span = photo.shape[1] - size
    starts = np.linspace(0, span, frames).round().astype(int)
    top = (photo.shape[0] - size) // 2
    return np.stack([photo[top:top + size, s:s + size] for s in starts])


def run_show_clip(name: str, *, frames: int = 4, image: str | Path | None = None,
                  out: str | Path | None = None, size: int = 128,
                  seed: int = 0) -> tuple[Path, tuple[int, int]]:
    """Writes op ``name`` on a clip of ``frames`` frames (a pan across the photograph), frames
    side by side: the clip, one draw per clip, one draw per frame (``per_frame=True``).

    Raises:
        DemoInputError, AugjaxError: an unknown op, an op that mixes labels, a bad image.
    """
    import jax

    import augjax

    spec = augjax.get_op(name)
    if "labels" in spec.inputs:
        raise DemoInputError(f"argument NAME: {name} mixes labels; --clip shows one clip of "
                             f"images (mixing clips is shown by the tests, not here)")
    photo = _photo(image, size + size // 2)
    clip = _clip(photo, frames, size)[None]                    # (1, T, H, W, 3)
    params, _ = demo_params(spec, num_classes=2, size=size)
    if "p" in spec.params:
        params["p"] = 1.0
    op = spec.bind(**params)
    key = jax.random.key(seed)
    rows = [GridRow("clip", [f"{frames} frames"], list(clip[0]))]
    for title, per_frame in (("one draw per clip", False), ("per_frame=True", True)):
        result = np.asarray(op(augjax.Clips(clip), key=key, per_frame=per_frame))
        shown, _ = display_batch(result[0], spec.layout_after("HWC", op.kwargs))
        rows.append(GridRow(title, [], list(shown)))
    header = f"{spec.name} on a clip; key {seed}"
    canvas, _ = render_grid(rows, cell=size, groups=0, header=header)
    path = _write(canvas, out, f"augjax-show-{spec.name}-clip.png")
    return path, (canvas.width, canvas.height)
