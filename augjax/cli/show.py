"""``augjax show NAME``: one op across its magnitude range on one image, as a PNG strip."""

from __future__ import annotations

import argparse
from pathlib import Path

from augjax.cli.demo import _size


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _steps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 32:
        raise argparse.ArgumentTypeError(f"expected an integer from 1 to 32, got {text!r}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="one op across its magnitude range on one image, as a PNG strip",
        description="Applies op NAME to one image (a bundled photograph, or --image) for several "
                    "values of one parameter: by default evenly spaced values across the "
                    "parameter's declared magnitude range (neutral to the largest), else the "
                    "values given with --magnitudes; an op with no range to sweep is shown once, "
                    "with the parameters `augjax demo` gives it. Runs on arrays (no DALI); the "
                    "same key for every value.",
    )
    p.add_argument("name", help="op name, or distribution:name")
    p.add_argument("--param", default=None,
                   help="the parameter to vary (default: the first with a magnitude range, "
                        "else the first numeric one)")
    p.add_argument("--magnitudes", type=_number, nargs="+", default=None, metavar="V",
                   help="the values of the parameter to show")
    p.add_argument("--steps", type=_steps, default=5, metavar="N",
                   help="values across the magnitude range when --magnitudes is not given "
                        "(default: 5)")
    p.add_argument("--image", type=Path, default=None, metavar="FILE",
                   help="the image (default: a bundled photograph)")
    p.add_argument("--out", type=Path, default=None, metavar="FILE",
                   help="the PNG to write (default: ./augjax-show-NAME.png)")
    p.add_argument("--size", type=_size, default=128, metavar="PX",
                   help="the image is resized to PX on its long side (default: 128)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="the key: jax.random.key(S)")
    p.add_argument("--views", action="store_true",
                   help="NAME is a recipe (dino, simclr, byol): draw its views of two images")
    p.add_argument("--clip", type=_steps, default=None, metavar="T",
                   help="draw the op on a clip of T frames side by side: one draw per clip, "
                        "then one per frame")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from augjax._demo.sweep import run_show

    if args.views or args.clip:
        return _run_structure(args)
    result = run_show(args.name, param=args.param, magnitudes=args.magnitudes, steps=args.steps,
                      image=args.image, out=args.out, size=args.size, seed=args.seed)
    sweep = result.sweep
    what = (f"{sweep.param} = {', '.join(sweep.labels)}" if sweep.param
            else sweep.how)
    w, h = result.size
    print(f"augjax show: {args.name}, {what}; wrote {result.path} ({w}x{h})")
    return 0


def _run_structure(args: argparse.Namespace) -> int:
    from augjax._demo import DemoInputError
    from augjax._demo.structures import run_show_clip, run_show_views

    if args.views and args.clip:
        raise DemoInputError("arguments --views and --clip: give one of them")
    if args.views:
        path, (w, h) = run_show_views(args.name, image=args.image, out=args.out,
                                      size=args.size, seed=args.seed)
        print(f"augjax show: views of recipe {args.name}; wrote {path} ({w}x{h})")
    else:
        path, (w, h) = run_show_clip(args.name, frames=args.clip, image=args.image,
                                     out=args.out, size=args.size, seed=args.seed)
        print(f"augjax show: {args.name} on a clip of {args.clip} frames; wrote {path} "
              f"({w}x{h})")
    return 0
