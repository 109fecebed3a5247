"""The fast tier's rule for the tests that run once per registered op.

A test's tier is a mark on the test itself: ``@pytest.mark.slow`` (CI runs it, the fast tier
``pytest -m "not slow"`` leaves it out), ``pytest.param(..., marks=pytest.mark.slow)`` for a
parameter set, or ``@pytest.mark.fast_tier(*ids)``: the fast tier runs these parameter sets of
the test only (tests/conftest.py marks the others slow, and stops the collection when an id
names no parameter set). The sweeps over every op (the conformance kit's heavy checks, the
reliability and targets sweeps) run on :data:`FAST_TIER_OPS` in the fast tier: their other
ops' parameter sets are marked slow here, by :func:`op_sweep` and :func:`kit_tiers`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

#: One op per kind of kernel: per-sample colour (brightness, DALI's color_twist too) and tone
#: (equalize), geometric (rotate stands for the warps), size-changing (random_resized_crop),
#: dtype-changing (normalize), erasing (cutout), batch-level with labels (mixup_cutmix), the
#: contrib pack's blur and noise. Every op's own tests stay in the fast tier.
FAST_TIER_OPS = frozenset({
    "rotate", "equalize", "brightness", "random_resized_crop", "mixup_cutmix", "cutout",
    "normalize", "gaussian_blur", "gaussian_noise",
})

#: The conformance kit's checks that build a DALI pipeline or compile programs of their own
#: for the op (1-3 s an op each on a 2-core machine): the fast tier runs them on
#: :data:`FAST_TIER_OPS`, the kit's cheap checks on every op.
KIT_HEAVY_CHECKS = frozenset({
    "check_dali_matches_array", "check_output_contract", "check_input_errors",
    "check_differentiable", "check_vmap_matches_loop", "check_jit_matches_eager",
    "check_sample_apply", "check_neutral_is_identity", "check_geometry", "check_targets_stay",
    "check_same_key_reproduces", "check_different_keys_differ",
})

_SLOW = pytest.mark.slow


def op_sweep(values: Iterable[Any], op: Callable[[Any], str] = lambda v: v) -> list[Any]:
    """The values of a parametrization over ops, those whose op (``op(value)``) is not one of
    :data:`FAST_TIER_OPS` marked slow (a tuple value is one parameter set of several names)."""
    return [v if op(v) in FAST_TIER_OPS else
            pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=_SLOW) for v in values]


def kit_tiers(parametrize: Any) -> Any:
    """``augjax.testing.parametrize_with_checks``'s mark (ids ``"op-check"``) with the heavy
    checks (:data:`KIT_HEAVY_CHECKS`) of the ops outside :data:`FAST_TIER_OPS` marked slow."""
    names, params = parametrize.args

    def slow(param_id: str) -> bool:
        op, _, check = param_id.rpartition("-check_")
        return f"check_{check}" in KIT_HEAVY_CHECKS and op not in FAST_TIER_OPS

    return pytest.mark.parametrize(names, [
        pytest.param(*p.values, id=p.id, marks=(*p.marks, _SLOW)) if slow(p.id) else p
        for p in params])
