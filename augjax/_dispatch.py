"""Dispatch on the input type: ``jax.Array`` / NumPy runs the jitted program, a DALI ``DataNode``
adds one ``jax_function`` operator to the pipeline being defined."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augjax._checking import check_batch, checking_enabled
from augjax._inputs import as_array, check_label_range
from augjax import _padding
from augjax._keys import sample_keys
from augjax._partition import array_spans_devices
from augjax._program import array_program
from augjax.errors import InputError

__all__ = ["apply_steps", "is_data_node"]


def is_data_node(x: Any) -> bool:
    """Whether ``x`` is a DALI DataNode, decided without importing DALI."""
    return type(x).__module__.startswith("nvidia.dali") and type(x).__name__ == "DataNode"


def _first_name(steps: Sequence[Any], name: str) -> str:
    """The name of the op that first sees the images (a chain's first op)."""
    return getattr(steps[0], "name", name) if steps else name


def apply_steps(
    steps: Sequence[Any],
    inputs: Sequence[Any],
    *,
    name: str,
    inputs_decl: tuple[str, ...],
    outputs_decl: tuple[str, ...],
    key: Any,
    seeds: Any,
    seed: int | None,
    device: str | None,
    layout: str,
    start: int = 0,
) -> Any:
    """Applies configured ops to ``inputs`` on the backend their type selects; ``start`` is the
    chain position of the first op (see :func:`augjax._program.run_steps`)."""
    if len(inputs) != len(inputs_decl):
        raise InputError(
            f"{name}: expects {len(inputs_decl)} positional input(s) ({', '.join(inputs_decl)}), "
            f"got {len(inputs)}",
            op=name,
            argument=inputs_decl[min(len(inputs), len(inputs_decl) - 1)],
        )
    if layout not in ("HWC", "CHW"):
        raise InputError(
            f"{name}: argument 'layout' expects 'HWC' or 'CHW', got {layout!r}",
            op=name,
            argument="layout",
        )
    nodes = [is_data_node(x) for x in inputs]
    if any(nodes):
        if not all(nodes):
            raise InputError(
                f"{name}: inputs mix DALI DataNodes and arrays; inside a pipeline every input "
                f"must be a DataNode",
                op=name,
            )
        if key is not None:
            raise InputError(
                f"{name}: argument 'key' is for arrays; in a DALI pipeline pass seed= (an int) "
                f"or seeds= (a DataNode of per-sample seeds)",
                op=name,
                argument="key",
            )
        from augjax.dali import apply_dali

        return apply_dali(
            steps, inputs, name=name, outputs_decl=outputs_decl, seeds=seeds, seed=seed,
            device=device, layout=layout, start=start,
        )
    for arg, value in (("seeds", seeds), ("seed", seed), ("device", device)):
        if value is not None:
            raise InputError(
                f"{name}: argument '{arg}' is for DALI pipelines; on arrays pass key=",
                op=name,
                argument=arg,
            )
    images = as_array(inputs[0], name, "images")
    # Float values outside [0, 1]: NumPy batches are read for free (a warning); jax.Arrays
    # only in checking mode (an error; reading them is a device sync).
    on_host = isinstance(inputs[0], np.ndarray)
    check_batch(inputs[0] if on_host else images, _first_name(steps, name), on_host=on_host,
                strict=checking_enabled())
    labels = as_array(inputs[1], name, "labels") if len(inputs) > 1 else None
    if len(inputs) > 1 and isinstance(inputs[1], np.ndarray):
        # Host labels are checked here for free; device labels are not read back (that would
        # sync every call): out-of-range ids there poison the batch's soft labels with NaN.
        check_label_range(inputs[1], steps)
    if images.ndim < 1:
        raise InputError(f"{name}: argument 'images' must be a batch, got a scalar", op=name)
    random = any(step.spec.random for step in steps)
    keys = sample_keys(key, images.shape[0], name) if random else None
    program = array_program(tuple(steps), layout, start, array_spans_devices(images))
    # A batch smaller than one this program ran with runs padded to it: no new compile.
    out, labels = _padding.call(program, steps, (images, labels, keys))
    return (out, labels) if "labels" in outputs_decl else out
