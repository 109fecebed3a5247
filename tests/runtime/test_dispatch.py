"""Dispatch: the same ops on arrays and in DALI pipelines give the same results; errors are clear."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import images, run_dali, seeds

import augjax
from augjax.errors import (
    InputError,
    InputTypeError,
    KeyRequiredError,
    OpNotFoundError,
    ParamError,
)

JITTER = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_dali_path_equals_array_path(dtype, layout):
    x = images(6, 12, 14, dtype=dtype, seed=1)
    if layout == "CHW":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    labels = np.arange(6, dtype=np.int32).reshape(6, 1)
    s = seeds(6, seed=2)

    def build(imgs, lab, sd):
        a = augjax.ops.flip(imgs, p=0.5, vertical=True, seeds=sd, layout=layout)
        b = augjax.ops.color_jitter(imgs, **JITTER, seeds=sd, layout=layout)
        c, soft = augjax.ops.mixup(imgs, lab, alpha=0.4, num_classes=6, mode="elem",
                                   label_smoothing=0.1, seeds=sd, layout=layout)
        return a, b, c, soft

    (a, b, c, soft), = run_dali(build, x, labels, s, layouts=[layout, None, None])
    keys = augjax.keys_from_seeds(s)
    np.testing.assert_array_equal(
        a, augjax.ops.flip(x, key=keys, p=0.5, vertical=True, layout=layout))
    np.testing.assert_array_equal(b, augjax.ops.color_jitter(x, key=keys, **JITTER, layout=layout))
    c2, soft2 = augjax.ops.mixup(x, labels, key=keys, alpha=0.4, num_classes=6, mode="elem",
                                 label_smoothing=0.1, layout=layout)
    np.testing.assert_array_equal(c, c2)
    np.testing.assert_array_equal(soft, soft2)
    assert a.dtype == x.dtype and b.dtype == x.dtype and c.dtype == x.dtype
    assert soft.dtype == np.float32 and soft.shape == (6, 6)


@pytest.mark.slow
def test_dali_output_layouts_are_set():
    from nvidia.dali import fn, pipeline_def

    x = images(2, 8, 8)
    xc = np.ascontiguousarray(x.transpose(0, 3, 1, 2))

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe():
        a = fn.external_source(source=lambda: x, batch=True, layout="HWC")
        b = fn.external_source(source=lambda: xc, batch=True, layout="CHW")
        lab = fn.external_source(source=lambda: np.zeros((2, 1), np.int32), batch=True)
        m, soft = augjax.ops.mixup(a, lab, num_classes=3)
        return augjax.ops.flip(a), augjax.ops.flip(b, layout="CHW"), m, soft

    p = pipe()
    p.build()
    outs = p.run()
    assert [o.layout() for o in outs] == ["HWC", "CHW", "HWC", ""]


def test_numpy_inputs_are_accepted_and_not_mutated():
    x = images(3)
    before = x.copy()
    out = augjax.ops.flip(x, key=jax.random.key(0), p=1.0)
    np.testing.assert_array_equal(np.asarray(out), before[:, :, ::-1])
    np.testing.assert_array_equal(x, before)


@pytest.mark.slow
def test_key_forms_are_equivalent():
    x = images(4)
    k = jax.random.key(3)
    per_sample = jax.random.split(k, 4)
    a = augjax.ops.color_jitter(x, key=k, **JITTER)
    b = augjax.ops.color_jitter(x, key=per_sample, **JITTER)
    c = augjax.ops.color_jitter(x, key=jax.random.key_data(per_sample), **JITTER)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


@pytest.mark.slow
def test_empty_batch_and_batch_of_one():
    for n in (0, 1):
        x = images(n, 5, 6)
        out = augjax.ops.color_jitter(x, key=jax.random.key(0), **JITTER)
        assert out.shape == x.shape and out.dtype == x.dtype
        img, soft = augjax.ops.mixup(x, np.zeros(n, np.int32), key=jax.random.key(0),
                                     num_classes=3)
        assert img.shape == x.shape and soft.shape == (n, 3)


# -- errors ------------------------------------------------------------------------------------
def _key():
    return jax.random.key(0)


@pytest.mark.parametrize(
    "call, exc, fragments",
    [
        (lambda: augjax.ops.flip(images()[0], key=_key()), InputError,
         ["flip", "'images'", "rank 4", "rank 3"]),
        (lambda: augjax.ops.flip(images().astype(np.int16), key=_key()), InputError,
         ["flip", "'images'", "uint8 or float32", "int16"]),
        (lambda: augjax.ops.color_jitter(images(2, 8, 8, 4), key=_key(), hue=0.1), InputError,
         ["color_jitter", "'images'", "3 channels", "4 channels"]),
        (lambda: augjax.ops.color_jitter(
            np.ascontiguousarray(images(2, 8, 8).transpose(0, 3, 1, 2)), key=_key(), hue=0.1),
         InputError, ["color_jitter", "layout='CHW'"]),
        (lambda: augjax.ops.flip(images(), key=_key(), layout="NHWC"), InputError,
         ["flip", "'layout'", "'HWC' or 'CHW'", "NHWC"]),
        (lambda: augjax.ops.flip(images()), KeyRequiredError, ["flip", "key=jax.random.key"]),
        (lambda: augjax.ops.flip(images(), key=jax.random.split(_key(), 3)), InputError,
         ["flip", "'key'", "4 keys", "(3,)"]),
        (lambda: augjax.ops.flip(images(), key=_key(), p=1.5), ParamError,
         ["flip", "'p'", "[0, 1]", "1.5"]),
        (lambda: augjax.ops.color_jitter(images(), key=_key(), hue=0.7), ParamError,
         ["color_jitter", "'hue'", "0.7"]),
        (lambda: augjax.ops.mixup(images(), np.zeros(4, np.int32), key=_key()), ParamError,
         ["mixup", "'num_classes'", "required"]),
        (lambda: augjax.ops.mixup(images(), np.zeros(3, np.int32), key=_key(), num_classes=2),
         InputError, ["mixup", "'labels'", "(3,)"]),
        (lambda: augjax.ops.mixup(images(), key=_key(), num_classes=2), InputError,
         ["mixup", "2 positional input(s)", "got 1"]),
        (lambda: augjax.ops.flip([[1, 2]], key=_key()), InputTypeError,
         ["flip", "'images'", "jax.Array", "list"]),
        (lambda: augjax.ops.flip(images(), key=_key(), seed=3), InputError,
         ["flip", "'seed'", "DALI"]),
        (lambda: augjax.ops.no_such_op, OpNotFoundError, ["no_such_op"]),
        (lambda: augjax.get_op("colr_jitter"), OpNotFoundError, ["did you mean 'color_jitter'"]),
    ],
)
def test_errors_name_op_argument_expected_and_got(call, exc, fragments):
    with pytest.raises(exc) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))




@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_64_bit_integer_images_are_named_as_given(dtype):
    """int64 images (NumPy's default integer) are refused as int64: the message named int32,
    the dtype JAX converts them to, which the caller never gave."""
    # (then the hint by the values: these hold 8-bit levels)
    with pytest.raises(InputError, match=f"'images' expects dtype uint8 or float32 .*got "
                                         f"{np.dtype(dtype).name} \\(its values are 0\\.\\.\\d+, "
                                         f"8-bit levels: image\\.astype\\(np\\.uint8\\)\\)$"
                       ) as info:
        augjax.ops.flip(images().astype(dtype), key=_key())
    assert info.value.argument == "images"

def test_a_torch_tensor_is_refused_with_the_way_to_convert_it():
    """A PyTorch user's tensor gets the conversion that works (DLPack, or .numpy()), which
    gives the same pixels as the NumPy batch."""
    torch = pytest.importorskip("torch")
    x = images()
    with pytest.raises(InputTypeError, match=r"got torch\.Tensor; convert a torch tensor with "
                                             r"t\.numpy\(\) \(CPU\) or "
                                             r"jax\.dlpack\.from_dlpack\(t\)") as info:
        augjax.ops.flip(torch.from_numpy(x), key=_key(), p=1.0)
    assert info.value.argument == "images"
    converted = augjax.ops.flip(jax.dlpack.from_dlpack(torch.from_numpy(x)), key=_key(), p=1.0)
    np.testing.assert_array_equal(converted, x[:, :, ::-1])


@pytest.mark.program_store  # the stored program refused it (the store is off in this room)
def test_a_permuted_torch_tensor_through_dlpack_runs_the_compiled_program():
    """jax.dlpack.from_dlpack(t.permute(0, 2, 3, 1)) of an NCHW tensor keeps torch's strides
    (major_to_minor (0, 3, 1, 2)); a program compiled for a row-major batch refused it with
    XLA's layout error. It is copied to row-major: the same pixels as the NumPy batch."""
    torch = pytest.importorskip("torch")
    x = images(4, 24, 20)
    nchw = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()
    strided = jax.dlpack.from_dlpack(nchw.permute(0, 2, 3, 1))
    assert tuple(strided.format.layout.major_to_minor) != (0, 1, 2, 3)
    chain = augjax.compose(augjax.ops.random_resized_crop.bind(size=16), augjax.ops.flip)
    keys = jax.random.split(_key(), 4)
    want = np.asarray(chain(x, key=keys))  # compiled for the row-major batch first
    np.testing.assert_array_equal(np.asarray(chain(strided, key=keys)), want)
    np.testing.assert_array_equal(np.asarray(augjax.ops.flip(strided, key=keys, p=1.0)),
                                  x[:, :, ::-1])


@pytest.mark.parametrize("make, argument, hint", [
    (lambda t, tv: tv.Image(t.zeros(2, 3, 8, 8, dtype=t.uint8)), "images",
     r"channels-first \(N, C, H, W\) with layout='CHW'"),
    (lambda t, tv: tv.Video(t.zeros(2, 4, 3, 8, 8, dtype=t.uint8)), "images",
     r"augjax\.Clips\(array, layout='FCHW'\)$"),
    # one clip (T, C, H, W), torchvision's usual Video (found by a user trial: PyTorch)
    (lambda t, tv: tv.Video(t.zeros(4, 3, 8, 8, dtype=t.uint8)), "images",
     r"augjax\.Clips\(array, layout='FCHW'\); this one is one clip \(T, C, H, W\): add the "
     r"batch axis, array\[None\]"),
    (lambda t, tv: t.zeros(2, 1, 4), "boxes", r"t\.numpy\(\)"),
    (lambda t, tv: t.zeros(2, 8, 8, dtype=t.int32), "masks", r"t\.numpy\(\)"),
    (lambda t, tv: t.zeros(2, dtype=t.int64), "labels", r"t\.numpy\(\) \(CPU\) or jax\.dlpack"
                                                       r"\.from_dlpack\(t\) \(CPU or CUDA, no "
                                                       r"copy\)$"),
], ids=["tv_tensors.Image", "tv_tensors.Video", "one-Video", "boxes", "masks", "labels"])
def test_torch_tensors_get_the_conversion_for_their_argument(make, argument, hint):
    torch = pytest.importorskip("torch")
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    value = make(torch, tv_tensors)
    x = images(2, 8, 8)
    with pytest.raises(InputError, match=hint) as info:
        if argument == "images":
            augjax.ops.flip(value, key=_key())
        elif argument == "labels":
            augjax.ops.mixup.bind(num_classes=3)(x, value, key=_key())
        else:
            augjax.ops.flip(x, key=_key(), **{argument: value})
    assert info.value.argument == argument


def test_a_pil_image_is_told_its_batch_of_one_by_ops_and_views():
    """Found by a user trial (DINO): ``dino(pil_image)`` named the type and no conversion, where
    a list of PIL images is told ``np.asarray(image.convert('RGB'))``."""
    pil = pytest.importorskip("PIL.Image")
    image = pil.new("RGB", (20, 16))
    hint = r"a PIL image: np\.asarray\(image\.convert\('RGB'\)\)\[None\] is a batch of one"
    with pytest.raises(InputTypeError, match=hint):
        augjax.ops.flip(image, key=_key())
    views = augjax.views({"a": (1, augjax.compose(augjax.ops.flip))})
    with pytest.raises(InputError, match=hint):
        views(image, key=_key())
    out = views(np.asarray(image.convert("RGB"))[None], key=_key())  # the batch it names runs
    assert out["a"].shape == (1, 1, 16, 20, 3)


def test_target_types_refuse_torch_tensors_and_name_a_boxes_format():
    """augjax.Boxes(t) of a torchvision BoundingBoxes kept torch's values and dropped their
    format (the fix t.numpy() then read XYWH as xyxy): refused when made, with the format."""
    torch = pytest.importorskip("torch")
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    bb = tv_tensors.BoundingBoxes([[10, 20, 30, 15]], format="XYWH", canvas_size=(64, 64))
    with pytest.raises(InputError, match=r"augjax\.Boxes\(t\.numpy\(\), format='xywh'\)"):
        augjax.Boxes(bb)
    with pytest.raises(InputError, match=r"augjax\.Masks: .*t\.numpy\(\)"):
        augjax.Masks(torch.zeros(2, 8, 8, dtype=torch.int32))
    with pytest.raises(InputError, match=r"key=jax\.random\.key\(7\) makes one"):
        augjax.ops.flip(images(), key=7)


def test_a_list_of_what_is_not_an_array_is_told_how_to_make_one():
    pil = pytest.importorskip("PIL.Image")
    rrc = augjax.ops.random_resized_crop.bind(size=8)
    with pytest.raises(InputTypeError, match=r"got Image items; a PIL image: np\.asarray\("):
        rrc([pil.new("RGB", (20, 30))], key=_key())
    with pytest.raises(InputTypeError, match="got Clips items; clips and volumes come as one"):
        rrc([augjax.Clips(np.zeros((1, 2, 8, 8, 3), np.uint8))], key=_key())
    chw = [np.zeros((3, 20, 30), np.uint8), np.zeros((3, 24, 30), np.uint8)]
    with pytest.raises(InputError, match=r"np\.moveaxis\(image, 0, -1\)\) and drop layout="):
        rrc(chw, key=_key(), layout="CHW")


def test_a_missing_key_names_the_chains_random_op():
    chain = augjax.compose(augjax.ops.to_float, augjax.ops.flip.bind(p=1.0))
    with pytest.raises(augjax.KeyRequiredError, match=r"^compose \(its flip is random\): a "
                                                      r"random op on arrays needs key="):
        chain(images())
    with pytest.raises(augjax.KeyRequiredError, match=r"^flip: a random op"):
        augjax.ops.flip(images())
    assert augjax.compose(augjax.ops.to_float)(images()).dtype == np.float32  # no key needed


def test_one_clip_or_volume_without_a_batch_axis_is_told_to_add_one():
    with pytest.raises(InputError, match=r"a single clip\? add a batch axis: x\[None\]"):
        augjax.Clips(np.zeros((4, 3, 8, 8), np.uint8), layout="FCHW")
    with pytest.raises(InputError, match=r"a single volume\? add a batch axis: x\[None\]"):
        augjax.Volumes(np.zeros((4, 8, 8, 1), np.float32))

def test_unknown_op_is_an_attribute_error_for_hasattr():
    assert not hasattr(augjax.ops, "no_such_op")
    assert hasattr(augjax.ops, "flip")
    assert {"flip", "color_jitter", "mixup"} <= set(dir(augjax.ops))


def test_dali_errors_surface_with_the_op_name():
    x16 = images(2).astype(np.int16)
    with pytest.raises(RuntimeError, match="flip: argument 'images' expects dtype"):
        run_dali(lambda n: augjax.ops.flip(n), x16)


def test_dali_non_uniform_batch_is_a_clear_error():
    from nvidia.dali import fn, pipeline_def

    rng = np.random.default_rng(0)
    samples = [rng.integers(0, 256, (8 + i, 10, 3), dtype=np.uint8) for i in range(3)]

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: samples, batch=True, layout="HWC")
        return augjax.ops.flip(x)

    p = pipe()
    p.build()
    with pytest.raises(RuntimeError) as info:
        p.run()
    msg = str(info.value)
    assert "augjax.ops.flip(x)" in msg  # DALI names the op call that got the batch
    assert "uniform shape" in msg


def test_dali_rejects_key_and_mixed_inputs():
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def with_key():
        x = fn.external_source(source=lambda: images(2), batch=True, layout="HWC")
        return augjax.ops.flip(x, key=jax.random.key(0))

    with pytest.raises(InputError, match="'key' is for arrays"):
        with_key()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def mixed():
        x = fn.external_source(source=lambda: images(2), batch=True, layout="HWC")
        return augjax.ops.mixup(x, jnp.zeros(2, jnp.int32), num_classes=2)

    with pytest.raises(InputError, match="mix DALI DataNodes and arrays"):
        mixed()


@pytest.mark.slow
def test_one_key_gives_the_pixels_of_its_split_keys_whole_and_padded():
    """The sampler's program splits a single key itself: the same pixels as the keys split
    beforehand, for a batch the program ran with and for a smaller one padded to it."""
    policy = augjax.compose(augjax.policies.rand_augment(n=2, m=9))
    x = images()
    n = x.shape[0]
    key = jax.random.key(5)
    whole = np.asarray(policy(x, key=key))
    np.testing.assert_array_equal(whole, np.asarray(policy(x, key=jax.random.split(key, n))))
    part = np.asarray(policy(x[: n - 1], key=key))  # padded to n inside
    np.testing.assert_array_equal(
        part, np.asarray(policy(x[: n - 1], key=jax.random.split(key, n - 1))))


def test_an_error_raised_while_a_program_traces_carries_no_jax_note():
    """Found by a user trial (grain): a channels-first batch's InputError (raised where the
    program traces) carried JAX's "For simplicity, JAX has removed its internal frames" note,
    which is about JAX's traceback, not the user's input."""
    chain = augjax.compose(augjax.ops.flip, augjax.ops.color_jitter.bind(brightness=0.3))
    with pytest.raises(InputError, match="pass layout='CHW'") as info:
        chain(np.zeros((2, 3, 32, 32), np.uint8), key=_key())
    notes = getattr(info.value, "__notes__", [])
    assert not any("JAX has removed" in n for n in notes), notes
