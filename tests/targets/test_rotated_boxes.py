"""Rotated boxes (``boxes_format="xywhr" / "cxcywhr" / "xyxyxyxy"``) against torchvision v2.

Every op with a matrix moves them as torchvision 0.29's rotated-box kernels do (same params,
sample by sample: corners through the matrix, the parallelogram rectified, torchvision's
default ``"soft"`` clamp; resized crops, zoom-out and scale jitter in one stage, as
torchvision's kernels with their in-between clamps off, and flips clamped, both documented);
``augjax.convert_boxes`` equals ``convert_bounding_box_format``; the validity rule is checked
against an independent area (Sutherland-Hodgman clipping) on torchvision's moved boxes; properties: a rotation by ``a`` adds ``a`` to the angle (mod 360),
flips and rotations keep areas, a flip twice is the identity.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

import augjax  # noqa: E402
from augjax import InputError, Sanitize, ops  # noqa: E402
from helpers import run_dali, seeds  # noqa: E402

N, H, W, M = 6, 24, 32, 7
ROTATED = ("xywhr", "cxcywhr", "xyxyxyxy")
TOL = 1e-2  # pixels: float32 vs float64; seen 4e-3 where the clamp cuts near-vertical sides


def _boxes(seed: int, inside: bool = False) -> np.ndarray:
    """(N, M, 5) CXCYWHR boxes: random angles, some reaching out of the H x W image."""
    rng = np.random.default_rng(seed)
    lo, hi = (9.0, 0.0) if inside else (-3.0, 3.0)
    cx = rng.uniform(lo, W - lo + hi, (N, M))
    cy = rng.uniform(min(lo, 8.0), H - min(lo, 8.0) + hi, (N, M))
    wh = rng.uniform(1.5, 7.0 if inside else 12.0, (N, M, 2))
    r = rng.uniform(-180.0, 180.0, (N, M))
    return np.concatenate([np.stack([cx, cy], -1), wh, r[..., None]], -1).astype(np.float32)


def _images(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (N, H, W, 3), dtype=np.uint8)


def _corners(b: np.ndarray, fmt: str) -> np.ndarray:
    return F.convert_bounding_box_format(torch.from_numpy(np.asarray(b, np.float64)),
                                         old_format=fmt.upper(),
                                         new_format="XYXYXYXY").numpy()


def _clip(poly: list, inside, cross) -> list:
    out = []
    for i, cur in enumerate(poly):
        prev = poly[i - 1]
        if inside(cur):
            if not inside(prev):
                out.append(cross(prev, cur))
            out.append(cur)
        elif inside(prev):
            out.append(cross(prev, cur))
    return out


def _inside_area(c: np.ndarray, h: int, w: int) -> np.ndarray:
    """Each quadrilateral's (corners (K, 8)) area inside the image: Sutherland-Hodgman
    clipping against the image's 4 sides, then the shoelace formula (float64)."""
    def at_x(v):
        return lambda p, q: (v, p[1] + (q[1] - p[1]) * (v - p[0]) / (q[0] - p[0]))

    def at_y(v):
        return lambda p, q: (p[0] + (q[0] - p[0]) * (v - p[1]) / (q[1] - p[1]), v)

    sides = [(lambda p: p[0] >= 0, at_x(0.0)), (lambda p: p[0] <= w, at_x(float(w))),
             (lambda p: p[1] >= 0, at_y(0.0)), (lambda p: p[1] <= h, at_y(float(h)))]
    out = []
    for q in np.asarray(c, np.float64).reshape(-1, 4, 2):
        poly = [tuple(v) for v in q]
        for inside, cross in sides:
            poly = _clip(poly, inside, cross) if poly else poly
        xy = np.array(poly).reshape(-1, 2)
        out.append(abs(np.sum(xy[:, 0] * np.roll(xy[:, 1], -1)
                              - np.roll(xy[:, 0], -1) * xy[:, 1])) / 2)
    return np.array(out)


def _valid(c: np.ndarray, h: int, w: int, min_size: float = 1.0,
           min_area: float = 1.0) -> np.ndarray:
    """The documented rule, recomputed: both sides >= min_size, area inside >= min_area."""
    bw = np.hypot(c[:, 2] - c[:, 0], c[:, 3] - c[:, 1])
    bh = np.hypot(c[:, 4] - c[:, 2], c[:, 5] - c[:, 3])
    return (bw >= min_size) & (bh >= min_size) & (_inside_area(c, h, w) >= min_area)


def _compare(out, refs, fmt="cxcywhr"):
    """augjax's boxes against torchvision's (BoundingBoxes per sample, in ``fmt``): corners
    within TOL, angles mod 360, validity by the rule on torchvision's boxes."""
    for i, ref in enumerate(refs):
        got = np.asarray(out["boxes"][i], np.float64)
        want = ref.as_subclass(torch.Tensor).numpy()
        gc, wc = _corners(got, fmt), _corners(want, fmt)
        np.testing.assert_allclose(gc, wc, rtol=0, atol=TOL, err_msg=f"sample {i}")
        if fmt != "xyxyxyxy":
            np.testing.assert_allclose(got[:, :4], want[:, :4], rtol=0, atol=TOL)
            turn = (got[:, 4] - want[:, 4] + 180.0) % 360.0 - 180.0
            np.testing.assert_allclose(turn, 0.0, atol=1e-2)
        np.testing.assert_array_equal(np.asarray(out["boxes_valid"][i]),
                                      _valid(wc, *ref.canvas_size), err_msg=f"sample {i}")


def _tv_boxes(b: np.ndarray, fmt: str = "cxcywhr", size=(H, W)):
    return tv_tensors.BoundingBoxes(torch.from_numpy(np.asarray(b, np.float64)),
                                    format=fmt.upper(), canvas_size=size)


def _p(params, i):
    return {k: np.asarray(v)[i] for k, v in params.items()}


# -- every geometric op against torchvision ------------------------------------------------------
def _tv_flip(p, tb):
    if p["horizontal"]:
        tb = F.horizontal_flip(tb)
    return F.vertical_flip(tb) if p["vertical"] else tb


def _tv_shear(axis):
    def call(p, tb):
        deg = math.degrees(math.atan(float(p["shear"])))
        return F.affine(tb, angle=0.0, translate=[0.0, 0.0], scale=1.0,
                        shear=[deg, 0.0] if axis == "x" else [0.0, deg], center=[0, 0])
    return call


def _tv_translate(axis):
    def call(p, tb):
        px = int(float(p["translate"]) * (W if axis == "x" else H))
        return F.affine(tb, angle=0.0, translate=[px, 0] if axis == "x" else [0, px],
                        scale=1.0, shear=[0.0, 0.0])
    return call


def _tv_crop(p, tb, size):
    top, left = (int(v) for v in p["offset"])
    return F.crop(tb, top=top, left=left, height=size[0], width=size[1])


def _tv_zoom_out(p, tb):
    top, left, ch, cw = (int(v) for v in p["canvas"])
    return F.resize(F.pad(tb, [left, top, cw - W - left, ch - H - top]), [40, 48])


def _one_clamp(call):
    """torchvision's kernels with their clamps off, then one soft clamp: augjax moves boxes
    through a resized crop (a zoom out) in one stage, where torchvision also clamps at the crop
    (the pad) before the resize; boxes the crop window cuts differ (documented)."""
    def run(p, tb):
        free = tv_tensors.BoundingBoxes(tb.as_subclass(torch.Tensor), format=tb.format,
                                        canvas_size=tb.canvas_size, clamping_mode=None)
        return F.clamp_bounding_boxes(call(p, free), clamping_mode="soft")
    return run


def _tv_scale_jitter(p, tb):
    """torchvision's ScaleJitter (a resize) + references/detection FixedSizeCrop (24 x 24)."""
    nh, nw = (int(v) for v in p["resized"])
    top, left = (int(v) for v in p["offset"])
    tb = F.resize(tb, [nh, nw])
    ch, cw = min(nh, 24), min(nw, 24)
    if (ch, cw) != (nh, nw):
        tb = F.crop(tb, top, left, ch, cw)
    return F.pad(tb, [0, 0, 24 - cw, 24 - ch])


START = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
CASES = {
    # torchvision's flips do not clamp, augjax clamps after every op (boxes reach out here)
    "flip": (ops.flip.bind(vertical=True, p=0.5),
             lambda p, tb: F.clamp_bounding_boxes(_tv_flip(p, tb))),
    "rotate": (ops.rotate.bind(degrees=(-60.0, 60.0)),
               lambda p, tb: F.rotate(tb, angle=float(p["degrees"]))),
    "affine": (ops.affine.bind(degrees=40.0, translate=(0.2, 0.2), scale=(0.7, 1.3),
                               shear=(-20.0, 20.0, -10.0, 10.0)),
               lambda p, tb: F.affine(tb, angle=float(p["degrees"]),
                                      translate=[float(v) for v in p["translate"]],
                                      scale=float(p["scale"]),
                                      shear=[float(v) for v in p["shear"]])),
    "shear_x": (ops.shear_x.bind(shear=(-0.3, 0.3)), _tv_shear("x")),
    "shear_y": (ops.shear_y.bind(shear=(-0.3, 0.3)), _tv_shear("y")),
    "translate_x": (ops.translate_x.bind(translate=(-0.4, 0.4)), _tv_translate("x")),
    "translate_y": (ops.translate_y.bind(translate=(-0.4, 0.4)), _tv_translate("y")),
    "perspective": (ops.perspective.bind(distortion_scale=0.5, p=1.0),
                    lambda p, tb: F.perspective(tb, startpoints=START,
                                                endpoints=p["endpoints"].astype(int).tolist())),
    "random_resized_crop": (
        ops.random_resized_crop.bind(size=(20, 28), scale=(0.3, 1.0)),
        _one_clamp(lambda p, tb: F.resized_crop(tb, *(int(v) for v in p["box"]),
                                                size=[20, 28]))),
    "resize": (ops.resize.bind(size=(40, 20)), lambda p, tb: F.resize(tb, [40, 20])),
    "random_crop": (ops.random_crop.bind(size=(26, 34), padding=4),
                    lambda p, tb: _tv_crop(p, tb, (26, 34))),
    "center_crop": (ops.center_crop.bind(size=(16, 20)),
                    lambda p, tb: F.center_crop(tb, [16, 20])),
    "center_crop_pads": (ops.center_crop.bind(size=(30, 40)),
                         lambda p, tb: F.center_crop(tb, [30, 40])),
    "random_zoom_out": (ops.random_zoom_out.bind(size=(40, 48), p=1.0),
                        _one_clamp(_tv_zoom_out)),
    "scale_jitter": (ops.scale_jitter.bind(target_size=(24, 24), scale_range=(0.3, 2.0),
                                          size=(24, 24)),
                     _one_clamp(_tv_scale_jitter)),
    "rot90": (ops.rot90.bind(k=1),
              lambda p, tb: F.rotate(tb, angle=90.0, expand=True)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_geometric_op_moves_rotated_boxes_as_torchvision(case):
    op, tv_call = CASES[case]
    x, b = _images(1), _boxes(sorted(CASES).index(case))
    params = op.sample(x, key=jax.random.key(3))
    out = op.apply(x, params=params, boxes=b, boxes_format="cxcywhr")
    called = op(x, key=jax.random.key(3), boxes=b, boxes_format="cxcywhr")
    for name in out:  # the call equals apply(sample)
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(called[name]))
    refs = [tv_call(_p(params, i), _tv_boxes(b[i])) for i in range(N)]
    assert tuple(refs[0].canvas_size) == out["images"].shape[1:3]
    _compare(out, refs)
    assert np.asarray(out["boxes_valid"]).any()


@pytest.mark.fast_tier("cxcywhr")
@pytest.mark.parametrize("fmt", ROTATED)
def test_each_rotated_format_against_torchvision(fmt):
    """affine on boxes given in each rotated format equals torchvision's F.affine on
    BoundingBoxes of that format, in that format; the same boxes in another format give the
    same boxes converted."""
    x, c = _images(2), _boxes(2)
    given = augjax.convert_boxes(c, "cxcywhr", fmt)
    op = CASES["affine"][0]
    params = op.sample(x, key=jax.random.key(4))
    out = op.apply(x, params=params, boxes=given, boxes_format=fmt.upper())
    assert out["boxes"].shape == given.shape and out["boxes"].dtype == np.float32
    refs = [CASES["affine"][1](_p(params, i), _tv_boxes(given[i], fmt)) for i in range(N)]
    _compare(out, refs, fmt)
    base = op.apply(x, params=params, boxes=c, boxes_format="cxcywhr")
    np.testing.assert_allclose(augjax.convert_boxes(np.asarray(out["boxes"]), fmt, "xyxyxyxy"),
                               augjax.convert_boxes(np.asarray(base["boxes"]), "cxcywhr",
                                                    "xyxyxyxy"), atol=1e-3)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]),
                                  np.asarray(base["boxes_valid"]))


@pytest.mark.slow
def test_a_chain_moves_rotated_boxes_op_by_op():
    """compose(flip, rotate, random_resized_crop) equals its ops applied in turn (each op's
    own clamp and validity, as torchvision's transforms in turn)."""
    from augjax.chain import compose

    x, b = _images(5), _boxes(5)
    chain = compose(ops.flip.bind(p=0.5), CASES["rotate"][0], CASES["random_resized_crop"][0])
    key = jax.random.key(7)
    params = chain.sample(x, key=key)
    out = chain(x, key=key, boxes=b, boxes_format="cxcywhr")
    y, bb, valid = x, b, None
    for step, p in zip((ops.flip.bind(p=0.5), CASES["rotate"][0],
                        CASES["random_resized_crop"][0]), params):
        r = step.apply(y, params=p, boxes=bb, boxes_format="cxcywhr",
                       **({} if valid is None else {"boxes_valid": valid}))
        y, bb, valid = r["images"], np.asarray(r["boxes"]), np.asarray(r["boxes_valid"])
    # The chain multiplies the ops' matrices once, the ops apply theirs in turn: the same
    # boxes up to float32 rounding (1.3e-4 px at 74 px, ~17 ulp, with XLA's own dot and
    # reduce, augjax.kernels.portable), far below a pixel.
    np.testing.assert_allclose(np.asarray(out["boxes"]), bb, rtol=4e-6, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(out["boxes_valid"]), valid)


# -- the converter -------------------------------------------------------------------------------
@pytest.mark.parametrize("src", ROTATED)
@pytest.mark.parametrize("dst", ROTATED)
def test_convert_boxes_matches_torchvision(src, dst):
    c = _boxes(6).reshape(-1, 5).astype(np.float64)
    given = F.convert_bounding_box_format(torch.from_numpy(c), old_format="CXCYWHR",
                                          new_format=src.upper())
    ref = F.convert_bounding_box_format(given, old_format=src.upper(), new_format=dst.upper())
    got = augjax.convert_boxes(given.numpy(), tv_tensors.BoundingBoxFormat[src.upper()], dst)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, ref.numpy(), rtol=0, atol=1e-9)
    back = augjax.convert_boxes(got, dst, src)  # round trip (angles in (-180, 180])
    np.testing.assert_allclose(_corners(back, src), _corners(given.numpy(), src), atol=1e-9)
    jitted = jax.jit(lambda v: augjax.convert_boxes(v, src, dst))(
        jax.numpy.asarray(given.numpy(), jax.numpy.float32))
    np.testing.assert_allclose(np.asarray(jitted), ref.numpy(), atol=2e-4)


# -- properties ----------------------------------------------------------------------------------
def test_a_rotation_adds_its_angle_and_keeps_sizes():
    x, b = _images(7), _boxes(7, inside=True)
    op = ops.rotate.bind(degrees=(-180.0, 180.0))
    params = op.sample(x, key=jax.random.key(8))
    out = np.asarray(op.apply(x, params=params, boxes=b, boxes_format="cxcywhr")["boxes"])
    a = np.asarray(params["degrees"])[:, None]
    turn = (out[..., 4] - b[..., 4] - a + 180.0) % 360.0 - 180.0
    np.testing.assert_allclose(turn, 0.0, atol=1e-3)
    np.testing.assert_allclose(out[..., 2:4], b[..., 2:4], rtol=1e-5)  # torchvision: same
    rad = np.deg2rad(a)  # the centre turns about the image's centre, counter-clockwise
    dx, dy = b[..., 0] - W / 2, b[..., 1] - H / 2
    np.testing.assert_allclose(out[..., 0], W / 2 + dx * np.cos(rad) + dy * np.sin(rad),
                               atol=1e-3)
    np.testing.assert_allclose(out[..., 1], H / 2 - dx * np.sin(rad) + dy * np.cos(rad),
                               atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("horizontal,vertical", [(True, False), (False, True), (True, True)])
def test_flips_keep_areas_and_twice_is_the_identity(horizontal, vertical):
    x, b = _images(8), _boxes(8, inside=True)
    flags = {"horizontal": np.full(N, horizontal), "vertical": np.full(N, vertical)}
    flip = ops.flip.bind(horizontal=True, vertical=True)
    once = flip.apply(x, params=flags, boxes=b, boxes_format="xywhr")["boxes"]
    twice = flip.apply(x, params=flags, boxes=np.asarray(once), boxes_format="xywhr")
    once = np.asarray(once)
    np.testing.assert_allclose(once[..., 2] * once[..., 3], b[..., 2] * b[..., 3], rtol=1e-5)
    want = -b[..., 4] if not vertical else 180.0 - b[..., 4]
    want = want if not (horizontal and vertical) else b[..., 4] + 180.0
    np.testing.assert_allclose((once[..., 4] - want + 180.0) % 360.0 - 180.0, 0.0, atol=1e-3)
    np.testing.assert_allclose(_corners(np.asarray(twice["boxes"]).reshape(-1, 5), "xywhr"),
                               _corners(b.reshape(-1, 5), "xywhr"), atol=1e-4)
    assert np.asarray(twice["boxes_valid"]).all()


# -- validity ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sanitize_rules_on_rotated_boxes():
    """A crop: min_size / min_area by the rule (sides, area inside), min_visibility by the area
    left inside over the area (both by clipping), and valid_first's order."""
    x, b = _images(9), _boxes(9)
    op = ops.random_crop.bind(size=(14, 20))
    params = op.sample(x, key=jax.random.key(1))
    rule = Sanitize(min_size=2.0, min_area=6.0, min_visibility=0.6, valid_first=True)
    out = op.apply(x, params=params, boxes=b, boxes_format="cxcywhr", sanitize=rule)
    plain = op.apply(x, params=params, boxes=b, boxes_format="cxcywhr",
                     sanitize=dict(min_size=2.0, min_area=6.0, min_visibility=0.6))
    for i in range(N):
        moved = _corners(b[i], "cxcywhr") - np.tile(np.asarray(params["offset"][i])[::-1], 4)
        clamped = _corners(_tv_crop(_p(params, i), _tv_boxes(b[i]), (14, 20)).numpy(),
                           "cxcywhr")
        area = np.hypot(*(moved[:, 2:4] - moved[:, :2]).T) * np.hypot(
            *(moved[:, 4:6] - moved[:, 2:4]).T)
        seen = _inside_area(moved, 14, 20) / area
        want = _valid(clamped, 14, 20, 2.0, 6.0) & (seen >= 0.6 - 1e-6)
        np.testing.assert_array_equal(np.asarray(plain["boxes_valid"][i]), want)
        count = int(out["boxes_count"][i])
        assert count == want.sum()
        index = np.asarray(out["boxes_index"][i])
        np.testing.assert_array_equal(np.asarray(out["boxes"][i]),
                                      np.asarray(plain["boxes"][i])[index])
    kept = int(np.asarray(out["boxes_count"]).sum())
    assert 0 < kept < N * M


def test_area_inside_the_image_equals_clipping():
    """The rule's area inside the image (Green's theorem on clipped edges) equals
    Sutherland-Hodgman clipping on random rectangles, in both corner orders, in and out."""
    from augjax._runtime.targets.rotated import inside_area

    c = _corners(np.concatenate([_boxes(11), _boxes(12)]).reshape(-1, 5), "cxcywhr")
    c = np.concatenate([c, c.reshape(-1, 4, 2)[:, ::-1].reshape(-1, 8)])  # both orientations
    got = np.asarray(inside_area(jax.numpy.asarray(c, jax.numpy.float32), H, W))
    want = _inside_area(c, H, W)
    np.testing.assert_allclose(got, want, atol=2e-3)
    assert (want == 0).any() and (want > 0).any()


def test_iou_crop_reads_pixel_xyxy_in_any_format_and_refuses_rotated_boxes():
    """random_iou_crop's sampler reads the boxes: given XYWH it draws the crops it draws for
    the same boxes in XYXY (it read XYWH as XYXY before); rotated boxes are refused."""
    rng = np.random.default_rng(10)
    x = rng.integers(0, 256, (4, 40, 50, 3), dtype=np.uint8)
    b = np.array([[[5, 5, 20, 30], [22, 3, 45, 25]]] * 4, np.float32)
    op = ops.random_iou_crop.bind(size=32)
    key = jax.random.key(3)
    ref = op.sample(x, key=key, boxes=b)
    got = op.sample(x, key=key, boxes=augjax.convert_boxes(b, "xyxy", "xywh"),
                    boxes_format="xywh")
    np.testing.assert_array_equal(np.asarray(got["box"]), np.asarray(ref["box"]))
    rot = np.concatenate([augjax.convert_boxes(b, "xyxy", "cxcywh"), np.zeros((4, 2, 1),
                                                                              np.float32)], -1)
    with pytest.raises(InputError) as err:
        op(x, key=key, boxes=rot, boxes_format="cxcywhr")
    assert err.value.op == "random_iou_crop" and err.value.argument == "boxes_format"


@pytest.mark.slow
def test_clips_take_rotated_boxes():
    """Per-frame rotated boxes of clips (N, T, M, 5) equal the batch call frame by frame (a
    flip that always flips)."""
    x = augjax.Clips(np.stack([_images(15)] * 2, axis=1))  # (N, T, H, W, C)
    b = np.stack([_boxes(15), _boxes(16)], 1)
    op = ops.flip.bind(p=1.0)
    out = op(x, key=jax.random.key(0), boxes=b, boxes_format="cxcywhr")
    assert out["boxes"].shape == b.shape and out["boxes_valid"].shape == b.shape[:3]
    for t in range(2):
        ref = op(x.array[:, t], key=jax.random.key(0), boxes=b[:, t], boxes_format="cxcywhr")
        for name in ("boxes", "boxes_valid"):
            np.testing.assert_array_equal(np.asarray(out[name][:, t]), np.asarray(ref[name]))


# -- errors --------------------------------------------------------------------------------------
X, B = _images(12), _boxes(12)


@pytest.mark.parametrize("kwargs,argument,text", [
    (dict(boxes=B[..., :4], boxes_format="cxcywhr"), "boxes",
     "(N, M, 5) CXCYWHR (boxes_format='cxcywhr') with N = 6, got float32 (6, 7, 4)"),
    (dict(boxes=B, boxes_format="xyxyxyxy"), "boxes", "(N, M, 8) XYXYXYXY"),
    (dict(boxes=B, boxes_format="xyxy"), "boxes", "(N, M, 4) XYXY"),
    (dict(boxes=B, boxes_format="cxcywhrn"), "boxes_format", "in pixels"),
    (dict(boxes=B, boxes_format="xywhr", boxes_normalized=True), "boxes_normalized",
     "in pixels"),
    (dict(boxes=B * [1, 1, -1, 1, 1], boxes_format="cxcywhr"), "boxes",
     "CXCYWHR boxes (width and height >= 0)"),
    (dict(boxes=B, boxes_format="cxcywha"), "boxes_format", "xywhr, cxcywhr, xyxyxyxy"),
])
def test_bad_rotated_boxes_raise_naming_the_argument(kwargs, argument, text):
    with pytest.raises(InputError) as err:
        ops.rotate(X, key=jax.random.key(0), **kwargs)
    assert err.value.argument == argument and err.value.op == "rotate"
    assert text in str(err.value)


@pytest.mark.parametrize("call,argument,text", [
    (lambda: augjax.convert_boxes(B, "cxcywhr", "xyxy"), "to", "unrotated boxes do not"),
    (lambda: augjax.convert_boxes(B[..., :4], "xyxy", "xywhr"), "to", "an unrotated format"),
    (lambda: augjax.convert_boxes(B[..., :4], "cxcywhr", "xywhr"), "boxes",
     "shape (..., 5) (cxcywhr), got float32 (6, 7, 4)"),
    (lambda: augjax.convert_boxes(B, "xywhrn", "cxcywhr", size=(H, W)), "from_", "in pixels"),
])
def test_convert_boxes_errors(call, argument, text):
    with pytest.raises(InputError) as err:
        call()
    assert err.value.argument == argument and err.value.op == "convert_boxes"
    assert text in str(err.value)


# -- DALI ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_dali_cpu_pipeline_equals_the_arrays_path():
    pytest.importorskip("nvidia.dali")
    x, b = _images(13), _boxes(13)
    s = seeds(N, seed=5)
    op = CASES["affine"][0]
    names = ("images", "boxes", "boxes_valid")

    def build(im, bx, sd):
        out = op(im, boxes=bx, seeds=sd, boxes_format="cxcywhr")
        return tuple(out[name] for name in names)

    got, = run_dali(build, x, b, s, layouts=["HWC", None, None])
    ref = op(x, key=augjax.keys_from_seeds(s), boxes=b, boxes_format="cxcywhr")
    for name, value in zip(names, got):
        np.testing.assert_array_equal(np.asarray(value), np.asarray(ref[name]), err_msg=name)
    assert 0 < np.asarray(ref["boxes_valid"]).sum() < N * M
