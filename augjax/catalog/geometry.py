"""Geometric ops on HWC images (augjax moves CHW data to HWC around the kernels).

Images are uint8 (0..255) or float32 (0..1). The warping ops follow torchvision's tensor kernels
(``torchvision.transforms.v2.functional``): they sample with ``grid_sample(align_corners=False)``
semantics and round uint8 results half to even. See :mod:`augjax.kernels.warp` for the
sampling rules.

``fill`` (the value of pixels that come from outside the image) is a fraction of the value
range, in [0, 1], whatever the dtype, as for every augjax op (``random_erasing``, ``cutout``,
``random_crop``, the contrib pack): one value or one per channel, multiplied by 255 for uint8
images and used as is for float32, so one configuration serves both dtypes and chains that
convert the dtype. torchvision takes ``fill`` in the image's own scale: its uint8 ``fill=128``
is ``fill=128/255`` here (and 0 is 0). ``fill=None`` is plain zero padding, torchvision's
functional default (it differs from ``fill=0`` at the border with bilinear sampling, where
torchvision blends towards the fill).

Accuracy against torchvision 0.29 (CPU), measured by ``tests/catalog/test_geometry.py``: nearest
sampling gives the same pixels except at exact half-pixel ties of the source coordinate, which
both libraries resolve by float32 rounding noise (augjax computes the matrix in float32 and XLA
fuses multiply-adds; torchvision builds it in float64); bilinear sampling is within 1 level on
uint8 (a value at .5 rounds either way) and within 1e-5 on float32 for images up to 32 pixels
a side (float32 rounding of the matrix, coordinates and weights; the coordinate error grows
with the side: measured 3e-5 for rotate and 1.4e-4 for perspective at 224x224).

``convention="pil"`` (on ``rotate``, ``shear_x``, ``shear_y``, ``translate_x``, ``translate_y``)
samples as PIL's ``Image.transform``/``Image.rotate`` instead, which timm's policies use
(:func:`augjax.kernels.warp_pil.warp_affine_pil`): an output pixel whose source point falls outside
takes the fill and edge samples are clamped (no blend with the fill), uint8 bilinear results are
truncated (torchvision rounds), shifts keep their fraction (torchvision truncates them to whole
pixels). Measured against timm 1.0 / Pillow 13 by ``tests/catalog/test_references.py``: nearest is
bitwise; bilinear uint8 is within one level, on under 1% of pixels at 224x224 (PIL computes in
float64).

The single-magnitude ops (``rotate`` here; ``shear_x``, ``shear_y``, ``translate_x``,
``translate_y`` in :mod:`augjax.catalog.shift`, which share this module's rules) are the
RandAugment/AutoAugment primitives: their one magnitude parameter is a number (used as
is) or a pair (drawn uniformly per sample); it reaches the kernel in ``params`` under its own
name, so ``op.apply(x, params={"degrees": ...})`` applies exact values.

Params (``op.sample``; one value per sample): ``flip``: ``horizontal``, ``vertical`` (bool: the
sample is mirrored); ``rot90``: ``k`` (int32 quarter turns; only with ``k=None``); ``rotate``:
``degrees``; ``affine``: ``degrees``, ``translate`` ((2,) whole pixels), ``scale``, ``shear`` ((2,)
degrees); ``shear_x``/``shear_y``: ``shear``; ``translate_x``/``translate_y``: ``translate``;
``perspective``: ``endpoints`` ((4, 2) corner positions x, y) and ``applied``. Every op's
``matrix`` gives the sample's forward 3x3 matrix (:mod:`augjax.kernels.matrix`); the warping
ops (``rotate``, ``affine``, ``perspective``, the shears and translations) are declared by their
geometry (:func:`augjax.kernels.geometry.warp`), which gives their pixels and matrix alike.

Targets (``masks=``, ``boxes=``, ``keypoints=``; :mod:`augjax._runtime.targets.follow`): every op
here moves masks through its own kernel with ``interpolation="nearest"`` (pixels from outside get
``mask_fill``, not ``fill``) and boxes and keypoints through its ``matrix``, as torchvision's
kernels for ``tv_tensors.Mask`` / ``BoundingBoxes`` / ``KeyPoints`` do.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax.catalog._warp_params import (
    affine_family,
    magnitude_param,
)
from augjax.errors import InputError
from augjax.kernels.geometry import Warp, warp
from augjax.kernels.matrix import mirror
from augjax.kernels.warp import (
    inverse_affine_matrix,
    perspective_coefficients,
    uniform_int,
)

__all__ = [
    "affine",
    "flip",
    "perspective",
    "rot90",
    "rotate",
]

def _flip_sample(key, meta, params, *, p, horizontal, vertical):
    u = jax.random.uniform(key, (2,))
    return {"horizontal": (u[0] < p) & horizontal, "vertical": (u[1] < p) & vertical}


def _flip_matrix(params, meta, **_):
    return mirror(params["horizontal"], params["vertical"], meta.height, meta.width)


@op(
    "flip",
    params={
        "p": Param.probability(0.5, "probability of each flip"),
        "horizontal": Param(True, doc="mirror left-right (the width axis)"),
        "vertical": Param(False, doc="mirror top-bottom (the height axis)"),
    },
    sample=_flip_sample,
    matrix=_flip_matrix,
    reference="torchvision.transforms.v2.RandomHorizontalFlip / RandomVerticalFlip",
)
def flip(image, params, *, p, horizontal, vertical):
    """Mirrors each image with probability ``p``.

    ``horizontal`` mirrors the width axis (torchvision RandomHorizontalFlip), ``vertical`` the
    height axis (RandomVerticalFlip). With both, each axis gets its own coin, as two torchvision
    transforms in a row would. Params: ``horizontal``, ``vertical`` (bool per sample).
    """
    if horizontal:
        image = jnp.where(params["horizontal"], image[:, ::-1], image)
    if vertical:
        image = jnp.where(params["vertical"], image[::-1], image)
    return image


# ---------------------------------------------------------------------------------------------
# rot90


def _rot90_size(h: int, w: int, *, k) -> tuple[int, int]:
    return (w, h) if k is not None and k % 2 else (h, w)


def _rot90_sample(key, meta, params, *, k):
    if k is not None:
        return {}
    if meta.height != meta.width:
        raise InputError(
            f"rot90: k=None (a random quarter turn per sample) needs square images, so that "
            f"every output of the batch has one size; got height {meta.height}, width "
            f"{meta.width}. Pass a fixed k (an odd k swaps height and width for the whole batch)",
            op="rot90",
            argument="images",
        )
    return {"k": uniform_int(jax.random.uniform(key, ()), 0, 4)}


def _rot90_matrix(params, meta, *, k):
    turns = jnp.int32(k % 4) if k is not None else params["k"] % 4
    h, w = meta.height, meta.width
    one, zero = 1.0, 0.0
    # jnp.rot90(axes=(0, 1)): a quarter turn maps (x, y) to (y, W - 1 - x).
    mats = jnp.array([
        [[one, zero, zero], [zero, one, zero], [zero, zero, one]],
        [[zero, one, zero], [-one, zero, w - 1.0], [zero, zero, one]],
        [[-one, zero, w - 1.0], [zero, -one, h - 1.0], [zero, zero, one]],
        [[zero, -one, h - 1.0], [one, zero, zero], [zero, zero, one]],
    ], jnp.float32)
    return mats[turns]


@op(
    "rot90",
    params={
        "k": Param(None, kind="int", optional=True,
                   doc="quarter turns counter-clockwise; None = random in {0, 1, 2, 3} per sample "
                       "(square images only)"),
    },
    sample=_rot90_sample,
    matrix=_rot90_matrix,
    output_size=_rot90_size,
    reference="torch.rot90 / kornia RandomRotation90 / albumentations RandomRotate90",
)
def rot90(image, params, *, k):
    """Rotates by ``k`` quarter turns counter-clockwise (``torch.rot90(img, k, dims=(-2, -1))``).

    A fixed ``k`` works on any size (odd ``k`` swaps height and width for the whole batch);
    ``k=None`` draws ``k`` uniformly from {0, 1, 2, 3} per sample (params ``k``, int32), which
    needs square images so that every output has the same shape.

    Raises:
        InputError: ``k=None`` on images that are not square.
    """
    if k is not None:
        return jnp.rot90(image, k % 4, axes=(0, 1))
    turns = jnp.stack([jnp.rot90(image, i, axes=(0, 1)) for i in range(4)])
    return turns[params["k"] % 4]


# ---------------------------------------------------------------------------------------------
# rotate / affine


def _rotate_inverse(angle):
    # torchvision rotate: the inverse matrix of affine(-angle), about the centre.
    return inverse_affine_matrix((0.0, 0.0), -angle, (0.0, 0.0), 1.0, (0.0, 0.0))


@affine_family(exact=True)
@op(
    "rotate",
    params={
        "degrees": magnitude_param(30.0, "angle in degrees, counter-clockwise positive: a number "
                                         "is used as is, a pair (lo, hi) is drawn per sample"),
    },
    reference="torchvision.transforms.v2.RandomRotation / functional.rotate (expand=False); "
              "convention='pil': PIL Image.rotate (timm)",
)
@warp(convention=True)
def rotate(params, meta, *, convention, **_):
    """Rotates about the image centre, counter-clockwise for positive angles (torchvision).

    ``degrees`` (params ``degrees``) is a number (exactly that angle, as ``F.rotate``) or a pair
    ``(lo, hi)`` drawn uniformly per sample (``RandomRotation((lo, hi))``; ``RandomRotation(30)`` is
    ``degrees=(-30, 30)``). The output keeps the input size (``expand=False``) and the centre
    is the image centre (``center=None``). Deviations: at multiples of 90 degrees torchvision
    uses an exact ``rot90``, augjax the general warp (nearest is exact there too; bilinear is
    within the float32 tolerance in the module docstring).

    ``convention="pil"`` samples as PIL's ``Image.rotate(degrees, resample, fillcolor=fill)``
    (what timm's Rotate calls): same centre and direction, PIL's edge rule (a pixel whose source
    point falls outside takes the fill, edge samples are clamped) and its exact paths at 0 and
    180 degrees (and 90/270 on square images). Nearest matches PIL bitwise in the tests;
    bilinear uint8 values may be one level off (PIL interpolates in float64 and truncates,
    augjax in float32; see :func:`augjax.kernels.warp_pil.warp_affine_pil`).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    if convention == "pil":
        return Warp.pil_rotate(params["degrees"], meta)
    return Warp.affine(_rotate_inverse(params["degrees"]), meta)


def _degrees_range(value):
    if isinstance(value, tuple):
        return value
    if value < 0:
        raise ValueError("a single number must be non-negative (it means (-x, x))")
    return (-value, value)


def _translate_max(value):
    if len(value) != 2:
        raise ValueError("expected two fractions (horizontal, vertical)")
    return value


def _shear_ranges(value):
    if len(value) == 1:
        if value[0] < 0:
            raise ValueError("a single number must be non-negative (it means (-x, x))")
        value = (-value[0], value[0], 0.0, 0.0)
    elif len(value) == 2:
        value = (value[0], value[1], 0.0, 0.0)
    elif len(value) != 4:
        raise ValueError("expected 1, 2 or 4 numbers")
    if value[0] > value[1] or value[2] > value[3]:
        raise ValueError("each range must be (low, high) with low <= high")
    return tuple(value)


def _affine_sample(key, meta, params, *, degrees, translate, scale, shear, **_):
    """torchvision ``RandomAffine.make_params`` for one sample (the angle is ``degrees``, drawn
    by augjax): ``translate`` (tx, ty) whole pixels (``round``), ``scale``, ``shear`` (x, y)."""
    u = jax.random.uniform(key, (5,))
    h, w = meta.height, meta.width
    zero = jnp.float32(0.0)
    shift = jnp.stack([zero, zero])
    if translate is not None:
        max_dx, max_dy = translate[0] * w, translate[1] * h
        shift = jnp.round(jnp.stack([-max_dx + 2 * max_dx * u[0], -max_dy + 2 * max_dy * u[1]]))
    zoom = jnp.float32(1.0) if scale is None else scale[0] + (scale[1] - scale[0]) * u[2]
    shears = jnp.stack([zero, zero])
    if shear is not None:
        shears = jnp.stack([shear[0] + (shear[1] - shear[0]) * u[3],
                            shear[2] + (shear[3] - shear[2]) * u[4]])
    return {"translate": shift.astype(jnp.float32), "scale": jnp.asarray(zoom, jnp.float32),
            "shear": shears.astype(jnp.float32)}


def _affine_inverse(params):
    return inverse_affine_matrix((0.0, 0.0), params["degrees"], params["translate"],
                                 params["scale"], params["shear"])


def _affine_size(h: int, w: int, *, size=None, **_) -> tuple[int, int]:
    return (h, w) if size is None else tuple(size)


def _centre_window(h: int, w: int, size) -> tuple[int, int, int, int]:
    """``center_crop(size)``'s window ``(top, left, height, width)`` of an ``h`` x ``w`` image
    (``round((H - h) / 2)``, half to even), for a crop no larger than the image."""
    ch, cw = size
    if ch > h or cw > w:
        raise InputError(f"affine: size must be at most the image's size ({h}, {w}), got "
                         f"{tuple(size)}", op="affine", argument="size")
    return int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0)), ch, cw


@op(
    "affine",
    params={
        "degrees": Param(0.0, kind="float_or_pair", validate=_degrees_range, neutral=0.0,
                         doc="rotation range: x means U[-x, x], or a pair (lo, hi); clockwise "
                             "positive on screen, as torchvision RandomAffine"),
        "translate": Param(None, kind="floats", low=0.0, high=1.0, optional=True,
                           validate=_translate_max,
                           doc="(a, b): shift up to a*width and b*height pixels (whole pixels)"),
        "scale": Param(None, kind="pair", low=0.0, low_exclusive=True, optional=True,
                       doc="zoom range (lo, hi), drawn uniformly"),
        "shear": Param(None, kind="floats", optional=True, validate=_shear_ranges,
                       doc="shear in degrees: x = x-shear in U[-x, x]; (lo, hi) x-shear; "
                           "(xlo, xhi, ylo, yhi) both"),
        "size": Param(None, kind="size", low=1, optional=True,
                      doc="output (height, width), or one int: the central window of the "
                          "warped image, computed alone (affine then center_crop(size)); "
                          "None: the input's size"),
    },
    sample=_affine_sample,
    output_size=_affine_size,
    reference="torchvision.transforms.v2.RandomAffine (center=None)",
)
@warp
def affine(params, meta, *, size=None, **_):
    """Rotates, shifts, zooms and shears by random amounts about the image centre.

    torchvision RandomAffine: same parameterisation, draws and ``_get_inverse_affine_matrix``.
    The angle is drawn from ``degrees``, the shift from ``U[-a*W, a*W] x U[-b*H, b*H]`` rounded
    to whole pixels, the zoom from ``scale`` and the shears from ``shear``. Unlike ``rotate``
    (torchvision ``F.rotate``), a positive angle turns the image clockwise on screen, as
    torchvision's ``F.affine`` does. Deviation: no ``center`` argument (the image centre is used).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring). Params: ``degrees``, ``translate`` ((2,) pixels),
    ``scale``, ``shear`` ((2,) degrees).

    ``size``: only the central ``size`` window of the warped image is computed and returned,
    the pixels, boxes and masks of ``affine`` then ``center_crop(size)`` (at most the image's
    size; float32 pixels within float32 rounding, see
    :func:`augjax.kernels.warp.warp_affine`), for a quarter of the work when ``size`` is half the side (YOLO's zoom of the mosaic
    canvas, as OpenCV's ``warpAffine`` writes only its ``dsize``).
    """
    window = None if size is None else _centre_window(meta.height, meta.width, size)
    return Warp.affine(_affine_inverse(params), meta, window=window)



# ---------------------------------------------------------------------------------------------
# perspective


def _start_points(h: int, w: int) -> jax.Array:
    return jnp.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], jnp.float32)


def _perspective_sample(key, meta, params, *, distortion_scale, p, **_):
    """torchvision ``RandomPerspective.make_params``: ``endpoints`` (4, 2) (x, y) for the
    corners top-left, top-right, bottom-right, bottom-left, whole pixels within
    ``int(distortion_scale * side // 2) + 1`` of each corner, and the coin ``applied``."""
    h, w = meta.height, meta.width
    bound_h = int(distortion_scale * (h // 2)) + 1
    bound_w = int(distortion_scale * (w // 2)) + 1
    lows = [0, 0, w - bound_w, 0, w - bound_w, h - bound_h, 0, h - bound_h]
    highs = [bound_w, bound_h, w, bound_h, w, h, bound_w, h]
    u = jax.random.uniform(key, (9,))
    end = uniform_int(u[:8], jnp.array(lows), jnp.array(highs))
    return {"endpoints": end.reshape(4, 2).astype(jnp.float32), "applied": u[8] < p}


@op(
    "perspective",
    params={
        "distortion_scale": Param(0.5, low=0.0, high=1.0, neutral=0.0,
                                  doc="how far corners move, as a fraction of half the side"),
        "p": Param.probability(0.5, "probability of distorting a sample"),
    },
    sample=_perspective_sample,
    reference="torchvision.transforms.v2.RandomPerspective",
)
@warp(interpolation="bilinear")
def perspective(params, meta, **_):
    """Warps each image, with probability ``p``, to a quadrilateral with randomly moved corners.

    torchvision RandomPerspective: each corner moves inwards by a random whole number of pixels
    (same draws), and the image is sampled through the homography that ``_get_perspective_coeffs``
    solves. Deviation: the homography is built in closed form in float32 (torchvision: float64
    least squares), so source coordinates differ by up to about 1e-4 pixel at 224x224; the
    sampling tolerance in the module docstring covers it.

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring). Params: ``endpoints`` ((4, 2) x, y of the corners
    top-left, top-right, bottom-right, bottom-left, whole pixels) and ``applied``.
    """
    coeffs = perspective_coefficients(_start_points(meta.height, meta.width), params["endpoints"])
    return Warp.perspective(coeffs, meta, applied=params["applied"])

