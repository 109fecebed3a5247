"""The conformance kit (``augjax.testing``) over every registered op, augjax's own and every
installed pack's alike, parametrized from ``augjax.list_ops()`` with ids ``"op-check"``
(``pytest tests/catalog/test_all_ops.py -k flip`` runs one op, ``-k dali`` one check everywhere).
The fast tier runs the kit's heavy checks on a few ops only (tests/tiers.py).

The kit derives each op's test parameters from its declaration. ``PARAMS`` below overrides
them only where the declaration cannot tell the kit how to exercise the op, each with the
reason; ``EXPECTED_FAILURES`` lists checks an op is known not to pass, each with the reason.
"""

from __future__ import annotations

from tiers import kit_tiers

import augjax
from augjax.errors import AugjaxError
from augjax.testing import parametrize_with_checks

#: op name -> parameters for the kit (instead of the ones it derives), with the reason.
PARAMS: dict[str, dict[str, object]] = {
    # k=None (a random quarter turn per sample) needs square images; the kit's images are
    # 12x14 on purpose (a swapped height and width shows). An odd k swaps them for the batch.
    "rot90": {"k": 1},
    # Every default is the identity and no parameter declares a neutral value, so the kit
    # would not know what to move; a rotation range makes the key matter.
    "affine": {"degrees": 30.0},
    # DALI's defaults are the identity values; a number is used as is (DALI's argument), so
    # only ranges make the key matter.
    "color_twist": {"brightness": (0.6, 1.4), "contrast": (0.6, 1.4), "saturation": (0.5, 1.5),
                    "hue": (-30.0, 30.0)},
}

#: op name -> {check name: reason} for checks the op is known to fail (reported as xfail).
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "rot90": {"check_different_keys_differ":
              "with a fixed k (PARAMS: the kit's images are not square) rot90 is deterministic; "
              "its random k=None mode needs square images and is tested in its own tests"},
}


def _subjects() -> list[object]:
    out: list[object] = []
    for name in augjax.list_ops():
        if name in PARAMS:
            try:
                out.append(augjax.get_op(name).bind(**PARAMS[name]))
                continue
            except AugjaxError:  # a load failure becomes the op's failing check_loads
                pass
        out.append(name)
    return out


@kit_tiers(parametrize_with_checks(
    _subjects(),
    expected_failed_checks=lambda spec: EXPECTED_FAILURES.get(getattr(spec, "name", ""), {}),
))
def test_op_conforms(op, check):
    check(op)


def test_every_registered_op_is_covered():
    names = augjax.list_ops()
    assert "flip" in names and "mixup" in names
    assert set(PARAMS) <= set(names) | {n.split(":", 1)[-1] for n in names}
