"""The demo's input images: the bundled photographs or a user's folder, checked before DALI sees
them, and the ``file_list`` that ``fn.readers.file`` reads."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from augjax._demo import DemoInputError, require_pillow
from augjax.data import sample_dir

__all__ = ["EXTENSIONS", "Source", "bundled_dir", "collect", "load_rgb", "write_file_list"]

#: File name endings that DALI's ``fn.decoders.image`` decodes (its readers.file default filter).
EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".pnm", ".ppm", ".pgm", ".pbm",
              ".jp2", ".webp")
#: Pillow format names of the same formats.
_PIL_FORMATS = {"JPEG", "MPO", "PNG", "BMP", "TIFF", "PPM", "JPEG2000", "WEBP"}


@dataclasses.dataclass(frozen=True)
class Source:
    """The images one demo reads: ``files`` relative to ``root``; file ``i`` has label ``i``."""

    root: Path
    files: tuple[str, ...]
    bundled: bool

    @property
    def num_classes(self) -> int:
        """The number of distinct labels (one per distinct image)."""
        return len(self.files)


def bundled_dir() -> Path:
    """The folder of the sample photographs shipped with augjax (see its LICENSES.md)."""
    return sample_dir()


def _image_files(root: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or "\n" in name or not name.lower().endswith(EXTENSIONS):
                continue
            found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(found)


def collect(images: str | os.PathLike | None, count: int) -> Source:
    """The first ``count`` images (sorted by path) of the folder ``images`` (searched recursively),
    or of the bundled photographs when ``images`` is None; each is opened and decoded with Pillow
    first, so that a bad file is reported by name.

    Raises:
        DemoInputError: the folder is missing, holds no image, or holds an unreadable image.
    """
    bundled = images is None
    root = bundled_dir() if bundled else Path(images).expanduser()
    if not root.exists():
        raise DemoInputError(f"argument --images: the folder {str(root)!r} does not exist")
    if not root.is_dir():
        raise DemoInputError(f"argument --images: {str(root)!r} is not a folder")
    files = _image_files(root)
    if not files:
        raise DemoInputError(
            f"argument --images: no image files in {str(root)!r} (searched recursively for "
            f"{', '.join(EXTENSIONS)})"
        )
    chosen = files[:count]
    bad = []
    for rel in chosen:
        problem = _unreadable(root / rel)
        if problem:
            bad.append(f"{rel}: {problem}")
    if bad:
        raise DemoInputError(
            f"argument --images: {len(bad)} of the {len(chosen)} images chosen from "
            f"{str(root)!r} cannot be read; remove or fix them:\n  " + "\n  ".join(bad)
        )
    return Source(root=root, files=tuple(chosen), bundled=bundled)


def _unreadable(path: Path) -> str:
    """Why Pillow cannot decode ``path`` as a format DALI decodes, or '' when it can."""
    Image, _, _ = require_pillow()
    if not os.access(path, os.R_OK):
        return "permission denied"
    try:
        with Image.open(path) as im:
            fmt = im.format
            im.load()
    except Exception as err:  # noqa: BLE001 - any decoding failure is reported by name
        return f"not a readable image ({type(err).__name__}: {err})"
    if fmt not in _PIL_FORMATS:
        return f"{fmt} images are not decoded by DALI"
    return ""


def load_rgb(path: str | os.PathLike):
    """One image file as a Pillow RGB image.

    Raises:
        DemoInputError: the file is missing or not a readable image.
    """
    Image, _, _ = require_pillow()
    path = Path(path).expanduser()
    if not path.is_file():
        raise DemoInputError(f"argument --image: the file {str(path)!r} does not exist")
    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except Exception as err:  # noqa: BLE001
        raise DemoInputError(
            f"argument --image: {str(path)!r} is not a readable image ({type(err).__name__}: {err})"
        ) from None


def write_file_list(source: Source, batch: int, folder: str | os.PathLike) -> Path:
    """Writes the ``file_list`` for ``fn.readers.file``: exactly ``batch`` lines, the chosen
    images cycled, so that every pipeline iteration reads the same batch (one draw each)."""
    path = Path(folder) / "file_list.txt"
    lines = [f"{source.files[i % len(source.files)]} {i % len(source.files)}" for i in range(batch)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
