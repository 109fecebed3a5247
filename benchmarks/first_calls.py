"""First calls of the documented recipes in fresh processes: cold (empty caches) and warm (a
second process with the first one's caches), with where each first call's time goes.

    python benchmarks/first_calls.py                     # every recipe, writes the results file
    python benchmarks/first_calls.py --recipes dino,timm --out /tmp/fc.json
    python benchmarks/first_calls.py --profile dino      # one cold + warm run, every program

The recipes (each the docs' own code, on arrays, on the CPU):

- ``timm``: flip, ``from_timm("rand-m9-mstd0.5-inc1")``, color_jitter, normalize to CHW,
  random_erasing, mixup_cutmix (1000 classes); B = 16 x 224 x 224 uint8 with labels
  (``benchmarks/first_batch.py``'s chain).
- ``dino``: ``augjax.recipes.dino(local_count=6)`` (2 global views of 224, 6 local of 96) on
  8 x 256 x 256; ``dino_photos`` (on request): ``dino(interpolation="bicubic")`` (8 local
  views) on a list of the 8 bundled photos at their own sizes.
- ``grain``: docs/GRAIN.md's pipeline on augjax's 8 bundled photos (5 sizes): ``RandomMap``
  (random_resized_crop 224 + flip) in 2 grain worker processes (``ReadOptions(num_threads=1,
  prefetch_buffer_size=2)``), batches of 8, ``BatchAugment`` (rand_augment n=2 m=9, mixup,
  normalize) in the main process. "first call" is the first batch of the first iterator
  (worker start included); ``worker_first_record_s`` each worker's first record (the
  per-record first call: its programs loaded or compiled); ``second_iterator_s`` the first
  batch of a second iterator over the same dataset (new workers), and the programs its
  workers compiled and traced; ``later_images_per_s`` 30 batches after that one.
  ``grain_defaults`` (run when named) is the same pipeline with grain's ``ReadOptions``
  defaults (16 threads and 500 batches ahead per worker).
- ``lsj``: ``examples/recipes_detection.py``'s ``lsj(1024)`` (scale_jitter + flip) on 2 x 480
  x 640 with 2 boxes each (docs/guide/targets.md's snippet).
- ``clips_ra``: ``rand_augment(n=2, m=9)`` on 4 clips of 5 frames of 64 x 64
  (docs/guide/views-and-clips.md).
- ``demo``: ``augjax demo`` (its defaults), the whole command as a new process.

Each run is a child process given its own ``AUGJAX_CACHE_DIR`` (a fresh temporary directory
that the cold and the warm child of a recipe share). "first call" runs from the recipe's first
call (after imports, building the chain and making the inputs) to its output on the host;
"process" from the child's start to that point; "CPU" is the process's CPU time over the first
call (all its threads; for the demo, the command's; grain's workers are not counted), the robust
figure on a shared machine. The child counts, for the first call, JAX's
traces, lowerings and XLA compiles with their seconds (``jax_log_compiles``' records), the
persistent cache's hits, and augjax's traces and stored programs loaded. The results file
records the date, the machine, the versions and the 1-minute load average before each run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECIPES = ("timm", "dino", "grain", "lsj", "clips_ra", "demo")
#: Run on request (``--recipes grain_defaults``): the grain recipe with grain's ReadOptions.
EXTRA = ("grain_defaults", "dino_photos")
#: The issue's targets (2-core CPU), seconds: (warm, cold).
TARGETS = {"timm": (1.5, 10.0), "dino": (1.5, 10.0), "grain": (1.5, 10.0), "lsj": (1.5, 10.0),
           "clips_ra": (1.5, 10.0), "demo": (8.0, 30.0), "grain_defaults": (1.5, 10.0),
           "dino_photos": (1.5, 10.0)}

_PHASES = (("trace", re.compile(r"Finished tracing (?:\+ transforming )?(\S+) for \w+ in "
                                r"([\d.]+) sec")),
           ("lower", re.compile(r"Finished jaxpr to MLIR module conversion (\S+) in ([\d.]+) "
                                r"sec")),
           ("compile", re.compile(r"Finished XLA compilation of (\S+) in ([\d.]+) sec")),
           ("hit", re.compile(r"Persistent compilation cache hit for '([^']+)'()")))


class Profile(logging.Handler):
    """JAX's compile log records as ``(phase, name, seconds)`` (``jax_log_compiles``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for phase, pattern in _PHASES:
            m = pattern.search(message)
            if m:
                self.records.append((phase, m.group(1), float(m.group(2) or 0.0)))
                return

    def start(self) -> None:
        import jax

        jax.config.update("jax_log_compiles", True)
        logger = logging.getLogger("jax")
        logger.addHandler(self)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        self.records.clear()

    def summary(self) -> dict:
        out: dict = {}
        for phase in ("trace", "lower", "compile", "hit"):
            rows = [r for r in self.records if r[0] == phase]
            out[f"{phase}_count"] = len(rows)
            if phase != "hit":
                out[f"{phase}_s"] = round(sum(r[2] for r in rows), 3)
        return out


def _augjax_counts() -> dict:
    import augjax
    from augjax._runtime.store.programs import load_count

    return {"augjax_traces": augjax.trace_count(), "store_loads": load_count()}


def _timed(fn, profile: Profile) -> dict:
    """``fn()``'s wall time and what it traced, lowered and compiled."""
    import jax

    before = _augjax_counts()
    profile.start()
    t, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn())
    first, cpu = time.perf_counter() - t, time.process_time() - cpu
    process = time.perf_counter() - T0
    after = _augjax_counts()
    out = {"first_call_s": round(first, 3), "first_call_cpu_s": round(cpu, 3),
           "process_s": round(process, 3), **profile.summary(),
           **{k: after[k] - before[k] for k in after}}
    out["programs"] = [list(r) for r in profile.records]
    return out


# -- the recipes ---------------------------------------------------------------------------
def timm(profile: Profile) -> dict:
    import jax
    import numpy as np

    sys.path.insert(0, str(HERE))
    import first_batch

    chain = first_batch.build_chain()
    x, y = first_batch.data(16, 224)
    del np
    return _timed(lambda: chain(x, y, key=jax.random.key(0)), profile)


def dino(profile: Profile) -> dict:
    import jax
    import numpy as np

    import augjax

    recipe = augjax.recipes.dino(local_count=6)
    x = np.random.default_rng(0).integers(0, 256, (8, 256, 256, 3), dtype=np.uint8)
    return _timed(lambda: recipe(x, key=jax.random.key(0)), profile)


def dino_photos(profile: Profile) -> dict:
    """DINO's views as the reference makes them: ``recipes.dino(interpolation="bicubic")`` (8
    local views) on a list of augjax's 8 bundled photos, each at its own size (its ragged
    reads' programs: canvas buckets and tap counts)."""
    import jax
    import numpy as np

    import augjax

    recipe = augjax.recipes.dino(interpolation="bicubic")
    photos = [np.asarray(p) for p in augjax.data.sample_images(None)]
    return _timed(lambda: recipe(photos, key=jax.random.key(0)), profile)


def lsj(profile: Profile) -> dict:
    import jax
    import numpy as np

    sys.path.insert(0, str(ROOT / "examples"))
    import recipes_detection

    chain = recipes_detection.lsj(1024)
    x = np.random.default_rng(0).integers(0, 256, (2, 480, 640, 3), dtype=np.uint8)
    boxes = np.array([[[100, 80, 300, 260], [350, 200, 600, 450]]] * 2, np.float32)
    return _timed(lambda: chain(x, key=jax.random.key(0), boxes=boxes), profile)


def clips_ra(profile: Profile) -> dict:
    import jax
    import numpy as np

    import augjax

    ra = augjax.rand_augment(n=2, m=9)
    clips = augjax.Clips(np.random.default_rng(0).integers(0, 256, (4, 5, 64, 64, 3),
                                                           dtype=np.uint8))
    return _timed(lambda: ra(clips, key=jax.random.key(0)), profile)


_TIMED: list = []


def _timed_map_class() -> type:
    """``augjax.grain.RandomMap`` that appends each worker's first record time (its first
    call: the programs loaded or compiled) to :func:`_worker_log`; defined in the module
    ``first_calls`` (the workers unpickle it from there) on first use, so that importing this
    module imports no grain."""
    if __name__ != "first_calls":  # run as a script: the class lives in the importable module
        import first_calls

        return first_calls._timed_map_class()
    if not _TIMED:
        import augjax.grain

        class TimedRandomMap(augjax.grain.RandomMap):
            _timed = False

            def random_map(self, element, rng):
                if type(self)._timed:
                    return super().random_map(element, rng)
                t = time.perf_counter()
                out = super().random_map(element, rng)
                type(self)._timed = True
                with open(_worker_log(), "a") as f:
                    f.write(json.dumps({"pid": os.getpid(),
                                        "first_record_s": time.perf_counter() - t}) + "\n")
                return out

        TimedRandomMap.__qualname__ = "TimedRandomMap"
        _TIMED.append(TimedRandomMap)
    return _TIMED[0]


def __getattr__(name: str):
    if name == "TimedRandomMap":  # (how pickle finds the class in a worker)
        return _timed_map_class()
    raise AttributeError(name)


def _grain_dataset(defaults: bool = False):
    """docs/GRAIN.md's pipeline; ``defaults``: with grain's ReadOptions defaults (16 threads
    and 500 batches ahead per worker), as the page had it before 2026-12-07."""
    import grain

    import augjax
    import augjax.grain

    source = [{"image": image, "label": i}
              for i, image in enumerate(augjax.data.sample_images(None))]
    per_record = augjax.compose(augjax.ops.random_resized_crop.bind(size=224),
                                augjax.ops.flip.bind(p=0.5))
    per_batch = augjax.compose(augjax.rand_augment(n=2, m=9),
                               augjax.ops.mixup.bind(alpha=0.2, num_classes=1000),
                               augjax.ops.normalize)
    read = None if defaults else grain.ReadOptions(num_threads=1, prefetch_buffer_size=2)
    return (grain.MapDataset.source(source)
            .shuffle(seed=0).repeat()
            .map_with_index(augjax.grain.WithIndex())
            .random_map(_timed_map_class()(per_record), seed=0)
            .batch(8, drop_remainder=True)
            .to_iter_dataset(read)
            .mp_prefetch(grain.MultiprocessingOptions(num_workers=2),
                         worker_init_fn=augjax.grain.worker_init)
            .map(augjax.grain.BatchAugment(per_batch, seed=0, epoch_size=len(source))))


def _worker_log() -> Path:
    return Path(os.environ["AUGJAX_CACHE_DIR"]) / "first-calls-workers.jsonl"


def _first_records() -> list[float]:
    """The workers' first record times logged so far (seconds), and empties the log."""
    path = _worker_log()
    if not path.exists():
        return []
    times = [round(json.loads(line)["first_record_s"], 3)
             for line in path.read_text().splitlines() if line.strip()]
    path.unlink()
    return times


def _cache_files() -> int:
    """Files in the cache directory (JAX's executables and augjax's programs): a compile or a
    trace that the caches did not have writes one."""
    base = Path(os.environ["AUGJAX_CACHE_DIR"])
    return sum(1 for p in base.rglob("*") if p.is_file() and p.suffix != ".jsonl"
               and not p.name.endswith(("-atime", ".lock")))


def _grain(profile: Profile, defaults: bool) -> dict:
    import absl.flags

    if not absl.flags.FLAGS.is_parsed():  # grain's workers read absl flags (absl.app parses)
        absl.flags.FLAGS.mark_as_parsed()
    sys.path.insert(0, str(HERE))  # the workers import TimedRandomMap from here
    ds = _grain_dataset(defaults)
    files = _cache_files()
    _first_records()
    out = _timed(lambda: next(iter(ds))["image"], profile)
    out["cache_files_written"] = _cache_files() - files
    out["worker_first_record_s"] = _first_records()
    files = _cache_files()
    t = time.perf_counter()
    it = iter(ds)
    next(it)["image"].block_until_ready()
    out["second_iterator_s"] = round(time.perf_counter() - t, 3)
    out["second_iterator_cache_files_written"] = _cache_files() - files
    out["second_iterator_worker_first_record_s"] = _first_records()
    for _ in range(4):  # (past the first batches' programs)
        next(it)["image"].block_until_ready()
    t, count = time.perf_counter(), 30
    for _ in range(count):
        next(it)["image"].block_until_ready()
    out["later_images_per_s"] = round(count * 8 / (time.perf_counter() - t), 1)
    it.close()
    return out


def grain_recipe(profile: Profile) -> dict:
    return _grain(profile, defaults=False)


def grain_defaults(profile: Profile) -> dict:
    return _grain(profile, defaults=True)


def demo(profile: Profile) -> dict:
    del profile
    import resource

    with tempfile.TemporaryDirectory(prefix="augjax-demo-") as d:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "augjax.cli.main", "demo", "--out", d,
                               "--no-progress"], capture_output=True, text=True, check=False,
                              cwd=d)
        wall = time.perf_counter() - t
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"augjax demo failed:\n{done.stderr[-3000:]}")
    cpu = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
    return {"first_call_s": round(wall, 3), "first_call_cpu_s": round(cpu, 3),
            "process_s": round(wall, 3)}


CHILDREN = {"timm": timm, "dino": dino, "grain": grain_recipe, "lsj": lsj,
            "clips_ra": clips_ra, "demo": demo, "grain_defaults": grain_defaults,
            "dino_photos": dino_photos}


# -- the parent ----------------------------------------------------------------------------
def run_child(recipe: str, cache: str) -> dict:
    env = dict(os.environ, AUGJAX_CACHE_DIR=cache)
    for name in ("JAX_COMPILATION_CACHE_DIR", "AUGJAX_COMPILATION_CACHE", "AUGJAX_PROGRAM_CACHE"):
        env.pop(name, None)
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, __file__, "--child", recipe], env=env,
                          capture_output=True, text=True, check=False, cwd=str(ROOT))
    if done.returncode:
        raise RuntimeError(f"child {recipe} failed:\n{done.stderr[-4000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["load_average_1min"] = round(load, 2)
    return out


def _top(programs: list, phase: str, n: int = 6) -> str:
    rows = sorted((r for r in programs if r[0] == phase), key=lambda r: -r[2])[:n]
    return ", ".join(f"{name} {secs:.2f}" for _, name, secs in rows)


def report(recipe: str, cold: dict, warm: dict, detail: bool) -> None:
    target_warm, target_cold = TARGETS[recipe]
    line = (f"{recipe:9s} cold {cold['first_call_s']:6.2f} s ({cold['first_call_cpu_s']:.1f} CPU-s; "
            f"target {target_cold:.0f}), warm {warm['first_call_s']:5.2f} s "
            f"({warm['first_call_cpu_s']:.1f} CPU-s; target {target_warm}); load "
            f"{cold['load_average_1min']}/{warm['load_average_1min']}")
    if "compile_count" in cold:
        line += (f"; cold: {cold['trace_count']} traces {cold['trace_s']:.1f} s, "
                 f"{cold['lower_count']} lowerings {cold['lower_s']:.1f} s, "
                 f"{cold['compile_count']} compiles {cold['compile_s']:.1f} s; warm: "
                 f"{warm['compile_count']} compiles, {warm['hit_count']} cache hits, "
                 f"{warm['store_loads']} programs loaded, {warm['augjax_traces']} augjax traces")
    if "worker_first_record_s" in warm:
        line += (f"; workers' first record cold {max(cold['worker_first_record_s'])} s, "
                 f"warm {max(warm['worker_first_record_s'])} s")
    if "later_images_per_s" in warm:
        line += f"; later batches {warm['later_images_per_s']} images/s"
    if "second_iterator_s" in warm:
        line += (f"; second iterator {warm['second_iterator_s']:.2f} s, "
                 f"{warm['second_iterator_cache_files_written']} files written")
    print(line, flush=True)
    if detail:
        for name, run in (("cold", cold), ("warm", warm)):
            for phase in ("trace", "lower", "compile"):
                if run.get("programs"):
                    print(f"    {name} {phase}: {_top(run['programs'], phase)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipes", default=",".join(RECIPES))
    ap.add_argument("--out", default=None, help="results file (default: "
                    "benchmarks/results/first-calls-cpu-<date>.json when all recipes run)")
    ap.add_argument("--profile", default=None, metavar="RECIPE",
                    help="one recipe, printing its slowest programs per phase")
    ap.add_argument("--child", choices=RECIPES + EXTRA, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        profile = Profile()
        print(json.dumps(CHILDREN[args.child](profile)))
        return
    recipes = [args.profile] if args.profile else args.recipes.split(",")
    results = {}
    for recipe in recipes:
        with tempfile.TemporaryDirectory(prefix="augjax-first-") as cache:
            cold = run_child(recipe, cache)
            warm = run_child(recipe, cache)
        report(recipe, cold, warm, bool(args.profile))
        for run in (cold, warm):
            run.pop("programs", None)
        results[recipe] = {"cold": cold, "warm": warm}
    out = args.out
    if out is None and not args.profile and set(recipes) == set(RECIPES):
        from harness import today

        out = str(HERE / "results" / f"first-calls-cpu-{today()}.json")
    if out:
        sys.path.insert(0, str(HERE))
        from harness import machine, today, versions

        doc = {"date": today(), "machine": machine(), "versions": versions(),
               "targets": {k: {"warm_s": w, "cold_s": c} for k, (w, c) in TARGETS.items()},
               "results": results}
        Path(out).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
