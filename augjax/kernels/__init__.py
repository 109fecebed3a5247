"""Building blocks for op kernels and samplers, public for pack authors: dtype round trips,
blends, warps by a matrix, resizes, fills, histograms, IEEE division, and the matrix-product
forms a TPU runs (:func:`matrix_pass`, :func:`rows_product`, chosen by
:func:`platform_dependent`). augjax's own catalog is
built on them.

A kernel sees one HWC image (uint8 0..255 or float32 0..1) and returns the same dtype; compute
in float32 and come back with :func:`to_dtype` (truncating, as torchvision's adjustments do) or
``to_dtype(x, dtype, rounding="round")`` (as its warps and resizes do).

Three modules below the runtime serve kernels and the runtime alike (the runtime sets, kernels
read): :mod:`augjax.kernels.platform` (an implementation per platform),
:mod:`augjax.kernels.partition` (whether a trace spans several devices) and
:mod:`augjax.kernels.boundary` (fusion boundaries between steps).

The Pallas (Triton) building blocks the GPU forms of augjax's kernels and policies share are
public modules too, not re-exported here (importing Pallas takes about 0.1 s):
:mod:`augjax.kernels.pallas` (tiles, planes, gathers, rounding),
:mod:`augjax.kernels.histogram_pallas` and :mod:`augjax.kernels.sample_pallas`. The pixel
compositions those forms and the XLA ones share, written once on plain arrays, are
:mod:`augjax.kernels.grid_sample` (torchvision's sampling) and :mod:`augjax.kernels.enhance`
(contrast, sharpness and the blends).
"""

from augjax.kernels.batching import broadcast_unbatched
from augjax.kernels.division import exact_div
from augjax.kernels.filters import (
    box_sum,
    correlate,
    correlate1d,
    correlate_planes,
    correlate_separable,
    gaussian_kernel1d,
    median_filter,
    pad_edge,
    pad_reflect,
    reflect_index,
)
from augjax.kernels.histogram import (
    equalize_lut,
    histogram,
    lookup,
    stretch,
    value_range,
)
from augjax.kernels.level_products import rows_product
from augjax.kernels.matrix import (
    crop_resize_matrix,
    from_centered_inverse,
    from_perspective_coefficients,
    from_pil_coefficients,
    identity,
    mirror,
    translation,
    warp_by,
)
from augjax.kernels.pixels import (
    blend,
    bound,
    from_unit,
    gray,
    invert_levels,
    is_int,
    levels_to_scale,
    mix_channels,
    requantize,
    to_dtype,
    to_unit,
)
from augjax.kernels.platform import platform_dependent
from augjax.kernels.tap_passes import matrix_pass
from augjax.kernels.taps import correlate_taps, filter_taps, nonzero_taps
from augjax.kernels.resize import resize_crop, resize_taps, resize_weights, window_weights
from augjax.kernels.warp import (
    INTERPOLATIONS,
    check_fill,
    elastic,
    inverse_affine_matrix,
    perspective_coefficients,
    remap,
    sample,
    uniform_int,
    warp_affine,
    warp_perspective,
)
from augjax.kernels.warp_pil import pil_rotate_coefficients, warp_affine_pil

__all__ = [
    "INTERPOLATIONS",
    "blend",
    "bound",
    "box_sum",
    "broadcast_unbatched",
    "check_fill",
    "correlate",
    "correlate1d",
    "correlate_planes",
    "correlate_separable",
    "correlate_taps",
    "crop_resize_matrix",
    "elastic",
    "equalize_lut",
    "exact_div",
    "filter_taps",
    "from_centered_inverse",
    "from_perspective_coefficients",
    "from_pil_coefficients",
    "from_unit",
    "gaussian_kernel1d",
    "gray",
    "histogram",
    "identity",
    "invert_levels",
    "inverse_affine_matrix",
    "is_int",
    "levels_to_scale",
    "lookup",
    "matrix_pass",
    "median_filter",
    "mirror",
    "mix_channels",
    "nonzero_taps",
    "pad_edge",
    "pad_reflect",
    "perspective_coefficients",
    "pil_rotate_coefficients",
    "platform_dependent",
    "reflect_index",
    "requantize",
    "remap",
    "resize_crop",
    "resize_taps",
    "resize_weights",
    "rows_product",
    "window_weights",
    "sample",
    "stretch",
    "to_dtype",
    "to_unit",
    "translation",
    "uniform_int",
    "value_range",
    "warp_affine",
    "warp_affine_pil",
    "warp_by",
    "warp_perspective",
]
