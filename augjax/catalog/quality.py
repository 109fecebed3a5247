"""Quality ops: JPEG compression artefacts.

``jpeg`` codes each image at a quality drawn per sample and decodes it again, as torchvision's
``v2.JPEG``, kornia's ``RandomJPEG`` and DALI's ``jpeg_compression_distortion`` do; the round
trip is libjpeg's integer arithmetic (:mod:`augjax.kernels.jpeg`), so its pixels equal Pillow's
``Image.save(..., "JPEG", quality=q)`` then ``Image.open`` byte for byte, on every backend.

Params (``op.sample``; float32, one value per sample): ``jpeg``: ``quality`` (a whole number).
"""

from __future__ import annotations

from augjax._core.param import Param
from augjax.calls import op
from augjax.kernels.jpeg import jpeg_roundtrip

__all__ = ["jpeg"]


@op(
    "jpeg",
    params={
        "quality": Param((50, 100), kind="int_or_pair", low=1, high=100,
                         doc="libjpeg quality 1..100 (IJG tables scaled as jpeg_set_quality "
                             "does, baseline); a pair (lo, hi) draws a whole number in "
                             "[lo, hi] per sample (torchvision v2.JPEG's range; kornia and "
                             "DALI default to 50)"),
    },
    channels=(1, 3),
    reference="torchvision.transforms.v2.JPEG / PIL Image.save(format='JPEG', quality=q)",
)
def jpeg(image, params):
    """JPEG-compresses and decodes the image at ``quality`` (libjpeg, 4:2:0 chroma for RGB).

    uint8 images go through libjpeg's integer round trip as they are; float images in [0, 1]
    are rounded to 8-bit levels first (JPEG codes 8-bit samples) and come back as ``levels / 255``.
    Params: ``quality``.
    """
    return jpeg_roundtrip(image, params["quality"])
