"""``augjax check DIST_OR_OP``: runs the conformance kit (``augjax.testing``) on one op, on every
op of a distribution, or on the ops matching a pattern, and prints a report per op.

Exit codes: 0 every check passed (or failed as expected), 1 a check failed (an op that does not
load fails its ``check_loads`` whatever ``-k`` selects), 2 nothing matches (no op, or no check).
An op whose name another distribution also registers (a plugin reusing a built-in name, two
packs with one name) is checked and reported with a warning: users cannot reach it by its plain
name. Reasons are printed in full; a failure inside a DALI pipeline shows the error raised in the
operator, not only DALI's "Critical error in pipeline".
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import sys
import time

from augjax._plugins.registry import REGISTRY
from augjax._plugins.loader import norm_dist


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="run the conformance kit on an op or a distribution's ops")
    p.add_argument("target", metavar="DIST_OR_OP",
                   help="an op name, 'distribution:name', a distribution name (every op it "
                        "registers) or an fnmatch pattern on op names")
    p.add_argument("--check", "-k", action="append", default=None, metavar="PATTERN",
                   help="run only the checks matching this fnmatch pattern (repeatable), e.g. "
                        "'*dali*' or 'declaration'")
    p.add_argument("--expect-fail", action="append", default=[], metavar="CHECK[=REASON]",
                   help="a check expected to fail (reported as XFAIL; repeatable)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(run=run)


def _targets(target: str) -> tuple[list[str], str]:
    """The names to check and a description, or ([], error message)."""
    records = REGISTRY.records("*", include_all=True)
    if ":" in target:
        return [target], f"op {target}"
    by_name = [r for r in records if r.name == target]
    if by_name:
        return [target], f"op {target}"
    dist = [r for r in records if norm_dist(r.distribution) == norm_dist(target)]
    if dist:
        names = [r.qualified_name if r.status == "conflict" else r.name for r in dist]
        return names, f"{len(names)} op(s) of {dist[0].distribution}=={dist[0].version}"
    if any(ch in target for ch in "*?["):
        hits = [r for r in records if fnmatch.fnmatchcase(r.name, target)]
        names = [r.qualified_name if r.status == "conflict" else r.name for r in hits]
        if names:
            return names, f"{len(names)} op(s) matching {target!r}"
    known = sorted({r.name for r in records} | {r.distribution for r in records})
    close = difflib.get_close_matches(target, known, n=3)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return [], f"no op or distribution named {target!r}{hint} (see `augjax list --all`)"


def name_warnings(name: str) -> list[str]:
    """Why users may not get this op by its plain name: other distributions registering the same
    name (which one wins, how to pick this one), or a policy of that name."""
    from augjax._plugins.registry import POLICY_NAMES

    record = REGISTRY.record(name)
    others = [r for r in REGISTRY.records("*", include_all=True)
              if r.name == record.name and r is not record]
    out = []
    if others:
        owners = ", ".join(f"{r.distribution}=={r.version} ({r.status})" for r in others)
        if record.status == "conflict":
            out.append(f"op {record.name!r} of {record.distribution}=={record.version} is "
                       f"shadowed: {record.reason}. Also registered by: {owners}")
        else:
            out.append(f"op {record.name!r} of {record.distribution}=={record.version} is also "
                       f"registered by {owners}; {record.name!r} selects this one, the others "
                       f"only by qualified name")
    if record.name in POLICY_NAMES:
        out.append(f"op {record.name!r} has the name of augjax's policy augjax.{record.name}; "
                   f"augjax.ops.{record.name} and augjax.{record.name} are different things")
    return out


def run(args: argparse.Namespace) -> int:
    from augjax.testing import (  # imports JAX: only here
        CheckReport,
        CheckResult,
        check_op,
    )

    names, what = _targets(args.target)
    if not names:
        print(f"augjax check: error: {what}", file=sys.stderr)
        return 2
    expected = {}
    for item in args.expect_fail:
        check, _, reason = item.partition("=")
        check = check.strip()
        expected[check if check.startswith("check_") else f"check_{check}"] = (
            reason.strip() or "expected to fail (--expect-fail)")
    if not args.json:
        print(f"augjax check: {what}", flush=True)
    results, start, warned = [], time.perf_counter(), 0
    for name in names:
        record = REGISTRY.record(name)
        if record.status == "disabled":
            report = [CheckResult(name, "check_loads", "skipped", record.reason)]
        else:
            report = check_op(name, on_fail=None, checks=args.check,
                              expected_failed_checks=expected)
        results.extend(report)
        notes = name_warnings(name)
        warned += len(notes)
        if not args.json:
            print(f"\n{name}  ({record.distribution}=={record.version})")
            for note in notes:
                print(f"  warning: {note}")
            print(CheckReport(report).format(), flush=True)
        else:
            for note in notes:
                print(f"augjax check: warning: {note}", file=sys.stderr)
    counts = {s: sum(r.status == s for r in results)
              for s in ("passed", "failed", "xfail", "xpass", "skipped")}
    if not results and args.check:  # a pattern that selects nothing passes nothing
        from augjax.testing import CHECKS

        known = ", ".join(check.__name__ for check, _ in CHECKS)
        print(f"augjax check: error: no check matches {' '.join(map(repr, args.check))} "
              f"(the checks: {known})", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2))
    else:
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        if warned:
            summary += f"; {warned} warning(s)"
        print(f"\n{summary or 'no checks ran'} in {time.perf_counter() - start:.1f}s "
              f"({len(names)} op(s))")
    return 1 if counts["failed"] else 0
