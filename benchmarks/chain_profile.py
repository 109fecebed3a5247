"""Where the 4-op training chain's kernel time goes: each prefix of the chain timed on
``jax.Array`` batches, and what XLA compiled for it (kernels launched, bytes the biggest
intermediate buffers take), per batch size.

    python benchmarks/chain_profile.py --device gpu --batch 256 --out profile.json

"prefix k" runs the first k ops of flip -> color_jitter -> mixup -> normalize (CHW), so the
difference between consecutive rows is what that op adds inside the fused program. The
compiled program's text is also written next to ``--out`` (``.hlo.txt``) when given.
"""

from __future__ import annotations

import re

import jax
from pipeline_bench import (
    JITTER,
    MEAN,
    STD,
    array_batch,
    array_parser,
    time_jax,
    write_json,
)

import augjax

OPS = (
    ("flip", lambda ops: ops.flip.bind(p=0.5)),
    ("color_jitter", lambda ops: ops.color_jitter.bind(**JITTER)),
    ("mixup", lambda ops: ops.mixup.bind(alpha=0.2, num_classes=10)),
    ("normalize CHW", lambda ops: ops.normalize.bind(mean=MEAN, std=STD, chw=True)),
)


def hlo_summary(text: str) -> dict[str, int]:
    """Counts in an optimized HLO module: fusions, custom calls, loops, copies, transposes."""
    entry = text[text.find("ENTRY"):]
    return {
        "fusion kernels (entry)": len(re.findall(r"= \S+ fusion\(", entry)),
        "custom-calls": text.count("custom-call("),
        "while loops": text.count(" while("),
        "copies (entry)": len(re.findall(r"= \S+ copy\(", entry)),
        "transposes": text.count(" transpose("),
    }


def main(argv=None) -> int:
    ap = array_parser(__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    dev = jax.devices(args.device)[0]
    ops = augjax.ops
    result = {"device": str(dev), "jax": jax.__version__, "size": args.size, "batches": {}}
    for b in args.batch:
        x, y, keys = array_batch(dev, b, args.size)
        rows = {}
        for k in range(1, len(OPS) + 1):
            names = [n for n, _ in OPS[:k]]
            chain = augjax.compose(*[make(ops) for _, make in OPS[:k]])
            labels = "mixup" in names

            def call(chain=chain, labels=labels):
                return chain(x, y, key=keys) if labels else chain(x, key=keys)

            fn = jax.jit(lambda x, y, keys, chain=chain, labels=labels: (
                chain(x, y, key=keys) if labels else chain(x, key=keys)))
            text = fn.lower(x, y, keys).compile().as_text()
            ms = time_jax(call, args.iters, args.reps)
            rows[" + ".join(names)] = {"ms": ms, **hlo_summary(text)}
            print(f"B={b:<5} {' + '.join(names):<48} {ms:8.3f} ms  {hlo_summary(text)}",
                  flush=True)
            if args.out and k == len(OPS):
                with open(f"{args.out}.B{b}.hlo.txt", "w") as f:
                    f.write(text)
        result["batches"][str(b)] = rows
    write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
