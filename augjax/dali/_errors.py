"""Reading DALI's pipeline errors: the exception raised inside an operator (an augjax
``InputError``, a kernel's ``ValueError``, ...) is buried in DALI's ``RuntimeError("Critical
error in pipeline: ... encountered: <the error> ... Current pipeline object is no longer
valid.")`` between its traceback and JAX's notes; :func:`error_cause` digs it out."""

from __future__ import annotations

import re

__all__ = ["error_cause", "is_pipeline_error"]

_MARK = "Critical error in pipeline"
_OPERATOR = re.compile(r"Error in (\w+) operator `([^`]+)`")
# What DALI and JAX append after the operator's exception text.
_TAILS = ("\n__notes__", "\nAt:\n", "\nCurrent pipeline object is no longer valid")


def is_pipeline_error(err: BaseException) -> bool:
    """Whether ``err`` is DALI's "Critical error in pipeline" ``RuntimeError``."""
    return isinstance(err, RuntimeError) and _MARK in str(err)


def error_cause(err: BaseException | str) -> str | None:
    """The exception raised inside a DALI operator, as ``"Type: message"`` followed by
    ``" (in <backend> operator <name>)"``, from DALI's "Critical error in pipeline" message;
    ``None`` when ``err`` is not such an error or names no cause.

    >>> error_cause(RuntimeError("Critical error in pipeline:\\nError in CPU operator `f`,\\n"
    ...                          "...\\nencountered:\\n\\nValueError: bad\\nAt:\\n  x.py(1)"))
    'ValueError: bad (in CPU operator f)'
    """
    text = err if isinstance(err, str) else str(err)
    if _MARK not in text or "encountered:" not in text:
        return None
    cause = text.rsplit("encountered:", 1)[1]
    cut = min((i for i in (cause.find(t) for t in _TAILS) if i >= 0), default=len(cause))
    cause = cause[:cut].strip()
    if not cause:
        return None
    where = _OPERATOR.findall(text)
    if where:
        backend, name = where[-1]
        cause += f" (in {backend} operator {name})"
    return cause
