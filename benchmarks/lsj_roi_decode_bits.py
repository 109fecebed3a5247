"""Is LSJ's read the same bits when only the region the resize reads is decoded?

(1) ``fn.decoders.image_slice`` of random regions vs the same region of ``fn.decoders.image``;
(2) ``fn.resize`` of the visible ROI (LSJ's draws at 320, as ``augjax.dali._ragged.visible_roi``)
of the full decode vs of the decoded region (its filter's margin, ROI shifted into it).
Painted JPEGs of 4 sizes (``examples/sample_dataset.py``), B=8.

    python benchmarks/lsj_roi_decode_bits.py [margin beyond ceil(scale), default 2] [--from-origin]
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
from nvidia.dali import fn, pipeline_def, types

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from sample_dataset import make_dataset  # noqa: E402

root = tempfile.mkdtemp(prefix="augjax-roi-bits-")
files = [str(f) for f in make_dataset(root, sizes=((480, 640), (375, 500), (333, 517),
                                                   (600, 401)) * 2)["images"]]
rng = np.random.default_rng(1)
MARGIN = int(sys.argv[1]) if len(sys.argv) > 1 else 2
FROM_ORIGIN = "--from-origin" in sys.argv  # decode [0, end + margin): the ROI keeps its floats


@pipeline_def(batch_size=8, num_threads=1, device_id=None, prefetch_queue_depth=1)
def regions():
    j, _ = fn.readers.file(files=files)
    st = fn.external_source(name="st", dtype=types.INT32)
    sh = fn.external_source(name="sh", dtype=types.INT32)
    return fn.decoders.image(j, output_type=types.RGB), fn.decoders.image_slice(
        j, st, sh, axis_names="HW", output_type=types.RGB)


rp = regions()
rp.build()
same = total = 0
for it in range(10):
    sts = [rng.integers(0, 230, 2).astype(np.int32) for _ in range(8)]
    shs = [rng.integers(1, 100, 2).astype(np.int32) for _ in range(8)]
    rp.feed_input("st", sts)
    rp.feed_input("sh", shs)
    full, part = rp.run()
    for k in range(8):
        f, q = np.array(full[k]), np.array(part[k])
        (y0, x0), (h, w) = sts[k], q.shape[:2]
        same += int(np.array_equal(f[y0:y0 + h, x0:x0 + w], q))
        total += 1
print(f"decoded region == region of the full decode: {same} of {total}")
@pipeline_def(batch_size=8, num_threads=1, device_id=None, prefetch_queue_depth=1)
def p():
    j, _ = fn.readers.file(files=files)
    rs = fn.external_source(name="rs", dtype=types.FLOAT); re = fn.external_source(name="re", dtype=types.FLOAT)
    size = fn.external_source(name="size", dtype=types.FLOAT)
    st = fn.external_source(name="st", dtype=types.INT32); sh = fn.external_source(name="sh", dtype=types.INT32)
    rs2 = fn.external_source(name="rs2", dtype=types.FLOAT); re2 = fn.external_source(name="re2", dtype=types.FLOAT)
    full = fn.decoders.image(j, output_type=types.RGB)
    a = fn.resize(full, size=size, roi_start=rs, roi_end=re, interp_type=types.INTERP_LINEAR, antialias=True)
    part = fn.decoders.image_slice(j, st, sh, axis_names="HW", output_type=types.RGB)
    b = fn.resize(part, size=size, roi_start=rs2, roi_end=re2, interp_type=types.INTERP_LINEAR, antialias=True)
    return a, b, full
pp = p(); pp.build()
from PIL import Image
shapes = [Image.open(f).size[::-1] for f in files]
bad = tot = 0; maxd = 0; values = 0
for it in range(25):
    feeds = {k: [] for k in ("rs","re","size","st","sh","rs2","re2")}
    for k in range(8):
        H, W = shapes[k]
        sc = rng.uniform(0.1, 2.0) * min(320 / H, 320 / W)  # LSJ at 320
        S = np.array([max(1, round(H*sc)), max(1, round(W*sc))])
        anchor = np.array([rng.integers(0, max(1, S[0]-320+1)), rng.integers(0, max(1, S[1]-320+1))])
        lo = np.clip(anchor, 0, S-1); hi = np.maximum(np.minimum(anchor+320, S), lo+1)
        scale = np.array([H, W]) / S
        rs, re = (lo*scale).astype(np.float32), (hi*scale).astype(np.float32)
        m = np.ceil(scale).astype(int) + MARGIN
        y0 = np.zeros(2, int) if FROM_ORIGIN else np.clip(np.floor(rs).astype(int) - m, 0, [H, W]); y1 = np.clip(np.ceil(re).astype(int) + m, 0, [H, W])
        for n, v in (("rs", rs), ("re", re), ("size", (hi-lo).astype(np.float32)), ("st", y0.astype(np.int32)), ("sh", (y1-y0).astype(np.int32)), ("rs2", (rs - y0).astype(np.float32)), ("re2", (re-y0).astype(np.float32))):
            feeds[n].append(np.asarray(v))
    for n, v in feeds.items(): pp.feed_input(n, v)
    a, b, full = pp.run()
    for k in range(8):
        x, y = np.array(a[k]), np.array(b[k]); tot += 1
        if x.shape != y.shape or not np.array_equal(x, y):
            values += int((x != y).sum()) if x.shape == y.shape else x.size
            bad += 1; d = np.abs(x.astype(int)-y).max() if x.shape == y.shape else -1; maxd = max(maxd, d)
            if bad < 0: print("diff", k, shapes[k], feeds["rs"][k], feeds["re"][k], feeds["size"][k], feeds["st"][k], feeds["sh"][k], x.shape, y.shape, d, (x!=y).sum() if x.shape==y.shape else "")
print(f"margin {MARGIN}: resized ROI of the region != of the full decode in {bad} of {tot} "
      f"images, max |diff| {maxd}, {values} of {tot * 320 * 320 * 3} values")
