"""Views: several differently augmented copies of each image, in named groups, in one program.

Self-supervised recipes (DINO, SimCLR, BYOL) make several *views* of every image, each with its
own random draws, and sometimes of different sizes::

    views = augjax.views({"global": (2, chain_224), "local": (6, chain_96)})
    out = views(images, key=key)      # {"global": (N, 2, 224, 224, C), "local": (N, 6, 96, 96, C)}

A group is ``(count, step)`` (``count`` views through one chain, op or policy) or a list of steps,
one per view (DINO's two global views differ: blur p=1.0 on the first, p=0.1 and solarize on the
second). Every view of a group must give the same shape and dtype (they are stacked on axis 1).

**Keys.** Image ``i`` has the per-sample key ``k_i`` that any augjax op would use: ``key`` split
``N`` ways (or the ``N`` keys given; in DALI ``keys_from_seeds(seeds)``). View ``v`` of the group
at position ``g`` (the dict's order) draws from ``fold_in(fold_in(k_i, g), v)``, exactly as its
step called alone on the image with that key would (:meth:`Views.view_keys` gives them). So every
view of every image has its own key, and adding a group at the end changes no earlier draw.

**One program.** All groups run in one jitted program (on the CPU, as augjax's own calls do, the
sampler and the apply program are two programs, so that a call equals
``views.apply(images, params=views.sample(images, key=key))`` bitwise by construction); views
through the same step are batched together (the images repeated), so eight views cost one
program over 8N images, not eight. In a DALI ``@pipeline_def`` the call adds ONE ``jax_function``
with one output per group (samples ``(V, h, w, C)``, layout ``"FHWC"``).

**Images of different sizes.** A list of HWC arrays of different sizes, and in DALI a node of
decoded images with ``ragged=True``, take views whose steps all start with an op that reads
images of different sizes and returns one size (``random_resized_crop``, the crops, ``resize``
with a crop after it): each view's window is drawn from the image's true size, as DINO's and
SimCLR's reference code crop the decoded image, and the view is its step called on the list with
the view's key (:mod:`augjax.ragged_views`). ``ragged=True`` is needed in DALI because a node
does not say whether its batch is uniform: the default keeps the one crossing above, whose
pixels equal the arrays path bitwise; with it DALI's own operators read the windows.

**As a step.** A :class:`Views` answers the :class:`~augjax.Step` protocol
(``isinstance(views, augjax.Step)``) and takes a step's call keywords (``key``, ``seeds``,
``seed``, ``device``, ``layout``, ``per_frame``, ``output``), but it is a step that runs on its
own: images in, a dict of view batches out. What it does not support, each refused with a
typed error naming the views: being an element of ``compose`` or of a composite (``random_apply``,
...), of another views or of ``augment_batches`` / ``warmup`` (its per-sample members ``after``,
``draw``, ``run``, ``program``, ... raise :class:`~augjax.InputError`; a views inside views is a
:class:`~augjax.ParamError` when built); targets (masks, boxes, keypoints), labels, layout
``"CHW"``, clips and volumes (:class:`~augjax.InputError`); ``apply`` on a list of images of
different sizes (as for every step: ``apply`` takes one batch); a config form (``to_config``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.declaration import HWC
from augjax._core.kinds import Images, Kind, check_rank, pil_hint, torch_hint
from augjax._core.limits import MAX_VIEWS
from augjax._core.step import Step
from augjax.kernels.boundary import barrier, kept_in_caller
from augjax._runtime.execution import padding
from augjax._runtime.execution.ahead import compile_apply, first_call
from augjax._runtime.store.compile_cache import enable as enable_compile_cache
from augjax._runtime.execution.program import build_program
from augjax._runtime.execution.checking import check_batch, checking_enabled
from augjax._runtime.execution.inputs import (as_array, check_arguments, check_layout_shape,
                                             committed)
from augjax._runtime.execution.keys import sample_keys
from augjax.errors import InputError, ParamError
from augjax.view_groups import runs, stacked, view_keys
from augjax.views_step import ViewsStep

__all__ = ["Views", "views"]


@dataclasses.dataclass(frozen=True)
class Views(ViewsStep):
    """Named groups of views (build with :func:`views`). ``groups`` holds ``(name, steps)``
    pairs, one step per view, in order."""

    groups: tuple[tuple[str, tuple[Any, ...]], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The groups' names, in order."""
        return tuple(name for name, _ in self.groups)

    def counts(self) -> dict[str, int]:
        """How many views each group makes."""
        return {name: len(steps) for name, steps in self.groups}

    # -- keys -------------------------------------------------------------------------------
    def view_keys(self, key: Any, n: int) -> dict[str, jax.Array]:
        """Each view's key per image: ``{name: keys (N, V)}``, key ``[i, v]`` of the group at
        position ``g`` being ``fold_in(fold_in(k_i, g), v)`` with ``k_i`` image ``i``'s key
        (``key`` split ``n`` ways, or the ``n`` keys given)."""
        keys = view_keys(sample_keys(key, n, "views"), self.counts_tuple())
        return {name: keys[g] for g, name in enumerate(self.names)}

    def counts_tuple(self) -> tuple[int, ...]:
        return tuple(len(steps) for _, steps in self.groups)

    # -- calls ------------------------------------------------------------------------------
    def __call__(self, images: Any, *, key: Any = None, seeds: Any = None,
                 seed: int | None = None, device: str | None = None, layout: str = HWC,
                 per_frame: bool = False, output: str | None = None, ragged: bool = False,
                 **targets: Any) -> dict[str, Any]:
        """The views of ``images``.

        Args:
            images: a batch (N, H, W, C) (``jax.Array`` / NumPy, ``augjax.Images``, a DALI
                dynamic-mode ``Batch``: :mod:`augjax.dali.dynamic`), a list of HWC images of
                different sizes (:mod:`augjax.ragged_views`), or a DALI ``DataNode`` inside a
                ``@pipeline_def``.
            key: arrays: one ``jax.random.key`` (split per image) or one key per image.
            seeds: DALI only: int32 ``(2,)`` seeds per sample to use instead of drawing them.
            seed: DALI only: seed of the DALI RNG op that draws the per-sample seeds.
            device: DALI only: ``"cpu"`` or ``"gpu"`` (default: the images' device).
            layout: ``"HWC"`` only (the views are stacked on axis 1 of HWC batches).
            per_frame: refused (clips only).
            output: ``"jax"`` or ``"dali"`` (dynamic-mode batches); default: the kind that
                came in.
            ragged: DALI only: the node holds images of different sizes (decoded JPEGs); every
                view's window is then read by DALI's operators from the image's true size.
            **targets: refused (views take images only).

        Returns:
            ``{name: (N, V, h, w, C)}`` on arrays; in DALI ``{name: DataNode}`` (dynamic mode:
            ``{name: Batch}``) whose samples are ``(V, h, w, C)`` (layout ``"FHWC"``).
        """
        from augjax._runtime.execution.dispatch import is_data_node
        from augjax.dali import dynamic

        images = _plain(images, layout, per_frame, targets, "views")
        adapted = dynamic.adapt("views", (images,), key=key, seeds=seeds, seed=seed,
                                device=device, output=output, random=True, out_layout="FHWC")
        if adapted is not None:
            return adapted.finish(self(adapted.inputs[0], key=adapted.key))

        if is_data_node(images):
            from augjax.views_dali import views_dali

            return views_dali(self, images, call=_call, key=key, seeds=seeds, seed=seed,
                              device=device, ragged=ragged)
        check_arguments("views", nodes=False, key=key, seeds=seeds, seed=seed, device=device)
        if ragged:
            raise InputError("views: argument 'ragged' is for DALI nodes; on arrays, images of "
                             "different sizes come as a list", op="views", argument="ragged")
        enable_compile_cache()  # before the first compile here (the transfer, the keys)
        if _is_list(images):
            import augjax.ragged_views as ragged_views

            return ragged_views.call_list(self, images, key)
        images = _batch(images)
        keys = sample_keys(key, images.shape[0], "views")
        return _call(self, images, keys)

    def sample(self, images: Any, *, key: Any, layout: str = HWC,
               per_frame: bool = False) -> dict[str, tuple[Any, ...]]:
        """What each view draws: ``{name: (params of view 0, params of view 1, ...)}``, each
        what the view's step's ``sample`` gives for the images (a leading axis N).
        ``images``: a batch, its shape (a tuple), or a list of images of different sizes."""
        from augjax.dali import dynamic

        images = _plain(images, layout, per_frame, {}, "views.sample")
        images = dynamic.adapt("views", (images,), output="jax").inputs[0]  # ragged: a list
        if _is_list(images):
            import augjax.ragged_views as ragged_views

            return ragged_views.sample_list(self, images, key)
        if isinstance(images, tuple) and all(isinstance(d, int) for d in images):
            images = jax.ShapeDtypeStruct(images, np.uint8)
        elif not isinstance(images, jax.ShapeDtypeStruct):
            images = _batch(images)
        check_rank(len(images.shape), Images.rank(HWC), "views.sample", "images",
                   Images.describe(HWC), images.shape)
        keys = sample_keys(key, images.shape[0], "views")
        struct = jax.ShapeDtypeStruct(images.shape, images.dtype)
        params = _sampler(self, struct.shape, jnp.dtype(struct.dtype).name)(committed(keys))
        return dict(zip(self.names, params))

    def apply(self, images: Any, *, params: Mapping[str, Sequence[Any]], layout: str = HWC,
              per_frame: bool = False, **targets: Any) -> dict[str, Any]:
        """The views of ``images`` with given ``params`` (from :meth:`sample`, maybe edited):
        deterministic, no key. A dynamic-mode batch gives batches (:mod:`augjax.dali.dynamic`).
        A list of images of different sizes is refused, as by every step's ``apply``."""
        from augjax.dali import dynamic

        images = _plain(images, layout, per_frame, targets, "views.apply")
        if _is_list(images):
            raise InputError("views.apply: argument 'images' expects one batch (N, H, W, C), "
                             "got a list: apply takes no images of different sizes (as every "
                             "step's apply); call views(images, key=...) on the list, and "
                             "views.sample(images, key=...) for its draws", op="views",
                             argument="images")

        adapted = dynamic.adapt("views", (images,), uniform=True, out_layout="FHWC")
        if adapted is not None:
            return adapted.finish(self.apply(adapted.inputs[0], params=params))
        images = _batch(images)
        if not isinstance(params, Mapping) or set(params) != set(self.names):
            got = sorted(params) if isinstance(params, Mapping) else type(params).__name__
            raise InputError(f"views.apply: argument 'params' expects a dict with the groups "
                             f"{list(self.names)} (what views.sample returns), got {got}",
                             op="views", argument="params")
        for name, steps in self.groups:
            given = params[name]
            if not isinstance(given, (tuple, list)) or len(given) != len(steps):
                raise InputError(f"views.apply: params[{name!r}] expects {len(steps)} view "
                                 f"params, got {type(given).__name__}", op="views",
                                 argument="params")
        ordered = tuple(tuple(params[name]) for name in self.names)
        return _applier(self)(committed(images), jax.tree_util.tree_map(committed, ordered))

    # -- inspection -------------------------------------------------------------------------
    def __repr__(self) -> str:
        parts = ", ".join(f"{name!r}: {len(steps)} view(s)" for name, steps in self.groups)
        return f"Views({{{parts}}})"


def views(groups: Mapping[str, Any]) -> Views:
    """Named groups of views of one batch, each group its own step(s) and count.

    Args:
        groups: ``{name: (count, step)}`` for ``count`` views through one step (an op, a chain,
            a policy), or ``{name: [step, step, ...]}`` for one step per view; at most 256
            views in all (``augjax._core.limits.MAX_VIEWS``).

    Returns:
        The views, a :class:`Views`; ``views(images, key=key)`` gives ``{name: (N, V, h, w, C)}``.

    Raises:
        ParamError: an empty mapping, a count that is not a positive int, more than 256 views,
            a view that is not an augjax step, or a step that mixes labels (mixing belongs
            after the views).
    """
    if not isinstance(groups, Mapping) or not groups:
        raise ParamError(f"views: argument 'groups' expects a non-empty dict "
                         f"{{name: (count, step)}} or {{name: [step, ...]}}, got {groups!r}",
                         op="views", param="groups")
    out = []
    total = 0
    for name, value in groups.items():
        if not isinstance(name, str) or not name:
            raise ParamError(f"views: group names must be non-empty strings, got {name!r}",
                             op="views", param="groups")
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (int, np.integer)) \
                and not isinstance(value[0], bool):
            count, step = value
            if count < 1:
                raise ParamError(f"views: group {name!r} expects a count >= 1, got {count}",
                                 op="views", param="groups")
            _check_total(name, total + int(count))
            steps = (step,) * int(count)
        elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], Step) \
                and not isinstance(value[0], Step):
            raise ParamError(f"views: group {name!r} expects (count, step) with an int count "
                             f">= 1, got {type(value[0]).__name__} {value[0]!r}", op="views",
                             param="groups")
        elif isinstance(value, (list, tuple)) and value:
            _check_total(name, total + len(value))
            steps = tuple(value)
        else:
            raise ParamError(f"views: group {name!r} expects (count, step) or a list of steps, "
                             f"got {value!r}", op="views", param="groups")
        total += len(steps)
        for v, step in enumerate(steps):
            _check_step(step, name, v)
        out.append((name, steps))
    return Views(tuple(out))


def _check_total(name: str, total: int) -> None:
    """At most :data:`~augjax._core.limits.MAX_VIEWS` views, checked before any is built."""
    if total > MAX_VIEWS:
        raise ParamError(f"views: argument 'groups' expects at most {MAX_VIEWS} views in all "
                         f"(augjax's bound, augjax._core.limits.MAX_VIEWS), got {total} with "
                         f"group {name!r}", op="views", param="groups")


def _check_step(step: Any, name: str, v: int) -> None:
    if isinstance(step, Views):
        raise ParamError(f"views: group {name!r} view {v} is a Views; views do not nest (a "
                         f"view is one op, chain or policy)", op="views", param="groups")
    if not isinstance(step, Step):
        raise ParamError(f"views: group {name!r} view {v} expects an augjax op, chain or policy, "
                         f"got {type(step).__name__}", op="views", param="groups")
    if "labels" in step.inputs:
        raise ParamError(f"views: group {name!r} view {v} mixes labels ({step.name}); views "
                         f"take images only: mix the views' batches after", op="views",
                         param="groups")


def _batch(images: Any) -> jax.Array:
    if isinstance(images, np.ndarray):
        if images.dtype == object:  # np.array(images) of images of different sizes
            as_array(images, "views", "images")  # its typed error: pass list(x)
        # float values outside [0, 1] on the host: read for free (a warning), as an op's call
        check_batch(images, "views", on_host=True, strict=checking_enabled())
        images = jnp.asarray(images)
    if not isinstance(images, jax.Array):
        raise InputError(f"views: argument 'images' expects a jax.Array or NumPy batch "
                         f"(N, H, W, C), got {type(images).__name__}"
                         f"{torch_hint(images, 'views')}{pil_hint(images)}", op="views",
                         argument="images")
    check_rank(images.ndim, Images.rank(HWC), "views", "images", Images.describe(HWC),
               images.shape)
    check_layout_shape(tuple(images.shape), HWC, "views", takes_layout=False)
    return images


#: Keywords that name targets or labels (refused by views with their own message), and the
#: call's keywords (suggested for a typo).
_TARGET_NAMES = ("masks", "boxes", "boxes_valid", "keypoints", "keypoints_valid", "labels",
                 "mask_fill", "boxes_format", "boxes_normalized", "sanitize")
_CALL_NAMES = ("key", "seeds", "seed", "device", "layout", "per_frame", "output", "ragged",
               "params")


def _plain(images: Any, layout: str, per_frame: bool, targets: Mapping[str, Any],
           where: str) -> Any:
    """The images as views take them (an ``augjax.Images`` unwrapped), the call keywords that
    views refuse refused."""
    unknown = sorted(set(targets) - set(_TARGET_NAMES))
    if unknown:  # a keyword views do not take at all: a typo first
        import difflib

        name = unknown[0]
        near = difflib.get_close_matches(name, _CALL_NAMES, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise InputError(f"{where}: unknown argument {name!r}{hint} (views take images, key=, "
                         f"ragged=, layout= and the other keywords of augjax.views' call)",
                         op="views", argument=name)
    if targets:
        raise InputError(f"{where}: takes images only, got {', '.join(sorted(targets))}= "
                         f"(targets and labels follow one step: run the views, then each "
                         f"group's batch through what needs them)", op="views",
                         argument=sorted(targets)[0])
    if per_frame:
        raise InputError(f"{where}: argument 'per_frame' is for clips (augjax.Clips); views "
                         f"take images (N, H, W, C)", op="views", argument="per_frame")
    if isinstance(images, Kind):
        if not isinstance(images, Images):
            raise InputError(f"{where}: argument 'images' expects images (N, H, W, C), got "
                             f"{images!r}", op="views", argument="images")
        layout, images = images.layout, images.array
    if layout != HWC:
        raise InputError(f"{where}: argument 'layout' expects 'HWC' (the views are stacked on "
                         f"axis 1 of HWC batches), got {layout!r}", op="views",
                         argument="layout")
    return images


def _is_list(images: Any) -> bool:
    """Whether ``images`` is a list of images (of different sizes), not a shape tuple."""
    return isinstance(images, (list, tuple)) and not (
        images and all(isinstance(d, (int, np.integer)) for d in images))


def _repeat(images: jax.Array, count: int) -> jax.Array:
    """Image-major copies: ``(N*count, ...)``, row ``i*count + v`` is image ``i``."""
    return images if count == 1 else jnp.repeat(images, count, axis=0)


def _sample_all(self: Views, images: Any, keys: jax.Array) -> tuple[tuple[Any, ...], ...]:
    """Per group, per view: the view's params with a leading axis N. Traceable."""
    n = images.shape[0]
    per_group = view_keys(keys, self.counts_tuple())
    out = []
    for g, (_, steps) in enumerate(self.groups):
        params: list[Any] = [None] * len(steps)
        for step, vs in runs(steps):
            count = len(vs)
            ks = per_group[g][:, jnp.asarray(vs)].reshape(n * count)
            struct = jax.ShapeDtypeStruct((n * count, *images.shape[1:]), images.dtype)
            p = step.sample(struct, key=ks)
            for j, v in enumerate(vs):
                params[v] = jax.tree_util.tree_map(
                    lambda leaf, j=j, c=count: leaf.reshape(n, c, *leaf.shape[1:])[:, j], p)
        out.append(tuple(params))
    return tuple(out)


def _apply_all(self: Views, images: jax.Array,
               params: tuple[tuple[Any, ...], ...]) -> dict[str, jax.Array]:
    """The views from their params, stacked per group on axis 1. Traceable."""
    n = images.shape[0]
    out = {}
    for (name, steps), group in zip(self.groups, params):
        views_out: list[Any] = [None] * len(steps)
        for step, vs in runs(steps):
            count = len(vs)
            p = jax.tree_util.tree_map(
                lambda *leaves, c=count: jnp.stack(leaves, axis=1).reshape(
                    n * c, *leaves[0].shape[1:]), *[group[v] for v in vs])
            y = step.apply(_repeat(images, count), params=p)
            y = y.reshape(n, count, *y.shape[1:])
            for j, v in enumerate(vs):
                views_out[v] = y[:, j]
        out[name] = stacked(name, views_out)
    return out


def _build(self: Views, role: str, function: Any, kind: str, **config: Any):
    """A views program (:func:`~augjax._runtime.execution.program.build_program`), named in
    augjax's program store by every view's step, in order, and the groups' names and counts."""
    steps = tuple(step for _, group in self.groups for step in group)
    config = {"groups": [[name, len(group)] for name, group in self.groups], **config}
    return build_program(role, function, kind, steps, config)


@functools.lru_cache(maxsize=64)
def _sampler(self: Views, shape: tuple[int, ...], dtype: str):
    struct = jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))
    # The XLA options of augjax's own sampler and apply programs (see their modules): on the
    # CPU, samplers compile unoptimised and the apply keeps its fusion boundaries. Kept in the
    # program store: a warm process loads them instead of tracing.
    return _build(self, "sample", lambda keys: _sample_all(self, struct, keys), "views_sample",
                  shape=shape, dtype=dtype)


@functools.lru_cache(maxsize=64)
def _applier(self: Views):
    return _build(self, "apply", lambda images, params: _apply_all(self, images, params),
                  "views_apply")


@functools.lru_cache(maxsize=64)
def _fused(self: Views):
    def program(images, keys):
        params = barrier(_sample_all(self, images, keys))
        return _apply_all(self, images, params)

    return _build(self, "call", program, "views_call")


def _on_cpu(images: jax.Array) -> bool:
    if isinstance(images, jax.core.Tracer):
        return True
    return all(d.platform == "cpu" for d in images.devices())


def _call(self: Views, images: jax.Array, keys: jax.Array) -> dict[str, jax.Array]:
    """The views with per-image ``keys``: on the CPU ``apply(sample(...))`` as two programs
    (bitwise replay by construction), elsewhere one program (one dispatch). A batch of a size
    not run before goes through the partial-batch policy as a chain's does
    (:func:`augjax._runtime.execution.padding.call`; views hold per-sample steps only, so a
    padded batch's real samples are those of the size's own program, bitwise)."""
    if isinstance(images, jax.core.Tracer):  # inside a caller's trace: one traced program
        return _apply_all(self, images, kept_in_caller(_sample_all(self, images, keys)))
    # committed: arrays and DALI (committed arrays) share the programs (inputs.committed)
    images, keys = committed(images), committed(keys)
    return padding.call(_runner(self), (), (images, keys))


@functools.lru_cache(maxsize=64)
def _runner(self: Views):
    """``run(images, keys)``: the views' programs for one batch, one function per views (the
    partial-batch policy keeps its records of compiled batch sizes per program)."""

    def run(images: jax.Array, keys: jax.Array) -> dict[str, jax.Array]:
        if not _on_cpu(images):
            return _fused(self)(images, keys)
        shape, dtype = tuple(images.shape), jnp.dtype(images.dtype).name
        sampler, applier = _sampler(self, shape, dtype), _applier(self)
        join = None
        if first_call(applier, (shape, dtype)):  # its compile beside the sampler's (ahead.py)
            join = compile_apply(lambda: sampler.out_shapes(keys), keys, applier,
                                 lambda p: (images, p))
        params = sampler(keys)
        if join is not None:
            join()
        return applier(images, params)

    return run
