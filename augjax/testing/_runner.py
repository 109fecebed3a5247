"""Running the checks: ``op_checks`` (pairs), ``check_op`` (a report), ``parametrize_with_checks``
(pytest), modelled on scikit-learn's ``estimator_checks_generator`` / ``check_estimator`` /
``parametrize_with_checks``."""

from __future__ import annotations

import dataclasses
import fnmatch
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from augjax._core.spec import OpSpec
from augjax._plugins.registry import REGISTRY
from augjax._runtime.execution.bound import BoundOp
from augjax.errors import AugjaxWarning, PluginLoadError
from augjax.testing._checks import CheckSkipped, applicable_checks
from augjax.testing._examples import example_op

__all__ = ["Check", "CheckReport", "CheckResult", "OpCheckError", "OpCheckFailedWarning",
           "check_op", "op_checks", "parametrize_with_checks"]

ExpectedFailures = Mapping[str, str] | Callable[[Any], Mapping[str, str]] | None
STATUSES = ("passed", "failed", "xfail", "xpass", "skipped")


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The outcome of one check on one op.

    ``status`` is ``passed``, ``failed``, ``xfail`` (failed as expected), ``xpass`` (expected
    to fail but passed) or ``skipped``; ``reason`` says why (the error, the expected-failure
    reason or the skip reason).
    """

    op: str
    check: str
    status: str
    reason: str = ""
    exception: BaseException | None = dataclasses.field(default=None, repr=False)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"op": self.op, "check": self.check, "status": self.status,
                "reason": self.reason, "seconds": round(self.seconds, 3)}


class CheckReport(list):
    """The results of :func:`check_op`: a list of :class:`CheckResult`, plus summaries."""

    @property
    def failed(self) -> list[CheckResult]:
        """The checks that failed unexpectedly."""
        return [r for r in self if r.status == "failed"]

    @property
    def ok(self) -> bool:
        """Whether no check failed unexpectedly."""
        return not self.failed

    def format(self) -> str:
        """One line per check, ``check  PASS/FAIL/XFAIL/XPASS/SKIP  reason``, with the whole
        reason (its further lines indented below it)."""
        if not self:
            return "(no checks)"
        labels = {"passed": "PASS", "failed": "FAIL", "xfail": "XFAIL", "xpass": "XPASS",
                  "skipped": "SKIP"}
        width = max(len(r.check) for r in self)
        indent = " " * (2 + width + 2 + 5 + 2)
        lines = []
        for r in self:
            first, *rest = r.reason.strip().splitlines() or [""]
            lines.append(f"  {r.check:<{width}}  {labels[r.status]:<5}  {first}".rstrip())
            lines += [f"{indent}{line}".rstrip() for line in rest]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


class OpCheckError(AssertionError):
    """A conformance check failed (``check_op(..., on_fail="raise")``)."""

    __module__ = "augjax.testing"

    def __init__(self, result: CheckResult) -> None:
        super().__init__(f"op {result.op!r} failed {result.check}: {result.reason}")
        self.result = result


class OpCheckFailedWarning(AugjaxWarning):
    """A conformance check failed (``check_op(..., on_fail="warn")``); ``.result`` has the
    details, as scikit-learn's ``EstimatorCheckFailedWarning``."""

    __module__ = "augjax.testing"

    def __init__(self, result: CheckResult) -> None:
        super().__init__(f"op {result.op!r} failed {result.check}: {result.reason}")
        self.result = result


class Check:
    """One check, callable on a bound op. ``expected_failure`` holds the reason when the check
    is expected to fail for this op. Called under pytest, a check that cannot run here is
    skipped with its reason."""

    def __init__(self, func: Callable[[Any], None], expected_failure: str | None = None) -> None:
        self.func = func
        self.name = self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.expected_failure = expected_failure

    def __call__(self, op: Any) -> None:
        try:
            self.func(op)
        except CheckSkipped as err:
            if "pytest" in sys.modules:
                import pytest

                pytest.skip(str(err))
            raise

    def __repr__(self) -> str:
        return f"<augjax check {self.name}>"


def failure_text(err: BaseException) -> str:
    """``"Type: message"`` for a check's failure; for DALI's "Critical error in pipeline" the
    exception raised inside the operator (an augjax error, the kernel's), not DALI's wrapper."""
    from augjax.dali import error_cause

    cause = error_cause(err)
    if cause is not None:
        return f"the DALI pipeline failed: {cause}"
    return f"{type(err).__name__}: {err}"


def _load_failure(error: PluginLoadError) -> Callable[[Any], None]:
    def check_loads(op: Any) -> None:
        """The op's entry point loads (re-raises the registry's error)."""
        raise error

    return check_loads


def _resolve(op_or_name: Any) -> tuple[str, Any, PluginLoadError | None]:
    if isinstance(op_or_name, BoundOp):
        return op_or_name.name, op_or_name, None
    if isinstance(op_or_name, OpSpec):
        return op_or_name.name, example_op(op_or_name), None
    if isinstance(op_or_name, str):
        try:
            spec = REGISTRY.get(op_or_name)
        except PluginLoadError as err:  # failed, incompatible or disabled: a failing check
            return op_or_name, op_or_name, err
        return op_or_name, example_op(spec), None
    raise TypeError(f"augjax.testing: expected an op name, an OpSpec or a bound op "
                    f"(spec.bind(...)), got {type(op_or_name).__name__}")


def _expected(expected_failed_checks: ExpectedFailures, op: Any) -> Mapping[str, str]:
    if expected_failed_checks is None:
        return {}
    if callable(expected_failed_checks):
        return expected_failed_checks(op) or {}
    return expected_failed_checks


def _selected(name: str, checks: Iterable[str] | str | None) -> bool:
    if checks is None:
        return True
    patterns = [checks] if isinstance(checks, str) else list(checks)
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(name, f"check_{p}")
               for p in patterns)


def op_checks(op_or_name: Any, *, expected_failed_checks: ExpectedFailures = None,
              checks: Iterable[str] | str | None = None) -> Iterator[tuple[Any, Check]]:
    """Yields ``(op, check)`` pairs; call ``check(op)`` to run one.

    Args:
        op_or_name: a registered name (``"name"`` or ``"distribution:name"``), an ``OpSpec``
            (tested with :func:`augjax.testing.example_params`) or a bound op
            (``spec.bind(...)``, tested with exactly its parameters).
        expected_failed_checks: ``{check_name: reason}``, or a callable ``spec -> {...}``;
            those checks carry ``expected_failure`` (xfail).
        checks: fnmatch patterns selecting checks by name (``"*dali*"``, ``"check_declaration"``);
            an op that fails to load yields its failing ``check_loads`` whatever the patterns.

    Raises:
        OpNotFoundError, OpConflictError: the name selects no op or several. An op whose
            entry point does not load yields a single failing ``check_loads``.
    """
    _, op, error = _resolve(op_or_name)
    if error is not None:
        funcs = [_load_failure(error)]
        spec = None
    else:
        funcs = applicable_checks(op)
        spec = op.spec
    expected = _expected(expected_failed_checks, spec)
    for func in funcs:
        # A load failure is never filtered out: ``checks="*dali*"`` must not turn an op that
        # cannot be imported into "no checks ran".
        if error is not None or _selected(func.__name__, checks):
            yield op, Check(func, expected.get(func.__name__))


def check_op(op_or_name: Any, *, on_fail: str | None = "raise",
             expected_failed_checks: ExpectedFailures = None,
             checks: Iterable[str] | str | None = None,
             xfail_strict: bool = False) -> CheckReport:
    """Runs every applicable conformance check on an op and returns the report.

    Args:
        op_or_name: see :func:`op_checks`.
        on_fail: ``"raise"`` raises :class:`OpCheckError` (chained to the cause) at the first
            unexpected failure; ``"warn"`` emits an :class:`OpCheckFailedWarning` per failure;
            ``None`` only records it.
        expected_failed_checks: ``{check_name: reason}`` (or a callable ``spec -> {...}``):
            those failures are recorded as ``xfail``.
        checks: fnmatch patterns selecting checks by name.
        xfail_strict: an expected failure that passes counts as a failure.

    Returns:
        The report, a :class:`CheckReport` (a list of :class:`CheckResult`).
    """
    if on_fail not in ("raise", "warn", None):
        raise ValueError(f"check_op: on_fail must be 'raise', 'warn' or None, got {on_fail!r}")
    label = op_or_name if isinstance(op_or_name, str) else getattr(op_or_name, "name", "?")
    report = CheckReport()
    for op, check in op_checks(op_or_name, expected_failed_checks=expected_failed_checks,
                               checks=checks):
        start = time.perf_counter()
        status, reason, exc = "passed", "", None
        try:
            check.func(op)
        except CheckSkipped as err:
            status, reason = "skipped", str(err)
        except KeyboardInterrupt:
            raise
        except Exception as err:  # noqa: BLE001 - a check failure is data here
            status, reason, exc = "failed", failure_text(err), err
        if check.expected_failure is not None:
            if status == "failed":
                status, reason = "xfail", f"{check.expected_failure} ({reason})"
            elif status == "passed":
                status = "failed" if xfail_strict else "xpass"
                reason = f"expected to fail ({check.expected_failure}) but passed"
        result = CheckResult(label, check.name, status, reason, exc,
                             time.perf_counter() - start)
        report.append(result)
        if status == "failed":
            if on_fail == "raise":
                raise OpCheckError(result) from exc
            if on_fail == "warn":
                warnings.warn(OpCheckFailedWarning(result), stacklevel=2)
    return report


def parametrize_with_checks(ops: Iterable[Any], *,
                            expected_failed_checks: ExpectedFailures = None,
                            checks: Iterable[str] | str | None = None,
                            xfail_strict: bool | None = None) -> Any:
    """A ``pytest.mark.parametrize("op, check", ...)`` over every check of every op, with ids
    ``"opname-checkname"`` (so ``pytest -k check_dali`` runs one check everywhere).

    Example::

        @parametrize_with_checks(augjax.list_ops(distribution="my-pack"))
        def test_my_ops(op, check):
            check(op)

    Expected failures (``{check_name: reason}`` or ``spec -> {...}``) become ``xfail`` marks,
    strict when ``xfail_strict``.
    """
    import pytest

    params = []
    for item in ops:
        label = item if isinstance(item, str) else getattr(item, "name", repr(item))
        for op, check in op_checks(item, expected_failed_checks=expected_failed_checks,
                                   checks=checks):
            marks = []
            if check.expected_failure is not None:
                marks.append(pytest.mark.xfail(reason=check.expected_failure,
                                               strict=bool(xfail_strict)))
            params.append(pytest.param(op, check, id=f"{label}-{check.name}", marks=marks))
    return pytest.mark.parametrize("op, check", params)
