"""No silent wrong input: channels-first data given as HWC (and the reverse) is refused at
trace time from shapes; float images outside [0, 1] are reported where the values are on the
host (NumPy, DALI CPU pipelines) and, in checking mode, everywhere (docs/RELIABILITY.md)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import ops
from augjax.errors import InputError, InputRangeWarning

KEY = jax.random.key(0)


def float_batch(n=2, h=8, w=8, c=3, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((n, h, w, c)) * scale).astype(np.float32)


@pytest.mark.parametrize("name", ["flip", "rot90", "cutout", "brightness"])
def test_channels_first_given_as_hwc_is_refused(name):
    spec = augjax.get_op(name)
    x = np.ascontiguousarray(float_batch(h=16, w=16).transpose(0, 3, 1, 2))  # (2, 3, 16, 16)
    with pytest.raises(InputError, match=rf"{name}: argument 'images' has shape \(2, 3, 16, 16\)"
                                         r".*pass layout='CHW'"):
        spec(x, key=KEY) if spec.random else spec(x)
    out = spec(x, key=KEY, layout="CHW") if spec.random else spec(x, layout="CHW")
    assert out.shape == x.shape  # the fix works


def test_channels_last_given_as_chw_is_refused():
    x = float_batch(h=16, w=16)  # (2, 16, 16, 3)
    with pytest.raises(InputError, match=r"flip: .*in layout CHW that is 16 channels.*"
                                         r"pass layout='HWC'"):
        ops.flip(x, key=KEY, layout="CHW")


def test_shape_checks_leave_valid_layouts_alone():
    for shape, layout in [((2, 8, 8, 1), "HWC"), ((2, 4, 4, 3), "HWC"), ((2, 3, 3, 3), "HWC"),
                          ((2, 5, 5, 6), "HWC"), ((2, 3, 8, 8), "CHW"), ((2, 6, 5, 7), "CHW")]:
        x = np.zeros(shape, np.float32)
        assert ops.flip(x, key=KEY, layout=layout).shape == shape


def test_chw_data_in_a_dali_pipeline_without_layout_fails_on_the_first_batch():
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import fn, pipeline_def, types

    x = np.ascontiguousarray(float_batch(h=16, w=16).transpose(0, 3, 1, 2))

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        images = fn.external_source(lambda: list(x), batch=True, dtype=types.FLOAT,
                                    layout="CHW")
        return ops.flip(images, seed=1)

    p = pipe()
    p.build()
    with pytest.raises(RuntimeError, match="pass layout='CHW'"):
        p.run()


def test_dali_layout_metadata_mismatch_is_refused_at_definition():
    pytest.importorskip("nvidia.dali")
    from nvidia.dali.data_node import DataNode

    node = DataNode("images", device="cpu", layout="CHW")
    with pytest.raises(InputError, match=r"flip: .*tagged layout 'CHW' by DALI.*"
                                         r"pass layout='CHW'"):
        ops.flip(node, layout="HWC")


def test_numpy_float_images_in_0_255_warn_naming_the_op_and_the_fix():
    x = float_batch(scale=255.0)
    with pytest.warns(InputRangeWarning, match=r"color_jitter: argument 'images' expects float "
                                               r"images in \[0, 1\].*divide by 255"):
        ops.color_jitter(x, key=KEY, brightness=0.4)
    chain = augjax.compose(ops.normalize.bind(), ops.flip.bind())
    with pytest.warns(InputRangeWarning, match="normalize: "):  # a chain names its first op
        chain(x, key=KEY)


def test_in_range_and_uint8_inputs_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputRangeWarning)
        ops.color_jitter(float_batch(), key=KEY, brightness=0.4)
        ops.color_jitter((float_batch() * 255).astype(np.uint8), key=KEY, brightness=0.4)
        ops.flip(np.ones((2, 4, 4, 3), np.float32), key=KEY)  # exactly 1.0


def test_device_arrays_are_not_read_unless_checking():
    x = jnp.asarray(float_batch(scale=255.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputRangeWarning)
        ops.flip(x, key=KEY)  # no sync, no report
    with augjax.checking(), pytest.raises(InputError, match=r"flip: .*got values in \[0"):
        ops.flip(x, key=KEY)
    with augjax.checking(), pytest.raises(InputError, match="normalize: "):
        ops.normalize(np.asarray(x) - 300.0)  # NumPy too: an error in checking mode
    with augjax.checking(False):
        ops.flip(x, key=KEY)


def test_checking_mode_from_the_environment(monkeypatch):
    x = jnp.asarray(float_batch(scale=-1.0))
    monkeypatch.setenv("AUGJAX_CHECK", "1")
    with pytest.raises(InputError, match="normalize: .*data already normalized"):
        ops.normalize(x)
    monkeypatch.setenv("AUGJAX_CHECK", "0")
    ops.normalize(x)


def test_checking_mode_inside_a_user_jit_warns_from_a_callback():
    x = jnp.asarray(float_batch(scale=255.0))

    @jax.jit
    def step(x):
        with augjax.checking():
            return ops.flip(x, key=KEY)

    with pytest.warns(InputRangeWarning, match="flip: "):
        jax.block_until_ready(step(x))
        jax.effects_barrier()


@pytest.mark.filterwarnings("ignore::augjax.InputRangeWarning")  # prefetched batches
def test_dali_cpu_pipeline_float_range_warns_and_raises_in_checking_mode():
    pytest.importorskip("nvidia.dali")
    from nvidia.dali import fn, pipeline_def, types

    x = float_batch(scale=255.0)

    def build():
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe():
            images = fn.external_source(lambda: list(x), batch=True, dtype=types.FLOAT,
                                        layout="HWC")
            return ops.color_jitter(images, brightness=0.4, seed=1)

        p = pipe()
        p.build()
        return p

    p = build()
    with pytest.warns(InputRangeWarning, match="color_jitter: .*divide by 255"):
        p.run()
    with augjax.checking():
        strict = build()
    with pytest.raises(RuntimeError, match="color_jitter: argument 'images' expects float"):
        strict.run()


def test_a_colour_op_after_normalize_warns_when_the_chain_is_built():
    """An op that reads float images as values in [0, 1] after ``normalize`` would clip its
    standardised output: ``compose`` says so (naming both) when it is built; before it, or a
    geometric op, erasing or mixing after it, nothing."""
    import warnings

    from augjax.errors import AugjaxWarning

    norm = ops.normalize.bind()
    for late in (ops.color_jitter.bind(brightness=0.4), augjax.rand_augment(n=2, m=9),
                 ops.invert):
        with pytest.warns(AugjaxWarning, match=r"compose: \w+ \(ops\[2\]\) comes after "
                                               r"normalize \(ops\[1\]\).*put normalize last"):
            augjax.compose(ops.flip, norm, late)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AugjaxWarning)
        augjax.compose(ops.color_jitter.bind(brightness=0.4), norm, ops.random_erasing,
                       ops.flip, ops.mixup.bind(num_classes=3))


def test_a_chain_that_mixes_called_without_labels_names_the_op_that_takes_them():
    chain = augjax.compose(augjax.ops.flip, augjax.ops.mixup.bind(num_classes=4))
    x = np.zeros((2, 8, 8, 3), np.uint8)
    with pytest.raises(augjax.InputError, match=r"compose: expects 2 positional input\(s\) "
                                                r"\(images, labels\), got 1 \(mixup mixes the "
                                                r"samples and takes their labels: call it as "
                                                r"compose\(images, labels, key=\.\.\.\)\)"):
        chain(x, key=jax.random.key(0))
    labels = np.array([0, 3], np.int32)
    images, soft = chain(x, labels, key=jax.random.key(0))  # the call it names runs
    assert images.shape == x.shape and soft.shape == (2, 4)
