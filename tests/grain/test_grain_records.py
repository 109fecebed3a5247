"""augjax.grain with records it cannot run: tuple records, ragged batches, gray, encoded and
16-bit images get typed errors with what to do (the same on the image-chain and the views
path) and a note naming the record; BatchAugment hands back grain's shared-memory fields as
NumPy copies (found by a user trial of the grain integration)."""

from __future__ import annotations

import gc

import grain
import jax
import numpy as np
import pytest

import augjax
import augjax.grain as ag

IMAGE = np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8)


def _crop_chain():
    return augjax.compose(augjax.ops.random_resized_crop.bind(size=16),
                          augjax.ops.flip.bind(p=0.5))


def _views():
    return augjax.recipes.dino(global_size=16, local_size=8, local_count=2)


def _notes(err: pytest.ExceptionInfo) -> str:
    return " ".join(getattr(err.value, "__notes__", []))


@pytest.mark.parametrize("make", [_crop_chain, _views], ids=["chain", "views"])
@pytest.mark.parametrize("record", [(IMAGE, 1), [IMAGE, 1]], ids=["tuple", "list"])
def test_a_tuple_record_is_a_typed_error_naming_the_record(make, record):
    """``(image, label)`` records (common in grain pipelines) were NumPy's bare ValueError
    'setting an array element with a sequence ... inhomogeneous shape', with no note."""
    with pytest.raises(augjax.InputError, match=r"a record is a dict \(e\.g\. \{'image': \.\.\., "
                                                r"'label': \.\.\.\}\) or one \(H, W, C\) "
                                                r"array, got a (tuple|list) of 2 items") as err:
        ag.RandomMap(make()).random_map(record, np.random.default_rng(0))
    assert err.value.argument == "image"
    assert f"the record (a {type(record).__name__} of 2 items; keys from seeds [[" in _notes(err)


def test_with_index_refuses_a_tuple_record_instead_of_wrapping_it_as_the_image():
    with pytest.raises(augjax.InputError, match=r"WithIndex: a record is a dict .* got a tuple "
                                                r"of 2 items; make it a dict first") as err:
        ag.WithIndex().map_with_index(7, (IMAGE, 1))
    assert "the record of index 7" in _notes(err)
    out = ag.WithIndex().map_with_index(7, IMAGE)  # a bare image is still the image
    assert out["index"] == 7 and out["image"] is IMAGE


@pytest.mark.parametrize("kind", ["list", "object"])
def test_batch_augment_refuses_images_of_several_sizes_with_a_typed_error(kind):
    """A ragged list (or object array) of images was a bare ValueError from NumPy (or JAX's
    TypeError 'Error interpreting argument to stage as a JAX value')."""
    images = [IMAGE, IMAGE[:20]]
    if kind == "object":
        held = np.empty(2, object)
        held[0], held[1] = images
        images = held
    with pytest.raises(augjax.InputError, match=r"field 'image' expects one \(N, H, W, C\) "
                                                r"array \(records of one size\), got .*crop the "
                                                r"records to one size in augjax\.grain\.RandomMap "
                                                r"first") as err:
        ag.BatchAugment(augjax.ops.flip)({"image": images, "index": np.array([3, 4])})
    assert err.value.argument == "image"
    assert "the batch of records [3, 4]" in _notes(err)


def test_batch_augment_stacks_a_list_of_records_of_one_size():
    """Found by a user trial (grain): a list of images of one size reached the chain as a list
    (images of different sizes to augjax) and its error said "different sizes"."""
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, IMAGE.shape, dtype=np.uint8) for _ in range(3)]
    augment = ag.BatchAugment(augjax.compose(augjax.rand_augment(n=2, m=9)), seed=0)
    index = np.array([5, 6, 7])
    listed = augment({"image": images, "index": index})
    stacked = augment({"image": np.stack(images), "index": index})
    np.testing.assert_array_equal(np.asarray(listed["image"]), np.asarray(stacked["image"]))


BAD_IMAGES = {
    "gray": (np.zeros((40, 48), np.uint8), r"got shape \(40, 48\); a gray \(H, W\) image: "
                                           r".*np\.repeat\(image\[\.\.\., None\], 3",
             "an array of shape (40, 48)"),
    "bytes": (b"\xff\xd8\xff\xe0", r"got shape \(\); decode the image first",
              "its 'image': bytes of length 4;"),
    "buffer": (np.frombuffer(b"\xff\xd8\xff\xe0" * 50, np.uint8),
               r"got shape \(200,\); decode the image first", "an array of shape (200,), uint8"),
    "uint16": (np.zeros((40, 48, 3), np.uint16), r"got uint16 \(a 16-bit PNG\?\).*"
                                                 r"\(x >> 8\)\.astype\(np\.uint8\).*"
                                                 r"x\.astype\(np\.float32\) / 65535",
               "an array of shape (40, 48, 3), uint16"),
}


@pytest.mark.parametrize("make", [_crop_chain, _views], ids=["chain", "views"])
@pytest.mark.parametrize("bad", sorted(BAD_IMAGES))
def test_records_that_are_not_images_get_the_same_hints_on_both_paths(make, bad):
    """The views path said only 'got shape (40, 48)' / 'got shape ()'; an encoded buffer and a
    16-bit image had no hint on either, and the note said "its 'image' of shape None" of
    bytes."""
    image, message, note = BAD_IMAGES[bad]
    with pytest.raises(augjax.InputError, match=message) as err:
        ag.RandomMap(make()).random_map({"image": image, "index": 9}, np.random.default_rng(0))
    assert err.value.argument == "image"
    assert "of index 9" in _notes(err) and note in _notes(err)


def _standin():
    """A type named and placed as grain's (its module under ``grain``), without grain's
    shared memory: the check goes by the name, not by importing grain."""
    return type("SharedMemoryArray", (np.ndarray,),
                {"__module__": "grain._src.python.shared_memory_array"})


@pytest.mark.parametrize("real", [True, False], ids=["grain", "standin"])
def test_batch_augment_returns_shared_memory_fields_as_numpy_copies(real):
    """The fields BatchAugment passed through (``index``; ``label`` when the chain does not
    mix labels) stayed grain SharedMemoryArrays: a batch kept after the iterator was closed
    leaked their shared memory (the resource tracker's warning at exit)."""
    shared = getattr(getattr(grain, "multiprocessing", None), "SharedMemoryArray", None)
    if real and shared is None:
        pytest.skip("this grain has no grain.multiprocessing.SharedMemoryArray")
    held = []

    def field(values):
        values = np.asarray(values)
        if real:
            out = shared(values.shape, values.dtype)
            out.unlink_on_del()  # as grain's receiving side does
            out[...] = values
        else:
            out = values.view(_standin())
        held.append(out)
        return out

    batch = {"image": field(np.stack([IMAGE, IMAGE[::-1]])), "index": field([3, 4]),
             "label": field([1, 0]), "meta": {"id": field([10, 11]), "name": ["a", "b"]}}
    out = ag.BatchAugment(augjax.ops.flip.bind(p=0.5), epoch_size=8)(batch)
    assert isinstance(out["image"], jax.Array)
    for name, got, want in (("index", out["index"], [3, 4]), ("label", out["label"], [1, 0]),
                            ("meta.id", out["meta"]["id"], [10, 11])):
        assert type(got) is np.ndarray, name
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert not any(np.may_share_memory(got, h) for h in held), name
    assert out["meta"]["name"] == ["a", "b"]
    del batch, held
    gc.collect()  # grain's arrays close (and unlink) their memory; the copies stay readable
    np.testing.assert_array_equal(out["index"], [3, 4])
    plain = {"image": np.stack([IMAGE, IMAGE]), "index": np.arange(2), "label": [5, 6]}
    kept = ag.BatchAugment(augjax.ops.flip)(plain)
    assert kept["index"] is plain["index"] and kept["label"] is plain["label"]  # not copied


def test_views_batches_return_shared_memory_fields_as_numpy_copies():
    batch = {"image": np.stack([IMAGE, IMAGE]), "index": np.arange(2).view(_standin()),
             "label": np.array([1, 2]).view(_standin())}
    out = ag.BatchAugment(augjax.recipes.simclr(size=8))(batch)
    assert sorted(out) == ["index", "label", "views"]
    assert type(out["index"]) is np.ndarray and type(out["label"]) is np.ndarray
    np.testing.assert_array_equal(out["label"], [1, 2])


def test_batch_augment_takes_the_channels_first_batches_its_error_points_to():
    """A (B, C, H, W) batch is refused with "pass layout='CHW'", and BatchAugment takes that
    layout (it refused it, naming clip layouts only): the same values as the batch in HWC."""
    chain = augjax.compose(augjax.ops.mixup.bind(alpha=0.2, num_classes=8), augjax.ops.normalize)
    x = np.random.default_rng(1).integers(0, 256, (4, 3, 16, 16), dtype=np.uint8)
    batch = {"image": x, "index": np.arange(4), "label": np.arange(4)}
    with pytest.raises(augjax.InputError, match=r"pass layout='CHW'"):
        ag.BatchAugment(chain, seed=3)(batch)
    out = ag.BatchAugment(chain, seed=3, layout="CHW")(batch)
    want = ag.BatchAugment(chain, seed=3)({**batch, "image": np.moveaxis(x, 1, -1)})
    assert out["image"].shape == x.shape
    np.testing.assert_array_equal(np.moveaxis(np.asarray(out["image"]), 1, -1),
                                  np.asarray(want["image"]))
    np.testing.assert_array_equal(np.asarray(out["label"]), np.asarray(want["label"]))


def test_a_missing_label_field_names_the_op_that_mixes():
    chain = augjax.compose(augjax.ops.flip, augjax.ops.mixup.bind(alpha=0.2, num_classes=8))
    with pytest.raises(augjax.InputError, match=r"the chain mixes labels \(mixup\) and expects "
                                                r"a field 'label'"):
        ag.BatchAugment(chain)({"image": np.zeros((4, 8, 8, 3), np.uint8),
                                "index": np.arange(4)})


@pytest.mark.parametrize("values, hint", [
    ((0, 200), r"its values are 0\.\.200, 8-bit levels: image\.astype\(np\.uint8\)"),
    ((0, 4000), r"its values reach 4000: 16-bit levels as float32, \(image / 65535\)"),
    ((-7, 300), r"its values are -7\.\.300: float32 in \[0, 1\] by the data's own range"),
])
@pytest.mark.parametrize("path", ["record", "batch"])
def test_integer_images_get_a_hint_by_their_values(values, hint, path):
    """An int64 image of 0..255 levels was told to divide by 2**63 - 1 (an almost black image);
    the hint now reads the (host) values: uint8 for 8-bit levels, /65535 for 16-bit ones, the
    data's own range otherwise; on a record (a list of one image) and on a NumPy batch."""
    image = np.random.default_rng(2).integers(*values, (12, 12, 3)).astype(np.int64)
    image.flat[:2] = values
    with pytest.raises(augjax.InputError, match=r"expects dtype uint8 or float32.*got int64 "
                                                r"\(" + hint):
        if path == "record":
            ag.RandomMap(_crop_chain()).random_map({"image": image}, np.random.default_rng(0))
        else:
            augjax.ops.flip(image[None], key=jax.random.key(0))
