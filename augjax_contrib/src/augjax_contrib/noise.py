"""Noise ops on HWC images: Gaussian, shot (Poisson) and salt-and-pepper noise.

Images are uint8 (0..255) or float32 in [0, 1]. Parameters are given on one scale for both
dtypes (as torchvision ``GaussianNoise`` does): ``sigma=0.1`` is 0.1 on float images and 25.5
levels on uint8 ones. A sample's noise field is drawn by the op's ``sample`` hook from its key
``k`` and the image shape, never from the pixel values, and is part of the params, so
``op.apply`` replays it exactly.

Params (``op.sample``; per sample, float32): ``gaussian_noise``: ``sigma``, ``noise`` ((H, W, C)
standard normal, ``jax.random.normal(k, (H, W, C))``); ``shot_noise``: ``factor``, ``events_u``
((H, W, C) uniform in [0, 1), ``uniform(k, (H, W, C))``: each value's Poisson count is the
quantile of its draw); ``salt_and_pepper``: ``prob``, ``hit_u`` and ``salt_u`` ((H, W, C') uniform
in [0, 1), C' = C per channel, else 1; ``v = uniform(k, (2, H, W, C'))``, ``hit_u, salt_u = v``:
a value is replaced where ``hit_u < prob``, by salt where ``salt_u < salt_vs_pepper``). augjax
draws ``sigma``, ``factor`` and ``prob`` (a range ``(low, high)`` uniformly, a number as is).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from augjax import Param, op
from augjax.kernels import (
    bound,
    broadcast_unbatched,
    is_int,
    platform_dependent,
    rows_product,
    to_dtype,
)
from augjax_contrib._common import API, normal, uniform

__all__ = ["gaussian_noise", "shot_noise", "salt_and_pepper"]


def _normal_field(key, meta, params, **config):
    return {"noise": normal(key, (meta.height, meta.width, meta.channels))}


@op(
    "gaussian_noise",
    params={
        "mean": Param(0.0, low=-1.0, high=1.0, neutral=0.0,
                      doc="mean of the noise, on the [0, 1] scale"),
        "sigma": Param(0.1, kind="float_or_pair", low=0.0, high=10.0, neutral=0.0,
                       doc="standard deviation on the [0, 1] scale, or a range per sample"),
        "clip": Param(True, doc="clamp the result to the valid range"),
    },
    sample=_normal_field,
    reference="torchvision.transforms.v2.GaussianNoise (torchvision 0.29)",
    api_version=API,
)
def gaussian_noise(image, params, *, mean, clip):
    """Adds Gaussian noise ``mean + sigma * z`` to every pixel and channel.

    torchvision 0.29 ``GaussianNoise(mean, sigma, clip)`` semantics. Float images:
    ``image + mean + sigma * z``, clamped to [0, 1] when ``clip``. uint8 images:
    ``image + trunc(255 * mean + 255 * sigma * z)`` in integers (the noise is truncated toward
    zero, as ``.to(torch.int16)`` does), clamped to 0..255 when ``clip``, otherwise wrapped
    modulo 256 as torchvision's uint8 cast does. ``sigma`` may be a range drawn per sample
    (torchvision has a fixed sigma). Params: ``sigma``, ``noise`` (``z``, (H, W, C) standard
    normal).
    """
    s, z = params["sigma"], params["noise"]
    if is_int(image.dtype):
        noise = jnp.trunc(jnp.float32(mean * 255.0) + z * (s * 255.0)).astype(jnp.int32)
        out = image.astype(jnp.int32) + noise
        out = jnp.clip(out, 0, 255) if clip else jnp.bitwise_and(out, 255)
        return out.astype(image.dtype)
    out = image + (jnp.float32(mean) + z * s)
    return (jnp.clip(out, 0.0, 1.0) if clip else out).astype(image.dtype)


def _poisson_window(lam: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The first count ``k0 = max(0, floor(lam - 8 sqrt(lam) - 8))`` summed by
    :func:`poisson_quantile` and its number of further terms ``ceil(lam + 12 sqrt(lam) + 12) -
    k0`` (float32)."""
    sd = jnp.sqrt(lam)
    k0 = jnp.maximum(jnp.floor(lam - 8.0 * sd - 8.0), 0.0)
    return k0, jnp.ceil(lam + 12.0 * sd + 12.0) - k0


def _poisson_p0(lam: jax.Array, k0: jax.Array) -> jax.Array:
    """``P(X = k0)`` for ``X ~ Poisson(lam)``, float32."""
    log_p0 = (jnp.where(k0 > 0, k0 * jnp.log(jnp.maximum(lam, 1e-30)), 0.0) - lam
              - jax.lax.lgamma(k0 + 1.0))
    return jnp.exp(log_p0)


def poisson_quantile(u: jax.Array, lam: jax.Array) -> jax.Array:
    """The Poisson(``lam``) quantile of uniform draws ``u`` (elementwise, float32): the smallest
    ``k`` with ``P(X <= k) >= u``.

    The probabilities ``p_k`` are summed from ``k0 = max(0, floor(lam - 8 sqrt(lam) - 8))`` (the
    mass below is under 1e-15) to ``lam + 12 sqrt(lam) + 12``, and ``u`` is scaled by their
    total, so the float32 error of the first term cancels. Agrees with
    ``scipy.stats.poisson.ppf`` in float64 except where ``u`` lies within float32 rounding of a
    step of the CDF (measured: 6e-5 of the values at ``lam = 2550``, none at ``lam <= 51``).
    The loop runs ``20 sqrt(max lam) + 20`` steps, twice.
    """
    lam = jnp.asarray(lam, jnp.float32)
    k0, terms = _poisson_window(lam)
    return _poisson_quantile_loop(u, lam, k0, _poisson_p0(lam, k0), jnp.max(terms))


def _poisson_quantile_loop(u, lam, k0, p0, n):
    """:func:`poisson_quantile` summing terms ``k0 .. k0 + n`` (``p0 = P(X = k0)``) for every
    value; ``n`` broadcasts against the values (the loop runs to the largest, values with a
    smaller ``n`` add exact zeros after theirs)."""
    n = jnp.asarray(n, jnp.float32)
    n_max = jnp.max(n)

    def over_terms(body, init):
        def step(state):
            j, p, acc = state
            return j + 1.0, p * lam / (k0 + j + 1.0), body(jnp.where(j <= n, p, 0.0), acc)

        return jax.lax.while_loop(lambda s: s[0] <= n_max, step,
                                  (jnp.float32(0.0), p0, init))[2]

    total = over_terms(lambda p, acc: acc + p, jnp.zeros_like(lam))
    target = u * total

    def count(p, acc):
        cdf, k = acc
        cdf = cdf + p
        return cdf, k + (cdf < target).astype(jnp.float32)

    return k0 + over_terms(count, (jnp.zeros_like(lam), jnp.zeros_like(lam)))[1]


#: Widths of the per-level CDF tables of :func:`poisson_quantile_levels` (powers of two): a
#: batch takes the narrowest that holds its longest window (rates up to about 560 fit the
#: widest, ``20 sqrt(lam) + 21 < 512`` terms); a narrower table is searched in fewer steps and
#: stays in a GPU's cache (the default factor 20, rates up to 12.75, needs 128).
TABLE_WIDTHS = (64, 128, 256, 512)

#: Terms summed per iteration of the table loop: a GPU copies each iteration's loop condition to
#: the host, so fewer, longer iterations (the extra terms past the last add exact zeros).
TABLE_UNROLL = 8


def _cdf_rows(lam, k0, p0, n, width):
    """The running sums of :func:`poisson_quantile`'s loop for rates ``lam`` ``(..., L)``: the
    totals over ``j <= n`` (``n`` broadcast against ``lam``'s leading axes) and the table
    ``(..., L, width)`` of the sums after each term, ``+inf`` past ``n``. The loop runs to
    the largest ``n``, :data:`TABLE_UNROLL` terms per iteration; rows with a smaller ``n`` add
    exact zeros after theirs; an iteration's spare terms past the table's width go to
    :data:`TABLE_UNROLL` spare columns, cut off at the end."""
    n = jnp.asarray(n, jnp.float32)[..., None]

    def term(state):
        j, p, acc, cdf = state
        acc = acc + jnp.where(j <= n, p, 0.0)
        column = jnp.where(j <= n, acc, jnp.inf)[..., None]
        cdf = jax.lax.dynamic_update_slice_in_dim(cdf, column, j.astype(jnp.int32), axis=-1)
        return j + 1.0, p * lam / (k0 + j + 1.0), acc, cdf

    def body(state):
        for _ in range(TABLE_UNROLL):
            state = term(state)
        return state

    init = (jnp.float32(0.0), p0, jnp.zeros_like(lam),
            jnp.full((*lam.shape, width + TABLE_UNROLL), jnp.inf, jnp.float32))
    _, _, total, cdf = jax.lax.while_loop(lambda s: s[0] <= jnp.max(n), body, init)
    return total, cdf[..., :width]


def _search_rows(u, levels, cdf, total):
    """``#{j : cdf[i, level, j] < u * total[i, level]}`` for every value of image ``i``
    (``cdf`` ``(N, L, T)``, ``levels`` ``(N, ...)``): a binary search (``T`` a power of two),
    each step one gather from the flattened tables (XLA's CPU gather is several times faster
    on one flat index than on batched ones). On a CPU the steps are the iterations of a loop;
    elsewhere, where each iteration of a loop copies its condition to the host, they are
    unrolled into one pass (measured on an H200, B=256: 1.97 ms for the whole op's kernel,
    against 2.39 with the steps kept apart by optimisation barriers)."""
    images, n_levels, w = cdf.shape
    lv = levels.reshape(images, -1) + (jnp.arange(images, dtype=jnp.int32) * n_levels)[:, None]
    target = u.reshape(images, -1) * total.reshape(-1)[lv]
    row = lv * w
    flat = cdf.reshape(-1)
    steps = w.bit_length() - 1

    def body(i, count):
        half = jnp.right_shift(jnp.int32(w // 2), i)
        below = flat[row + count + (half - 1)] < target
        return count + jnp.where(below, half, 0)

    def looped(count):
        return jax.lax.fori_loop(0, steps, body, count)

    def unrolled(count):
        for i in range(steps):
            count = body(jnp.int32(i), count)
        return count

    count = jax.lax.platform_dependent(jnp.zeros(lv.shape, jnp.int32), cpu=looped,
                                       default=unrolled)
    last = flat[row + w - 1] < target  # count may reach w
    count = count + (last & (count == w - 1)).astype(jnp.int32)
    return count.reshape(levels.shape)


def _quantile_levels(u, levels, lam_levels):
    """:func:`poisson_quantile_levels` for ``N`` images at once: ``u``, ``levels``
    ``(N, H, W, C)``, ``lam_levels`` ``(N, L)``: the tables' rows gathered per value; on a
    TPU, which gathers element by element (and ran out of its 16 GB on B=256 224^2 batches),
    read by matrix products (:func:`_quantile_levels_product`)."""
    if levels.shape[0] == 0:  # an empty batch: no counts (the flat indexing needs an image)
        return jnp.zeros(levels.shape, jnp.float32)
    if lam_levels.shape[1] > 256:
        return _quantile_levels_gathered(u, levels, lam_levels)
    return platform_dependent(u, levels, lam_levels, tpu=_quantile_levels_product,
                              default=_quantile_levels_gathered)


#: Bytes of table rows one step of :func:`_quantile_levels_product`'s loop reads out.
PRODUCT_CHUNK_BYTES = 2**26


def _quantile_levels_product(u, levels, lam_levels):
    """:func:`_quantile_levels_gathered`'s counts, the same: the same tables
    (:func:`_cdf_rows`), each value's row read by a product with the one-hot of its level
    (:func:`augjax.kernels.level_products.rows_product`, exact), and its count the number of
    the row's entries below ``u * total`` (what the binary search finds in the sorted row).
    A loop over images and chunks of values bounds the rows in memory
    (:data:`PRODUCT_CHUNK_BYTES`); values are kept as flat ``(N, H W C)`` rows."""
    n_img = levels.shape[0]
    q = levels.reshape(n_img, -1).astype(jnp.int32)
    uf = u.reshape(n_img, -1).astype(jnp.float32)
    k0, terms = _poisson_window(lam_levels)
    p0 = _poisson_p0(lam_levels, k0)
    n = jnp.max(terms, axis=1)

    def read(tables, fn):
        """``fn(rows, u)`` for every value, ``rows`` its level's row of ``tables``
        ``(N, L, K)``, in chunks of values per image."""
        k = tables.shape[-1]
        tables = jnp.pad(tables, ((0, 0), (0, 256 - tables.shape[1]), (0, 0)))
        p = q.shape[1]
        chunk = min(p, max(128, PRODUCT_CHUNK_BYTES // (12 * k) // 128 * 128))
        pad = -p % chunk
        qc = jnp.pad(q, ((0, 0), (0, pad))).reshape(n_img, -1, chunk)
        uc = jnp.pad(uf, ((0, 0), (0, pad))).reshape(n_img, -1, chunk)

        def image(args):
            qi, ui, table = args
            return jax.lax.map(lambda a: fn(rows_product(a[0], table), a[1]), (qi, ui))

        out = jax.lax.map(image, (qc, uc, tables))
        return out.reshape(n_img, -1)[:, :p].reshape(levels.shape)

    def from_table(width):
        def run():
            total, cdf = _cdf_rows(lam_levels, k0, p0, n, width)
            cdf = jnp.where(jnp.isinf(cdf), 2.0, cdf)  # finite for the product; above any u * total

            def count(rows, ui):
                target = ui * rows[:, width]
                below = jnp.sum((rows[:, :width] < target[:, None]).astype(jnp.int32), axis=1)
                return rows[:, width + 1] + below.astype(jnp.float32)

            return read(jnp.concatenate([cdf, total[..., None], k0[..., None]], -1), count)
        return run

    def per_value():
        def loop(rows, ui):
            return _poisson_quantile_loop(ui, rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3])

        nn = jnp.broadcast_to(n[:, None], lam_levels.shape)
        return read(jnp.stack([lam_levels, k0, p0, nn], -1), loop)

    index = sum((jnp.max(n) >= w).astype(jnp.int32) for w in TABLE_WIDTHS)
    return jax.lax.switch(index, [from_table(w) for w in TABLE_WIDTHS] + [per_value])


def _quantile_levels_gathered(u, levels, lam_levels):
    """:func:`_quantile_levels` on a CPU or GPU."""
    images = levels.shape[0]
    levels = levels.astype(jnp.int32)
    k0, terms = _poisson_window(lam_levels)
    p0 = _poisson_p0(lam_levels, k0)
    n_levels = lam_levels.shape[1]
    flat_levels = levels + (jnp.arange(images, dtype=jnp.int32) * n_levels)[:, None, None, None]
    # Each image's window: the longest of its rates' (not only of the levels it holds, which
    # would read every value). The terms a longer window adds lie beyond ``lam + 12 sqrt(lam)
    # + 12`` (each below 1e-24 of the total, at most a few hundred of them) and leave every
    # float32 sum as it was.
    n = jnp.max(terms, axis=1)
    n_max = jnp.max(n)

    def from_table(width):
        def run():
            total, cdf = _cdf_rows(lam_levels, k0, p0, n, width)
            count = _search_rows(u, levels, cdf, total)
            return k0.reshape(-1)[flat_levels] + count.astype(jnp.float32)
        return run

    def per_value():
        def at(table):
            return table.reshape(-1)[flat_levels]

        return _poisson_quantile_loop(u, at(lam_levels), at(k0), at(p0),
                                      n[:, None, None, None])

    # the narrowest table whose width exceeds the longest window, else the per-value loop
    index = sum((n_max >= w).astype(jnp.int32) for w in TABLE_WIDTHS)
    return jax.lax.switch(index, [from_table(w) for w in TABLE_WIDTHS] + [per_value])


@custom_vmap
def _quantile_levels_one(u, levels, lam_levels):
    return _quantile_levels(u[None], levels[None], lam_levels[None])[0]


@_quantile_levels_one.def_vmap
def _quantile_levels_batched(axis_size, in_batched, u, levels, lam_levels):
    """A batch of images: one table loop to the batch's longest window, one search, and one
    branch (table or per-value loop) for the whole batch, so that ``vmap`` turns neither loop
    nor the branch into selects over every value."""
    u, levels, lam_levels = broadcast_unbatched(axis_size, in_batched, (u, levels, lam_levels))
    return _quantile_levels(u, levels, lam_levels), True


def poisson_quantile_levels(u: jax.Array, levels: jax.Array, lam_levels: jax.Array) -> jax.Array:
    """:func:`poisson_quantile` ``(u, lam_levels[levels])`` for an image of integer ``levels``
    ``(H, W, C)`` (each in ``[0, L)``) whose rate depends on the level only: the same sums in
    the same order, computed once per level instead of once per value, so the counts are the
    same.

    The loop of :func:`poisson_quantile` runs over the ``L`` rates and stores each running
    sum, the CDF table ``cdf[level, j]`` (the narrowest of :data:`TABLE_WIDTHS` that holds the
    longest window, ``+inf`` past the last term); each value's count is then the number of
    entries below ``u * total[level]``, found by a binary search (``log2(width)`` gathers per
    value). When a rate needs more terms than the widest table holds (``lam`` above about 560),
    the batch takes the per-value loop instead. Each image sums the window of its largest rate
    (:func:`poisson_quantile` sums the largest of the values it is given): the terms this adds
    are below float32's resolution of the sums, so the counts are the same. Under ``vmap`` the
    batch shares one table loop, one search and one branch.
    """
    # The counts are piecewise constant in u and lam: no gradient reaches the custom_vmap.
    lam_levels = jax.lax.stop_gradient(jnp.asarray(lam_levels, jnp.float32))
    u = jax.lax.stop_gradient(jnp.asarray(u, jnp.float32))
    return _quantile_levels_one(u, levels, lam_levels)


def _events_field(key, meta, params, **config):
    return {"events_u": uniform(key, (meta.height, meta.width, meta.channels))}


@op(
    "shot_noise",
    params={
        "factor": Param(20.0, kind="float_or_pair", low=0.0, high=1000.0, neutral=0.0,
                        doc="intensity of one event in uint8 levels (0 = identity), or a range"),
    },
    sample=_events_field,
    reference="nvidia.dali.fn.noise.shot",
    api_version=API,
)
def shot_noise(image, params):
    """Replaces each value ``v`` by ``factor * Poisson(v / factor)`` (photon shot noise).

    DALI ``fn.noise.shot`` semantics on uint8 images: ``out = poisson(max(0, v / factor)) *
    factor``, rounded and saturated to 0..255; ``factor = 0`` is the identity. ``factor`` is in
    uint8 levels for both dtypes: float images are scaled by 255 before and after (DALI applies
    ``factor`` to raw float values), and clamped to [0, 1]. The Poisson count of each value is
    :func:`poisson_quantile` of its uniform draw ``events_u`` at ``lam = v / factor`` (inversion,
    so a count depends on the draw and the pixel only). uint8 images sum the CDF once per level
    (:func:`poisson_quantile_levels`); float images once per value, in a loop whose length grows
    with ``sqrt(255 / factor)``. Params: ``factor``, ``events_u`` ((H, W, C) uniform).
    """
    f = params["factor"]
    scale = 255.0 / bound(image.dtype)
    if is_int(image.dtype):  # 256 levels: the CDF sums once per level
        lam_levels = jnp.arange(256, dtype=jnp.float32) / jnp.maximum(f, 1e-6)
        lam_levels = jnp.where(f > 0, lam_levels, 0.0)  # f = 0 is the identity: no work
        events = poisson_quantile_levels(params["events_u"], image, lam_levels)
    else:
        v = image.astype(jnp.float32) * scale
        lam = jnp.maximum(v / jnp.maximum(f, 1e-6), 0.0)
        events = poisson_quantile(params["events_u"], jnp.where(f > 0, lam, 0.0))
    out = jnp.clip(events * f / scale, 0.0, bound(image.dtype))
    return jnp.where(f > 0, to_dtype(out, image.dtype, rounding="round"), image)


def _salt_fields(key, meta, params, *, per_channel, **config):
    v = uniform(key, (2, meta.height, meta.width, meta.channels if per_channel else 1))
    return {"hit_u": v[0], "salt_u": v[1]}


@op(
    "salt_and_pepper",
    params={
        "prob": Param(0.05, kind="float_or_pair", low=0.0, high=1.0, neutral=0.0,
                      doc="probability of a value being replaced, or a range per sample"),
        "salt_vs_pepper": Param(0.5, low=0.0, high=1.0,
                                doc="probability that a replaced value becomes salt"),
        "per_channel": Param(False, doc="draw the noise per channel instead of per pixel"),
        "salt": Param(1.0, low=0.0, high=1.0, doc="salt value, as a fraction of the maximum"),
        "pepper": Param(0.0, low=0.0, high=1.0, doc="pepper value, as a fraction of the maximum"),
    },
    sample=_salt_fields,
    reference="nvidia.dali.fn.noise.salt_and_pepper",
    api_version=API,
)
def salt_and_pepper(image, params, *, salt_vs_pepper, per_channel, salt, pepper):
    """Replaces random pixels (or channel values) with salt (white) or pepper (black).

    DALI ``fn.noise.salt_and_pepper`` semantics: each value is replaced with probability
    ``prob``; a replaced value is salt with probability ``salt_vs_pepper``, else pepper; with
    ``per_channel=False`` one draw per pixel covers all its channels. ``salt``/``pepper`` are
    fractions of the dtype's maximum (uint8: rounded ``255 * salt``); DALI's defaults are the
    same for uint8, but its float pepper default is -1.0, here 0.0 (float images are in [0, 1]).
    Params: ``prob``; ``hit_u``, ``salt_u`` ((H, W, C') uniform, C' = C per channel, else 1):
    replaced where ``hit_u < prob``, salt where ``salt_u < salt_vs_pepper``.
    """
    hit = params["hit_u"] < params["prob"]
    is_salt = params["salt_u"] < salt_vs_pepper
    top = bound(image.dtype)
    salt_v = jnp.asarray(round(salt * top) if is_int(image.dtype) else salt, image.dtype)
    pepper_v = jnp.asarray(round(pepper * top) if is_int(image.dtype) else pepper, image.dtype)
    return jnp.where(hit, jnp.where(is_salt, salt_v, pepper_v), image)
