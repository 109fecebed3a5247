"""The kit's check that an op whose targets stay where they are does not move pixels.

An op that declares neither ``matrix=`` nor masks through its kernel keeps masks, boxes and
keypoints in place; if its kernel moves the image (a flip, a shift), every target is silently
wrong. The check runs the op on a structured image (smooth waves, a bar, a disc: no symmetry)
and compares where the output's edges are with where the input's are: the correlation of their
gradient magnitudes in place, against the input flipped, turned and shifted. An op that keeps
the geometry (colour, blur, noise, erasing, JPEG) correlates best in place or nowhere (noise);
one that moves pixels correlates far better with a moved input.
"""

from __future__ import annotations

import jax
import numpy as np

from augjax._runtime.execution.bound import BoundOp
from augjax._runtime.execution.padding import no_padding
from augjax.testing._examples import channels_for, make_labels

__all__ = ["check_targets_stay", "targets_stay"]

#: The structured image's size and samples.
SIZE, SAMPLES = (40, 52), 3
#: A moved input that correlates at least this well, and this much better than in place, fails.
MOVED, MARGIN = 0.6, 0.25
#: Shifts tried (pixels).
SHIFT = 3


def targets_stay(op: BoundOp) -> bool:
    """Whether the check applies: a sample-level op that keeps masks and points in place."""
    spec = op.spec
    return (spec.level == "sample" and spec.matrix is None and spec.targets.masks == "keep"
            and spec.targets.points == "keep")


def _structured(h: int, w: int, c: int) -> np.ndarray:
    """(h, w, c) float64 in [0, 1] with edges that no flip, turn or shift maps onto themselves."""
    yy, xx = np.mgrid[0:h, 0:w] / np.array([h, w], np.float64)[:, None, None]
    planes = [np.sin(6 * xx + 2 * yy ** 2) + ((xx > 0.7) & (yy < 0.3)),
              np.cos(5 * yy * xx + 3 * xx),
              ((xx - 0.25) ** 2 + (yy - 0.6) ** 2 < 0.03) * 1.0]
    x = np.stack([planes[i % 3] for i in range(c)], axis=-1)
    return (x - x.min()) / (x.max() - x.min())


def _edges(x: np.ndarray) -> np.ndarray:
    gy, gx = np.gradient(x.astype(np.float64).mean(axis=-1))
    return np.hypot(gx, gy)


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    d = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / d) if d > 0 else 0.0


def _moved(g: np.ndarray, out: np.ndarray) -> dict[str, float]:
    """The output's edges against the input's moved ones (shifts compare the overlap)."""
    s = SHIFT
    return {"flipped left-right": _corr(out, g[:, ::-1]),
            "flipped upside down": _corr(out, g[::-1]),
            "turned 180 degrees": _corr(out, g[::-1, ::-1]),
            f"shifted {s} px right": _corr(out[:, s:], g[:, :-s]),
            f"shifted {s} px left": _corr(out[:, :-s], g[:, s:]),
            f"shifted {s} px down": _corr(out[s:], g[:-s]),
            f"shifted {s} px up": _corr(out[:-s], g[s:])}


def check_targets_stay(op: BoundOp) -> None:
    """An op that keeps its targets in place (no ``matrix=``, masks not through its kernel)
    keeps the image's geometry: its output has the input's size, and its edges correlate with
    the input's in place at least as well as with the input flipped, turned or shifted (a moved
    input correlating >= 0.6 and 0.25 better fails: the op moves pixels and leaves masks,
    boxes and keypoints behind; declare ``matrix=`` or ``geometric=True``)."""
    spec = op.spec
    layout = "HWC" if "HWC" in spec.layouts else spec.layouts[0]
    dtype = "float32" if "float32" in spec.dtypes else spec.dtypes[0]
    (h, w), c = SIZE, channels_for(spec)
    base = _structured(h, w, c)
    x = np.broadcast_to(base, (SAMPLES, h, w, c))
    x = (np.round(x * 255).astype(np.uint8) if dtype == "uint8" else x.astype(np.float32))
    x = np.ascontiguousarray(x.transpose(0, 3, 1, 2) if layout == "CHW" else x)
    labels = make_labels(op, SAMPLES)
    inputs = (x,) if labels is None else (x, labels)
    with no_padding():
        out = op(*inputs, key=jax.random.split(jax.random.key(31), SAMPLES), layout=layout)
    out = np.asarray(out[0] if isinstance(out, tuple) else out)
    if out.ndim == 4 and (layout == "CHW" or out.shape[-1] not in (1, 3, 4, c)):
        out = out.transpose(0, 2, 3, 1)
    name = spec.name
    assert out.shape[1:3] == (h, w), (
        f"{name}: an input of {h}x{w} came back {out.shape[1]}x{out.shape[2]}, but the op "
        f"keeps masks, boxes and keypoints as they are (no matrix=, masks not through its "
        f"kernel): declare how they follow")
    g = _edges(base)
    for i in range(SAMPLES):
        e = _edges(out[i])
        here = _corr(e, g)
        how, best = max(_moved(g, e).items(), key=lambda kv: kv[1])
        assert not (best >= MOVED and best - here >= MARGIN), (
            f"{name}: sample {i}'s edges match the input {how} (correlation {best:.2f}) far "
            f"better than the input in place ({here:.2f}): the kernel moves pixels, but the "
            f"op declares neither matrix= nor geometric=True, so masks, boxes and keypoints "
            f"would stay where they were")
