"""Loading one entry point and checking that what it names is a usable op."""

from __future__ import annotations

from typing import Any

from augjax._spec import API_VERSION, OpSpec

__all__ = ["load_entry_point", "api_major"]


def api_major(version: str) -> int | None:
    """The major number of an API version string ("1.0" -> 1), or None if malformed."""
    head = str(version).split(".", 1)[0]
    return int(head) if head.isdigit() else None


def load_entry_point(record: Any) -> tuple[str, str, Any, BaseException | None]:
    """Imports the entry point of ``record``; returns ``(status, reason, spec, error)``.

    Any exception of the import (``SystemExit`` included) is caught and becomes a ``failed``
    status; ``KeyboardInterrupt`` propagates.
    """
    ep = record._ep
    try:
        obj = ep.load()
    except KeyboardInterrupt:
        raise
    except ModuleNotFoundError as err:
        module = ep.value.split(":", 1)[0].strip()
        if err.name and (module == err.name or module.startswith(err.name + ".")):
            reason = f"entry point {ep.value!r} names a module that does not exist ({err})"
        else:
            reason = f"missing dependency {err.name!r}: {err}"
        return "failed", reason, None, err
    except AttributeError as err:
        return "failed", f"entry point {ep.value!r}: attribute not found ({err})", None, err
    except BaseException as err:  # noqa: BLE001 - a plugin may raise anything, SystemExit too
        return "failed", f"importing {ep.value!r} raised {type(err).__name__}: {err}", None, err
    if not isinstance(obj, OpSpec):
        return (
            "failed",
            f"entry point {ep.value!r} is a {type(obj).__name__}, not an augjax op "
            f"(declare it with @augjax.op)",
            None,
            None,
        )
    if obj.name != record.name:
        return (
            "failed",
            f"entry point {record.name!r} points to op {obj.name!r}; the names must match",
            None,
            None,
        )
    major = api_major(obj.api_version)
    if major != api_major(API_VERSION):
        return (
            "incompatible",
            f"op written for authoring API {obj.api_version!r} (major {major}); this augjax "
            f"supports API {API_VERSION} (major {api_major(API_VERSION)})",
            None,
            None,
        )
    return "loaded", "", obj, None
