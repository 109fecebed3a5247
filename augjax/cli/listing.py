"""``augjax list [PATTERN] [--json] [--all]``: the registered ops, without importing plugins."""

from __future__ import annotations

import argparse
import json

from augjax._registry import REGISTRY


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list the registered ops (imports no plugin code)")
    p.add_argument("pattern", nargs="?", default="*", help="fnmatch pattern, e.g. 'color*'")
    p.add_argument("--json", action="store_true", help="print JSON records")
    p.add_argument("--all", action="store_true",
                   help="also show disabled, failed, incompatible and conflicting ops")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    records = REGISTRY.records(args.pattern, include_all=args.all)
    if args.json:
        print(json.dumps([r.as_dict() for r in records], indent=2))
        return 0
    if not records:
        print(f"no ops match {args.pattern!r}")
        return 0
    width = max(len(r.name) for r in records)
    dist_width = max(len(f"{r.distribution}=={r.version}") for r in records)
    for r in records:
        dist = f"{r.distribution}=={r.version}"
        line = f"{r.name:<{width}}  {dist:<{dist_width}}"
        if args.all:
            line += f"  {r.status:<12}  {r.entry_point}"
            if r.reason:
                line += f"  ({r.reason})"
        print(line.rstrip())
    return 0
