"""The sample photographs shipped with augjax (eight public-domain / CC0 pictures from
scikit-image's sample data, 256 px on the long side, JPEG; see ``images/LICENSES.md``).

>>> import augjax.data
>>> augjax.data.sample_dir()          # the folder                    # doctest: +SKIP
>>> augjax.data.sample_paths()        # the files, sorted             # doctest: +SKIP
>>> augjax.data.sample_images(224)    # (8, 224, 224, 3) uint8 batch  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from augjax.errors import BackendUnavailableError, InputError

__all__ = ["sample_dir", "sample_images", "sample_paths"]

_EXTENSIONS = (".jpg", ".jpeg", ".png")


def sample_dir() -> Path:
    """The folder that holds the sample photographs (inside the installed augjax package)."""
    return Path(str(resources.files("augjax") / "data" / "images"))


def sample_paths() -> list[Path]:
    """The sample photographs' files, sorted by name (``01-astronaut.jpg``, ...).

    In a DALI pipeline: ``fn.readers.file(files=[str(p) for p in sample_paths()])``.
    """
    return sorted(p for p in sample_dir().iterdir() if p.suffix.lower() in _EXTENSIONS)


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError as err:
        raise BackendUnavailableError(
            "augjax.data.sample_images: decoding the photographs needs Pillow; pip install "
            "'augjax[demo]' (or pillow)") from err
    return Image


def sample_images(size: int | tuple[int, int] | None = 224, *, count: int | None = None,
                  dtype: str = "uint8") -> Any:
    """The sample photographs decoded as RGB, as one batch.

    Each photograph is resized so that it covers ``size`` (its shorter side scaled, bilinear,
    keeping the aspect ratio) and centre-cropped to it, as torchvision's ``Resize`` +
    ``CenterCrop`` evaluation transform does.

    Args:
        size: ``(height, width)`` of every image, or one int for squares; ``None`` keeps each
            photograph's own size and returns a list instead of a batch.
        count: the first ``count`` photographs (default all eight).
        dtype: ``"uint8"`` (0..255) or ``"float32"`` (0..1).

    Returns:
        A NumPy array ``(N, H, W, 3)`` (HWC, as augjax ops and DALI decoders use), or a list of
        ``(H_i, W_i, 3)`` arrays when ``size`` is ``None``.

    Raises:
        InputError: a bad ``size``, ``count`` or ``dtype``.
        BackendUnavailableError: Pillow is not installed.
    """
    import numpy as np

    name = "augjax.data.sample_images"
    if dtype not in ("uint8", "float32"):
        raise InputError(f"{name}: argument 'dtype' expects 'uint8' or 'float32', got "
                         f"{dtype!r}", op=name, argument="dtype")
    if size is not None:
        hw = (size, size) if isinstance(size, int) else tuple(size)
        if len(hw) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0
                                   for s in hw):
            raise InputError(f"{name}: argument 'size' expects a positive int or (height, width)"
                             f" of positive ints, or None, got {size!r}", op=name,
                             argument="size")
    paths = sample_paths()
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= len(paths):
            raise InputError(f"{name}: argument 'count' expects an int in [1, {len(paths)}], "
                             f"got {count!r}", op=name, argument="count")
        paths = paths[:count]
    Image = _pillow()
    out = []
    for path in paths:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if size is not None:
                im = _cover_crop(im, hw, Image)
            out.append(np.asarray(im, dtype=np.uint8))
    if dtype == "float32":
        out = [a.astype(np.float32) / 255.0 for a in out]
    return out if size is None else np.stack(out)


def _cover_crop(im: Any, hw: tuple[int, int], Image: Any) -> Any:
    h, w = hw
    scale = max(h / im.height, w / im.width)
    rh, rw = max(h, round(im.height * scale)), max(w, round(im.width * scale))
    im = im.resize((rw, rh), Image.BILINEAR)
    top, left = (rh - h) // 2, (rw - w) // 2
    return im.crop((left, top, left + w, top + h))
