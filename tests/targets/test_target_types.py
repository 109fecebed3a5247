"""Targets as types (``augjax.Masks``, ``augjax.Boxes``, ``augjax.Keypoints``): a call given
them returns the same types with the same options, holding bit for bit the arrays that the
plain keywords (``mask_fill=``, ``boxes_format=``, ``boxes_normalized=``) give, on images and
clips, inside ``jax.jit`` and through ``apply``; a type given for another keyword, or an option
keyword that disagrees with the type's, is a typed error naming both."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import augjax

RNG = np.random.default_rng(0)
IMAGES = RNG.integers(0, 256, (2, 16, 20, 3), dtype=np.uint8)
MASKS = RNG.integers(0, 4, (2, 16, 20)).astype(np.int32)
CENTRES = RNG.uniform(6, 12, (2, 3, 2)).astype(np.float32)
BOXES = np.concatenate([CENTRES, np.full((2, 3, 2), 4, np.float32)], -1)  # cxcywh
POINTS = RNG.uniform(0, 15, (2, 4, 2)).astype(np.float32)
KEY = jax.random.key(3)
CHAIN = augjax.compose(augjax.ops.rotate.bind(degrees=(-40, 40)), augjax.ops.flip)


def _equal(a, b) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_typed_targets_give_the_plain_keywords_arrays_as_their_types():
    plain = CHAIN(IMAGES, key=KEY, masks=MASKS, mask_fill=3, boxes=BOXES,
                  boxes_format="cxcywh", keypoints=POINTS)
    typed = CHAIN(IMAGES, key=KEY, masks=augjax.Masks(MASKS, fill=3),
                  boxes=augjax.Boxes(BOXES, format="cxcywh"), keypoints=augjax.Keypoints(POINTS))
    assert set(typed) == set(plain)
    assert isinstance(typed["masks"], augjax.Masks) and typed["masks"].fill == 3
    assert isinstance(typed["boxes"], augjax.Boxes) and typed["boxes"].format == "cxcywh"
    assert isinstance(typed["keypoints"], augjax.Keypoints)
    for name in ("masks", "boxes", "keypoints"):
        assert _equal(typed[name].array, plain[name]), name
    for name in ("images", "boxes_valid", "keypoints_valid"):
        assert _equal(typed[name], plain[name]), name
    # the fill reached the program: pixels rotated in from outside carry id 3
    assert (np.asarray(typed["masks"].array) == 3).any() and not (MASKS == 3).all()


def test_types_and_plain_arrays_mix_and_pass_through_jit_and_apply():
    boxes = augjax.Boxes(BOXES / np.float32(20), format="cxcywh", normalized=True)
    plain = CHAIN(IMAGES, key=KEY, boxes=BOXES / np.float32(20), boxes_format="cxcywh",
                  boxes_normalized=True, masks=MASKS)
    jitted = jax.jit(lambda x, b, m: CHAIN(x, key=KEY, boxes=b, masks=m))(IMAGES, boxes, MASKS)
    assert isinstance(jitted["boxes"], augjax.Boxes) and jitted["boxes"].normalized
    assert not isinstance(jitted["masks"], augjax.Masks)  # a plain array stays plain
    assert _equal(jitted["boxes"].array, plain["boxes"]) and _equal(jitted["masks"],
                                                                     plain["masks"])
    params = CHAIN.sample(IMAGES, key=KEY)
    applied = CHAIN.apply(IMAGES, params=params, boxes=boxes)
    assert isinstance(applied["boxes"], augjax.Boxes)
    assert _equal(applied["boxes"].array, plain["boxes"])


def test_clips_take_typed_masks():
    clips = augjax.Clips(np.stack([IMAGES, IMAGES[::-1]], 1))
    masks = np.stack([MASKS, MASKS[::-1]], 1)
    plain = CHAIN(clips, key=KEY, masks=masks, mask_fill=5)
    typed = CHAIN(clips, key=KEY, masks=augjax.Masks(masks, fill=5))
    assert isinstance(typed["masks"], augjax.Masks) and isinstance(typed["images"], augjax.Clips)
    assert _equal(typed["masks"].array, plain["masks"])


def test_a_type_for_another_keyword_or_a_disagreeing_option_is_refused():
    with pytest.raises(augjax.InputError, match=r"rotate: argument 'boxes' expects "
                                                r"augjax.Boxes or an array, got augjax.Masks"):
        augjax.ops.rotate(IMAGES, key=KEY, boxes=augjax.Masks(MASKS))
    with pytest.raises(augjax.InputError, match=r"argument 'boxes_valid' expects an array"):
        augjax.ops.rotate(IMAGES, key=KEY, boxes=BOXES, boxes_valid=augjax.Keypoints(POINTS))
    with pytest.raises(augjax.InputError, match=r"argument 'boxes_format' expects 'cxcywh' "
                                                r".*got 'xyxy'") as err:
        augjax.ops.rotate(IMAGES, key=KEY, boxes=augjax.Boxes(BOXES, format="cxcywh"),
                          boxes_format="xyxy")
    assert err.value.argument == "boxes_format"
    # the same option given twice, agreeing, is fine
    augjax.ops.flip(IMAGES, key=KEY, boxes=augjax.Boxes(BOXES, format="cxcywh"),
                    boxes_format="cxcywh")
    with pytest.raises(augjax.InputError, match=r"augjax.Boxes: unexpected argument"):
        augjax.Boxes(BOXES, fmt="cxcywh")
    with pytest.raises(augjax.InputError, match=r"augjax.Masks: argument 'array' expects an "
                                                r"array"):
        augjax.Masks(augjax.Masks(MASKS))
