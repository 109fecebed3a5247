"""``augjax info NAME [--json]``: an op's parameters, ranges, level, dtypes, layouts, source."""

from __future__ import annotations

import argparse
import json
from typing import Any

from augjax._plugins.registry import REGISTRY


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="describe one op (imports it)")
    p.add_argument("name", help="op name, or distribution:name")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=run)


def describe(name: str) -> dict[str, Any]:
    """Everything ``augjax info`` shows, as a dict."""
    record = REGISTRY.record(name)
    spec = REGISTRY.get(name)
    return {
        "name": spec.name,
        "summary": spec.summary,
        "doc": spec.doc,
        "reference": spec.reference,
        "level": spec.level,
        "inputs": list(spec.inputs),
        "outputs": list(spec.outputs),
        "random": spec.random,
        "dtypes": list(spec.dtypes),
        "output_dtype": spec.output_dtype,
        "layouts": list(spec.layouts),
        "channels": None if spec.channels is None else list(spec.channels),
        "changes_size": spec.output_size is not None,
        "distribution": record.distribution,
        "version": record.version,
        "entry_point": record.entry_point,
        "api_version": spec.api_version,
        "params": {
            pname: {
                "kind": p.kind,
                "default": p.default,
                "range": p.describe_range(),
                "low": p.low,
                "high": p.high,
                "neutral": p.neutral,
                "required": p.required,
                "magnitude": p.magnitude,
                "signed": p.signed,
                "doc": p.doc,
            }
            for pname, p in spec.params.items()
        },
    }


def run(args: argparse.Namespace) -> int:
    info = describe(args.name)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"{info['name']}: {info['summary']}")
    if info["reference"]:
        print(f"  reference:    {info['reference']}")
    print(f"  level:        {info['level']} ({' + '.join(info['inputs'])} -> "
          f"{' + '.join(info['outputs'])}){'' if info['random'] else ', deterministic'}")
    out = f" -> {info['output_dtype']}" if info["output_dtype"] else ""
    print(f"  dtypes:       {', '.join(info['dtypes'])}{out}")
    chans = "any" if info["channels"] is None else ", ".join(map(str, info["channels"]))
    print(f"  layouts:      {', '.join(info['layouts'])}   channels: {chans}")
    print(f"  source:       {info['distribution']}=={info['version']} "
          f"({info['entry_point']}), authoring API {info['api_version']}")
    if info["params"]:
        print("  parameters:")
        for pname, p in info["params"].items():
            default = "required" if p["required"] else f"default {p['default']!r}"
            neutral = "" if p["neutral"] is None else f", neutral {p['neutral']!r}"
            mag = "" if p["magnitude"] is None else f", magnitude {p['magnitude']}"
            print(f"    {pname}: {p['range']}; {default}{neutral}{mag}")
            if p["doc"]:
                print(f"        {p['doc']}")
    body = info["doc"].strip().split("\n", 1)
    if len(body) > 1:
        print()
        print("  " + body[1].strip().replace("\n", "\n  "))
    return 0
