"""A baseline JPEG round trip (encode at a quality, decode), integer for integer as libjpeg does it.

Every stage is libjpeg(-turbo)'s own integer arithmetic, the path Pillow takes for
``Image.save(..., "JPEG", quality=q)`` and the following decode: JFIF RGB -> YCbCr with 16-bit
fixed-point coefficients, 4:2:0 chroma (2x2 averages with libjpeg's alternating rounding bias),
edge replication to whole blocks, the accurate integer forward DCT (``jfdctint.c``), quantisation
by the IJG tables scaled for the quality (``jcparam.c``, baseline: entries capped at 255) with
libjpeg-turbo's reciprocal division, dequantisation and the accurate integer inverse DCT
(``jidctint.c``), "fancy" triangular chroma upsampling (``jdsample.c``) and YCbCr -> RGB
(``jdcolor.c``). Entropy coding is lossless and is skipped. One-channel images are coded as
JPEG grayscale (luma only, no subsampling).

Being integer arithmetic throughout, the result is the same on every backend (CPU, GPU), and
equals Pillow's round trip byte for byte (``tests/catalog/test_jpeg.py``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["jpeg_roundtrip", "quant_table"]

_LUMA = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99], np.int64)
_CHROMA = np.full(64, 99, np.int64)
_CHROMA[[0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 24, 25]] = [17, 18, 24, 47, 18, 21, 26, 66,
                                                            24, 26, 56, 47, 66]

# jfdctint.c / jidctint.c constants (CONST_BITS = 13, PASS1_BITS = 2).
_C = 13
_P = 2
_F0298, _F0390, _F0541, _F0765 = 2446, 3196, 4433, 6270
_F0899, _F1175, _F1501, _F1847 = 7373, 9633, 12299, 15137
_F1961, _F2053, _F2562, _F3072 = 16069, 16819, 20995, 25172

_S = 16  # SCALEBITS of the colour converters


def _fix(x: float) -> int:
    return int(x * (1 << _S) + 0.5)


def quant_table(quality: int, chroma: bool = False) -> np.ndarray:
    """The (64,) quantisation table (natural order) libjpeg uses at ``quality`` (1..100),
    ``jpeg_set_quality(quality, force_baseline=TRUE)``."""
    q = min(max(int(quality), 1), 100)
    scale = 5000 // q if q < 50 else 200 - 2 * q
    base = _CHROMA if chroma else _LUMA
    return np.clip((base * scale + 50) // 100, 1, 255)


def _reciprocal(divisor: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """libjpeg-turbo's ``compute_reciprocal``: (reciprocal, correction, shift) per divisor, so
    that ``((|x| + correction) * reciprocal) >> shift`` is its rounded quotient."""
    b = np.floor(np.log2(divisor)).astype(np.int64)
    r = 16 + b
    fq = (np.int64(1) << r) // divisor
    fr = (np.int64(1) << r) % divisor
    c = divisor // 2
    pow2 = fr == 0
    fq = np.where(pow2, fq >> 1, fq)
    r = np.where(pow2, r - 1, r)
    c = np.where(~pow2 & (fr <= divisor // 2), c + 1, c)
    fq = np.where(~pow2 & (fr > divisor // 2), fq + 1, fq)
    return fq, c, r


def _tables() -> dict[str, np.ndarray]:
    """Per quality 1..100 (index q - 1): the tables and their divisors' reciprocals."""
    q = np.stack([np.stack([quant_table(k), quant_table(k, chroma=True)]) for k in range(1, 101)])
    fq, c, r = _reciprocal(q * 8)
    return {"q": q.astype(np.int32), "recip": fq.astype(np.uint32),
            "corr": c.astype(np.uint32), "shift": r.astype(np.uint32)}


_TABLES = _tables()


def _descale(x, n: int):
    return (x + (1 << (n - 1))) >> n


def _split(x, axis: int):
    import jax.numpy as jnp

    return [jnp.take(x, k, axis=axis) for k in range(8)]


def _odd(t4, t5, t6, t7):
    """The odd part shared by both DCTs (LL&M figure 8), before descaling."""
    z1, z2, z3, z4 = t4 + t7, t5 + t6, t4 + t6, t5 + t7
    z5 = (z3 + z4) * _F1175
    z1, z2 = z1 * -_F0899, z2 * -_F2562
    z3, z4 = z3 * -_F1961 + z5, z4 * -_F0390 + z5
    return t4 * _F0298 + z1 + z3, t5 * _F2053 + z2 + z4, t6 * _F3072 + z2 + z3, t7 * _F1501 + z1 + z4


def _fdct_pass(x, axis: int, first: bool):
    """One pass of ``jpeg_fdct_islow`` along ``axis`` (rows first, then columns)."""
    import jax.numpy as jnp

    d = _split(x, axis)
    t0, t7 = d[0] + d[7], d[0] - d[7]
    t1, t6 = d[1] + d[6], d[1] - d[6]
    t2, t5 = d[2] + d[5], d[2] - d[5]
    t3, t4 = d[3] + d[4], d[3] - d[4]
    t10, t13, t11, t12 = t0 + t3, t0 - t3, t1 + t2, t1 - t2
    n = _C - _P if first else _C + _P
    o0 = (t10 + t11) << _P if first else _descale(t10 + t11, _P)
    o4 = (t10 - t11) << _P if first else _descale(t10 - t11, _P)
    z1 = (t12 + t13) * _F0541
    o2 = _descale(z1 + t13 * _F0765, n)
    o6 = _descale(z1 + t12 * -_F1847, n)
    o7, o5, o3, o1 = (_descale(v, n) for v in _odd(t4, t5, t6, t7))
    return jnp.stack([o0, o1, o2, o3, o4, o5, o6, o7], axis=axis)


def _idct_pass(x, axis: int, first: bool):
    """One pass of ``jpeg_idct_islow`` along ``axis`` (columns first, then rows); the second
    pass returns samples, level-shifted and clamped to 0..255."""
    import jax.numpy as jnp

    d = _split(x, axis)
    z1 = (d[2] + d[6]) * _F0541
    t2, t3 = z1 + d[6] * -_F1847, z1 + d[2] * _F0765
    t0, t1 = (d[0] + d[4]) << _C, (d[0] - d[4]) << _C
    t10, t13, t11, t12 = t0 + t3, t0 - t3, t1 + t2, t1 - t2
    o0, o1, o2, o3 = _odd(d[7], d[5], d[3], d[1])
    n = _C - _P if first else _C + _P + 3
    out = [t10 + o3, t11 + o2, t12 + o1, t13 + o0, t13 - o0, t12 - o1, t11 - o2, t10 - o3]
    out = [_descale(v, n) for v in out]
    if not first:
        out = [jnp.clip(v + 128, 0, 255) for v in out]
    return jnp.stack(out, axis=axis)


def _blocks(plane):
    """(H8, W8) -> (H8/8, W8/8, 8, 8)."""
    h, w = plane.shape
    return plane.reshape(h // 8, 8, w // 8, 8).transpose(0, 2, 1, 3)


def _unblocks(b):
    nh, nw = b.shape[:2]
    return b.transpose(0, 2, 1, 3).reshape(nh * 8, nw * 8)


def _quantise(x, table: int, index):
    """Quantise and dequantise DCT coefficients with the luma (0) or chroma (1) table."""
    import jax.numpy as jnp

    q, recip, corr, shift = (jnp.asarray(_TABLES[k])[index, table].reshape(8, 8)
                             for k in ("q", "recip", "corr", "shift"))
    mag = (jnp.abs(x).astype(jnp.uint32) + corr) * recip >> shift
    return jnp.where(x < 0, -mag.astype(jnp.int32), mag.astype(jnp.int32)) * q


def _code_blocks(x, luma: int, index):
    """Forward DCT, quantise, dequantise, inverse DCT of (N, 8, 8) int32 blocks of samples
    0..255, the first ``luma`` with the luma table and the rest with the chroma table;
    ``index`` the quality - 1 (traced). The components' blocks are coded in one batch: the same
    integer steps per block as one component at a time, in a third of the program."""
    import jax.numpy as jnp

    x = _fdct_pass(_fdct_pass(x - 128, -1, True), -2, False)
    parts = [_quantise(x[:luma], 0, index)]
    if luma < x.shape[0]:
        parts.append(_quantise(x[luma:], 1, index))
    coef = jnp.concatenate(parts) if len(parts) > 1 else parts[0]
    return _idct_pass(_idct_pass(coef, -2, True), -1, False)


def _code_plane_set(planes, index):
    """Code whole-block padded planes ((H8, W8) int32: luma first, then the chroma planes) in
    one batch of blocks; the decoded planes."""
    import jax.numpy as jnp

    flat = [_blocks(p).reshape(-1, 8, 8) for p in planes]
    coded = _code_blocks(jnp.concatenate(flat) if len(flat) > 1 else flat[0], flat[0].shape[0],
                         index)
    out, start = [], 0
    for p, f in zip(planes, flat):
        out.append(_unblocks(coded[start:start + f.shape[0]].reshape(
            p.shape[0] // 8, p.shape[1] // 8, 8, 8)))
        start += f.shape[0]
    return out


def _pad_to(plane, h: int, w: int):
    import jax.numpy as jnp

    ph, pw = h - plane.shape[0], w - plane.shape[1]
    return jnp.pad(plane, ((0, ph), (0, pw)), mode="edge") if ph or pw else plane


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _downsample(plane, width_in_blocks: int):
    """``h2v2_downsample``: rows padded to even, columns to ``width_in_blocks * 16`` by edge
    replication, 2x2 sums with the bias 1, 2, 1, 2, ... along each output row, then the rows
    padded to whole blocks by repeating the last one."""
    import jax.numpy as jnp

    h, _ = plane.shape
    cols = width_in_blocks * 8
    p = _pad_to(plane, h + h % 2, cols * 2)
    s = p[0::2, 0::2] + p[0::2, 1::2] + p[1::2, 0::2] + p[1::2, 1::2]
    bias = jnp.asarray(np.arange(cols) % 2 + 1, jnp.int32)
    out = (s + bias) >> 2
    return _pad_to(out, _ceil(out.shape[0], 8) * 8, cols)


def _upsample(plane, h: int, w: int):
    """``h2v2_fancy_upsample`` of the first ``ceil(h/2) x ceil(w/2)`` samples (the real ones),
    edges replicated; libjpeg's plain 2x2 replication where that width is 2 or less. Cut to
    (h, w)."""
    import jax.numpy as jnp

    ch, cw = _ceil(h, 2), _ceil(w, 2)
    c = plane[:ch, :cw]
    if cw <= 2:
        return jnp.repeat(jnp.repeat(c, 2, axis=0), 2, axis=1)[:h, :w]
    e = jnp.pad(c, ((1, 1), (0, 0)), mode="edge")
    up = 3 * c + e[:-2]       # output rows 2i: the row above is the further one
    down = 3 * c + e[2:]      # output rows 2i + 1: the row below
    rows = jnp.stack([up, down], axis=1).reshape(2 * ch, cw)
    r = jnp.pad(rows, ((0, 0), (1, 1)), mode="edge")
    even = (3 * rows + r[:, :-2] + 8) >> 4
    odd = (3 * rows + r[:, 2:] + 7) >> 4
    return jnp.stack([even, odd], axis=2).reshape(2 * ch, 2 * cw)[:h, :w]


def _rgb_to_ycc(r, g, b):
    half = 1 << (_S - 1)
    y = (_fix(0.29900) * r + _fix(0.58700) * g + _fix(0.11400) * b + half) >> _S
    off = (128 << _S) + half - 1
    cb = (-_fix(0.16874) * r - _fix(0.33126) * g + _fix(0.50000) * b + off) >> _S
    cr = (_fix(0.50000) * r - _fix(0.41869) * g - _fix(0.08131) * b + off) >> _S
    return y, cb, cr


def _ycc_to_rgb(y, cb, cr):
    import jax.numpy as jnp

    half = 1 << (_S - 1)
    x_cb, x_cr = cb - 128, cr - 128
    r = y + ((_fix(1.40200) * x_cr + half) >> _S)
    g = y + ((-_fix(0.34414) * x_cb + half - _fix(0.71414) * x_cr) >> _S)
    b = y + ((_fix(1.77200) * x_cb + half) >> _S)
    return [jnp.clip(v, 0, 255) for v in (r, g, b)]


def jpeg_roundtrip(image, quality):
    """One HWC image (1 or 3 channels) coded at ``quality`` (an integer 1..100, traced is
    fine) and decoded, as libjpeg with its defaults does it (4:2:0 for colour). JPEG codes
    8-bit samples: a float image in [0, 1] is rounded to whole levels first and comes back as
    ``levels / 255`` in its dtype."""
    import jax.numpy as jnp

    if not jnp.issubdtype(image.dtype, jnp.integer):
        levels = jnp.clip(jnp.round(image * 255.0), 0.0, 255.0).astype(jnp.uint8)
        return jpeg_roundtrip(levels, quality).astype(image.dtype) / jnp.asarray(
            255.0, image.dtype)
    h, w, channels = image.shape
    index = jnp.clip(jnp.asarray(quality, jnp.int32), 1, 100) - 1
    x = image.astype(jnp.int32)
    hb, wb = _ceil(h, 8) * 8, _ceil(w, 8) * 8
    if channels == 1:
        (y,) = _code_plane_set([_pad_to(x[..., 0], hb, wb)], index)
        return y[:h, :w, None].astype(jnp.uint8)
    y, cb, cr = _rgb_to_ycc(x[..., 0], x[..., 1], x[..., 2])
    cwb = _ceil(_ceil(w, 2), 8)
    y, cb, cr = _code_plane_set([_pad_to(y, hb, wb), _downsample(cb, cwb), _downsample(cr, cwb)],
                                index)
    cb, cr = (_upsample(p, h, w) for p in (cb, cr))
    return jnp.stack(_ycc_to_rgb(y[:h, :w], cb, cr), axis=-1).astype(jnp.uint8)
