"""Private support of ``augjax demo`` and ``augjax show``: sample images, demo parameters, the
DALI pipelines and the PNG rendering. Not a public API; the CLI modules are its only users."""

from __future__ import annotations

from augjax.errors import AugjaxError

__all__ = ["DemoInputError", "require_pillow"]


class DemoInputError(AugjaxError, ValueError):
    """Bad input to ``augjax demo`` / ``augjax show`` (missing images, unknown ops, ...).

    The CLI prints the message and exits with status 2, without a traceback.
    """


def require_pillow():
    """Imports Pillow's modules, or raises a DemoInputError that says how to install them."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:  # pragma: no cover - Pillow is in the test environment
        raise DemoInputError(
            "the demo needs Pillow and tqdm: pip install 'augjax[demo]'"
        ) from None
    return Image, ImageDraw, ImageFont
