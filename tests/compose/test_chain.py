"""Chains and composites: compose == ops one at a time (bitwise), per-sample choices, size /
dtype / layout changes, one DALI crossing, DALI == arrays, caching, errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import images, run_dali, seeds
from scipy import stats

import augjax
from augjax import compose, random_apply, random_choice, random_order, some_of
from augjax.errors import InputError, ParamError

ops = augjax.ops
KEYS = jax.random.split(jax.random.key(3), 6)  # one key per sample of a batch of 6


def _chain():
    """Random ops (their output depends on the key), a composite, a size change (crop), and a
    dtype + layout change (normalize to float32 CHW) at the end."""
    return compose(
        ops.flip.bind(p=0.5),
        ops.saturation.bind(factor=(0.5, 1.5)),
        random_apply(ops.rotate.bind(degrees=(-20.0, 20.0)), 0.5),
        ops.random_crop.bind(size=(12, 14)),
        ops.normalize.bind(chw=True),
    )


@pytest.mark.slow
def test_chain_equals_ops_one_at_a_time_bitwise():
    x = images(6, 16, 20)
    chain = _chain()
    out = np.asarray(chain(x, key=KEYS))
    assert out.shape == (6, 3, 12, 14) and out.dtype == np.float32
    # Op j alone, keeping its position j (keys fold_in(sample_key, j)), fed the previous output.
    y, layout = x, "HWC"
    for j in range(len(chain)):
        y = chain[j:j + 1](y, key=KEYS, layout=layout)
        layout = "CHW" if j == len(chain) - 1 else layout
    np.testing.assert_array_equal(out, np.asarray(y))
    # Same with compose(op, start=j), and with the chain split in two slices.
    z = x
    for j, op in enumerate(chain):
        z = compose(op, start=j)(z, key=KEYS)
    np.testing.assert_array_equal(out, np.asarray(z))
    np.testing.assert_array_equal(out, np.asarray(chain[2:](chain[:2](x, key=KEYS), key=KEYS)))


def test_single_op_is_position_zero_and_positions_matter():
    x = images(6, 16, 20)
    cj = ops.brightness.bind(factor=(0.5, 1.5))
    alone = np.asarray(cj(x, key=KEYS))
    np.testing.assert_array_equal(alone, np.asarray(compose(cj)(x, key=KEYS)))
    # The same op at position 1 draws from fold_in(k, 1): different output.
    assert not np.array_equal(alone, np.asarray(compose(cj, start=1)(x, key=KEYS)))
    # Appending an op does not change the draws of the ops before it.
    first = np.asarray(compose(cj, ops.normalize)(x, key=KEYS))
    np.testing.assert_array_equal(first, np.asarray(ops.normalize(alone)))


def test_random_apply_and_choice_of_one_are_the_op():
    x = images(6, 16, 20)
    cj = ops.contrast.bind(factor=(0.5, 1.5))
    ref = np.asarray(cj(x, key=KEYS))
    np.testing.assert_array_equal(ref, np.asarray(random_apply(cj, 1.0)(x, key=KEYS)))
    np.testing.assert_array_equal(ref, np.asarray(random_choice([cj])(x, key=KEYS)))
    np.testing.assert_array_equal(x, np.asarray(random_apply(cj, 0.0)(x, key=KEYS)))


def test_random_apply_applies_where_the_plan_says():
    x = images(64, 8, 8, seed=1)
    keys = jax.random.split(jax.random.key(5), 64)
    step = random_apply(ops.invert, 0.3)
    applied = np.asarray(step.explain(x, key=keys)["applied"])
    out = np.asarray(step(x, key=keys))
    np.testing.assert_array_equal(out[applied], 255 - x[applied])
    np.testing.assert_array_equal(out[~applied], x[~applied])
    assert 0 < applied.sum() < 64
    # The coin's frequency over many samples (binomial two-sided test, fixed seed).
    big = step.explain((20000, 8, 8, 3), key=jax.random.key(0))["applied"]
    assert stats.binomtest(int(np.sum(big)), 20000, 0.3).pvalue > 1e-3


@pytest.mark.slow
def test_random_choice_per_sample_branches_and_weights():
    x = images(32, 10, 12, seed=2)
    keys = jax.random.split(jax.random.key(9), 32)
    branches = [ops.invert, ops.brightness.bind(factor=(0.4, 1.6)),
                ops.flip.bind(p=1.0, horizontal=False, vertical=True)]
    step = random_choice(branches, weights=[1, 2, 5])
    index = np.asarray(step.explain(x, key=keys)["index"])
    assert len(set(index.tolist())) == 3  # different samples, different branches, one batch
    out = np.asarray(step(x, key=keys))
    for j, branch in enumerate(branches):  # each branch gets the composite's key (position 0)
        ref = np.asarray(compose(branch)(x, key=keys))
        np.testing.assert_array_equal(out[index == j], ref[index == j])
    big = np.asarray(step.explain((24000, 4, 4, 3), key=jax.random.key(1))["index"])
    counts = np.bincount(big, minlength=3)
    assert stats.chisquare(counts, 24000 * np.array([1, 2, 5]) / 8).pvalue > 1e-3


def test_some_of_counts_subsets_and_order():
    step = some_of([ops.invert, ops.equalize, ops.autocontrast, ops.grayscale], n=(1, 3))
    plan = step.explain((20000, 4, 4, 3), key=jax.random.key(2))
    applied, count = np.asarray(plan["applied"]), np.asarray(plan["count"])
    np.testing.assert_array_equal(applied.sum(1), count)
    assert stats.chisquare(np.bincount(count, minlength=4)[1:]).pvalue > 1e-3
    # Given its count, each op is equally likely to be in the subset.
    assert stats.chisquare(applied.sum(0)).pvalue > 1e-3
    # Applied in the listed order: invert then equalize == equalize(invert(x)).
    x = images(16, 8, 8, seed=3)
    keys = jax.random.split(jax.random.key(4), 16)
    two = some_of([ops.invert, ops.equalize], n=2)
    np.testing.assert_array_equal(np.asarray(two(x, key=keys)),
                                  np.asarray(ops.equalize(ops.invert(x))))


def _invert(x):
    return 255 - x


def _posterize3(x):
    return x & np.uint8(0b11100000)


def _solarize100(x):
    return np.where(x >= 100, 255 - x, x)


def test_random_order_draws_every_order_and_applies_it():
    """torchvision RandomOrder: every op once, each of the n! orders equally likely, drawn per
    sample; each sample equals the NumPy ops applied in its drawn order."""
    three = [ops.invert, ops.posterize.bind(bits=3), ops.solarize.bind(threshold=100)]
    step = random_order(three)
    order = np.asarray(step.explain((12000, 4, 4, 3), key=jax.random.key(5))["order"])
    np.testing.assert_array_equal(np.sort(order, axis=1), np.broadcast_to(np.arange(3), (12000, 3)))
    codes = order @ np.array([9, 3, 1])
    _, counts = np.unique(codes, return_counts=True)
    assert len(counts) == 6 and stats.chisquare(counts).pvalue > 1e-3
    x = images(24, 8, 8, seed=7)
    plan = step.sample(x, key=jax.random.key(6))
    out = np.asarray(step.apply(x, params=plan))
    np.testing.assert_array_equal(out, np.asarray(step(x, key=jax.random.key(6))))
    numpy_ops = [_invert, _posterize3, _solarize100]
    for i, drawn in enumerate(np.asarray(plan["order"])):
        y = x[i]
        for j in drawn:
            y = numpy_ops[j](y)
        np.testing.assert_array_equal(out[i], y)
    assert len({tuple(o) for o in np.asarray(plan["order"])}) > 1  # orders differ per sample


def test_random_order_keys_do_not_depend_on_the_order():
    """Op j gets fold_in(key, j) wherever it lands, as in some_of: the drawn params equal
    some_of's (every op applied, in listed order) for the same key."""
    x = images(6, 16, 20)
    pair = [ops.brightness.bind(factor=(0.5, 1.5)), ops.rotate]
    plan = random_order(pair).sample(x, key=KEYS)
    listed = some_of(pair, n=2).sample(x, key=KEYS)
    assert len({tuple(o) for o in np.asarray(plan["order"])}) == 2
    for a, b in zip(jax.tree_util.tree_leaves(plan["ops"]),
                    jax.tree_util.tree_leaves(listed["ops"]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_random_order_moves_targets_in_its_order():
    """Boxes follow the geometric ops in the sample's drawn order: flip then a 90-degree turn
    is not the turn then the flip, and each sample's boxes equal the ops applied one by one."""
    step = random_order([ops.flip.bind(p=1.0), ops.rot90.bind(k=1)])
    x = images(8, 12, 12, seed=2)
    boxes = np.tile(np.array([[[1.0, 2.0, 5.0, 4.0]]], np.float32), (8, 1, 1))
    plan = step.sample(x, key=jax.random.key(9))
    out = step.apply(x, params=plan, boxes=boxes)
    for i, drawn in enumerate(np.asarray(plan["order"])):
        y = {"images": x[i:i + 1], "boxes": boxes[i:i + 1]}
        for j in drawn:
            y = step.ops[j](y["images"], key=jax.random.key(0), boxes=y["boxes"])
        np.testing.assert_array_equal(np.asarray(out["images"][i]), np.asarray(y["images"][0]))
        np.testing.assert_allclose(np.asarray(out["boxes"][i]), np.asarray(y["boxes"][0]),
                                   atol=1e-4)
    assert len({tuple(o) for o in np.asarray(plan["order"])}) == 2


def test_random_order_in_dali_equals_arrays():
    x, s = images(6, 16, 20, seed=4), seeds(6, seed=12)
    step = random_order([ops.flip, ops.solarize.bind(threshold=(64, 192)),
                         ops.brightness.bind(factor=(0.5, 1.5))])
    (out,), = run_dali(lambda im, sd: (step(im, seeds=sd),), x, s, layouts=["HWC", None])
    np.testing.assert_array_equal(out, np.asarray(step(x, key=augjax.keys_from_seeds(s))))


def test_random_order_refusals():
    with pytest.raises(ParamError, match="random_order: argument 'ops' is empty"):
        random_order([])
    with pytest.raises(ParamError, match="at most 8 ops"):
        random_order([ops.invert] * 9)
    with pytest.raises(ParamError, match="expects a list of ops"):
        random_order(ops.invert)
    with pytest.raises(InputError, match="random_order"):
        random_order([ops.invert, ops.random_crop.bind(size=(8, 8))])(images(2), key=KEYS[:2])


def test_nested_chain_inside_a_choice():
    x = images(6, 16, 20)
    inner = compose(ops.contrast.bind(factor=(0.5, 1.5)), ops.invert)
    # random_choice([chain]) is the chain applied with the composite's key as its sample key.
    ref = np.asarray(random_choice([inner])(x, key=KEYS))
    keys0 = jax.vmap(jax.random.fold_in, in_axes=(0, None))(KEYS, 0)
    np.testing.assert_array_equal(ref, np.asarray(inner(x, key=keys0)))
    # compose(compose(a, b), c) splices: same program as compose(a, b, c).
    assert compose(inner, ops.flip) == compose(*inner.steps, ops.flip)


def test_size_dtype_and_layout_changes_inside_composites():
    x = images(6, 16, 20)
    crop_a = ops.center_crop.bind(size=8)
    crop_b = ops.random_crop.bind(size=8)
    step = random_choice([crop_a, crop_b])  # same output size: allowed
    assert step(x, key=KEYS).shape == (6, 8, 8, 3)
    with pytest.raises(InputError, match="different outputs"):
        random_apply(crop_a, 0.5)(x, key=KEYS)  # 8x8 or 16x20: not one shape
    with pytest.raises(InputError, match="float32"):
        random_choice([ops.normalize, ops.invert])(x, key=KEYS)
    # normalize on float input keeps float32: the same choice is fine there.
    xf = images(6, 16, 20, dtype=np.float32)
    assert random_choice([ops.normalize, ops.invert])(xf, key=KEYS).dtype == np.float32
    with pytest.raises(ParamError, match="layout"):
        random_apply(ops.normalize.bind(chw=True), 0.5)
    # CHW input through a chain with a size change.
    chw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    out = compose(ops.flip, crop_b)(chw, key=KEYS, layout="CHW")
    ref = compose(ops.flip, crop_b)(x, key=KEYS)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref).transpose(0, 3, 1, 2))


def test_construction_errors():
    with pytest.raises(ParamError, match="batch-level"):
        random_apply(ops.mixup.bind(num_classes=3), 0.5)
    with pytest.raises(ParamError, match="batch-level"):
        random_choice([compose(ops.flip, ops.mixup.bind(num_classes=3))])
    with pytest.raises(ParamError, match="'p'"):
        random_apply(ops.flip, 1.5)
    with pytest.raises(ParamError, match="weights"):
        random_choice([ops.flip, ops.invert], weights=[1.0])
    with pytest.raises(ParamError, match="'n'"):
        some_of([ops.flip, ops.invert], n=3)
    with pytest.raises(ParamError, match="expects ops"):
        compose(ops.flip, "invert")
    with pytest.raises(InputError, match="empty"):
        compose()(images(2), key=KEYS[:2])


@pytest.mark.slow
def test_labels_cross_only_with_a_mixing_op():
    x, y = images(6, 8, 8), np.arange(6, dtype=np.int32) % 3
    plain = compose(ops.flip, ops.invert)
    mixing = compose(ops.flip, ops.mixup.bind(num_classes=3), ops.normalize)
    assert plain.inputs == ("images",) and mixing.inputs == ("images", "labels")
    with pytest.raises(InputError, match="positional input"):
        plain(x, y, key=KEYS)
    out, soft = mixing(x, y, key=KEYS)
    assert out.shape == (6, 8, 8, 3) and out.dtype == np.float32 and soft.shape == (6, 3)
    # Bitwise equal to the ops one at a time at their positions.
    a = compose(ops.flip)(x, key=KEYS)
    b, soft_b = compose(ops.mixup.bind(num_classes=3), start=1)(a, y, key=KEYS)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ops.normalize(b)))
    np.testing.assert_array_equal(np.asarray(soft), np.asarray(soft_b))


@pytest.mark.slow
def test_dali_chain_is_one_crossing_and_equals_arrays(monkeypatch):
    import augjax.dali as bridge

    x, y, s = images(6, 16, 20), np.arange(6, dtype=np.int32) % 4, seeds(6, seed=11)
    chain = compose(ops.flip, random_choice([ops.invert, ops.brightness.bind(factor=(0.5, 1.5))]),
                    ops.mixup.bind(num_classes=4, mode="elem"), ops.random_crop.bind(size=8),
                    ops.normalize.bind(chw=True))
    calls = []
    original = bridge.apply_dali

    def counting(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(bridge, "apply_dali", counting)
    (out, soft), = run_dali(lambda im, lab, sd: chain(im, lab, seeds=sd), x, y, s,
                            layouts=["HWC", None, None])
    assert len(calls) == 1 and len(calls[0]) == 5  # one jax_function for the five ops
    ref, ref_soft = chain(x, y, key=augjax.keys_from_seeds(s))
    assert out.shape == (6, 3, 8, 8)
    np.testing.assert_array_equal(out, np.asarray(ref))
    np.testing.assert_array_equal(soft, np.asarray(ref_soft))


def test_same_chain_built_twice_reuses_the_program():
    x = images(4, 8, 8)
    keys = KEYS[:4]

    def build():
        return compose(ops.flip.bind(p=0.5), random_apply([ops.invert, ops.equalize], 0.5),
                       some_of([ops.autocontrast, ops.grayscale], 1))

    a, b = build(), build()
    assert a == b and hash(a) == hash(b)
    first = np.asarray(a(x, key=keys))
    before = augjax.trace_count()
    second = np.asarray(b(x, key=keys))
    assert augjax.trace_count() == before
    np.testing.assert_array_equal(first, second)
    other = np.asarray(b(x, key=jax.random.split(jax.random.key(77), 4)))
    assert not np.array_equal(first, other)


@pytest.mark.gpu
def test_gpu_chain_with_policy_is_one_crossing_and_equals_gpu_arrays():
    """On a GPU: a chain with a policy and a mixing op through a DALI GPU pipeline equals the
    same chain on GPU arrays (bitwise) and CPU arrays (uint8 within 1 level)."""
    x, y, s = images(8, 32, 32, seed=21), np.arange(8, dtype=np.int32) % 5, seeds(8, seed=22)
    chain = compose(ops.flip, augjax.from_timm("rand-m9-mstd0.5-inc1"),
                    augjax.augmix(width=2, depth=1), ops.mixup.bind(num_classes=5))
    (out, soft), = run_dali(lambda im, lab, sd: chain(im, lab, seeds=sd), x, y, s,
                            layouts=["HWC", None, None], device="gpu")
    gpu, cpu = jax.devices("gpu")[0], jax.devices("cpu")[0]
    keys = augjax.keys_from_seeds(s)
    ref, ref_soft = chain(jax.device_put(x, gpu), jax.device_put(y, gpu),
                          key=jax.device_put(keys, gpu))
    np.testing.assert_array_equal(out, np.asarray(ref))
    np.testing.assert_array_equal(soft, np.asarray(ref_soft))
    on_cpu, _ = chain(jax.device_put(x, cpu), jax.device_put(y, cpu),
                      key=jax.device_put(keys, cpu))
    diff = np.abs(out.astype(int) - np.asarray(on_cpu).astype(int))
    assert diff.mean() < 0.5, diff.mean()  # warps may move a few pixels (float rounding)


@pytest.mark.slow
@pytest.mark.parametrize("n", [8, 19])
def test_cpu_chunks_of_compute_bound_ops_equal_the_whole_batch(n, monkeypatch):
    """On CPU a run of compute-bound ops (color_jitter) goes through the batch in chunks of
    CPU_CHUNK (one chunk, and 19 = 2 x 8 + 3: several and a remainder); the result is the
    whole-batch program's, bit for bit, with memory-bound and batch-level ops around it."""
    import augjax._runtime.execution.lowering as lowering
    import augjax._runtime.execution.program as program

    chain = compose(
        ops.flip.bind(p=0.5),
        ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        ops.color_jitter.bind(brightness=0.2, hue=0.05),
        ops.rotate.bind(degrees=(-20.0, 20.0)),
        ops.mixup.bind(alpha=0.4, num_classes=5),
        ops.color_jitter.bind(contrast=0.3),
        ops.normalize.bind(chw=True),
    )
    x, y = images(n, 20, 24, seed=n), np.arange(n, dtype=np.int32) % 5
    key = jax.random.key(n)
    assert lowering.CPU_CHUNK < n or n == 8
    out, soft = chain(x, y, key=key)
    monkeypatch.setattr(lowering, "CPU_CHUNK", 10**6)
    program.array_program.cache_clear()
    whole, whole_soft = chain(x, y, key=key)
    program.array_program.cache_clear()
    np.testing.assert_array_equal(np.asarray(out), np.asarray(whole))
    np.testing.assert_array_equal(np.asarray(soft), np.asarray(whole_soft))


def test_chunked_run_errors_name_the_whole_batch():
    """A bad input to a chunked run is reported with the batch's shape, not a chunk's."""
    x = images(19, 16, 20)[..., :1]  # one channel: color_jitter needs three
    with pytest.raises(InputError, match=r"color_jitter.*\(19, 16, 20, 1\)"):
        ops.color_jitter(x, key=jax.random.key(0), brightness=0.4)
