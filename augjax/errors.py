"""The exceptions and warnings augjax raises.

Every error a user can trigger is an :class:`AugjaxError`; each subclass also derives from the
builtin exception a Python user would expect (``LookupError`` for an unknown op, ``TypeError``
for a wrong input type, ``ValueError`` for a bad value), so ``except ValueError`` keeps working.
Messages name the op, the argument, what was expected and what came.
"""

from __future__ import annotations

__all__ = [
    "AugjaxError",
    "AugjaxWarning",
    "BackendUnavailableError",
    "InputError",
    "InputKindError",
    "InputRangeWarning",
    "InputTypeError",
    "ProgramStoreWarning",
    "KeyRequiredError",
    "OpConflictError",
    "OpDefinitionError",
    "OpIncompatibleError",
    "OpDisabledError",
    "OpNotFoundError",
    "OpPackMismatchError",
    "ParamError",
    "PluginLoadError",
    "PluginTimeoutError",
    "TorchvisionV1Warning",
    "UnsupportedTransformError",
]


class AugjaxError(Exception):
    """Base class of every error augjax raises."""

    __module__ = "augjax"


class AugjaxWarning(UserWarning):
    """Base class of every warning augjax emits."""

    __module__ = "augjax"


class InputRangeWarning(AugjaxWarning):
    """Float images with values outside [0, 1] (0..255 data given as float, or data already
    normalized); :func:`augjax.checking` turns it into an :class:`InputError`."""

    __module__ = "augjax"


class ProgramStoreWarning(AugjaxWarning):
    """A stored program or a stored lifting decision was refused (damaged, another program's,
    not the user's, or writable by others) and is rebuilt, or the store itself was turned off
    (a folder it cannot trust)."""

    __module__ = "augjax"


class TorchvisionV1Warning(AugjaxWarning):
    """:func:`augjax.from_torchvision` was given torchvision v1 transforms
    (``torchvision.transforms.X``); they convert as their ``torchvision.transforms.v2`` twins."""

    __module__ = "augjax"


class OpNotFoundError(AugjaxError, LookupError, AttributeError):
    """No op of that name is registered (also an ``AttributeError``, so ``hasattr(augjax.ops, x)`` works)."""

    __module__ = "augjax"

    def __init__(self, message: str, *, name: str, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.suggestions = suggestions


class OpPackMismatchError(OpNotFoundError):
    """An op was asked for from one distribution (``"pack-a:op"``, as configs write a pack's op)
    but that distribution does not register it; others do. augjax refuses to build another
    pack's op of the same name in its place.

    Attributes:
        name: the qualified name asked for (``"pack-a:op"``).
        op: the op's plain name.
        wanted: the distribution asked for (normalised, ``"pack-a"``).
        found: the qualified names that do register the op (``("pack-b:op",)``).
    """

    __module__ = "augjax"

    def __init__(self, message: str, *, name: str, op: str, wanted: str,
                 found: tuple[str, ...]) -> None:
        super().__init__(message, name=name, suggestions=found)
        self.op = op
        self.wanted = wanted
        self.found = found


class OpConflictError(AugjaxError, LookupError):
    """Several distributions register the same op name and none was chosen."""

    __module__ = "augjax"

    def __init__(self, message: str, *, name: str, candidates: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.candidates = candidates


class OpDefinitionError(AugjaxError, TypeError):
    """An op declaration is malformed (bad name, params that do not match the kernel, ...)."""

    __module__ = "augjax"


class ParamError(AugjaxError, ValueError):
    """An op parameter is out of range or of the wrong kind."""

    __module__ = "augjax"

    def __init__(self, message: str, *, op: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.param = param


class InputError(AugjaxError, ValueError):
    """The data given to an op has the wrong rank, dtype, layout, shape or type."""

    __module__ = "augjax"

    def __init__(self, message: str, *, op: str | None = None, argument: str | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.argument = argument


class InputTypeError(InputError, TypeError):
    """The data given to an op is not a ``jax.Array``, a NumPy array or a DALI ``DataNode``."""

    __module__ = "augjax"


class InputKindError(InputError):
    """A call's images whose kind (images, clips) an array cannot say: a plain array of rank 5
    is clips ``(N, T, H, W, C)`` or 3D volumes ``(N, D, H, W, C)``, never guessed. Wrap it
    (``augjax.Clips(x)``) or name its layout (``layout="FHWC"``).

    Attributes:
        shape: the shape of the array given.
        kinds: the wrappers that would say it (``("augjax.Clips",)``).
    """

    __module__ = "augjax"

    def __init__(self, message: str, *, op: str | None = None, argument: str | None = None,
                 shape: tuple[int, ...] = (), kinds: tuple[str, ...] = ()) -> None:
        super().__init__(message, op=op, argument=argument)
        self.shape = shape
        self.kinds = kinds


class KeyRequiredError(AugjaxError, TypeError):
    """A random op was called on arrays without an explicit ``key``."""

    __module__ = "augjax"


class PluginLoadError(AugjaxError, ImportError):
    """An op's entry point could not be loaded (import error, not an op, ...)."""

    __module__ = "augjax"

    def __init__(
        self,
        message: str,
        *,
        op: str,
        distribution: str | None = None,
        version: str | None = None,
        entry_point: str | None = None,
    ) -> None:
        super().__init__(message)
        self.op = op
        self.distribution = distribution
        self.version = version
        self.entry_point = entry_point


class OpIncompatibleError(PluginLoadError):
    """An op was written for an authoring-API major version this augjax does not support."""

    __module__ = "augjax"


class OpDisabledError(PluginLoadError):
    """An op's distribution is disabled by the environment (autoload off, deny or allow list)."""

    __module__ = "augjax"


class PluginTimeoutError(PluginLoadError):
    """Importing an op's entry point did not finish within ``AUGJAX_PLUGIN_IMPORT_TIMEOUT``
    seconds (a plugin that hangs at import). The import may still be running in a background
    thread; the op stays failed until :func:`augjax.refresh`.

    Attributes:
        timeout: the limit in seconds.
    """

    __module__ = "augjax"

    def __init__(self, message: str, *, op: str, timeout: float,
                 distribution: str | None = None, version: str | None = None,
                 entry_point: str | None = None) -> None:
        super().__init__(message, op=op, distribution=distribution, version=version,
                         entry_point=entry_point)
        self.timeout = timeout


class BackendUnavailableError(AugjaxError, ImportError):
    """An optional backend (NVIDIA DALI) is not installed."""

    __module__ = "augjax"


class UnsupportedTransformError(AugjaxError, ValueError):
    """Another library's transform (or one of its settings) that augjax cannot convert exactly.

    ``transform`` is its class name, ``argument`` the setting (None for the whole transform),
    ``nearest`` the closest augjax op or policy (None if there is none).
    """

    __module__ = "augjax"

    def __init__(self, message: str, *, transform: str, argument: str | None = None,
                 nearest: str | None = None) -> None:
        super().__init__(message)
        self.transform = transform
        self.argument = argument
        self.nearest = nearest
