"""Clips (N, T, H, W, C): one draw per clip by default, per_frame=True per frame; targets per
frame follow; mixup/cutmix mix whole clips; sample/apply replay. The reference is always the
image path (N, H, W, C) with the same key: a clip is N images per frame."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import ops
from augjax._runtime.execution.padding import no_padding
from augjax.testing import example_op, make_images
from helpers import compiles

N, T, H, W = 3, 4, 20, 16
KEY = jax.random.key(4)


@pytest.fixture(scope="module")
def frames():
    return jnp.asarray(np.random.default_rng(0).integers(0, 256, (N, H, W, 3), np.uint8))


@pytest.fixture(scope="module")
def clips():
    return jnp.asarray(np.random.default_rng(1).integers(0, 256, (N, T, H, W, 3), np.uint8))


def _eq(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


CHAIN = augjax.compose(ops.random_resized_crop.bind(size=(12, 12), scale=(0.3, 1.0)),
                       ops.flip.bind(p=0.5), ops.color_jitter.bind(brightness=0.4, hue=0.1))

STEPS = {
    "flip": ops.flip.bind(p=0.5),
    "chain": CHAIN,
    "rand_augment": augjax.rand_augment(n=2, m=9),
    "trivial_augment_wide": augjax.trivial_augment_wide(),
    "auto_augment": pytest.param(augjax.auto_augment(), marks=pytest.mark.slow),
    "augmix": pytest.param(augjax.augmix(), marks=pytest.mark.slow),
}


@pytest.mark.fast_tier("flip")
@pytest.mark.parametrize("step", list(STEPS.values()), ids=list(STEPS))
def test_identical_frames_give_the_image_output(step, frames):
    """A clip of T identical frames gives T identical frames, each the image call's output
    with the same key (so the same params)."""
    clip = augjax.Clips(jnp.stack([frames] * T, axis=1))
    out = step(clip, key=KEY).array
    image = step(frames, key=KEY)
    assert out.shape == (N, T, *image.shape[1:])
    for t in range(T):
        _eq(out[:, t], image)
    # And the params are the image params: apply them to the frames to get the same.
    params = step.sample(clip, key=KEY)
    _eq(step.apply(frames, params=params), image)
    _eq(step.apply(clip, params=params), out)


@pytest.mark.parametrize("step", [STEPS["chain"], STEPS["rand_augment"]], ids=["chain", "ra"])
def test_distinct_frames_share_the_clip_params(step, clips):
    out = step(augjax.Clips(clips), key=KEY).array
    params = step.sample(clips[:, 0], key=KEY)
    for t in range(T):
        _eq(out[:, t], step.apply(clips[:, t], params=params))


@pytest.mark.slow
def test_per_frame_draws_differ_and_replay(frames):
    step = CHAIN
    clip = augjax.Clips(jnp.stack([frames] * T, axis=1))
    out = step(clip, key=KEY, per_frame=True).array
    for t in range(1, T):
        assert not np.array_equal(np.asarray(out[:, t]), np.asarray(out[:, 0]))
    params = step.sample(clip, key=KEY, per_frame=True)
    boxes = np.asarray(params[0]["box"])
    assert boxes.shape == (T, N, 4) and len({tuple(b) for b in boxes.reshape(-1, 4)}) == T * N
    _eq(step.apply(clip, params=params, per_frame=True), out)
    # Frame t of clip n draws with fold_in(k_n, t): the image call with those keys.
    keys = jax.random.split(KEY, N)
    for t in range(T):
        _eq(out[:, t], step(frames, key=jax.vmap(lambda k: jax.random.fold_in(k, t))(keys)))


@pytest.mark.slow
def test_per_frame_policy(clips):
    ra = STEPS["rand_augment"]
    out = ra(augjax.Clips(clips), key=KEY, per_frame=True).array
    params = ra.sample(augjax.Clips(clips), key=KEY, per_frame=True)
    assert np.asarray(params["op"]).shape[:2] == (T, N)
    assert not np.array_equal(np.asarray(params["op"][0]), np.asarray(params["op"][1]))
    for t in range(T):
        one = jax.tree_util.tree_map(lambda v: v[t], params)
        _eq(out[:, t], ra.apply(clips[:, t], params=one))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mixup", "cutmix"])
def test_mixing_mixes_whole_clips(name, clips):
    op = getattr(ops, name).bind(alpha=1.0, num_classes=5)
    labels = jnp.array([0, 3, 4])
    out, soft = op(augjax.Clips(clips), labels, key=KEY)
    out = out.array
    assert out.shape == clips.shape and soft.shape == (N, 5)
    for t in range(T):  # frame t of the clips mixed as a batch of images with the same key
        ref, ref_soft = op(clips[:, t], labels, key=KEY)
        _eq(out[:, t], ref)
        _eq(soft, ref_soft)
    pf, pf_soft = op(augjax.Clips(clips), labels, key=KEY, per_frame=True)
    assert pf_soft.shape == (N, T, 5)


@pytest.mark.slow
def test_targets_follow_per_frame(clips):
    step = augjax.compose(ops.flip.bind(p=0.5), ops.affine.bind(degrees=20, translate=(0.1, 0.1)))
    rng = np.random.default_rng(3)
    top_left = rng.uniform(0, 8, (N, T, 2, 2))
    boxes = jnp.asarray(np.concatenate([top_left, top_left + 4], -1), jnp.float32)
    masks = jnp.asarray(rng.integers(0, 3, (N, T, H, W)), jnp.uint8)
    points = jnp.asarray(rng.uniform(0, 15, (N, T, 5, 2)), jnp.float32)
    out = step(augjax.Clips(clips), key=KEY, boxes=boxes, masks=masks, keypoints=points)
    out["images"] = out["images"].array
    assert out["boxes"].shape == (N, T, 2, 4) and out["masks"].shape == (N, T, H, W)
    assert out["keypoints"].shape == (N, T, 5, 2)
    for t in range(T):
        ref = step(clips[:, t], key=KEY, boxes=boxes[:, t], masks=masks[:, t],
                   keypoints=points[:, t])
        for k in ref:
            _eq(out[k][:, t], ref[k])
    pf = step(augjax.Clips(clips), key=KEY, boxes=boxes, per_frame=True)
    assert pf["boxes"].shape == (N, T, 2, 4)


def test_errors(frames, clips):
    with pytest.raises(augjax.InputError, match="per_frame"):
        ops.flip(frames, key=KEY, p=0.5, per_frame=True)
    with pytest.raises(augjax.InputError, match=r"leading axes \(N, T\)"):
        ops.flip(augjax.Clips(clips), key=KEY, p=0.5, boxes=jnp.zeros((N, 2, 4)))
    with pytest.raises(augjax.KeyRequiredError):
        ops.flip(augjax.Clips(clips), p=0.5)


def test_per_frame_must_be_a_bool(clips):
    """A truthy non-bool (``per_frame="yes"``) is refused in the call, sample and apply paths,
    before anything is drawn (was: it ran per frame)."""
    flip = ops.flip.bind(p=0.5)
    match = r"flip: argument 'per_frame' expects a bool .* got str 'yes'"
    for call in (lambda: flip(augjax.Clips(clips), key=KEY, per_frame="yes"),
                 lambda: ops.flip(augjax.Clips(clips), key=KEY, per_frame="yes"),
                 lambda: flip.sample(augjax.Clips(clips), key=KEY, per_frame="yes"),
                 lambda: flip.apply(augjax.Clips(clips), params={}, per_frame="yes")):
        with pytest.raises(augjax.InputError, match=match) as err:
            call()
        assert err.value.argument == "per_frame" and err.value.op == "flip"
    with pytest.raises(augjax.InputError, match=r"got int 1"):
        flip(augjax.Clips(clips), key=KEY, per_frame=1)


def test_errors_speak_of_clips(clips):
    """Clips in the other layout and masks of another frame size are named in the clips'
    terms (their layout and shape, (N, T, H, W)), not in those of the N * T frames the
    programs see (was: "pass layout='HWC'", "(N, H, W) = (12, 20, 16)")."""
    chw = jnp.moveaxis(clips, -1, 2)  # (N, T, 3, H, W)
    with pytest.raises(augjax.InputError, match=r"clips of shape \(3, 4, 3, 20, 16\): in layout "
                                                r"FHWC .* layout='FCHW'"):
        ops.flip(augjax.Clips(chw), key=KEY, p=0.5)
    with pytest.raises(augjax.InputError, match=r"in layout FCHW .* layout='FHWC'"):
        ops.flip(augjax.Clips(clips, layout="FCHW"), key=KEY, p=0.5)
    with pytest.raises(augjax.InputError, match=r"'masks' on clips expects .* \(3, 4, 20, 16\)"
                                                r".* got int32 \(3, 4, 10, 16\)"):
        ops.flip(augjax.Clips(clips), key=KEY, p=0.5, masks=jnp.zeros((N, T, 10, W), jnp.int32))
    # an op's own check (3 channels) sees one frame per clip: a note gives the clips' terms
    gray = jnp.zeros((N, T, H, W, 1), jnp.uint8)
    with pytest.raises(augjax.InputError, match=r"expects 3 channels") as err:
        ops.color_jitter(augjax.Clips(gray), key=KEY, brightness=0.4)
    assert (f"the clips {(N, T, H, W, 1)} (layout FHWC) are checked frame by frame"
            in "\n".join(err.value.__notes__))



def test_box_and_keypoint_shapes_speak_of_clips(clips):
    """Boxes and keypoints with a wrong last axis are named with the clips' (N, T), not the
    N * T frames (was: "with N = 12")."""
    with pytest.raises(augjax.InputError, match=r"'boxes' on clips expects shape \(N, T, M, 4\) "
                                                r"XYXY .* \(N, T\) = \(3, 4\), got float32 "
                                                r"\(3, 4, 2, 5\)"):
        ops.flip(augjax.Clips(clips), key=KEY, p=0.5, boxes=np.zeros((N, T, 2, 5), np.float32))
    with pytest.raises(augjax.InputError, match=r"'boxes' on clips expects shape \(N, T, M, 5\) "
                                                r"CXCYWHR"):
        ops.flip(augjax.Clips(clips), key=KEY, p=0.5, boxes=np.zeros((N, T, 2, 4), np.float32),
                 boxes_format="cxcywhr")
    with pytest.raises(augjax.InputError, match=r"'keypoints' on clips expects shape "
                                                r"\(N, T, K, 2\) .* \(N, T\) = \(3, 4\), got "
                                                r"float32 \(3, 4, 2, 3\)") as err:
        ops.flip(augjax.Clips(clips), key=KEY, p=0.5,
                 keypoints=np.zeros((N, T, 2, 3), np.float32))
    assert err.value.argument == "keypoints" and err.value.op == "flip"


def test_apply_names_params_drawn_per_frame(clips):
    """Params drawn with ``per_frame=True`` (leading (T, N)) given to ``apply`` without it: the
    error says so (was vmap's "inconsistent sizes" over the N * T frames)."""
    flip = ops.flip.bind(p=0.5)
    params = flip.sample(augjax.Clips(clips), key=KEY, per_frame=True)
    with pytest.raises(augjax.InputError, match=r"flip: argument 'params' leads with \(T, N\) = "
                                                r"\(4, 3\) .* pass per_frame=True") as err:
        flip.apply(augjax.Clips(clips), params=params)
    assert err.value.argument == "params"


#: What tests/catalog/test_all_ops.py gives the kit instead of its example parameters.
KIT_PARAMS = {"rot90": {"k": 1}, "affine": {"degrees": 30.0}}


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in augjax.list_ops()
                                  if augjax.get_op(n).level == "sample"])
def test_every_sample_op_on_clips(name):
    """Each op as the conformance kit runs it (its example parameters, away from the neutral
    values; rot90 a fixed quarter turn, as its random k needs square frames), on the kit's
    batch: the image call is then the kit's own program (stored and compiled by
    tests/catalog/test_all_ops.py when it ran first), and the clip of two copies of the
    batch gives the image output in each frame."""
    spec = augjax.get_op(name)
    op = spec.bind(**KIT_PARAMS[name]) if name in KIT_PARAMS else example_op(spec)
    x = make_images(spec, "uint8")
    keys = jax.random.split(jax.random.key(1), len(x))
    with no_padding():  # as the kit calls: each batch size its own program
        image = op(x, key=keys, layout="HWC")
        out = op(augjax.Clips(jnp.stack([x] * 2, axis=1)), key=keys, layout="HWC").array
    _eq(out[:, 0], image)
    _eq(out[:, 1], image)


@pytest.mark.slow
@pytest.mark.parametrize("per_frame", [False, True])
def test_fused_program_equals_two_programs(per_frame, clips):
    """The one-program path that GPUs take (sampler and apply fused) gives the CPU's two-program
    result (within one level: the fused sampler's floats compile with other options here)."""
    from augjax.clips import _call_program, _frame_struct

    step = CHAIN
    struct = _frame_struct(clips)
    program = _call_program(step, "HWC", per_frame, ("boxes",), (), tuple(struct.shape),
                            "uint8")
    boxes = jnp.tile(jnp.asarray([[[1.0, 2.0, 9.0, 11.0]]]), (N, T, 1, 1))
    fused = program(clips, None, KEY, boxes)
    two = step(augjax.Clips(clips), key=KEY, per_frame=per_frame, boxes=boxes)
    for k in two:
        d = np.abs(np.asarray(fused[k], np.float64) - np.asarray(two[k], np.float64))
        assert d.max() <= 1, k


@pytest.mark.slow
def test_committed_and_uncommitted_clips_share_the_programs(clips):
    """DALI's jax_function hands committed arrays, jnp.asarray uncommitted ones: the clips'
    programs serve both (jax.jit keys on commitment; they compiled twice before), and
    ``sample`` / ``apply`` on clips run the call's programs."""
    step = augjax.compose(ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.5, 1.5)))
    keys = jax.random.split(KEY, N)
    loose = step(augjax.Clips(clips), key=keys)
    device = jax.devices()[0]
    pinned = (augjax.Clips(jax.device_put(clips, device)), jax.device_put(keys, device))
    assert compiles(lambda: jax.block_until_ready(step(pinned[0], key=pinned[1]))) == 0
    _eq(step(pinned[0], key=pinned[1]), loose)
    # sample and apply run the call's two programs (they commit their inputs as the call does)
    params = []
    assert compiles(lambda: params.append(jax.block_until_ready(
        step.sample(augjax.Clips(clips), key=keys)))) == 0
    assert compiles(lambda: _eq(step.apply(augjax.Clips(clips), params=params[0]), loose)) == 0


def test_gray_and_rgba_clips_into_a_colour_op_say_how_to_convert():
    """A colour op that takes 3 channels says how to make 1 (gray) or 4 (RGBA, CMYK) channels
    RGB, on clips as on images."""
    gray = np.zeros((2, 3, 8, 8, 1), np.uint8)
    for x, hint in ((gray, r"gray images: repeat the channel to RGB first \(np\.repeat"),
                    (np.zeros((2, 3, 8, 8, 4), np.uint8), r"RGBA or CMYK images: convert")):
        for images in (augjax.Clips(x), x[:, 0]):
            with pytest.raises(augjax.InputError, match=rf"expects 3 channels.*{hint}"):
                ops.color_jitter(images, brightness=0.4, key=jax.random.key(0))


@pytest.mark.parametrize("per_frame", [False, True])
def test_a_smaller_batch_of_clips_runs_padded_and_equals_its_own_program(monkeypatch, clips,
                                                                           per_frame):
    """A partial batch of clips (an epoch's last) runs the programs of a larger size, padded,
    as a chain on images does (no trace), with its targets; bitwise the size's own program."""
    monkeypatch.delenv("AUGJAX_PAD_BATCHES")  # (conftest turns padding off)
    step = augjax.compose(ops.flip.bind(p=0.5), ops.affine.bind(degrees=20),
                          ops.color_jitter.bind(brightness=0.4))
    rng = np.random.default_rng(5)
    masks = jnp.asarray(rng.integers(0, 3, (N, T, H, W)), jnp.uint8)
    top_left = rng.uniform(0, 8, (N, T, 2, 2))
    boxes = jnp.asarray(np.concatenate([top_left, top_left + 4], -1), jnp.float32)
    step(augjax.Clips(clips), key=KEY, masks=masks, boxes=boxes, per_frame=per_frame)
    before = augjax.trace_count()
    small = dict(masks=masks[:2], boxes=boxes[:2], per_frame=per_frame)
    padded = step(augjax.Clips(clips[:2]), key=jax.random.key(9), **small)
    assert augjax.trace_count() == before
    with no_padding():
        own = step(augjax.Clips(clips[:2]), key=jax.random.key(9), **small)
    for k in ("masks", "boxes", "boxes_valid"):
        assert padded[k].shape[0] == 2
        _eq(padded[k], own[k])
    _eq(padded["images"].array, own["images"].array)
