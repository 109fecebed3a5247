"""Fusion boundaries: where a compiled program keeps an intermediate image in memory.

XLA fuses a producer into each consumer that reads it, and a fused producer is computed again
for every read. Between two ops of a chain that can cost far more than both ops alone: in
``compose(random_resized_crop(224), flip(p=0.5))`` XLA:CPU fused the crop's two gather passes
(4 x 4 taps per output pixel) into flip's ``select(coin, reverse(y), y)``, which reads ``y``
twice per pixel, so the whole resample ran twice, element by element (2-core CPU, B=16,
256^2 -> 224^2 uint8: 186 ms against 22 + 1 ms for the two ops alone). The program now keeps
an op's output in memory before the next op reads it (:func:`materialize`, placed by
:func:`augjax._runtime.execution.lowering.apply_params`), except after a :func:`pointwise` step that
widens its values (normalize: cheaper to recompute from its uint8 input than to write and read
back as float32) or before a pointwise consumer: a chain then costs about what its ops cost
alone, without their dispatches (``benchmarks/compose.py``).

A boundary is ``lax.optimization_barrier``, which XLA:CPU normally expands away before fusion
(its ``cse_barrier_expander`` pass turns barriers into control dependencies, which do not stop
fusion). augjax's top-level apply programs on the CPU are therefore compiled with that pass off
(:func:`boundary_compiler_options`): the barriers stay to the end and no fusion crosses them.
The values are unchanged: a barrier is the identity, and XLA:CPU computed the same bits with
and without it (every op alone against the code before, chains against the unbounded program
in ``tests/compose/test_boundaries.py``).
Inside a caller's ``jax.jit`` the program is compiled with the caller's options, where
barriers are expanded: there the boundary between steps is a conditional that XLA cannot
remove (:mod:`augjax.kernels.embedded`).

XLA:GPU emits no ``opt-barrier`` (:func:`boundary_compiler_options`), so on CUDA a boundary
between a chain's steps is a Triton call that does nothing, its output aliased to its input
(:func:`augjax.kernels.pallas.kept_in_place`): no fusion crosses a custom call, in augjax's
programs or a caller's ``jax.jit`` alike. Unbounded, XLA:GPU fused affine's resample into
rotate's four taps (affine + rotate 1.81x the two ops alone, H200, B=256). Other platforms
get no boundary.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.experimental.layout import Layout, with_layout_constraint

from augjax.kernels.embedded import in_own_program, kept_by_branch
from augjax.kernels.platform import platform_dependent
from augjax.kernels.portable import with_portable

__all__ = ["BARRIER_PASS", "CROP", "MOVE", "MOVE_TWICE", "OTHER", "POINTWISE",
           "boundary_compiler_options", "channel_work", "image_kind", "image_kind_and_work",
           "barrier", "kept_in_caller", "materialize"]

#: The XLA pass that removes optimisation barriers before fusion (HLO pass name).
BARRIER_PASS = "cse_barrier_expander"


def _identity(x: Any) -> Any:
    return x


def materialize(x: Any, *, row_major: bool = False, whole: bool = False) -> Any:
    """``x`` (an array or pytree), kept in memory where the program's compiler options keep
    barriers (:func:`boundary_compiler_options`): every later read loads it instead of fusing
    its computation again; ``row_major``: in the row-major layout (between the steps of a
    chain, where the next step reads it; not inside an op, whose passes pick the layout that
    suits them: resize's width pass is kept transposed for its height pass); ``whole``: with
    ``row_major``, kept in its own shape (:func:`_kept_whole`; next to a batch-level step). On
    CUDA, between a chain's steps (``row_major``) only, ``x`` behind a Triton call
    (:func:`_kept_on_gpu`); on other platforms, ``x`` itself. On a CPU inside a caller's
    trace (not augjax's own program, :func:`augjax.kernels.embedded.in_own_program`),
    between steps, ``x`` through a conditional (:func:`~augjax.kernels.embedded.kept_by_branch`:
    the caller's options expand barriers). Traced."""
    if not row_major:
        return platform_dependent(x, cpu=barrier, default=_identity)
    kept = (_kept_whole if whole else _kept_row_major) if in_own_program() else kept_by_branch
    return platform_dependent(x, cpu=kept, cuda=_kept_on_gpu, default=_identity)


def barrier(x: Any) -> Any:
    """``lax.optimization_barrier(x)``, which bounds fusion in augjax's own programs; inside a
    caller's trace on a CPU, whose options expand barriers, ``x`` through a conditional
    (:func:`~augjax.kernels.embedded.kept_by_branch`). Between a sampler and the kernels that
    read its params (XLA fused the sampler's arithmetic into the per-pixel loops of a
    caller's program without one) and inside kernels. Traced."""
    if in_own_program():
        return jax.lax.optimization_barrier(x)
    return platform_dependent(x, cpu=kept_by_branch, default=jax.lax.optimization_barrier)


def kept_in_caller(x: Any) -> Any:
    """``x`` kept apart from what reads it where a caller's trace would fuse it in (a CPU: a
    conditional, :func:`~augjax.kernels.embedded.kept_by_branch`); ``x`` itself in augjax's own
    programs and on other platforms (where nothing stood there before). Traced."""
    if in_own_program():
        return x
    return platform_dependent(x, cpu=kept_by_branch, default=_identity)


def _kept_on_gpu(x: Any) -> Any:
    """Each array of ``x`` through :func:`augjax.kernels.pallas.kept_in_place` (``x`` itself
    where JAX has no Triton backend)."""
    # Pallas' import costs ~0.1 s: only when traced
    from augjax.kernels.pallas import AVAILABLE, kept_in_place

    if not AVAILABLE:
        return x
    return jax.tree_util.tree_map(kept_in_place, x)


def _kept_row_major(x: Any) -> Any:
    """``x`` behind an optimisation barrier, each array of 4 or more dimensions reshaped to
    ``(N*H, W, C)`` on its way in and back after: the reshape is free only in the row-major
    layout, so XLA's layout assignment gives the kept array the layout the next step reads.
    Without it, the barrier took its producer's layout: resize's height pass wrote a transposed
    one (``{3,2,0,1}``) and the next step read it across (resize + flip 1.15x resize and flip
    alone, 2-core CPU, B=16, 224^2; resize alone writes row-major). Flattened to one dimension,
    the producer's loop indexed its output element by element: resize's last pass 4x slower."""
    leaves, tree = jax.tree_util.tree_flatten(x)
    flat = jax.lax.optimization_barrier(
        [v.reshape((-1, *v.shape[-2:])) if v.ndim > 3 else v for v in leaves])
    return jax.tree_util.tree_unflatten(tree, [f.reshape(v.shape) for f, v in zip(flat, leaves)])


def _kept_whole(x: Any) -> Any:
    """:func:`_kept_row_major` for the output a batch-level step (mixup, cutmix) writes or
    reads: each array in its own shape under a row-major layout constraint
    (``jax.experimental.layout``). The mixing ops compute over rows of ``W*C`` values; behind
    the reshape to ``(N*H, W, C)`` their loop ran over that shape and took each element's index
    apart again (cutmix + normalize 1.22x the two ops alone, 2-core CPU, B=16, 1.06x kept
    whole; center_crop + mixup 1.34x, 0.92x kept whole). Not for every step: a normalize fused
    into a vertical flip wrote its output 3x slower kept whole (normalize + vflip 0.42x ->
    1.27x)."""
    leaves, tree = jax.tree_util.tree_flatten(x)
    kept = jax.lax.optimization_barrier(
        [with_layout_constraint(v, Layout(tuple(range(v.ndim)))) for v in leaves])
    return jax.tree_util.tree_unflatten(tree, kept)


def boundary_compiler_options(backend: str | None = None) -> dict[str, Any] | None:
    """XLA options under which :func:`materialize`'s barriers bound fusion, for ``backend``
    (default: JAX's): on a CPU, the barrier expander off; elsewhere None. Not on CUDA: XLA:GPU
    emits no ``opt-barrier`` ("INTERNAL: Unsupported instruction opcode: opt-barrier", JAX
    0.11.2 on an H200, for any program holding one, the kernels' own barriers too), so the
    expander must run there, and an expanded barrier bounds no fusion. On a CPU the options
    include :func:`augjax.kernels.portable.portable_compiler_options`."""
    if (backend or jax.default_backend()) != "cpu":
        return None
    return with_portable({"xla_disable_hlo_passes": BARRIER_PASS}, "cpu")


#: Primitives that compute each output element from the same element of their inputs (and
#: scalars or broadcast parameters): a step made of these only is cheap to fuse into the next.
_POINTWISE = frozenset({
    "abs", "add", "and", "broadcast_in_dim", "ceil", "clamp", "convert_element_type", "copy",
    "copy_p", "cos", "div", "eq", "exp", "exp2", "floor", "ge", "gt", "integer_pow", "is_finite",
    "le", "log", "log1p", "lt", "max", "min", "mul", "ne", "neg", "not", "or", "pow",
    "reduce_precision", "rem", "round", "rsqrt", "select_n", "sign", "sin", "sqrt", "square",
    "squeeze", "expand_dims", "stop_gradient", "sub", "tan", "tanh", "xor", "erf",
})


#: Primitives that move or select image elements without computing on them (flips, crops,
#: erasing's select between the image and a fill, cutmix's gather of the permuted batch).
_MOVEMENT = frozenset({
    "rev", "slice", "dynamic_slice", "gather", "concatenate", "pad", "reshape", "transpose",
    "select_n", "broadcast_in_dim", "squeeze", "expand_dims", "copy", "copy_p",
})
#: Movement primitives that only cut or reshape (a crop): no element chosen or reversed.
_CUTTING = _MOVEMENT - {"rev", "select_n"}
#: The operand positions of a movement primitive that may hold the image (not its predicate,
#: indices or start positions).
_DATA_OPERANDS = {"select_n": lambda i: i > 0, "gather": lambda i: i == 0,
                  "dynamic_slice": lambda i: i == 0}

#: What a step does with the image (:func:`image_kind`).
CROP, MOVE, MOVE_TWICE, POINTWISE, OTHER = "crop", "move", "move-twice", "pointwise", "other"


def image_kind(fn: Any, *args: Any) -> str:
    """What ``fn(*args)`` (shapes and dtypes are enough) does with its first argument, the
    image, read from its jaxpr. :data:`CROP`: every primitive that reads the image (or a value
    computed from it) only cuts it (slices, a gather of blocks); :data:`MOVE`: only moves or
    selects elements (random erasing's select between the image and a fill), reading the image
    once; :data:`MOVE_TWICE`: the same, reading the image in two places (flip's
    ``select(coin, reverse(x), x)``); :data:`POINTWISE`: each element computed from the same
    element (brightness, normalize); :data:`OTHER`: anything else (resampling, a gather of
    single pixels, reductions, control flow on the image). What the step computes from its
    other arguments, the parameters (a box, a mask drawn with ``iota``), does not count."""
    traced = _trace(fn, *args)
    return OTHER if traced is None else _kind(*traced)


def image_kind_and_work(fn: Any, *args: Any) -> tuple[str, int]:
    """:func:`image_kind` and :func:`channel_work` of ``fn(*args)`` from one trace."""
    traced = _trace(fn, *args)
    return (OTHER, 0) if traced is None else (_kind(*traced), _work(*traced))


def _trace(fn: Any, *args: Any) -> tuple[Any, list] | None:
    """The jaxpr of ``fn(*args)`` (shapes and dtypes are enough) and its image's variables (the
    first argument's leaves); None where it does not trace."""
    structs = jax.tree_util.tree_map(lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype), args)
    try:
        closed = jax.make_jaxpr(fn)(*structs)
    except Exception:  # noqa: BLE001  (the step's own trace reports its errors)
        return None
    leaves = len(jax.tree_util.tree_leaves(structs[0])) if structs else 0
    return closed.jaxpr, closed.jaxpr.invars[:leaves]


def _kind(jaxpr: Any, image: list) -> str:
    cut, move, pointwise = _reads(jaxpr, set(image))
    if cut:
        return CROP
    if move:
        uses = sum(1 for eqn in jaxpr.eqns for v in eqn.invars if v in image)
        return MOVE if uses <= 1 else MOVE_TWICE
    return POINTWISE if pointwise else OTHER


def _block_gather(eqn: Any) -> bool:
    """Whether a gather takes blocks wider than one pixel (a crop's window, cutmix's permuted
    images), not one pixel per output element (a resample: rotate's nearest neighbours)."""
    return max(eqn.params["slice_sizes"][:-1], default=0) > 1


def _reads(jaxpr: Any, image: set) -> tuple[bool, bool, bool]:
    """Whether ``jaxpr`` only cuts, only moves, and only computes pointwise the values of
    ``image`` (grown with every value computed from them)."""
    cut, move, pointwise = True, True, True
    for eqn in jaxpr.eqns:
        reads = [i for i, v in enumerate(eqn.invars) if not hasattr(v, "val") and v in image]
        if not reads:
            continue
        subs = [v for v in eqn.params.values() if hasattr(v, "jaxpr") or hasattr(v, "eqns")]
        if subs:  # a nested call (jit, custom_jvp): its body's
            for sub in subs:
                inner = getattr(sub, "jaxpr", sub)
                if len(inner.invars) != len(eqn.invars):
                    return False, False, False
                c, m, q = _reads(inner, {inner.invars[i] for i in reads})
                cut, move, pointwise = cut and c, move and m, pointwise and q
        else:
            name = eqn.primitive.name
            data = _DATA_OPERANDS.get(name, lambda i: True)
            moves = (name in _MOVEMENT and all(data(i) for i in reads)
                     and (name != "gather" or _block_gather(eqn)))
            cut = cut and moves and name in _CUTTING
            move = move and moves
            pointwise = pointwise and name in _POINTWISE
        if not (move or pointwise):
            return False, False, False
        image.update(eqn.outvars)
    return cut, move, pointwise


def channel_work(fn: Any, *args: Any) -> int:
    """For a step that writes its output's channels as separate planes (stacked on the last
    axis from values computed from the image: hue's RGB -> HSV -> RGB), how many primitives
    of ``fn(*args)``'s jaxpr compute on the image or on values computed from it (nested calls'
    bodies included): what a consumer that fuses the step and computes each output value on its
    own repeats for each channel. 0 for a step whose channels are not stacked (a blur, a
    resample, a blend with gray). hue: 109 (uint8), channel_permute 10."""
    traced = _trace(fn, *args)
    return 0 if traced is None else _work(*traced)


def _work(jaxpr: Any, image: list) -> int:
    count, stacked = _count(jaxpr, set(image))
    return count if stacked else 0


def _count(jaxpr: Any, image: set) -> tuple[int, bool]:
    """Primitives computing on ``image`` (grown with every value computed from it), and whether
    one of them stacks or concatenates on the last axis."""
    n, stacked = 0, False
    for eqn in jaxpr.eqns:
        reads = [i for i, v in enumerate(eqn.invars) if not hasattr(v, "val") and v in image]
        if not reads:
            continue
        subs = [v for v in eqn.params.values() if hasattr(v, "jaxpr") or hasattr(v, "eqns")]
        for sub in subs:
            inner = getattr(sub, "jaxpr", sub)
            c, s = _count(inner, {inner.invars[i] for i in reads if i < len(inner.invars)})
            n, stacked = n + c, stacked or s
        n += not subs
        stacked = stacked or _on_last_axis(eqn)
        image.update(eqn.outvars)
    return n, stacked


def _on_last_axis(eqn: Any) -> bool:
    """Whether ``eqn`` stacks or concatenates planes on its output's last axis (JAX 0.10 has a
    ``stack`` primitive; earlier ones a ``concatenate``). False for an equation without
    outputs (equalize's ``cond`` that only checks)."""
    if not eqn.outvars:
        return False
    last = eqn.outvars[0].aval.ndim - 1
    name = eqn.primitive.name
    return ((name == "stack" and eqn.params.get("axis") == last)
            or (name == "concatenate" and eqn.params.get("dimension") == last))
