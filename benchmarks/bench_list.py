"""How long ``augjax list`` takes with 200 installed plugin ops, and proof that it imports none.

Writes 20 distributions of 10 ops each (dist-info + a module that raises if imported) into a
temporary directory, puts it first on the path, and measures:

- in-process: a fresh ``Registry()`` scanning every installed distribution and listing
  (cold), ``records(include_all=True)``, and a second ``list_ops()`` on the same registry (the
  memoised scan);
- the command line in a subprocess: ``python -m augjax.cli.main list``, next to
  ``python -c "import augjax"`` and an empty interpreter for scale.

Usage: ``python benchmarks/bench_list.py [--ops 200] [--dists 20] [--repeat 7] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = "raise RuntimeError('augjax list imported a plugin module')\n"


def make_site(root: str, n_ops: int, n_dists: int) -> list[str]:
    from augjax.testing import write_distribution

    names = []
    per = -(-n_ops // n_dists)
    for d in range(n_dists):
        ops = {f"bench{d}_op{i}": f"bench_mod{d}:bench{d}_op{i}"
               for i in range(per) if d * per + i < n_ops}
        write_distribution(root, f"bench-pack{d}", "1.0", ops=ops,
                           modules={f"bench_mod{d}.py": SOURCE})
        names += ops
    return names


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def in_process(root: str, names: list[str], repeat: int) -> dict[str, float]:
    from augjax._plugins.registry import Registry

    sys.path.insert(0, root)
    try:
        def cold():
            listed = Registry().list_ops()
            assert set(names) <= set(listed), "not every fake op was listed"

        cold_times = timed(cold, repeat)
        reg = Registry()
        all_times = timed(lambda: reg.records(include_all=True), repeat)
        warm_times = timed(reg.list_ops, repeat)
        imported = [m for m in sys.modules if m.startswith("bench_mod")]
        assert not imported, f"listing imported {imported}"
        return {"scan_and_list_cold_ms": 1e3 * statistics.median(cold_times),
                "records_include_all_ms": 1e3 * statistics.median(all_times),
                "list_memoised_ms": 1e3 * statistics.median(warm_times),
                "listed_ops": len(reg.list_ops())}
    finally:
        sys.path.remove(root)


def subprocess_times(root: str, names: list[str], repeat: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUGJAX_")}
    env["PYTHONPATH"] = root
    check = ("import sys; from augjax.cli.main import main; rc = main(['list']); "
             "bad = [m for m in sys.modules if m.startswith('bench_mod')]; "
             "assert not bad, bad; sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True,
                         text=True, check=True)
    assert all(name in out.stdout for name in names), "the CLI did not list every fake op"

    def run(*args):
        return lambda: subprocess.run([sys.executable, *args], env=env, check=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    return {
        "cli_augjax_list_s": statistics.median(timed(run("-m", "augjax.cli.main", "list"),
                                                     repeat)),
        "import_augjax_s": statistics.median(timed(run("-c", "import augjax"), repeat)),
        "empty_interpreter_s": statistics.median(timed(run("-c", "pass"), repeat)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--dists", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="augjax-bench-list-") as root:
        names = make_site(root, args.ops, args.dists)
        results = {"plugin_ops": len(names), "distributions": args.dists,
                   "repeat": args.repeat, "cpu_count": os.cpu_count(),
                   "load_average_1min": os.getloadavg()[0]}
        results.update(in_process(root, names, args.repeat))
        results.update(subprocess_times(root, names, args.repeat))
    for key, value in results.items():
        print(f"{key:>26}: {value:.3f}" if isinstance(value, float) else f"{key:>26}: {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
