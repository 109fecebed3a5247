"""The DALI bridge: augjax programs as ``nvidia.dali.plugin.jax.fn.jax_function`` operators.

This is the only package that imports NVIDIA DALI, and only when a DataNode reaches an op.
"""

from augjax.dali._bridge import apply_dali, dali_function, use_sharding
from augjax.dali._errors import error_cause, is_pipeline_error
from augjax.dali._sources import ShardedSource

__all__ = ["ShardedSource", "apply_dali", "dali_function", "error_cause", "is_pipeline_error",
           "use_sharding"]
