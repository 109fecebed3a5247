"""Composition benchmark: does a chain cost more than its ops?

Every ordered pair (a, b) of the 20 ops of ``compose_cases.pair_ops`` runs as one chain,
``compose(a, b)``, against the two ops alone: ``a`` on the batch and ``b`` on ``a``'s output
(the size and dtype it sees in the chain), each drawing the params it draws in the chain (the
chain's slices ``chain[0:1]``, ``chain[1:2]``: op j of a chain folds j into its key, so
``compose(b)`` alone drew other params than ``b`` in the chain, and an op whose cost depends on
its draw was compared with other work: cutmix's box). The ratio is chain / (a + b) of the
medians; the
"paired" ratio is the median over rounds of the same quotient within a round (the chain and its
two parts alternate in every round, so a load change hits all three). Then the ImageNet training
chain (random resized crop, flip, colour jitter, normalize) against the sum of its four ops and
against augmax, dm-pix and kornia (``compose_cases.PEERS``) at each ``--peer-batches`` size,
and six ops alone against the peers that have them (``compose_cases.op_peers``).

    python benchmarks/compose.py                       # CPU, B=16, 256^2 -> 224^2 uint8
    python benchmarks/compose.py --ops flip rotate     # the pairs of a few ops
    python benchmarks/compose.py --device gpu --batch 256 --time-limit 540

Writes ``results/compose-<machine>-<date>.json`` (``--out``) and prints the worst pairs and the
peers' rows. Target: every pair <= 1.1x the sum of its parts; the ImageNet chain no
slower than augmax and kornia on the CPU, and no slower than the sum of its ops on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from compose_cases import (  # noqa: E402
    CLASSES,
    PAIR_OPS_COUNT,
    PEERS,
    imagenet_chain,
    op_peers,
    pair_ops,
)

TARGET = 1.1


def _call(chain, x, labels, key):
    """``chain`` on ``x`` (and ``labels`` when it mixes them): (images, labels)."""
    if "labels" in chain.inputs:
        return chain(x, labels, key=key)
    return chain(x, key=key), labels


#: What a row's ms are: "wall" (time to the results) or "cpu" (the CPU time of this process,
#: all its threads: XLA's and torch's; set by --clock).
CLOCK = {"fn": time.perf_counter}


#: Minor page faults per call of each function timed by :func:`_timed`, in the order timed
#: (read by :func:`time_pair`): a program whose buffers the allocator gave back to the kernel
#: pays one fault per 4 KiB page it writes on every call.
FAULTS: list[float] = []


def _timed(fn, iters: int) -> float:
    import jax

    clock = CLOCK["fn"]
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = clock()
    out = None
    for _ in range(iters):
        out = fn()
    jax.block_until_ready(out)
    ms = (clock() - t0) * 1e3 / iters
    FAULTS.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / iters)
    return ms


def _rounds(fns: list, iters: int, reps: int, warmup: int = 2,
            faults: list[list[float]] | None = None) -> list[list[float]]:
    """ms per call of each of ``fns``, ``reps`` rounds, the functions alternating in each;
    ``faults``: gets each function's minor page faults per call, per round."""
    import jax

    for fn in fns:
        for _ in range(warmup):
            jax.block_until_ready(fn())
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            times[i].append(_timed(fn, iters))
            if faults is not None:
                faults[i].append(FAULTS[-1])
    return times


#: glibc's mallopt parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Makes glibc keep freed blocks in the process (blocks up to 32 MiB from its heaps, none
    trimmed below 1 GiB), as ``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=
    1073741824`` would; False where the C library has no ``mallopt``. By default glibc serves
    a large block with a fresh mapping or trims it back to the kernel depending on the sizes
    freed before (its thresholds move with them), so in a process that has run hundreds of
    programs a program's output or temporaries can be faulted in, page by page, on every call
    while the same program in a fresh process takes no fault: compose(cutmix, resize) took
    1,902 faults per call after 13 other pairs (1.38x its parts) and none in a fresh process
    (0.99x), random_resized_crop + flip 495 (1.17x) against none (1.02-1.03x); which program
    of a pair pays depends on the history, not on the pair. With freed memory kept, no
    program pays for another's history."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 30))


def _iters_for(ms: float, row_ms: float) -> int:
    return max(1, min(20, int(row_ms / max(ms, 0.05))))


def pair_list(args) -> list[tuple[str, str]]:
    """The ordered pairs to time: ``--pairs`` (``first+second``), else every pair of ``--ops``
    (rows of ``--first`` only), plus ``--sample`` pairs drawn at random from the rest of the
    matrix; in matrix order, or shuffled (``--shuffle SEED``: a run cut short by
    ``--time-limit`` then leaves out a random subset, not the last rows)."""
    import random

    names = list(pair_ops(args.out_size))
    ops = args.ops or names
    if args.pairs:
        chosen = []
        for token in args.pairs:
            a, sep, b = token.partition("+")
            if not sep or a not in names or b not in names:
                raise SystemExit(f"--pairs: expected FIRST+SECOND of {names}, got {token!r}")
            chosen.append((a, b))
    else:
        chosen = [(a, b) for a in (args.first or ops) for b in ops]
    if args.pairs_over:
        old = json.loads(Path(args.pairs_over).read_text())["pairs"]
        chosen += [(r["first"], r["second"]) for r in old
                   if r.get("final_ratio", r.get("ratio", 0.0)) > TARGET]
    if args.sample:
        rng = random.Random(args.seed)
        rest = [(a, b) for a in names for b in names if (a, b) not in chosen]
        chosen += rng.sample(rest, min(args.sample, len(rest)))
    chosen = list(dict.fromkeys(chosen))
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(chosen)
    return chosen


def run_pairs(args, x, labels, key, rows: list[dict], save) -> list[dict]:
    """Times each pair of :func:`pair_list` into ``rows`` (a pair already in ``rows`` with a
    ratio, from ``--resume``, is kept), calling ``save()`` after each."""
    steps = pair_ops(args.out_size)
    done = {(r["first"], r["second"]) for r in rows if "ratio" in r}
    rows[:] = [r for r in rows if (r["first"], r["second"]) in done]
    alone: dict[str, object] = {}  # one compose(op) per op: its programs are compiled once
    chains: dict[tuple[str, str], object] = {}
    if args.warm_procs > 1:
        warm_in_processes(args, [p for p in pair_list(args) if p not in done])
    if args.warm_threads > 1:
        chains = warm(args, steps, [p for p in pair_list(args) if p not in done], x, labels, key,
                      alone)
    fresh = 0
    for a, b in pair_list(args):
        if (a, b) in done:
            continue
        row = {"first": a, "second": b}
        rows.append(row)
        if _out_of_time(args):
            row["skipped"] = "time limit"
            continue
        if args.device == "cpu" and fresh and fresh % RELEASE_EVERY == 0:
            _release()
            alone.clear()
        fresh += 1
        try:
            row.update(time_pair(steps[a], steps[b], x, labels, key, args.reps, args.row_ms,
                                 alone=(_alone(alone, steps, a), _alone(alone, steps, b, 1)),
                                 chain=chains.get((a, b))))
        except Exception as err:  # noqa: BLE001  (recorded; the matrix goes on)
            row["error"] = f"{type(err).__name__}: {str(err)[:300]}"
            continue
        _print_pair(row)
        save()
    return rows


def warm(args, steps: dict, pairs: list[tuple[str, str]], x, labels, key,
         alone: dict) -> dict[tuple[str, str], object]:
    """Each pair's chain and its two parts made and called once, ``--warm-threads`` calls at
    a time, before any is timed: XLA compiles in the calling thread with the GIL released, so
    on a machine of many cores (the GPU machine's 16) the matrix's ~420 programs compile side
    by side instead of one after the other (about 3 s per pair on an H200, mostly compiling).
    Returns the chains by pair, for :func:`time_pair`; a pair whose call fails is left out
    (it fails again, and is recorded, when timed)."""
    import concurrent.futures as futures

    import augjax
    import jax

    made = {}
    for a, b in pairs:
        made[(a, b)] = augjax.compose(steps[a], steps[b])
        _alone(alone, steps, a)
        _alone(alone, steps, b, 1)

    def one(pair):
        a, b = pair
        jax.block_until_ready(_call(made[pair], x, labels, key))
        mid, mid_labels = _call(alone[(a, 0)], x, labels, key)
        jax.block_until_ready(_call(alone[(b, 1)], mid, mid_labels, key))
        return pair

    t0 = time.perf_counter()
    ok = {}
    with futures.ThreadPoolExecutor(args.warm_threads) as pool:
        for job in futures.as_completed([pool.submit(one, p) for p in made]):
            try:
                pair = job.result()
            except Exception:  # noqa: BLE001  (timed, and recorded, later)
                continue
            ok[pair] = made[pair]
    print(f"warmed {len(ok)} of {len(made)} pairs in {time.perf_counter() - t0:.1f} s "
          f"({args.warm_threads} threads)", flush=True)
    return ok


def warm_in_processes(args, pairs: list[tuple[str, str]]) -> int:
    """``--warm-procs N``: every pair's chain and parts compiled by N processes side by side
    (``--warm-only``, a slice of the pairs each) into the persistent compilation cache this
    process reads, so that its own compiles are cache hits. Threads do not help there (tracing
    and lowering hold the GIL: 12 pairs took 52 s with 12 threads on an H100). Returns how many
    processes failed or were stopped at 60% of ``--time-limit`` (their other pairs compile when
    timed)."""
    import subprocess

    from augjax._runtime.store.compile_cache import compilation_cache_dir

    if not pairs:
        return 0
    folder = compilation_cache_dir()
    if folder is None:
        print("--warm-procs: the persistent compilation cache is off; nothing warmed", flush=True)
        return 0
    import jax

    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": folder,  # this process's cache, as set
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS":
               str(jax.config.jax_persistent_cache_min_compile_time_secs),
           "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES":
               str(jax.config.jax_persistent_cache_min_entry_size_bytes)}
    common = [sys.executable, str(Path(__file__).resolve()), "--warm-only", "--device",
              args.device, "--batch", str(args.batch), "--size", str(args.size), "--out-size",
              str(args.out_size), "--parts", args.parts, "--pairs"]
    t0 = time.perf_counter()
    slices = [pairs[i::args.warm_procs] for i in range(args.warm_procs)]
    procs = [subprocess.Popen(common + [f"{a}+{b}" for a, b in part_of], env=env,
                              stdout=subprocess.DEVNULL) for part_of in slices if part_of]
    limit = getattr(args, "time_limit", 0.0)  # warming takes at most 60% of --time-limit
    deadline = START + 0.6 * limit if limit else None
    failed = 0
    for p in procs:
        try:
            code = p.wait(None if deadline is None else max(deadline - time.perf_counter(), 1.0))
        except subprocess.TimeoutExpired:
            p.kill()
            code = p.wait()
        failed += code != 0
    print(f"warmed {len(pairs)} pairs in {len(procs)} processes in "
          f"{time.perf_counter() - t0:.1f} s ({failed} failed or stopped at 60% of the time "
          f"limit: their other pairs compile when timed)", flush=True)
    return failed


#: On the CPU, compiled programs are dropped after this many pairs (:func:`_release`).
RELEASE_EVERY = 20


def part(step, start: int):
    """``step`` alone as step ``start`` of a chain: ``compose(step, start=start)`` draws what
    ``step`` draws there (op j of a chain folds ``start + j`` into its key); with
    ``--parts own-draws``, ``compose(step)`` (:data:`PARTS`)."""
    import augjax

    return augjax.compose(step, start=start if PARTS["same_draws"] else 0)


def _alone(cache: dict, steps: dict, name: str, start: int = 0):
    """:func:`part` of the op ``name``, made once per start."""
    if (name, start) not in cache:
        cache[(name, start)] = part(steps[name], start)
    return cache[(name, start)]


#: How the two ops alone are called (set by --parts): with the draws they make in the chain
#: (``compose(a)``, ``compose(b, start=1)``: the chain's slices; the default) or with their own
#: (``compose(b)`` alone folds 0 into its key, not 1: the files before 2026-12-05's
#: ``b16-same-draws`` runs). The cost of some ops depends on their draw: cutmix reads the
#: partner image inside its box only (B=16, 256^2: 0.94 ms with an empty box, 1.78 with the
#: whole image), and with key 0 cutmix as the second step drew a box of 35% of the image and
#: alone one of 14%: flip + cutmix 1.12x, vflip + cutmix 1.10x "its parts" on identical
#: programs (the chain's fusions are the parts' fusions, one barrier between them).
PARTS = {"same_draws": True}


def _out_of_time(args) -> bool:
    """Whether ``--time-limit`` seconds have passed since the script started."""
    return bool(args.time_limit) and time.perf_counter() - START > args.time_limit


START = time.perf_counter()


def _release() -> None:
    """Drops JAX's compiled programs: each XLA:CPU executable keeps memory mappings, and after
    ~1,200 programs in one process LLVM failed ("Cannot allocate memory", the kernel's
    vm.max_map_count). augjax's own wrappers then compile again on their next call."""
    import gc

    import jax

    jax.clear_caches()
    gc.collect()


def time_pair(first, second, x, labels, key, reps: int, row_ms: float,
              alone: tuple | None = None, chain=None) -> dict:
    """compose(first, second) on ``x`` against ``first`` on ``x`` plus ``second`` on the
    output of ``first``, alternating in each of ``reps`` rounds. ``alone``: the two ops'
    own chains, if already made (``compose(first), compose(second)``); ``chain``: the pair's
    chain, if already made (:func:`warm`). The row's ``parts`` says how the ops alone drew
    (:data:`PARTS`: "same-draws" or "own-draws")."""
    import augjax

    chain = chain if chain is not None else augjax.compose(first, second)
    alone_a, alone_b = alone or (part(first, 0), part(second, 1))
    mid, mid_labels = _call(alone_a, x, labels, key)
    fns = [lambda: _call(chain, x, labels, key),
           lambda: _call(alone_a, x, labels, key),
           lambda: _call(alone_b, mid, mid_labels, key)]
    probe = [min(t) for t in _rounds(fns, 1, 1, warmup=1)]
    iters = _iters_for(max(probe), row_ms)
    faults: list[list[float]] = [[], [], []]
    chain_t, a_t, b_t = _rounds(fns, iters, reps, warmup=0, faults=faults)
    med = [statistics.median(t) for t in (chain_t, a_t, b_t)]
    return dict(chain_ms=round(med[0], 3), first_ms=round(med[1], 3),
                second_ms=round(med[2], 3), sum_ms=round(med[1] + med[2], 3),
                ratio=round(med[0] / (med[1] + med[2]), 3),
                paired_ratio=round(statistics.median(
                    c / (p + q) for c, p, q in zip(chain_t, a_t, b_t)), 3),
                iters=iters, faults_per_call={k: round(statistics.median(f), 1) for k, f in
                                              zip(("chain", "first", "second"), faults)},
                parts="same-draws" if PARTS["same_draws"] else "own-draws")


def _print_pair(row: dict, tag: str = "") -> None:
    print(f"{tag}{row['first']:>20} + {row['second']:<20} chain {row['chain_ms']:8.2f}  parts "
          f"{row['first_ms']:7.2f} + {row['second_ms']:7.2f}  ratio {row['ratio']:.2f} "
          f"({row['paired_ratio']:.2f})  faults/call "
          f"{'/'.join(f'{v:g}' for v in row.get('faults_per_call', {}).values()) or '-'}",
          flush=True)


def recheck(args, rows: list[dict], x, labels, key) -> None:
    """Times each pair over the target again (``--recheck`` rounds, the matrix's first reading
    kept): on a shared machine one reading of a few rounds can be caught by a load spike. The
    pair's final ratio (``final_ratio``) is the recheck's paired ratio."""
    steps = pair_ops(args.out_size)
    for row in rows:
        if row.get("ratio", 0.0) <= TARGET and row.get("paired_ratio", 0.0) <= TARGET:
            if "ratio" in row:
                row["final_ratio"] = min(row["ratio"], row["paired_ratio"])
            continue
        if _out_of_time(args):
            row["recheck_skipped"] = "time limit"
            continue
        try:
            again = time_pair(steps[row["first"]], steps[row["second"]], x, labels, key,
                              args.recheck, args.row_ms)
        except Exception as err:  # noqa: BLE001
            row["recheck_error"] = f"{type(err).__name__}: {str(err)[:300]}"
            continue
        row["recheck"] = again
        row["final_ratio"] = again["paired_ratio"]
        _print_pair({**row, **again}, tag="recheck ")


def run_peers(args, device: str) -> list[dict]:
    """The ImageNet chain: augjax, the sum of its four ops, and each peer, per batch size."""
    import jax
    import numpy as np

    rows = []
    for b in args.peer_batches:
        host = harness.host_batches(b, args.size, n=1)[0]
        x = jax.device_put(host, jax.devices(device)[0])
        key = jax.random.key(0)
        chain = imagenet_chain(args.out_size)
        parts = [part(step, i) for i, step in enumerate(chain)]  # its draws in the chain
        inputs = [x]
        for part in parts[:-1]:
            inputs.append(part(inputs[-1], key=key))
        fns = {"augjax": lambda: chain(x, key=key)}
        for i, part in enumerate(parts):
            fns[f"augjax {part[0].name} alone"] = (lambda p=part, v=inputs[i]: p(v, key=key))
        for name, make in PEERS.items():
            try:
                if name == "kornia":
                    import torch

                    tdev = "cuda" if device == "gpu" else "cpu"
                    run = make(args.out_size, tdev)
                    xt = torch.from_numpy(np.asarray(host)).to(tdev)
                    fns[name] = _torch_fn(run, xt, tdev)
                else:
                    run = make(args.out_size)
                    fns[name] = (lambda r=run: r(x))
            except Exception as err:  # noqa: BLE001  (not installed, or it fails: recorded)
                rows.append({"batch": b, "name": name,
                             "error": f"{type(err).__name__}: {str(err)[:300]}"})
        names = list(fns)
        med, iters = _timed_groups(fns, args)
        sum_ops = sum(v for n, v in med.items() if n.endswith(" alone"))
        for n in names:
            rows.append({"batch": b, "name": n, "ms": round(med[n], 3), "iters": iters,
                         "augjax_over_this": round(med["augjax"] / med[n], 3)})
        rows.append({"batch": b, "name": "sum of the four ops alone", "ms": round(sum_ops, 3),
                     "augjax_over_this": round(med["augjax"] / sum_ops, 3)})
        for row in rows:
            if row.get("batch") == b and "ms" in row:
                print(f"B={b:<4} {row['name']:<44} {row['ms']:9.2f} ms   augjax / this "
                      f"{row['augjax_over_this']:.2f}", flush=True)
    return rows


def run_op_peers(args, device: str) -> list[dict]:
    """Each op of :func:`compose_cases.op_peers` alone, augjax against each peer, on the
    batch at the first of ``--peer-batches`` (the ops' inputs: the full-size batch)."""
    import augjax
    import jax
    import numpy as np

    b = args.peer_batches[0]
    host = harness.host_batches(b, args.size, n=1)[0]
    x = jax.device_put(host, jax.devices(device)[0])
    key = jax.random.key(0)
    steps = pair_ops(args.out_size)
    tdev = "cuda" if device == "gpu" else "cpu"
    rows = []
    try:
        table = op_peers()
    except ImportError as err:
        return [{"error": f"ImportError: {err}"}]
    for op, peers in table.items():
        chain = augjax.compose(steps[op])
        fns = {"augjax": lambda c=chain: c(x, key=key)}
        for name, make in peers.items():
            try:
                run = make(args.out_size, tdev)
                if name == "kornia":
                    import torch

                    fns[name] = _torch_fn(run, torch.from_numpy(np.asarray(host)).to(tdev), tdev)
                else:
                    fns[name] = (lambda r=run: r(x))
            except Exception as err:  # noqa: BLE001
                rows.append({"op": op, "name": name, "batch": b,
                             "error": f"{type(err).__name__}: {str(err)[:300]}"})
        names = list(fns)
        med, _ = _timed_groups(fns, args)
        for n in names:
            rows.append({"op": op, "name": n, "batch": b, "ms": round(med[n], 3),
                         "augjax_over_this": round(med["augjax"] / med[n], 3)})
            print(f"B={b:<4} {op:<20} {n:<8} {med[n]:9.2f} ms   augjax / this "
                  f"{med['augjax'] / med[n]:.2f}", flush=True)
    return rows


def _timed_groups(fns: dict, args) -> tuple[dict[str, float], int]:
    """Median ms of each of ``fns``: the JAX programs alternating in their rounds, kornia in
    its own (torch's threads, busy after each call, slowed the JAX program timed next: augjax's
    random_resized_crop 3.6 -> 28 ms in rounds shared with kornia)."""
    med: dict[str, float] = {}
    iters = 1
    for group in ([n for n in fns if n != "kornia"], [n for n in fns if n == "kornia"]):
        if not group:
            continue
        probe = [min(t) for t in _rounds([fns[n] for n in group], 1, 1, warmup=2)]
        iters = _iters_for(max(probe), args.row_ms)
        times = _rounds([fns[n] for n in group], iters, args.reps, warmup=0)
        med.update({n: statistics.median(t) for n, t in zip(group, times)})
    return med, iters


def _torch_fn(run, xt, tdev: str):
    """A kornia call whose result is waited for like a JAX array's (``block_until_ready``)."""
    import torch

    class _Done:
        def __init__(self, t):
            self.t = t

        def block_until_ready(self):
            if tdev == "cuda":
                torch.cuda.synchronize()
            return self

    return lambda: _Done(run(xt))


def worst(rows: list[dict], n: int = 10) -> list[dict]:
    done = [r for r in rows if "ratio" in r]
    return sorted(done, key=lambda r: -r.get("final_ratio", r["ratio"]))[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--batch", type=int, default=None, help="B (16 on CPU, 256 on GPU)")
    parser.add_argument("--size", type=int, default=256, help="input side")
    parser.add_argument("--out-size", type=int, default=224, help="side after crop/resize")
    parser.add_argument("--ops", nargs="*", help=f"the ops of the matrix (default: all "
                                                 f"{PAIR_OPS_COUNT})")
    parser.add_argument("--first", nargs="*", help="only pairs whose first op is one of these")
    parser.add_argument("--pairs", nargs="*", metavar="FIRST+SECOND",
                        help="only these pairs (instead of --ops / --first)")
    parser.add_argument("--pairs-over", default=None, metavar="FILE",
                        help="add the pairs over the target in this result file")
    parser.add_argument("--sample", type=int, default=0,
                        help="add this many pairs drawn at random from the rest of the matrix")
    parser.add_argument("--seed", type=int, default=0, help="the seed of --sample")
    parser.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                        help="time the pairs in a random order (a cut-off run keeps a random "
                             "subset)")
    parser.add_argument("--resume", default=None, metavar="FILE",
                        help="keep the pairs timed in this (partial) result file, time the rest")
    parser.add_argument("--reps", type=int, default=5, help="timed rounds per row")
    parser.add_argument("--row-ms", type=float, default=60.0,
                        help="about this many ms per program per round (iterations per round)")
    parser.add_argument("--time-limit", type=float, default=0.0,
                        help="seconds since the start for everything; pairs (and rechecks) "
                             "after it are recorded as skipped and the file is written")
    parser.add_argument("--no-pairs", action="store_true")
    parser.add_argument("--warm-threads", type=int, default=1,
                        help="compile every pair's programs first, this many at a time "
                             "(a GPU machine's cores; 1: each pair as it is timed)")
    parser.add_argument("--warm-procs", type=int, default=1,
                        help="compile every pair's programs first in this many processes into "
                             "the persistent compilation cache (a GPU machine's cores)")
    parser.add_argument("--warm-only", action="store_true",
                        help="make and call each pair's chain and parts once, time nothing "
                             "(what each --warm-procs process runs)")
    parser.add_argument("--recheck", type=int, default=9,
                        help="rounds of the second reading of each pair over the target (0: none)")
    parser.add_argument("--recheck-file", default=None,
                        help="only recheck the pairs of this result file (and rewrite it)")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--peers-first", action="store_true",
                        help="the ImageNet chain and the peers before the pairs (so that a "
                             "--time-limit cuts pairs, not them)")
    parser.add_argument("--peer-batches", type=int, nargs="*", default=None,
                        help="batch sizes of the peers' rows (16 64 on CPU, 256 on GPU)")
    parser.add_argument("--clock", default="wall", choices=("wall", "cpu"),
                        help="wall time, or the process's CPU time (all threads): the work "
                             "done, less disturbed by other processes on a shared machine")
    parser.add_argument("--malloc", default="keep", choices=("keep", "glibc"),
                        help="keep: glibc keeps freed memory (keep_freed_memory: no program "
                             "pays page faults for the history of the process); glibc: its "
                             "default thresholds")
    parser.add_argument("--parts", default="same-draws", choices=("same-draws", "own-draws"),
                        help="the ops alone draw what they draw in the chain (compose(b, "
                             "start=1)), or their own params (compose(b): the files before "
                             "2026-12-05's same-draws runs)")
    parser.add_argument("--note", default="", help="recorded in the file (the machine's load)")
    parser.add_argument("--out", default=None,
                        help="the result file (written after every pair: a cut-off run leaves "
                             "its rows)")
    parser.add_argument("--markdown", default=None, metavar="FILE", nargs="+",
                        help="print the tables of result files as Markdown and exit")
    parser.add_argument("--worst", default=None, metavar="FILE", nargs="+",
                        help="print the worst pairs of these result files (one table per file) "
                             "and exit")
    args = parser.parse_args(argv)
    if args.markdown:
        print("\n\n".join(markdown(json.loads(Path(f).read_text())) for f in args.markdown))
        return 0
    if args.worst:
        print("\n\n".join(worst_table(json.loads(Path(f).read_text()), Path(f).name)
                          for f in args.worst))
        return 0
    gpu = args.device == "gpu"
    # torch's OpenMP threads spin after each kornia call and took the cores from the next
    # program timed (augjax's random_resized_crop 5.8 -> 52 ms right after kornia's).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    CLOCK["fn"] = time.process_time if args.clock == "cpu" else time.perf_counter
    PARTS["same_draws"] = args.parts == "same-draws"
    args.batch = args.batch or (256 if gpu else 16)
    args.peer_batches = args.peer_batches or ([256] if gpu else [16, 64])
    warnings.simplefilter("ignore")  # normalize's output read by a later op, as a float image
    kept = args.malloc == "keep" and keep_freed_memory()
    if not (args.no_pairs or args.recheck_file):
        pair_list(args)  # a wrong --pairs name stops here, before any work

    import jax
    import numpy as np

    dev = jax.devices(args.device)[0]
    x = jax.device_put(harness.host_batches(args.batch, args.size, n=1)[0], dev)
    labels = jax.device_put(np.arange(args.batch, dtype=np.int32) % CLASSES, dev)
    key = jax.random.key(0)
    if args.warm_only:
        warm(argparse.Namespace(warm_threads=1), pair_ops(args.out_size), pair_list(args), x,
             labels, key, {})
        return 0
    if args.recheck_file:
        path = Path(args.recheck_file)
        result = json.loads(path.read_text())
        recheck(args, result["pairs"], x, labels, key)
        result["recheck"] = {"reps": args.recheck, "clock": args.clock,
                             "load_average_1min": harness.machine(gpu)["load_average_1min"]}
        path.write_text(json.dumps(result, indent=1) + "\n")
        _summary(result)
        print(f"rewrote {path}")
        return 0
    result = {"kind": "compose", "date": harness.today(), "machine": harness.machine(gpu),
              "versions": {**harness.versions(gpu), **_peer_versions()},
              "config": {"device": args.device, "batch": args.batch, "size": args.size,
                         "out_size": args.out_size, "reps": args.reps, "row_ms": args.row_ms,
                         "clock": args.clock, "recheck": args.recheck, "parts": args.parts,
                         "malloc": "keep" if kept else "glibc",
                         "dtype": "uint8", "target_ratio": TARGET,
                         "argv": sys.argv[1:] if argv is None else list(argv)},
              "note": args.note, "complete": False, "pairs": [], "peers": [], "op_peers": []}
    if args.resume:
        result["pairs"] = json.loads(Path(args.resume).read_text())["pairs"]
    tag = f"gpu-{_gpu_name()}-b{args.batch}" if gpu else "cpu"
    out = Path(args.out) if args.out else harness.RESULTS / f"compose-{tag}-{harness.today()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        result["elapsed_s"] = round(time.perf_counter() - START, 1)
        out.write_text(json.dumps(result, indent=1) + "\n")

    def peers() -> None:
        if args.no_peers:
            return
        result["peers"] = run_peers(args, args.device)
        save()
        result["op_peers"] = run_op_peers(args, args.device)
        save()

    if args.peers_first:
        peers()
    if not args.no_pairs:
        run_pairs(args, x, labels, key, result["pairs"], save)
        if args.recheck:
            recheck(args, result["pairs"], x, labels, key)
        else:  # no second reading: the paired ratio (a load change hits the three alike)
            for row in result["pairs"]:
                if "paired_ratio" in row:
                    row.setdefault("final_ratio", row["paired_ratio"])
    if not args.peers_first:
        peers()
    result["machine"]["load_average_1min_end"] = harness.machine(gpu)["load_average_1min"]
    result["complete"] = not any("skipped" in r or "recheck_skipped" in r
                                 for r in result["pairs"])
    save()
    _summary(result)
    print(f"wrote {out} ({result['elapsed_s']} s)")
    return 0


def markdown(result: dict, n: int = 12) -> str:
    """The worst pairs, the peers' ImageNet chain rows and the ops against the peers."""
    cfg = result["config"]
    done = [r for r in result["pairs"] if "ratio" in r]
    final = [r.get("final_ratio", r["ratio"]) for r in done]
    over = sum(f > TARGET for f in final)
    lines = [f"{len(done)} pairs ({cfg['device']}, B={cfg['batch']}, {cfg['size']}^2 -> "
             f"{cfg['out_size']}^2 uint8, {cfg.get('clock', 'wall')} ms), {over} over "
             f"{TARGET}x the sum of their parts after the recheck; median ratio "
             f"{statistics.median(final):.2f}." if done else "", ""]
    if done:
        lines += ["| first | second | chain (ms) | first alone | second alone | ratio | paired "
                  "| recheck (paired) |", "|---|---|---|---|---|---|---|---|"]
        for r in worst(done, n):
            again = r.get("recheck", {}).get("paired_ratio")
            lines.append(f"| {r['first']} | {r['second']} | {r['chain_ms']:.2f} | "
                         f"{r['first_ms']:.2f} | {r['second_ms']:.2f} | {r['ratio']:.2f} | "
                         f"{r['paired_ratio']:.2f} | {'-' if again is None else f'{again:.2f}'} |")
        lines.append("")
    peers = [r for r in result.get("peers", []) if "ms" in r]
    if peers:
        lines += ["| ImageNet chain | B | ms | augjax / this |", "|---|---|---|---|"]
        for r in peers:
            lines.append(f"| {r['name']} | {r['batch']} | {r['ms']:.2f} | "
                         f"{r['augjax_over_this']:.2f} |")
        lines.append("")
    ops = [r for r in result.get("op_peers", []) if "ms" in r]
    if ops:
        lines += ["| op alone | peer | B | ms | augjax / this |", "|---|---|---|---|---|"]
        for r in ops:
            lines.append(f"| {r['op']} | {r['name']} | {r['batch']} | {r['ms']:.2f} | "
                         f"{r['augjax_over_this']:.2f} |")
    return "\n".join(lines)


def worst_table(result: dict, name: str, n: int = 8) -> str:
    """One result file's pairs: how many are over the target, and the ``n`` worst by their
    final ratio (the recheck's paired ratio where there was one)."""
    cfg, m = result["config"], result["machine"]
    done = [r for r in result["pairs"] if "ratio" in r]
    skipped = sum("skipped" in r for r in result["pairs"])
    errors = sum("error" in r for r in result["pairs"])
    final = [r.get("final_ratio", r["ratio"]) for r in done]
    where = m.get("device_kind") or f"CPU, {m.get('cpu_count')} cores"
    head = (f"**{where}, B={cfg['batch']}** (`{name}`, {result['date']}, {cfg.get('clock', 'wall')}"
            f" time): {len(done)} pairs timed"
            + (f", {skipped} not reached in the time limit" if skipped else "")
            + (f", {errors} errors" if errors else "")
            + (f"; {sum(f > TARGET for f in final)} over {TARGET}x the sum of their parts, "
               f"median {statistics.median(final):.2f}x, worst {max(final):.2f}x." if done
               else "."))
    if result.get("note"):
        head += f" {result['note']}."
    lines = [head, "", "| first | second | chain (ms) | first alone | second alone | final ratio |",
             "|---|---|---|---|---|---|"]
    for r in worst(done, n):
        lines.append(f"| {r['first']} | {r['second']} | {r['chain_ms']:.2f} | {r['first_ms']:.2f} "
                     f"| {r['second_ms']:.2f} | {r.get('final_ratio', r['ratio']):.2f} |")
    return "\n".join(lines)


def _summary(result: dict) -> None:
    done = [r for r in result["pairs"] if "ratio" in r]
    if not done:
        return
    over = [r for r in done if r.get("final_ratio", r["ratio"]) > TARGET]
    print(f"\n{len(done)} pairs, {len(over)} over {TARGET}x the sum of their parts; "
          f"errors {sum('error' in r for r in result['pairs'])}, skipped "
          f"{sum('skipped' in r for r in result['pairs'])}. Worst:")
    for r in worst(done):
        print(f"  {r['first']} + {r['second']}: {r['chain_ms']} ms vs {r['first_ms']} + "
              f"{r['second_ms']} -> {r['ratio']}x (paired {r['paired_ratio']}x; final "
              f"{r.get('final_ratio')})")


def _peer_versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out = {}
    for dist in ("augmax", "dm-pix", "kornia"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def _gpu_name() -> str:
    import jax

    kind = jax.devices()[0].device_kind.lower()
    return "h200" if "h200" in kind else kind.replace(" ", "-")


if __name__ == "__main__":
    sys.exit(main())
