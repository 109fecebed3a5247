"""``pad``: torchvision v2 ``Pad`` on HWC images (uint8 0..255 or float32 0..1).

The image grows by ``padding`` pixels on each side (one size for the whole batch, declared
through ``output_size``), filled with a constant (``fill``, a fraction of the value range as
everywhere in augjax: x255 for uint8) or the image's own edge, reflection or symmetric
reflection (``pad_mode``, torchvision's ``padding_mode``). Deterministic: it draws nothing.

Targets (:mod:`augjax._runtime.targets.follow`): boxes and keypoints move by the padding (the
op's matrix, a translation); masks are padded by the same kernel, with ``mask_fill`` where the
image gets a constant, or their own edge or reflection otherwise.
"""

from __future__ import annotations

from augjax._core.param import Param
from augjax.calls import op
from augjax.catalog.crop import PAD_FILL, PAD_MODE, _padding, pad as pad_image
from augjax.errors import InputError
from augjax.kernels.matrix import translation

__all__ = ["pad"]


def _output_size(h: int, w: int, *, padding, **_) -> tuple[int, int]:
    left, top, right, bottom = padding
    return (h + top + bottom, w + left + right)


def _matrix(params, meta, *, padding, **_):
    return translation(padding[0], padding[1])


@op(
    "pad",
    params={
        "padding": Param(None, kind="floats", low=0.0, required=True, validate=_padding,
                         doc="p, (left/right, top/bottom) or (left, top, right, bottom) pixels"),
        "fill": PAD_FILL,
        "pad_mode": PAD_MODE,
    },
    matrix=_matrix,
    output_size=_output_size,
    reference="torchvision.transforms.v2.Pad",
)
def pad(image, params, *, padding, fill, pad_mode):
    """Pads each image by ``padding`` pixels (torchvision ``Pad``).

    ``padding`` is one int for every side, ``(left/right, top/bottom)`` or ``(left, top, right,
    bottom)``, as torchvision's. ``pad_mode`` ``"constant"`` writes ``fill`` (a fraction of the
    value range in [0, 1], one value or one per channel, times 255 and rounded for uint8:
    torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``"edge"``, ``"reflect"`` and
    ``"symmetric"`` extend the image as NumPy's ``pad`` does. Deviations: reflect/symmetric
    padding wider than the image follows NumPy (it keeps reflecting), where torch raises; a
    uint8 fill between two levels is rounded to the nearest, where torchvision's cast
    truncates. Deterministic: params are empty.

    Raises:
        InputError: a per-channel ``fill`` with a ``pad_mode`` other than ``"constant"``.
    """
    if pad_mode != "constant" and len(fill) > 1:
        raise InputError(f"pad: a per-channel fill needs pad_mode='constant', got {pad_mode!r}",
                         op="pad", argument="fill")
    left, top, right, bottom = padding
    return pad_image(image, left, top, right, bottom, pad_mode, fill, "pad")
