"""augjax.testing: the conformance kit for ops, modelled on scikit-learn's ``check_estimator``.

Every op, built-in or from a pack, is held to the same contract. In a pack's tests::

    import augjax
    from augjax.testing import parametrize_with_checks

    @parametrize_with_checks(augjax.list_ops(distribution="augjax-mypack"))
    def test_conformance(op, check):
        check(op)

or outside pytest: ``augjax.testing.check_op("my_op", on_fail="warn")`` returns a report, and
``augjax check DIST_OR_OP`` prints one.

The checks (those that apply to the op's level, randomness and declared neutral values):

- ``check_declaration``: name, level, inputs/outputs, dtypes, layouts, docstring, API version;
  every parameter's default, range, neutral value and magnitude are valid.
- ``check_param_validation``: invalid parameters raise ``ParamError`` at configuration.
- ``check_input_errors``: wrong input types, ranks, dtypes, channels, labels and a missing key
  raise the typed errors (``InputTypeError``, ``InputError``, ``KeyRequiredError``).
- ``check_output_contract``: the declared output dtype, size and layout for every dtype;
  channels-first input gives the channels-last result transposed.
- ``check_jit_matches_eager``: the jitted batch equals the kernel run eagerly per sample.
- ``check_sample_apply``: ``op.sample`` gives per-sample arrays; ``op.apply`` with them equals
  the call bitwise (also in ``compose(op)``).
- ``check_geometry`` (ops with ``matrix=`` or masks through the kernel): on a coordinate image,
  the matrix agrees with where the pixels go, and masks, boxes and keypoints follow them; a
  mask's set of ids comes back unchanged (only moved, or ``mask_fill``); where the op's
  parameters move no pixel far enough for masks left in place to show, it runs again with
  parameters that do; the targets path runs with the op's declared channels and fills.
- ``check_targets_stay`` (sample-level ops whose targets stay: no ``matrix=``, masks not
  through the kernel): the output keeps the input's size, and its edges on a structured image
  match the input's in place, not flipped, turned or shifted (a kernel that moves pixels
  without declaring it would leave masks, boxes and keypoints behind).
- ``check_differentiable`` (float32 in and out): ``jax.grad`` through ``apply`` is finite.
- ``check_vmap_matches_loop``: the batch equals each sample alone (sample-level ops).
- ``check_neutral_is_identity``: neutral parameter values return the input.
- ``check_same_key_reproduces`` / ``check_different_keys_differ`` (random ops).
- ``check_no_input_mutation``: NumPy inputs are unchanged.
- ``check_no_recompilation``: repeated calls with the same shapes do not retrace.
- ``check_dali_matches_array``: a DALI CPU pipeline gives bitwise the array path's output
  (skipped, with the reason, when DALI is not installed).
- ``check_loads``: only for an op whose entry point fails to load (it fails, whatever
  ``checks=`` selects).

docs/PACKS.md has the pack author's guide (a worked geometric op, the checks, porting from 1.x).

Opt out of a check with ``expected_failed_checks={"check_name": "why"}`` (reported as xfail).
:func:`write_distribution` writes an installed distribution into a directory, to test a pack's
discovery without building it.
"""

from augjax.testing._checks import CHECKS, CheckSkipped, applicable_checks
from augjax.testing._dali import dali_available
from augjax.testing._dists import write_distribution
from augjax.testing._examples import (
    example_op,
    example_params,
    make_images,
    neutral_params,
)
from augjax.testing._runner import (
    Check,
    CheckReport,
    CheckResult,
    OpCheckError,
    OpCheckFailedWarning,
    check_op,
    op_checks,
    parametrize_with_checks,
)

__all__ = [
    "CHECKS",
    "Check",
    "CheckReport",
    "CheckResult",
    "CheckSkipped",
    "OpCheckError",
    "OpCheckFailedWarning",
    "applicable_checks",
    "check_op",
    "dali_available",
    "example_op",
    "example_params",
    "make_images",
    "neutral_params",
    "op_checks",
    "parametrize_with_checks",
    "write_distribution",
]
