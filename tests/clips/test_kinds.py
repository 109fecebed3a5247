"""Input kinds as types (augjax._core.kinds, augjax.fronts): a plain array of rank 5 is refused
(clips and 3D volumes share the rank), never guessed; ``augjax.Clips`` / ``layout="FHWC"`` say
clips and give the bits the clip path gave; a kind comes back as the kind that went in (a
plain array as a plain array), through ``jax.jit`` too; the one front-end table."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import ops

N, T, H, W = 2, 3, 12, 10
KEY = jax.random.key(2)
CLIPS = np.random.default_rng(0).integers(0, 256, (N, T, H, W, 3), np.uint8)
STEP = augjax.compose(ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.5, 1.5)))


def test_a_plain_rank5_array_is_refused_naming_the_kinds():
    for call in (lambda: STEP(CLIPS, key=KEY), lambda: STEP.sample(CLIPS, key=KEY),
                 lambda: STEP.apply(CLIPS, params=STEP.sample(CLIPS[:, 0], key=KEY)),
                 lambda: ops.flip(jnp.asarray(CLIPS), key=KEY, p=0.5)):
        with pytest.raises(augjax.InputKindError, match=r"augjax\.Clips\(x\)") as err:
            call()
        assert isinstance(err.value, augjax.InputError)
        assert err.value.argument == "images" and err.value.shape == CLIPS.shape
        assert "layout='FHWC'" in str(err.value) and "rank 5" in str(err.value)


def test_an_unknown_layout_on_rank5_names_the_layout():
    """``layout="TCHW"`` on a rank-5 array: the error names the layout given and the ones
    augjax takes (was the rank-5 refusal, which ignores the layout the caller did give)."""
    for layout in ("TCHW", "fhwc"):
        with pytest.raises(augjax.InputError, match=rf"argument 'layout' expects one of .*'FHWC'"
                                                    rf".*'FCHW'.*, got '{layout}'") as err:
            ops.flip(CLIPS, key=KEY, p=0.5, layout=layout)
        assert err.value.argument == "layout"
    # torchvision's T for the frame axis: the error gives augjax's (and DALI's) name for it
    with pytest.raises(augjax.InputError, match=r"got 'TCHW' \(augjax and DALI call the frame "
                                                r"axis F: layout='FCHW'\)"):
        ops.flip(CLIPS, key=KEY, p=0.5, layout="TCHW")
    with pytest.raises(augjax.InputError, match=r"got 'THWC' .*layout='FHWC'"):
        augjax.Clips(CLIPS, layout="THWC")


def test_clips_and_the_layout_keyword_are_the_clip_path():
    """One draw per clip: frame t of the output is the image call on frames t (same key)."""
    out = STEP(augjax.Clips(CLIPS), key=KEY)
    assert isinstance(out, augjax.Clips) and out.layout == "FHWC"
    plain = STEP(CLIPS, key=KEY, layout="FHWC")
    assert isinstance(plain, jax.Array)  # a plain array in, a plain array out
    np.testing.assert_array_equal(np.asarray(out), np.asarray(plain))
    for t in range(T):
        np.testing.assert_array_equal(out.array[:, t], STEP(CLIPS[:, t], key=KEY))
    params = STEP.sample(augjax.Clips(CLIPS), key=KEY)
    again = STEP.apply(augjax.Clips(CLIPS), params=params)
    assert isinstance(again, augjax.Clips)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(out))


def test_kinds_come_back_as_they_went_in():
    """Clips with targets and labels, channels-first clips, images; through jax.jit."""
    boxes = np.tile(np.array([[1.0, 2.0, 6.0, 8.0]], np.float32), (N, T, 1, 1))
    out = STEP(augjax.Clips(CLIPS), key=KEY, boxes=boxes)
    assert isinstance(out["images"], augjax.Clips) and out["boxes"].shape == (N, T, 1, 4)
    mix = ops.mixup.bind(alpha=1.0, num_classes=3)
    images, soft = mix(augjax.Clips(CLIPS), np.arange(N, dtype=np.int32), key=KEY)
    assert isinstance(images, augjax.Clips) and soft.shape == (N, 3)
    chw = augjax.Clips(CLIPS.transpose(0, 1, 4, 2, 3), layout="FCHW")
    flipped = ops.flip(chw, key=KEY, p=1.0)
    assert flipped.layout == "FCHW"
    np.testing.assert_array_equal(np.asarray(flipped), chw.array[..., ::-1])
    to_chw = ops.normalize(augjax.Clips(CLIPS), chw=True)  # ends channels first: "FCHW"
    assert to_chw.layout == "FCHW" and to_chw.shape == (N, T, 3, H, W)
    image = ops.flip(augjax.Images(CLIPS[:, 0]), key=KEY, p=1.0)
    assert isinstance(image, augjax.Images) and image.layout == "HWC"
    np.testing.assert_array_equal(np.asarray(image), CLIPS[:, 0, :, ::-1])
    jitted = jax.jit(lambda c: STEP(c, key=KEY))(augjax.Clips(CLIPS))
    assert isinstance(jitted, augjax.Clips)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(STEP(augjax.Clips(CLIPS),
                                                                      key=KEY)))


def test_kind_arguments_are_checked():
    with pytest.raises(augjax.InputError, match="rank 5"):
        augjax.Clips(CLIPS[:, 0])
    with pytest.raises(augjax.InputError, match="'layout'"):
        augjax.Clips(CLIPS, layout="HWC")
    with pytest.raises(augjax.InputError, match="rank 4"):
        augjax.Images(CLIPS)
    with pytest.raises(augjax.InputError, match="the kind says the layout"):
        STEP(augjax.Clips(CLIPS), key=KEY, layout="CHW")
    with pytest.raises(augjax.InputError, match="per_frame"):
        STEP(augjax.Images(CLIPS[:, 0]), key=KEY, per_frame=True)


def test_one_front_end_table():
    """Every kind has its row; a subclass of a kind takes its parent's front end (the MRO walk
    of torchvision's _get_kernel)."""
    from augjax import fronts
    from augjax._core.kinds import KINDS

    assert set(fronts.FRONTS) == set(KINDS)

    class Videos(augjax.Clips):
        pass

    assert fronts.front(Videos.of(CLIPS, "FHWC")) is fronts.FRONTS[augjax.Clips]
