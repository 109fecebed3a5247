"""Views (augjax.views, augjax.recipes): keys per view and per image, replay from params, the
recipes' parameters, and errors."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import ops
from helpers import compiles


def _chain(size):
    return augjax.compose(ops.random_resized_crop.bind(size=(size, size), scale=(0.2, 1.0)),
                          ops.flip.bind(p=0.5), ops.brightness.bind(factor=(0.5, 1.5)))


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (3, 40, 36, 3), dtype=np.uint8)
    x[2] = x[0]  # two identical images: their views must still differ
    return jnp.asarray(x)


@pytest.fixture(scope="module")
def two_groups():
    big, small = _chain(24), _chain(12)
    other = augjax.compose(ops.random_resized_crop.bind(size=(24, 24), scale=(0.5, 1.0)),
                           ops.solarize.bind(threshold=(64.0, 192.0)))
    return augjax.views({"global": [big, other], "local": (4, small)})


@pytest.mark.slow
def test_shapes_and_dtype(two_groups, images):
    out = two_groups(images, key=jax.random.key(0))
    assert list(out) == ["global", "local"]
    assert out["global"].shape == (3, 2, 24, 24, 3) and out["global"].dtype == jnp.uint8
    assert out["local"].shape == (3, 4, 12, 12, 3)


@pytest.mark.slow
def test_each_view_is_its_step_alone_with_the_documented_key(two_groups, images):
    """View v of group g of image i is the step on image i with fold_in(fold_in(k_i, g), v),
    k_i = split(key, N)[i]: the reference is the step's own call."""
    key = jax.random.key(3)
    out = two_groups(images, key=key)
    per_image = jax.random.split(key, images.shape[0])
    for g, (name, steps) in enumerate(two_groups.groups):
        for v, step in enumerate(steps):
            keys = jax.vmap(lambda k: jax.random.fold_in(jax.random.fold_in(k, g), v))(per_image)
            np.testing.assert_array_equal(np.asarray(step(images, key=keys)),
                                          np.asarray(out[name][:, v]))
    keys = two_groups.view_keys(key, images.shape[0])
    assert keys["local"].shape == (3, 4)


def test_no_two_views_equal(two_groups, images):
    out = two_groups(images, key=jax.random.key(1))
    local = np.asarray(out["local"]).reshape(12, -1)
    for a, b in itertools.combinations(range(12), 2):  # across views and images (0 == 2)
        assert not np.array_equal(local[a], local[b]), (a, b)
    params = two_groups.sample(images, key=jax.random.key(1))
    boxes = np.stack([np.asarray(p[0]["box"]) for p in params["local"]], 1).reshape(12, 4)
    assert len({tuple(b) for b in boxes}) == 12


@pytest.mark.slow
def test_replay_from_params_bitwise(two_groups, images):
    key = jax.random.key(5)
    params = two_groups.sample(images, key=key)
    assert len(params["global"]) == 2 and len(params["local"]) == 4
    again = two_groups.apply(images, params=params)
    out = two_groups(images, key=key)
    for name in out:
        np.testing.assert_array_equal(np.asarray(again[name]), np.asarray(out[name]))
    # Edited params change exactly the edited view.
    edited = {k: list(v) for k, v in params.items()}
    box = np.asarray(edited["local"][1][0]["box"]).copy()
    box[:] = (0, 0, 40, 36)  # the whole image
    edited["local"][1] = (dict(box=jnp.asarray(box)),) + tuple(edited["local"][1][1:])
    changed = two_groups.apply(images, params=edited)
    np.testing.assert_array_equal(np.asarray(changed["local"][:, 0]),
                                  np.asarray(out["local"][:, 0]))
    whole = _chain(12).apply(images, params=edited["local"][1])
    np.testing.assert_array_equal(np.asarray(changed["local"][:, 1]), np.asarray(whole))


def test_same_key_same_views_and_per_image_keys(two_groups, images):
    a = two_groups(images, key=jax.random.key(7))
    keys = jax.random.split(jax.random.key(7), 3)
    b = two_groups(np.asarray(images), key=keys)
    for name in a:
        np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]))


@pytest.mark.slow
def test_inside_jit_equals_call(two_groups, images):
    key = jax.random.key(2)
    inside = jax.jit(lambda x, k: two_groups(x, key=k))(images, key)
    out = two_groups(images, key=key)
    for name in out:  # the same draws; floats may round differently in a caller's program
        d = np.abs(np.asarray(inside[name], np.int32) - np.asarray(out[name], np.int32))
        assert d.max() <= 1


@pytest.mark.slow
def test_dino_recipe_probabilities():
    """The recipe's draws, sampled for 4000 images: blur p = 1.0 / 0.1 / 0.5 (global 1 /
    global 2 / local), solarize p = 0.2 on global 2 only, jitter p = 0.8, gray p = 0.2, and
    the crops' areas within the paper's scales."""
    dino = augjax.recipes.dino(global_size=16, local_size=8, local_count=2, normalize=False)
    n = 4000
    params = dino.sample((n, 64, 64, 3), key=jax.random.key(0))
    assert len(params["global"]) == 2 and len(params["local"]) == 2

    def applied(view_params, op_name, chain):
        for step, p in zip(chain.steps, view_params):
            inner = getattr(step, "op", None)
            if getattr(step, "name", "") == op_name:
                return np.ones(n, bool)
            if inner is not None and getattr(inner, "name", "") == op_name:
                return np.asarray(p["applied"])
        return np.zeros(n, bool)

    g1, g2 = dino.groups[0][1]
    local = dino.groups[1][1][0]
    rate = lambda v, op, ch: applied(v, op, ch).mean()  # noqa: E731
    assert rate(params["global"][0], "gaussian_blur", g1) == 1.0
    assert abs(rate(params["global"][1], "gaussian_blur", g2) - 0.1) < 0.02
    assert abs(rate(params["local"][0], "gaussian_blur", local) - 0.5) < 0.03
    assert rate(params["global"][0], "solarize", g1) == 0.0
    assert abs(rate(params["global"][1], "solarize", g2) - 0.2) < 0.03
    assert rate(params["local"][1], "solarize", local) == 0.0
    for view, chain in ((params["global"][0], g1), (params["local"][0], local)):
        assert abs(rate(view, "color_jitter", chain) - 0.8) < 0.03
        assert abs(np.asarray(view[3]["applied"]).mean() - 0.2) < 0.03  # random_grayscale
    area = lambda v: np.prod(np.asarray(v[0]["box"])[:, 2:], 1) / 64 ** 2  # noqa: E731
    a_glob, a_loc = area(params["global"][0]), area(params["local"][0])
    assert a_glob.min() >= 0.4 - 0.05 and a_glob.max() <= 1.0
    assert a_loc.min() >= 0.05 - 0.02 and a_loc.max() <= 0.4 + 0.05


@pytest.mark.parametrize("make, name, got", [
    (lambda: augjax.recipes.dino(global_size=224.0), "global_size", "224.0"),
    (lambda: augjax.recipes.dino(global_size=(224, 160)), "global_size", r"\(224, 160\)"),
    (lambda: augjax.recipes.dino(global_scale=0.4), "global_scale", "0.4"),
    (lambda: augjax.recipes.dino(local_scale=(0.5, 0.1)), "local_scale", r"\(0.5, 0.1\)"),
    (lambda: augjax.recipes.simclr(size="224"), "size", "'224'"),
    (lambda: augjax.recipes.byol(size=0), "size", "0"),
    (lambda: augjax.recipes.dino(interpolation="cubic"), "interpolation", "'cubic'"),
    (lambda: augjax.recipes.dino(normalize="yes"), "normalize", "'yes'"),
], ids=["float-size", "pair-size", "one-scale", "reversed-scale", "str-size", "zero-size",
        "interpolation", "normalize"])
def test_recipe_arguments_are_checked_in_the_recipes_name(make, name, got):
    """A wrong recipe argument names the recipe and the argument (it named gaussian_blur's
    kernel_size, or raised TypeError)."""
    with pytest.raises(augjax.ParamError, match=rf"argument '{name}' expects .*got {got}") as info:
        make()
    assert info.value.param == name and info.value.op in ("dino", "simclr", "byol")
    assert augjax.recipes.dino(global_size=np.int64(32), local_size=16).names == ("global",
                                                                                 "local")


def test_view_chain_builds_a_recipes_view_and_takes_a_blur_kernel():
    """recipes.view_chain is public: DINO's local view, as the recipe builds it, and with a
    wider blur (9 taps at 96 cut a sigma of 2)."""
    local = dict(size=96, scale=(0.05, 0.4), jitter=(0.4, 0.4, 0.2, 0.1), jitter_p=0.8,
                 gray_p=0.2, blur_p=0.5, solarize_p=0.0, normalize=True)
    dino = augjax.recipes.dino()
    assert augjax.to_dict(augjax.recipes.view_chain(**local)) == augjax.to_dict(
        dict(dino.groups)["local"][0])

    def kernels(chain):
        text = augjax.to_json(chain)
        return [int(k) for k in __import__("re").findall(r'"kernel_size": \[?(\d+)', text)]

    assert kernels(augjax.recipes.view_chain(**local)) == [9]
    assert kernels(augjax.recipes.view_chain(**local, blur_kernel=13)) == [13]


def test_recipes_take_torchvisions_and_pils_interpolation_constants():
    """DINO's code passes Image.BICUBIC (3); torchvision's InterpolationMode.BICUBIC: both are
    "bicubic" (they were refused)."""
    from torchvision.transforms import InterpolationMode

    def config(views):
        return [augjax.to_dict(step) for _, steps in views.groups for step in steps]

    want = config(augjax.recipes.dino(interpolation="bicubic"))
    assert want != config(augjax.recipes.dino())
    assert config(augjax.recipes.dino(interpolation=3)) == want
    assert config(augjax.recipes.dino(interpolation=InterpolationMode.BICUBIC)) == want
    assert config(augjax.recipes.simclr(interpolation=2)) == config(augjax.recipes.simclr())


def test_simclr_and_byol_structure():
    s = augjax.recipes.simclr(size=16)
    b = augjax.recipes.byol(size=16)
    assert s.counts() == {"views": 2} and b.counts() == {"views": 2}
    assert s.groups[0][1][0] == s.groups[0][1][1]  # SimCLR: one distribution
    assert b.groups[0][1][0] != b.groups[0][1][1]  # BYOL: blur / solarize differ
    v1, v2 = b.groups[0][1]
    assert "solarize" not in str(v1) and "solarize" in str(v2)


def test_errors(images):
    with pytest.raises(augjax.ParamError, match="non-empty dict"):
        augjax.views({})
    with pytest.raises(augjax.ParamError, match="count >= 1"):
        augjax.views({"a": (0, _chain(8))})
    with pytest.raises(augjax.ParamError, match="expects an augjax op"):
        augjax.views({"a": (2, lambda x: x)})
    with pytest.raises(augjax.ParamError, match="mixes labels"):
        augjax.views({"a": (2, ops.mixup.bind(alpha=0.2, num_classes=3))})
    mixed = augjax.views({"a": [_chain(8), _chain(12)]})
    with pytest.raises(augjax.InputError, match="different outputs"):
        mixed(images, key=jax.random.key(0))
    with pytest.raises(augjax.KeyRequiredError):
        augjax.views({"a": (2, _chain(8))})(images)
    with pytest.raises(augjax.InputError, match=r"\(N, H, W, C\)"):
        augjax.views({"a": (2, _chain(8))})(images[0], key=jax.random.key(0))
    v = augjax.views({"a": (2, _chain(8))})
    with pytest.raises(augjax.InputError, match="groups"):
        v.apply(images, params={"b": ()})
    # a channels-first batch: the views take no layout=, so the fix named is the transpose
    chw = np.zeros((2, 3, 20, 18), np.uint8)
    with pytest.raises(augjax.InputError, match=r"^views: .*channels-first.*np\.moveaxis\(images, "
                                                r"1, -1\)\); there is no layout= here") as info:
        v(chw, key=jax.random.key(0))
    assert "pass layout=" not in str(info.value) and info.value.argument == "images"


def test_apply_and_call_share_one_program_in_any_order():
    # flip's p and color_jitter's brightness are traced values on a plain call;
    # inside the views' own jit they must stay constants: passed as device arrays they were
    # captured and hoisted into an argument that the next call of the cached program missed
    # ("Execution supplied 8 arguments but compiled program expected 9").
    chain = augjax.compose(augjax.ops.random_resized_crop.bind(size=16, scale=(0.4, 1.0)),
                           augjax.ops.flip.bind(p=0.5),
                           augjax.ops.color_jitter.bind(brightness=0.4))
    views = augjax.views({"global": (2, chain)})
    images = np.random.default_rng(3).integers(0, 256, (3, 24, 24, 3), dtype=np.uint8)
    key = jax.random.key(5)
    params = views.sample(images, key=key)
    first = views.apply(images, params=params)
    called = views(images, key=key)
    again = views.apply(images, params=params)
    for name in called:
        np.testing.assert_array_equal(np.asarray(first[name]), np.asarray(called[name]))
        np.testing.assert_array_equal(np.asarray(again[name]), np.asarray(called[name]))


def test_committed_and_uncommitted_inputs_share_the_programs():
    """DALI's jax_function hands committed arrays, jnp.asarray uncommitted ones: one program
    serves both (jax.jit keys on commitment; the views compiled twice before)."""
    chain = augjax.compose(ops.random_resized_crop.bind(size=(8, 8), scale=(0.5, 1.0)),
                           ops.brightness.bind(factor=(0.5, 1.5)))
    views = augjax.views({"a": (2, chain)})
    x = np.random.default_rng(4).integers(0, 256, (2, 12, 12, 3), dtype=np.uint8)
    keys = jax.random.split(jax.random.key(3), 2)
    device = jax.devices()[0]
    loose = views(jnp.asarray(x), key=keys)
    assert compiles(lambda: jax.block_until_ready(
        views(jax.device_put(x, device), key=jax.device_put(keys, device)))) == 0
    again = views(jax.device_put(x, device), key=jax.device_put(keys, device))
    np.testing.assert_array_equal(np.asarray(again["a"]), np.asarray(loose["a"]))


def test_recipes_need_no_pack(monkeypatch):
    """The recipes' Gaussian blur is augjax's own op: with augjax-contrib kept from loading
    (``AUGJAX_DISABLE_PLUGINS``, as if it were not installed) every recipe builds with its
    blur, and the demo's SimCLR views blur too."""
    from augjax._demo.structures import views_of

    def blurs(v):
        chains = [step for _, group in v.groups for step in group]
        return any("gaussian_blur" in op.name for chain in chains
                   for op in chain.program()[0])

    monkeypatch.setenv("AUGJAX_DISABLE_PLUGINS", "augjax-contrib")
    augjax.refresh()
    try:
        assert "motion_blur" not in augjax.list_ops()  # the pack is off
        assert augjax.op_records("gaussian_blur")[0].distribution == "augjax"
        for v in (augjax.recipes.dino(), augjax.recipes.byol(size=16),
                  augjax.recipes.simclr(size=16), views_of("simclr", 16)):
            assert blurs(v)
        assert not blurs(augjax.recipes.simclr(size=16, blur=False))
    finally:
        monkeypatch.delenv("AUGJAX_DISABLE_PLUGINS")
        augjax.refresh()


def test_count_that_is_not_an_int_is_named():
    """``(2.0, step)`` is a count of the wrong type, not a list of two steps: the error says
    the count, not "view 0 expects an augjax op ... got float"."""
    for count in (2.0, True, "2"):
        with pytest.raises(augjax.ParamError, match=r"group 'a' expects \(count, step\) with an "
                                                    r"int count >= 1, got " + type(count).__name__):
            augjax.views({"a": (count, _chain(8))})


def test_dino_without_local_crops():
    """DINO's ``--local_crops_number 0`` disables multi-crop (main_dino.py): the recipe gives
    the two global views only; a negative count names the recipe's argument."""
    dino = augjax.recipes.dino(global_size=16, local_count=0, normalize=False)
    assert dino.counts() == {"global": 2}
    with pytest.raises(augjax.ParamError, match=r"dino: argument 'local_count' expects an int "
                                                r">= 0, got -1"):
        augjax.recipes.dino(local_count=-1)


def test_recipes_resize_bicubic_on_request(images):
    """``interpolation="bicubic"`` (DINO's exact resampling) reaches every view's crop, the
    default stays bilinear, and nothing else changes: the same draws, and each view's crop on
    the recipe's own drawn box is ``random_resized_crop(interpolation="bicubic")``, within 1
    level of torchvision's ``F.resized_crop(BICUBIC)``."""
    torch = pytest.importorskip("torch")
    F = pytest.importorskip("torchvision.transforms.v2.functional")

    def crops(v):
        return [step.steps[0] for _, steps in v.groups for step in steps]

    for make in (lambda **kw: augjax.recipes.dino(global_size=16, local_size=8, local_count=2,
                                                  normalize=False, **kw),
                 lambda **kw: augjax.recipes.simclr(size=16, normalize=False, **kw),
                 lambda **kw: augjax.recipes.byol(size=16, normalize=False, **kw)):
        assert {c.kwargs["interpolation"] for c in crops(make())} == {"bilinear"}
        assert {c.kwargs["interpolation"] for c in crops(make(interpolation="bicubic"))} == {
            "bicubic"}
    dino = augjax.recipes.dino(global_size=16, local_size=8, local_count=2, normalize=False,
                               interpolation="bicubic")
    bilinear = augjax.recipes.dino(global_size=16, local_size=8, local_count=2, normalize=False)
    key = jax.random.key(4)
    params = dino.sample(images, key=key)
    assert jax.tree.all(jax.tree.map(np.array_equal, params, bilinear.sample(images, key=key)))
    out, other = dino(images, key=key), bilinear(images, key=key)
    x = np.array(images)  # writable, for torch.from_numpy
    for name, steps in dino.groups:
        assert out[name].dtype == jnp.uint8 and not np.array_equal(out[name], other[name])
        for v, chain in enumerate(steps):
            crop = chain.steps[0]
            boxes = np.asarray(params[name][v][0]["box"])
            ours = np.asarray(ops.random_resized_crop.apply(x, params={"box": boxes},
                                                            **crop.kwargs))
            np.testing.assert_array_equal(np.asarray(crop.apply(x, params={"box": boxes})),
                                          ours)
            for i, (t, l, h, w) in enumerate(boxes):
                ref = F.resized_crop(torch.from_numpy(x[i]).permute(2, 0, 1), int(t), int(l),
                                     int(h), int(w), list(crop.kwargs["size"]),
                                     interpolation=F.InterpolationMode.BICUBIC, antialias=True)
                diff = np.abs(ours[i].astype(int) - ref.permute(1, 2, 0).numpy().astype(int))
                assert diff.max() <= 1, (name, v, i)


def test_dino_bicubic_on_a_list_of_images_of_different_sizes():
    """DINO as its users call it: ``recipes.dino(interpolation="bicubic")`` on a list of
    decoded images of different sizes. Each view is its chain called on the list with the
    view's key; the chain's crop reads every image bicubic on the box the recipe drew, as
    ``random_resized_crop(interpolation="bicubic")`` on that image alone (within 1 level,
    :func:`test_recipes_resize_bicubic_on_request`'s tolerance; measured: equal) and as
    torchvision's ``F.resized_crop(BICUBIC)`` within the op's documented 2 uint8 levels (on
    noise a few values are 2 off, as on a batch)."""
    torch = pytest.importorskip("torch")
    F = pytest.importorskip("torchvision.transforms.v2.functional")
    rng = np.random.default_rng(7)
    x = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((40, 36), (57, 33),
                                                                        (29, 64))]
    dino = augjax.recipes.dino(global_size=32, local_size=16, local_count=2, normalize=False,
                               interpolation="bicubic")
    key = jax.random.key(5)
    out = dino(x, key=key)
    assert out["global"].shape == (3, 2, 32, 32, 3) and out["local"].shape == (3, 2, 16, 16, 3)
    params = dino.sample(x, key=key)
    keys = dino.view_keys(key, len(x))
    for name, steps in dino.groups:
        for v, chain in enumerate(steps):
            np.testing.assert_array_equal(np.asarray(chain(x, key=keys[name][:, v])),
                                          np.asarray(out[name][:, v]))
            crop = chain.steps[0]
            boxes = np.asarray(params[name][v][0]["box"])
            np.testing.assert_array_equal(np.asarray(crop.sample(x, key=keys[name][:, v])["box"]),
                                          boxes)
            listed = np.asarray(crop(x, key=keys[name][:, v]))
            for i, (t, l, h, w) in enumerate(boxes):
                alone = np.asarray(ops.random_resized_crop.apply(
                    x[i][None], params={"box": boxes[i:i + 1]}, **crop.kwargs))[0]
                assert np.abs(listed[i].astype(int) - alone).max() <= 1, (name, v, i)
                ref = F.resized_crop(torch.from_numpy(x[i]).permute(2, 0, 1), int(t), int(l),
                                     int(h), int(w), list(crop.kwargs["size"]),
                                     interpolation=F.InterpolationMode.BICUBIC, antialias=True)
                diff = np.abs(listed[i].astype(int) - ref.permute(1, 2, 0).numpy().astype(int))
                assert diff.max() <= 2, (name, v, i)


def test_float_images_in_0_255_are_reported_as_an_ops_call_reports_them():
    """Views on float NumPy images outside [0, 1] (0..255 data) warn with the range, a batch
    and a list of different sizes alike (one message); in [0, 1] nothing."""
    import warnings

    views = augjax.views({"v": (2, ops.random_resized_crop.bind(size=16))})
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 255, (2, 24, 24, 3)).astype(np.float32)
    # a batch: the views say it; a list: each view's step, as its first op takes the list
    for images, name in ((x, "views"), ([x[0], x[1, :20]], "random_resized_crop")):
        with pytest.warns(augjax.InputRangeWarning,
                          match=rf"{name}: argument 'images' expects float images in \[0, 1\], "
                                r"got values in \[.*, 254\.\d+\]") as got:
            views(images, key=jax.random.key(0))
        messages = {str(w.message) for w in got if issubclass(w.category,
                                                              augjax.InputRangeWarning)}
        assert len(messages) == 1, messages
    with warnings.catch_warnings():
        warnings.simplefilter("error", augjax.InputRangeWarning)
        views(x / 255.0, key=jax.random.key(0))
        views([x[0] / 255.0, x[1, :20] / 255.0], key=jax.random.key(0))
    # Three runs on a list (DINO's shape: two global chains, the local one; crops alone here,
    # the report does not depend on the ops after them): one report, not three
    three = augjax.views({"global": [ops.random_resized_crop.bind(size=16),
                                     augjax.compose(ops.random_resized_crop.bind(size=16),
                                                    ops.flip)],
                          "local": (2, ops.random_resized_crop.bind(size=8))})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        three([x[0], x[1, :20]], key=jax.random.key(0))
    assert sum(issubclass(w.category, augjax.InputRangeWarning) for w in caught) == 1


def test_a_smaller_batch_of_views_runs_padded_and_equals_its_own_program(monkeypatch):
    """A partial batch (an epoch's last) runs the views' programs of a larger size, padded, as a
    chain's does (no trace), and its samples equal those of the size's own program bitwise."""
    from augjax._runtime.execution import padding

    monkeypatch.delenv("AUGJAX_PAD_BATCHES")  # (conftest turns padding off)

    views = augjax.views({
        "g": (2, augjax.compose(ops.random_resized_crop.bind(size=16), ops.flip.bind(p=0.5),
                                ops.color_jitter.bind(brightness=0.4, hue=0.1))),
        "l": (3, ops.random_resized_crop.bind(size=8))})
    x = np.random.default_rng(0).integers(0, 256, (16, 24, 24, 3), dtype=np.uint8)
    views(x, key=jax.random.key(0))
    got, names = {}, []
    # compiled: the transfer, the keys' split into 10 and two gathers, none of the views'
    compiles(lambda: got.setdefault("padded", views(x[:10], key=jax.random.key(5))), names)
    assert set(names) <= {"stage", "_split_by_index", "_take"}, names
    padded, names = got["padded"], []
    with padding.no_padding():
        compiles(lambda: got.setdefault("own", views(x[:10], key=jax.random.key(5))), names)
    assert len(names) >= 2 and set(names) - {"stage", "_split_by_index", "_take"}, names
    own = got["own"]
    for name in ("g", "l"):
        assert padded[name].shape == own[name].shape == (10, *padded[name].shape[1:])
        np.testing.assert_array_equal(np.asarray(padded[name]), np.asarray(own[name]))
