"""A warping op declared by its geometry: one :class:`Warp` per sample gives both its pixels and
its forward matrix, so masks, boxes, keypoints and :func:`augjax.invert` follow the pixels.

An author writes the geometry, ``fn(params, meta, **config) -> Warp`` (``meta``: the image's
:class:`augjax.Meta`; ``config``: the op's configured parameters, so the function takes
``**_`` for those it does not read), and decorates it with :func:`warp` under ``@op``::

    @op("shear_x", params={"shear": Param((-0.3, 0.3), kind="float_or_pair", neutral=0.0)})
    @warp
    def shear_x(params, meta, **_):
        \"\"\"Shears along the width axis.\"\"\"
        s = params["shear"]
        return Warp.affine(jnp.stack([1.0, s, 0.0, 0.0, 1.0, 0.0]), meta)

The op then also takes the parameters ``interpolation`` and ``fill`` (what the pixels are
sampled with; masks get ``"nearest"`` and a zero fill), which ``@warp`` brings
(:func:`sampling_params`: ``@warp(interpolation="bilinear")`` changes the default,
``@warp(convention=True)`` adds ``convention``, torchvision's or PIL's sampling, for a geometry
that reads it; a parameter the op declares itself is kept), and gets its kernel (the pixels, by
:func:`augjax.kernels.warp.warp_affine`, :func:`~augjax.kernels.warp_pil.warp_affine_pil`,
:func:`~augjax.kernels.warp.warp_perspective` or :func:`~augjax.kernels.matrix.warp_by`) and its ``matrix`` (the same coefficients
turned forward, :mod:`augjax.kernels.matrix`) from the one function.

Exact paths (PIL ``Image.rotate`` copies and transposes the image at multiples of 90 degrees
instead of resampling): a :class:`Warp` may carry an int32 ``exact`` code (``EXACT_*``), which
picks the copy or the turn in place of the resampled pixels; the geometry is the same.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from augjax._core.meta import Meta
from augjax._core.param import Param
from augjax.kernels.products import matmul
from augjax.kernels.matrix import (
    from_centered_inverse,
    from_perspective_coefficients,
    from_pil_coefficients,
    identity,
    translation,
    warp_by,
)
from augjax.kernels.warp import INTERPOLATIONS, check_fill, warp_affine, warp_perspective
from augjax.kernels.warp_pil import pil_rotate_coefficients, warp_affine_pil

__all__ = ["CONVENTIONS", "EXACT_COPY", "EXACT_HALF", "EXACT_NONE", "EXACT_QUARTER",
           "EXACT_THREE_QUARTERS", "Warp", "WarpKernel", "exact_paths", "exact_source",
           "sampling_params", "warp"]

#: Exact-path codes (PIL rotate): the warp, a copy, a half turn, a quarter turn and three quarter
#: turns (the turns only on square images). ``augjax.catalog``'s policy families use the same.
EXACT_NONE, EXACT_COPY, EXACT_HALF, EXACT_QUARTER, EXACT_THREE_QUARTERS = range(5)

_KINDS = ("affine", "pil", "perspective", "forward")

#: The sampling conventions a geometry may offer (``@warp(convention=True)``): torchvision's
#: tensor kernels (:meth:`Warp.affine`) or PIL's transform (:meth:`Warp.pil`).
CONVENTIONS = ("torchvision", "pil")


def sampling_params(interpolation: str = "nearest", convention: bool = False) -> dict[str, Param]:
    """The parameters a warp samples with: ``interpolation`` (this default), ``fill`` and, with
    ``convention``, ``convention`` (``"torchvision"`` or ``"pil"``)."""
    out = {
        "interpolation": Param(interpolation, choices=INTERPOLATIONS,
                               doc="'nearest' or 'bilinear' sampling"),
        "fill": Param(0.0, kind="floats", low=0.0, high=1.0, optional=True,
                      doc="value of pixels from outside the image, a fraction of the range in "
                          "[0, 1] (x255 for uint8; torchvision's uint8 128 is 128/255), one or "
                          "one per channel; None = zero padding"),
    }
    if convention:
        out["convention"] = Param(
            "torchvision", choices=CONVENTIONS,
            doc="'torchvision' (tensor kernels: whole-pixel shifts, border pixels blend with the "
                "fill) or 'pil' (PIL's transform, as timm: fractional shifts, edge samples "
                "clamped, outside points take the fill)")
    return out


@dataclasses.dataclass(frozen=True)
class Warp:
    """One sample's geometry, as the pixels are sampled.

    Build it with :meth:`affine`, :meth:`pil`, :meth:`pil_rotate`, :meth:`perspective` or
    :meth:`forward`.

    Attributes:
        kind: ``"affine"`` (torchvision's centred inverse, 6 coefficients), ``"pil"`` (PIL's
            affine data, 6), ``"perspective"`` (torchvision's 8 coefficients) or ``"forward"``
            (the forward 3x3 matrix itself).
        coeffs: the output-to-input map, float32, in the kind's coordinates (``"forward"``:
            the input-to-output matrix).
        height, width: the image's size (the centre of an ``"affine"`` warp).
        applied: where False (a traced bool), the sample is left as it is (identity matrix).
        exact: an int32 ``EXACT_*`` code (PIL's exact paths), or None.
        window: ``(top, left, height, width)`` static ints (``"affine"`` only): the output is
            that window of the warped image, computed alone (a warp then a crop in one
            resample); None: the whole image.
    """

    kind: str
    coeffs: jax.Array
    height: Any
    width: Any
    applied: jax.Array | None = None
    exact: jax.Array | None = None
    window: tuple[int, int, int, int] | None = None

    @classmethod
    def affine(cls, inverse: jax.Array, meta: Meta, applied: jax.Array | None = None,
               window: tuple[int, int, int, int] | None = None) -> Warp:
        """torchvision's affine warp: ``inverse`` (6,) maps output to input coordinates centred
        on the image centre (:func:`augjax.kernels.warp.inverse_affine_matrix`); ``window``:
        only that window of the output (see the attributes)."""
        return cls("affine", inverse, meta.height, meta.width, applied, window=window)

    @classmethod
    def pil(cls, coeffs: jax.Array, meta: Meta, exact: jax.Array | None = None) -> Warp:
        """PIL's ``Image.transform(size, Image.AFFINE, coeffs)``: ``coeffs`` (6,) map output to
        input in PIL's coordinates; ``exact``: an ``EXACT_*`` code (``Image.rotate``)."""
        return cls("pil", coeffs, meta.height, meta.width, exact=exact)

    @classmethod
    def pil_rotate(cls, angle: jax.Array, meta: Meta) -> Warp:
        """PIL's ``Image.rotate(angle)`` (degrees, counter-clockwise, about the centre) with its
        exact paths: a copy at 0 degrees, the half turn at 180 and, on square images, the
        quarter turns at 90 and 270, whatever the resampling filter."""
        h, w = meta.height, meta.width
        m = jnp.mod(jnp.asarray(angle, jnp.float32), 360.0)
        quarter = (m == 90.0) & (h == w)
        three = (m == 270.0) & (h == w)
        codes = [EXACT_COPY, EXACT_HALF, EXACT_QUARTER, EXACT_THREE_QUARTERS]
        exact = jnp.select([m == 0.0, m == 180.0, quarter, three], codes, EXACT_NONE)
        return cls.pil(pil_rotate_coefficients(angle, h, w), meta, exact=exact.astype(jnp.int32))

    @classmethod
    def perspective(cls, coeffs: jax.Array, meta: Meta,
                    applied: jax.Array | None = None) -> Warp:
        """torchvision's perspective warp by its 8 coefficients
        (:func:`augjax.kernels.warp.perspective_coefficients`)."""
        return cls("perspective", coeffs, meta.height, meta.width, applied)

    @classmethod
    def forward(cls, matrix: jax.Array, meta: Meta, applied: jax.Array | None = None) -> Warp:
        """A warp given by its forward 3x3 ``matrix`` (input pixel to output pixel,
        :mod:`augjax.kernels.matrix`), sampled by :func:`augjax.kernels.matrix.warp_by`."""
        return cls("forward", matrix, meta.height, meta.width, applied)

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Warp kind must be one of {_KINDS}, got {self.kind!r}")
        if self.window is not None and self.kind != "affine":
            raise ValueError(f"Warp window is for the 'affine' kind only, got {self.kind!r}")

    @property
    def matrix(self) -> jax.Array:
        """The forward 3x3 matrix (input pixel to output pixel, :mod:`augjax.kernels.matrix`)."""
        if self.kind == "affine":
            m = from_centered_inverse(self.coeffs, self.height, self.width)
        elif self.kind == "pil":
            m = from_pil_coefficients(self.coeffs)
        elif self.kind == "perspective":
            m = from_perspective_coefficients(self.coeffs)
        else:
            m = jnp.asarray(self.coeffs, jnp.float32)
        m = m if self.applied is None else jnp.where(self.applied, m, identity())
        if self.window is not None:  # the window's corner becomes the origin
            m = matmul(translation(-self.window[1], -self.window[0]), m)
        return m

    def pixels(self, image: jax.Array, interpolation: str, fill: jax.Array | None) -> jax.Array:
        """``image`` (one HWC image) sampled by this geometry; ``fill`` as
        :func:`augjax.kernels.warp.check_fill` returns it."""
        if self.kind == "affine":
            out = warp_affine(image, self.coeffs, interpolation, fill, self.window)
        elif self.kind == "pil":
            out = warp_affine_pil(image, self.coeffs, interpolation, fill)
        elif self.kind == "perspective":
            out = warp_perspective(image, self.coeffs, interpolation, fill)
        else:
            out = warp_by(image, self.coeffs, image.shape[:2], interpolation, fill)
        if self.exact is not None:
            out = exact_paths(image, out, self.exact)
        if self.applied is None:
            return out
        if self.window is not None:
            top, left, h, w = self.window
            image = image[top:top + h, left:left + w]
        return jnp.where(self.applied, out, image)


class WarpKernel:
    """The kernel of an op declared by its geometry (see :func:`warp`): called as a kernel,
    ``(image, params, *, interpolation, fill, **config)``, it samples the pixels; ``matrix``
    gives the forward matrix ``@op`` takes for boxes, keypoints and inversion."""

    def __init__(self, geometry: Callable[..., Warp],
                 params: dict[str, Param] | None = None) -> None:
        if not callable(geometry):
            raise TypeError(f"warp: expected a geometry function, got {type(geometry).__name__}")
        self.geometry = geometry
        #: The parameters the pixels are sampled with, which ``@op`` adds to the op's own.
        self.params = sampling_params() if params is None else dict(params)
        functools.update_wrapper(self, geometry)

    def __call__(self, image: jax.Array, params: Any, *, interpolation: str, fill: Any,
                 **config: Any) -> jax.Array:
        h, w, c = image.shape
        meta = Meta(h, w, c, image.dtype.name)
        g = self.geometry(params, meta, interpolation=interpolation, fill=fill, **config)
        return g.pixels(image, interpolation, check_fill(fill, image, self.__name__))

    def matrix(self, params: Any, meta: Meta, **config: Any) -> jax.Array:
        """The sample's forward 3x3 matrix (what ``@op(matrix=)`` would give)."""
        return self.geometry(params, meta, **config).matrix


def warp(geometry: Callable[..., Warp] | None = None, *, interpolation: str = "nearest",
         convention: bool = False) -> Any:
    """Makes ``geometry(params, meta, **config) -> Warp`` the kernel of a warping op (under
    ``@op``, which then derives the op's ``matrix`` and adds the :func:`sampling_params` of
    ``interpolation`` and ``convention`` to the op's parameters); ``@warp`` or
    ``@warp(interpolation="bilinear", convention=True)``. See the module docstring."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"warp: interpolation must be one of {INTERPOLATIONS}, got "
                         f"{interpolation!r}")
    params = sampling_params(interpolation, convention)
    if geometry is None:
        return lambda fn: WarpKernel(fn, params)
    return WarpKernel(geometry, params)


def exact_paths(image, out, code):
    """``out`` where ``code`` is ``EXACT_NONE``, else the exact copy or turn of ``image`` it
    names (PIL rotate's paths; the quarter turns only on square images).

    The copy and the turns are one gather at integer positions chosen by ``code``: as
    transposes, a batch computing every path and selecting would put all of the layer's pixel
    work into XLA's (slower) transpose kernel on a GPU."""
    h, w = image.shape[:2]
    i = jnp.arange(h, dtype=jnp.int32)[:, None]
    j = jnp.arange(w, dtype=jnp.int32)[None, :]
    rows, cols = exact_source(i, j, code, h, w)
    return jnp.where(code == EXACT_NONE, out, image[rows, cols])


def exact_source(i, j, code, h: int, w: int):
    """The source row and column of output pixel ``(i, j)`` (int32 arrays) under the exact
    path ``code`` of an ``h`` x ``w`` image (:func:`exact_paths`; the identity for
    ``EXACT_NONE`` and ``EXACT_COPY``)."""
    rows = jnp.where(code == EXACT_HALF, h - 1 - i, i)
    cols = jnp.where(code == EXACT_HALF, w - 1 - j, j)
    if h == w:  # rot90(image, 1)[i, j] = image[j, w-1-i]; rot90(image, 3)[i, j] = image[h-1-j, i]
        rows = jnp.where(code == EXACT_QUARTER, j, rows)
        cols = jnp.where(code == EXACT_QUARTER, w - 1 - i, cols)
        rows = jnp.where(code == EXACT_THREE_QUARTERS, h - 1 - j, rows)
        cols = jnp.where(code == EXACT_THREE_QUARTERS, i, cols)
    return rows, cols
