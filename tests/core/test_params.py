"""Params-first: ``sample`` gives the drawn values, ``apply`` replays them deterministically, for
ops, chains, composites and policies; geometric ops expose their per-sample matrix (checked by
where a marked pixel lands) and ``augjax.invert`` undoes the geometric part of a recorded
augmentation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import images

import augjax
from augjax.errors import InputError

H, W = 13, 17


def smooth(n: int = 3, h: int = 24, w: int = 32) -> np.ndarray:
    """Float32 images whose pixels vary slowly (bilinear resampling stays close)."""
    yy, xx = np.mgrid[0:h, 0:w]
    img = 0.5 + 0.4 * np.stack([np.sin(xx / 5.0), np.cos(yy / 4.0), np.sin((xx + yy) / 7.0)], -1)
    return np.stack([img.astype(np.float32)] * n)


def tree_np(params):
    return jax.tree.map(np.asarray, params)


# ---------------------------------------------------------------------------------------------
# Record, inspect, edit, replay


@pytest.mark.slow
def test_chain_sample_apply_edit_replay():
    chain = augjax.compose(augjax.ops.flip.bind(p=0.5),
                           augjax.ops.rotate.bind(degrees=(-30, 30), interpolation="bilinear"),
                           augjax.ops.brightness.bind(factor=(0.5, 1.5)))
    x = images(6, H, W, seed=1)
    key = jax.random.key(3)
    params = chain.sample(x, key=key)
    assert isinstance(params, tuple) and len(params) == 3
    assert set(params[0]) == {"horizontal", "vertical"} and params[1]["degrees"].shape == (6,)
    np.testing.assert_array_equal(chain.apply(x, params=params), chain(x, key=key))
    # Neutral values everywhere: the replay is the identity.
    edited = (
        {**params[0], "horizontal": jnp.zeros(6, bool)},
        {"degrees": jnp.zeros(6, jnp.float32)},
        {"factor": jnp.ones(6, jnp.float32)},
    )
    np.testing.assert_array_equal(chain.apply(x, params=edited), x)
    # One field edited: only that sample changes, as the op alone with that value.
    one = (params[0], {"degrees": params[1]["degrees"].at[2].set(90.0)}, params[2])
    out, ref = np.asarray(chain.apply(x, params=one)), np.asarray(chain.apply(x, params=params))
    np.testing.assert_array_equal(np.delete(out, 2, 0), np.delete(ref, 2, 0))
    alone = chain[:1].apply(x[2:3], params=(jax.tree.map(lambda v: v[2:3], params[0]),))
    want = augjax.ops.rotate.apply(alone, params={"degrees": jnp.array([90.0])},
                                   interpolation="bilinear")
    want = augjax.ops.brightness.apply(want, params={"factor": params[2]["factor"][2:3]})
    np.testing.assert_array_equal(out[2:3], want)


def test_sample_is_reproducible_and_holds_values_not_keys():
    x = images(4, H, W)
    a = tree_np(augjax.ops.affine.sample(x, key=jax.random.key(0), degrees=20.0,
                                         translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10.0))
    b = tree_np(augjax.ops.affine.sample(x, key=jax.random.key(0), degrees=20.0,
                                         translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10.0))
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
        assert a[k].dtype == np.float32 and a[k].shape[0] == 4
    assert (np.abs(a["degrees"]) <= 20).all() and ((0.8 <= a["scale"]) & (a["scale"] <= 1.2)).all()


def test_apply_rejects_params_that_do_not_fit():
    x = images(4, H, W)
    with pytest.raises(InputError, match="params"):
        augjax.compose(augjax.ops.flip).apply(x, params=({}, {}))
    with pytest.raises(InputError, match="rotate"):
        augjax.ops.rotate.apply(x, params={"degrees": jnp.zeros(3)})
    with pytest.raises(InputError, match="rotate.sample"):
        augjax.ops.rotate.sample(x[0], key=jax.random.key(0))


@pytest.mark.slow
def test_composites_record_their_decisions_and_children():
    x = images(8, 12, 12, seed=2)
    key = jax.random.key(4)
    ra = augjax.random_apply(augjax.ops.rotate.bind(degrees=(10, 20)), p=0.5)
    p = ra.sample(x, key=key)
    assert p["applied"].shape == (8,) and p["op"]["degrees"].shape == (8,)
    np.testing.assert_array_equal(ra.apply(x, params=p), ra(x, key=key))
    off = {**p, "applied": jnp.zeros(8, bool)}
    np.testing.assert_array_equal(ra.apply(x, params=off), x)

    rc = augjax.random_choice([augjax.ops.invert, augjax.ops.rot90.bind(k=2)])
    p = rc.sample(x, key=key)
    np.testing.assert_array_equal(rc.apply(x, params=p), rc(x, key=key))
    first = {**p, "index": jnp.zeros(8, jnp.int32)}
    np.testing.assert_array_equal(rc.apply(x, params=first), 255 - x)

    so = augjax.some_of([augjax.ops.invert, augjax.ops.flip.bind(p=1.0)], n=(0, 2))
    p = so.sample(x, key=key)
    np.testing.assert_array_equal(so.apply(x, params=p), so(x, key=key))
    both = {**p, "applied": jnp.ones((8, 2), bool)}
    np.testing.assert_array_equal(so.apply(x, params=both), (255 - x)[:, :, ::-1])


@pytest.mark.slow
def test_policy_params_replay_and_edit():
    policy = augjax.rand_augment(n=2, m=9, ops=["Identity", "Rotate", "Posterize", "Equalize"])
    x = images(10, 16, 16, seed=3)
    key = jax.random.key(5)
    p = policy.sample(x, key=key)
    assert p["op"].shape == (10, 2) and len(p["branches"]) == 4
    assert p["branches"][1]["degrees"].shape == (10, 2)
    np.testing.assert_array_equal(policy.apply(x, params=p), policy(x, key=key))
    identity = {**p, "op": jnp.zeros((10, 2), jnp.int32)}
    np.testing.assert_array_equal(policy.apply(x, params=identity), x)
    equalized = {**p, "op": jnp.full((10, 2), 3, jnp.int32).at[:, 1].set(0)}
    np.testing.assert_array_equal(policy.apply(x, params=equalized), augjax.ops.equalize(x))
    # The recorded magnitude of Rotate is the value the layer applies.
    rot = {**p, "op": jnp.full((10, 2), 1, jnp.int32).at[:, 1].set(0)}
    want = augjax.ops.rotate.apply(x, params={"degrees": p["branches"][1]["degrees"][:, 0]})
    np.testing.assert_array_equal(policy.apply(x, params=rot), want)


# ---------------------------------------------------------------------------------------------
# Matrices: where a marked pixel lands


GEOMETRIC = [
    ("flip", {"p": 1.0}, {}),
    ("flip", {"p": 1.0, "horizontal": False, "vertical": True}, {}),
    ("rot90", {"k": 1}, {}),
    ("rot90", {"k": 3}, {}),
    ("rotate", {"degrees": 90.0}, {}),
    ("rotate", {"degrees": -90.0}, {}),
    ("affine", {"degrees": 90.0, "translate": (0.2, 0.2)}, {}),
    ("shear_x", {"shear": 0.5}, {}),
    ("shear_y", {"shear": -0.5}, {}),
    ("translate_x", {"translate": 0.3}, {}),
    ("translate_y", {"translate": -4.0, "relative": False}, {}),
    ("perspective", {"p": 1.0, "distortion_scale": 0.5}, {}),
]


@pytest.mark.fast_tier("rot90-{'k': 1}-{}")
@pytest.mark.parametrize("name, params, _", GEOMETRIC, ids=lambda v: str(v))
def test_matrix_maps_a_pixel_where_the_op_moves_it(name, params, _):
    """A small blob's centre of mass lands where the matrix sends the blob's centre (bilinear
    sampling where the op has it; flips and quarter turns move pixels exactly)."""
    op = augjax.get_op(name).bind(**params)
    if "interpolation" in op.kwargs:
        op = op.spec.bind(**params, interpolation="bilinear")
    rng = np.random.default_rng(0)
    hits = 0
    h, w = (15, 15) if name == "rot90" else (H + 10, W + 10)
    for trial in range(8):
        y0, x0 = int(rng.integers(4, h - 4)), int(rng.integers(4, w - 4))
        x = np.zeros((1, h, w, 1), np.float32)
        x[0, y0 - 1:y0 + 2, x0 - 1:x0 + 2, 0] = 1.0
        params_ = op.sample(x, key=jax.random.key(trial))
        out = np.asarray(op.apply(x, params=params_))[0, ..., 0]
        m = np.asarray(augjax.matrices(op, params_, (h, w), 1, "float32", 1))[0]
        q = m @ np.array([x0, y0, 1.0])
        q = q[:2] / q[2]
        oh, ow = out.shape
        if not (3 <= q[0] <= ow - 4 and 3 <= q[1] <= oh - 4):
            continue  # the blob leaves the image (partly): no centre to compare
        yy, xx = np.mgrid[0:oh, 0:ow]
        centre = np.array([(xx * out).sum(), (yy * out).sum()]) / out.sum()
        np.testing.assert_allclose(centre, q, atol=0.25, err_msg=f"{name} trial {trial}")
        hits += 1
    assert hits >= 3


@pytest.mark.slow
def test_chain_matrix_is_the_product_of_its_steps():
    chain = augjax.compose(augjax.ops.rotate.bind(degrees=(-30, 30)),
                           augjax.ops.flip.bind(p=0.5),
                           augjax.ops.brightness,  # no geometry: the identity
                           augjax.ops.translate_x.bind(translate=(-0.2, 0.2)))
    x = images(5, H, W)
    p = chain.sample(x, key=jax.random.key(0))
    total = np.asarray(augjax.matrices(chain, p, (H, W)))
    parts = [np.asarray(augjax.matrices(chain[i:i + 1], (p[i],), (H, W), batch=5))
             for i in range(4)]
    np.testing.assert_allclose(total, parts[3] @ parts[2] @ parts[1] @ parts[0], atol=1e-5)
    np.testing.assert_allclose(parts[2], np.broadcast_to(np.eye(3), (5, 3, 3)))


# ---------------------------------------------------------------------------------------------
# invert


@pytest.mark.slow
def test_invert_is_exact_for_flips_and_quarter_turns():
    x = images(6, 12, 12, seed=4)
    chain = augjax.compose(augjax.ops.flip.bind(p=0.5, vertical=True),
                           augjax.random_apply(augjax.ops.rot90.bind(k=1), p=0.5))
    key = jax.random.key(6)
    p = chain.sample(x, key=key)
    out = chain(x, key=key)
    np.testing.assert_array_equal(augjax.invert(chain, out, p, interpolation="nearest"), x)


@pytest.mark.fast_tier("shear-flip")
@pytest.mark.parametrize("step", [
    augjax.ops.rotate.bind(degrees=(-25, 25), interpolation="bilinear"),
    augjax.ops.affine.bind(degrees=15.0, translate=(0.05, 0.05), scale=(0.9, 1.1), shear=5.0,
                           interpolation="bilinear"),
    augjax.ops.perspective.bind(p=1.0, distortion_scale=0.3),
    augjax.compose(augjax.ops.shear_x.bind(shear=(-0.2, 0.2), interpolation="bilinear"),
                   augjax.ops.flip),
], ids=["rotate", "affine", "perspective", "shear-flip"])
def test_invert_restores_the_interior(step):
    x = smooth()
    key = jax.random.key(7)
    p = step.sample(x, key=key)
    out = step(x, key=key)
    back = np.asarray(augjax.invert(step, out, p))
    # Pixels away from the input's border whose image under the matrix lies well inside the
    # output come back (bilinear sampling blends border pixels with the padding).
    m = np.asarray(augjax.matrices(step, p, x.shape[1:3]))
    yy, xx = np.mgrid[0:x.shape[1], 0:x.shape[2]]
    pts = np.stack([xx, yy, np.ones_like(xx)], -1).astype(np.float64)
    q = np.einsum("nij,hwj->nhwi", m, pts)
    q = q[..., :2] / q[..., 2:]
    inside = ((q[..., 0] >= 1) & (q[..., 0] <= x.shape[2] - 2) & (q[..., 1] >= 1)
              & (q[..., 1] <= x.shape[1] - 2))
    inside &= (xx >= 1) & (xx <= x.shape[2] - 2) & (yy >= 1) & (yy <= x.shape[1] - 2)
    assert inside.mean() > 0.5
    err = np.abs(back - x).max(-1)[inside]
    assert err.max() < 0.1 and err.mean() < 0.01, (err.max(), err.mean())


@pytest.mark.slow
def test_invert_needs_the_input_size_when_the_size_changed_and_refuses_mixtures():
    x = images(2, 16, 16)
    op = augjax.ops.rot90.bind(k=1)
    rect = images(2, 12, 16)
    p = op.sample(rect, key=jax.random.key(0))
    out = op(rect, key=jax.random.key(0))
    with pytest.raises(InputError, match="size="):
        augjax.invert(op, out, p, size=(16, 16))
    np.testing.assert_array_equal(augjax.invert(op, out, p, size=(12, 16),
                                                interpolation="nearest"), rect)
    mix = augjax.augmix(width=2)
    pm = mix.sample(x, key=jax.random.key(0))
    with pytest.raises(InputError, match="augmix"):
        augjax.invert(mix, x, pm)
