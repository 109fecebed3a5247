"""Mixing ops: batch-level, images and labels in, images and soft labels out (timm semantics)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from augjax._param import Param
from augjax._spec import op
from augjax.catalog._pixels import to_dtype

__all__ = ["mixup", "soft_targets"]


def soft_targets(labels: jax.Array, num_classes: int, smoothing: float) -> jax.Array:
    """timm ``one_hot`` with label smoothing: on = 1 - s + s/K, off = s/K; float soft labels
    ``(N, K)`` are passed through."""
    if jnp.issubdtype(labels.dtype, jnp.floating):
        return labels.astype(jnp.float32)
    off = smoothing / num_classes
    on = 1.0 - smoothing + off
    return jax.nn.one_hot(labels, num_classes, dtype=jnp.float32) * (on - off) + off


def _check_classes(labels: jax.Array, num_classes: int, op: str) -> None:
    from augjax.errors import InputError

    if jnp.issubdtype(labels.dtype, jnp.floating) and labels.shape[1] != num_classes:
        raise InputError(
            f"{op}: argument 'labels' holds soft labels of {labels.shape[1]} classes, but "
            f"num_classes={num_classes}",
            op=op,
            argument="labels",
        )


@op(
    "mixup",
    params={
        "alpha": Param(1.0, low=0.0, high=None, neutral=0.0,
                       doc="lambda ~ Beta(alpha, alpha); 0 disables mixing"),
        "num_classes": Param(None, kind="int", low=1, required=True,
                             doc="number of classes of the soft labels"),
        "label_smoothing": Param(0.0, low=0.0, high=1.0, neutral=0.0,
                                 doc="timm label smoothing of the one-hot targets"),
        "p": Param(1.0, low=0.0, high=1.0, neutral=0.0,
                   doc="probability of mixing (per batch or per sample, by mode)"),
        "mode": Param("batch", choices=("batch", "elem"),
                      doc="one lambda per batch, or one per sample"),
    },
    level="batch",
    inputs=("images", "labels"),
    reference="timm.data.Mixup (mixup_alpha, prob, mode batch/elem, label_smoothing)",
)
def mixup(key, images, labels, *, alpha, num_classes, label_smoothing, p, mode):
    """Blends each image with its partner in the reversed batch; labels become soft.

    timm Mixup semantics: ``lam ~ Beta(alpha, alpha)`` once per batch (``mode="batch"``) or per
    sample (``"elem"``), applied with probability ``p`` (else ``lam = 1``); sample ``i`` is mixed
    with sample ``N-1-i``: ``x = lam * x + (1 - lam) * x[::-1]``, and the soft target is
    ``lam * y + (1 - lam) * y[::-1]`` with label smoothing on the one-hot rows. uint8 images are
    rounded to nearest (timm's FastCollateMixup ``np.rint``). Deviation: timm requires an even
    batch; here an odd batch's middle sample is mixed with itself.
    """
    _check_classes(labels, num_classes, "mixup")
    n = images.shape[0]
    k_lam, k_p = jax.random.split(key)
    shape = () if mode == "batch" else (n,)
    if alpha > 0:
        lam = jax.random.beta(k_lam, alpha, alpha, shape)
        lam = jnp.where(jax.random.uniform(k_p, shape) < p, lam, 1.0)
    else:
        lam = jnp.ones(shape)
    lam = lam.astype(jnp.float32)
    lam_img = lam if mode == "batch" else lam[:, None, None, None]
    x = images.astype(jnp.float32)
    mixed = x * lam_img + x[::-1] * (1.0 - lam_img)
    y = soft_targets(labels, num_classes, label_smoothing)
    lam_y = lam if mode == "batch" else lam[:, None]
    soft = y * lam_y + y[::-1] * (1.0 - lam_y)
    return to_dtype(mixed, images.dtype, rounding="round"), soft
