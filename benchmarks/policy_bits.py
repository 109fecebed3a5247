"""Digests of every policy's outputs under every layer form, to compare two trees bitwise.

A refactor of the policy layers (``augjax/policies``, the Pallas forms) that changes no formula
changes no bit. This prints, for each policy configuration, dtype, layer form
(``augjax.policies._engine.LAYER``; ``fused`` runs the Pallas kernels in Pallas' interpreter
on the CPU) and seed, a SHA-256 of the output, with each tree imported in its own process:

    python benchmarks/policy_bits.py --tree /path/to/old --out /tmp/old.json
    python benchmarks/policy_bits.py --against /tmp/old.json --tree .

Exit status 1 and the differing rows where the trees disagree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

FORMS = ("auto", "switch", "families", "compact", "fused")


def policies():
    import augjax

    P = augjax.policies
    return {
        "ra": P.rand_augment(n=2, m=9),
        "ra_noise": P.rand_augment(n=3, m=7, mstd=0.5),
        "ra_3ops": P.rand_augment(n=2, m=9, ops=("Equalize", "Rotate", "Color")),
        "ra_dali": P.rand_augment(n=2, m=9, style="dali"),
        "ra_dali_nm": P.rand_augment(n=2, m=9, style="dali", increasing=False),
        "ra_timm": P.from_timm("rand-m9-mstd0.5-inc1"),
        "ra_timm_w": P.from_timm("rand-m9-n3-tweights"),
        "ta": P.trivial_augment_wide(),
        "ta_dali": P.trivial_augment_wide(style="dali"),
        "aa": P.auto_augment(),
        "aa_cifar": P.auto_augment("cifar10"),
        "aa_svhn": P.auto_augment("svhn"),
        "aa_v0": P.auto_augment("v0"),
        "aa_orig": P.auto_augment("original", mstd=0.5),
        "am": P.augmix(),
        "am_partial": P.augmix(all_ops=False, depth=2),
        "am_timm": P.from_timm("augmix-m5-w3-d2"),
        "am_timm_b": P.from_timm("augmix-m3-w2-b1"),
    }


def digests(forms, seeds, batch, size):
    import jax
    import jax.numpy as jnp
    import numpy as np

    import augjax
    import augjax.policies._engine as engine

    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (batch, size, size, 3), dtype=np.uint8)
    base[0] = 7  # a flat image (autocontrast, equalize edge cases)
    out = {}
    for form in forms:
        engine.LAYER = form
        for name, policy in policies().items():
            for dtype in ("uint8", "float32"):
                if form == "fused" and dtype != "uint8":
                    continue
                x = jnp.asarray(base if dtype == "uint8" else base.astype(np.float32) / 255.0)
                for seed in seeds:
                    y = np.asarray(augjax.compose(policy)(x, key=jax.random.key(seed)))
                    h = hashlib.sha256(y.tobytes() + str(y.dtype).encode()).hexdigest()[:16]
                    out[f"{form}/{name}/{dtype}/{seed}"] = h
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--forms", nargs="*", default=list(FORMS))
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--against", default=None,
                    help="an earlier --out file: its first tree's digests come first")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(digests(args.forms, args.seeds, args.batch, args.size)))
        return
    results = []
    if args.against:
        with open(args.against) as f:
            results.append(next(iter(json.load(f).values())))
    for tree in args.tree:
        tree = os.path.abspath(tree)
        env = dict(os.environ, PYTHONPATH=f"{tree}:{tree}/augjax_contrib/src",
                   AUGJAX_PROGRAM_CACHE="0")
        cmd = [sys.executable, os.path.abspath(__file__), "--one", "--forms", *args.forms,
               "--seeds", *map(str, args.seeds), "--batch", str(args.batch),
               "--size", str(args.size)]
        proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True,
                              check=True)
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"{tree}: {len(results[-1])} digests", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(zip(args.tree, results[-len(args.tree):])), f, indent=1)
    differ = [k for k in results[0] if any(r.get(k) != results[0][k] for r in results[1:])]
    for k in differ:
        print("differs:", k)
    print(f"{len(results[0])} rows, {len(differ)} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
