"""The cases of the bitwise fixture (``bitwise_fixture.json``): every registered op (augjax's and
every installed pack's) with the conformance kit's example parameters, representative chains
and the four policies, on fixed inputs and keys, uint8 and float32, on the CPU.

Each case's outputs are recorded as shape, dtype and a digest of their bytes. Record the fixture
again only where a change of output is intended (and say why in the commit)::

    python tests/reliability/bitwise_cases.py          # rewrites bitwise_fixture.json
    python tests/reliability/bitwise_cases.py --print [CASE ...]  # the digests as JSON
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

FIXTURE = Path(__file__).with_name("bitwise_fixture.json")
#: Batch, height, width, channels of every input (small: the test runs in CI).
SHAPE = (4, 32, 32, 3)
DTYPES = ("uint8", "float32")
SEED = 20261204


def images(dtype: str, channels: int = 3) -> np.ndarray:
    """The fixed input batch of ``dtype`` (uint8 levels, or float32 in [0, 1])."""
    rng = np.random.default_rng(SEED)
    n, h, w, _ = SHAPE
    x = rng.integers(0, 256, (n, h, w, channels), dtype=np.uint8)
    return x if dtype == "uint8" else (x.astype(np.float32) / np.float32(255.0))


def labels() -> np.ndarray:
    """Integer class ids for the ops that take labels."""
    return np.arange(SHAPE[0], dtype=np.int32) % 2


def digest(out: Any) -> list[list[Any]]:
    """``[[shape, dtype, sha256 of the bytes (16 hex digits)], ...]`` for every output array."""
    import jax

    rows = []
    for leaf in jax.tree_util.tree_leaves(out):
        a = np.ascontiguousarray(np.asarray(leaf))
        rows.append([list(a.shape), a.dtype.name, hashlib.sha256(a.tobytes()).hexdigest()[:16]])
    return rows


def _op_cases() -> Iterator[tuple[str, Any, Any]]:
    import augjax
    from augjax.testing import example_op
    from augjax.testing._examples import channels_for

    overrides = {"rot90": {"k": 1}, "affine": {"degrees": 30.0},
                 "color_twist": {"brightness": (0.6, 1.4), "contrast": (0.6, 1.4),
                                 "saturation": (0.5, 1.5), "hue": (-30.0, 30.0)}}
    for name in augjax.list_ops():
        spec = augjax.get_op(name)
        bound = spec.bind(**overrides[name]) if name in overrides else example_op(spec)
        for dtype in DTYPES:
            if dtype not in spec.dtypes:
                continue
            yield f"op/{name}/{dtype}", bound, (dtype, channels_for(spec),
                                               "labels" in spec.inputs)


def _chains() -> dict[str, Callable[[], Any]]:
    import augjax
    from augjax import ops

    return {
        "readme": lambda: augjax.compose(
            ops.random_resized_crop.bind(size=24), ops.flip.bind(p=0.5),
            augjax.rand_augment(n=2, m=9),
            ops.normalize.bind(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))),
        "jitter_flip": lambda: augjax.compose(
            ops.flip.bind(p=0.3),
            ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)),
        "geometry": lambda: augjax.compose(
            ops.rotate.bind(degrees=20.0), ops.affine.bind(degrees=10.0, translate=(0.1, 0.1)),
            ops.center_crop.bind(size=24)),
        "random_apply": lambda: augjax.random_apply(augjax.compose(
            ops.brightness.bind(factor=(0.5, 1.5)), ops.flip.bind(p=1.0)), p=0.5),
        "random_choice": lambda: augjax.random_choice(
            [ops.brightness.bind(factor=(0.5, 1.5)), ops.rotate.bind(degrees=30.0)],
            weights=(0.25, 0.75)),
    }


def _policies() -> dict[str, Callable[[], Any]]:
    import augjax

    return {
        "rand_augment": lambda: augjax.rand_augment(n=2, m=9),
        "rand_augment_m5": lambda: augjax.rand_augment(n=2, m=5),
        "trivial_augment_wide": lambda: augjax.trivial_augment_wide(),
        "auto_augment": lambda: augjax.auto_augment(),
        "augmix": lambda: augjax.augmix(),
    }


def cases() -> Iterator[tuple[str, Callable[[], list[list[Any]]]]]:
    """``(case id, () -> digest rows)`` for every case, in a fixed order."""
    import jax

    key = jax.random.key(SEED)
    for case, step, (dtype, channels, with_labels) in _op_cases():
        def run(step=step, dtype=dtype, channels=channels, with_labels=with_labels):
            args = (images(dtype, channels),) + ((labels(),) if with_labels else ())
            return digest(step(*args, key=key))
        yield case, run
    for group, makers in (("chain", _chains()), ("policy", _policies())):
        for name, make in makers.items():
            for dtype in DTYPES:
                def run(make=make, dtype=dtype):
                    return digest(make()(images(dtype), key=key))
                yield f"{group}/{name}/{dtype}", run


def dumps(result: dict[str, Any]) -> str:
    """The fixture's text: JSON with one case per line."""
    rows = [f"{json.dumps(k)}: {json.dumps(result[k])}" for k in sorted(result)]
    return "{\n" + ",\n".join(rows) + "\n}\n"


def record(only: set[str] | None = None) -> dict[str, Any]:
    """Every case's digest rows (an error's type and message where a case raises); ``only``:
    those cases alone."""
    out: dict[str, Any] = {}
    for case, run in cases():
        if only is not None and case not in only:
            continue
        try:
            out[case] = run()
        except Exception as err:  # noqa: BLE001  (recorded: an error is a behaviour too)
            out[case] = {"error": type(err).__name__}
    return out


if __name__ == "__main__":
    import jax

    if jax.default_backend() != "cpu":
        sys.exit("record the fixture on the CPU")
    if sys.argv[1:2] == ["--print"]:  # the digests on stdout, the fixture untouched
        print(json.dumps(record(set(sys.argv[2:]) or None)))
        sys.exit(0)
    result = record()
    FIXTURE.write_text(dumps(result))
    errors = [k for k, v in result.items() if isinstance(v, dict)]
    print(f"{len(result)} cases -> {FIXTURE} ({len(errors)} raise: {errors})")
