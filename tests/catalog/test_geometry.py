"""Geometric ops against torchvision.transforms.v2.functional (CPU tensors) on the same parameters.

Tolerances (stated in augjax/catalog/geometry.py too):
- nearest: identical pixels, except at exact half-pixel ties of the source coordinate, which
  torchvision and augjax both resolve by float32 rounding noise (checked: every mismatch lies
  within 1e-4 pixel of a tie in the float64 source coordinate, and they are few);
- bilinear: <= 1 level on uint8 (a float32 value at .5 rounds either way), <= 1e-5 on float32
  (float32 rounding of coordinates and weights; torchvision builds its matrix in float64).

Sampled parameters are read through the public params path: ``op.sample`` gives each sample's
drawn values, and ``op.apply(x, params=...)`` applies exact per-sample values (as policies do),
so one compiled program covers a batch of different values.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as F
from helpers import images, run_dali, seeds
from torchvision.transforms.v2.functional._geometry import _get_inverse_affine_matrix

import augjax
from augjax.errors import InputError, ParamError

H, W = 16, 20
TOL = {("bilinear", np.uint8): 1.0, ("bilinear", np.float32): 1e-5}


def tv(img: np.ndarray, fn, **kw) -> np.ndarray:
    """torchvision functional ``fn`` on one HWC NumPy image, back to HWC NumPy."""
    t = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))
    return fn(t, **kw).numpy().transpose(1, 2, 0)


def mode(interp: str):
    return F.InterpolationMode(interp)


#: The fill the tests pass: fractions of the value range, one configuration for both dtypes
#: (for uint8 not all whole levels: 63.75, 127.5, 191.25, which torchvision uses as is too).
FILL = (0.25, 0.5, 0.75)


def tv_fill(dtype, fill=FILL) -> list[float]:
    """torchvision's fill for augjax's ``fill``: in the image's scale, ``fill * 255`` for uint8."""
    return [v * 255.0 if dtype == np.uint8 else v for v in fill]


def check_close(ours: np.ndarray, ref: np.ndarray, interp: str, dtype, coords=None) -> int:
    """Asserts the tolerance; for nearest, mismatches are allowed only at half-pixel ties of the
    float64 source coordinates ``coords = (x, y)``. Returns the number of tie mismatches."""
    assert ours.dtype == ref.dtype
    if interp == "bilinear":
        diff = np.abs(ours.astype(np.float64) - ref.astype(np.float64)).max()
        assert diff <= TOL[(interp, dtype)], (interp, dtype, diff)
        return 0
    bad = (ours != ref).any(-1)
    if coords is None:
        assert not bad.any()
        return 0
    on_tie = np.zeros(bad.shape, bool)
    for c in coords:
        on_tie |= np.abs(c % 1.0 - 0.5) < 1e-4
    assert not (bad & ~on_tie).any(), "a nearest mismatch away from a half-pixel tie"
    return int(bad.sum())


def affine_coords(matrix, h: int = H, w: int = W):
    """float64 source pixel coordinates of torchvision's inverse affine ``matrix``."""
    xc = np.arange(w) - (w - 1) / 2
    yc = np.arange(h)[:, None] - (h - 1) / 2
    m = matrix
    return (m[0] * xc + m[1] * yc + m[2] + (w - 1) / 2,
            m[3] * xc + m[4] * yc + m[5] + (h - 1) / 2)


def check_identity(out: np.ndarray, x: np.ndarray, interp: str) -> None:
    """The neutral value leaves the image unchanged: exactly, except bilinear float32, where
    ``(j / (W/2) + 1) * W/2 - 0.5`` is ``j`` only to float32 rounding."""
    if interp == "nearest" or x.dtype == np.uint8:
        np.testing.assert_array_equal(out, x)
    else:
        np.testing.assert_allclose(out, x, atol=1e-6)


def kernel_batch(spec, images_, values, name, **params):
    """The op applied with an exact per-sample value for ``name`` (``op.apply``, the policy
    path)."""
    out = spec.apply(images_, params={name: jnp.asarray(values, jnp.float32)}, **params)
    return np.asarray(out)


# ---------------------------------------------------------------------------------------------
# The RandAugment primitives: traced values, against torchvision's _apply_op calls

ANGLES = [0.0, 17.3, -45.0, 90.0, 180.0, -123.4, 33.3, 270.0]
# 0.2, -0.04 and 0.12 put some source coordinates exactly on half-pixel ties.
SHEARS = [0.0, 0.1, -0.3, 0.3, 0.2, 0.5, -0.04, 0.12]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_rotate_matches_torchvision(interp, dtype):
    x = images(len(ANGLES), H, W, dtype=dtype, seed=1)
    fill = FILL
    out = kernel_batch(augjax.ops.rotate, x, ANGLES, "degrees", interpolation=interp, fill=fill)
    ties = 0
    for i, angle in enumerate(ANGLES):
        ref = tv(x[i], F.rotate, angle=angle, interpolation=mode(interp), fill=tv_fill(dtype))
        matrix = _get_inverse_affine_matrix([0.0, 0.0], -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
        ties += check_close(out[i], ref, interp, dtype, affine_coords(matrix))
    assert ties <= 0.01 * out[..., 0].size
    check_identity(out[0], x[0], interp)  # ANGLES[0] is the neutral value 0


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("axis", ["x", "y"])
def test_shear_matches_torchvision_apply_op(axis, interp, dtype):
    x = images(len(SHEARS), H, W, dtype=dtype, seed=2)
    fill = FILL
    spec = augjax.ops.shear_x if axis == "x" else augjax.ops.shear_y
    out = kernel_batch(spec, x, SHEARS, "shear", interpolation=interp, fill=fill)
    ties = 0
    for i, s in enumerate(SHEARS):
        angle = math.degrees(math.atan(s))
        shear = [angle, 0.0] if axis == "x" else [0.0, angle]
        ref = tv(x[i], F.affine, angle=0.0, translate=[0, 0], scale=1.0, shear=shear,
                 interpolation=mode(interp), fill=tv_fill(dtype), center=[0, 0])
        matrix = _get_inverse_affine_matrix([-W / 2, -H / 2], 0.0, [0.0, 0.0], 1.0, shear)
        ties += check_close(out[i], ref, interp, dtype, affine_coords(matrix))
    assert ties <= 0.01 * out[..., 0].size
    check_identity(out[0], x[0], interp)  # SHEARS[0] is the neutral value 0


@pytest.mark.parametrize("dtype,relative", [(np.uint8, True), (np.float32, True),
                                            (np.uint8, False)])
@pytest.mark.parametrize("axis", ["x", "y"])
def test_translate_matches_torchvision_apply_op(axis, relative, dtype):
    if relative:
        values = [0.0, 0.1, -0.3, 150 / 331, -150 / 331, 0.05, 0.5, -1.0]
    else:
        values = [0.0, 3.0, -5.0, 2.7, -2.7, 19.0, -30.0, 0.4]
    x = images(len(values), H, W, dtype=dtype, seed=3)
    spec = augjax.ops.translate_x if axis == "x" else augjax.ops.translate_y
    out = kernel_batch(spec, x, values, "translate", relative=relative, interpolation="nearest",
                       fill=FILL)
    side = W if axis == "x" else H
    for i, v in enumerate(values):
        pixels = int(v * side) if relative else int(v)  # torchvision: translate=[int(magnitude), 0]
        shift = [pixels, 0] if axis == "x" else [0, pixels]
        ref = tv(x[i], F.affine, angle=0.0, translate=shift, scale=1.0, shear=[0.0, 0.0],
                 interpolation=mode("nearest"), fill=tv_fill(dtype))
        check_close(out[i], ref, "nearest", dtype)
    check_identity(out[0], x[0], "nearest")  # values[0] is the neutral value 0


def test_translate_bilinear_is_a_whole_pixel_shift():
    x = images(1, H, W, dtype=np.float32, seed=4)
    out = augjax.ops.translate_x(x, key=jax.random.key(0), translate=(3.0, 3.0), relative=False,
                                 interpolation="bilinear", fill=None)
    expected = np.zeros_like(x)
    expected[:, :, 3:] = x[:, :, :-3]
    np.testing.assert_allclose(out, expected, atol=1e-6)


@pytest.mark.fast_tier("shear_x-shear--0.2")
@pytest.mark.parametrize("name,param,value", [
    ("rotate", "degrees", 21.0), ("shear_x", "shear", -0.2), ("translate_y", "translate", -0.25),
])
def test_public_path_pair_v_v_equals_number_v_and_the_traced_kernel(name, param, value):
    """A pair (v, v) gives exactly v; it equals the number v through the public op and the traced
    value a policy passes to the kernel (shear -0.2 has half-pixel ties, the most fragile case)."""
    x = images(3, H, W, seed=5)
    spec = getattr(augjax.ops, name)
    k = jax.random.key(1)
    a = spec(x, key=k, **{param: (value, value)})
    b = spec(x, key=k, **{param: value})
    others = {n: v for n, v in spec.bind().kwargs.items() if n != param}
    c = kernel_batch(spec, x, [value] * 3, param, **others)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_magnitude_declarations_match_torchvision_randaugment():
    space = T.RandAugment._AUGMENTATION_SPACE
    bins = 31
    table = {"shear_x": ("ShearX", "shear", 1.0), "shear_y": ("ShearY", "shear", 1.0),
             "translate_x": ("TranslateX", "translate", W), "translate_y": ("TranslateY",
                                                                             "translate", H),
             "rotate": ("Rotate", "degrees", 1.0)}
    for name, (tv_name, param, side) in table.items():
        p = getattr(augjax.ops, name).params[param]
        values, signed = space[tv_name]
        mags = values(bins, H, W).numpy()
        assert p.signed is signed is True
        assert p.neutral == 0.0 and p.kind == "float_or_pair"
        np.testing.assert_allclose(np.array(p.magnitude) * side, [mags[0], mags[-1]], rtol=1e-6)
        lo, hi = p.default
        assert lo == -hi and hi == p.magnitude[1]


def test_rotate_is_counter_clockwise():
    x = np.zeros((1, 9, 9, 1), np.uint8)
    x[0, 4, 8, 0] = 255  # a dot right of the centre
    out = np.asarray(augjax.ops.rotate(x, key=jax.random.key(0), degrees=90.0))
    assert out[0, 0, 4, 0] == 255 and out.sum() == 255  # now above the centre


def test_fill_none_is_zero_padding_like_functional_default():
    x = images(1, H, W, dtype=np.float32, seed=7)
    out = np.asarray(augjax.ops.rotate(x, key=jax.random.key(0), degrees=31.0,
                                       interpolation="bilinear", fill=None))[0]
    ref = tv(x[0], F.rotate, angle=31.0, interpolation=mode("bilinear"), fill=None)
    check_close(out, ref, "bilinear", np.float32)
    with_fill = np.asarray(augjax.ops.rotate(x, key=jax.random.key(0), degrees=31.0,
                                             interpolation="bilinear", fill=0.0))[0]
    assert np.abs(with_fill - out).max() > 1e-3  # torchvision's mask blending differs at borders


def test_scalar_fill_fills_every_channel():
    x = images(1, H, W, seed=8)
    out = np.asarray(augjax.ops.rotate(x, key=jax.random.key(0), degrees=45.0, fill=128 / 255))[0]
    ref = tv(x[0], F.rotate, angle=45.0, interpolation=mode("nearest"), fill=128)
    np.testing.assert_array_equal(out, ref)
    assert (out[0, 0] == 128).all()


@pytest.mark.fast_tier("translate_x-params2-nearest")
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("name,params", [
    ("rotate", dict(degrees=33.0)), ("shear_y", dict(shear=0.3)),
    ("translate_x", dict(translate=-0.3)),
    ("perspective", dict(p=1.0, distortion_scale=0.6)),
    ("affine", dict(degrees=20.0, translate=(0.2, 0.2), scale=(0.8, 1.2))),
])
def test_one_fill_config_serves_both_dtypes(name, params, interp):
    """``fill`` is a fraction of the range: the same call on uint8 images and on the same
    images as float32 (``x / 255``) gives the same picture, ``uint8 == round(float * 255)``
    (within 1 level for bilinear, where the uint8 path rounds a float32 value that can sit on
    .5), and the uncovered pixels hold ``round(fill * 255)`` / ``fill``."""
    fill = (0.2, 128 / 255, 0.8)  # 51, 128, 204 levels
    x8 = images(4, H, W, seed=12)
    xf = (x8 / 255.0).astype(np.float32)
    keys = jax.random.split(jax.random.key(5), 4)
    spec = getattr(augjax.ops, name)
    o8 = np.asarray(spec(x8, key=keys, interpolation=interp, fill=fill, **params))
    of = np.asarray(spec(xf, key=keys, interpolation=interp, fill=fill, **params))
    diff = np.abs(o8.astype(np.float64) - np.round(of.astype(np.float64) * 255.0))
    assert diff.max() <= (0 if interp == "nearest" else 1), diff.max()
    # A constant image: pixels untouched by the warp keep 200 / 200/255, the rest is the fill.
    c8 = np.full((4, H, W, 3), 200, np.uint8)
    out8 = np.asarray(spec(c8, key=keys, interpolation="nearest", fill=fill, **params))
    outf = np.asarray(spec((c8 / 255.0).astype(np.float32), key=keys, interpolation="nearest",
                           fill=fill, **params))
    filled = (out8 != 200).any(-1)
    assert filled.any(), "the warp uncovered no pixel; pick stronger parameters"
    np.testing.assert_array_equal(out8[filled], np.broadcast_to([51, 128, 204], (filled.sum(), 3)))
    np.testing.assert_allclose(outf[filled], np.broadcast_to(fill, (filled.sum(), 3)), atol=0)


def test_fill_is_checked_as_a_fraction_at_bind_time():
    for name in ("rotate", "affine", "shear_x", "shear_y", "translate_x", "translate_y",
                 "perspective"):
        spec = getattr(augjax.ops, name)
        assert spec.params["fill"].describe_range().endswith("in [0, 1] or None")
        assert "128/255" in spec.params["fill"].doc
        with pytest.raises(ParamError, match=rf"{name}: parameter 'fill' expects .* in \[0, 1\]"
                                             rf".*got 128"):
            spec.bind(fill=128)
        with pytest.raises(ParamError, match=rf"{name}: parameter 'fill'"):
            spec.bind(fill=(0.5, -0.1, 0.5))
        assert spec.bind(fill=(1.0, 0.0, 0.5)).kwargs["fill"] == (1.0, 0.0, 0.5)


# ---------------------------------------------------------------------------------------------
# affine


@pytest.mark.fast_tier("nearest-uint8", "bilinear-float32")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_affine_matches_torchvision_on_its_draws(interp, dtype):
    n = 6
    x = images(n, H, W, dtype=dtype, seed=9)
    fill = FILL
    cfg = dict(degrees=40.0, translate=(0.2, 0.3), scale=(0.7, 1.3),
               shear=(-20.0, 20.0, -10.0, 10.0))
    keys = jax.random.split(jax.random.key(2), n)
    out = np.asarray(augjax.ops.affine(x, key=keys, interpolation=interp, fill=fill, **cfg))
    p = jax.tree.map(np.asarray, augjax.ops.affine.sample(x, key=keys, **cfg))
    draws = zip(p["degrees"], p["translate"], p["scale"], p["shear"], strict=True)
    for i, (angle, (tx, ty), zoom, (sx, sy)) in enumerate(draws):
        assert -40.0 <= float(angle) <= 40.0 and 0.7 <= float(zoom) <= 1.3
        assert abs(int(tx)) <= round(0.2 * W) and abs(int(ty)) <= round(0.3 * H)
        assert float(tx).is_integer() and float(ty).is_integer()
        args = dict(angle=float(angle), translate=[int(tx), int(ty)], scale=float(zoom),
                    shear=[float(sx), float(sy)])
        ref = tv(x[i], F.affine, **args, interpolation=mode(interp), fill=tv_fill(dtype))
        matrix = _get_inverse_affine_matrix([0.0, 0.0], *args.values())
        check_close(out[i], ref, interp, dtype, affine_coords(matrix))


def test_affine_parameterisation_follows_random_affine():
    b = augjax.ops.affine.bind(degrees=10.0, shear=5.0).kwargs
    assert b["degrees"] == (-10.0, 10.0)  # RandomAffine(10): U[-10, 10]
    assert b["shear"] == (-5.0, 5.0, 0.0, 0.0)  # a number: x shear only
    assert augjax.ops.affine.bind(shear=(1.0, 2.0)).kwargs["shear"] == (1.0, 2.0, 0.0, 0.0)
    assert augjax.ops.affine.bind(degrees=(5.0, 6.0)).kwargs["degrees"] == (5.0, 6.0)
    x = images(2, H, W, seed=10)
    # The defaults (no rotation, shift, zoom or shear) are the identity.
    np.testing.assert_array_equal(augjax.ops.affine(x, key=jax.random.key(0)), x)


# ---------------------------------------------------------------------------------------------
# perspective


def start_points(h: int, w: int) -> list[list[int]]:
    return [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]


def exact_source_coords(start, end):
    """float64 source coordinates of each output pixel (independent float64 solve)."""
    a, b = [], []
    for (x1, y1), (x2, y2) in zip(end, start, strict=True):
        a.append([x1, y1, 1, 0, 0, 0, -x2 * x1, -x2 * y1])
        b.append(x2)
        a.append([0, 0, 0, x1, y1, 1, -y2 * x1, -y2 * y1])
        b.append(y2)
    c = np.linalg.solve(np.array(a, float), np.array(b, float))
    xs, ys = np.arange(W) + 0.5, np.arange(H)[:, None] + 0.5
    den = c[6] * xs + c[7] * ys + 1
    return (c[0] * xs + c[1] * ys + c[2]) / den - 0.5, (c[3] * xs + c[4] * ys + c[5]) / den - 0.5


@pytest.mark.fast_tier("nearest-uint8", "bilinear-float32")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_perspective_matches_torchvision_on_its_draws(interp, dtype):
    n = 8
    x = images(n, H, W, dtype=dtype, seed=11)
    fill = FILL
    keys = jax.random.split(jax.random.key(3), n)
    out = np.asarray(augjax.ops.perspective(x, key=keys, p=1.0, distortion_scale=0.6,
                                            interpolation=interp, fill=fill))
    params = augjax.ops.perspective.sample(x, key=keys, p=1.0, distortion_scale=0.6)
    assert np.asarray(params["applied"]).all()
    ends = np.asarray(params["endpoints"]).astype(int).tolist()
    ties = 0
    for i, end in enumerate(ends):
        start = start_points(H, W)
        ref = tv(x[i], F.perspective, startpoints=start, endpoints=end,
                 interpolation=mode(interp), fill=tv_fill(dtype))
        ties += check_close(out[i], ref, interp, dtype, exact_source_coords(start, end))
    assert ties <= 0.01 * n * H * W


def test_perspective_corner_draws_follow_random_perspective_bounds():
    keys = jax.random.split(jax.random.key(4), 400)
    h, w, d = 16, 20, 0.5
    params = augjax.ops.perspective.sample(images(400, h, w), key=keys, distortion_scale=d)
    end = np.asarray(params["endpoints"])
    assert end.shape == (400, 4, 2) and (end == np.round(end)).all()
    bh, bw = int(d * (h // 2)) + 1, int(d * (w // 2)) + 1
    lows = np.array([[0, 0], [w - bw, 0], [w - bw, h - bh], [0, h - bh]])
    highs = np.array([[bw, bh], [w, bh], [w, h], [bw, h]]) - 1
    np.testing.assert_array_equal(end.min(0), lows)  # randint(low, high): every value reached
    np.testing.assert_array_equal(end.max(0), highs)


def test_perspective_probability_per_sample():
    x = images(200, 4, 4, dtype=np.float32, seed=12)
    out = np.asarray(augjax.ops.perspective(x, key=jax.random.key(5), p=0.3, distortion_scale=1.0))
    changed = (out != x).any(axis=(1, 2, 3))
    assert abs(changed.mean() - 0.3) < 4 * math.sqrt(0.3 * 0.7 / 200)


# ---------------------------------------------------------------------------------------------
# rot90


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
def test_rot90_fixed_k_matches_torch_rot90(k):
    x = images(2, 6, 9, seed=13)
    out = np.asarray(augjax.ops.rot90(x, key=jax.random.key(0), k=k))
    for i in range(2):
        np.testing.assert_array_equal(out[i], tv(x[i], torch.rot90, k=k, dims=(-2, -1)))
    assert out.shape == ((2, 9, 6, 3) if k % 2 else (2, 6, 9, 3))


def test_rot90_odd_k_chw_swaps_height_and_width():
    x = images(2, 6, 9, dtype=np.float32, seed=14)
    chw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    out = np.asarray(augjax.ops.rot90(chw, key=jax.random.key(0), k=1, layout="CHW"))
    np.testing.assert_array_equal(out, torch.rot90(torch.from_numpy(chw), 1, (-2, -1)).numpy())


def test_rot90_random_k_is_uniform_over_quarter_turns():
    n = 800
    x = np.broadcast_to(np.arange(4, dtype=np.uint8).reshape(1, 2, 2, 1), (n, 2, 2, 1)).copy()
    out = np.asarray(augjax.ops.rot90(x, key=jax.random.key(6)))
    turns = [np.rot90(x[0], t) for t in range(4)]
    which = np.array([[np.array_equal(o, t) for t in turns].index(True) for o in out])
    freq = np.bincount(which, minlength=4) / n
    np.testing.assert_allclose(freq, 0.25, atol=4 * math.sqrt(0.25 * 0.75 / n))


def test_rot90_random_k_needs_square_images():
    with pytest.raises(InputError, match="rot90: k=None .* square .* height 6, width 9"):
        augjax.ops.rot90(images(2, 6, 9), key=jax.random.key(0))


# ---------------------------------------------------------------------------------------------
# Layouts, DALI, randomness, errors


# One configuration per op, on one batch shape, so that the array programs compiled for one test
# are reused by the next (augjax caches them per op, parameters and layout).
CHAIN = [("rotate", dict(interpolation="bilinear")),
         ("affine", dict(degrees=30.0, translate=(0.1, 0.1), shear=10.0)),
         ("shear_x", {}), ("shear_y", dict(interpolation="bilinear")), ("translate_x", {}),
         ("translate_y", {}), ("perspective", dict(p=0.7)), ("rot90", {})]


def batch(dtype=np.uint8, layout="HWC", seed=16):
    x = images(4, 16, 16, dtype=dtype, seed=seed)  # square: rot90 with a random k
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if layout == "CHW" else x


@pytest.mark.slow
@pytest.mark.parametrize("dtype,layout,ops", [
    (np.uint8, "HWC", CHAIN),
    # float32 CHW: one op per sampling code path (the shears and shifts share rotate's warp),
    # to keep the compile time down.
    (np.float32, "CHW", [CHAIN[i] for i in (0, 1, 6, 7)]),
])
def test_dali_path_equals_array_path(dtype, layout, ops):
    x, s = batch(dtype, layout), seeds(4, seed=3)

    def build(imgs, sd):
        return tuple(getattr(augjax.ops, n)(imgs, seeds=sd, layout=layout, **p) for n, p in ops)

    (outs,) = run_dali(build, x, s, layouts=[layout, None])
    keys = augjax.keys_from_seeds(s)
    for (name, params), got in zip(ops, outs, strict=True):
        want = getattr(augjax.ops, name)(x, key=keys, layout=layout, **params)
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert got.dtype == x.dtype and got.shape == x.shape


@pytest.mark.gpu
def test_dali_gpu_path_equals_array_path():
    x, s = batch(), seeds(4, seed=4)
    (outs,) = run_dali(lambda im, sd: tuple(getattr(augjax.ops, n)(im, seeds=sd, **p)
                                            for n, p in CHAIN), x, s, layouts=["HWC", None],
                       device="gpu")
    keys = augjax.keys_from_seeds(s)
    for (name, params), got in zip(CHAIN, outs, strict=True):
        np.testing.assert_array_equal(got, getattr(augjax.ops, name)(x, key=keys, **params),
                                      err_msg=name)


@pytest.mark.fast_tier("rot90-params7")
@pytest.mark.parametrize("name,params", CHAIN)
def test_chw_equals_hwc_and_keys_reproduce(name, params):
    spec = getattr(augjax.ops, name)
    x = batch(np.float32)
    k = jax.random.key(8)
    a = np.asarray(spec(x, key=k, **params))
    b = np.asarray(spec(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), key=k, layout="CHW",
                        **params))
    np.testing.assert_array_equal(a, b.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(a, spec(x, key=jax.random.key(8), **params))
    assert not np.array_equal(a, spec(x, key=jax.random.key(9), **params))


@pytest.mark.parametrize("name,params,match", [
    ("rotate", dict(interpolation="bicubic"), "rotate: parameter 'interpolation'"),
    ("rotate", dict(degrees="30"), "rotate: parameter 'degrees'"),
    ("shear_x", dict(shear=(0.3, -0.3)), "shear_x: parameter 'shear' .*low > high"),
    ("affine", dict(degrees=-5.0), "affine: parameter 'degrees' .* non-negative"),
    ("affine", dict(shear=(1.0, 2.0, 3.0)), "affine: parameter 'shear' .* 1, 2 or 4"),
    ("affine", dict(translate=(0.5, 1.5)), "affine: parameter 'translate'"),
    ("affine", dict(scale=(0.0, 1.0)), "affine: parameter 'scale' .*\\(0, inf\\).*must be > 0"),
    ("perspective", dict(distortion_scale=1.5), "perspective: parameter 'distortion_scale'"),
    ("rot90", dict(k=1.5), "rot90: parameter 'k'"),
    ("translate_x", dict(relative="yes"), "translate_x: parameter 'relative'"),
])
def test_bad_params_raise_param_error(name, params, match):
    with pytest.raises(ParamError, match=match):
        getattr(augjax.ops, name)(images(1, 8, 8), key=jax.random.key(0), **params)


def test_bad_fill_raises_input_error():
    k = jax.random.key(0)
    with pytest.raises(InputError, match=r"rotate: parameter 'fill' expects one value or one per "
                                         r"channel \(3\), got 2 values"):
        augjax.ops.rotate(images(1, 8, 8), key=k, fill=(0.1, 0.2))
    for dtype in (np.uint8, np.float32):  # uint8 levels by mistake: rejected for both dtypes
        with pytest.raises(ParamError, match=r"shear_x: parameter 'fill' expects .*\[0, 1\]"):
            augjax.ops.shear_x(images(1, 8, 8, dtype=dtype), key=k, fill=128)
