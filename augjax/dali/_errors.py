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
_RAGGED = 'Assert on "is_uniform(input.shape())"'
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in \w+\n([^\n]*)')
_TAILS = ("\n__notes__", "\nAt:\n", "\nCurrent pipeline object is no longer valid")


def _ragged_cause(text: str) -> str:
    """The cause for images of different sizes reaching an augjax operator that takes one size:
    names the call (the last pipeline-definition frame outside augjax and DALI) and the ops
    that take images of different sizes."""
    from augjax._runtime.ragged.prefix import RAGGED_OPS

    frames = _FRAME.findall(text.split("encountered:", 1)[0])
    user = [f for f in frames if "/augjax/" not in f[0] and "/nvidia/dali/" not in f[0]]
    where = (f" (called at {user[-1][0]}:{user[-1][1]}: {user[-1][2].strip()})" if user
             else "")
    return (f"InputError: an augjax operator got images of different sizes{where}, but only "
            f"a chain that starts with {', '.join(RAGGED_OPS)} takes them (resize with one int "
            f"needs a crop after it); other ops take one image size per batch. Views (augjax."
            f"views, the DINO/SimCLR/BYOL recipes) take them with ragged=True (views(images, "
            f"ragged=True)): a DALI node does not say whether its batch is uniform. On GPU "
            f"images such a chain needs DALI's dynamic executor (exec_dynamic=True, DALI's "
            f"default): the legacy one cannot read their sizes on the CPU. DALI: {_RAGGED} "
            f"failed")


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
    if _RAGGED in cause:
        return _ragged_cause(text)
    where = _OPERATOR.findall(text)
    if where:
        backend, name = where[-1]
        cause += f" (in {backend} operator {name})"
    return cause
