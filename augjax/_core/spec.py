"""OpSpec and the ``@op`` decorator: the public authoring API (version 2, params-first).

An op is a frozen value: a *sampler* that draws each sample's random values, and a
deterministic *kernel* that applies them, plus its declared parameters, level, inputs,
outputs, dtypes and layouts. Declaring one registers nothing; the registry finds ops through
the ``augjax.ops`` entry points of installed distributions.

Parameters are of two sorts:

- *per-sample* parameters (``Param.per_sample``: kinds ``float_or_pair`` / ``int_or_pair``,
  and any parameter with a ``magnitude`` map) are drawn by augjax, one float32 value per
  sample, and reach the kernel in its ``params`` dict under their own name (a range
  ``(lo, hi)`` is drawn uniformly, a number is used as is; a policy sets the value itself);
- every other parameter is *static* configuration and reaches the kernel as a keyword.

Draw order (documented, so it can be replayed): with ``k`` an op's key (the sample key folded
with the op's chain position), augjax draws one uniform per per-sample parameter, in declared
order, as ``jax.random.uniform(fold_in(k, 0), (count,))``; the op's own ``sample`` hook gets
``fold_in(k, 1)``.

Kernel and sampler signatures (checked when the op is declared):

- ``level="sample"``: ``kernel(image, params, *, <static params>)`` with one HWC image
  ``(H, W, C)`` and that sample's ``params`` (a dict of arrays); augjax vmaps it.
- ``level="batch"``: ``kernel(images, params, *, ...)`` or ``kernel(images, labels, params,
  *, ...)`` with the whole batch ``(N, H, W, C)`` and params with a leading axis N; it returns
  ``images`` or ``(images, labels)``.
- ``sample=fn`` (optional, for structural randomness: coins, boxes, permutations):
  ``fn(key, meta, params, *, <all params>) -> dict`` gets the op's key, a :class:`Meta` (the
  image size, channels and dtype; the batch size for batch-level ops), the per-sample values
  drawn so far, and every parameter's configured value; it returns more fields (arrays, per
  sample; with a leading axis N for batch-level ops). Fields hold drawn values, never keys.
- ``sample_targets=("boxes",)`` (optional, with ``sample=``): the hook also gets
  ``targets=``, that sample's targets as they reach the op (moved by the steps before it;
  for a batch-level op the batch's, each with a leading axis N: ``copy_paste``):
  ``{"boxes": (M, 4) float32 XYXY pixel edges, "boxes_valid": (M,) bool}`` for ``"boxes"``
  (``M = 0`` when the call has no boxes) and ``{"masks": (H, W) or (H, W, K)}`` in the masks'
  dtype for ``"masks"`` (absent when the call has none). A ``"boxes_valid"`` (M,) field the
  hook returns is ANDed into the boxes' validity after the op. Crops constrained by the boxes
  (``random_iou_crop``) are written so. Ops that declare nothing get no ``targets=`` and draw
  as before; inside a composite (``random_apply``, ``one_of``, a policy) such an op is refused.

Kernels always see channels-last images; augjax moves CHW data to HWC and back around them.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from augjax._core.declaration import (
    DTYPES,
    LAYOUTS,
    check_declaration,
    check_sample_targets,
    check_signature,
    check_store_inputs,
    deprecated_options,
    geometry_matrix,
    with_kernel_params,
)
from augjax._core.meta import Meta
from augjax._core.param import Param, per_sample_value
from augjax._core.reach import calling, note
from augjax._core.targets import Follow, default_follow
from augjax.errors import InputError, OpDefinitionError

__all__ = ["API_VERSION", "Meta", "OpSpec", "op"]

#: The authoring-API version this augjax implements. Ops declare the version they were written
#: for; a different major version is refused when the op is loaded. 2.0: params-first
#: (``sample=`` hook, ``kernel(image, params, *, ...)``); 1.x kernels took a key.
API_VERSION = "2.0"

#: Abbreviations whose period ends no sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "etc.")


def first_sentence(doc: str) -> str:
    """The first sentence of ``doc``'s first paragraph, on one line: up to the first period
    followed by a space (or the paragraph's end) outside parentheses, brackets and code
    spans, and not ending an abbreviation (``e.g.``); the whole paragraph when no such period
    ends it."""
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split()) if doc.strip() else ""
    depth, code = 0, False
    for i, ch in enumerate(paragraph):
        if ch == "`":
            code = not code
        elif code:
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif (ch == "." and depth == 0 and paragraph[i + 1:i + 2] in ("", " ")
              and not paragraph[:i + 1].endswith(_ABBREVIATIONS)):
            return paragraph[:i + 1]
    return paragraph


@dataclasses.dataclass(frozen=True, eq=False)
class OpSpec:
    """A declared augmentation: what the runtime reads of an op (its kernel, sampler and
    declared parameters); it calls nothing above ``_core``.

    The op users get is an :class:`augjax.calls.Op`, what ``@augjax.op`` makes: this
    declaration with its calls. ``op(images, key=..., **params)`` runs it on a ``jax.Array``
    batch; ``op(node, **params)`` inside a ``@pipeline_def`` adds a DALI operator;
    ``op.bind(**params)`` configures it without data (for chains).
    """

    name: str
    kernel: Callable[..., Any]
    params: Mapping[str, Param]
    level: str = "sample"
    inputs: tuple[str, ...] = ("images",)
    outputs: tuple[str, ...] = ("images",)
    dtypes: tuple[str, ...] = DTYPES
    layouts: tuple[str, ...] = LAYOUTS
    channels: tuple[int, ...] | None = None
    random: bool = True
    sampler: Callable[..., Mapping[str, Any]] | None = None
    matrix: Callable[..., Any] | None = None
    geometric: bool = False
    output_size: Callable[..., tuple[int, int]] | None = None
    output_dtype: str | None = None
    output_layout: Callable[..., str | None] | None = None
    check: Callable[..., None] | None = None
    reference: str = ""
    api_version: str = API_VERSION
    doc: str = ""
    #: Internal: the kernel does much arithmetic per pixel (HSV, random-order chains); on CPU a
    #: run of per-sample ops that holds one goes through the batch in cache-sized chunks. Set by
    #: the catalog's :func:`augjax.catalog._hints.compute_bound`, not by ``op()``.
    compute_bound: bool = False
    targets: Follow = Follow()
    ragged: Callable[..., Any] | None = None
    #: The targets the ``sample`` hook reads (a subset of ``("boxes", "masks")``); see ``op``.
    sample_targets: tuple[str, ...] = ()
    #: Files (absolute paths) and environment variables the op's code reads besides its code;
    #: the program store keys the op's programs by their contents and values (see ``op``).
    data_files: tuple[str, ...] = ()
    env_vars: tuple[str, ...] = ()
    #: Internal: how a policy layer may compute this op together with others of its family
    #: (members from :mod:`augjax.catalog._fuse`, set with its ``fused`` decorator).
    fuse: tuple[Any, ...] = ()

    @property
    def summary(self) -> str:
        """The first sentence of the op's documentation, whole (on one line, however the
        docstring wraps it): ``augjax list``, ``augjax info`` and the op gallery show it."""
        return first_sentence(self.doc)

    def layout_after(self, layout: str, params: Mapping[str, Any]) -> str:
        """The layout of this op's output for an input of ``layout`` and these parameters."""
        if self.output_layout is None:
            return layout
        return self.output_layout(**params) or layout

    @property
    def per_sample(self) -> tuple[str, ...]:
        """The per-sample parameters, in declared (and draw) order."""
        return tuple(k for k, p in self.params.items() if p.per_sample)

    @property
    def static(self) -> tuple[str, ...]:
        """The static parameters: the kernel's keyword arguments."""
        return tuple(k for k, p in self.params.items() if not p.per_sample)

    def draw(self, key: Any, meta: Meta, config: Mapping[str, Any],
             overrides: Mapping[str, Any] | None = None,
             targets: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The params of one sample (or, for batch-level ops, of the batch) under ``config``
        (validated parameter values): per-sample values, then the ``sample`` hook's fields.
        ``overrides`` set per-sample values directly (a policy's magnitudes); ``targets`` the
        sample's targets for an op that declares ``sample_targets`` (``{}``: the call has none;
        None, from a composite that passes none, is refused for such an op); traced.

        Raises:
            InputError: an op whose sampler reads targets, drawn without them.
        """
        import jax
        import jax.numpy as jnp

        note(self)
        names = self.per_sample
        shape = () if self.level == "sample" else (meta.batch,)
        ranged = [n for n in names if isinstance(config[n], tuple)]
        if ranged and key is None:
            raise OpDefinitionError(f"op {self.name!r}: a range needs a key")
        u = (jax.random.uniform(jax.random.fold_in(key, 0), (len(names),) + shape, jnp.float32)
             if ranged else jnp.zeros((len(names),) + shape, jnp.float32))
        out: dict[str, Any] = {}
        for i, n in enumerate(names):
            if overrides is not None and n in overrides:
                out[n] = jnp.broadcast_to(jnp.asarray(overrides[n], jnp.float32), shape)
            else:
                out[n] = per_sample_value(self.params[n], config[n], u[i])
        if self.sampler is not None:
            if self.sample_targets and targets is None:
                seen = " and ".join(self.sample_targets)
                raise InputError(
                    f"{self.name}: its sampler reads the sample's {seen} (sample_targets), "
                    f"which only a call, a chain step or op.sample passes; "
                    f"it cannot be drawn inside a composite (random_apply, one_of, a policy)",
                    op=self.name)
            more = {} if not self.sample_targets else {"targets": _seen(self.sample_targets,
                                                                        targets, shape)}
            extra = calling(self, self.sampler,
                            jax.random.fold_in(key, 1) if key is not None else None, meta,
                            dict(out), **config, **more)
            if not isinstance(extra, Mapping):
                raise OpDefinitionError(
                    f"op {self.name!r}: sample= must return a dict of arrays, got "
                    f"{type(extra).__name__}")
            out.update(extra)
        return out

    def run(self, inputs: tuple[Any, ...], params: Mapping[str, Any],
            config: Mapping[str, Any]) -> Any:
        """The kernel on ``inputs`` (one image, or the batch [and labels]) with ``params``;
        ``levels`` parameters in the image's scale, ``per_channel`` ones per channel."""
        note(self)
        static = {k: config[k] for k in self.static}
        params = dict(params)
        image = inputs[0]
        for k, p in self.params.items():
            given = params if k in params else static if k in static else None
            if given is not None and (p.levels or p.per_channel):
                value = p.for_channels(self.name, k, given[k], image.shape[-1])
                given[k] = p.in_scale(value, image.dtype)
        return calling(self, self.kernel, *inputs, params, **static)

    @property
    def defaults(self) -> dict[str, Any]:
        """Each parameter's default value."""
        return {k: p.default for k, p in self.params.items()}

    def __repr__(self) -> str:
        return f"<augjax op {self.name!r} level={self.level} params={list(self.params)}>"

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled by reference, so that a chain goes to grain's worker processes with plain
        ``pickle``: as the module attribute ``@op`` made of the kernel (its module and name,
        ``augjax.catalog.crop.random_resized_crop``; :class:`augjax.calls.Op` also by its
        registered name). An op that is neither is pickled field by field (its kernel must then
        be picklable)."""
        where = reference(self)
        if where is None:
            return super().__reduce_ex__(protocol)
        return (_unpickle, ("attribute", *where))


def _attribute(module: str, qualname: str) -> Any:
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def reference(spec: OpSpec) -> tuple[str, str] | None:
    """How :meth:`OpSpec.__reduce_ex__` finds ``spec`` again: ``(module, qualname)`` of the
    module attribute ``@op`` made of its kernel; None when that is not this very object."""
    module = getattr(spec.kernel, "__module__", None)
    qualname = getattr(spec.kernel, "__qualname__", "")
    if module and qualname and "<locals>" not in qualname:
        try:
            if _attribute(module, qualname) is spec:
                return (module, qualname)
        except (ImportError, AttributeError):
            pass
    return None


def _unpickle(kind: str, *where: str) -> OpSpec:
    """The op :func:`reference` named (in a worker process: imported there)."""
    return _attribute(*where)


def _seen(names: tuple[str, ...], targets: Mapping[str, Any] | None,
          lead: tuple[int, ...] = ()) -> dict[str, Any]:
    """The ``targets=`` a sampler that declares ``sample_targets=names`` gets: the boxes
    (``M = 0`` when none came; ``lead``: the batch axis of a batch-level op) and the masks
    where the call has them."""
    import jax.numpy as jnp

    targets = dict(targets or {})
    out: dict[str, Any] = {}
    if "boxes" in names:
        if "boxes" in targets:
            out["boxes"] = jnp.asarray(targets["boxes"], jnp.float32)
            out["boxes_valid"] = jnp.asarray(targets["boxes_valid"], jnp.bool_)
        else:
            out["boxes"] = jnp.zeros(lead + (0, 4), jnp.float32)
            out["boxes_valid"] = jnp.zeros(lead + (0,), jnp.bool_)
    if "masks" in names and "masks" in targets:
        out["masks"] = targets["masks"]
    return out


def op(
    name: str,
    *,
    params: Mapping[str, Param] | None = None,
    level: str = "sample",
    inputs: tuple[str, ...] = ("images",),
    outputs: tuple[str, ...] | None = None,
    dtypes: tuple[str, ...] = DTYPES,
    layouts: tuple[str, ...] = LAYOUTS,
    channels: tuple[int, ...] | None = None,
    sample: Callable[..., Mapping[str, Any]] | None = None,
    matrix: Callable[..., Any] | None = None,
    geometric: bool | None = None,
    output_size: Callable[..., tuple[int, int]] | None = None,
    output_dtype: str | None = None,
    output_layout: Callable[..., str | None] | None = None,
    check: Callable[..., None] | None = None,
    reference: str = "",
    api_version: str = API_VERSION,
    targets: Follow | None = None,
    ragged: Callable[..., Any] | None = None,
    sample_targets: tuple[str, ...] = (),
    data_files: tuple[str, ...] = (),
    env_vars: tuple[str, ...] = (),
    **deprecated: Any,
) -> Callable[[Callable[..., Any]], OpSpec]:
    """Declares an op: ``@op("name", params={...})`` over its kernel returns an :class:`OpSpec`.

    Args:
        name: the op's name, ``[a-z][a-z0-9_]*``; it must equal its entry point's name.
        params: the user-facing parameters, each a :class:`Param`.
        level: ``"sample"`` (kernel sees one image; augjax vmaps) or ``"batch"``.
        inputs: ``("images",)`` or ``("images", "labels")`` (batch level only).
        outputs: defaults to ``inputs``.
        dtypes: image dtypes accepted (and returned): a subset of ``("uint8", "float32")``.
        layouts: layouts accepted: a subset of ``("HWC", "CHW")``.
        channels: channel counts accepted, or ``None`` for any.
        sample: ``fn(key, meta, params, **config) -> dict``, the op's own draws (coins, boxes,
            permutations) as arrays; see the module docstring.
        matrix: for geometric sample-level ops, ``fn(params, meta, **config) -> (3, 3)``: the
            sample's forward matrix (input pixel ``(x, y, 1)`` to output, see
            :mod:`augjax.kernels.matrix`); boxes, keypoints and :func:`augjax.invert` use it.
            A warping op is better declared by its geometry: ``@op`` over
            ``@augjax.kernels.geometry.warp`` derives both the kernel and the matrix from one
            function (no ``matrix=``).
        geometric: the op moves pixels (default: it declares a ``matrix``). A geometric op
            without a matrix (elastic warps) cannot be inverted.
        output_size: ``f(height, width, **params) -> (out_height, out_width)`` for ops that
            change the spatial size; ``None`` means the size is kept.
        output_dtype: the dtype the op returns (e.g. ``"float32"`` for normalize); ``None``
            means the input's dtype.
        output_layout: ``f(**params) -> "HWC" | "CHW" | None`` for ops whose output layout
            depends on a parameter (normalize's CHW output); ``None`` keeps the input layout.
        check: ``f(**params)`` run on the validated parameters when the op is configured, for
            constraints between parameters (``min_area <= max_area``); it raises
            :class:`augjax.ParamError` (or ``ValueError``, which augjax wraps).
        reference: the reference semantics (e.g. "torchvision RandomHorizontalFlip").
        api_version: the authoring-API version the op is written for.
        targets: how masks, boxes and keypoints follow the op (:class:`augjax.Follow`);
            default: kept by ops that do not move pixels, masks through the kernel (nearest)
            and points through ``matrix`` for geometric ops, refused by batch-level ops.
        ragged: ``f(params, height, width, **config) -> Window`` for ops that take images of
            different sizes as a chain's first op (crops, resize): the sample's source box, the
            size it is resampled to and the output window (:class:`augjax._core.meta.Window`),
            from its params drawn with the image's true (traced) size. DALI resamples and crops
            the ragged images natively by it; on arrays augjax does.
        sample_targets: the targets the ``sample`` hook reads, a subset of ``("boxes",
            "masks")`` (an op with a ``sample`` hook; batch level: the batch's): the hook then also takes
            ``targets=``, e.g. ``{"boxes": (M, 4), "boxes_valid": (M,)}`` for one sample (see
            the module docstring). Default: none, and no ``targets=`` keyword.
        data_files: files the op's code reads (at import or when traced: a lookup table, a
            config), each a path, a relative one from the folder of the kernel's source file.
            A stored traced program of the op is used only while each file has the contents
            (SHA-256) it had when the program was traced (docs/RELIABILITY.md, "Traced
            programs").
        env_vars: names of environment variables the op's code reads; each variable's value
            (set or not) keys the op's stored programs.

    Whether the op is random (a call then needs a key) follows from the declaration: it has a
    ``sample`` hook or a per-sample parameter (``OpSpec.random``).

    Deprecated (a :class:`DeprecationWarning`): ``compute_bound=`` (a CPU performance hint;
    augjax's catalog sets it with its own decorator, and it no longer changes a pack's op);
    ``random=`` (derived as above; ``random=False`` on an op that draws is still refused).

    Raises:
        OpDefinitionError: when the declaration and the kernel disagree.
    """
    deprecated_options(name, deprecated)
    random = deprecated.get("random")
    declared = dict(params or {})
    outputs = inputs if outputs is None else tuple(outputs)

    def decorate(kernel: Callable[..., Any]) -> OpSpec:
        params = with_kernel_params(kernel, declared)
        check_declaration(name, kernel, params, level, tuple(inputs), outputs, dtypes, layouts)
        derived = geometry_matrix(name, kernel, params, level, matrix)
        if derived is None:
            check_signature(name, kernel, params, level, tuple(inputs))
        moved = matrix if derived is None else derived
        drawn = sample is not None or any(p.per_sample for p in params.values())
        if random is False and drawn:
            raise OpDefinitionError(
                f"op {name!r}: random=False, but the op draws per-sample values (a sample= hook "
                f"or per-sample parameters: {[k for k, p in params.items() if p.per_sample]})")
        if moved is not None and (not callable(moved) or level != "sample"):
            raise OpDefinitionError(f"op {name!r}: matrix= must be a callable of a sample-level "
                                    f"op")
        if sample is not None and not callable(sample):
            raise OpDefinitionError(f"op {name!r}: sample= must be callable, got "
                                    f"{type(sample).__name__}")
        seen = check_sample_targets(name, sample_targets, sample, level, params)
        files, env = check_store_inputs(name, kernel, data_files, env_vars)
        moves = moved is not None if geometric is None else bool(geometric)
        if targets is not None and not isinstance(targets, Follow):
            raise OpDefinitionError(f"op {name!r}: targets= must be an augjax.Follow, got "
                                    f"{type(targets).__name__}")
        return OpSpec(
            name=name,
            kernel=kernel,
            params=MappingProxyType(params),
            level=level,
            inputs=tuple(inputs),
            outputs=outputs,
            dtypes=tuple(dtypes),
            layouts=tuple(layouts),
            channels=None if channels is None else tuple(channels),
            random=drawn,
            sampler=sample,
            matrix=moved,
            geometric=moves,
            output_size=output_size,
            output_dtype=output_dtype,
            output_layout=output_layout,
            check=check,
            reference=reference,
            api_version=api_version,
            doc=inspect.getdoc(kernel) or "",
            targets=targets or default_follow(level, moves, moved is not None),
            ragged=ragged,
            sample_targets=seen,
            data_files=files,
            env_vars=env,
        )

    return decorate
