"""Several hosts: one process per host (or per GPU) under ``jax.distributed``, each with its DALI
pipeline shard, feeding one globally sharded ``jax.Array`` to a jitted training step.

    python examples/multi_host.py --processes 2              # 2 CPU processes on this machine
    python examples/multi_host.py --processes 2 --check      # ... and 1 process: bitwise equal?

    # a cluster: the same command on every host, K = 0 .. N-1 (host 0 runs the coordinator)
    python examples/multi_host.py --coordinator HOST0:1234 --num-processes N --process-id K

Each process calls ``jax.distributed.initialize`` with one local device (``local_device_ids``),
reads its shard of the files with ``augjax.ShardedSource`` (``shard_id`` = process index,
``num_shards`` = process count) and runs one augjax chain (crop, flip, RandAugment, normalize,
mixup) inside its DALI pipeline as a ``jax_function`` with ``sharding=``: the chain sees the
*global* batch as one ``jax.Array`` spread over all processes, so mixup pairs sample ``i`` with
global sample ``G-1-i`` across processes (real collectives: gloo on CPU) and the augmentation
does not depend on the number of processes. Sample keys come from global indices
(``augjax.index_seeds``).

The global batch for the step: DALI's JAX iterator shards only GPU pipelines (CPU pipelines'
outputs all land on ``CpuDevice(0)`` and it cannot place them), so on CPU the
batch is assembled with ``jax.make_array_from_process_local_data``. With ``--device gpu`` (one
process per GPU) DALI's ``DALIGenericIterator(sharding=...)`` builds it.

Start-up checks: every process publishes its run configuration (process count, shard count,
batch, seed, dataset digest and the chain's config) in the coordinator's key-value store and
compares it with every other process's; a difference stops all processes with an error naming
the field. Failures: a process that fails tells the others through the same store; one that
dies makes the others' next collective fail (gloo sees the closed connection), and JAX's
coordinator names it within ``--heartbeat-timeout``; a dead process 0 (the coordinator) ends
the others at once (JAX); one that hangs is caught by the others' watchdog (no step within
``--step-timeout``, ``--compile-timeout`` for the steps that compile). No process hangs.

The pipelines run with DALI's synchronous executor: the chain's collectives (inside
``pipe.run()``) and the step's collectives must be issued in the same order by every process.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
KV = "augjax_multi_host"  # key prefix in the coordinator's key-value store
OUTPUTS = ("images", "soft", "label", "index")


# --- what every process must agree on --------------------------------------------------------

def dataset(repeat: int) -> tuple[list[str], list[int]]:
    """The bundled sample photos (one class each), repeated ``repeat`` times (global index =
    position in this list)."""
    package = importlib.util.find_spec("augjax").submodule_search_locations[0]
    bundled = sorted((Path(package) / "data" / "images").glob("*.jpg"))
    files = [str(f) for f in bundled] * repeat
    labels = list(range(len(bundled))) * repeat
    return files, labels


def chain(args):
    """The augmentation chain: crop, flip, RandAugment, normalize, mixup (on the global batch)."""
    import augjax

    ops = augjax.ops
    return augjax.compose(
        ops.random_resized_crop.bind(size=(args.size, args.size), scale=(0.35, 1.0)),
        ops.flip.bind(p=0.5),
        augjax.rand_augment(n=2, m=args.magnitude),
        ops.normalize.bind(mean=MEAN, std=STD),
        ops.mixup.bind(alpha=0.4, num_classes=args.classes, mode="elem"),
    )


def run_config(args, files, labels) -> dict:
    """The fields every process must agree on (the dataset as a digest of names, sizes, labels:
    hosts may keep the files under different roots)."""
    import augjax

    h = hashlib.sha256()
    for f, c in zip(files, labels):
        h.update(f"{Path(f).name}:{os.path.getsize(f)}:{c};".encode())
    return {
        "num_processes": args.num_processes,
        "num_shards": args.num_processes,
        "global_batch": args.global_batch,
        "iters": args.iters,
        "checkpoint_at": args.checkpoint_at,
        "seed": args.seed,
        "device": args.device,
        "dataset": h.hexdigest()[:16],
        "chain": augjax.to_dict(chain(args)),
    }


def differences(a, b, path: str = "") -> list[str]:
    """Paths of the fields where two JSON-like values differ, in ``a``'s order."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{k}" if path else k
            out += [sub] if k not in a or k not in b else differences(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def lookup(config, path: str):
    value = config
    for part in path.replace("[", ".[").split("."):
        if part:
            try:
                value = value[int(part[1:-1])] if part.startswith("[") else value[part]
            except (KeyError, IndexError, TypeError):
                return "<missing>"
    return value


class ConfigMismatch(RuntimeError):
    pass


def check_config(client, config: dict, process_id: int, num_processes: int, timeout_s: float):
    """Every process publishes its config in the coordinator's key-value store, compares its
    hash with every other process's (the fields on a mismatch) and publishes its verdict; all
    processes wait for all verdicts, so none exits (taking the coordinator down) before the
    others have compared."""
    text = json.dumps(config)
    client.key_value_set(f"{KV}/config/{process_id}", text)
    ms = int(timeout_s * 1000)
    verdict = "ok"
    for other in range(num_processes):
        theirs = client.blocking_key_value_get(f"{KV}/config/{other}", ms)
        if other == process_id or hashlib.sha256(theirs.encode()).digest() == \
                hashlib.sha256(text.encode()).digest():
            continue
        theirs = json.loads(theirs)
        fields = differences(config, theirs) or ["<unknown>"]
        verdict = (
            f"configuration differs between processes in field '{fields[0]}': process "
            f"{process_id} has {json.dumps(lookup(config, fields[0]))}, process {other} has "
            f"{json.dumps(lookup(theirs, fields[0]))}"
            + (f" (all differing fields: {', '.join(fields)})" if len(fields) > 1 else "")
            + "; run the same command on every host, only --process-id differs")
        break
    client.key_value_set(f"{KV}/verdict/{process_id}", verdict)
    verdicts = [client.blocking_key_value_get(f"{KV}/verdict/{k}", ms)
                for k in range(num_processes)]
    if verdict != "ok":
        raise ConfigMismatch(verdict)
    bad = [(k, v) for k, v in enumerate(verdicts) if v != "ok"]
    if bad:
        raise ConfigMismatch(f"process {bad[0][0]} reports: {bad[0][1]}")


# --- failure detection -----------------------------------------------------------------------

class Watchdog:
    """Ends this process (exit 3) with a clear message when a peer reports a failure in the
    key-value store, or when a phase (one step; a first step, which compiles, gets
    ``compile_timeout_s``) does not end within ``timeout_s`` (a peer that died silently or
    hangs leaves the others waiting in a collective)."""

    def __init__(self, client, process_id: int, timeout_s: float, compile_timeout_s: float):
        self.client, self.process_id, self.timeout_s = client, process_id, timeout_s
        self.compile_timeout_s = compile_timeout_s
        self.phase, self.last, self.budget = "start-up", time.monotonic(), compile_timeout_s
        self.option = "--compile-timeout"
        self._stop = threading.Event()
        threading.Thread(target=self._watch, daemon=True, name="multi_host-watchdog").start()

    def progress(self, phase: str, compiles: bool = False) -> None:
        """A new phase starts; ``compiles``: it includes compiling (the longer budget)."""
        self.budget = self.compile_timeout_s if compiles else self.timeout_s
        self.option = "--compile-timeout" if compiles else "--step-timeout"
        self.phase, self.last = phase, time.monotonic()

    def stop(self) -> None:
        self._stop.set()

    def report_failure(self, message: str) -> None:
        try:
            self.client.key_value_set(f"{KV}/failed/{self.process_id}", message[-2000:])
        except Exception:  # noqa: BLE001 - the coordinator may be gone already
            pass

    def _die(self, message: str) -> None:
        print(f"multi_host [process {self.process_id}]: {message}", file=sys.stderr, flush=True)
        os._exit(3)

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            try:
                failed = self.client.key_value_dir_get(f"{KV}/failed/")
            except Exception as err:  # noqa: BLE001 - the coordinator (process 0) is gone
                self._die(f"lost the coordinator during {self.phase} ({type(err).__name__}: "
                          f"{str(err)[:200]}); process 0 has probably died")
            for key, message in failed:
                other = key.rsplit("/", 1)[-1]
                if other != str(self.process_id):
                    self._die(f"process {other} failed, stopping too. Its error: {message}")
            idle = time.monotonic() - self.last
            if idle > self.budget:
                self._die(f"no progress for {idle:.0f} s during {self.phase} ({self.option} "
                          f"{self.budget:.0f}); a peer process has probably died or hangs")


def peer_failures(client, process_id: int, wait_s: float = 2.0) -> list[str]:
    """Failures other processes reported in the key-value store (waiting up to ``wait_s`` for
    one to arrive)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            found = [m for k, m in client.key_value_dir_get(f"{KV}/failed/")
                     if k.rsplit("/", 1)[-1] != str(process_id)]
        except Exception:  # noqa: BLE001 - the coordinator (process 0) is gone
            return ["process 0 (the coordinator) is unreachable"]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.25)


def linger(client, process_id: int, num_processes: int, wait_s: float = 3.0) -> None:
    """Before a failing process exits: says so in the store; process 0, which hosts the
    coordinator (its exit aborts the others), first waits up to ``wait_s`` for the others to
    say so too, so they can print their own error."""
    try:
        client.key_value_set(f"{KV}/exiting/{process_id}", "1")
        deadline = time.monotonic() + wait_s
        for k in range(1, num_processes) if process_id == 0 else ():
            left = int(max(0.0, deadline - time.monotonic()) * 1000)
            client.blocking_key_value_get(f"{KV}/exiting/{k}", max(1, left))
    except Exception:  # noqa: BLE001 - a peer that died never says so
        pass


# --- one process -----------------------------------------------------------------------------

def build_pipeline(args, files, labels, sharding, checkpoint=None):
    from nvidia.dali import fn, pipeline_def, types

    import augjax
    import augjax.dali

    gpu = args.device == "gpu"
    shard_batch = args.global_batch // args.num_processes
    aug = chain(args)

    # Synchronous executor: run() does the whole batch (the chain's collectives included) before
    # it returns, so every process issues the collectives in the same order.
    @pipeline_def(batch_size=shard_batch, num_threads=args.threads,
                  device_id=args.local_device if gpu else None, seed=args.seed,
                  exec_async=False, exec_pipelined=False, prefetch_queue_depth=1,
                  enable_checkpointing=True)
    def pipe():
        src = augjax.ShardedSource(files, labels, batch_size=shard_batch,
                                   shard_id=args.process_id, num_shards=args.num_processes,
                                   seed=args.seed, mode="batch", read="dali")
        encoded, label, seeds, index = src.external_source()
        images = fn.decoders.image(encoded, device="mixed" if gpu else "cpu",
                                   output_type=types.RGB)
        images = fn.resize(images, size=(args.load_size, args.load_size))
        if gpu:
            label, seeds, index = label.gpu(), seeds.gpu(), index.gpu()
        with augjax.dali.use_sharding(sharding):
            images, soft = aug(images, label, seeds=seeds)
        return images, soft, label, index

    p = pipe(checkpoint=checkpoint) if checkpoint is not None else pipe()
    p.build()
    return p


class GlobalBatches:
    """Global batches ``{"images", "soft", "label", "index"}`` (jax.Arrays over all processes)
    from this process's pipeline, and the pipeline's checkpoint."""

    def __init__(self, args, pipe, sharding):
        self.args, self.pipe, self.sharding = args, pipe, sharding
        self.iterator = None
        if args.device == "gpu":  # one pipeline per GPU: DALI's iterator shards its outputs
            from nvidia.dali.plugin.jax import DALIGenericIterator

            self.iterator = DALIGenericIterator([pipe], list(OUTPUTS), sharding=sharding)

    def next(self) -> dict:
        import jax

        if self.iterator is not None:
            return next(self.iterator)
        outs = self.pipe.run()
        local = {k: np.array(o.as_tensor()) for k, o in zip(OUTPUTS, outs)}
        # DALI's iterator cannot shard CPU pipelines (their outputs all land on CpuDevice(0)):
        # the global array is assembled from each process's part.
        return {k: jax.make_array_from_process_local_data(
            self.sharding, v, (self.args.global_batch, *v.shape[1:])) for k, v in local.items()}

    def checkpoint(self) -> str:
        return self.iterator.checkpoints()[0] if self.iterator else self.pipe.checkpoint()


def global_step():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(images, soft):
        # Stand-in for a model: cross-process means of the batch and of the soft labels.
        return jnp.mean(images), jnp.mean(images, axis=(0, 1, 2)), jnp.mean(soft, axis=0)

    return step


def local_rows(x) -> np.ndarray:
    return np.concatenate([np.asarray(s.data) for s in x.addressable_shards])


def worker(args) -> int:
    if args.device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    if args.device == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=args.coordinator, num_processes=args.num_processes,
        process_id=args.process_id, local_device_ids=[args.local_device],
        initialization_timeout=int(args.init_timeout),
        heartbeat_timeout_seconds=int(args.heartbeat_timeout),
        shutdown_timeout_seconds=int(args.init_timeout))
    from jax._src import (
        distributed,  # the coordinator's key-value store (no public API)
    )

    client = distributed.global_state.client
    dog = Watchdog(client, args.process_id, args.step_timeout, args.compile_timeout)
    tag = f"[process {args.process_id}/{args.num_processes}]"
    try:
        files, labels = dataset(args.repeat)
        args.classes = len(set(labels))
        check_config(client, run_config(args, files, labels), args.process_id,
                     args.num_processes, args.init_timeout)
        dog.progress("building the pipeline", compiles=True)
        return run(args, files, labels, dog, tag)
    except BaseException as err:  # noqa: BLE001 - tell the peers, then fail
        import traceback

        detail = traceback.format_exc()
        peers = peer_failures(client, args.process_id) if dog.phase != "start-up" else []
        if isinstance(err, ConfigMismatch):
            message = str(err)
        elif peers:
            message = (f"stopped during {dog.phase} ({type(err).__name__}) after a failure "
                       f"elsewhere: {peers[0]}")
        elif "iteration" in dog.phase:
            # A collective with a peer that died fails with DALI's or XLA's error, which does
            # not say so.
            message = (f"{type(err).__name__} during {dog.phase}: a cross-process collective "
                       f"failed and no process reported an error; a peer process has probably "
                       f"died (see its log; JAX's coordinator names a dead process within "
                       f"--heartbeat-timeout {args.heartbeat_timeout:.0f} s)")
        else:
            message = f"{type(err).__name__} during {dog.phase}: {err}"
        dog.report_failure(f"process {args.process_id}: {message}")
        print(f"multi_host {tag}: {message}", file=sys.stderr, flush=True)
        if not isinstance(err, ConfigMismatch):
            print(detail, file=sys.stderr, flush=True)
        linger(client, args.process_id, args.num_processes)
        # Skip jax.distributed's shutdown barrier: the peers are stopping too, or gone.
        sys.stdout.flush()
        os._exit(2)


def run(args, files, labels, dog, tag) -> int:
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = sorted(jax.devices(), key=lambda d: d.process_index)
    if jax.local_device_count() != 1 or len(devices) != args.num_processes:
        raise RuntimeError(f"expected one device per process, got {jax.local_device_count()} "
                           f"local and {len(devices)} in all for {args.num_processes} processes")
    # Row block k of the global batch lives on process k's device: shard_id = process index.
    sharding = NamedSharding(Mesh(np.array(devices), ("batch",)), PartitionSpec("batch"))
    step = global_step()
    pipe = build_pipeline(args, files, labels, sharding)
    dumps: dict[str, list] = {"run": [], "restored": []}
    checkpoint = None
    t0 = time.perf_counter()
    phases = [("run", pipe, 0, args.iters)]
    for phase, p, first, last in phases:
        batches = GlobalBatches(args, p, sharding)
        for it in range(first, last):
            dog.progress(f"{phase} iteration {it}", compiles=it == first)
            batch = batches.next()
            mean, channels, soft_mean = step(batch["images"], batch["soft"])
            mean, channels, soft_mean = (np.asarray(v) for v in (mean, channels, soft_mean))
            if args.fail_at is not None and it == args.fail_at and phase == "run":
                print(f"{tag} --fail-at {it}: {args.fail_mode}s without a word", flush=True)
                if args.fail_mode == "exit":
                    os._exit(17)
                dog.progress(f"a hang on purpose (--fail-at {it} --fail-mode hang)")
                time.sleep(10 * args.step_timeout)
            if args.process_id == 0:
                shape, spread = tuple(batch["images"].shape), batch["images"].sharding.device_set
                print(f"{tag} {phase} iteration {it}: global batch {shape} over {len(spread)} "
                      f"device(s); cross-process mean {mean:.6f}, per channel "
                      f"[{', '.join(f'{c:.4f}' for c in channels)}]; mean soft label sums to "
                      f"{soft_mean.sum():.6f}, top classes "
                      f"{np.argsort(-soft_mean)[:3].tolist()}", flush=True)
            dumps[phase].append({"iteration": it, "mean": mean, "channels": channels,
                                 "soft_mean": soft_mean,
                                 **{k: local_rows(batch[k]) for k in OUTPUTS}})
            if phase == "run" and it + 1 == args.checkpoint_at:
                checkpoint = batches.checkpoint()
        if phase == "run" and checkpoint is not None:
            # A new pipeline in every process, restored mid-epoch: the rest again.
            dog.progress("restoring the checkpoint", compiles=True)
            phases.append(("restored", build_pipeline(args, files, labels, sharding, checkpoint),
                           args.checkpoint_at, args.iters))
    elapsed = time.perf_counter() - t0
    dog.stop()
    if args.dump:
        write_dump(Path(args.dump) / f"process{args.process_id}.npz", dumps)
    if args.process_id == 0:
        print(f"{tag} {args.iters} iterations (+{args.iters - args.checkpoint_at} after the "
              f"restore) of global batch {args.global_batch} in {elapsed:.1f} s", flush=True)
    return 0


def write_dump(path: Path, dumps) -> None:
    out = {}
    for phase, rows in dumps.items():
        for r in rows:
            for k, v in r.items():
                out.setdefault(f"{phase}/{k}", []).append(v)
    np.savez(path, **{k: np.stack(v) for k, v in out.items()})


# --- launching N processes on this machine, and --check ---------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_args(args) -> list[str]:
    """The options every process gets (the run configuration)."""
    return ["--global-batch", str(args.global_batch), "--iters", str(args.iters),
            "--checkpoint-at", str(args.checkpoint_at), "--seed", str(args.seed),
            "--size", str(args.size), "--load-size", str(args.load_size),
            "--magnitude", str(args.magnitude), "--repeat", str(args.repeat),
            "--device", args.device, "--threads", str(args.threads),
            "--step-timeout", str(args.step_timeout),
            "--compile-timeout", str(args.compile_timeout),
            "--heartbeat-timeout", str(args.heartbeat_timeout),
            "--init-timeout", str(args.init_timeout)]


def launch(args, processes: int, dump: str | None) -> int:
    """Starts ``processes`` workers with a coordinator on 127.0.0.1; returns the first non-zero
    exit code (0 if all succeed). A worker that fails makes the others fail (they watch each
    other); this launcher only waits, with a last-resort timeout."""
    address = f"127.0.0.1:{free_port()}"
    common = worker_args(args) + (["--dump", dump] if dump else [])
    procs = []
    for k in range(processes):
        cmd = [sys.executable, __file__, "--coordinator", address, "--num-processes",
               str(processes), "--process-id", str(k), *common]
        if args.device == "gpu":  # one process per GPU of this host
            cmd += ["--local-device", str(k)]
        if args.fail_at is not None and k == args.fail_process:
            cmd += ["--fail-at", str(args.fail_at), "--fail-mode", args.fail_mode]
        procs.append(subprocess.Popen(cmd))
    start = time.monotonic()
    ended: dict[int, float] = {}
    while len(ended) < len(procs) and time.monotonic() < start + args.launch_timeout:
        for k, p in enumerate(procs):
            if k not in ended and p.poll() is not None:
                ended[k] = time.monotonic()
        time.sleep(0.1)
    for k, p in enumerate(procs):
        if p.poll() is None:
            print(f"multi_host: process {k} still running after --launch-timeout "
                  f"{args.launch_timeout:.0f} s: killed", file=sys.stderr)
            p.kill()
            p.wait()
    codes = [p.returncode for p in procs]
    spread = (f", the last {max(ended.values()) - min(ended.values()):.1f} s after the first"
              if len(ended) > 1 else "")
    print(f"multi_host: {processes} process(es) exited with {codes}{spread}", flush=True)
    return next((c for c in codes if c), 0)


def load(dump_dir: str, processes: int) -> dict[str, dict]:
    """Per phase: every process's samples, keyed by (iteration, global index), with the row of
    the global batch each sat in; and process 0's step results per iteration."""
    parts = []
    for k in range(processes):
        with np.load(Path(dump_dir) / f"process{k}.npz") as f:  # read each array once
            parts.append({name: f[name] for name in f.files})
    out = {}
    for phase in ("run", "restored"):
        rows = {}
        for k, part in enumerate(parts):
            for t, it in enumerate(part[f"{phase}/iteration"]):
                local = part[f"{phase}/index"][t].reshape(-1)
                for r, idx in enumerate(local):
                    rows[(int(it), int(idx))] = {
                        "images": part[f"{phase}/images"][t][r],
                        "soft": part[f"{phase}/soft"][t][r],
                        "label": int(part[f"{phase}/label"][t].reshape(-1)[r]),
                        "process": k, "row": k * len(local) + r}
        steps = {int(it): (float(m), s) for it, m, s in zip(
            parts[0][f"{phase}/iteration"], parts[0][f"{phase}/mean"],
            parts[0][f"{phase}/soft_mean"])}
        out[phase] = {"rows": rows, "steps": steps}
    return out


def cross_process_mixes(rows: dict) -> int:
    """Samples whose soft label carries weight of their mixup partner (global row ``G-1-r``)
    held by another process: the chain really ran on the global batch."""
    by_row = {(it, v["row"]): v for (it, _), v in rows.items()}
    size = 1 + max(v["row"] for v in rows.values())
    count = 0
    for (it, _), v in rows.items():
        partner = by_row[(it, size - 1 - v["row"])]
        if (partner["process"] != v["process"] and partner["label"] != v["label"]
                and v["soft"][partner["label"]] > 0):
            count += 1
    return count


def compare(many: dict, one: dict, processes: int) -> list[str]:
    problems = []
    ref = one["run"]["rows"]
    for phase in ("run", "restored"):
        rows = many[phase]["rows"]
        if set(rows) - set(ref):
            problems.append(f"{phase}: samples missing from the 1-process run: "
                            f"{sorted(set(rows) - set(ref))[:5]}")
        bad = [key for key in sorted(set(rows) & set(ref))
               if any(not np.array_equal(rows[key][k], ref[key][k]) for k in ("images", "soft"))]
        if bad:
            problems.append(f"{phase}: {len(bad)} of {len(rows)} samples differ, e.g. "
                            f"(iteration, index) {bad[:5]}")
        print(f"{processes} processes, {phase:8s}: {len(rows)} samples (iteration, global "
              f"index) compared with the 1-process run, {len(rows) - len(bad)} bitwise equal")
    if processes > 1:
        mixes = cross_process_mixes(many["run"]["rows"])
        print(f"{processes} processes: {mixes} of {len(many['run']['rows'])} samples carry "
              f"label weight of a mixup partner held by another process")
        if not mixes:
            problems.append("no sample was mixed with a partner from another process")
    restored = one["restored"]["rows"]
    bad = [k for k in restored if any(not np.array_equal(restored[k][f], ref[k][f])
                                      for f in ("images", "soft"))]
    if bad or not restored:
        problems.append(f"1 process: the restored pipeline differs in {len(bad)} samples")
    # The step's cross-process means against the same means over the dumped global batch.
    for it, (mean, soft) in sorted(many["run"]["steps"].items()):
        keys = [k for k in ref if k[0] == it]
        ref_mean = np.mean([ref[k]["images"].astype(np.float64).mean() for k in keys])
        ref_soft = np.mean([ref[k]["soft"] for k in keys], axis=0)
        if not (np.isclose(mean, ref_mean, rtol=1e-5, atol=1e-6)
                and np.allclose(soft, ref_soft, rtol=1e-5, atol=1e-6)):
            problems.append(f"iteration {it}: the cross-process step gave mean {mean}, the "
                            f"dumped global batch has {ref_mean}")
    return problems


def check(args) -> int:
    with tempfile.TemporaryDirectory(prefix="multi_host_") as tmp:
        root = Path(args.keep or tmp)
        dirs = {n: root / f"p{n}" for n in (args.processes, 1)}
        for n, d in dirs.items():
            d.mkdir(parents=True, exist_ok=True)
            t = time.perf_counter()
            code = launch(args, n, str(d))
            print(f"multi_host: {n}-process run took {time.perf_counter() - t:.1f} s", flush=True)
            if code:
                print(f"multi_host --check: the {n}-process run failed (exit {code})",
                      file=sys.stderr)
                return code
        problems = compare(load(str(dirs[args.processes]), args.processes),
                           load(str(dirs[1]), 1), args.processes)
    if problems:
        print("multi_host --check: DIFFERENT\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"bitwise equal: {args.processes} processes and 1 process give the same samples and "
          f"soft labels per global index, also after a checkpoint restore at iteration "
          f"{args.checkpoint_at} in every process")
    return 0


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2,
                    help="launch this many processes on this machine (coordinator 127.0.0.1)")
    ap.add_argument("--check", action="store_true",
                    help="also run 1 process and compare per-sample outputs bitwise")
    ap.add_argument("--coordinator", default=None,
                    help="HOST:PORT of process 0: run one process of a cluster")
    ap.add_argument("--num-processes", type=int, default=None)
    ap.add_argument("--process-id", type=int, default=None)
    ap.add_argument("--local-device", type=int, default=0,
                    help="this process's local device (GPU index; 0 on CPU)")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--global-batch", type=int, default=4)
    ap.add_argument("--iters", type=int, default=4, help="iterations (one epoch at most)")
    ap.add_argument("--checkpoint-at", type=int, default=2,
                    help="take a DALI checkpoint after this many iterations, restore it in a "
                         "new pipeline and run the rest again")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", type=int, default=32, help="crop size")
    ap.add_argument("--load-size", type=int, default=48, help="decoded images resized to this")
    ap.add_argument("--magnitude", type=float, default=9, help="RandAugment magnitude")
    ap.add_argument("--repeat", type=int, default=2, help="repeat the 8 bundled photos")
    ap.add_argument("--threads", type=int, default=1, help="DALI threads per pipeline")
    ap.add_argument("--step-timeout", type=float, default=120,
                    help="a process with no step done for this long stops (a peer died)")
    ap.add_argument("--compile-timeout", type=float, default=600,
                    help="--step-timeout of start-up and of a pipeline's first step, which "
                         "compile")
    ap.add_argument("--heartbeat-timeout", type=float, default=20,
                    help="jax.distributed heartbeat timeout (s)")
    ap.add_argument("--init-timeout", type=float, default=60,
                    help="jax.distributed connect / config exchange timeout (s)")
    ap.add_argument("--launch-timeout", type=float, default=900,
                    help="launcher: kill processes still running after this long")
    ap.add_argument("--dump", default=None, help="write this process's samples to DIR")
    ap.add_argument("--keep", default=None,
                    help="--check: keep the dumps in DIR/p<N> and DIR/p1 (default: a temporary "
                         "directory)")
    ap.add_argument("--fail-at", type=int, default=None,
                    help="testing: the process fails (--fail-mode) at this iteration")
    ap.add_argument("--fail-mode", choices=("exit", "hang"), default="exit",
                    help="testing: --fail-at exits (code 17) or hangs (sleeps)")
    ap.add_argument("--fail-process", type=int, default=1,
                    help="launcher: the process that --fail-at applies to")
    args = ap.parse_args(argv)
    if args.global_batch < 1 or not 0 < args.checkpoint_at < args.iters or args.repeat < 1:
        ap.error(f"expects --global-batch >= 1, --repeat >= 1 and 0 < --checkpoint-at < "
                 f"--iters, got {args.global_batch}, {args.repeat}, {args.checkpoint_at}, "
                 f"{args.iters}")
    per_epoch = len(dataset(args.repeat)[0]) // args.global_batch
    if args.iters > per_epoch:
        ap.error(f"--iters expects at most one epoch, {per_epoch} global batches of "
                 f"{args.global_batch} (--repeat {args.repeat}), got {args.iters}")
    return ap, args


def main(argv=None) -> int:
    ap, args = parse(argv)
    if args.coordinator:
        if args.num_processes is None or args.process_id is None:
            ap.error("--coordinator needs --num-processes and --process-id")
        if args.global_batch % args.num_processes:
            ap.error(f"--global-batch {args.global_batch} is not a multiple of "
                     f"--num-processes {args.num_processes}")
        return worker(args)
    if args.processes < 1 or args.global_batch % args.processes:
        ap.error(f"--processes expects >= 1 dividing --global-batch {args.global_batch}, got "
                 f"{args.processes}")
    if args.check:
        return check(args)
    return launch(args, args.processes, args.dump)


if __name__ == "__main__":
    sys.exit(main())
