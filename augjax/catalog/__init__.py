"""augjax's built-in ops, one family per module. They are registered through augjax's own
``augjax.ops`` entry points, exactly as a third-party pack registers its ops.

What the policies compute ops of one family with (:mod:`augjax.policies`) is exposed here: the
family members an op declares (``Affine``, ``Blend``, ``ImageStats``, ``Tone``; ``member``) and
the exact paths of the affine warps (``exact_paths``, ``exact_source``, ``EXACT_NONE``)."""

from augjax.catalog._fuse import EXACT_NONE, Affine, Blend, ImageStats, Tone, member
from augjax.catalog._warp_params import exact_paths, exact_source

__all__ = ["EXACT_NONE", "Affine", "Blend", "ImageStats", "Tone", "exact_paths", "exact_source",
           "member"]
