"""Mixing ops: batch-level, images and labels in, images and soft labels out (timm semantics).

Images are HWC, uint8 (0..255) or float32 in [0, 1]; labels are integer class ids ``(N,)`` /
``(N, 1)`` or float soft labels ``(N, num_classes)``; the labels returned are float32
``(N, num_classes)``. Sample ``i`` is mixed with its partner ``N-1-i`` (the batch reversed), as
timm's ``Mixup`` does. Every op here is one sampler (timm's ``_params_per_batch`` /
``_params_per_elem`` and ``rand_bbox``) and one kernel, ``mix_batch``, which selects mixup or
cutmix per sample with ``jnp.where`` (no Python branch on data), so one compiled program serves
every draw. On the CPU a uint8 batch in which no sample blends (every cutmix draw) takes a
select of its levels instead of the float32 mix (``lax.cond``; the same bits).

Params (``op.sample``; batch level: one key per batch, every field with a leading axis N):

- ``lam`` (float32): sample ``i``'s mixing weight as drawn (timm's ``lam``): the Beta draw where
  the sample is mixed, 1 where it is not; with ``cutmix_minmax`` a cutmix sample's ``lam`` is
  ``1 - box area / image area`` (timm takes it from the box). A sample with ``lam == 1`` is left
  as it is (timm's ``if lam != 1``); its label weight is then 1.
- ``use_cutmix`` (bool): the sample pastes a box (else it blends).
- ``box`` ((4,) int32): top, left, height, width of the pasted box, clipped to the image
  (meaningful where ``use_cutmix``).
- ``perm`` (int32): the partner of each sample (``N-1-i``).

The kernel mixes images as ``lam * x_i + (1 - lam) * x_perm[i]`` (mixup) or pastes
``x_perm[i]``'s box (cutmix), and labels with the label weight: ``lam``, or for cutmix with
``correct_lam`` (always with ``cutmix_minmax``) ``1 - box area / image area``.
``op.apply(images, labels, params={...})`` mixes with exact weights and partners; setting
``lam`` to 1 gives the images unchanged.

Targets (:func:`mix_masks`): ``masks=`` follow the mixing (cutmix: the partner's mask inside the
pasted box; mixup: the mask of the image with the larger weight, its own at ``lam >= 0.5``);
boxes and keypoints are refused with an InputError, as torchvision's CutMix/MixUp refuse them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._core.param import Param
from augjax.calls import op
from augjax._core.targets import Follow
from augjax.kernels.gamma import loggamma
from augjax.catalog.erase import box_mask, row_box_mask, uniforms
from augjax.errors import InputError
from augjax.kernels.pixels import is_int, to_dtype
from augjax.kernels.platform import platform_dependent
from augjax.kernels.warp import uniform_int

__all__ = ["mixup", "cutmix", "mixup_cutmix", "soft_targets", "mix_sample", "mix_batch", "mix_masks",
           "rand_bbox", "rand_bbox_minmax", "symmetric_betas"]

MODES = ("batch", "pair", "elem")

#: The smallest positive Beta alpha: float32 Beta draws from smaller ones underflow to NaN
#: (about 1e-38 and below), and from 1e-30 down ``Beta(a, a)`` already gives 0 or 1 with
#: probability 1/2 each to float32 precision, so nothing is lost.
ALPHA_MIN = 1e-30
#: Larger alphas are drawn as this one: beyond float32's range (3.4e38) the draws would be NaN,
#: and from 1e30 up ``Beta(a, a)`` is 0.5 to float32 precision (its spread is about
#: ``1 / sqrt(8 a)``), so the clamp changes no draw.
ALPHA_MAX = 1e30


def soft_targets(labels: jax.Array, num_classes: int, smoothing: float) -> jax.Array:
    """timm ``one_hot`` with label smoothing: on = 1 - s + s/K, off = s/K; float soft labels
    ``(N, K)`` are passed through."""
    if jnp.issubdtype(labels.dtype, jnp.floating):
        return labels.astype(jnp.float32)
    off = smoothing / num_classes
    on = 1.0 - smoothing + off
    hot = jax.nn.one_hot(labels, num_classes, dtype=jnp.bool_)
    return jnp.where(hot, jnp.float32(on), jnp.float32(off))


def _check_classes(labels: jax.Array, num_classes: int, op: str) -> None:
    if jnp.issubdtype(labels.dtype, jnp.floating) and labels.shape[1] != num_classes:
        raise InputError(
            f"{op}: argument 'labels' holds soft labels of {labels.shape[1]} classes, but "
            f"num_classes={num_classes}",
            op=op,
            argument="labels",
        )


# -- boxes (timm rand_bbox / rand_bbox_minmax, vectorised) --------------------------------------
def rand_bbox(u: dict[str, jax.Array], height: int, width: int,
              lam: jax.Array) -> dict[str, jax.Array]:
    """timm ``rand_bbox`` (margin 0) for each ``lam``: a ``floor(H sqrt(1 - lam))`` by
    ``floor(W sqrt(1 - lam))`` box centred uniformly over the pixels, clipped at the border.
    ``u`` holds uniforms ``y``, ``x`` shaped like ``lam``. Returns ``yl, yh, xl, xh`` and the
    centres ``cy, cx``."""
    ratio = jnp.sqrt(1.0 - lam)
    cut_h = jnp.floor(height * ratio).astype(jnp.int32)
    cut_w = jnp.floor(width * ratio).astype(jnp.int32)
    cy = uniform_int(u["y"], 0, height)
    cx = uniform_int(u["x"], 0, width)
    return dict(yl=jnp.clip(cy - cut_h // 2, 0, height),
                yh=jnp.clip(cy + (cut_h + 1) // 2, 0, height),
                xl=jnp.clip(cx - cut_w // 2, 0, width),
                xh=jnp.clip(cx + (cut_w + 1) // 2, 0, width), cy=cy, cx=cx)


def minmax_sides(size: int, minmax: tuple[float, float]) -> tuple[int, int]:
    """timm's side range for ``rand_bbox_minmax``: ``[int(size * min), int(size * max))``."""
    return int(size * minmax[0]), int(size * minmax[1])


def rand_bbox_minmax(u: dict[str, jax.Array], height: int, width: int,
                     minmax: tuple[float, float]) -> dict[str, jax.Array]:
    """timm ``rand_bbox_minmax``: sides uniform in ``[int(H min), int(H max))`` (and for W), the
    box placed uniformly where it fits, from uniforms ``u`` (``h``, ``w``, ``y``, ``x``). timm
    raises when ``int(H min) == int(H max)``; here the side is then ``int(H min)``. Returns
    ``yl, yh, xl, xh``."""
    (h_lo, h_hi), (w_lo, w_hi) = minmax_sides(height, minmax), minmax_sides(width, minmax)
    cut_h = uniform_int(u["h"], h_lo, max(h_hi, h_lo + 1))
    cut_w = uniform_int(u["w"], w_lo, max(w_hi, w_lo + 1))
    yl = uniform_int(u["y"], 0, height - cut_h + 1)
    xl = uniform_int(u["x"], 0, width - cut_w + 1)
    return dict(yl=yl, yh=yl + cut_h, xl=xl, xh=xl + cut_w)


def symmetric_betas(key: jax.Array, alphas: list[float], shape: tuple[int, ...]) -> jax.Array:
    """``Beta(a, a)`` draws of ``shape`` for each ``a`` in ``alphas``, ``(len(alphas), *shape)``.

    ``jax.random.beta``'s method (``G_1 / (G_1 + G_2)`` from log-gamma draws, scaled by their
    maximum) with all the gamma draws in one loop-free ``loggamma`` call (``_gamma.py``: no
    while loop, so no host round trip on a GPU).
    """
    alphas = [min(a, ALPHA_MAX) for a in alphas]  # beyond float32: the same 0.5 draws
    a = jnp.asarray(alphas, jnp.float32).reshape((len(alphas), 1) + (1,) * len(shape))
    log_g = loggamma(key, jnp.broadcast_to(a, (len(alphas), 2) + shape))
    top = jnp.maximum(log_g[:, 0], log_g[:, 1])
    g_a, g_b = jnp.exp(log_g[:, 0] - top), jnp.exp(log_g[:, 1] - top)
    return g_a / (g_a + g_b)


# -- the sampler: per-sample lam, use_cutmix, box and partner ----------------------------------
def _expand(values: jax.Array, n: int, mode: str, middle) -> jax.Array:
    """Per-sample values ``(N, ...)`` from the drawn ones: one per batch (broadcast), ``N // 2``
    pair values mirrored to ``(i, N-1-i)`` with ``middle`` for an odd batch's middle sample
    (pair), or as they are (elem)."""
    if mode == "batch":
        return jnp.broadcast_to(values, (n,) + jnp.shape(values))
    if mode == "pair":
        mid = jnp.full((n % 2,) + values.shape[1:], middle, values.dtype)
        return jnp.concatenate([values, mid, values[::-1]])
    return values


def mix_sample(key: jax.Array, n: int, height: int, width: int, *, mixup_alpha: float,
               cutmix_alpha: float, cutmix_minmax: tuple[float, float] | None, prob: float,
               switch_prob: float, mode: str) -> dict[str, jax.Array]:
    """The params of a batch of ``n`` (see the module docstring), drawn as timm draws them:
    one draw per batch, per pair ``(i, N-1-i)`` (``N // 2``) or per sample, by ``mode``.

    Draws: ``k_u, k_beta = jax.random.split(key)``; ``u = jax.random.uniform(k_u, (6 m,))``
    (``m`` draws each: the mixing coin, the switch coin, the box's row, column, height and
    width draws); the Beta draws ``symmetric_betas(k_beta, [mixup_alpha, cutmix_alpha], (m,))``
    for the methods that are on (no cutmix Beta with ``cutmix_minmax``, where the box gives
    ``lam``).
    """
    if cutmix_minmax is not None:
        cutmix_alpha = 1.0  # timm forces it: lam then comes from the box
    shape = {"batch": (), "pair": (n // 2,), "elem": (n,)}[mode]
    k_u, k_beta = jax.random.split(key)
    u = uniforms(k_u, p=shape, switch=shape, y=shape, x=shape, h=shape, w=shape)
    # With cutmix_minmax, lam comes from the box: its Beta draw would be unused (not drawn).
    alphas = [a for a in (mixup_alpha, 0.0 if cutmix_minmax else cutmix_alpha) if a > 0]
    draws = symmetric_betas(k_beta, alphas, shape) if alphas else None
    beta_mix = draws[0] if mixup_alpha > 0 else None
    beta_cut = draws[-1] if cutmix_alpha > 0 and not cutmix_minmax else None
    cut_draw = beta_cut if beta_cut is not None else jnp.full(shape, 0.5)  # 0.5: placeholder
    mixed = u["p"] < prob
    if mixup_alpha > 0 and cutmix_alpha > 0:
        use_cutmix = u["switch"] < switch_prob
        lam = jnp.where(use_cutmix, cut_draw, beta_mix)
    elif mixup_alpha > 0 or cutmix_alpha > 0:
        use_cutmix = jnp.full(shape, cutmix_alpha > 0)
        lam = beta_mix if mixup_alpha > 0 else cut_draw
    else:  # nothing enabled: no mixing (timm's mixup_enabled = False)
        use_cutmix = jnp.zeros(shape, bool)
        lam = jnp.ones(shape)
    lam = jnp.where(mixed, lam.astype(jnp.float32), 1.0)
    use_cutmix = use_cutmix & mixed
    if cutmix_minmax is not None:
        box = rand_bbox_minmax(u, height, width, cutmix_minmax)
        area = (box["yh"] - box["yl"]) * (box["xh"] - box["xl"])
        lam = jnp.where(use_cutmix, 1.0 - area / float(height * width), lam)
    else:
        box = rand_bbox(u, height, width, lam)
    box = jnp.stack([box["yl"], box["xl"], box["yh"] - box["yl"], box["xh"] - box["xl"]],
                    axis=-1).astype(jnp.int32)
    out = dict(lam=_expand(lam.astype(jnp.float32), n, mode, 1.0),
               use_cutmix=_expand(use_cutmix, n, mode, False), box=_expand(box, n, mode, 0))
    out["perm"] = jnp.arange(n - 1, -1, -1, dtype=jnp.int32)  # timm's flip: partner N-1-i
    return out


def mix_batch(images: jax.Array, soft: jax.Array, params: dict[str, jax.Array], *,
              correct: bool) -> tuple[jax.Array, jax.Array]:
    """Applies params: where ``lam != 1``, sample ``i`` becomes ``lam x_i + (1 - lam) x_j``
    (mixup) or ``x_i`` with the box pasted from ``x_j`` (cutmix), ``j = perm[i]``; soft labels
    mix with ``lam``, or for cutmix with ``correct`` with ``1 - box area / image area``. uint8
    images are rounded to nearest, as timm's FastCollateMixup (``np.rint``)."""
    n, height, width, channels = images.shape
    perm = params["perm"]
    lam = params["lam"].astype(jnp.float32)
    box = params["box"]
    active = lam != 1.0
    cut = params["use_cutmix"] & active
    weight = lam
    if correct:
        weight = jnp.where(cut, 1.0 - (box[:, 2] * box[:, 3]) / float(height * width), lam)
    weight = jnp.where(active, weight, 1.0).astype(jnp.float32)
    w_y = weight[:, None]
    mixed_y = soft * w_y + jnp.take(soft, perm, axis=0) * (1.0 - w_y)

    def mix(images):
        # Rows of W*C values (row_box_mask): XLA:CPU's loop over them vectorises.
        x = images.astype(jnp.float32).reshape(n, height, width * channels)
        partner = jnp.take(x, perm, axis=0)
        lam_x = lam[:, None, None]
        blended = x * lam_x + partner * (1.0 - lam_x)
        blended = jnp.where((active & ~cut)[:, None, None], blended, x)
        mask = row_box_mask(height, width, channels, box[:, 0], box[:, 1], box[:, 2], box[:, 3])
        out = jnp.where(mask & cut[:, None, None], partner, blended)
        return to_dtype(out.reshape(images.shape), images.dtype, rounding="round")

    def paste_or_mix(images):
        return jax.lax.cond(jnp.any(active & ~cut), mix, _paste(perm, box, cut), images)

    if not is_int(images.dtype):
        return mix(images), mixed_y
    return platform_dependent(images, cpu=paste_or_mix, default=mix), mixed_y


def _paste(perm: jax.Array, box: jax.Array, cut: jax.Array):
    """``mix_batch``'s images where no sample blends (cutmix's draws), uint8 on the CPU: each
    ``cut`` sample takes its partner's levels inside its box, in the images' own dtype. The
    same levels as the float32 mix (a pasted or kept level is a whole number there, rounded to
    itself); without its float32 arithmetic over every value the loop is a select of two
    bytes (B=16, 224^2 uint8 on a 2-core CPU: 1.03 -> 0.55 ms for a box of 14% of the image;
    the mix grew with the box, 0.94-1.78 ms at 256^2). A GPU runs the float32 mix: no branch
    there."""

    def paste(images):
        n, height, width, channels = images.shape
        x = images.reshape(n, height, width * channels)
        # Out of range: the float32 mix's NaN, converted to 0.
        partner = jnp.take(x, perm, axis=0, mode="fill", fill_value=0)
        mask = row_box_mask(height, width, channels, box[:, 0], box[:, 1], box[:, 2], box[:, 3])
        return jnp.where(mask & cut[:, None, None], partner, x).reshape(images.shape)

    return paste


def mix_masks(targets: dict[str, jax.Array], params: dict[str, jax.Array],
              **_: object) -> dict[str, jax.Array]:
    """How masks follow the mixing ops (their ``targets`` hook): a cutmix sample takes its
    partner's mask inside the pasted box (the pixels there are the partner's); a mixup sample
    keeps the mask of the image with the larger weight (its own when ``lam >= 0.5``), since ids
    cannot be blended. Boxes and keypoints are refused (torchvision's CutMix/MixUp refuse them
    too)."""
    m = targets["masks"]
    _, height, width, _ = m.shape
    partner = jnp.take(m, params["perm"], axis=0)
    lam = params["lam"]
    active = lam != 1.0
    cut = params["use_cutmix"] & active
    swap = active & ~cut & (lam < 0.5)
    out = jnp.where(swap[:, None, None, None], partner, m)
    box = params["box"]
    inside = box_mask(height, width, box[:, 0], box[:, 1], box[:, 2], box[:, 3]) & \
        cut[:, None, None]
    return {"masks": jnp.where(inside[..., None], partner, out)}


_TARGETS = Follow(masks="hook", points="refuse", batch=mix_masks,
                  reason="mixing two images has no single box or keypoint set (torchvision's "
                         "CutMix/MixUp refuse them too); mix before adding boxes, or drop them")


def _alpha(value: float) -> float:
    """Param validate of the Beta alphas: 0 (off) or at least ``ALPHA_MIN``; above
    ``ALPHA_MAX`` (beyond float32 too) the same 0.5 draws as ``ALPHA_MAX``, which it becomes."""
    if 0.0 < value < ALPHA_MIN:
        raise ValueError(f"a positive alpha below {ALPHA_MIN:g} underflows float32 and would give "
                         f"NaN images; pass 0 to disable, or an alpha >= {ALPHA_MIN:g} (Beta(a, a) "
                         f"is then already 0 or 1 with probability 1/2 each)")
    return min(value, ALPHA_MAX)


def _alpha_param(default: float, doc: str, alias: str | None = None) -> Param:
    return Param(default, low=0.0, neutral=0.0, validate=_alpha,
                 aliases={alias: "timm"} if alias else (),
                 doc=doc + f"; 0 or >= {ALPHA_MIN:g} (float32 Beta draws)")


def _mix(op_name, images, labels, params, *, num_classes, label_smoothing, correct):
    _check_classes(labels, num_classes, op_name)
    return mix_batch(images, soft_targets(labels, num_classes, label_smoothing), params,
                     correct=correct)


def _mixup_sample(key, meta, params, *, alpha, p, mode, **_):
    return mix_sample(key, meta.batch, meta.height, meta.width, mixup_alpha=alpha,
                      cutmix_alpha=0.0, cutmix_minmax=None, prob=p, switch_prob=0.0, mode=mode)


def _cutmix_sample(key, meta, params, *, alpha, minmax, p, mode, **_):
    return mix_sample(key, meta.batch, meta.height, meta.width, mixup_alpha=0.0,
                      cutmix_alpha=alpha, cutmix_minmax=minmax, prob=p, switch_prob=1.0,
                      mode=mode)


def _mixup_cutmix_sample(key, meta, params, *, mixup_alpha, cutmix_alpha, cutmix_minmax, prob,
                         switch_prob, mode, **_):
    return mix_sample(key, meta.batch, meta.height, meta.width, mixup_alpha=mixup_alpha,
                      cutmix_alpha=cutmix_alpha, cutmix_minmax=cutmix_minmax, prob=prob,
                      switch_prob=switch_prob, mode=mode)


# -- the ops ------------------------------------------------------------------------------------
def _common(smoothing: float) -> dict[str, Param]:
    return {
        "num_classes": Param(None, kind="int", low=1, required=True,
                             doc="number of classes of the soft labels"),
        "label_smoothing": Param(smoothing, low=0.0, high=1.0, neutral=0.0,
                                 doc="timm label smoothing of the one-hot targets"),
    }


_MODE_DOC = "one draw per batch, per pair (i, N-1-i) or per sample"


def _how_often() -> dict[str, Param]:
    """``p`` and ``mode`` of ``mixup`` and ``cutmix``: how often, and over what, they mix."""
    return {
        "p": Param(1.0, low=0.0, high=1.0, neutral=0.0, aliases={"prob": "timm"},
                   doc="probability of mixing (per batch, pair or sample, by mode)"),
        "mode": Param("batch", choices=MODES, doc=_MODE_DOC),
    }
_MINMAX = Param(None, kind="pair", low=0.0, high=1.0, optional=True,
                aliases={"cutmix_minmax": "timm"},
                doc="box side range as image fractions (timm cutmix_minmax); None = from lam")


@op(
    "mixup",
    params={
        "alpha": _alpha_param(1.0, "lambda ~ Beta(alpha, alpha); 0 disables mixing",
                              "mixup_alpha"),
        **_common(0.0),
        **_how_often(),
    },
    level="batch",
    inputs=("images", "labels"),
    targets=_TARGETS,
    sample=_mixup_sample,
    reference="timm.data.Mixup (mixup_alpha, prob, mode, label_smoothing; cutmix_alpha=0)",
)
def mixup(images, labels, params, *, alpha, num_classes, label_smoothing, p, mode):
    """Blends each image with its partner in the reversed batch; labels become soft.

    timm Mixup with ``cutmix_alpha=0``: ``lam ~ Beta(alpha, alpha)`` once per batch
    (``mode="batch"``), per pair ``(i, N-1-i)`` (``"pair"``) or per sample (``"elem"``), applied
    with probability ``p`` (else ``lam = 1``); sample ``i`` becomes
    ``lam * x_i + (1 - lam) * x_{N-1-i}``, and its soft target
    ``lam * y_i + (1 - lam) * y_{N-1-i}`` with label smoothing on the one-hot rows. uint8 images
    are rounded to nearest (timm's FastCollateMixup ``np.rint``). Deviations: timm requires an
    even batch; here an odd batch's middle sample is its own partner (unchanged). timm's
    ``label_smoothing`` default is 0.1; this op's is 0 (see ``mixup_cutmix`` for timm's
    defaults). Beta draws are float32: a positive ``alpha`` below 1e-30 is a ParamError (it
    would underflow to NaN; from 1e-30 down the draw is already 0 or 1 with probability 1/2
    each), and alphas above 1e30 are drawn as 1e30 (the draw is 0.5 to float32 precision
    there; beyond 3.4e38 it would be NaN).

    Params: ``lam``, ``use_cutmix`` (all False), ``box``, ``perm`` (see the module docstring);
    ``apply`` with a given ``lam`` (N,) and ``perm`` (N,) mixes exactly those.
    """
    return _mix("mixup", images, labels, params, num_classes=num_classes,
                label_smoothing=label_smoothing, correct=True)


@op(
    "cutmix",
    params={
        "alpha": _alpha_param(1.0, "lambda ~ Beta(alpha, alpha); 0 disables (unless minmax is "
                                   "set)", "cutmix_alpha"),
        "minmax": _MINMAX,
        "correct_lam": Param(True, doc="lambda = 1 - pasted area / image area after clipping"),
        **_common(0.0),
        **_how_often(),
    },
    level="batch",
    inputs=("images", "labels"),
    targets=_TARGETS,
    sample=_cutmix_sample,
    reference="timm.data.Mixup (cutmix_alpha, cutmix_minmax, correct_lam; mixup_alpha=0)",
)
def cutmix(images, labels, params, *, alpha, minmax, correct_lam, num_classes, label_smoothing, p,
           mode):
    """Pastes a box of each image's partner (the reversed batch) into it; labels become soft.

    timm Mixup with ``mixup_alpha=0``: with probability ``p`` (per batch, pair or sample, by
    ``mode``), ``lam ~ Beta(alpha, alpha)`` and the box is timm's ``rand_bbox``: sides
    ``floor(H sqrt(1 - lam))`` by ``floor(W sqrt(1 - lam))``, centre uniform over the pixels,
    clipped at the border; with ``minmax`` it is ``rand_bbox_minmax`` (sides uniform in
    ``[int(H min), int(H max))``, placed inside the image; alpha is then irrelevant). Sample
    ``i`` takes the box from sample ``N-1-i`` (in ``"pair"`` mode both members of a pair
    exchange the same box); its soft target is ``lam * y_i + (1 - lam) * y_{N-1-i}``, where
    ``lam`` is ``1 - box area / image area`` when ``correct_lam`` or ``minmax`` (else the Beta
    draw). In ``"batch"`` mode one box serves the whole batch; in ``"pair"``/``"elem"`` each
    pair/sample has its own. ``alpha=0`` without ``minmax`` disables mixing (the labels still
    become soft). Deviations: odd batches as in ``mixup``; ``label_smoothing`` defaults to 0
    (timm 0.1); when ``int(H min) == int(H max)`` timm raises and this op uses that side;
    ``alpha`` is 0 or at least 1e-30, and alphas above 1e30 are drawn as 1e30, as in ``mixup``.

    Params: ``lam``, ``use_cutmix``, ``box`` ((N, 4) top, left, height, width), ``perm`` (see
    the module docstring).
    """
    return _mix("cutmix", images, labels, params, num_classes=num_classes,
                label_smoothing=label_smoothing, correct=correct_lam or minmax is not None)


@op(
    "mixup_cutmix",
    params={
        "mixup_alpha": _alpha_param(1.0, "mixup lambda ~ Beta(a, a); mixup is active if > 0"),
        "cutmix_alpha": _alpha_param(0.0, "cutmix lambda ~ Beta(a, a); cutmix is active if > 0"),
        "cutmix_minmax": _MINMAX,
        "prob": Param(1.0, low=0.0, high=1.0, neutral=0.0,
                      doc="probability of mixing (per batch, pair or sample, by mode)"),
        "switch_prob": Param(0.5, low=0.0, high=1.0,
                             doc="probability of cutmix instead of mixup when both are active"),
        "mode": Param("batch", choices=MODES, doc=_MODE_DOC),
        "correct_lam": Param(True, doc="cutmix lambda = 1 - pasted area / image area"),
        **_common(0.1),
    },
    level="batch",
    inputs=("images", "labels"),
    targets=_TARGETS,
    sample=_mixup_cutmix_sample,
    reference="timm.data.Mixup",
)
def mixup_cutmix(images, labels, params, *, mixup_alpha, cutmix_alpha, cutmix_minmax, prob,
                 switch_prob, mode, correct_lam, label_smoothing, num_classes):
    """Mixup or cutmix with timm ``Mixup``'s parameters and draws; returns soft labels.

    Per batch, pair ``(i, N-1-i)`` or sample (``mode``): with probability ``prob`` the
    sample is mixed; when both mixup and cutmix are active (``mixup_alpha > 0`` and
    ``cutmix_alpha > 0`` or ``cutmix_minmax``), cutmix is chosen with probability
    ``switch_prob`` and ``lam`` is drawn from that method's Beta. Mixup and cutmix then act as
    the ``mixup`` and ``cutmix`` ops describe (``cutmix_minmax`` forces ``cutmix_alpha = 1``
    and ``lam`` from the box, as timm). Targets are timm's ``mixup_target``: smoothed one-hot
    rows (on ``1 - s + s/K``, off ``s/K``) mixed with the partner's rows by ``lam``.
    Defaults are timm's, except ``num_classes``, which is required (timm defaults to 1000).
    Deviations: odd batches as in ``mixup``; with mixup and cutmix both disabled timm asserts,
    this op does not mix (as timm with ``mixup_enabled = False``: the labels still become soft);
    timm's ``multi_label`` targets are not offered (float soft labels ``(N, K)`` are mixed as
    given, without smoothing); each alpha is 0 or at least 1e-30, and alphas above 1e30 are
    drawn as 1e30, as in ``mixup``.

    Params: ``lam``, ``use_cutmix``, ``box``, ``perm`` (see the module docstring).
    """
    return _mix("mixup_cutmix", images, labels, params, num_classes=num_classes,
                label_smoothing=label_smoothing,
                correct=correct_lam or cutmix_minmax is not None)
