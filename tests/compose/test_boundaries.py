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
from augjax.kernels.boundary import boundary_compiler_options
from augjax._runtime.program import apply_program

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


def _compiled(chain, x, labels=None, options="bounded"):
    """The chain's apply program compiled as augjax compiles it ("bounded") or with XLA's
    default options ("unbounded": the barriers expanded before fusion), with its params."""
    params = chain.sample(*((x,) if labels is None else (x, labels)), key=jax.random.key(1))
    program = apply_program(tuple(chain), "HWC")
    lowered = program.lower(x, labels, params)
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


@pytest.mark.parametrize("first, second, bounded", [
    (ops.normalize.bind(), ops.random_crop.bind(size=40), False),  # widening pointwise
    (ops.brightness.bind(factor=(0.6, 1.4)), ops.normalize.bind(), False),  # both pointwise
    (ops.brightness.bind(factor=(0.6, 1.4)), ops.rotate.bind(degrees=30), True),
    (ops.flip.bind(p=0.5), ops.normalize.bind(), True),  # flip reads reversed
], ids=["normalize+crop", "brightness+normalize", "brightness+rotate", "flip+normalize"])
def test_pointwise_steps_are_left_to_fusion(first, second, bounded):
    """No boundary after a pointwise step that widens its values (normalize: uint8 -> float32,
    cheaper to recompute than to write and read back) or before a pointwise consumer; a
    boundary otherwise (brightness fused into rotate's gather was 2.6x the two ops)."""
    compiled, _ = _compiled(compose(first, second), images(2, 48, 48))
    assert ("opt-barrier" in compiled.as_text()) is bounded


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
]


def _step(name):
    return {
        "random_resized_crop": ops.random_resized_crop.bind(size=40),
        "flip": ops.flip.bind(p=0.5),
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


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_boundaries_change_no_value(pair):
    """The bounded program equals the unbounded one (the fusion of before) and the two ops
    applied one after the other, bit for bit."""
    first, second = (_step(n) for n in pair)
    chain = compose(first, second)
    x = images(4, 48, 44, seed=len(pair[0]))
    labels = np.arange(4, dtype=np.int32) % 5 if "labels" in chain.inputs else None
    bounded, params = _compiled(chain, x, labels)
    unbounded, _ = _compiled(chain, x, labels, options="unbounded")
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
