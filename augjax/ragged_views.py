"""Views of images of different sizes: a list of HWC arrays, or in DALI a batch of decoded
images (``fn.decoders.image``), each view's crop window drawn from the image's true size.

DINO's and SimCLR's reference code crop every view from the decoded image as it is
(``RandomResizedCrop`` on the PIL image): a non-square image gives crops of its own aspect
statistics, never those of a square it was squashed into. Here every view's step must start
with an op that takes images of different sizes and returns one size (``random_resized_crop``,
``random_crop``, ``center_crop``, ``resize`` with a crop after it: the image path's ragged
prefix, :mod:`augjax._runtime.ragged.prefix`); the view is then exactly its step called on the
list with the view's key (``fold_in(fold_in(k_i, g), v)``, as for a batch):

- **arrays**: views through the same step are read together (the list repeated, image-major),
  by the step's own call on a list (:func:`augjax._runtime.ragged.read.read_list`, then the
  rest of the chain as one program): one read and one program per run of views through one
  step, not one program for all groups;
- **DALI**: one small CPU ``jax_function`` draws every view's window (the plan of the image
  path, :func:`augjax.dali.ragged_reads`), DALI's ``fn.slice`` / ``fn.resize`` read each view
  (memory bounded by the image and the output), and ONE ``jax_function`` runs the rest of every
  view's chain (its ops after the prefix, at their chain positions, with the view's keys) and
  stacks the groups (samples ``(V, h, w, C)``, layout ``"FHWC"``). The windows, every draw and
  every pixel of a crop that copies (``random_crop``, ``center_crop``) equal the arrays path
  bitwise; a window that resamples is resampled by DALI (the image path's DALI tolerance,
  docs/guide/ragged.md).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from augjax._runtime.execution.ahead import at_once, first_call
from augjax._runtime.execution.keys import keys_from_seeds, sample_keys
from augjax._runtime.ragged.prefix import as_arrays, check_list, ragged_count, ragged_message
from augjax.chain import Chain
from augjax.errors import AugjaxError, InputError, InputRangeWarning
from augjax.kernels.embedded import owned
from augjax.view_groups import run_keys, runs, split_views, stacked, view_keys

__all__ = ["call_dali", "call_list", "prefixes", "sample_list"]


def prefixes(views: Any) -> tuple[tuple[tuple[Any, ...], int, int], ...]:
    """Per view, in order (group by group): ``(the steps its call runs, the chain position of
    the first, how many leading steps read the images at their own sizes)``.

    Raises:
        InputError: a view whose step does not start with an op that takes images of different
            sizes and returns one size (named by group and view).
    """
    out = []
    for name, steps in views.groups:
        for v, step in enumerate(steps):
            program, start = step.program()
            program = tuple(program)
            try:
                n = ragged_count(program, step.name)
            except AugjaxError as err:
                first = program[0].name if program else step.name
                message = (str(err) if program and program[0].ragged
                           else ragged_message(first, "images of different sizes"))
                raise InputError(f"views: group {name!r} view {v}: {message}", op="views",
                                 argument="images") from err
            out.append((program, start, n))
    return tuple(out)


def _run_keys(per_group: dict[int, jax.Array], g: int, vs: list[int]) -> jax.Array:
    """The keys of views ``vs`` of group ``g``, image-major: ``(N * len(vs),)``."""
    return run_keys(per_group[g], tuple(vs))


def _list(images: Any) -> list[Any]:
    arrays = as_arrays(images, "views")
    check_list(arrays, "views")
    return arrays  # (each view's step checks the list as its first op takes it)


def _per_view(views: Any, images: Sequence[Any], key: Any, run: Any) -> dict[str, list[Any]]:
    """Per group, per view: ``run(step, repeated, keys)``'s result for that view, where each run
    of views through one step is one call on the list repeated per view (image-major) with
    the views' keys; the result's leaves ``(N * count, ...)`` are split back per view."""
    prefixes(views)
    arrays = _list(images)
    n = len(arrays)
    per_group = view_keys(sample_keys(key, n, "views"), views.counts_tuple())

    def group(g: int, steps: tuple[Any, ...]) -> list[Any]:
        got: list[Any] = [None] * len(steps)
        for step, vs in runs(steps):
            count = len(vs)
            y = run(step, [a for a in arrays for _ in range(count)], _run_keys(per_group, g, vs))
            for v, view in zip(vs, split_views(y, n, count)):
                got[v] = view
        return got

    # A first call on these sizes compiles each group's programs (DINO: the global and local
    # crops' reads and chains): the groups then run on helper threads where a core is free, so
    # their compiles overlap (ahead.at_once; the same programs, the same bits). Later calls run
    # them one after the other, as before.
    jobs = [functools.partial(group, g, steps) for g, (_, steps) in enumerate(views.groups)]
    sizes = tuple((a.shape, a.dtype.str) for a in arrays)
    with _one_range_report():
        got = at_once(jobs) if first_call(views, ("list", sizes)) else [job() for job in jobs]
    return dict(zip(views.names, got))


@contextlib.contextmanager
def _one_range_report():
    """Each run checks the list as its first op takes it: float values outside [0, 1] were
    reported once per run (three times for DINO). The warnings of the runs are held and given
    again, the range's first report only."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    reported = False
    for w in caught:
        if issubclass(w.category, InputRangeWarning):
            if reported:
                continue
            reported = True
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def call_list(views: Any, images: Sequence[Any], key: Any) -> dict[str, Any]:
    """``views(images, key=key)`` on a list of HWC arrays of different sizes."""
    got = _per_view(views, images, key, lambda step, repeated, keys: step(repeated, key=keys))
    return {name: stacked(name, views_out) for name, views_out in got.items()}


def sample_list(views: Any, images: Sequence[Any], key: Any) -> dict[str, tuple[Any, ...]]:
    """``views.sample(images, key=key)`` on a list of HWC arrays of different sizes: per group,
    per view, its step's ``sample`` on the list with the view's keys (a leading axis N)."""
    got = _per_view(views, images, key,
                    lambda step, repeated, keys: step.sample(repeated, key=keys))
    return {name: tuple(params) for name, params in got.items()}


def _tail(program: tuple[Any, ...], start: int, n: int) -> Chain | None:
    """The view's steps after its ragged prefix, at their chain positions (None: none)."""
    return Chain(program[n:], start + n) if len(program) > n else None


@functools.lru_cache(maxsize=64)
def _tail_function(views: Any, device: str):
    """The ``jax_function`` ``(one batch per view..., seeds) -> one output per group``: each
    view's :func:`_tail` with the view's keys, views through one step together."""
    from augjax.dali import dali_modules
    _, _, jax_fn = dali_modules()
    tails = [_tail(*p) for p in prefixes(views)]
    names = views.names

    def function(*arrays):
        *batches, seeds = arrays
        per_group = view_keys(keys_from_seeds(seeds), views.counts_tuple())
        outs, at = [], 0
        for g, (name, steps) in enumerate(views.groups):
            got: list[Any] = [None] * len(steps)
            for _, vs in runs(steps):
                count, tail = len(vs), tails[at + vs[0]]
                x = jnp.stack([batches[at + v] for v in vs], axis=1)
                n = x.shape[0]
                x = x.reshape(n * count, *x.shape[2:])
                y = x if tail is None else tail(x, key=_run_keys(per_group, g, vs))
                y = y.reshape(n, count, *y.shape[1:])
                for j, v in enumerate(vs):
                    got[v] = y[:, j]
            outs.append(stacked(name, got))
            at += len(steps)
        return tuple(outs)

    return jax_fn.jax_function(owned(function), num_outputs=len(names),
                               output_layouts=tuple("FHWC" for _ in names), device=device)


def call_dali(views: Any, images: Any, *, seeds: Any, seed: int | None,
              device: str) -> dict[str, Any]:
    """The views of a DALI ``DataNode`` of images of different sizes (``device`` checked):
    every view's window read by DALI's operators, the rest in one ``jax_function``. ``seeds``:
    a CPU DataNode of per-sample seeds, or None to draw them (on the CPU, with ``seed``)."""
    from augjax.dali import node_device, placed, ragged_reads, sample_seeds

    if seeds is not None and node_device(seeds) != "cpu":
        raise InputError("views: images of different sizes need the per-sample seeds on the "
                         "CPU (their windows are drawn there); pass seeds= from a CPU operator",
                         op="views", argument="seeds")
    seeds = seeds if seeds is not None else sample_seeds(device="cpu", seed=seed)
    found = prefixes(views)
    folds = [(g, v) for g, (_, steps) in enumerate(views.groups) for v in range(len(steps))]
    reads = tuple((program[:n], start, fold) for (program, start, n), fold in zip(found, folds))
    batches = ragged_reads(reads, images, seeds)
    out = _tail_function(views, device)(*(placed(b, device) for b in batches),
                                               placed(seeds, device))
    out = out if isinstance(out, (list, tuple)) else (out,)
    return dict(zip(views.names, out))
