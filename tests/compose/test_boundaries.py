"""Fusion boundaries between the steps of a program (augjax.kernels.boundary): the compiled
chain computes no op twice, and the boundaries change no value.

The structure is read from XLA's optimised HLO of the apply program, compiled with the options
augjax's own apply programs use; no timing."""

from __future__ import annotations

import re
from collections import Counter

import jax
import numpy as np
import pytest
from helpers import images

import augjax
from augjax import compose
from augjax.kernels.boundary import BARRIER_PASS, boundary_compiler_options
from augjax._runtime.execution.program import apply_program

ops = augjax.ops
pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="the boundaries are placed on the CPU only")

_HEADER = re.compile(r"^(ENTRY )?%(\S+) .*\{$")


def _computations(hlo: str) -> dict[str, Counter]:
    """Each computation of an optimised HLO module: its name -> the count of each opcode."""
    out: dict[str, Counter] = {}
    name = None
    for line in hlo.splitlines():
        head = _HEADER.match(line)
        if head:
            name, out[head.group(2)] = head.group(2), Counter()
        elif line.startswith("}"):
            name = None
        elif name is not None:
            op = re.search(r"= \S+ ([a-z][\w-]*)\(", line)
            if op:
                out[name][op.group(1)] += 1
    return out


def _lowered(chain, x, labels=None):
    """The chain's apply program lowered for ``x`` (and ``labels``), with its params."""
    params = chain.sample(*((x,) if labels is None else (x, labels)), key=jax.random.key(1))
    return apply_program(tuple(chain), "HWC").lower(x, labels, params), params


def _compiled(chain, x, labels=None, options="bounded", lowered=None):
    """The chain's apply program compiled as augjax compiles it ("bounded") or with XLA's
    default options ("unbounded": the barriers expanded before fusion), with its params;
    ``lowered``: :func:`_lowered`'s, compiled again (one lowering for both options)."""
    lowered, params = lowered or _lowered(chain, x, labels)
    compiled = lowered.compile(boundary_compiler_options() if options == "bounded" else None)
    return compiled, params


def _fusions(compiled) -> list[Counter]:
    """The opcodes of each fused computation (the loops XLA emits, one element at a time)."""
    return [ops_ for name, ops_ in _computations(compiled.as_text()).items()
            if name.startswith("fused") or "fusion" in name]


def test_crop_then_flip_fuses_no_resample_into_the_flip():
    """compose(random_resized_crop, flip): the flip reads the crop's output from memory.
    Before, XLA fused both resample passes (their gathers) into flip's select(reverse(y), y),
    which computed the resample twice per pixel: 7x the two ops alone on a 2-core CPU."""
    x = images(2, 64, 64)
    chain = compose(ops.random_resized_crop.bind(size=56), ops.flip.bind(p=0.5))
    compiled, _ = _compiled(chain, x)
    fusions = _fusions(compiled)
    flips = [f for f in fusions if f["reverse"]]
    assert flips, "no fusion holds the flip's reverse"
    assert all(f["gather"] == 0 for f in flips), flips
    assert "opt-barrier" in compiled.as_text()


def test_resize_passes_are_fused_apart():
    """random_resized_crop alone: the width pass is kept in memory, so no loop gathers both
    passes' taps (before: one fusion of 2 x 4 gathers, the width pass gathered again for each
    height tap; 48 -> 6 ms on B=16, 256^2 -> 224^2)."""
    x = images(2, 64, 64)
    compiled, _ = _compiled(compose(ops.random_resized_crop.bind(size=56)), x)
    taps = 4  # ceil(2 * 64 / 56) + 1 taps per output pixel and pass
    gathers = [f["gather"] for f in _fusions(compiled)]
    assert sum(gathers) == 2 * taps and max(gathers) <= taps, gathers


def test_a_kept_step_output_is_row_major():
    """compose(resize, flip): resize's output is kept in the row-major layout the flip reads.
    Before, the barrier took the layout of resize's height pass (transposed, u8[...]{3,2,0,1})
    and the flip read it across: 1.15x the two ops alone (2-core CPU, B=16, 224^2). Resize's
    own barrier between its passes keeps its transposed float32 layout."""
    chain = compose(ops.resize.bind(size=40), ops.flip.bind(p=0.5))
    compiled, _ = _compiled(chain, images(2, 48, 48))
    layouts = re.findall(r"= (\w+)\[[\d,]*\]\{([\d,]+)\} opt-barrier", compiled.as_text())
    kept = [lay for dtype, lay in layouts if dtype == "u8"]  # the step's output
    assert kept, layouts
    for lay in kept:
        order = [int(d) for d in lay.split(",")]
        assert order == sorted(order, reverse=True), layouts  # minor to major: row-major
    assert any(dtype == "f32" for dtype, _ in layouts), layouts  # resize's own, unchanged


def test_a_chains_last_step_writes_the_output_row_major():
    """compose(cutmix, resize): resize's last pass writes the row-major output itself. Before,
    it wrote its transposed layout and a separate copy transposed it into the output (1.11-1.21x
    cutmix and resize alone, 2-core CPU, B=16; resize alone writes row-major)."""
    chain = compose(ops.cutmix.bind(alpha=1.0, num_classes=5), ops.resize.bind(size=40))
    compiled, _ = _compiled(chain, images(4, 48, 48), np.arange(4, dtype=np.int32))
    entry = compiled.as_text().split("\nENTRY ")[1]
    assert not re.search(r"= u8\[[\d,]+\]\{[\d,]+\} copy\(", entry), entry


def test_a_kept_step_output_keeps_the_images_shape():
    """compose(cutmix, normalize): cutmix's output is kept as the (N, H, W, C) batch, row-major
    (boundary._kept_whole, after a batch-level step). Before, a kept output was reshaped to
    (N*H, W, C) to get the row-major layout, and the loop that wrote it ran over that shape
    while cutmix computes over rows of W*C values: every element's index was taken apart and
    put together again (cutmix + normalize 1.22x the two ops alone, 2-core CPU, B=16)."""
    x = images(4, 48, 40)
    chain = compose(ops.cutmix.bind(alpha=1.0, num_classes=5), ops.normalize.bind())
    compiled, _ = _compiled(chain, x, np.arange(4, dtype=np.int32))
    kept = re.findall(r"= (\w+)\[([\d,]*)\]\{([\d,]+)\} opt-barrier", compiled.as_text())
    cut = [(dims, layout) for dtype, dims, layout in kept if dtype == "u8"]
    assert cut == [("4,48,40,3", "3,2,1,0")], kept


def test_the_mixing_ops_blend_rows_of_values():
    """compose(normalize, mixup): mixup blends rows of W*C values (its gather of the partners
    takes (1, H, W*C) blocks), so XLA:CPU's loop over them vectorises with normalize fused into
    it. Before, the loop ran over (N, H, W, C) with an innermost loop of C = 3 values, one value
    at a time, and normalize fused in twice per value (the sample and its partner) cost 1.3-1.5x
    the two ops alone (2-core CPU, B=16, 224^2)."""
    x = images(4, 48, 40)
    chain = compose(ops.normalize.bind(), ops.mixup.bind(alpha=0.4, num_classes=5))
    compiled, _ = _compiled(chain, x, np.arange(4, dtype=np.int32))
    gathers = re.findall(r"= f32\[([\d,]+)\]\{[\d,]+\} gather\(", compiled.as_text())
    images_gathers = [g for g in gathers if g.count(",") == 3]  # the partners' images
    assert images_gathers == ["4,1,48,120"], gathers


def test_cutmix_pastes_uint8_levels_without_float_arithmetic():
    """cutmix on uint8 images (no sample blends) selects between each sample's levels and its
    partner's, u8[N, H, W*C], behind a branch on whether any sample blends (mixup_cutmix's
    mixup samples take the float32 mix). Before, every value went through the float32 mix
    (converted, weighted, rounded back), whose cost grew with the box (0.94-1.78 ms at B=16,
    256^2, the same program; 1.03 -> 0.55 ms at 224^2 for a box of 14%); the same bits."""
    x = images(4, 48, 40)
    chain = compose(ops.cutmix.bind(alpha=1.0, num_classes=5))
    compiled, _ = _compiled(chain, x, np.arange(4, dtype=np.int32))
    text = compiled.as_text()
    assert "conditional(" in text
    pastes = re.findall(r"= u8\[([\d,]+)\]\{[\d,]+\} select\(", text)
    assert pastes and set(pastes) == {"4,48,120"}, pastes


@pytest.mark.fast_tier("const")
@pytest.mark.parametrize("mode", ["const", "pixel"])
def test_random_erasing_selects_over_rows_of_values(mode):
    """random_erasing selects between the image and its fill over rows of W*C values
    (erase.row_box_mask), a loop XLA:CPU vectorises: the select of the image is
    u8[N, H, W*C]. Before, it ran over (N, H, W, C) with an innermost loop of C = 3 values, one
    value at a time (B=16, 256^2 uint8 on a 2-core CPU: 1.13 -> 0.60 ms; the same bits)."""
    x = images(4, 48, 40)
    compiled, _ = _compiled(compose(ops.random_erasing.bind(p=1.0, mode=mode, max_count=2)), x)
    selects = re.findall(r"= u8\[([\d,]+)\]\{[\d,]+\} select\(", compiled.as_text())
    assert selects and set(selects) == {"4,48,120"}, selects


@pytest.mark.fast_tier("brightness+normalize")
@pytest.mark.parametrize("first, second, bounded", [
    (ops.normalize.bind(), ops.random_crop.bind(size=40), False),  # widening pointwise
    (ops.brightness.bind(factor=(0.6, 1.4)), ops.normalize.bind(), False),  # both pointwise
    (ops.brightness.bind(factor=(0.6, 1.4)), ops.rotate.bind(degrees=30), True),
    (ops.flip.bind(p=0.5), ops.normalize.bind(), False),  # moving, then widening
    (ops.flip.bind(p=0.5, horizontal=False, vertical=True), ops.normalize.bind(), False),
    (ops.flip.bind(p=0.5), ops.random_erasing.bind(p=0.5), False),  # both moving
    (ops.random_crop.bind(size=40), ops.random_erasing.bind(p=0.5), False),
    (ops.random_erasing.bind(p=0.5), ops.rotate.bind(degrees=30), True),
    (ops.brightness.bind(factor=(0.6, 1.4)), ops.random_erasing.bind(p=0.5), True),
    (ops.random_erasing.bind(p=0.5), ops.brightness.bind(factor=(0.6, 1.4)), True),
    (ops.rotate.bind(degrees=30), ops.normalize.bind(), True),  # a resample, then widening
    (ops.random_erasing.bind(p=0.5), ops.flip.bind(p=0.5), True),  # flip reads twice
    (ops.random_crop.bind(size=40), ops.flip.bind(p=0.5), False),  # a crop, then a flip
    (ops.flip.bind(p=0.5), ops.flip.bind(p=0.5, horizontal=False, vertical=True), False),
    (ops.flip.bind(p=0.5, horizontal=False, vertical=True),  # a flip, then pointwise
     ops.brightness.bind(factor=(0.6, 1.4)), True),
], ids=["normalize+crop", "brightness+normalize", "brightness+rotate", "flip+normalize",
        "vflip+normalize", "flip+erasing", "crop+erasing", "erasing+rotate",
        "brightness+erasing", "erasing+brightness", "rotate+normalize", "erasing+flip",
        "crop+flip", "flip+vflip", "vflip+brightness"])
def test_cheap_producers_are_left_to_fusion(first, second, bounded):
    """No boundary after a pointwise step that widens its values (normalize: uint8 -> float32,
    cheaper to recompute than to write and read back), between two pointwise steps, nor after
    a step that only moves elements (flip, crops, erasing) before a moving or widening one
    (kept in memory, the flip's output cost its write and read back: vflip + normalize 1.26x,
    flip + random_erasing 1.22x the two ops alone), nor after a crop before any moving step,
    nor after a flip before a flip (kept, the first flip's output was faulted in on every
    call: flip + vflip 1.14-1.41x at B=16); a boundary otherwise (brightness fused into
    rotate's gather was 2.6x the two ops, brightness and erasing fused 2.6x, erasing fused into
    vflip's two reads 1.7x, vflip fused into brightness 1.26-1.35x)."""
    compiled, _ = _compiled(compose(first, second), images(2, 48, 48))
    # One barrier after the last step (it writes the row-major output), one between the steps.
    assert compiled.as_text().count(" opt-barrier(") == 1 + bounded


_IDX = np.arange(8, dtype=np.int32)[::-1].copy()  # indices a parameter picks from


def _rows(p):
    return jax.numpy.asarray(_IDX)[p["box"]]


@pytest.mark.parametrize("fn, expected", [
    (lambda x, p: x * p["f"], "pointwise"),
    (lambda x, p: jax.numpy.where(  # random erasing's form: a mask drawn from the params
        (jax.lax.iota(np.int32, x.shape[0]) >= p["box"][0])[:, None, None], 0.0, x), "move"),
    (lambda x, p: jax.numpy.where(p["f"] > 1, x[::-1], x), "move-twice"),  # flip's form
    (lambda x, p: jax.lax.dynamic_slice(x, (p["box"][0], 0, 0), (4, 8, 3)), "crop"),
    (lambda x, p: x[::-1] * p["f"], "other"),  # moved, then computed on
    (lambda x, p: x[_rows(p)], "crop"),  # a gather of rows (blocks)
    (lambda x, p: x[_rows(p), _rows(p)], "other"),  # a gather of single pixels
    (lambda x, p: x - x.mean(), "other"),  # a reduction of the image
], ids=["scale", "mask-from-params", "flip", "crop", "reverse-scale", "block-gather",
        "pixel-gather", "reduction"])
def test_image_kind_is_read_from_what_touches_the_image(fn, expected):
    """A step's kind counts only what it does with the image; what it computes from its
    parameters (a box, a mask drawn with iota) does not count."""
    from augjax.kernels.boundary import image_kind

    params = {"f": np.float32(2.0), "box": np.arange(4, dtype=np.int32)}
    assert image_kind(fn, np.zeros((8, 8, 3), np.float32), params) == expected


PAIRS = [
    ("normalize", "random_crop"),
    ("brightness", "rotate"),
    ("random_resized_crop", "flip"),
    ("flip", "random_resized_crop"),
    ("random_resized_crop", "color_jitter"),
    ("rotate", "gaussian_blur"),
    ("gaussian_blur", "flip"),
    ("resize", "normalize"),
    ("color_jitter", "random_erasing"),
    ("mixup", "flip"),
    ("flip", "cutmix"),
    ("rand_augment", "flip"),
    ("flip", "normalize"),
    ("normalize", "mixup"),
    ("flip", "random_erasing"),
    ("random_crop", "random_erasing"),
    ("vflip", "normalize"),
    ("random_erasing", "normalize"),
    ("resize", "brightness"),
    ("flip", "vflip"),
    ("vflip", "brightness"),
    ("cutmix", "normalize"),
    ("mixup", "cutmix"),
]


def _step(name):
    return {
        "random_resized_crop": ops.random_resized_crop.bind(size=40),
        "flip": ops.flip.bind(p=0.5),
        "vflip": ops.flip.bind(p=0.5, horizontal=False, vertical=True),
        "color_jitter": ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4,
                                              hue=0.1),
        "rotate": ops.rotate.bind(degrees=30, interpolation="bilinear"),
        "gaussian_blur": ops.gaussian_blur.bind(kernel_size=(5, 5), sigma=(0.1, 2.0)),
        "resize": ops.resize.bind(size=40),
        "random_crop": ops.random_crop.bind(size=40),
        "brightness": ops.brightness.bind(factor=(0.6, 1.4)),
        "normalize": ops.normalize.bind(),
        "random_erasing": ops.random_erasing.bind(p=0.5),
        "mixup": ops.mixup.bind(alpha=0.4, num_classes=5),
        "cutmix": ops.cutmix.bind(alpha=1.0, num_classes=5),
        "rand_augment": augjax.rand_augment(n=2, m=9),
    }[name]


@pytest.mark.fast_tier("flip+normalize")
@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_boundaries_change_no_value(pair):
    """The bounded program equals the unbounded one (the fusion of before) and the two ops
    applied one after the other, bit for bit."""
    first, second = (_step(n) for n in pair)
    chain = compose(first, second)
    x = images(4, 48, 44, seed=len(pair[0]))
    labels = np.arange(4, dtype=np.int32) % 5 if "labels" in chain.inputs else None
    lowered = _lowered(chain, x, labels)
    bounded, params = _compiled(chain, x, labels, lowered=lowered)
    unbounded, _ = _compiled(chain, x, labels, options="unbounded", lowered=lowered)
    got, want = bounded(x, labels, params), unbounded(x, labels, params)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The ops one after the other (each its own program), with the chain's params.
    y = x, labels
    for step, p in zip(chain, params):
        y = step.apply(*y, params=p) if "labels" in step.inputs else (
            step.apply(y[0], params=p), y[1])
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(y)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_barrier_expander_is_turned_off_on_a_cpu_only():
    """XLA:GPU cannot emit an ``opt-barrier`` (JAX 0.11.2 on an H200: "Unsupported instruction
    opcode: opt-barrier"): a program for CUDA keeps XLA's barrier expander, whatever backend
    the process defaults to."""
    from augjax.kernels.portable import portable_compiler_options

    assert boundary_compiler_options("cpu") == {"xla_disable_hlo_passes": BARRIER_PASS,
                                                **(portable_compiler_options("cpu") or {})}
    for backend in ("gpu", "cuda", "rocm", "tpu"):
        assert boundary_compiler_options(backend) is None


@pytest.mark.parametrize("first, second, kept", [
    (ops.affine.bind(degrees=20), ops.rotate.bind(degrees=30), True),  # two resamples
    (ops.hue.bind(), ops.affine.bind(degrees=20), True),  # a costly pointwise step, resampled
    # hue and saturation each mix a pixel's channels (OTHER, not POINTWISE, by their jaxprs):
    # kept, 0.92x the two ops alone on an H100 at B=256 (2026-12-05)
    (ops.hue.bind(), ops.saturation.bind(), True),
    (ops.rotate.bind(degrees=30), ops.cutmix.bind(num_classes=10), True),  # into a batch step
    # hue computes ~109 primitives a value (fusion.HEAVY): fused into a crop's slice it ran
    # once for each channel (1.24-1.57x the two ops alone, H100, B=256); lighter steps fuse
    (ops.hue.bind(), ops.center_crop.bind(size=40), True),
    (ops.saturation.bind(), ops.center_crop.bind(size=40), False),
    (ops.rotate.bind(degrees=30), ops.random_crop.bind(size=40), False),
    (ops.random_crop.bind(size=40), ops.rotate.bind(degrees=30), False),  # a crop, resampled
    (ops.normalize.bind(), ops.rotate.bind(degrees=30), False),  # widening, resampled
    (ops.rotate.bind(degrees=30), ops.flip.bind(p=0.5), False),  # a move after a resample
    (ops.flip.bind(p=0.5), ops.cutmix.bind(num_classes=10), False),  # a move into a batch step
], ids=["affine+rotate", "hue+affine", "hue+saturation", "rotate+cutmix", "hue+center_crop",
        "saturation+center_crop", "rotate+random_crop", "crop+rotate", "normalize+rotate",
        "rotate+flip", "flip+cutmix"])
def test_on_cuda_a_resample_reads_a_resampled_or_recoloured_image_from_memory(
        monkeypatch, first, second, kept):
    """Lowered for CUDA from this host, as a GPU host traces it (XLA:GPU has no barrier): the
    chain keeps the first step's output behind a Triton call that does nothing (its output
    aliased to its input, so no fusion crosses it and no pixel moves) where a resample or a
    batch step would otherwise compute a resample or a pointwise step again for each read,
    and lets cheap producers fuse."""
    from jax import export

    import augjax._runtime.execution.fusion as fusion
    import augjax._runtime.execution.lowering as lowering
    from augjax.kernels import platform

    monkeypatch.setattr(platform, "live_platforms", lambda: frozenset({"cpu", "cuda"}))
    for module in (fusion, lowering):
        monkeypatch.setattr(module, "backend", lambda: "gpu")
    x = images(4, 48, 48)
    labels = np.arange(4, dtype=np.int32) % 10
    chain = compose(first, second)
    batch = "labels" in second.spec.inputs
    params = chain.sample(*((x, labels) if batch else (x,)), key=jax.random.key(0))

    def apply(x, labels, params):
        return lowering.apply_params(tuple(chain), x, labels if batch else None, params, "HWC")

    shapes = jax.tree_util.tree_map(lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype),
                                    (x, labels, params))
    triton = export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")
    text = export.export(jax.jit(apply), platforms=["cuda"], disabled_checks=[triton])(
        *shapes).mlir_module()
    calls = [line for line in text.splitlines() if 'name = "_nothing"' in line]
    assert len(calls) == (1 if kept else 0)
    if kept:
        assert "output_operand_alias<output_tuple_indices = [], operand_index = 0" in calls[0]


def _every_step():
    """Every registered op (with the parameters `augjax demo` gives it) and the four policies
    and timm's grammar, each in a chain of its own."""
    from augjax._demo.params import demo_params

    steps = {}
    for name in augjax.list_ops():
        spec = augjax.get_op(name)
        steps[name] = spec.bind(**demo_params(spec, num_classes=5, size=32)[0])
    steps.update({"rand_augment": augjax.rand_augment(n=2, m=9),
                  "trivial_augment_wide": augjax.trivial_augment_wide(),
                  "auto_augment": augjax.auto_augment("imagenet"),
                  "augmix": augjax.augmix(severity=3, width=3),
                  "timm": augjax.from_timm("rand-m9-mstd0.5-inc1")})
    return steps


def test_every_step_has_a_kind_under_the_gpu_rules(monkeypatch):
    """A GPU host reads each per-sample step's kind and channel work from its CUDA trace
    (fusion.kind_of_step, on="gpu") while it lowers a chain: that reading handles every
    registered op and policy (equalize's ``cond`` without outputs once raised an IndexError in
    every GPU program with equalize, the policies' included). Traced only, nothing compiles."""
    import augjax._runtime.execution.fusion as fusion
    from augjax.kernels import boundary, platform

    monkeypatch.setattr(platform, "live_platforms", lambda: frozenset({"cpu", "cuda"}))
    x = jax.ShapeDtypeStruct((4, 32, 32, 3), np.uint8)
    labels = jax.ShapeDtypeStruct((4,), np.int32)
    kinds = {}
    for name, bound in _every_step().items():
        chain = compose(bound)
        batch = "labels" in chain.inputs
        params = jax.eval_shape(
            lambda k, x, l: chain.sample(*((x, l) if batch else (x,)), key=k),
            jax.random.key(0), x, labels)
        for step, p in zip(chain, params):
            if step.level != "sample":
                continue
            leaves, tree = jax.tree_util.tree_flatten(p)
            kinds[name] = fusion.kind_of_step.__wrapped__(
                step, (x.shape, x.dtype), tree, tuple((v.shape, v.dtype) for v in leaves), "gpu")
    known = {boundary.OTHER, boundary.POINTWISE, boundary.CROP, boundary.MOVE,
             boundary.MOVE_TWICE, fusion.HEAVY, fusion.WIDENING}
    assert set(kinds.values()) <= known, kinds
    assert {"equalize", "rand_augment", "augmix", "hue", "flip"} <= set(kinds)
    assert kinds["hue"] == fusion.HEAVY and kinds["equalize"] == boundary.OTHER
