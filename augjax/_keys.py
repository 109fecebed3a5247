"""Keys: per-sample JAX keys from DALI seeds or a user key, and each op's key in a chain.

The scheme (DESIGN.md, "Randomness"):

- In DALI, a DALI RNG op draws two int32 seeds per sample, ``s``; the sample key is
  ``fold_in(key(s[0]), s[1])`` (:func:`keys_from_seeds`). DALI checkpoints that RNG, so a restored
  pipeline continues the same stream.
- On arrays, the caller gives one key (split into one key per sample) or one key per sample.
- The op at position ``i`` of a chain uses ``fold_in(sample_key, i)``; a single op is position 0.
  Adding an op to the end of a chain never changes the draws of the ops before it.
- A batch-level op (mixup) uses the key of sample 0 at its position.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from augjax.errors import InputError, KeyRequiredError

__all__ = ["keys_from_seeds", "sample_keys", "op_keys", "SEED_HIGH"]

#: Seeds are drawn from [0, SEED_HIGH] as INT32 (larger bounds give negative or zero draws in
#: DALI 2.4, DALI.md section 3.2).
SEED_HIGH = 2**30


def keys_from_seeds(seeds: jax.Array) -> jax.Array:
    """Turns int32 seeds of shape ``(N, 2)`` (what augjax draws in DALI) into ``N`` typed keys.

    Use it to reproduce a DALI pipeline's randomness on arrays: ``op(x, key=keys_from_seeds(s))``.
    """
    seeds = jnp.asarray(seeds)
    if seeds.ndim != 2 or seeds.shape[1] != 2 or not jnp.issubdtype(seeds.dtype, jnp.integer):
        raise InputError(
            f"keys_from_seeds: argument 'seeds' expects integers of shape (N, 2), "
            f"got {seeds.dtype} {tuple(seeds.shape)}",
            argument="seeds",
        )
    seeds = seeds.astype(jnp.uint32)
    return jax.vmap(lambda s: jax.random.fold_in(jax.random.key(s[0]), s[1]))(seeds)


def _is_typed(key: jax.Array) -> bool:
    return jnp.issubdtype(key.dtype, jax.dtypes.prng_key)


def sample_keys(key: object, batch_size: int, op: str) -> jax.Array:
    """One typed key per sample from ``key``: a single key (typed or legacy uint32 ``(2,)``),
    which is split ``batch_size`` ways, or a batch of ``batch_size`` keys.

    Raises:
        KeyRequiredError: ``key`` is None.
        InputError: ``key`` is not a key, or a key batch of the wrong length.
    """
    if key is None:
        raise KeyRequiredError(
            f"{op}: a random op on arrays needs key=jax.random.key(...) "
            f"(one key, or one per sample); got key=None"
        )
    if isinstance(key, np.ndarray):
        key = jnp.asarray(key)
    if not isinstance(key, jax.Array):
        raise InputError(
            f"{op}: argument 'key' expects a jax.random.key, got {type(key).__name__}",
            op=op,
            argument="key",
        )
    if not _is_typed(key):
        if key.dtype != jnp.uint32 or key.ndim not in (1, 2) or key.shape[-1] != 2:
            raise InputError(
                f"{op}: argument 'key' expects a typed key (jax.random.key) or a legacy uint32 "
                f"key of shape (2,) or (N, 2), got {key.dtype} {tuple(key.shape)}",
                op=op,
                argument="key",
            )
        key = jax.random.wrap_key_data(key)
    if key.ndim == 0:
        return jax.random.split(key, batch_size)
    if key.shape != (batch_size,):
        raise InputError(
            f"{op}: argument 'key' expects one key or {batch_size} keys (one per sample), "
            f"got a key array of shape {tuple(key.shape)}",
            op=op,
            argument="key",
        )
    return key


def op_keys(keys: jax.Array, position: int) -> jax.Array:
    """The keys of the op at ``position`` in a chain, one per sample."""
    return jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, position)
