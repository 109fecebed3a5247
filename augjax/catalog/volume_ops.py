"""``augjax.volume_ops``: the volume ops by short name, and :func:`~augjax.volumes.chain`.

>>> vol = augjax.volume_ops                                                     # doctest: +SKIP
>>> out = vol.chain(vol.affine.bind(rotate=0.5), vol.noise)(augjax.Volumes(x), key=key)  # doctest: +SKIP
"""

from __future__ import annotations

from types import SimpleNamespace

from augjax.catalog.volume_geometry import volume_affine, volume_crop, volume_flip, volume_rot90
from augjax.catalog.volume_intensity import (
    volume_blur,
    volume_brightness,
    volume_contrast,
    volume_gamma,
    volume_lowres,
    volume_noise,
)
from augjax.volumes import chain

__all__ = ["volume_ops"]

#: The volume ops: ``flip``, ``rot90``, ``affine`` (with elastic), ``crop``, ``noise``,
#: ``blur``, ``brightness``, ``contrast``, ``gamma``, ``lowres``; ``chain(*ops)``.
volume_ops = SimpleNamespace(
    flip=volume_flip, rot90=volume_rot90, affine=volume_affine, crop=volume_crop,
    noise=volume_noise, blur=volume_blur, brightness=volume_brightness,
    contrast=volume_contrast, gamma=volume_gamma, lowres=volume_lowres, chain=chain)
