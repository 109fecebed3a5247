"""Rendering with Pillow: op outputs to displayable RGB, the demo grid and the ``show`` strip.

Everything drawn is a function of the pixels and the labels only (no dates, no timings, no
versions), and PNGs are written without metadata, so the same inputs give the same bytes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from augjax._demo import require_pillow

__all__ = ["GridRow", "display_batch", "render_grid", "render_strip", "save_png"]

PAD = 4
GROUP_GAP = 6
LABEL_WIDTH = 230
BACKGROUND = (255, 255, 255)
EMPTY = (232, 232, 232)
TEXT = (30, 30, 30)
NOTE = (110, 110, 110)
ERROR = (190, 20, 20)


def display_batch(images: np.ndarray, layout: str) -> tuple[np.ndarray, str]:
    """A batch of op outputs as uint8 ``(N, H, W, 3)`` for display, and how it was mapped.

    CHW batches are transposed; float batches within [0, 1] are scaled by 255, other float
    batches (normalized ones) are min-max scaled per image; one channel is repeated to three.
    """
    x = np.asarray(images)
    how = ""
    if layout == "CHW":
        x = x.transpose(0, 2, 3, 1)
    if x.ndim == 3:
        x = x[..., None]
    if x.dtype != np.uint8:
        x = x.astype(np.float64)
        finite = x[np.isfinite(x)]
        if finite.size and finite.min() >= -1e-6 and finite.max() <= 1 + 1e-6:
            x = np.nan_to_num(x) * 255.0
            how = "float [0,1] shown x255"
        else:
            lo = np.nanmin(x, axis=(1, 2, 3), keepdims=True)
            hi = np.nanmax(x, axis=(1, 2, 3), keepdims=True)
            x = (np.nan_to_num(x) - lo) / np.where(hi > lo, hi - lo, 1.0) * 255.0
            how = "float shown min-max scaled"
        x = np.clip(np.round(x), 0, 255).astype(np.uint8)
    c = x.shape[-1]
    if c == 1:
        x = np.repeat(x, 3, axis=-1)
    elif c == 2:
        x = np.concatenate([x, x[..., :1]], axis=-1)
    elif c > 3:
        x = x[..., :3]
    return np.ascontiguousarray(x), how


def _font(size: int):
    _, _, ImageFont = require_pillow()
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # pragma: no cover - Pillow < 10.1 has only the bitmap font
        return ImageFont.load_default()


def _wrap(draw, text: str, font, width: int) -> list[str]:
    """Greedy word wrap to ``width`` pixels; breaks after spaces and commas, then anywhere."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in re.split(r"(?<=[ ,])", paragraph):
            trial = line + word
            if line and draw.textlength(trial.rstrip(), font=font) > width:
                lines.append(line.rstrip())
                line = word
            else:
                line = trial
            while draw.textlength(line.rstrip(), font=font) > width and len(line) > 1:
                cut = len(line) - 1
                while cut > 1 and draw.textlength(line[:cut], font=font) > width:
                    cut -= 1
                lines.append(line[:cut])
                line = line[cut:]
        lines.append(line.rstrip())
    return lines


def _fit(Image, cell: np.ndarray, size: int):
    """One image in a ``size`` x ``size`` cell: kept at its scale when it fits, else shrunk."""
    im = Image.fromarray(cell)
    if im.width > size or im.height > size:
        s = size / max(im.width, im.height)
        im = im.resize((max(1, round(im.width * s)), max(1, round(im.height * s))),
                       Image.Resampling.LANCZOS)
    return im


@dataclasses.dataclass
class GridRow:
    """One grid row: a title, note lines, and its cells (``None`` for a missing one)."""

    title: str
    lines: Sequence[str]
    cells: Sequence[np.ndarray | None]
    failed: bool = False


def render_grid(rows: Sequence[GridRow], *, cell: int, groups: int, header: str,
                breaks: Sequence[int] = ()):
    """The demo grid as a Pillow image: a label column, then the cells of each row, with a gap
    after every ``groups`` cells (one group per input image) and before each cell index in
    ``breaks`` (groups of different sizes: a view group, a clip's frames).

    Returns:
        ``(image, layout)``; ``layout`` holds the left edge of each cell column (``"columns"``)
        and the top of each row (``"rows"``). An image is pasted at its own scale, centred in its
        ``cell`` x ``cell`` box, and shrunk only if it does not fit.
    """
    Image, ImageDraw, _ = require_pillow()
    # Pillow's default FreeType font draws a space 2 px wide below size 12: keep text >= 12.
    title_font, body_font, head_font = _font(14), _font(12), _font(14)
    n_cells = max((len(r.cells) for r in rows), default=0)
    scratch = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    line_h = 15
    text_w = LABEL_WIDTH - 2 * PAD
    laid = []
    for r in rows:
        title = _wrap(scratch, r.title, title_font, text_w)
        body = [ln for text in r.lines for ln in _wrap(scratch, text, body_font, text_w)]
        height = max(cell, (len(title) + len(body)) * line_h)
        laid.append((r, title, body, height))
    gap_before = {i for i in range(1, n_cells) if (groups and i % groups == 0) or i in breaks}
    gaps = len(gap_before)
    width = LABEL_WIDTH + n_cells * (cell + PAD) + gaps * GROUP_GAP + PAD
    head = _wrap(scratch, header, head_font, width - 2 * PAD)  # a long header wraps
    head_h = 2 * PAD + len(head) * line_h + 4
    height = head_h + sum(h + PAD for _, _, _, h in laid) + PAD
    canvas = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    for i, ln in enumerate(head):
        draw.text((PAD, PAD + i * line_h), ln, fill=TEXT, font=head_font)
    columns, tops = [], []
    x = LABEL_WIDTH
    for i in range(n_cells):
        if i in gap_before:
            x += GROUP_GAP
        columns.append(x)
        x += cell + PAD
    y = head_h
    for r, title, body, h in laid:
        tops.append(y)
        ty = y
        for ln in title:
            draw.text((PAD, ty), ln, fill=ERROR if r.failed else TEXT, font=title_font)
            ty += line_h
        for ln in body:
            draw.text((PAD, ty), ln, fill=ERROR if r.failed else NOTE, font=body_font)
            ty += line_h
        for i, x in enumerate(columns):
            img = r.cells[i] if i < len(r.cells) else None
            if img is None:
                draw.rectangle([x, y, x + cell - 1, y + cell - 1], fill=EMPTY)
            else:
                im = _fit(Image, img, cell)
                canvas.paste(im, (x + (cell - im.width) // 2, y + (cell - im.height) // 2))
        y += h + PAD
    return canvas, {"cell": cell, "columns": columns, "rows": tops}


def render_strip(cells: Sequence[np.ndarray], labels: Sequence[str], *, cell: int, header: str):
    """One row of images, each with its label below, under a header line.

    Returns:
        ``(image, boxes)``: the strip and, per image, its ``(x, y)`` top-left corner (images are
        centred in ``cell`` x ``cell`` boxes, shrunk only if they do not fit).
    """
    Image, ImageDraw, _ = require_pillow()
    font = _font(12)
    head_font = _font(14)
    line_h = 15
    scratch = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    wrapped = [_wrap(scratch, text, font, cell) for text in labels]
    label_h = max((len(w) for w in wrapped), default=1) * line_h
    width = PAD + len(cells) * (cell + PAD)
    head = _wrap(scratch, header, head_font, max(width - 2 * PAD, cell))
    head_h = 2 * PAD + len(head) * line_h + 4
    canvas = Image.new("RGB", (width, head_h + cell + PAD + label_h + PAD), BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    for i, ln in enumerate(head):
        draw.text((PAD, PAD + i * line_h), ln, fill=TEXT, font=head_font)
    x = PAD
    boxes = []
    for img, lines in zip(cells, wrapped):
        im = _fit(Image, img, cell)
        box = (x + (cell - im.width) // 2, head_h + (cell - im.height) // 2)
        canvas.paste(im, box)
        boxes.append(box)
        for j, ln in enumerate(lines):
            draw.text((x, head_h + cell + PAD + j * line_h), ln, fill=TEXT, font=font)
        x += cell + PAD
    return canvas, boxes


#: zlib's level for the demo's PNGs: its fastest. Photographs barely compress: the demo's grid
#: (924 x 5071) took 2.3 s at ``optimize=True`` (level 9) for 3,939 KiB, 0.5 s at level 1 for
#: 4,339 KiB, the same pixels; the demo wrote three such pictures.
PNG_LEVEL = 1


def save_png(image, path) -> None:
    """Writes ``image`` as a PNG without metadata (deterministic bytes), compressed at
    :data:`PNG_LEVEL`."""
    image.save(path, format="PNG", compress_level=PNG_LEVEL)
