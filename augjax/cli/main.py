"""``augjax`` command: one module per subcommand, each with ``add_parser`` and ``run``.

Exit codes: 0 success, 1 the work failed (e.g. a check did not pass), 2 bad usage or input.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from augjax.errors import AugjaxError

#: subcommand -> module holding ``add_parser(subparsers)`` and ``run(args) -> int``.
SUBCOMMANDS = {
    "list": "augjax.cli.listing",
    "info": "augjax.cli.info",
    "demo": "augjax.cli.demo",
    "show": "augjax.cli.show",
    "check": "augjax.cli.check",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="augjax", description="Image augmentations in JAX for arrays and DALI pipelines."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in SUBCOMMANDS.items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
            continue
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        import augjax

        print(f"augjax {augjax.__version__}")
        return 0
    if not args.command:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except AugjaxError as err:
        print(f"augjax {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `augjax list | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
