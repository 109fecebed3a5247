"""random_photometric_distort against torchvision v2 RandomPhotometricDistort.transform with
the same params (augjax's draws handed to torchvision's own transform)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from augjax.catalog.photometric import random_photometric_distort

torch = pytest.importorskip("torch")
tv2 = pytest.importorskip("torchvision.transforms.v2")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_apply_equals_torchvision_transform_with_the_same_params(dtype):
    rng = np.random.default_rng(0)
    n = 16
    x = rng.integers(0, 256, (n, 12, 10, 3), dtype=np.uint8)
    if dtype == "float32":
        x = x.astype(np.float32) / 255.0
    params = random_photometric_distort.sample(x, key=jax.random.key(1))
    out = np.asarray(random_photometric_distort.apply(x, params=params))
    called = np.asarray(random_photometric_distort(x, key=jax.random.key(1)))
    np.testing.assert_array_equal(out, called)
    t = tv2.RandomPhotometricDistort()
    seen = set()
    for i in range(n):
        on = np.asarray(params["on"][i])
        tp = {f"{k}_factor": float(params[k][i]) if on[j] else None
              for j, k in enumerate(("brightness", "contrast", "saturation", "hue"))}
        tp["contrast_before"] = bool(params["contrast_before"][i])
        tp["channel_permutation"] = (torch.from_numpy(np.asarray(params["perm"][i]).astype(
            np.int64)) if bool(params["permute"][i]) else None)
        seen |= {(j, bool(v)) for j, v in enumerate(on)} | {("before", tp["contrast_before"])}
        want = t.transform(torch.from_numpy(x[i]).permute(2, 0, 1), tp).permute(1, 2, 0).numpy()
        tol = 1 if dtype == "uint8" else 2e-5  # float32 HSV arithmetic; uint8 truncation edges
        d = np.abs(out[i].astype(np.float64) - want.astype(np.float64))
        assert d.max() <= tol, (i, d.max(), tp)
    assert len(seen) == 10  # every adjustment both on and off, contrast both before and after


@pytest.mark.fast_tier("hw1")
@pytest.mark.parametrize("hw", [(32, 48), (33, 65), (96, 128)])
def test_the_cpu_branch_form_gives_the_select_forms_bits(hw):
    """uint8 on the CPU: each image's drawn adjustments as real branches, image by image, and
    every adjustment computed then selected (the form the op had, and keeps off the CPU): the
    same bits, every adjustment on and off in both orders of contrast."""
    import jax.numpy as jnp

    from augjax.catalog.photometric import _branch_form, _exact_mean, _select_form

    rng = np.random.default_rng(hw[0])
    x = rng.integers(0, 256, (32, *hw, 3), dtype=np.uint8)
    params = random_photometric_distort.sample(x, key=jax.random.key(2))
    assert _exact_mean(x[0])
    on = np.asarray(params["on"])
    assert on.all(axis=1).any() or len({tuple(r) for r in on}) > 8
    branch = np.asarray(jax.jit(jax.vmap(_branch_form))(jnp.asarray(x), params))
    select = np.asarray(jax.jit(jax.vmap(_select_form))(jnp.asarray(x), params))
    np.testing.assert_array_equal(branch, select)
    np.testing.assert_array_equal(np.asarray(random_photometric_distort(x, key=jax.random.key(2))),
                                  select)
    assert not _exact_mean(x[0].astype(np.float32))  # float images keep the select form
