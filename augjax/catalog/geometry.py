"""Geometric ops on HWC images (augjax moves CHW data to HWC around the kernels).

Images are uint8 (0..255) or float32 (0..1). The warping ops follow torchvision's tensor kernels
(``torchvision.transforms.v2.functional``): they sample with ``grid_sample(align_corners=False)``
semantics and round uint8 results half to even. See :mod:`augjax.catalog._warp` for the
sampling rules.

``fill`` (the value of pixels that come from outside the image) is a fraction of the value
range, in [0, 1], whatever the dtype, as for every augjax op (``random_erasing``, ``cutout``,
``random_crop``, the contrib pack): one value or one per channel, multiplied by 255 for uint8
images and used as is for float32, so one configuration serves both dtypes and chains that
convert the dtype. torchvision takes ``fill`` in the image's own scale: its uint8 ``fill=128``
is ``fill=128/255`` here (and 0 is 0). ``fill=None`` is plain zero padding, torchvision's
functional default (it differs from ``fill=0`` at the border with bilinear sampling, where
torchvision blends towards the fill).

Accuracy against torchvision 0.29 (CPU), measured by ``tests/test_geometry.py``: nearest
sampling gives the same pixels except at exact half-pixel ties of the source coordinate, which
both libraries resolve by float32 rounding noise (augjax computes the matrix in float32 and XLA
fuses multiply-adds; torchvision builds it in float64); bilinear sampling is within 1 level on
uint8 (a value at .5 rounds either way) and within 1e-5 on float32 for images up to 32 pixels
a side (float32 rounding of the matrix, coordinates and weights; the coordinate error grows
with the side: measured 3e-5 for rotate and 1.4e-4 for perspective at 224x224).

The single-magnitude ops (``rotate``, ``shear_x``, ``shear_y``, ``translate_x``, ``translate_y``)
are the RandAugment/AutoAugment primitives: their one magnitude parameter is a number (used as
is) or a pair (drawn uniformly per sample), and their kernels accept a traced JAX scalar for it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._param import Param
from augjax._spec import op
from augjax.catalog._warp import (
    INTERPOLATIONS,
    check_fill,
    inverse_affine_matrix,
    perspective_coefficients,
    uniform_int,
    warp_affine,
    warp_perspective,
)
from augjax.errors import InputError

__all__ = [
    "flip",
    "rot90",
    "rotate",
    "affine",
    "shear_x",
    "shear_y",
    "translate_x",
    "translate_y",
    "perspective",
]

#: torchvision RandAugment's largest translation, as a fraction of the image side (150/331).
TRANSLATE_MAX = 150.0 / 331.0


@op(
    "flip",
    params={
        "p": Param(0.5, low=0.0, high=1.0, neutral=0.0, doc="probability of each flip"),
        "horizontal": Param(True, doc="mirror left-right (the width axis)"),
        "vertical": Param(False, doc="mirror top-bottom (the height axis)"),
    },
    reference="torchvision.transforms.v2.RandomHorizontalFlip / RandomVerticalFlip",
)
def flip(key, image, *, p, horizontal, vertical):
    """Mirrors each image with probability ``p``.

    ``horizontal`` mirrors the width axis (torchvision RandomHorizontalFlip), ``vertical`` the
    height axis (RandomVerticalFlip). With both, each axis gets its own coin, as two torchvision
    transforms in a row would.
    """
    k_h, k_v = jax.random.split(key)
    if horizontal:
        image = jnp.where(jax.random.bernoulli(k_h, p), image[:, ::-1], image)
    if vertical:
        image = jnp.where(jax.random.bernoulli(k_v, p), image[::-1], image)
    return image


# ---------------------------------------------------------------------------------------------
# Shared parameters and helpers


def _interpolation(default: str) -> Param:
    return Param(default, choices=INTERPOLATIONS, doc="'nearest' or 'bilinear' sampling")


def _fill() -> Param:
    return Param(0.0, kind="floats", low=0.0, high=1.0, optional=True,
                 doc="value of pixels from outside the image, a fraction of the range in [0, 1] "
                     "(x255 for uint8; torchvision's uint8 128 is 128/255), one or one per "
                     "channel; None = zero padding")


def _draw(key: jax.Array, value, u: jax.Array | None = None) -> jax.Array:
    """A float_or_pair value for one sample: a pair ``(lo, hi)`` is drawn uniformly in [lo, hi]
    (``(v, v)`` gives exactly ``v``); a number, or a traced scalar from a policy, is used as is.

    A number goes through an optimization barrier so that XLA computes the warp exactly as for a
    traced value: folded constants can round differently, which moves nearest sampling at exact
    half-pixel ties, and the op must give the same pixels whichever way its value arrives.
    ``u`` is a uniform draw to use instead of drawing from ``key``."""
    if isinstance(value, tuple):
        lo, hi = value
        u = jax.random.uniform(key, (), jnp.float32) if u is None else u
        return lo + (hi - lo) * u
    return jax.lax.optimization_barrier(jnp.asarray(value, jnp.float32))


def _magnitude(default: float, high: float, doc: str) -> Param:
    return Param((-default, default), kind="float_or_pair", neutral=0.0, magnitude=(0.0, high),
                 signed=True, doc=doc)


# ---------------------------------------------------------------------------------------------
# rot90


def _rot90_size(h: int, w: int, *, k) -> tuple[int, int]:
    return (w, h) if k is not None and k % 2 else (h, w)


@op(
    "rot90",
    params={
        "k": Param(None, kind="int", optional=True,
                   doc="quarter turns counter-clockwise; None = random in {0, 1, 2, 3} per sample "
                       "(square images only)"),
    },
    output_size=_rot90_size,
    reference="torch.rot90 / kornia RandomRotation90 / albumentations RandomRotate90",
)
def rot90(key, image, *, k):
    """Rotates by ``k`` quarter turns counter-clockwise (``torch.rot90(img, k, dims=(-2, -1))``).

    A fixed ``k`` works on any size (odd ``k`` swaps height and width for the whole batch);
    ``k=None`` draws ``k`` uniformly from {0, 1, 2, 3} per sample, which needs square images so
    that every output has the same shape.

    Raises:
        InputError: ``k=None`` on images that are not square.
    """
    if k is not None:
        return jnp.rot90(image, k % 4, axes=(0, 1))
    h, w = image.shape[:2]
    if h != w:
        raise InputError(
            f"rot90: k=None (a random quarter turn per sample) needs square images, so that "
            f"every output of the batch has one size; got height {h}, width {w}. Pass a fixed k "
            f"(an odd k swaps height and width for the whole batch)",
            op="rot90",
            argument="images",
        )
    turns = jnp.stack([jnp.rot90(image, i, axes=(0, 1)) for i in range(4)])
    return turns[uniform_int(jax.random.uniform(key, ()), 0, 4)]


# ---------------------------------------------------------------------------------------------
# rotate / affine


@op(
    "rotate",
    params={
        "degrees": _magnitude(30.0, 30.0,
                              "angle in degrees, counter-clockwise positive: a number is used as "
                              "is, a pair (lo, hi) is drawn uniformly per sample"),
        "interpolation": _interpolation("nearest"),
        "fill": _fill(),
    },
    reference="torchvision.transforms.v2.RandomRotation / functional.rotate (expand=False)",
)
def rotate(key, image, *, degrees, interpolation, fill):
    """Rotates about the image centre, counter-clockwise for positive angles (torchvision).

    ``degrees`` is a number (exactly that angle, as ``F.rotate``) or a pair ``(lo, hi)`` drawn
    uniformly per sample (``RandomRotation((lo, hi))``; ``RandomRotation(30)`` is
    ``degrees=(-30, 30)``). The output keeps the input size (``expand=False``) and the centre
    is the image centre (``center=None``). Deviations: at multiples of 90 degrees torchvision
    uses an exact ``rot90``, augjax the general warp (nearest is exact there too; bilinear is
    within the float32 tolerance in the module docstring).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    angle = _draw(key, degrees)
    # torchvision rotate: the inverse matrix of affine(-angle), about the centre.
    matrix = inverse_affine_matrix((0.0, 0.0), -angle, (0.0, 0.0), 1.0, (0.0, 0.0))
    return warp_affine(image, matrix, interpolation, check_fill(fill, image, "rotate"))


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


def affine_params(key: jax.Array, h: int, w: int, *, degrees, translate, scale, shear):
    """torchvision ``RandomAffine.make_params`` for one sample: ``(angle, (tx, ty), scale,
    (shear_x, shear_y))`` as float32 scalars; ``tx``, ``ty`` are whole pixels (``round``)."""
    u = jax.random.uniform(key, (6,))
    angle = _draw(key, degrees, u[0])
    tx = ty = jnp.float32(0.0)
    if translate is not None:
        max_dx, max_dy = translate[0] * w, translate[1] * h
        tx = jnp.round(_draw(key, (-max_dx, max_dx), u[1]))
        ty = jnp.round(_draw(key, (-max_dy, max_dy), u[2]))
    zoom = jnp.float32(1.0) if scale is None else _draw(key, scale, u[3])
    sx = sy = jnp.float32(0.0)
    if shear is not None:
        sx, sy = _draw(key, shear[:2], u[4]), _draw(key, shear[2:], u[5])
    return angle, (tx, ty), zoom, (sx, sy)


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
        "interpolation": _interpolation("nearest"),
        "fill": _fill(),
    },
    reference="torchvision.transforms.v2.RandomAffine (center=None)",
)
def affine(key, image, *, degrees, translate, scale, shear, interpolation, fill):
    """Rotates, shifts, zooms and shears by random amounts about the image centre.

    torchvision RandomAffine: same parameterisation, draws and ``_get_inverse_affine_matrix``.
    The angle is drawn from ``degrees``, the shift from ``U[-a*W, a*W] x U[-b*H, b*H]`` rounded
    to whole pixels, the zoom from ``scale`` and the shears from ``shear``. Unlike ``rotate``
    (torchvision ``F.rotate``), a positive angle turns the image clockwise on screen, as
    torchvision's ``F.affine`` does. Deviation: no ``center`` argument (the image centre is used).

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    h, w = image.shape[:2]
    angle, shift, zoom, shears = affine_params(key, h, w, degrees=degrees, translate=translate,
                                               scale=scale, shear=shear)
    matrix = inverse_affine_matrix((0.0, 0.0), angle, shift, zoom, shears)
    return warp_affine(image, matrix, interpolation, check_fill(fill, image, "affine"))


# ---------------------------------------------------------------------------------------------
# AutoAugment / RandAugment primitives


def _shear_matrix(s: jax.Array, h: int, w: int, axis: str) -> jax.Array:
    # torchvision _apply_op: F.affine(shear=[degrees(atan(s)), 0] (or [0, ...]), center=[0, 0]).
    # In _get_inverse_affine_matrix tan(atan(s)) = s, and center [0, 0] is (-W/2, -H/2) from the
    # image centre, which leaves a constant term of s*H/2 (x shear) or s*W/2 (y shear).
    zero, one = jnp.float32(0.0), jnp.float32(1.0)
    if axis == "x":
        return jnp.stack([one, s, s * (h / 2.0), zero, one, zero])
    return jnp.stack([one, zero, zero, s, one, s * (w / 2.0)])


_SHEAR_DOC = ("shear factor: a number is used as is, a pair (lo, hi) is drawn uniformly per sample;"
              " RandAugment range 0..0.3, randomly negated")


@op(
    "shear_x",
    params={
        "shear": _magnitude(0.3, 0.3, _SHEAR_DOC),
        "interpolation": _interpolation("nearest"),
        "fill": _fill(),
    },
    reference="torchvision AutoAugment/RandAugment ShearX (_apply_op: F.affine, center=[0, 0])",
)
def shear_x(key, image, *, shear, interpolation, fill):
    """Shears along the width axis by the factor ``shear`` (AutoAugment/RandAugment ShearX).

    Output pixel ``(x, y)`` samples input ``(x + s*y, y)``, with ``y`` counted from the top edge
    (PIL ``(1, s, 0, 0, 1, 0)``; torchvision ``_apply_op`` ShearX, which calls
    ``F.affine(shear=[degrees(atan(s)), 0], center=[0, 0])``).

    ``shear`` is a number or a traced scalar (used as is) or a pair drawn per sample.

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    h, w = image.shape[:2]
    matrix = _shear_matrix(_draw(key, shear), h, w, "x")
    return warp_affine(image, matrix, interpolation, check_fill(fill, image, "shear_x"))


@op(
    "shear_y",
    params={
        "shear": _magnitude(0.3, 0.3, _SHEAR_DOC),
        "interpolation": _interpolation("nearest"),
        "fill": _fill(),
    },
    reference="torchvision AutoAugment/RandAugment ShearY (_apply_op: F.affine, center=[0, 0])",
)
def shear_y(key, image, *, shear, interpolation, fill):
    """Shears along the height axis by the factor ``shear`` (AutoAugment/RandAugment ShearY).

    Output pixel ``(x, y)`` samples input ``(x, y + s*x)``, with ``x`` counted from the left edge
    (PIL ``(1, 0, 0, s, 1, 0)``; torchvision ``_apply_op`` ShearY,
    ``F.affine(shear=[0, degrees(atan(s))], center=[0, 0])``).

    ``shear`` is a number or a traced scalar (used as is) or a pair drawn per sample.

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    h, w = image.shape[:2]
    matrix = _shear_matrix(_draw(key, shear), h, w, "y")
    return warp_affine(image, matrix, interpolation, check_fill(fill, image, "shear_y"))


def _translate(key, image, translate, relative, interpolation, fill, axis: str):
    h, w = image.shape[:2]
    value = _draw(key, translate)
    pixels = value * (w if axis == "x" else h) if relative else value
    shift = jnp.trunc(pixels)  # torchvision _apply_op: translate=[int(magnitude), 0]
    zero = jnp.float32(0.0)
    tx, ty = (shift, zero) if axis == "x" else (zero, shift)
    one = jnp.float32(1.0)
    matrix = jnp.stack([one, zero, -tx, zero, one, -ty])
    return warp_affine(image, matrix, interpolation, check_fill(fill, image, f"translate_{axis}"))


_TRANSLATE_DOC = ("shift: a fraction of the {side} (relative=True) or pixels, truncated to whole "
                  "pixels; a number is used as is, a pair (lo, hi) is drawn uniformly per sample; "
                  "RandAugment range 0..150/331, randomly negated")


def _translate_params(side: str) -> dict[str, Param]:
    return {
        "translate": _magnitude(TRANSLATE_MAX, TRANSLATE_MAX, _TRANSLATE_DOC.format(side=side)),
        "relative": Param(True, doc=f"translate is a fraction of the {side} (else pixels)"),
        "interpolation": _interpolation("nearest"),
        "fill": _fill(),
    }


@op(
    "translate_x",
    params=_translate_params("width"),
    reference="torchvision AutoAugment/RandAugment TranslateX (_apply_op: F.affine)",
)
def translate_x(key, image, *, translate, relative, interpolation, fill):
    """Shifts the content right by whole pixels (left when negative), filling the uncovered columns.

    The shift is ``trunc(translate * width)`` pixels when ``relative`` (the default), else
    ``trunc(translate)``: whole pixels, as torchvision's ``_apply_op`` passes
    ``translate=[int(magnitude), 0]`` to ``F.affine`` (AutoAugment/RandAugment TranslateX).

    ``translate`` is a number or a traced scalar (used as is) or a pair drawn per sample.

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    return _translate(key, image, translate, relative, interpolation, fill, "x")


@op(
    "translate_y",
    params=_translate_params("height"),
    reference="torchvision AutoAugment/RandAugment TranslateY (_apply_op: F.affine)",
)
def translate_y(key, image, *, translate, relative, interpolation, fill):
    """Shifts the content down by whole pixels (up when negative), filling the uncovered rows.

    The shift is ``trunc(translate * height)`` pixels when ``relative`` (the default), else
    ``trunc(translate)`` (torchvision ``_apply_op`` TranslateY).

    ``translate`` is a number or a traced scalar (used as is) or a pair drawn per sample.

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    return _translate(key, image, translate, relative, interpolation, fill, "y")


# ---------------------------------------------------------------------------------------------
# perspective


def perspective_points(key: jax.Array, h: int, w: int, distortion_scale: float):
    """torchvision ``RandomPerspective.make_params``: ``(startpoints, endpoints)``, each ``(4, 2)``
    (x, y) for the corners top-left, top-right, bottom-right, bottom-left; endpoints are int32
    draws within ``int(distortion_scale * side // 2) + 1`` pixels of each corner."""
    bound_h = int(distortion_scale * (h // 2)) + 1
    bound_w = int(distortion_scale * (w // 2)) + 1
    lows = [0, 0, w - bound_w, 0, w - bound_w, h - bound_h, 0, h - bound_h]
    highs = [bound_w, bound_h, w, bound_h, w, h, bound_w, h]
    u = jax.random.uniform(key, (9,))[:8]  # the 9th draw is perspective's coin
    end = uniform_int(u, jnp.array(lows), jnp.array(highs))
    start = jnp.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], jnp.int32)
    return start, end.reshape(4, 2)


@op(
    "perspective",
    params={
        "distortion_scale": Param(0.5, low=0.0, high=1.0, neutral=0.0,
                                  doc="how far corners move, as a fraction of half the side"),
        "p": Param(0.5, low=0.0, high=1.0, neutral=0.0, doc="probability of distorting a sample"),
        "interpolation": _interpolation("bilinear"),
        "fill": _fill(),
    },
    reference="torchvision.transforms.v2.RandomPerspective",
)
def perspective(key, image, *, distortion_scale, p, interpolation, fill):
    """Warps each image, with probability ``p``, to a quadrilateral with randomly moved corners.

    torchvision RandomPerspective: each corner moves inwards by a random whole number of pixels
    (same draws), and the image is sampled through the homography that ``_get_perspective_coeffs``
    solves. Deviation: the homography is built in closed form in float32 (torchvision: float64
    least squares), so source coordinates differ by up to about 1e-4 pixel at 224x224; the
    sampling tolerance in the module docstring covers it.

    ``fill`` is a fraction of the value range in [0, 1] (one value or one per channel; times
    255 for uint8 images: torchvision's uint8 ``fill=128`` is ``fill=128/255``); ``None`` is
    zero padding (see the module docstring).
    """
    h, w = image.shape[:2]
    start, end = perspective_points(key, h, w, distortion_scale)
    coeffs = perspective_coefficients(start, end)
    warped = warp_perspective(image, coeffs, interpolation, check_fill(fill, image, "perspective"))
    return jnp.where(jax.random.uniform(key, (9,))[8] < p, warped, image)

