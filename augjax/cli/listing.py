"""``augjax list [PATTERN] [--json] [--all] [--dist DIST]``: the registered ops, read from the
entry-point metadata only (no plugin code is imported)."""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from augjax._plugins.registry import REGISTRY
from augjax.errors import AugjaxWarning


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list the registered ops (imports no plugin code)")
    p.add_argument("pattern", nargs="?", default="*",
                   help="fnmatch pattern on the name or 'distribution:name', e.g. 'color*'")
    p.add_argument("--json", action="store_true", help="print JSON records")
    p.add_argument("--all", action="store_true",
                   help="also show failed, incompatible, disabled and conflicting ops, with the "
                        "status, entry point and reason of every op")
    p.add_argument("--dist", metavar="DIST", default=None,
                   help="only the ops of this distribution")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():  # the scan's notes are printed below, once
        warnings.simplefilter("ignore", AugjaxWarning)
        records = REGISTRY.records(args.pattern, include_all=True, distribution=args.dist)
    shown = [r for r in records
             if args.all or r.status in ("available", "loaded")
             or (r.status == "conflict" and r.state in ("available", "loaded"))]
    for note in REGISTRY.notes:
        print(f"augjax list: note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps([r.as_dict() for r in shown], indent=2))
        return 0
    if not shown:
        print(f"no ops match {args.pattern!r}" + ("" if args.all else " (try --all)"))
        return 0
    names = [r.qualified_name if r.status == "conflict" else r.name for r in shown]
    width = max(len(n) for n in names)
    dists = [f"{r.distribution}=={r.version}" for r in shown]
    dist_width = max(len(d) for d in dists)
    for r, name, dist in zip(shown, names, dists):
        line = f"{name:<{width}}  {dist:<{dist_width}}"
        if args.all:
            line += f"  {r.status:<12}  {r.entry_point}"
            if r.reason:
                line += f"  ({r.reason})"
        elif r.status == "conflict":
            line += "  (conflict: select it by this qualified name)"
        print(line.rstrip())
    hidden = len(records) - len(shown)
    if hidden:
        print(f"({hidden} more op(s) failed, incompatible or disabled: augjax list --all)",
              file=sys.stderr)
    return 0
