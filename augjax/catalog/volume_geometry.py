"""Volume geometry: flips, rot90, a random 3D affine with an elastic deformation in one
resample, and patch sampling with foreground oversampling. Volumes ``(D, H, W, C)`` float,
masks ``(D, H, W, 1)`` integer labels (nearest), keypoints ``(K, 3)`` voxel indices ``(d, h,
w)``; axes 0, 1, 2 are D, H, W (MONAI's spatial axes of a channel-first array, in order).

- ``volume_flip`` (MONAI ``RandFlipd`` per axis; nnU-Net's ``MirrorTransform``: each axis of
  ``axes`` flipped with probability ``p``);
- ``volume_rot90`` (MONAI ``RandRotate90d``: with probability ``p``, ``k`` in ``1..max_k``
  quarter turns in the plane ``axes``, from the first axis towards the second as
  ``np.rot90``); the plane must be square (a batch keeps one shape);
- ``volume_affine`` (MONAI ``RandAffined`` + ``Rand3DElasticd``, nnU-Net's
  ``SpatialTransform``): see :func:`_affine_sample`;
- ``volume_crop`` (nnU-Net's patch sampling; MONAI ``RandCropByPosNegLabeld`` the closest):
  with probability ``p_foreground`` a patch of ``size`` centred on a uniformly drawn foreground
  voxel (``mask > 0``; shifted inside the volume), else uniformly placed.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from augjax.catalog import volume_params as vp
from augjax.errors import InputError, ParamError
from augjax.kernels import fields, volume_axes, volume_sample
from augjax.volumes import VolumeMeta, VolumeOp

__all__ = ["displacement", "offsets", "volume_affine", "volume_crop", "volume_flip", "volume_rot90"]


# -- flips ----------------------------------------------------------------------------------

def _flip_check(op: str, c: dict[str, Any]) -> dict[str, Any]:
    axes = tuple(c["axes"]) if isinstance(c["axes"], (tuple, list)) else (c["axes"],)
    if not axes or any(a not in (0, 1, 2) for a in axes) or len(set(axes)) != len(axes):
        raise ParamError(f"{op}: parameter 'axes' expects distinct spatial axes among (0, 1, 2), "
                         f"got {c['axes']!r}", op=op, param="axes")
    return {"axes": axes, "p": vp.probability(op, "p", c["p"])}


def _flip_sample(key, meta, *, mask, axes, p):
    allowed = jnp.array([a in axes for a in range(3)])
    return {"flip": jax.random.bernoulli(key, p, (3,)) & allowed}


def _flip(volume, params, meta, **_):
    for a in range(3):
        volume = jnp.where(params["flip"][a], jnp.flip(volume, a), volume)
    return volume


def _flip_points(points, params, meta, **_):
    size = jnp.asarray(meta.spatial, jnp.float32)
    return jnp.where(params["flip"], size - 1.0 - points, points)


volume_flip = VolumeOp("volume_flip", _flip, _flip_sample, {"axes": (0, 1, 2), "p": 0.5},
                       check=_flip_check, mask_kernel=_flip, points=_flip_points,
                       doc="Each of `axes` flipped with probability `p` (MONAI RandFlipd).",
                       active=lambda p: jnp.any(p["flip"]))


# -- rot90 ----------------------------------------------------------------------------------

def _rot_check(op: str, c: dict[str, Any]) -> dict[str, Any]:
    axes = tuple(c["axes"])
    if len(axes) != 2 or axes[0] == axes[1] or any(a not in (0, 1, 2) for a in axes):
        raise ParamError(f"{op}: parameter 'axes' expects two distinct spatial axes, got "
                         f"{c['axes']!r}", op=op, param="axes")
    max_k = c["max_k"]
    if isinstance(max_k, bool) or max_k not in (1, 2, 3):
        raise ParamError(f"{op}: parameter 'max_k' expects 1, 2 or 3, got {max_k!r}", op=op,
                         param="max_k")
    return {"axes": axes, "max_k": max_k, "p": vp.probability(op, "p", c["p"])}


def _rot_sample(key, meta, *, mask, axes, max_k, p):
    k_apply, k_turns = jax.random.split(key)
    a, b = axes
    if meta.spatial[a] != meta.spatial[b]:
        raise InputError(f"volume_rot90: the plane of axes {axes} is {meta.spatial[a]} x "
                         f"{meta.spatial[b]}; a quarter turn needs a square plane (a batch keeps "
                         f"one shape)", op="volume_rot90", argument="volumes")
    turns = jax.random.randint(k_turns, (), 1, max_k + 1)
    return {"k": jnp.where(jax.random.bernoulli(k_apply, p), turns, 0).astype(jnp.int32)}


def _rot(volume, params, meta, *, axes, **_):
    return jax.lax.switch(params["k"], [lambda v, k=k: jnp.rot90(v, k, axes) for k in range(4)],
                          volume)


def _rot_points(points, params, meta, *, axes, **_):
    a, b = axes
    n = float(meta.spatial[a])
    for turn in range(1, 4):
        r, c = points[:, a], points[:, b]
        turned = points.at[:, a].set(n - 1.0 - c).at[:, b].set(r)
        points = jnp.where(params["k"] >= turn, turned, points)
    return points


volume_rot90 = VolumeOp("volume_rot90", _rot, _rot_sample, {"axes": (0, 1), "max_k": 3,
                                                            "p": 0.1},
                        check=_rot_check, mask_kernel=_rot, points=_rot_points,
                        doc="k in 1..max_k quarter turns in a square plane (MONAI RandRotate90d).",
                        active=lambda p: p["k"] != 0)


# -- affine + elastic, one resample -----------------------------------------------------------

_AFFINE = {"p": 1.0, "rotate": 0.0, "p_rotation": 1.0, "shear": 0.0, "translate": 0.0,
           "scale": 0.0, "p_scaling": 1.0, "isotropic": False, "p_elastic": 0.0,
           "sigma": (5.0, 8.0), "magnitude": (100.0, 200.0), "size": None,
           "interpolation": "linear", "padding": "zeros"}
#: The images' interpolation: its spline order (SciPy's ``map_coordinates``: cubic is its
#: ``order=3`` with the prefilter); masks are nearest.
_ORDERS = {"linear": 1, "nearest": 0, "cubic": 3}


def _affine_check(op: str, c: dict[str, Any]) -> dict[str, Any]:
    out = {k: vp.probability(op, k, c[k]) for k in ("p", "p_rotation", "p_scaling", "p_elastic")}
    out["rotate"] = vp.axes_ranges(op, "rotate", c["rotate"])
    out["shear"] = vp.axes_ranges(op, "shear", c["shear"], 6)
    out["translate"] = vp.axes_ranges(op, "translate", c["translate"])
    out["scale"] = vp.axes_ranges(op, "scale", c["scale"])
    if any(lo <= -1.0 for lo, _ in out["scale"]):
        raise ParamError(f"{op}: parameter 'scale' is added to 1 (MONAI's scale_range): its "
                         f"low must be > -1, got {c['scale']!r}", op=op, param="scale")
    out["sigma"] = vp.pair(op, "sigma", c["sigma"], 0.0)
    out["magnitude"] = vp.pair(op, "magnitude", c["magnitude"], 0.0)
    if not isinstance(c["isotropic"], bool):
        raise ParamError(f"{op}: parameter 'isotropic' expects a bool, got {c['isotropic']!r}",
                         op=op, param="isotropic")
    out["isotropic"] = c["isotropic"]
    size = c["size"]
    if size is not None and (not isinstance(size, (tuple, list)) or len(size) != 3 or any(
            isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in size)):
        raise ParamError(f"{op}: parameter 'size' expects None or (D, H, W) positive ints, got "
                         f"{size!r}", op=op, param="size")
    out["size"] = None if size is None else tuple(size)
    for name, choices in (("interpolation", tuple(_ORDERS)),
                          ("padding", volume_sample.MODES)):
        if c[name] not in choices:
            raise ParamError(f"{op}: parameter '{name}' expects one of {choices}, got "
                             f"{c[name]!r}", op=op, param=name)
        out[name] = c[name]
    return out


def _out(meta: VolumeMeta, size: Any = None, **_) -> tuple[int, int, int]:
    return meta.spatial if size is None else tuple(size)


def _affine_sample(key, meta, *, mask, p, rotate, p_rotation, shear, translate, scale,
                   p_scaling, isotropic, p_elastic, sigma, magnitude, size, **_):
    """With probability ``p``: rotation about each axis uniform in ``rotate`` (radians, with
    probability ``p_rotation``), shear coefficients in ``shear``, translation in ``translate``
    (voxels), scale ``1 + uniform(scale)`` per axis (one for all with ``isotropic``; with
    probability ``p_scaling``), and with probability ``p_elastic`` an elastic field: offsets
    uniform in [-1, 1] per output voxel and axis, smoothed by a gaussian of ``sigma`` (truncated
    at 3 sigma, zero padded) times ``magnitude`` voxels (MONAI ``Rand3DElastic``)."""
    ks = jax.random.split(key, 10)
    on = jax.random.bernoulli(ks[0], p)
    angles = vp.uniform(ks[1], rotate) * jax.random.bernoulli(ks[2], p_rotation)
    factors = 1.0 + vp.uniform(ks[3], scale)
    if isotropic:
        factors = jnp.full((3,), factors[0])
    factors = jnp.where(jax.random.bernoulli(ks[4], p_scaling), factors, 1.0)
    shears, shifts = vp.uniform(ks[5], shear), vp.uniform(ks[6], translate)
    matrix = volume_sample.affine_matrix(angles, shears, shifts, factors)
    params = {"apply": on, "rotate": angles, "shear": shears, "translate": shifts,
              "scale": factors, "matrix": jnp.where(on, matrix, jnp.eye(4))}
    if p_elastic > 0:
        params["elastic"] = on & jax.random.bernoulli(ks[7], p_elastic)
        params["sigma"] = vp.uniform(ks[8], sigma)
        params["magnitude"] = vp.uniform(ks[9], magnitude)
        params["field"] = jax.random.fold_in(key, 1)  # the offsets' key: drawn where applied
    return params


def offsets(params: dict[str, jax.Array], out: tuple[int, int, int]) -> jax.Array:
    """The elastic field's raw offsets ``(3, D', H', W')``, uniform in [-1, 1] at 16-bit
    resolution (the 65,536 midpoints ``(k + 0.5) / 32768 - 1``), from the volume's
    ``params["field"]`` key: drawn by the kernel, so a volume that applies no affine (on the
    CPU, where the op is skipped for it) never draws its ``3 x D' x H' x W'`` values.

    Two offsets per hash (:func:`augjax.kernels.fields.uniform16`): a quarter of the hashes of
    ``jax.random.uniform`` under JAX's default ``jax_threefry_partitionable``, and the same
    values under either setting of that flag. The smoothing that follows averages thousands of
    offsets, so the 16-bit steps add under 0.002% of the field's spread."""
    return fields.uniform16(params["field"], (3, *out))


def displacement(params: dict[str, jax.Array], out: tuple[int, int, int], *,
                 sigma: tuple[float, float], p_elastic: float, **_) -> jax.Array | None:
    """The elastic field ``(3, D', H', W')`` in voxels (None without elastic): the
    :func:`offsets` smoothed per axis (:func:`augjax.kernels.volume_axes.gaussian_matrix`,
    ``truncate=3``, zeros), times the magnitude, zero where the sample drew no elastic
    deformation."""
    if p_elastic <= 0:
        return None
    offsets_ = jnp.moveaxis(offsets(params, out), 0, -1)
    r = volume_axes.max_radius(sigma, 3.0)
    mats = tuple(volume_axes.gaussian_matrix(n, params["sigma"], r, truncate=3.0,
                                             mode="constant") for n in offsets_.shape[:3])
    field = volume_axes.separable(offsets_, mats) * params["magnitude"]
    return jnp.moveaxis(jnp.where(params["elastic"], field, 0.0), -1, 0)


def _shared(params, meta, **config):
    """What the image, mask and points kernels read: the elastic field (or None) and the
    sampling coordinates, computed once per volume (:attr:`augjax.volumes.VolumeOp.shared`)."""
    out = _out(meta, config["size"])
    field = displacement(params, out, **config)
    coords = volume_sample.coordinates(params["matrix"], out, meta.spatial, field)
    return {"coords": coords} if field is None else {"coords": coords, "displacement": field}


def _affine(volume, params, meta, **config):
    return volume_sample.sample(volume, params["coords"], order=_ORDERS[config["interpolation"]],
                                mode=config["padding"])


def _affine_active(params):
    """Whether a volume's draws move it: a matrix other than the identity, or a field."""
    moved = jnp.any(params["matrix"] != jnp.eye(4))
    return moved | params["elastic"] if "elastic" in params else moved


def _affine_mask(mask, params, meta, **config):
    return volume_sample.sample(mask, params["coords"], order=0, mode=config["padding"])


def _affine_points(points, params, meta, **config):
    return volume_sample.invert_points(points, params["matrix"], _out(meta, config["size"]),
                                       meta.spatial, params.get("displacement"))


volume_affine = VolumeOp("volume_affine", _affine, _affine_sample, _AFFINE, check=_affine_check,
                         mask_kernel=_affine_mask, points=_affine_points, out_shape=_out,
                         shared=_shared,
                         doc="A random 3D affine and elastic deformation, one resample "
                             "(MONAI RandAffined + Rand3DElasticd).",
                         active=_affine_active)


# -- patches with foreground oversampling ----------------------------------------------------

def _crop_check(op: str, c: dict[str, Any]) -> dict[str, Any]:
    size = c["size"]
    if not isinstance(size, (tuple, list)) or len(size) != 3 or any(
            isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in size):
        raise ParamError(f"{op}: parameter 'size' expects (D, H, W) positive ints, got "
                         f"{size!r}", op=op, param="size")
    return {"size": tuple(size), "p_foreground": vp.probability(op, "p_foreground",
                                                                c["p_foreground"])}


def _crop_out(meta, *, size, **_):
    if any(s > n for s, n in zip(size, meta.spatial)):
        raise InputError(f"volume_crop: patch size {size} is larger than the volumes "
                         f"{meta.spatial} (D, H, W)", op="volume_crop", argument="volumes")
    return size


def _crop_sample(key, meta, *, mask, size, p_foreground):
    k_force, k_voxel, k_uniform = jax.random.split(key, 3)
    shape = jnp.asarray(meta.spatial, jnp.int32)
    span = shape - jnp.asarray(_crop_out(meta, size=size), jnp.int32)
    start = jnp.floor(jax.random.uniform(k_uniform, (3,)) * (span + 1)).astype(jnp.int32)
    if mask is None:
        return {"start": jnp.minimum(start, span), "foreground": jnp.array(False)}
    fg = (mask[..., 0] > 0).reshape(-1)
    force = jax.random.bernoulli(k_force, p_foreground) & jnp.any(fg)
    flat = jax.random.categorical(k_voxel, jnp.where(fg, 0.0, -jnp.inf))
    centre = jnp.stack(jnp.unravel_index(flat, meta.spatial)).astype(jnp.int32)
    centred = jnp.clip(centre - jnp.asarray(size, jnp.int32) // 2, 0, span)
    return {"start": jnp.where(force, centred, jnp.minimum(start, span)), "foreground": force}


def _crop(volume, params, meta, *, size, **_):
    s = params["start"]
    return jax.lax.dynamic_slice(volume, (s[0], s[1], s[2], 0), (*size, volume.shape[3]))


def _crop_points(points, params, meta, **_):
    return points - params["start"].astype(jnp.float32)


volume_crop = VolumeOp("volume_crop", _crop, _crop_sample, {"size": None, "p_foreground": 0.33},
                       check=_crop_check, mask_kernel=_crop, points=_crop_points,
                       out_shape=_crop_out, reads_mask=True,
                       doc="A patch of `size`, centred on a foreground voxel with probability "
                           "`p_foreground` (nnU-Net's oversampling).")
