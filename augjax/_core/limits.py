"""augjax's upper bounds on counts that set how much work a step does, in one place.

Each is checked when the step is built (before anything is traced or allocated) and a value
beyond it is a :class:`augjax.ParamError` that names it. They are far above any published
recipe and below the sizes where a program takes minutes to compile or a process runs out of
memory (docs/RELIABILITY.md, "Bounds").

Importing this module imports no JAX.
"""

from __future__ import annotations

__all__ = ["MAX_AUGMIX_WIDTH", "MAX_MAGNITUDE_BINS", "MAX_POLICY_LAYERS", "MAX_VIEWS"]

#: ``augjax.views``: views of one batch, all groups together (DINO's multi-crop takes 2 + 10;
#: 256 views compile in ~10 s on a CPU, 4096 in minutes).
MAX_VIEWS = 256

#: ``rand_augment``'s ``n``: ops applied in sequence per sample (the papers use 1-4).
MAX_POLICY_LAYERS = 64

#: ``augmix``'s ``width``: chains mixed per sample (the paper and torchvision: 3). Every chain
#: is in the compiled program: its compile time grows with the width (32: ~30 CPU-s).
MAX_AUGMIX_WIDTH = 16

#: ``rand_augment`` and ``trivial_augment_wide``'s ``num_magnitude_bins`` (torchvision: 31).
MAX_MAGNITUDE_BINS = 1024
