"""ColorJitter's random-order kernel, arranged so each sample's own order costs one hue pass.

torchvision applies the active adjustments (brightness 0, contrast 1, saturation 2, hue 3) in a
random order. Under vmap every sample has its own order, so a literal translation computes every
adjustment at every slot and selects (16 evaluations, 4 of them the costly HSV round trip).
Brightness, contrast and saturation share one form, ``f * x + (1 - f) * other`` with ``other`` =
0, the grayscale mean, or the grayscale image, so one "generic" stage computes any of them with
per-sample selectors. Hue runs exactly once, between the generic stages before it and those after
it: ``A - 1`` pre stages, one hue pass, ``A - 1`` post stages for ``A`` active adjustments, each
stage switched off (the identity, exactly) where the sample has fewer stages on that side.

Contrast blends with the mean grayscale of the image *as it is when contrast runs*, a reduction
over the whole image, and any generic stage may be contrast for some sample. Two forms give
the same arithmetic (XLA may still contract multiply-adds differently: 1 ulp in float32, rarely a
uint8 level), and the backend picks one (``lax.platform_dependent``):

- "cpu", one pass: each generic stage takes its own mean, ``2A - 2`` chained reductions. Cheap
  where the image sits in cache and arithmetic is the cost.
- "gpu", two passes: contrast runs once per sample and no stage before it is contrast, so a
  first pass over the image runs the stages before contrast and reduces to the mean, and a
  second pass applies every stage with it. Two reads of the image instead of ``2A - 1``, at the
  price of computing the stages before contrast twice.

A third form, "pallas" (:mod:`augjax.catalog._jitter_kernel`), branches per image instead of
selecting, so each pixel goes through its image's four adjustments only; "auto" takes it on
CUDA (H200, B=256: 0.42 -> 0.19 ms).

Every stage works on the three channel planes ``(H, W)`` of the image and returns three planes;
the image is split once at the start and stacked once at the end. On an interleaved ``(H, W, 3)``
array each stage's output element would read three channels of the previous stage's output, and
XLA, rather than recompute a costly producer per channel, writes every stage out as a float32
batch (4 bytes per channel, read back by the next stage). On planes every element of a stage
reads the same pixel of the stage before, so the whole chain fuses into one pass (on an H200,
B=256: one reduction kernel and one elementwise kernel; 1.30 -> 0.43 ms). Packing a pixel's
three uint8 levels into one word before interleaving, so that the last kernel evaluates the
chain once per pixel rather than once per channel, was measured too and moved nothing
(0.427 -> 0.423 ms): XLA already evaluates it once per pixel.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from augjax.kernels.boundary import barrier
from augjax.kernels.partition import partitioned
from augjax.kernels.platform import platform_dependent
from augjax.catalog._tv_color import hue_planes
from augjax.kernels.batching import broadcast_unbatched
from augjax.kernels.enhance import contrast_mean, degenerate
from augjax.kernels.pixels import blend_gray, blend_planes, is_int, to_dtype

__all__ = ["jitter"]

_HUE = 3

Planes = tuple[jax.Array, jax.Array, jax.Array]


def _select(on, new: Planes, old: Planes) -> Planes:
    return tuple(jnp.where(on, a, b) for a, b in zip(new, old))


def _generic(p: Planes, which: jax.Array, factor: jax.Array, mean: jax.Array | None, dtype
             ) -> Planes:
    """Brightness (``which`` 0), contrast (1, with ``mean``, or this image's own mean if None)
    or saturation (2): each plane blended with the degenerate image ``which`` names
    (:mod:`augjax.kernels.enhance`)."""
    mean = contrast_mean(p, dtype) if mean is None else mean
    return blend_planes(p, degenerate(which, blend_gray(*p, dtype), mean), factor, dtype)


def _stages(p: Planes, seq: jax.Array, factors: jax.Array, n_active: int, hue: bool,
            mean: jax.Array | None, end: jax.Array | None, dtype) -> Planes:
    """The adjustments ``seq[0], ..., seq[end - 1]`` (``end`` traced; None for all), contrast
    with ``mean`` (None: each stage's own mean)."""

    def upto(pos):
        return True if end is None else pos < end

    if not hue:
        for j in range(n_active):
            p = _select(upto(j), _generic(p, seq[j], factors[seq[j]], mean, dtype), p)
        return p
    at = jnp.argmax(seq == _HUE)
    for j in range(n_active - 1):  # stages before hue: seq[0], ..., seq[at-1]
        which = seq[j]
        p = _select((j < at) & upto(j), _generic(p, which, factors[which], mean, dtype), p)
    rotated = hue_planes(*p, factors[_HUE], dtype)
    p = rotated if end is None else _select(upto(at), rotated, p)
    for j in range(n_active - 1):  # stages after hue: seq[at+1], ...
        which = seq[jnp.minimum(at + 1 + j, 3)]
        on = (j < n_active - 1 - at) & upto(at + 1 + j)
        p = _select(on, _generic(p, which, factors[which], mean, dtype), p)
    return p


def jitter(image: jax.Array, order: jax.Array, factors: jax.Array, active: tuple[bool, ...],
           form: str = "auto") -> jax.Array:
    """Applies the active adjustments to ``image`` in ``order`` (a permutation of 0..3) and
    returns the image in its dtype. Differentiable with respect to float images and the
    factors in every form (the Pallas form's derivative is the "gpu" form's: the same function).

    Args:
        image: one image ``(H, W, 3)``, uint8 (truncated to whole levels after each adjustment)
            or float.
        order: the sample's permutation of (brightness, contrast, saturation, hue).
        factors: the four sampled factors (hue: the shift in turns).
        active: which adjustments are on (static).
        form: "cpu" (one pass), "gpu" (contrast's mean first, then one pass), "pallas" (the
            branching kernel of :mod:`augjax.catalog._jitter_kernel`; interpreted where the
            default backend is the CPU), or "auto": "cpu" on CPU, "pallas" on CUDA (where this
            JAX has Pallas' Triton backend and the program is not partitioned over several
            devices, see :mod:`augjax.kernels.partition`), "gpu" elsewhere. Same values.
    """
    active = tuple(bool(a) for a in active)
    act = jnp.asarray(active)
    # The active ops in this sample's order, inactive ones moved (stably) to the end.
    seq = order[jnp.argsort(~act[order], stable=True)]

    def cpu(im):
        return _cpu_form(im, seq, factors, active)

    def gpu(im):
        return _gpu_form(im, seq, factors, active)

    def pallas(im, interpret=False):
        return _pallas_form(im, seq, factors, active, interpret)

    if form == "cpu":
        return cpu(image)
    if form == "gpu":
        return gpu(image)
    if form == "pallas":
        return pallas(image, interpret=jax.default_backend() == "cpu")
    if partitioned() or not _pallas_available():  # partitioned: see augjax.kernels.partition
        return platform_dependent(image, cpu=cpu, default=gpu)
    return platform_dependent(image, cpu=cpu, cuda=pallas, default=gpu)


def _select_form(image, seq, factors, active):
    """One pass: each generic stage takes its own mean."""
    dtype, n_active, hue = image.dtype, sum(active), active[_HUE]
    p = _planes(image)
    return _stack(_stages(p, seq, factors, n_active, hue, None, None, dtype), dtype)


def _cpu_form(image, seq, factors, active):
    """The CPU's form: over a batch the images go one by one and each stage is a real branch
    (only the image's own adjustment runs: 3 adjustments at B=16 took 83 CPU-ms as selects,
    each stage computing all three), the select form where the batch is partitioned."""
    if partitioned():  # a loop would serialize a batch laid out over several devices
        return _select_form(image, seq, factors, active)
    return _branch_form(image, seq, factors, active)


def _branching(image, seq, factors, active):
    """One image: its active adjustments in its order, each a ``lax.switch`` branch computing
    that adjustment alone (with :func:`_generic`'s arithmetic for a known ``which``). An
    integer image goes from stage to stage as one word per pixel (:func:`_words`)."""
    dtype = image.dtype

    def adjust(which: int):
        if not active[which]:
            return lambda q: q
        if which == _HUE:
            return lambda q: hue_planes(*q, factors[_HUE], dtype)
        return lambda q: _generic(q, jnp.int32(which), factors[which], None, dtype)

    branches = [adjust(w) for w in range(4)]
    if is_int(dtype):
        words = [(lambda w, f=f, k=k: _pack(f(_unpack(w, apart=k in (1, 2))), apart=k in (1, 2)))
                 if active[k] else (lambda w: w) for k, f in enumerate(branches)]
        w = _words(image)
        for j in range(sum(active)):
            w = jax.lax.switch(seq[j], words, w)
        return jax.lax.bitcast_convert_type(w, dtype)[..., :3]
    p = _planes(image)
    for j in range(sum(active)):
        p = jax.lax.switch(seq[j], branches, p)
    return _stack(p, dtype)


# An integer image between the CPU form's stages: each stage's output is whole levels in
# [0, 255] (torchvision truncates after every adjustment), so the three levels of a pixel fit
# in one uint32 word exactly, ``r | g << 8 | b << 16``. A stage then reads and writes one word
# per pixel, and the hue computes its HSV round trip once for the three channels: on three
# float32 planes XLA wrote each output plane in its own loop and recomputed the shared work in
# each (hue alone, B=16 at 320x320 uint8 on 2 cores: 0.87 -> 0.57 CPU-ms per image, the same
# bits). Contrast and saturation keep their planes apart (``apart``: kept in memory on the way
# in and out, each output plane its own loop, as before): computed once for the three
# channels, their gray's multiply-adds were contracted differently by LLVM (about one uint8
# level in a million moved, measured over every RGB triple).


def _words(image: jax.Array) -> jax.Array:
    """An ``(H, W, 3)`` uint8 image as ``(H, W)`` uint32 words (a zero byte appended)."""
    pad = jnp.zeros(image.shape[:-1] + (1,), image.dtype)
    return jax.lax.bitcast_convert_type(jnp.concatenate([image, pad], -1), jnp.uint32)


def _unpack(w: jax.Array, apart: bool = False) -> Planes:
    """Words as three float32 planes; ``apart``: kept in memory (see :func:`_branching`)."""
    p = tuple(((w >> (8 * k)) & 255).astype(jnp.uint8) for k in range(3))
    if apart:
        p = barrier(p)
    return tuple(c.astype(jnp.float32) for c in p)


def _pack(p: Planes, apart: bool = False) -> jax.Array:
    """Three planes of whole levels in [0, 255] (a stage's requantized output) as words;
    ``apart``: each plane computed in its own loop first (see :func:`_branching`)."""
    if apart:
        p = barrier(tuple(c.astype(jnp.uint8) for c in p))
    r, g, b = (c.astype(jnp.uint32) for c in p)
    return r | (g << 8) | (b << 16)


@functools.cache
def _branching_fn(active: tuple[bool, ...]):
    @custom_vmap
    def one(image, seq, factors):
        return _branching(image, seq, factors, active)

    @one.def_vmap
    def _batched(axis_size, in_batched, image, seq, factors):
        args = broadcast_unbatched(axis_size, in_batched, (image, seq, factors))
        return jax.lax.map(lambda a: _branching(*a, active), args), True

    return one


@functools.partial(jax.custom_jvp, nondiff_argnums=(3,))
def _branch_form(image, seq, factors, active):
    """:func:`_branching` image by image over a batch (a ``custom_vmap``, which has no
    derivative rule of its own: see :func:`_branch_jvp`)."""
    return _branching_fn(active)(image, seq, factors)


@_branch_form.defjvp
def _branch_jvp(active, primals, tangents):
    """The branches' values, the select form's derivative (the same stages)."""
    image, seq, factors = primals
    out = _branch_form(image, seq, factors, active)
    _, tangent = jax.jvp(lambda im, f: _select_form(im, seq, f, active), (image, factors),
                         (tangents[0], tangents[2]))
    return out, tangent


def _gpu_form(image, seq, factors, active):
    """Pass 1: the image as contrast sees it, its mean; pass 2: everything."""
    dtype, n_active, hue = image.dtype, sum(active), active[_HUE]
    p = _planes(image)
    mean = None
    if active[1]:
        before = _stages(p, seq, factors, n_active, hue, jnp.float32(0.0),
                         jnp.argmax(seq == 1), dtype)
        # jnp.mean's float32 reduction, not contrast_mean's (mean_gray's int32 rows for
        # uint8): the same value while a uint8 image's gray sum stays exact in float32 (below
        # 2**24), rounded in the reduction's order above; kept as this form's own bits.
        mean = jnp.mean(blend_gray(*before, dtype))
    return _stack(_stages(p, seq, factors, n_active, hue, mean, None, dtype), dtype)


@functools.partial(jax.custom_jvp, nondiff_argnums=(3, 4))
def _pallas_form(image, seq, factors, active, interpret):
    """The branching Pallas kernel (``seq``: the active stages first, as :func:`jitter` sorts
    them). Pallas calls have no derivative rule that fits here: see :func:`_pallas_jvp`."""
    from augjax.catalog import (
        _jitter_kernel as kernel,  # imports Pallas (0.1 s): on use
    )

    stages = jnp.where(jnp.arange(4) < sum(active), seq, kernel.IDENTITY)
    return kernel.jitter_kernel(image, stages, factors, active[1], interpret=interpret)


@_pallas_form.defjvp
def _pallas_jvp(active, interpret, primals, tangents):
    """The kernel's values, the "gpu" form's derivative (the same stages, one form away)."""
    image, seq, factors = primals
    out = _pallas_form(image, seq, factors, active, interpret)
    _, tangent = jax.jvp(lambda im, f: _gpu_form(im, seq, f, active), (image, factors),
                         (tangents[0], tangents[2]))
    return out, tangent


def _planes(image: jax.Array) -> Planes:
    x = image.astype(jnp.float32)
    return x[..., 0], x[..., 1], x[..., 2]


def _stack(p: Planes, dtype) -> jax.Array:
    return to_dtype(jnp.stack(p, axis=-1), dtype)


def _pallas_available() -> bool:
    from augjax.catalog._jitter_kernel import AVAILABLE

    return AVAILABLE
