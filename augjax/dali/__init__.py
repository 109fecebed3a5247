"""The DALI bridge: augjax programs as ``nvidia.dali.plugin.jax.fn.jax_function`` operators.

This is the only package that imports NVIDIA DALI, and only when a DataNode reaches an op.
"""

from augjax.dali._after import augment_batches
from augjax.dali._backend import _dali as dali_modules
from augjax.dali._bridge import apply_dali, dali_function, use_sharding
from augjax.dali._epoch import trim_epoch
from augjax.dali._errors import error_cause, is_pipeline_error
from augjax.dali._nodes import sample_seeds
# the front ends' (clips, views)
from augjax.dali._nodes import from_decoder, node_device, placed  # noqa: F401
from augjax.dali._ragged import ragged_reads  # noqa: F401 - views of images of different sizes
from augjax.dali._sources import ShardedSource

__all__ = ["ShardedSource", "apply_dali", "augment_batches", "dali_function", "dali_modules",
           "error_cause", "is_pipeline_error", "sample_seeds", "trim_epoch", "use_sharding"]
