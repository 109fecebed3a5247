"""``augjax demo``: every op (or those matching ``--ops``) in a real DALI pipeline over sample
photographs, written as a PNG grid plus a JSON summary.

Exit status: 0 when at least one op worked (failures are listed), 1 when none did, 2 for bad
input (missing or unreadable images, an unknown op pattern).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _size(text: str) -> int:
    value = _positive(text)
    if not 16 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"expected a size from 16 to 1024 pixels, got {text!r}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run the ops in a DALI pipeline over sample photos; write a PNG grid and a JSON summary",
        description="Runs a real DALI pipeline (readers.file -> decoders.image -> resize -> augjax "
                    "ops) over the bundled photographs (or --images) and writes DIR/demo.png (one "
                    "row per op: its name, parameters and several random draws per image), "
                    "DIR/demo-views.png (a self-supervised recipe's views of each photo), "
                    "DIR/demo-clips.png (an op on clips, per clip and per frame) and "
                    "DIR/demo.json (ops, parameters, seed, timings, versions).",
    )
    p.add_argument("--out", type=Path, default=Path("augjax-demo"), metavar="DIR",
                   help="output folder (default: ./augjax-demo)")
    p.add_argument("--ops", default="*", metavar="PATTERN",
                   help="comma-separated fnmatch patterns of op names, and chains a+b of names "
                        "(default: '*', every registered op)")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                   help="cpu: CPU decoding and ops; gpu: mixed (nvJPEG) decoding and GPU ops")
    p.add_argument("--batch", type=_positive, default=4, metavar="N",
                   help="images per batch, one grid column group each (default: 4)")
    p.add_argument("--draws", type=_positive, default=2, metavar="K",
                   help="random draws (pipeline iterations) per image (default: 2)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="pipeline seed; the same seed gives the same PNG, byte for byte")
    p.add_argument("--images", type=Path, default=None, metavar="DIR",
                   help="a folder of your images (searched recursively; default: the bundled "
                        "photographs)")
    p.add_argument("--size", type=_size, default=80, metavar="PX",
                   help="images are resized and center-cropped to PX x PX (default: 80)")
    p.add_argument("--views", default="simclr", choices=("dino", "simclr", "byol", "none"),
                   help="the recipe whose views DIR/demo-views.png draws, one row per image "
                        "(default: simclr, one chain to compile; dino: global and local views, "
                        "three chains, about a minute more on a first run; none: no picture)")
    p.add_argument("--clip", default="rotate+color_jitter", metavar="OPS",
                   help="an op or chain a+b that DIR/demo-clips.png draws on clips (the photos "
                        "panned across), one draw per clip and one per frame (default: "
                        "rotate+color_jitter; none: no clips picture)")
    p.add_argument("--frames", type=_positive, default=4, metavar="T",
                   help="frames per clip (default: 4)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from augjax._demo.runner import DemoOptions, run_demo

    opts = DemoOptions(out=args.out, ops=args.ops, device=args.device, batch=args.batch,
                       seed=args.seed, images=args.images, draws=args.draws, size=args.size,
                       progress=False if args.no_progress else None,
                       views=None if args.views == "none" else args.views,
                       clip=None if args.clip == "none" else args.clip, frames=args.frames)
    result = run_demo(opts)
    n_ok, n_failed = len(result.ok), len(result.failed)
    status = f"{n_ok} ok" + (f", {n_failed} failed: {', '.join(result.failed)}" if n_failed else "")
    w, h = result.png_size
    kb = result.png.stat().st_size / 1024
    wrote = [f"{result.png} ({w}x{h}, {kb:.0f} KiB)"]
    wrote += [str(result.png.parent / r["file"]) for k in ("views", "clips")
              for r in [result.summary.get(k)] if r and r["status"] == "ok"]
    print(f"augjax demo: {n_ok + n_failed} rows ({status}) on {opts.batch} images x "
          f"{opts.draws} draws in {result.seconds:.1f} s; wrote {', '.join(wrote)} and "
          f"{result.json}")
    if not n_ok:
        print("augjax demo: error: no op worked (see the reasons above and in "
              f"{result.json})", file=sys.stderr)
        return 1
    return 0
