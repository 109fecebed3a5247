"""``augjax info NAME [KEY=VALUE ...] [--json]``: an op's parameters, ranges, level, dtypes,
layouts, geometry (whether it moves pixels, how masks, boxes and keypoints follow) and source;
or a policy's defaults, magnitude scale and op space (its configuration set by ``KEY=VALUE``
options, e.g. ``augjax info rand_augment style=timm``)."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
from typing import Any

from augjax._plugins.registry import POLICY_NAMES, REGISTRY
from augjax.errors import ParamError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="describe one op (imports it) or one policy")
    p.add_argument("name", help="op name, distribution:name, or a policy name "
                                f"({', '.join(POLICY_NAMES)})")
    p.add_argument("options", nargs="*", metavar="KEY=VALUE",
                   help="policies only: configuration to describe, e.g. style=timm m=7 "
                        "(values are Python literals; anything else is a string)")
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
        "geometric": _geometry(spec),
        "targets": {"masks": spec.targets.masks, "points": spec.targets.points,
                    "how": _follow(spec)},
        "distribution": record.distribution,
        "version": record.version,
        "entry_point": record.entry_point,
        "api_version": spec.api_version,
        "params": {
            pname: {
                "kind": p.kind,
                "default": p.default,
                "range": p.describe_range(),
                "interval": None if p.kind in ("str", "bool") else p.interval,
                "low": p.low,
                "high": p.high,
                "low_exclusive": p.low_exclusive,
                "high_exclusive": p.high_exclusive,
                "aliases": {alias: lib for alias, lib in p.aliases},
                "neutral": p.neutral,
                "required": p.required,
                "magnitude": p.magnitude,
                "map": p.magnitude_map,
                "signed": p.signed,
                "levels": p.levels,
                "per_channel": p.per_channel,
                "doc": p.doc,
            }
            for pname, p in spec.params.items()
        },
    }


def _geometry(spec: Any) -> str:
    """Whether and how the op moves pixels, in words."""
    if spec.matrix is not None:
        return "yes (matrix=: a 3x3 forward matrix per sample; invertible by augjax.invert)"
    if spec.geometric:
        return "yes, without a matrix (a free-form warp: not invertible)"
    return "no (pixels stay in place)"


def _follow(spec: Any) -> dict[str, str]:
    """How each target follows the op, in words."""
    from augjax._runtime.targets.masks import mask_config

    follow = spec.targets
    refused = "refused (InputError)" + (f": {follow.reason}" if follow.reason else "")
    masks = {"keep": "kept unchanged", "hook": "the op's batch hook", "refuse": refused}
    if follow.masks == "kernel":
        config = {k: v for k, v in mask_config(spec, {}).items()
                  if k in ("interpolation", "antialias", "fill")}
        words = ", ".join(f"{k}={v!r}" for k, v in config.items())
        groups = (f", channels in groups of {max(spec.channels)}" if spec.channels is not None
                  else "")
        masks["kernel"] = f"through the kernel{f' ({words})' if words else ''}{groups}"
    points = {"keep": "kept unchanged", "hook": "the op's batch hook", "refuse": refused}
    boxes = {**points, "matrix": "moved by the matrix (the box enclosing its 4 moved corners, "
             "clamped; boxes_valid False once too small)"}
    keypoints = {**points, "matrix": "moved by the matrix (not clamped; keypoints_valid "
                 "False once outside)"}
    return {"masks": masks[follow.masks], "boxes": boxes[follow.points],
            "keypoints": keypoints[follow.points]}


def _options(name: str, items: list[str]) -> dict[str, Any]:
    out = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ParamError(f"augjax info: options are KEY=VALUE (e.g. style=timm), got {item!r}",
                             op=name)
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        out[key.strip()] = value
    return out


def run(args: argparse.Namespace) -> int:
    if args.name in POLICY_NAMES:
        return _run_policy(args)
    if args.options:
        raise ParamError(f"augjax info: KEY=VALUE options are for policies "
                         f"({', '.join(POLICY_NAMES)}); {args.name!r} is an op", op=args.name)
    info = describe(args.name)
    if args.json:
        print(json.dumps(info, indent=2, default=_json))
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
    print(f"  geometric:    {info['geometric']}")
    for target, how in info["targets"]["how"].items():
        print(f"  {target + ':':<13} {how}")
    print(f"  source:       {info['distribution']}=={info['version']} "
          f"({info['entry_point']}), authoring API {info['api_version']}")
    if info["params"]:
        print("  parameters:")
        for pname, p in info["params"].items():
            default = "required" if p["required"] else f"default {p['default']!r}"
            neutral = "" if p["neutral"] is None else f", neutral {p['neutral']!r}"
            mag = "" if p["magnitude"] is None else f", magnitude {_magnitude(p['map'])}"
            aliases = ", ".join(f"{lib} {a!r}" if lib else repr(a)
                                for a, lib in p["aliases"].items())
            aliases = f"; also called {aliases}" if aliases else ""
            unit = (", in uint8 levels (float images: /255)" if p["levels"] else "") + (
                ", one value or one per channel" if p["per_channel"] else "")
            print(f"    {pname}: {p['range']}{unit}; {default}{neutral}{mag}{aliases}")
            if p["doc"]:
                print(f"        {p['doc']}")
        if any(p["magnitude"] is not None for p in info["params"].values()):
            print("    (magnitude: (value at level 0, at the largest level) and how a policy "
                  "scales it, t = level / largest level; ± negated with probability 1/2)")
    details = _details(info["doc"], info["summary"])
    if details:
        print()
        print("  " + details.replace("\n", "\n  "))
    return 0


def _magnitude(m: Any) -> str:
    """A magnitude map as users read it: ``(value at level 0, at the largest level)`` (per
    image side for maps relative to it) and its formula of ``t``."""
    from augjax._core.magnitude import formula

    def at(t: float) -> str:
        return f"{m.value(t, 1.0, False, 1, 1):g}"

    side = f" x {m.per}" if m.per else ""
    return f"({at(0.0)}, {at(1.0)}){side}: {formula(m)}"


def _json(x: Any) -> Any:
    """JSON for what ``describe`` holds beyond plain values (a magnitude map: its fields)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses.asdict(x)
    return str(x)


def _details(doc: str, summary: str) -> str:
    """``doc`` after its summary sentence (printed first, on one line), which may run over
    several lines of ``doc`` or share its last line with the next sentence."""
    doc, want = doc.strip(), "".join(summary.split())
    i = seen = 0
    while i < len(doc) and seen < len(want):
        seen += not doc[i].isspace()
        i += 1
    if "".join(doc[:i].split()) != want:  # a summary that is not the doc's start
        return doc.split("\n", 1)[1].strip() if "\n" in doc else ""
    return doc[i:].strip()


def _run_policy(args: argparse.Namespace) -> int:
    from augjax.policies import describe_policy  # imports JAX: only here

    info = describe_policy(args.name, **_options(args.name, args.options))
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"{info['name']}: {info['summary']}")
    print("  kind:         policy (one composite step; per-sample op choice in one program)")
    print(f"  call:         {info['call']}")
    variant = info["variant"]
    print(f"  {variant['option'] + ':':<13} {', '.join(variant['choices'])}")
    print("  defaults:")
    for key, value in info["defaults"].items():
        print(f"    {key} = {value!r}")
    shown = {k: v for k, v in info["config"].items() if k not in ("augjax_config", "type")}
    if info["options"]:
        print(f"  configuration ({', '.join(f'{k}={v!r}' for k, v in info['options'].items())}"
              f"), as resolved:")
    else:
        print("  configuration (defaults), as resolved:")
    print("    " + ", ".join(f"{k}={v!r}" for k, v in shown.items()))
    print(f"  magnitude scale: {info['scale']['text']}")
    side = info["image_side"]
    print(f"  op space ({len(info['ops'])} ops; values for a {side}x{side} image where a map "
          f"depends on the side):")
    width = max(len(e["name"]) for e in info["ops"])
    for e in info["ops"]:
        target = "identity" if e["op"] is None else e["op"]
        if e["param"]:
            target += f"({e['param']})"
        fixed = "".join(f", {k}={v!r}" for k, v in e["fixed"].items())
        line = f"    {e['name']:<{width}}  {target}{fixed}"
        mag = e["magnitude"]
        if mag is not None:
            line += (f"  {mag['formula']}: {mag['at_level_0']:.4g} at level 0 .. "
                     f"{mag['at_max_level']:.4g} at the max")
            if mag["at_m"] is not None:
                line += f", {mag['at_m']:.4g} at the configured magnitude"
        print(line)
    if "subpolicies" in info:
        print(f"  sub-policies ({len(info['subpolicies'])}; (op, probability, level)):")
        for sub in info["subpolicies"]:
            print("    " + ", ".join(f"({n}, {p:g}, {lvl})" for n, p, lvl in sub))
    return 0
