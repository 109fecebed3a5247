"""The kit's geometry check: for an op that moves pixels, its matrix and its targets (masks,
boxes, keypoints) go where the pixels go.

The op runs (through ``apply``, with the params ``sample`` drew) on a *coordinate image*: its
planes hold each input pixel's own ``x`` and ``y`` (scaled to the value range) and a plane that is
full inside the image. Each output pixel that comes from inside the image then says which input
point it shows, with the op's own sampling, so the check reads the op's geometry off its pixels,
independently of what the op declares:

- ``matrix=``: every such output pixel ``q`` showing input point ``s`` has ``M @ s`` at ``q``;
- keypoints: the output pixel at a moved keypoint shows the keypoint's input point;
- boxes: every output pixel that shows an input point inside a box lies in the moved box;
- masks (int32 ids of 3x3 cells, run through the kernel as augjax runs them: the ids' bytes and
  an inside channel, in groups of the declared channel count, ``interpolation="nearest"``, no
  antialiasing, zero fill) carry, at each output pixel, the id of the cell that pixel shows, and
  ``mask_fill`` where it shows only outside.

Tolerances are in output pixels (input pixels for masks and keypoints): 0.75 pixel of sampling
(nearest picks the closest sample, up to half a pixel off along each axis; a legacy resize is up
to half a pixel off) scaled by the op's local scale, plus 0.25, plus the coordinate planes'
rounding for uint8-only ops (half of 1/255 of the size); keypoints add the rounding of their
moved position to a pixel.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from augjax._runtime.execution.bound import BoundOp
from augjax._runtime.execution.padding import no_padding
from augjax._runtime.targets.masks import mask_config
from augjax.testing._examples import SHAPE, channels_for

__all__ = ["check_geometry", "moves_pixels"]

#: Samples (param draws) the check looks at.
SAMPLES = 4
#: Side of the mask's id cells (input pixels) and ids per row.
CELL, ROW = 3, 16
#: An inside plane at least this full means the output pixel shows only the image.
INSIDE = 0.999


def moves_pixels(op: BoundOp) -> bool:
    """Whether the check applies: a sample-level op that declares a matrix or carries masks
    through its kernel."""
    spec = op.spec
    return spec.level == "sample" and (spec.matrix is not None or spec.targets.masks == "kernel")


def _planes(h: int, w: int) -> np.ndarray:
    """(h, w, 3) float64 in [0, 1]: x / (w - 1), y / (h - 1), inside."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    return np.stack([xs / (w - 1), ys / (h - 1), np.ones((h, w))], axis=-1)


def _groups(planes: np.ndarray, c: int, dtype: str) -> list[np.ndarray]:
    """The three planes as images of ``c`` channels (zero-padded), in ``dtype``."""
    padded = np.concatenate([planes, np.zeros(planes.shape[:2] + (-3 % c,))], axis=-1)
    out = []
    for i in range(0, padded.shape[-1], c):
        g = padded[..., i:i + c]
        out.append(np.round(g * 255).astype(np.uint8) if dtype == "uint8" else
                   g.astype(np.float32))
    return out


def _ids(h: int, w: int) -> np.ndarray:
    ys, xs = np.mgrid[0:h, 0:w]
    return ((ys // CELL) * ROW + xs // CELL + 1).astype(np.int32)


def _scale(m: np.ndarray) -> float:
    """The largest stretch of the matrix's linear part (1 without a matrix)."""
    a = m[:2, :2] / m[2, 2]
    return float(np.linalg.svd(a, compute_uv=False).max())


def _shrink(m: np.ndarray) -> float:
    a = m[:2, :2] / m[2, 2]
    return float(max(np.linalg.svd(a, compute_uv=False).min(), 1e-6))


def _hwc(x: np.ndarray, layout: str) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if layout == "CHW" else x


def _targets(op: BoundOp, n: int, h: int, w: int) -> dict[str, np.ndarray]:
    # "keep" is tested too: an op that moves pixels but keeps its targets is misdeclared
    follow = op.spec.targets
    out: dict[str, np.ndarray] = {}
    if follow.masks in ("kernel", "keep"):
        out["masks"] = np.broadcast_to(_ids(h, w), (n, h, w)).copy()
    if follow.points in ("matrix", "keep") and op.spec.matrix is not None:
        xs = np.round(np.linspace(1, w - 2, 3))
        ys = np.round(np.linspace(1, h - 2, 3))
        pts = np.array([(x, y) for y in ys for x in xs], np.float32)
        out["keypoints"] = np.broadcast_to(pts, (n,) + pts.shape).copy()
        box = np.array([[round(w * 0.25), round(h * 0.25), round(w * 0.75), round(h * 0.7)]],
                       np.float32)
        out["boxes"] = np.broadcast_to(box, (n, 1, 4)).copy()
    return out


def _mask_hint(op: BoundOp) -> str:
    spec = op.spec
    config = {k: v for k, v in mask_config(spec, op.kwargs).items()
              if k in ("interpolation", "antialias", "fill")}
    groups = (f", in groups of {max(spec.channels)} channels (its declared channels="
              f"{spec.channels})" if spec.channels is not None else "")
    return (f"masks follow a geometric op through its kernel, called on a uint8 image of the "
            f"mask ids' bytes plus an inside channel (5 channels for int32 ids{groups}) with "
            f"{config or 'its parameters'}: the kernel must accept that (a fill of None where "
            f"the fill parameter is optional), or the op must declare "
            f"targets=augjax.Follow(masks='refuse')")


def _run(op: BoundOp, images: np.ndarray, params: Any, layout: str,
         targets: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    x = images.transpose(0, 3, 1, 2) if layout == "CHW" else images
    with no_padding():
        try:
            out = op.apply(x, params=params, layout=layout, **targets)
        except Exception as err:
            if not targets:
                raise
            try:
                op.apply(x, params=params, layout=layout)
            except Exception:  # noqa: BLE001 - the op fails without targets too
                raise err from None
            what = ", ".join(f"{k}={v.dtype.name}{list(v.shape)}" for k, v in targets.items())
            hint = f"; {_mask_hint(op)}" if "masks" in targets else ""
            raise AssertionError(f"op {op.name!r}: apply runs, but apply with the targets "
                                 f"{what} raised {type(err).__name__}: {err}{hint}") from err
    if not targets:
        return _hwc(np.asarray(out), layout), {}
    images = out["images"]
    return _hwc(np.asarray(images), layout), {k: np.asarray(v) for k, v in out.items()
                                              if k != "images"}


def check_geometry(op: BoundOp) -> None:
    """For an op that moves pixels (``matrix=``, or masks through its kernel): the matrix sends
    each input point where the op's pixels show it, keypoints land on the pixel that shows them,
    moved boxes hold every pixel that shows their inside, and masks carry at each pixel the id
    of what it shows (``mask_fill`` where only outside) and come back with no id they did not
    hold. Read off a coordinate image the op warps with the params ``sample`` drew; the targets
    path runs as augjax runs it (the kernel on the masks' bytes in the op's declared channels,
    nearest, zero fill). Where the op's parameters move no pixel far enough that masks left in
    place would show (a small default warp), the check runs again with parameters that do (each
    magnitude at its strongest, probabilities 1, ranges far from neutral)."""
    if _check_run(op):
        return
    for strong in _stronger(op):
        if _check_run(strong, why=f" (bound to {_kwargs(strong)}: with the op's own "
                                  f"parameters, masks left where they were would pass)"):
            return


def _kwargs(op: BoundOp) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(op.kwargs.items()))


def _stronger(op: BoundOp) -> list[BoundOp]:
    """``op`` bound to parameters that move pixels more, strongest first: every magnitude at
    its strong end, probabilities (neutral 0 in [0, 1]) at 1, other numbers with a neutral
    value three quarters of the way to the end of their range farther from it, or (a range
    without ends) :data:`FARTHER` times as far from it as the op's value."""
    from augjax.errors import ParamError

    spec = op.spec
    strong: dict[str, Any] = {}
    far: dict[str, Any] = {}
    numbers = ("float", "int", "float_or_pair", "int_or_pair")
    for name, p in spec.params.items():
        if p.kind not in numbers:
            continue
        if p.magnitude is not None:  # a (weak, strong) pair, or a policy's MagnitudeMap
            m = p.magnitude
            strong[name] = (m[1] if isinstance(m, (tuple, list))
                            else m.value(1.0, 1.0, False, *SHAPE[1:]))
            continue
        n = p.neutral
        if not isinstance(n, (int, float)) or isinstance(n, bool) or p.kind.startswith("int"):
            continue
        if n == 0 and p.low == 0 and p.high == 1:
            strong[name] = 1.0
            continue
        ends = [e for e in (p.low, p.high) if e is not None and np.isfinite(e)]
        value = op.kwargs.get(name, p.default)
        if ends:
            end = max(ends, key=lambda e: abs(e - n))
            far[name] = n + 0.75 * (end - n)
        elif isinstance(value, (int, float, tuple, list)) and value is not None:
            far[name] = (tuple(n + FARTHER * (float(v) - n) for v in value)
                         if isinstance(value, (tuple, list)) else n + FARTHER * (value - n))
    out = []
    for values in ({**strong, **far}, strong):
        if not values:
            continue
        try:
            out.append(spec.bind(**{**op.kwargs, **values}))
        except (ParamError, TypeError, ValueError):
            continue
    return out


#: How much farther from neutral than the op's own value an unbounded parameter is taken.
FARTHER = 60.0


def _check_run(op: BoundOp, why: str = "") -> bool:
    """One pass of the checks with ``op``'s params; whether they moved pixels far enough that
    masks left where they were would fail the mask check (always True without masks)."""
    from augjax.chain import matrices

    spec = op.spec
    layout = "HWC" if "HWC" in spec.layouts else spec.layouts[0]
    dtype = "float32" if "float32" in spec.dtypes else spec.dtypes[0]
    n, (h, w), c = SAMPLES, SHAPE[1:], channels_for(spec)
    groups = _groups(_planes(h, w), c, dtype)
    g = len(groups)
    stack = np.concatenate([np.broadcast_to(x, (n, h, w, c)) for x in groups])
    base = stack[:n].transpose(0, 3, 1, 2) if layout == "CHW" else stack[:n]
    with no_padding():
        params = op.sample(np.ascontiguousarray(base),
                           key=jax.random.split(jax.random.key(20), n), layout=layout)
    params = jax.tree_util.tree_map(lambda v: np.concatenate([np.asarray(v)] * g), params)
    targets = {k: np.concatenate([v] * g) for k, v in _targets(op, n, h, w).items()}
    images, moved = _run(op, np.ascontiguousarray(stack), params, layout, targets)
    top = 255.0 if images.dtype == np.uint8 else 1.0
    flat = images.astype(np.float64) / top
    planes = np.concatenate([flat[i * n:(i + 1) * n] for i in range(g)], axis=-1)[..., :3]
    src = np.stack([planes[..., 0] * (w - 1), planes[..., 1] * (h - 1)], axis=-1)
    inside = planes[..., 2] >= INSIDE
    quant = 0.0 if dtype == "float32" else 0.5 * max(h, w) / 255.0
    first = jax.tree_util.tree_map(lambda v: v[:n], params)
    # One program for the matrices (eagerly, each of their primitives compiles alone).
    ms = (np.asarray(jax.jit(lambda p: matrices(op, p, (h, w), c, dtype, n))(first), np.float64)
          if spec.matrix is not None else None)
    name = spec.name
    kept = _kept_ids(op, np.ascontiguousarray(stack), params, layout, targets) \
        if "masks" in moved else None
    # without masks, or masks of another size, there is nothing a mask left in place passes
    detectable = "masks" not in moved or moved["masks"].shape[1:] != (h, w)
    for i in range(n):
        scale, shrink = (_scale(ms[i]), _shrink(ms[i])) if ms is not None else (1.0, 1.0)
        tol_out = 0.75 * max(1.0, scale) + 0.25 + quant * scale
        tol_in = 0.75 * max(1.0, 1.0 / shrink) + 0.25 + quant
        row = _row(first, i)
        where = f"sample {i} ({f'params {row}' if row else 'no params'}){why}"
        if ms is not None:
            _check_matrix(name, where, ms[i], src[i], inside[i], tol_out)
        if "keypoints" in moved:
            _check_keypoints(name, where, targets["keypoints"][i], moved["keypoints"][i],
                             src[i], inside[i], tol_in + 0.75 / shrink)
        if "boxes" in moved:
            _check_box(name, where, targets["boxes"][i, 0], moved["boxes"][i, 0], src[i],
                       inside[i], tol_in, tol_out)
        if "masks" in moved:
            _check_mask(name, where, moved["masks"][i], src[i], inside[i], planes[i, ..., 2],
                        tol_in)
            _check_ids(name, where, *kept, i)
            # would masks left where they were fail?
            detectable = detectable or _mask_misses(_ids(h, w), src[i], inside[i],
                                                    planes[i, ..., 2], tol_in) is not None
    return detectable


#: The ids of the id-set mask's four stripes: each byte of one (7) or more ids non-zero, so a
#: kernel that changes levels changes an id into one the mask did not hold.
ID_SET = (7, 300, 70_007, 16_909_060)


def _kept_ids(op: BoundOp, stack: np.ndarray, params: Any, layout: str,
              targets: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The op run (the same program) on a mask of :data:`ID_SET` stripes: (in, out) masks."""
    m, h, w = targets["masks"].shape
    stripes = np.asarray(ID_SET, np.int32)[np.minimum(np.arange(w) * len(ID_SET) // w,
                                                      len(ID_SET) - 1)]
    given = dict(targets, masks=np.ascontiguousarray(np.broadcast_to(stripes, (m, h, w))))
    _, moved = _run(op, stack, params, layout, given)
    return given["masks"], moved["masks"]


def _check_ids(name: str, where: str, before: np.ndarray, after: np.ndarray, i: int) -> None:
    held = set(np.unique(before[i]).tolist())
    got, counts = np.unique(after[i], return_counts=True)
    new = [(int(v), int(k)) for v, k in zip(got, counts) if int(v) not in held and v != 0]
    if new:
        shown = ", ".join(f"{v} ({k} px)" for v, k in new[:8])
        raise AssertionError(
            f"op {name!r}, {where}: masks changed their ids: a mask holding ids "
            f"{sorted(held)} came back holding {sorted(int(v) for v in got)}; ids it did not "
            f"hold: {shown} ({sum(k for _, k in new)} of {after[i].size} pixels); a geometric "
            f"op only moves ids (or fills with mask_fill 0): a kernel that changes levels "
            f"must not run on masks (declare targets=augjax.Follow(masks='keep'))")


def _mask_misses(mask: np.ndarray, src: np.ndarray, inside: np.ndarray, full: np.ndarray,
                 tol: float) -> tuple | None:
    """The first output pixel whose mask id is not what it shows, and the numbers, or None."""
    m = mask.astype(np.int64)
    cell_x, cell_y = (m - 1) % ROW, (m - 1) // ROW
    lo_x, lo_y = cell_x * CELL - 0.5, cell_y * CELL - 0.5
    dx = np.maximum(0.0, np.maximum(lo_x - src[..., 0], src[..., 0] - (lo_x + CELL)))
    dy = np.maximum(0.0, np.maximum(lo_y - src[..., 1], src[..., 1] - (lo_y + CELL)))
    dist = np.where(m >= 1, np.hypot(dx, dy), np.inf)
    bad = inside & (dist > tol)
    if bad.any():
        y, x = (int(v) for v in np.argwhere(bad)[0])
        return "moved", y, x, m, cell_x, cell_y, dist, bad
    outside = (full <= 1e-6) & (m != 0)
    if outside.any():
        y, x = (int(v) for v in np.argwhere(outside)[0])
        return "outside", y, x, m
    return None


def _row(params: Any, i: int) -> str:
    leaves = jax.tree_util.tree_flatten_with_path(params)[0]
    parts = []
    for path, v in leaves:
        a = np.asarray(v[i])
        if a.size > 8:  # a field (noise, a displacement): its shape only
            parts.append(f"{jax.tree_util.keystr(path)}=<{a.dtype.name} {a.shape}>")
            continue
        a = np.round(a.astype(np.float64), 3) if a.dtype.kind == "f" else a
        parts.append(f"{jax.tree_util.keystr(path)}={a.tolist()}")
    return ", ".join(parts)


def _at(src: np.ndarray, q: tuple[int, int]) -> str:
    return f"({src[q][0]:.2f}, {src[q][1]:.2f})"


def _check_matrix(name: str, where: str, m: np.ndarray, src: np.ndarray, inside: np.ndarray,
                  tol: float) -> None:
    if not inside.any():
        return
    s = np.concatenate([src, np.ones(src.shape[:2] + (1,))], axis=-1) @ m.T
    pred = s[..., :2] / s[..., 2:]
    ys, xs = np.mgrid[0:src.shape[0], 0:src.shape[1]]
    err = np.hypot(pred[..., 0] - xs, pred[..., 1] - ys)
    err = np.where(inside, err, 0.0)
    y, x = np.unravel_index(np.argmax(err), err.shape)
    if err[y, x] > tol:
        raise AssertionError(
            f"op {name!r}, {where}: the matrix disagrees with where the pixels went: output "
            f"pixel (x={x}, y={y}) shows input point {_at(src, (y, x))}, which the matrix sends "
            f"to ({pred[y, x, 0]:.2f}, {pred[y, x, 1]:.2f}), {err[y, x]:.2f} px away (tolerance "
            f"{tol:.2f}; {int((err > tol).sum())} of {int(inside.sum())} pixels off); matrix "
            f"{np.round(m, 3).tolist()} (input pixel (x, y, 1) -> output; is a sign or the "
            f"direction, input-to-output, wrong?)")


def _check_keypoints(name: str, where: str, before: np.ndarray, after: np.ndarray,
                     src: np.ndarray, inside: np.ndarray, tol: float) -> None:
    oh, ow = src.shape[:2]
    for (kx, ky), (px, py) in zip(before, after):
        q = (int(round(py)), int(round(px)))
        if not (0 <= q[0] < oh and 0 <= q[1] < ow) or not inside[q]:
            continue
        d = float(np.hypot(src[q][0] - kx, src[q][1] - ky))
        if d > tol:
            raise AssertionError(
                f"op {name!r}, {where}: keypoint ({kx:g}, {ky:g}) moved to ({px:.2f}, "
                f"{py:.2f}), but the output pixel there shows input point {_at(src, q)}, "
                f"{d:.2f} px from the keypoint (tolerance {tol:.2f})")


def _check_box(name: str, where: str, before: np.ndarray, after: np.ndarray, src: np.ndarray,
               inside: np.ndarray, tol_in: float, tol_out: float) -> None:
    x1, y1, x2, y2 = before
    cx, cy = src[..., 0] + 0.5, src[..., 1] + 0.5  # pixel centres in edge coordinates
    held = inside & (cx > x1 + tol_in) & (cx < x2 - tol_in) & (cy > y1 + tol_in) & (
        cy < y2 - tol_in)
    ys, xs = np.nonzero(held)
    if not len(xs):
        return
    bx1, by1, bx2, by2 = after
    out = ((xs + 0.5 < bx1 - tol_out) | (xs + 0.5 > bx2 + tol_out)
           | (ys + 0.5 < by1 - tol_out) | (ys + 0.5 > by2 + tol_out))
    if out.any():
        k = int(np.argmax(out))
        y, x = int(ys[k]), int(xs[k])
        raise AssertionError(
            f"op {name!r}, {where}: box {before.tolist()} (XYXY edges) moved to "
            f"{np.round(after, 2).tolist()}, but output pixel (x={x}, y={y}) shows input point "
            f"{_at(src, (y, x))}, inside the box, and lies outside the moved box (tolerance "
            f"{tol_out:.2f}; {int(out.sum())} of {len(xs)} such pixels)")


def _check_mask(name: str, where: str, mask: np.ndarray, src: np.ndarray, inside: np.ndarray,
                full: np.ndarray, tol: float) -> None:
    miss = _mask_misses(mask, src, inside, full, tol)
    if miss is None:
        return
    if miss[0] == "outside":
        _, y, x, m = miss
        raise AssertionError(
            f"op {name!r}, {where}: output pixel (x={x}, y={y}) shows only what lies outside "
            f"the image, but its mask holds id {m[y, x]}, not mask_fill (0)")
    _, y, x, m, cell_x, cell_y, dist, bad = miss
    got = (f"id {m[y, x]} (cell x {cell_x[y, x] * CELL}..{cell_x[y, x] * CELL + CELL - 1}, "
           f"y {cell_y[y, x] * CELL}..{cell_y[y, x] * CELL + CELL - 1})"
           if m[y, x] >= 1 else f"the fill {m[y, x]}")
    raise AssertionError(
        f"op {name!r}, {where}: masks do not follow the pixels: output pixel (x={x}, y={y}) "
        f"shows input point {_at(src, (y, x))}, but its mask holds {got}, "
        f"{dist[y, x]:.2f} px away (tolerance {tol:.2f}; {int(bad.sum())} of "
        f"{int(inside.sum())} pixels)")
