"""Data-parallel pieces that run on CPU: counter-based seeds, the sharded source, shards as
separate pipelines, and ``jax_function(sharding=...)`` with one local device."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from helpers import images, run_on_two_cpu_devices

import augjax
from augjax.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_index_seeds_depend_only_on_seed_epoch_and_index():
    a = augjax.index_seeds(np.arange(8), epoch=2, seed=5)
    b = np.concatenate([augjax.index_seeds([i], epoch=2, seed=5) for i in range(8)])
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.int32 and (a >= 0).all() and (a[:, 0] < 2**30).all()
    assert not np.array_equal(a, augjax.index_seeds(np.arange(8), epoch=3, seed=5))
    assert not np.array_equal(a, augjax.index_seeds(np.arange(8), epoch=2, seed=6))
    np.testing.assert_array_equal(a[:, 1], np.arange(8))
    with pytest.raises(InputError, match="index_seeds"):
        augjax.index_seeds([-1])


@pytest.mark.fast_tier("2")
@pytest.mark.parametrize("num_devices", [1, 2, 4])
def test_per_sample_output_independent_of_device_count(num_devices):
    """The same 8 global samples split over 1, 2 or 4 'devices' (separate calls) give the
    same per-sample output, because keys come from global indices."""
    x = images(8, 10, 12, seed=4)
    idx = np.array([5, 1, 7, 3, 0, 2, 6, 4])
    chain = augjax.compose(augjax.ops.flip.bind(p=0.5),
                           augjax.ops.color_jitter.bind(brightness=0.4, hue=0.1))
    whole = np.asarray(chain(x, key=augjax.keys_from_seeds(augjax.index_seeds(idx, epoch=1))))
    parts = []
    for part_x, part_i in zip(np.split(x, num_devices), np.split(idx, num_devices)):
        keys = augjax.keys_from_seeds(augjax.index_seeds(part_i, epoch=1))
        parts.append(np.asarray(chain(part_x, key=keys)))
    np.testing.assert_array_equal(np.concatenate(parts), whole)


def _info(iteration, idx, epoch=0):
    return SimpleNamespace(iteration=iteration, idx_in_batch=idx, epoch_idx=epoch)


@pytest.mark.parametrize("shards", [2, 4])
def test_sharded_source_global_batches_do_not_depend_on_shard_count(tmp_path, shards):
    files = []
    for i in range(16):
        f = tmp_path / f"{i}.bin"
        f.write_bytes(bytes([i]))
        files.append(str(f))
    labels = list(range(16))
    one = augjax.ShardedSource(files, labels, batch_size=8, seed=3)
    many = [augjax.ShardedSource(files, labels, batch_size=8 // shards, shard_id=s,
                                 num_shards=shards, seed=3) for s in range(shards)]
    for it in range(2):
        whole = [one(_info(it, i)) for i in range(8)]
        split = [src(_info(it, i)) for src in many for i in range(8 // shards)]
        for a, b in zip(whole, split):
            for u, v in zip(a, b):
                np.testing.assert_array_equal(u, v)
        # The payload is the file named by the index, the label is its label.
        for enc, lab, seeds, index in whole:
            assert enc[0] == index[0] == lab[0]
            np.testing.assert_array_equal(seeds, augjax.index_seeds(index, epoch=0, seed=3)[0])
    with pytest.raises(StopIteration):
        one(_info(2, 0))
    assert not np.array_equal(one.order(0), one.order(1))  # reshuffled each epoch


def test_sharded_source_errors():
    with pytest.raises(InputError, match="one label per file"):
        augjax.ShardedSource(["a"], [0, 1], batch_size=1)
    with pytest.raises(InputError, match="shard_id"):
        augjax.ShardedSource(["a", "b"], [0, 1], batch_size=1, shard_id=2, num_shards=2)
    with pytest.raises(InputError, match="cannot fill one global batch"):
        augjax.ShardedSource(["a"], [0], batch_size=1, num_shards=2)


@pytest.mark.slow
def test_example_cpu_shards_match_one_pipeline_bitwise(tmp_path):
    """The example as a user runs it (its own processes): 1 and 2 CPU shards, same samples,
    over an epoch end (5 batches, 4 per epoch); 2 shards with the per-sample source too."""
    import subprocess
    import sys

    script = str(ROOT / "examples" / "multi_gpu.py")
    dumps = {}
    runs = {1: [], 2: [], "2-per-sample": ["--source", "sample", "--read", "python"]}
    for name, extra in runs.items():
        dumps[name] = tmp_path / f"{name}.npz"
        res = subprocess.run(
            [sys.executable, script, "--cpu", "--shards", str(name)[0], "--iters", "5",
             "--global-batch", "8", "--size", "24", "--dump", str(dumps[name]), *extra],
            check=False, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "images/s over 32 images (global batch 8)" in res.stdout, res.stdout
    one, two = np.load(dumps[1]), np.load(dumps[2])
    np.testing.assert_array_equal(one["index"], two["index"])
    assert len(one["index"]) == 32  # epoch 0's samples (the dump keeps a sample's first look)
    np.testing.assert_array_equal(one["images"], two["images"])
    per_sample = np.load(dumps["2-per-sample"])
    np.testing.assert_array_equal(per_sample["index"], two["index"])
    np.testing.assert_array_equal(per_sample["images"], two["images"])
    assert one["images"].dtype == np.float32 and one["images"].shape[1:] == (24, 24, 3)
    res = subprocess.run([sys.executable, script, "--compare", str(dumps[1]), str(dumps[2])],
                         check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "32 bitwise equal" in res.stdout


@pytest.mark.slow
def test_jax_function_sharding_with_one_local_device():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from nvidia.dali import fn, pipeline_def

    import augjax.dali

    x = images(4, 8, 10, seed=2)
    s = augjax.index_seeds(np.arange(4))
    mesh = Mesh(np.array(jax.devices("cpu")[:1]), ("batch",))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    def pipe():
        imgs = fn.external_source(source=lambda: x, batch=True, layout="HWC")
        sd = fn.external_source(source=lambda: s, batch=True)
        with augjax.dali.use_sharding(sharding):
            sharded = augjax.ops.color_jitter(imgs, brightness=0.4, hue=0.1, seeds=sd)
        plain = augjax.ops.color_jitter(imgs, brightness=0.4, hue=0.1, seeds=sd)
        return sharded, plain

    p = pipe()
    p.build()
    a, b = (np.array(o.as_tensor()) for o in p.run())
    np.testing.assert_array_equal(a, b)
    expected = augjax.ops.color_jitter(x, key=augjax.keys_from_seeds(s), brightness=0.4, hue=0.1)
    np.testing.assert_array_equal(a, expected)


# --- programs partitioned over several devices use no custom kernels ---------------------------

JITTER_CHAIN = (augjax.ops.flip.bind(p=0.5),
                augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4, hue=0.1))


@pytest.mark.slow
@pytest.mark.parametrize("partitioned", [False, True])
def test_partitioned_programs_trace_without_the_pallas_kernel(partitioned):
    """XLA gathers a custom kernel's whole operand onto every device, so a program built for
    inputs over several devices must not contain the Pallas colour jitter (its XLA form is
    split along the batch); the same program for one device keeps it for CUDA. Both programs
    give the same images."""
    from augjax._runtime.execution.program import array_program, seeded_program

    x, keys = images(4, 8, 10, seed=3), jax.random.split(jax.random.key(2), 4)
    seeds = augjax.index_seeds(np.arange(4))
    arrays = array_program(JITTER_CHAIN, "HWC", 0, partitioned)
    dali = seeded_program(JITTER_CHAIN, "HWC", False, True, 0, partitioned)
    # Branches for platforms without a backend are not traced (augjax.kernels.platform): the
    # kernel is in a program only where CUDA is there to run it.
    cuda = any(d.platform == "gpu" for d in jax.devices())
    for jaxpr in (jax.make_jaxpr(arrays)(x, None, keys), jax.make_jaxpr(dali)(x, seeds)):
        assert ("pallas_call" in str(jaxpr)) is (cuda and not partitioned)
    other = array_program(JITTER_CHAIN, "HWC", 0, not partitioned)
    np.testing.assert_array_equal(np.asarray(arrays(x, None, keys)[0]),
                                  np.asarray(other(x, None, keys)[0]))


@pytest.mark.slow
def test_arrays_and_shardings_over_several_devices_are_detected(tmp_path):
    """With two (host) devices: a batch sharded over both is partitioned, a batch on one device
    and a one-device sharding are not, and the sharded batch's colour jitter equals the
    one-device result bitwise (the program is built without the custom kernel); traced arrays
    tell by their explicit mesh axes."""
    run_on_two_cpu_devices(
        tmp_path,
        "import jax, numpy as np\n"
        "from jax.sharding import Mesh, NamedSharding, PartitionSpec\n"
        "import augjax\n"
        "from augjax.kernels.partition import array_spans_devices, sharding_spans_devices\n"
        "devs = jax.devices('cpu')\n"
        "assert len(devs) == 2, devs\n"
        "two = NamedSharding(Mesh(np.array(devs), ('b',)), PartitionSpec('b'))\n"
        "one = NamedSharding(Mesh(np.array(devs[:1]), ('b',)), PartitionSpec('b'))\n"
        "x = np.random.default_rng(0).integers(0, 256, (4, 8, 10, 3)).astype(np.uint8)\n"
        "xs, x1 = jax.device_put(x, two), jax.device_put(x, devs[0])\n"
        "assert sharding_spans_devices(two) and not sharding_spans_devices(one)\n"
        "assert not sharding_spans_devices(None)\n"
        "assert array_spans_devices(xs) and not array_spans_devices(x1)\n"
        "assert not array_spans_devices(x)\n"
        "mesh = jax.make_mesh((2,), ('b',), axis_types=(jax.sharding.AxisType.Explicit,))\n"
        "xe, seen = jax.device_put(x, NamedSharding(mesh, PartitionSpec('b'))), []\n"
        "trace = jax.jit(lambda a: seen.append(array_spans_devices(a)) or a)\n"
        "trace(xe), trace(x1)\n"
        "assert seen == [True, False], seen  # traced: explicit axes tell, none: one device\n"
        "keys = jax.random.split(jax.random.key(0), 4)\n"
        "op = augjax.ops.color_jitter\n"
        "a = op(xs, key=jax.device_put(keys, two), brightness=0.4, contrast=0.4, hue=0.1)\n"
        "b = op(x1, key=keys, brightness=0.4, contrast=0.4, hue=0.1)\n"
        "assert len(a.sharding.device_set) == 2\n"
        "np.testing.assert_array_equal(np.asarray(a), np.asarray(b))\n"
        "print('ok')\n")
