"""The policies under each way a layer runs over a batch (``augjax.policies._engine.LAYER``).

``auto`` is what ships (on CUDA: the Pallas layer kernels where a uint8 layer qualifies, the
compacted families elsewhere; on a CPU: one sample at a time); ``fused``, ``compact``,
``families`` and ``switch`` force one form everywhere. Each form runs in a fresh process (the
form is read when a program is traced) with the program store off, B=256 x 224x224x3, uint8
and float32, ms per call (median of the repetitions), in the same run. This is the evidence
for keeping or deleting a form: a form no faster than another on the machine it serves is
code that need not exist.

    python benchmarks/policy_forms.py --out results/policy-forms-gpu-h200-<date>.json
    python benchmarks/policy_forms.py --device cpu --batch 16 --forms auto families   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FORMS = ("auto", "fused", "compact", "families", "switch")


def one_form(form: str, batch: int, size: int, dtypes: list[str], iters: int, reps: int) -> dict:
    """Times every policy of ``cases.augjax_policies`` under ``form`` in this process."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, str(HERE))
    import augjax
    import cases
    import harness

    if form != "auto":  # "auto" sets nothing, so an older tree can be timed the same way
        import augjax.policies._engine as engine

        engine.LAYER = form
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (batch, size, size, 3), dtype=np.uint8)
    keys = [jax.random.key(i) for i in range(8)]
    rows = {}
    for dtype in dtypes:
        x = jnp.asarray(base if dtype == "uint8" else base.astype(np.float32) / 255.0)
        for name, policy in cases.augjax_policies().items():
            chain = augjax.compose(policy)
            calls = iter(range(10**9))

            def call(chain=chain, x=x):
                return chain(x, key=keys[next(calls) % len(keys)])

            try:
                ms = harness.median(harness.time_call(call, iters, reps, warmup=2))
                rows[f"{dtype}/{name}"] = {"ms": round(ms, 4)}
            except Exception as err:  # noqa: BLE001 (a form may not serve a case: recorded)
                rows[f"{dtype}/{name}"] = {"error": f"{type(err).__name__}: {err}"[:300]}
            print(form, dtype, name, rows[f"{dtype}/{name}"], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--forms", nargs="*", default=list(FORMS))
    ap.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--dtypes", nargs="*", default=["uint8", "float32"])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--form-timeout", type=float, default=None,
                    help="seconds for each form's process (its rows so far are kept)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.one:
        rows = one_form(args.one, args.batch, args.size, args.dtypes, args.iters, args.reps)
        print("ROWS " + json.dumps(rows), flush=True)
        return
    sys.path.insert(0, str(HERE))
    from harness import machine, today, versions

    env = dict(os.environ, AUGJAX_PROGRAM_CACHE="0")
    if args.device == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    result = {"benchmark": "policy_forms.py", "date": today(),
              "machine": machine(gpu=args.device == "gpu"),
              "versions": versions(gpu=args.device == "gpu"),
              "batch": args.batch, "size": args.size, "forms": {}}
    out = Path(args.out) if args.out else HERE / "results" / f"policy-forms-{args.device}-{today()}.json"
    for form in args.forms:
        cmd = [sys.executable, __file__, "--one", form, "--batch", str(args.batch),
               "--size", str(args.size), "--iters", str(args.iters), "--reps", str(args.reps),
               "--dtypes", *args.dtypes]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=args.form_timeout)
            stdout, stderr = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as err:
            stdout = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
            stderr = f"timed out after {args.form_timeout} s"
        sys.stdout.write(stdout)
        line = [ln for ln in stdout.splitlines() if ln.startswith("ROWS ")]
        result["forms"][form] = (json.loads(line[-1][5:]) if line
                                 else {"error": stderr[-2000:], "printed": stdout[-4000:]})
        out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
