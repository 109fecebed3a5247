"""augjax: image augmentations in JAX for jax.Array batches and NVIDIA DALI pipelines.

>>> import augjax, jax
>>> out = augjax.ops.flip(images, key=jax.random.key(0), p=0.5)          # doctest: +SKIP
>>> images = augjax.ops.flip(images, p=0.5)    # inside a DALI @pipeline_def  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from augjax import errors, ops
from augjax._core.meta import Meta, Window
from augjax._core.targets import Follow, Sanitize
from augjax._core.param import Param
from augjax._plugins.registry import REGISTRY, OpRecord
from augjax._core.spec import API_VERSION, OpSpec
from augjax._core.step import Step
from augjax.errors import (
    AugjaxError,
    AugjaxWarning,
    BackendUnavailableError,
    InputError,
    InputKindError,
    InputRangeWarning,
    ProgramStoreWarning,
    InputTypeError,
    KeyRequiredError,
    OpConflictError,
    OpDefinitionError,
    OpDisabledError,
    OpIncompatibleError,
    OpNotFoundError,
    OpPackMismatchError,
    ParamError,
    PluginLoadError,
    PluginTimeoutError,
    TorchvisionV1Warning,
    UnsupportedTransformError,
)

if TYPE_CHECKING:
    from augjax._runtime.execution.checking import checking
    from augjax._runtime.store.compile_cache import compilation_cache_dir
    from augjax._runtime.execution.keys import index_seeds, keys_from_seeds
    from augjax._core.magnitude import MagnitudeMap
    from augjax._runtime.execution.program import trace_count
    from augjax._runtime.targets.boxes import convert_boxes
    from augjax._runtime.execution.warmup import warmup
    from augjax.calls import op
    from augjax.jitting import jit
    from augjax.chain import (
        Chain,
        Sequential,
        compose,
        invert,
        matrices,
        random_apply,
        random_choice,
        random_order,
        some_of,
    )
    from augjax.config import from_dict, from_json, to_dict, to_json
    from augjax.interop import from_albumentations, from_torchvision
    from augjax.multiview import Views, views
    from augjax._core.kinds import Clips, Images, Volumes
    from augjax._core.target_kinds import Boxes, Keypoints, Masks
    from augjax.catalog.volume_ops import volume_ops
    from augjax.policies import (
        augmix,
        auto_augment,
        from_timm,
        rand_augment,
        trivial_augment_wide,
    )

# Names from modules that import JAX, loaded on first use: `import augjax` and `augjax list`
# (which must stay fast and import no plugin) then cost no JAX import.
_LAZY = {
    **dict.fromkeys(("from_dict", "from_json", "to_dict", "to_json"), "augjax.config"),
    **dict.fromkeys(("index_seeds", "keys_from_seeds"), "augjax._runtime.execution.keys"),
    "trace_count": "augjax._runtime.execution.program",
    "convert_boxes": "augjax._runtime.targets.boxes",
    "checking": "augjax._runtime.execution.checking",
    "compilation_cache_dir": "augjax._runtime.store.compile_cache",
    "MagnitudeMap": "augjax._core.magnitude",
    "warmup": "augjax._runtime.execution.warmup",
    "jit": "augjax.jitting",
    "op": "augjax.calls",  # @augjax.op makes ops users call (JAX loads with it)
    **dict.fromkeys(("views", "Views"), "augjax.multiview"),
    **dict.fromkeys(("Images", "Clips", "Volumes"), "augjax._core.kinds"),  # pytrees: JAX
    **dict.fromkeys(("Masks", "Boxes", "Keypoints"), "augjax._core.target_kinds"),  # likewise
    "volume_ops": "augjax.catalog.volume_ops",
    "ShardedSource": "augjax.dali._sources",
    **dict.fromkeys(("from_torchvision", "from_albumentations"), "augjax.interop"),
    **dict.fromkeys(("Chain", "Sequential", "compose", "invert", "matrices", "random_apply",
                     "random_choice", "random_order", "some_of"), "augjax.chain"),
    **dict.fromkeys(("augmix", "auto_augment", "from_timm", "rand_augment",
                     "trivial_augment_wide"), "augjax.policies"),
}
_SUBMODULES = ("chain", "policies", "dali", "testing", "catalog", "kernels", "config", "data",
               "grain", "interop", "recipes")

__all__ = [
    "API_VERSION",
    "Chain",
    "Sequential",
    "augmix",
    "auto_augment",
    "compose",
    "invert",
    "jit",
    "matrices",
    "from_dict",
    "from_json",
    "from_timm",
    "from_torchvision",
    "from_albumentations",
    "rand_augment",
    "random_apply",
    "random_choice",
    "random_order",
    "some_of",
    "to_dict",
    "to_json",
    "trivial_augment_wide",
    "views",
    "Views",
    "Images",
    "Clips",
    "Volumes",
    "Masks",
    "Boxes",
    "Keypoints",
    "volume_ops",
    "AugjaxError",
    "AugjaxWarning",
    "BackendUnavailableError",
    "InputError",
    "InputKindError",
    "InputRangeWarning",
    "ProgramStoreWarning",
    "TorchvisionV1Warning",
    "InputTypeError",
    "KeyRequiredError",
    "MagnitudeMap",
    "Meta",
    "Step",
    "Follow",
    "Sanitize",
    "convert_boxes",
    "OpConflictError",
    "OpDefinitionError",
    "OpDisabledError",
    "OpIncompatibleError",
    "OpNotFoundError",
    "OpPackMismatchError",
    "OpRecord",
    "OpSpec",
    "Param",
    "ParamError",
    "PluginLoadError",
    "PluginTimeoutError",
    "UnsupportedTransformError",
    "Window",
    "errors",
    "get_op",
    "index_seeds",
    "keys_from_seeds",
    "list_ops",
    "op",
    "op_records",
    "ops",
    "refresh",
    "trace_count",
    "checking",
    "compilation_cache_dir",
    "warmup",
    "ShardedSource",
]


def list_ops(pattern: str = "*", *, distribution: str | None = None) -> list[str]:
    """Names of the registered ops matching the fnmatch ``pattern`` (and registered by
    ``distribution``, if given), in natural order; a name several distributions register is
    listed by its qualified names ``"distribution:name"``.

    Reads entry-point metadata only: no plugin code is imported.
    """
    return REGISTRY.list_ops(pattern, distribution=distribution)


def get_op(name: str) -> OpSpec:
    """The op named ``name`` (or ``"distribution:name"``), imported on first use."""
    return REGISTRY.get(name)


def op_records(pattern: str = "*", *, include_all: bool = False,
               distribution: str | None = None) -> list[OpRecord]:
    """The registry's records (name, distribution, version, entry point, status, reason);
    failed, incompatible, disabled and conflicting ops only with ``include_all``."""
    return REGISTRY.records(pattern, include_all=include_all, distribution=distribution)


def refresh() -> None:
    """Rescans installed distributions, e.g. after ``pip install`` in a running process."""
    REGISTRY.refresh()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"augjax.{name}")
    if name == "__version__":
        from augjax._plugins.registry import importlib_metadata

        try:
            return importlib_metadata.version("augjax")
        except importlib_metadata.PackageNotFoundError:  # running from a source tree
            return "0+unknown"
    raise AttributeError(f"module 'augjax' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | {"__version__"})
