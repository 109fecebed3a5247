"""docs/PACKS.md's geometric pack works as printed and the kit checks its geometry: the pack's
files (the fenced blocks that start with ``# file: <path>``) installed as a distribution pass
the whole kit and their own test; the same op with a matrix of the wrong sign, and an RGB-only
variant whose kernel cannot take the masks' configuration, fail ``check_geometry`` with
messages naming the op, the check and the numbers; a kernel that declares ``channels=(3,)``
carries int32 masks (its channels in groups of three)."""

from __future__ import annotations

import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import augjax
from augjax import op
from augjax.testing import OpCheckError, check_op, write_distribution

PACKS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "PACKS.md"
BLOCK = re.compile(r"^```[a-z]*\n# file: (?P<path>\S+)\n(?P<body>.*?)^```$",
                   re.MULTILINE | re.DOTALL)


def pack_files() -> dict[str, str]:
    return {m["path"]: m["body"] for m in BLOCK.finditer(PACKS.read_text(encoding="utf-8"))}


def install(site, ops_source: str) -> None:
    write_distribution(site, "augjax-skew", "0.1.0", ops={"skew": "augjax_skew.ops:skew"},
                       modules={"augjax_skew/__init__.py": "", "augjax_skew/ops.py": ops_source})
    augjax.refresh()


def test_the_printed_pack_declares_its_test_dependencies():
    toml = pack_files()["pyproject.toml"]
    assert re.search(r'^test = \["pytest', toml, re.MULTILINE)
    assert 'skew = "augjax_skew.ops:skew"' in toml


@pytest.mark.slow
def test_the_printed_geometric_pack_passes_the_kit_and_its_own_test(global_registry, site):
    files = pack_files()
    install(site, files["src/augjax_skew/ops.py"])
    report = check_op("skew", on_fail="raise")
    assert "check_geometry" in {r.check for r in report}
    assert {r.status for r in report} <= {"passed", "skipped"}, report.format()
    namespace: dict = {}
    code = compile(files["tests/test_skew.py"], "tests/test_skew.py", "exec")
    exec(code, namespace)  # noqa: S102 - the printed test file
    namespace["test_a_keypoint_and_a_box_follow_the_skew"]()


def test_a_matrix_of_the_wrong_sign_fails_the_kit(global_registry, site):
    source = pack_files()["src/augjax_skew/ops.py"].replace(
        "matrix=skew_matrix,",
        "matrix=lambda params, meta, **c: skew_matrix({'skew': -params['skew']}, meta),")
    assert "-params['skew']" in source
    install(site, source)
    with pytest.raises(OpCheckError) as info:
        check_op("skew", checks=["check_geometry"])
    msg = str(info.value)
    assert "op 'skew' failed check_geometry" in msg
    assert "the matrix disagrees with where the pixels went" in msg
    px = re.search(r"shows input point \((-?[\d.]+), (-?[\d.]+)\), which the matrix sends to "
                   r"\((-?[\d.]+), (-?[\d.]+)\), ([\d.]+) px away \(tolerance ([\d.]+)", msg)
    assert px, msg
    assert float(px[5]) > float(px[6])


RGB_ONLY = '''
    "fill": Param((0.0, 0.0, 0.0), kind="floats", low=0.0, high=1.0, optional=True,
                  doc="RGB value of pixels from outside (fractions of the range)"),
'''


def test_an_rgb_only_kernel_that_cannot_take_the_masks_fill_fails_the_kit(global_registry,
                                                                             site):
    source = pack_files()["src/augjax_skew/ops.py"]
    source = re.sub(r'        "fill": Param\(0\.0.*?None: zero padding"\),\n',
                    RGB_ONLY.lstrip("\n"), source, flags=re.DOTALL)
    source = source.replace("    matrix=skew_matrix,",
                            "    matrix=skew_matrix,\n    channels=(3,),")
    source = source.replace(
        'check_fill(fill, image, "skew")',
        'jnp.stack([fill[0], fill[1], fill[2]]).astype(jnp.float32) * '
        '(255.0 if image.dtype == jnp.uint8 else 1.0)')
    assert "fill[0]" in source and "channels=(3,)" in source and "(0.0, 0.0, 0.0)" in source
    install(site, source)
    x = np.zeros((2, 12, 14, 3), np.uint8)
    augjax.ops.skew(x, key=jax.random.key(0))  # the images alone run
    with pytest.raises(OpCheckError) as info:
        check_op("skew", checks=["check_geometry"])
    msg = str(info.value)
    assert "op 'skew' failed check_geometry" in msg and "apply with the targets masks=" in msg
    assert "'NoneType' object is not subscriptable" in msg and "'fill': None" in msg
    assert "in groups of 3 channels" in msg and "Follow(masks='refuse')" in msg


@op("rgb_flip", channels=(3,), matrix=lambda params, meta, **c: jnp.array(
    [[-1.0, 0.0, meta.width - 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], jnp.float32))
def rgb_flip(image, params):
    """Flips left-right and weighs the channels by ones (a kernel that takes 3 channels only).
    Params: none."""
    return (image[:, ::-1] * jnp.ones((3,), image.dtype)).astype(image.dtype)


def test_masks_follow_a_kernel_that_declares_three_channels_in_groups_of_three():
    x = np.zeros((2, 6, 7, 3), np.uint8)
    masks = np.arange(2 * 6 * 7, dtype=np.int32).reshape(2, 6, 7) * 100_003  # all 4 bytes
    out = rgb_flip(x, masks=masks)
    np.testing.assert_array_equal(out["masks"], masks[:, :, ::-1])
    report = check_op(rgb_flip, checks=["check_geometry"], on_fail="raise")
    assert [r.status for r in report] == ["passed"]


def test_an_op_that_moves_pixels_but_keeps_its_targets_fails_the_kit(global_registry, site):
    source = pack_files()["src/augjax_skew/ops.py"].replace(
        "    matrix=skew_matrix,",
        "    matrix=skew_matrix,\n    targets=augjax.Follow(masks='keep', points='keep'),")
    install(site, source)
    with pytest.raises(OpCheckError) as info:
        check_op("skew", checks=["check_geometry"])
    msg = str(info.value)
    assert "op 'skew' failed check_geometry" in msg
    assert "its mask holds id" in msg or "masks do not follow the pixels" in msg
