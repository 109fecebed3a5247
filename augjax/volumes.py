"""3D volumes ``(N, D, H, W, C)``: the volume ops' declaration and runtime, and the front end of
:class:`augjax.Volumes` for every other step (2D ops per slice).

**A volume op** (:class:`VolumeOp`, declared in ``augjax/catalog/volume_*.py``) is params-first
like an image op: a *sampler* ``sampler(key, meta, *, mask, **config) -> dict`` draws one
volume's values (``meta`` a :class:`VolumeMeta`; ``mask`` that volume's mask ``(D, H, W, 1)``
as it reaches the op, for samplers that read it, else None) and a deterministic *kernel*
``kernel(volume, params, meta, **config)`` applies them to one volume ``(D, H, W, C)``; masks
follow through ``mask_kernel`` (the same map, nearest) and keypoints ``(K, 3)`` (voxel indices
in the array's axis order ``(d, h, w)``, i.e. ``(z, y, x)``, as MONAI orders points of a
channel-first array's spatial axes) through ``points``. The runtime vmaps and jits them. An
op's ``active(params)`` says whether a volume's draws change it: a volume that drew nothing
comes back as it was, bit for bit, and on the CPU (a loop over the batch with a conditional per
op) the op is not computed for it, as batchgeneratorsv2 skips a transform a sample did not draw.

**Randomness**: the call's key is split per volume
(:func:`augjax._runtime.execution.keys.sample_keys`, as for images: volume ``i``'s draws depend only
on ``(key, i)``); the op at chain position ``j`` draws from ``fold_in(k_i, j)``. A call runs the
sampler program, then the apply program: ``op.apply(x, params=op.sample(x, key=k))`` equals ``op(x,
key=k)`` bitwise by construction.

**Other steps on volumes** (``augjax.ops.flip(augjax.Volumes(x), key=k)``, chains, policies):
the volume's slices along D are the frames of a clip (:mod:`augjax.volume_slices`): one draw
per volume shared by its slices, ``per_frame=True`` one draw per slice; masks ``(N, D, H, W)``
follow.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.declaration import DHWC
from augjax._core.kinds import Kind, check_rank
from augjax._runtime.execution.inputs import check_arguments
from augjax._runtime.execution.keys import keys_from_seeds, sample_keys
from augjax.errors import InputError, ParamError
from augjax._runtime.execution.program import build_program, once_cache
from augjax.kernels.platform import platform_dependent

__all__ = ["LAYOUT", "VolumeChain", "VolumeMeta", "VolumeOp", "VolumeStep", "apply_volumes",
           "call_dali", "chain", "sample_volumes"]

#: One volume's layout (DALI's ``fn.readers.numpy`` reads volumes as ``DHWC``).
LAYOUT = DHWC


class VolumeMeta(NamedTuple):
    """What a volume sampler knows before reading voxels: one volume's ``depth``, ``height``,
    ``width``, ``channels`` and ``dtype`` name."""

    depth: int
    height: int
    width: int
    channels: int
    dtype: str

    @property
    def spatial(self) -> tuple[int, int, int]:
        return (self.depth, self.height, self.width)


@dataclasses.dataclass(frozen=True, eq=False)
class VolumeOp:
    """A declared volume op (see the module docstring). ``defaults`` are its configuration
    (static: compile-time constants); ``check(name, config) -> config`` validates a call's
    configuration (raising :class:`~augjax.errors.ParamError`); ``out_shape(meta, **config)``
    gives the output's ``(D, H, W)`` when it is not the input's; ``reads_mask`` marks a sampler
    that reads the mask."""

    name: str
    kernel: Callable[..., jax.Array]
    sampler: Callable[..., dict[str, jax.Array]]
    defaults: Mapping[str, Any]
    check: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    mask_kernel: Callable[..., jax.Array] | None = None
    points: Callable[..., jax.Array] | None = None
    out_shape: Callable[..., tuple[int, int, int]] | None = None
    reads_mask: bool = False
    doc: str = ""
    #: ``active(params) -> bool``: whether one volume's draws change it (None: always). A
    #: volume that drew nothing comes back as it was, bit for bit, and on the CPU the op is not
    #: computed for it (batchgeneratorsv2 skips a transform a sample did not draw).
    active: Callable[[dict[str, jax.Array]], jax.Array] | None = None
    #: ``shared(params, meta, **config) -> dict``: what the kernel, mask kernel and points all
    #: read (the affine's coordinates), once per volume, as more ``params`` (XLA kept it twice).
    shared: Callable[..., dict[str, jax.Array]] | None = None

    def bind(self, **config: Any) -> VolumeStep:
        """This op configured with ``config`` (validated now), for calls and chains."""
        unknown = sorted(set(config) - set(self.defaults))
        if unknown:
            raise ParamError(f"{self.name}: unknown parameter(s) {unknown}; it takes "
                             f"{sorted(self.defaults)}", op=self.name, param=unknown[0])
        full = {**self.defaults, **config}
        if self.check is not None:
            full = self.check(self.name, full)
        return VolumeStep(self, tuple(sorted((k, _frozen(v)) for k, v in full.items())))

    def __call__(self, volumes: Any, *, key: Any = None, masks: Any = None,
                 keypoints: Any = None, seeds: Any = None, seed: int | None = None,
                 device: str | None = None, **config: Any) -> Any:
        """Applies the op to a batch of volumes (``augjax.Volumes`` or an ``(N, D, H, W, C)``
        float array); with ``masks`` ``(N, D, H, W)`` / ``keypoints`` ``(N, K, 3)`` a dict
        ``{"images", "masks"?, "keypoints"?}``. In a DALI pipeline (``DataNode`` volumes):
        ``seeds`` / ``seed`` / ``device`` instead of ``key`` (:func:`call_dali`)."""
        return self.bind(**config)(volumes, key=key, masks=masks, keypoints=keypoints,
                                   seeds=seeds, seed=seed, device=device)

    def sample(self, volumes: Any, *, key: Any, masks: Any = None, **config: Any) -> Any:
        """The values a call with ``key`` draws (a dict of arrays with a leading axis N)."""
        return self.bind(**config).sample(volumes, key=key, masks=masks)

    def apply(self, volumes: Any, *, params: Any, masks: Any = None, keypoints: Any = None,
              **config: Any) -> Any:
        """Applies given (recorded or edited) values; deterministic."""
        return self.bind(**config).apply(volumes, params=params, masks=masks,
                                         keypoints=keypoints)

    def __repr__(self) -> str:
        return f"augjax volume op {self.name!r}"

    def __reduce__(self) -> Any:
        """By reference where the op is its module's attribute of its name (the catalog's ops:
        grain's workers unpickle the same op, and its programs' cache keys stay equal), else
        by value."""
        module = sys.modules.get(self.kernel.__module__)
        if module is not None and getattr(module, self.name, None) is self:
            return (_op_named, (self.kernel.__module__, self.name))
        return (VolumeOp, tuple(getattr(self, f.name) for f in dataclasses.fields(self)))


def _op_named(module: str, name: str) -> VolumeOp:
    return getattr(importlib.import_module(module), name)


def _frozen(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    return v


@dataclasses.dataclass(frozen=True)
class VolumeStep:
    """A volume op with its validated configuration."""

    op: VolumeOp
    items: tuple[tuple[str, Any], ...]
    #: What the program store's key calls this step (with :meth:`to_config`).
    kind: ClassVar[str] = "volume_op"

    @property
    def name(self) -> str:
        return self.op.name

    def to_config(self) -> dict[str, Any]:
        """This step as the program store's key writes it: the op's name, where its
        functions live (two packs' ops of one name differ) and its configuration."""
        where = sorted({f"{f.__module__}.{f.__qualname__}" for f in (
            self.op.kernel, self.op.sampler, self.op.mask_kernel, self.op.points,
            self.op.out_shape, self.op.active, self.op.shared) if f is not None})
        return {"name": self.name, "functions": where, "config": [list(i) for i in self.items]}

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.items)

    def __call__(self, volumes: Any, *, key: Any = None, masks: Any = None,
                 keypoints: Any = None, seeds: Any = None, seed: int | None = None,
                 device: str | None = None) -> Any:
        return VolumeChain((self,), self.name)(volumes, key=key, masks=masks,
                                               keypoints=keypoints, seeds=seeds, seed=seed,
                                               device=device)

    def sample(self, volumes: Any, *, key: Any, masks: Any = None) -> Any:
        return VolumeChain((self,)).sample(volumes, key=key, masks=masks)[0]

    def apply(self, volumes: Any, *, params: Any, masks: Any = None, keypoints: Any = None
              ) -> Any:
        return VolumeChain((self,)).apply(volumes, params=(params,), masks=masks,
                                          keypoints=keypoints)

    def kernel_params(self, params: dict[str, jax.Array], meta: VolumeMeta) -> dict[str, Any]:
        """One volume's ``params`` and the op's :attr:`VolumeOp.shared` values (``meta``: it
        as it reaches the op)."""
        shared = self.op.shared
        return params if shared is None else {**params, **shared(params, meta, **self.config)}

    def out_meta(self, meta: VolumeMeta) -> VolumeMeta:
        if self.op.out_shape is None:
            return meta
        return meta._replace(**dict(zip(("depth", "height", "width"),
                                        self.op.out_shape(meta, **self.config))))


@dataclasses.dataclass(frozen=True)
class VolumeChain:
    """Volume ops applied in order as one sampler program and one apply program; op ``j``
    draws from ``fold_in(k_i, j)``. ``sample`` gives one dict per op."""

    steps: tuple[VolumeStep, ...]
    name: str = "volume_chain"

    def __call__(self, volumes: Any, *, key: Any = None, masks: Any = None,
                 keypoints: Any = None, seeds: Any = None, seed: int | None = None,
                 device: str | None = None) -> Any:
        """The chain on a batch of volumes with ``key``; on DALI ``DataNode`` volumes (a
        pipeline being defined) with per-sample ``seeds`` (or drawn from ``seed``), on
        ``device`` (:func:`call_dali`)."""
        from augjax._runtime.execution.dispatch import is_data_node

        if is_data_node(volumes.array if isinstance(volumes, Kind) else volumes):
            return call_dali(self, volumes, masks=masks, keypoints=keypoints, key=key,
                             seeds=seeds, seed=seed, device=device)
        check_arguments(self.name, nodes=False, key=key, seeds=seeds, seed=seed, device=device)
        params = self.sample(volumes, key=key, masks=masks)
        return self.apply(volumes, params=params, masks=masks, keypoints=keypoints)

    def sample(self, volumes: Any, *, key: Any, masks: Any = None) -> Any:
        return sample_volumes(self.steps, volumes, key=key, masks=masks, name=self.name)

    def apply(self, volumes: Any, *, params: Any, masks: Any = None, keypoints: Any = None
              ) -> Any:
        return apply_volumes(self.steps, volumes, params=tuple(params), masks=masks,
                             keypoints=keypoints, name=self.name)


def chain(*steps: VolumeStep | VolumeOp, name: str = "volume_chain") -> VolumeChain:
    """Volume ops (bound, or unbound with their defaults) as one :class:`VolumeChain`."""
    bound = []
    for s in steps:
        if isinstance(s, VolumeOp):
            s = s.bind()
        if not isinstance(s, VolumeStep):
            raise InputError(f"{name}: expects volume ops (augjax.volume_ops.*), got {s!r}",
                             op=name, argument="steps")
        bound.append(s)
    return VolumeChain(tuple(bound), name)


# -- inputs ---------------------------------------------------------------------------------

def _volumes(x: Any, name: str) -> tuple[jax.Array, type[Kind] | None]:
    """The batch ``(N, D, H, W, C)`` and the kind it came as (None: a plain array)."""
    kind = None
    if isinstance(x, Kind):
        if x.layout != LAYOUT:
            raise InputError(f"{name}: argument 'volumes' expects volumes (augjax.Volumes, "
                             f"layout {LAYOUT!r}), got {x!r}", op=name, argument="volumes")
        kind, x = type(x), x.array
    if isinstance(x, np.ndarray):
        x = jnp.asarray(x)
    if not isinstance(x, jax.Array):
        raise InputError(f"{name}: argument 'volumes' expects an array (N, D, H, W, C), got "
                         f"{type(x).__name__}", op=name, argument="volumes")
    check_rank(x.ndim, len(LAYOUT) + 1, name, "volumes", "(N, D, H, W, C)", x.shape)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise InputError(f"{name}: argument 'volumes' expects floating volumes (float32, "
                         f"float16, bfloat16), got {x.dtype}", op=name, argument="volumes")
    return x, kind


def _masks(m: Any, shape: tuple[int, ...], name: str) -> jax.Array | None:
    if m is None:
        return None
    m = jnp.asarray(m)
    if m.shape != shape[:4]:
        raise InputError(f"{name}: argument 'masks' expects shape {shape[:4]} (N, D, H, W), "
                         f"got {tuple(m.shape)}", op=name, argument="masks")
    if not (jnp.issubdtype(m.dtype, jnp.integer) or m.dtype == jnp.bool_):
        raise InputError(f"{name}: argument 'masks' expects integer or bool labels, got "
                         f"{m.dtype}", op=name, argument="masks")
    return m  # (N, D, H, W): the programs give it a channel axis (no copies outside them)


def _points(p: Any, n: int, name: str) -> jax.Array | None:
    if p is None:
        return None
    p = jnp.asarray(p, jnp.float32)
    if p.ndim != 3 or p.shape[0] != n or p.shape[2] != 3:
        raise InputError(f"{name}: argument 'keypoints' expects shape (N={n}, K, 3) voxel "
                         f"coordinates (d, h, w), got {tuple(p.shape)}", op=name,
                         argument="keypoints")
    return p


def _meta(shape: tuple[int, ...], dtype: Any) -> VolumeMeta:
    return VolumeMeta(*shape[:4], jnp.dtype(dtype).name)


# -- programs -------------------------------------------------------------------------------

@once_cache(maxsize=256)  # built once even when threads ask together
def _sampler(steps: tuple[VolumeStep, ...], meta: VolumeMeta, with_mask: bool):
    reads = [i for i, s in enumerate(steps) if s.op.reads_mask]
    last_read = reads[-1] if reads and with_mask else -1

    def one(key, mask):
        m, params = meta, []
        for j, step in enumerate(steps):
            p = step.op.sampler(jax.random.fold_in(key, j), m,
                               mask=mask if step.op.reads_mask else None, **step.config)
            params.append(p)
            if j < last_read and step.op.mask_kernel is not None:
                mask = step.op.mask_kernel(mask, step.kernel_params(p, m), m, **step.config)
            m = step.out_meta(m)
        return tuple(params)

    def program(keys, mask):
        return jax.vmap(one, in_axes=(0, 0 if with_mask else None))(
            keys, None if mask is None else mask[..., None])

    # optimised (the crop's sampler reads the whole mask); kept in the program store
    return build_program("sample_fields", program, "volumes", steps,
                         {"program": "sample", "meta": list(meta), "with_mask": with_mask})


def _run_step(step: VolumeStep, meta: VolumeMeta, state: tuple, params: Any) -> tuple:
    """One op on one volume's ``(volume, mask, points)`` (absent targets None)."""
    volume, mask, points = state
    params = step.kernel_params(params, meta)
    if mask is not None and step.op.mask_kernel is not None:
        mask = step.op.mask_kernel(mask, params, meta, **step.config)
    if points is not None and step.op.points is not None:
        points = step.op.points(points, params, meta, **step.config)
    return step.op.kernel(volume, params, meta, **step.config).astype(volume.dtype), mask, points


def _one_volume(steps: tuple[VolumeStep, ...], meta: VolumeMeta, conditional: bool,
                volume, mask, points, params):
    """The chain on one volume. An op with ``active`` that keeps the shape leaves a volume
    that drew nothing as it was: through ``lax.cond`` (``conditional``, the CPU's loop over
    the batch: the op is not computed for it) or a select (batched forms); same bits."""
    state, m = (volume, mask, points), meta
    for step, p in zip(steps, params):
        run = functools.partial(_run_step, step, m)
        if step.op.active is None or step.out_meta(m) != m:
            state = run(state, p)
        elif conditional:
            state = jax.lax.cond(step.op.active(p), run, lambda s, _: s, state, p)
        else:
            on = step.op.active(p)
            state = jax.tree_util.tree_map(lambda new, old: jnp.where(on, new, old),
                                           run(state, p), state)
        m = step.out_meta(m)
        # each op's output kept in memory (augjax.kernels.boundary): XLA:CPU fused an op into
        # the next one's reductions and computed it again per read (nnU-Net's chain 2.4x its
        # ops alone, 2 x 64^3)
        state = jax.lax.optimization_barrier(state)
    return state


@once_cache(maxsize=256)
def _applier(steps: tuple[VolumeStep, ...], meta: VolumeMeta, with_mask: bool,
             with_points: bool):
    """The apply program: on the CPU a loop over the volumes (each op computed only for the
    volumes that drew it), elsewhere the chain vmapped over the batch."""
    axes = (0, 0 if with_mask else None, 0 if with_points else None, 0)

    def batched(volume, mask, points, params):
        return jax.vmap(functools.partial(_one_volume, steps, meta, False), in_axes=axes)(
            volume, mask, points, params)

    def looped(volume, mask, points, params):
        return jax.lax.map(lambda a: _one_volume(steps, meta, True, *a),
                           (volume, mask, points, params))

    def program(volume, mask, points, params):
        mask = None if mask is None else mask[..., None]  # (D, H, W, 1) per volume
        out, mask, points = platform_dependent(volume, mask, points, params, cpu=looped,
                                               default=batched)
        return out, None if mask is None else mask[..., 0], points

    return build_program("apply", program, "volumes", steps,
                         {"program": "apply", "meta": list(meta), "with_mask": with_mask,
                          "with_points": with_points})


def sample_volumes(steps: tuple[VolumeStep, ...], volumes: Any, *, key: Any, masks: Any = None,
                   name: str = "volume_chain") -> tuple[dict[str, jax.Array], ...]:
    """What ``steps`` draw for ``volumes`` with ``key``: one dict per step, leading axis N."""
    x, _ = _volumes(volumes, name)
    mask = _masks(masks, x.shape, name)
    keys = sample_keys(key, x.shape[0], name)
    with_mask = mask is not None and any(s.op.reads_mask for s in steps)
    return _sampler(tuple(steps), _meta(x.shape[1:], x.dtype), with_mask)(
        keys, mask if with_mask else None)


def apply_volumes(steps: tuple[VolumeStep, ...], volumes: Any, *, params: Any, masks: Any = None,
                  keypoints: Any = None, name: str = "volume_chain") -> Any:
    """``steps`` applied with ``params`` (one dict per step); the volumes come back as the
    kind they came in; with targets a dict ``{"images", "masks"?, "keypoints"?}``."""
    x, kind = _volumes(volumes, name)
    mask = _masks(masks, x.shape, name)
    points = _points(keypoints, x.shape[0], name)
    if len(params) != len(steps):
        raise InputError(f"{name}: argument 'params' expects {len(steps)} dict(s), one per op, "
                         f"got {len(params)}", op=name, argument="params")
    program = _applier(tuple(steps), _meta(x.shape[1:], x.dtype), mask is not None,
                       points is not None)
    out, mask, points = program(x, mask, points, tuple(params))
    out = kind.of(out, LAYOUT) if kind is not None else out
    if masks is None and keypoints is None:
        return out
    result = {"images": out}
    if mask is not None:
        result["masks"] = mask
    if points is not None:
        result["keypoints"] = points
    return result


# -- DALI: volumes read by fn.readers.numpy (samples (D, H, W, C), layout DHWC) ---------------

def _dali_layout(layout: Any, name: str) -> None:
    """The volumes' DALI layout (``fn.get_property(..., key="layout")``, uint8 per sample):
    none (``fn.readers.numpy`` tags none) or ``"DHWC"``."""
    tagged = bytes(np.asarray(layout)[0].astype(np.uint8)).decode() if len(layout) else ""
    if tagged not in ("", LAYOUT):
        raise InputError(f"{name}: argument 'volumes' expects DALI samples in layout "
                         f"{LAYOUT!r} (D, H, W, C), got layout {tagged!r}", op=name,
                         argument="volumes")


@functools.lru_cache(maxsize=256)
def _dali_function(chained: VolumeChain, with_masks: bool, with_points: bool, device: str):
    """The ``jax_function`` of ``chained``: ``(volumes, layouts, seeds[, masks][, keypoints])``
    -> ``(volumes[, masks][, keypoints])``; its body is the array call with
    ``key=keys_from_seeds(seeds)``, run eagerly (DALI calls it with each batch's arrays), so it
    runs the array path's programs."""
    from augjax.dali import dali_modules

    _, _, jax_fn = dali_modules()
    layouts = (LAYOUT,) + (("DHW",) if with_masks else ()) + (("",) if with_points else ())

    def function(volumes, layout, seeds, *targets):
        _dali_layout(layout, chained.name)
        rest = list(targets)
        masks = rest.pop(0) if with_masks else None
        if masks is not None and masks.ndim == 5 and masks.shape[-1] == 1:
            masks = masks[..., 0]  # (D, H, W, 1) samples, as a reader of label maps gives
        points = rest.pop(0) if with_points else None
        out = chained(volumes, key=keys_from_seeds(seeds), masks=masks, keypoints=points)
        if not (with_masks or with_points):
            return (out,)
        return (out["images"],) + tuple(out[k] for k, on in (("masks", with_masks),
                                                             ("keypoints", with_points)) if on)

    return jax_fn.jax_function(function, num_outputs=len(layouts), output_layouts=layouts,
                               device=device)


def call_dali(chained: VolumeChain, volumes: Any, *, masks: Any, keypoints: Any, key: Any,
              seeds: Any, seed: int | None, device: str | None) -> Any:
    """``chained`` on DALI volumes (a ``DataNode`` of samples ``(D, H, W, C)``, as
    ``fn.readers.numpy`` reads ``.npy`` volumes; or ``augjax.Volumes(node)``), inside a
    ``@pipeline_def``: one ``jax_function`` whose call equals the array path with
    ``key=augjax.keys_from_seeds(seeds)``. ``seeds``: a node of int32 ``(2,)`` per sample
    (:func:`augjax.dali.sample_seeds`), drawn here (from ``seed``) when not given; ``masks``
    (samples ``(D, H, W)`` or ``(D, H, W, 1)``) and ``keypoints`` (``(K, 3)``) are nodes too.
    Returns the volumes' node, or with targets a dict of nodes ``{"images", "masks"?,
    "keypoints"?}``. The samples' rank, dtype and DALI layout (none, or ``"DHWC"``) are
    checked per batch (an :class:`~augjax.errors.InputError` inside the pipeline; read it with
    :func:`augjax.dali.error_cause`)."""
    from augjax.dali import dali_modules, node_device, placed, sample_seeds

    fn, _, _ = dali_modules()  # the install hint first
    name = chained.name
    node = volumes.array if isinstance(volumes, Kind) else volumes
    device = check_arguments(name, nodes=True, key=key, seeds=seeds, seed=seed, device=device,
                             source=node_device(node))
    tagged = getattr(node, "layout", None)  # DALI's layout metadata, where the node has it
    if isinstance(tagged, str) and tagged not in ("", LAYOUT):
        raise InputError(f"{name}: argument 'volumes' is tagged layout {tagged!r} by DALI; "
                         f"volumes are {LAYOUT!r} (D, H, W, C)", op=name, argument="volumes")
    if seeds is None:
        seeds = sample_seeds(device=device, seed=seed)
    args = [placed(node, device), placed(fn.get_property(node, key="layout"), device),
            placed(seeds, device)]
    args += [placed(t, device) for t in (masks, keypoints) if t is not None]
    op = _dali_function(chained, masks is not None, keypoints is not None, device)
    out = op(*args)
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    if masks is None and keypoints is None:
        return out[0]
    result = {"images": out.pop(0)}
    if masks is not None:
        result["masks"] = out.pop(0)
    if keypoints is not None:
        result["keypoints"] = out.pop(0)
    return result
