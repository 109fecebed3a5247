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
- Every draw is from a Threefry key (:data:`KEY_IMPL`). A key of another implementation
  (``rbg``, ``unsafe_rbg``, ...) becomes one first (:func:`as_threefry`): JAX's batching rule
  for ``rbg`` keys under ``vmap`` draws every sample's bits from the first key
  (jax-ml/jax#19085, #20094), which would tie sample ``i`` to sample 0's key and to the batch
  size. Threefry keys pass unchanged (the same bits as ever).
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from augjax._runtime.store.compile_cache import enable as enable_compile_cache
from augjax.errors import InputError, KeyRequiredError

__all__ = ["keys_from_seeds", "index_seeds", "indices_below", "per_sample_keys", "sample_keys",
           "as_threefry",
           "KEY_IMPL", "SEED_HIGH", "DECISION_TAG", "decision_key"]

#: The key implementation every draw uses, whatever the caller's key or
#: ``jax_default_prng_impl``: Threefry is counter-based under ``vmap`` (each sample's bits from
#: its own key) and gives the same bits on every backend.
KEY_IMPL = "threefry2x32"

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
    if not isinstance(seeds, (jax.Array, np.ndarray)):
        seeds = np.asarray(seeds)
    if seeds.ndim != 2 or seeds.shape[1] != 2 or not jnp.issubdtype(seeds.dtype, jnp.integer):
        raise InputError(
            f"keys_from_seeds: argument 'seeds' expects integers of shape (N, 2), "
            f"got {seeds.dtype} {tuple(seeds.shape)}",
            argument="seeds",
        )
    return _seed_keys(seeds)


@jax.jit
def _seed_keys(seeds: jax.Array) -> jax.Array:
    """``fold_in(key(s[0]), s[1])`` per row: one small program (eager, the vmap dispatched its
    primitives one by one, ~3 ms a call on the CPU; integer arithmetic, the same bits)."""
    seeds = seeds.astype(jnp.uint32)
    return jax.vmap(lambda s: jax.random.fold_in(jax.random.key(s[0], impl=KEY_IMPL), s[1]))(seeds)


@functools.lru_cache(maxsize=None)
def _threefry_dtype():
    return jax.random.key(0, impl=KEY_IMPL).dtype


def _hash_words(words: jax.Array) -> jax.Array:
    """One Threefry key from a key's data words (uint32 ``(m,)``): ``w[0:2]`` as the key, each
    further word folded in."""
    if words.shape[0] < 2:
        words = jnp.concatenate([words, jnp.zeros(2 - words.shape[0], jnp.uint32)])
    key = jax.random.wrap_key_data(words[:2], impl=KEY_IMPL)
    for j in range(2, words.shape[0]):
        key = jax.random.fold_in(key, words[j])
    return key


@jax.jit
def _hash_keys(keys: jax.Array) -> jax.Array:
    data = jax.random.key_data(keys)  # keys.shape + the implementation's key shape
    flat = data.reshape(int(np.prod(keys.shape, dtype=np.int64)), -1)
    return jax.vmap(_hash_words)(flat).reshape(keys.shape)


def as_threefry(keys: jax.Array) -> jax.Array:
    """Typed keys of any implementation as Threefry keys of the same shape (traceable).

    Threefry keys come back as they are. Another implementation's key (``rbg``,
    ``unsafe_rbg``, ...) with data words ``w`` becomes
    ``fold_in(... fold_in(wrap_key_data(w[0:2], impl="threefry2x32"), w[2]) ..., w[-1])``:
    a function of that key's data alone, so sample ``i`` still depends only on its own key.
    """
    if keys.dtype == _threefry_dtype():
        return keys
    return _hash_keys(keys)


@functools.lru_cache(maxsize=None)
def _key_width(impl: str) -> int:
    return int(jax.random.key_data(jax.random.key(0, impl=impl)).shape[-1])


def _wrap_legacy(key: jax.Array, op: str) -> jax.Array:
    """A legacy uint32 key (or batch of keys) as a typed key: width 2 is Threefry's data,
    another width the data of ``jax_default_prng_impl`` when that is its width."""
    width = key.shape[-1] if key.ndim in (1, 2) else None
    default = str(jax.config.jax_default_prng_impl)
    if key.dtype == jnp.uint32 and width == _key_width(KEY_IMPL):
        return jax.random.wrap_key_data(key, impl=KEY_IMPL)
    if key.dtype == jnp.uint32 and width is not None and width == _key_width(default):
        return jax.random.wrap_key_data(key, impl=default)
    hint = (f"; a uint32 key of width {width} is another implementation's data: pass "
            f"jax.random.wrap_key_data(key, impl='rbg') (or the implementation that made it)"
            if key.dtype == jnp.uint32 and width is not None else "")
    raise InputError(
        f"{op}: argument 'key' expects a typed key (jax.random.key) or a legacy uint32 "
        f"key of shape (2,) or (N, 2) (or the width of jax_default_prng_impl={default!r}: "
        f"{_key_width(default)}), got {key.dtype} {tuple(key.shape)}{hint}",
        op=op,
        argument="key",
    )


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
    ``key=keys_from_seeds(...)`` (arrays). ``seed`` takes any 64-bit value (``[0, 2**64)``, a
    uint64 as NumPy's and grain's seeds): one of ``2**32`` or more has its high word mixed in
    too, so it gives other seeds than its low word alone.

    Raises:
        InputError: an index outside ``[0, 2**31)`` or not an integer, an epoch outside
            ``[0, 2**32)`` or a seed outside ``[0, 2**64)``.
    """
    idx = _indices(indices)
    epoch = _whole(epoch, "epoch", 2**32)
    seed = _whole(seed, "seed", 2**64)
    with np.errstate(over="ignore"):
        word = _mix64(np.array([((seed & 0xFFFFFFFF) << 32) | epoch], np.uint64))
        if seed >> 32:  # a seed of 2**32 or more: its high word too
            word = _mix64(word ^ np.uint64(seed >> 32))
    head = int(word[0] >> np.uint64(34))  # 30 bits
    out = np.empty((idx.size, 2), np.int32)
    out[:, 0] = head
    out[:, 1] = idx
    return out


def _indices(indices: object) -> np.ndarray:
    """``indices`` as int64 ``(N,)`` in ``[0, 2**31)``, or InputError."""
    return indices_below(indices, 31, "index_seeds: argument 'indices' expects integers",
                         "indices")


def indices_below(indices: object, bits: int, expects: str, argument: str) -> np.ndarray:
    """``indices`` as int64 ``(N,)`` in ``[0, 2**bits)``, or an InputError that reads
    ``"{expects} in [0, 2**bits), got ..."`` (read before any cast: a uint64 or a Python int
    beyond int64 must not wrap into range)."""
    flat = np.asarray(indices).reshape(-1)
    if not flat.size:
        return flat.astype(np.int64)
    if flat.dtype.kind in "iu":
        ints, lo, hi = True, flat.min(), flat.max()
    else:  # Python ints beyond 64 bits come as an object array
        ints = flat.dtype.kind == "O" and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in flat)
        lo, hi = (min(flat), max(flat)) if ints else (0, 0)
    if not ints or lo < 0 or hi >= 2**bits:
        got = f"indices in [{lo}, {hi}]" if ints else f"dtype {flat.dtype.name}"
        raise InputError(f"{expects} in [0, 2**{bits}), got {got}", argument=argument)
    return flat.astype(np.int64)


def _whole(value: object, name: str, bound: int) -> int:
    """``value`` as an int in ``[0, bound)``, or InputError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or not 0 <= int(value) < bound:
        raise InputError(f"index_seeds: argument {name!r} expects an int in [0, 2**"
                         f"{bound.bit_length() - 1}), got {value!r}", argument=name)
    return int(value)


@functools.lru_cache(maxsize=64)
def _is_key_dtype(dtype) -> bool:
    # jnp.issubdtype on a key dtype costs several microseconds, on every eager op call
    return bool(jnp.issubdtype(dtype, jax.dtypes.prng_key))


def _is_typed(key: jax.Array) -> bool:
    return _is_key_dtype(key.dtype)


def _split_by_index(key: jax.Array, n: int) -> jax.Array:
    """``jax.random.split(key, n)`` the partitionable way (JAX's default) whatever
    ``jax_threefry_partitionable`` says: key ``i`` is a function of (key, i) alone, so
    ``split(key, 16)[:8]`` is ``split(key, 8)`` (the other way numbers them by ``n`` too)."""
    with jax.threefry_partitionable(True):
        return jax.random.split(key, n)


#: The split compiled per batch size: called eagerly it dispatches op by op, which cost more
#: than a small batch's whole augmentation (the same keys, bit for bit).
_split = jax.jit(_split_by_index, static_argnums=1)


def sample_keys(key: object, batch_size: int, op: str, split: bool = True) -> jax.Array:
    """One typed key per sample from ``key``: a single key (typed or legacy uint32 ``(2,)``),
    which is split ``batch_size`` ways, or a batch of ``batch_size`` keys. With ``split=False``
    a single key comes back as one typed key (shape ``()``), for a program that splits it
    itself (:func:`per_sample_keys`): the same keys, without a program of its own. The keys
    are Threefry keys (:func:`as_threefry`); a legacy key as wide as another
    ``jax_default_prng_impl``'s (``rbg``: ``(4,)``) is that implementation's data.

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
            f"{op}: argument 'key' expects a jax.random.key, got {type(key).__name__}"
            + (f" (key=jax.random.key({key}) makes one from it)"
               if isinstance(key, int) and not isinstance(key, bool) else ""),
            op=op,
            argument="key",
        )
    # The split below is a compile of its own: the compilation cache is on before it, so a
    # warm process reads it (views and clips split keys before building their programs).
    enable_compile_cache()
    key = as_threefry(key if _is_typed(key) else _wrap_legacy(key, op))
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


