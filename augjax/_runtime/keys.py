"""Keys: per-sample JAX keys from DALI seeds or a user key, and each op's key in a chain.

The scheme (docs/guide/reproducibility.md):

- In DALI, a DALI RNG op draws two int32 seeds per sample, ``s``; the sample key is
  ``fold_in(key(s[0]), s[1])`` (:func:`keys_from_seeds`). DALI checkpoints that RNG, so a restored
  pipeline continues the same stream.
- On arrays, the caller gives one key (split into one key per sample) or one key per sample.
- The op at position ``i`` of a chain uses ``fold_in(sample_key, i)``; a single op is position 0.
  Adding an op to the end of a chain never changes the draws of the ops before it.
- A batch-level op (mixup) uses the key of sample 0 at its position.
- A composite with key ``k`` (``random_apply``, a policy) draws its own decisions from
  ``decision_key(k)`` (:mod:`augjax.chain._element` gives its elements' keys).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from augjax.errors import InputError, KeyRequiredError

__all__ = ["keys_from_seeds", "index_seeds", "per_sample_keys", "sample_keys",
           "SEED_HIGH", "DECISION_TAG", "decision_key"]

#: ``fold_in`` tag of a composite's own random decisions (distinct from element positions).
DECISION_TAG = 0x5EEDC401


def decision_key(key: jax.Array) -> jax.Array:
    """The key a composite draws its own decisions from."""
    return jax.random.fold_in(key, DECISION_TAG)

#: Seeds are drawn from [0, SEED_HIGH] as INT32 (larger bounds give negative or zero draws in
#: DALI 2.4).
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


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijective 64-bit mix (uint64 in, uint64 out)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def index_seeds(indices, epoch: int = 0, seed: int = 0) -> np.ndarray:
    """Counter-based seeds: int32 ``(N, 2)`` for samples identified by their global index.

    ``seeds[i] = (h(seed, epoch), indices[i])`` with ``h`` a 64-bit mix reduced to 30 bits, so a
    sample's keys (:func:`keys_from_seeds`) depend only on the seed, the epoch and the sample's
    index in the dataset: not on the batch size, the shard it lands on, the number of devices or
    the prefetch depth. Feed them to ops with ``seeds=`` (DALI) or
    ``key=keys_from_seeds(...)`` (arrays).

    Raises:
        InputError: an index outside ``[0, 2**31)``, or a negative epoch or seed.
    """
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= 2**31) or epoch < 0 or seed < 0:
        raise InputError(
            f"index_seeds: expects indices in [0, 2**31) and a non-negative epoch and seed, got "
            f"indices in [{idx.min() if idx.size else '-'}, {idx.max() if idx.size else '-'}], "
            f"epoch={epoch}, seed={seed}",
            argument="indices",
        )
    with np.errstate(over="ignore"):
        word = _mix64(np.array([(int(seed) << 32) | (int(epoch) & 0xFFFFFFFF)], np.uint64))
    head = int(word[0] >> np.uint64(34))  # 30 bits
    out = np.empty((idx.size, 2), np.int32)
    out[:, 0] = head
    out[:, 1] = idx
    return out


@functools.lru_cache(maxsize=64)
def _is_key_dtype(dtype) -> bool:
    # jnp.issubdtype on a key dtype costs several microseconds, on every eager op call
    return bool(jnp.issubdtype(dtype, jax.dtypes.prng_key))


def _is_typed(key: jax.Array) -> bool:
    return _is_key_dtype(key.dtype)


#: ``jax.random.split`` compiled per batch size: called eagerly it dispatches op by op, which
#: cost more than a small batch's whole augmentation (the same keys, bit for bit).
_split = jax.jit(jax.random.split, static_argnums=1)


def sample_keys(key: object, batch_size: int, op: str, split: bool = True) -> jax.Array:
    """One typed key per sample from ``key``: a single key (typed or legacy uint32 ``(2,)``),
    which is split ``batch_size`` ways, or a batch of ``batch_size`` keys. With ``split=False``
    a single key comes back as one typed key (shape ``()``), for a program that splits it
    itself (:func:`per_sample_keys`): the same keys, without a program of its own.

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
    shape = key.shape
    if not shape:
        return _split(key, batch_size) if split else key
    if shape != (batch_size,):
        raise InputError(
            f"{op}: argument 'key' expects one key or {batch_size} keys (one per sample), "
            f"got a key array of shape {tuple(key.shape)}",
            op=op,
            argument="key",
        )
    return key


def per_sample_keys(keys: jax.Array, batch_size: int) -> jax.Array:
    """``keys`` as one key per sample: a single typed key (``sample_keys(..., split=False)``)
    split ``batch_size`` ways, a batch of keys as it is. Traceable."""
    return _split(keys, batch_size) if keys.ndim == 0 else keys


