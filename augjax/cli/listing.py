"""``augjax list [PATTERN] [--json] [--all] [--load] [--dist DIST] [--policies]``: the
registered ops, read from the entry-point metadata only (no plugin code is imported), unless
``--load`` imports each listed op so that the status says whether it really loads; or, with
``--policies``, the automatic-augmentation policies."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import warnings

from augjax._plugins.registry import REGISTRY
from augjax.errors import AugjaxError, AugjaxWarning


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list the registered ops (imports no plugin code unless "
                                    "--load) or the policies")
    p.add_argument("pattern", nargs="?", default="*",
                   help="fnmatch pattern on the name or 'distribution:name', e.g. 'color*'")
    p.add_argument("--json", action="store_true", help="print JSON records")
    p.add_argument("--all", action="store_true",
                   help="also show failed, incompatible, disabled and conflicting ops, with the "
                        "status, entry point and reason of every op")
    p.add_argument("--load", action="store_true",
                   help="import every listed op (except disabled and conflicting ones) so that "
                        "its status is loaded or failed, with the reason; exit 1 if one fails")
    p.add_argument("--dist", metavar="DIST", default=None,
                   help="only the ops of this distribution")
    p.add_argument("--policies", action="store_true",
                   help="list the policies (rand_augment, ...) instead of ops; "
                        "`augjax info <policy>` describes one")
    p.set_defaults(run=run)


def _load(records: list) -> int:
    """Imports each record's op (as ``augjax.get_op`` would); returns how many failed."""
    failed = 0
    for r in records:
        if r.policy is not None:  # disabled or in conflict: never imported implicitly
            continue
        try:
            REGISTRY.get(r.qualified_name)
        except AugjaxError:
            pass
        failed += r.state in ("failed", "incompatible")
    return failed


def _policies(args: argparse.Namespace) -> int:
    from augjax.policies import FACTORIES
    from augjax.policies import policy_summaries

    rows = [r for r in policy_summaries() if fnmatch.fnmatchcase(r["name"], args.pattern)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no policies match {args.pattern!r} (policies: {', '.join(FACTORIES)})")
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        print(f"{r['name']:<{width}}  {r['summary']}  ({r['variant']}: {', '.join(r['choices'])})")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.policies:
        return _policies(args)
    with warnings.catch_warnings():  # the scan's notes are printed below, once
        warnings.simplefilter("ignore", AugjaxWarning)
        records = REGISTRY.records(args.pattern, include_all=True, distribution=args.dist)
        failed = _load(records) if args.load else 0
    shown = [r for r in records
             if args.all or r.status in ("available", "loaded")
             or (r.status == "conflict" and r.state in ("available", "loaded"))]
    for note in REGISTRY.notes:
        print(f"augjax list: note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps([r.as_dict() for r in shown], indent=2))
        return 1 if failed else 0
    if not shown:
        print(f"no ops match {args.pattern!r}" + ("" if args.all else " (try --all)"))
        return 1 if failed else 0
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
    if args.all and not args.load and any(r.status == "available" for r in shown):
        print("(available = found, not imported yet; `augjax list --all --load` imports each "
              "op and shows the ones that fail)", file=sys.stderr)
    if args.load and failed:
        print(f"augjax list: {failed} op(s) failed to load", file=sys.stderr)
    return 1 if failed else 0
