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
