"""torchvision v2 pipelines as augjax chains: ``augjax.from_torchvision(v2.Compose([...]))``.

Each supported transform becomes the augjax op or policy with the same semantics and parameters
(the same parameter distributions; every op here is tested against torchvision on the same
drawn parameters). The result is an :class:`augjax.Chain` that takes ``(N, H, W, C)`` arrays
(HWC: pass ``layout="CHW"`` to the call for CHW data) or DALI DataNodes, and keys instead of
torch's global RNG.

torch and torchvision are never imported: transforms are recognised by their class name and
module (``torchvision.transforms``), and their attributes read as plain values, so converting
needs torchvision only where the pipeline was built. v1 transforms (``torchvision.transforms.X``)
convert as their v2 twins (their own attributes read: a v1 ``RandomCrop``'s padding order) with
an :class:`augjax.TorchvisionV1Warning`. Exact rewrites convert too: ``RandomAdjustSharpness``
is ``random_apply(sharpness)``, ``JPEG`` is ``jpeg`` (libjpeg's pixels), ``ConvertImageDtype``
is ``ToDtype(scale=True)``. Three convert with the transform right after them, which fixes
the output size their own output leaves free: ``RandomIoUCrop`` or ``RandomZoomOut`` followed
by ``Resize((h, w))`` are ``random_iou_crop`` / ``random_zoom_out`` with ``size=(h, w)``, and
``ScaleJitter`` followed by the detection reference's ``FixedSizeCrop`` is ``scale_jitter``
(:mod:`augjax.interop._tv_pairs`); alone they are refused, naming what must follow.
``ToImage``, ``ToPureTensor``, ``Identity`` and ``RGB`` leave the arrays as they are (``RGB``
as torchvision on images of 3 or more channels; a 1-channel image, which torchvision repeats
to 3, stays 1-channel: augjax has no op for it). A pipeline that
contains itself is refused, and so is one made only of those (it converts to no op), and
``JPEG`` on float images (torchvision's own ``JPEG`` raises there). ``RandomOrder`` is
:func:`augjax.random_order`, ``Pad`` is :func:`augjax.ops.pad`.
``ToDtype(torch.float32, scale=False)`` of uint8 images keeps 0..255 in floats: augjax converts
to its 0..1 and carries the factor, so the ``Normalize`` after it takes torchvision's 0..255
mean and std (divided by 255 here: the same output to float rounding) and a pipeline that ends
unscaled ends with ``x * 255``; between the two only steps that do not read the values' scale
are taken (flips, crops, resizes, warps, CutMix/MixUp; fills read in 0..255), anything else is
refused by name. ``RandomErasing(value="random")`` right after a ``Normalize`` (torchvision's
reference order, where it writes N(0, 1) standardised values) becomes
``random_erasing(mode="pixel")`` with that Normalize's mean and std, run just before it (the
same N(0, 1) values after it, clipped where ``mean + std * z`` leaves [0, 1]); anywhere else it
is refused.

Not converted (:class:`augjax.UnsupportedTransformError`, naming the transform, the setting and
the nearest augjax op): transforms augjax has no op for, and settings whose result would differ
(``RandomRotation(expand=True)``, a ``center``, ``bicubic`` interpolation outside
``RandomResizedCrop`` and ``Resize``, ``Grayscale(1)``,
``ToDtype(torch.uint8, scale=False)``, ``RandomErasing(value="random")`` on uint8, ...).

Values in the image's own scale: torchvision reads fills, ``RandomSolarize``'s threshold and
``RandomErasing``'s value in the tensor's values (0..255 for uint8, 0..1 for float); augjax's
``fill`` is a fraction of the range and its solarize threshold is in uint8 levels for both
dtypes. The converter follows the dtype through the pipeline (``dtype=`` at the start;
``ToDtype``, ``ConvertImageDtype``, ``ToTensor``, ``PILToTensor`` and ``Normalize`` set it; a
``RandomApply`` or ``RandomChoice`` whose branches end in different dtypes leaves it unknown)
and scales such values by it (a float threshold of 0.6 is 153 levels); a non-zero one met where
the dtype is not known is refused, naming ``dtype=``.

Batch-level transforms: ``CutMix`` and ``MixUp`` (and ``RandomChoice([CutMix, MixUp])``) become
augjax's ``cutmix``, ``mixup`` and ``mixup_cutmix`` with ``correct_lam=True`` (torchvision's
label weight), one draw per batch. One difference remains in how partners are drawn: torchvision
mixes sample ``i`` with ``i - 1`` (``roll(1)``), augjax with ``N - 1 - i`` (timm); the weight,
the box and the label arithmetic are torchvision's, as ``op.apply`` with torchvision's drawn
values (``perm`` included) shows in the tests.
"""

from __future__ import annotations

import difflib
from typing import Any, Callable

from augjax.errors import UnsupportedTransformError
from augjax.interop._tv_common import _fail, _is_v1, _name, _p
from augjax.interop._tv_dtypes import SCALE_FREE
from augjax.interop._tv_pairs import PAIRS, convert_pair
from augjax.interop._tv_steps import STEPS, _classes

__all__ = ["from_torchvision", "SUPPORTED", "NEAREST"]

#: torchvision transforms augjax does not convert -> the nearest augjax op (or None: nothing near).
NEAREST = {
    "RandomZoomOut": "random_zoom_out(size=...) (converts with a Resize((h, w)) right after it)",
    "RandomIoUCrop": "random_iou_crop(size=...) (converts with a Resize((h, w)) right after it)",
    "ElasticTransform": "elastic_transform (augjax-contrib)",
    "FiveCrop": "center_crop",
    "TenCrop": "center_crop",
    "ScaleJitter": "scale_jitter (converts with the detection reference's FixedSizeCrop "
                   "right after it)",
    "RandomShortestSize": "resize",
    "RandomResize": "resize",
    "Lambda": None,
    "LinearTransformation": "normalize (per-channel affine only)",
    "SanitizeKeyPoints": "the targets' keypoints_valid (docs/guide/targets.md)",
    "ClampKeyPoints": "the targets' keypoints (kept with keypoints_valid by every geometric op)",
    "SetClampingMode": "the targets' boxes (clamped by every geometric op)",
    "ConvertBoundingBoxFormat": "the call's boxes_format= (docs/guide/targets.md)",
    "ToPILImage": "to_uint8",
    "UniformTemporalSubsample": ("none (augjax augments the frames it is given): pick them "
                                 "before the chain, clips[:, idx] with torchvision's indices "
                                 "idx = torch.linspace(0, T - 1, num_samples).long()"),
}

# transforms that leave an array as it is (conversions between PIL, tensors and tv_tensors;
# RGB on images of 3 or more channels, the ones augjax's colour ops take: augjax has no op that
# repeats a gray channel, so 1-channel images are not made RGB)
_PASS = {"ToImage", "ToPureTensor", "Identity", "RGB"}


def _steps(t, children, state):
    """The converted steps of ``children``, in order. ``state["normalize"]`` holds the
    Normalize just converted (for the step right after it only); a RandomErasing(value=
    "random") right after it is put before it (``state["erase_before"]``)."""
    steps = []
    children = list(children)
    for i, c in enumerate(children):
        if i and _name(children[i - 1]) in PAIRS and _tv(children[i - 1]):
            continue  # converted with the transform before it
        after_normalize = state.get("normalize") is not None
        if _name(c) in PAIRS and _tv(c):  # converted with the transform after it
            step = _convert(c, state, after=children[i + 1] if i + 1 < len(children) else None)
        else:
            step = _convert(c, state)
        if state.pop("erase_before", False):
            if not (after_normalize and steps):
                raise _fail(c, "value='random' where no Normalize comes right before it in "
                            f"the same {_name(t)}", argument="value",
                            nearest="random_erasing(mode='pixel', mean=, std=) before "
                                    "normalize")
            steps.insert(len(steps) - 1, step)
            state["normalize"] = None
            continue
        if step is not None:
            if _name(c) != "Normalize":
                state["normalize"] = None
            steps.append(step)
    return steps


def _compose(t, state):
    from augjax.chain import compose

    steps = _steps(t, t.transforms, state)
    return compose(*steps) if steps else None


def _same_scale(t, state, after):
    """A branch taken by chance may not start or end ToDtype(scale=False)'s 0..255 values."""
    if any(s.get("unscaled", False) != state.get("unscaled", False) for s in after):
        raise _fail(t, "a ToDtype(torch.float32, scale=False) or its Normalize inside a random "
                    "branch leaves the values' scale (0..1 or 0..255) to chance: move it out of "
                    f"the {_name(t)}", argument="scale", nearest="to_float")


def _random_apply(t, state):
    inner_state = dict(state)
    inner = _compose(t, inner_state)
    _same_scale(t, state, [inner_state])
    if inner_state["dtype"] != state["dtype"]:
        state["dtype"] = None  # converted or not, by chance
    return None if inner is None else _p(inner, float(t.p))


def _random_order(t, state):
    """Every transform, in an order drawn per sample: each converts from the state before the
    container (augjax's ``random_order`` takes only steps that keep the dtype)."""
    from augjax.chain import random_order

    steps, after = [], []
    for c in t.transforms:
        branch_state = dict(state)
        step = _convert(c, branch_state)
        after.append(branch_state)
        if step is not None:
            steps.append(step)
    _same_scale(t, state, after)
    if len({s["dtype"] for s in after}) > 1:
        state["dtype"] = None
    return random_order(steps) if steps else None


def _random_choice(t, state):
    from augjax.chain import compose, random_choice

    names = sorted(_name(c) for c in t.transforms)
    if names == ["CutMix", "MixUp"]:
        return _mixup_or_cutmix(t, state)
    branches, dtypes = [], set()
    for c in t.transforms:
        branch_state = dict(state)
        step = _convert(c, branch_state)
        branches.append(step if step is not None else compose())
        dtypes.add(branch_state["dtype"])
        _same_scale(t, state, [branch_state])
    state["dtype"] = dtypes.pop() if len(dtypes) == 1 else None  # one per branch: not known
    weights = None if t.p is None else tuple(float(w) for w in t.p)
    return random_choice(branches, weights=weights)


def _mixup_or_cutmix(t, state):
    import augjax.ops as ops

    by_name = {_name(c): c for c in t.transforms}
    cut, mix = by_name["CutMix"], by_name["MixUp"]
    if _classes(cut) != _classes(mix):
        raise _fail(t, "CutMix and MixUp with different num_classes", argument="num_classes",
                    nearest="mixup_cutmix")
    weights = [1.0, 1.0] if t.p is None else [float(w) for w in t.p]
    cut_w = weights[[_name(c) for c in t.transforms].index("CutMix")]
    return ops.mixup_cutmix.bind(mixup_alpha=float(mix.alpha), cutmix_alpha=float(cut.alpha),
                                 switch_prob=cut_w / sum(weights), prob=1.0, correct_lam=True,
                                 num_classes=_classes(cut), label_smoothing=0.0)


#: torchvision class name -> converter: the containers here, every other transform's step
#: from :data:`augjax.interop._tv_steps.STEPS`.
SUPPORTED: dict[str, Callable[[Any, dict], Any]] = {
    "Compose": _compose,
    "RandomApply": _random_apply,
    "RandomChoice": _random_choice,
    "RandomOrder": _random_order,
    **STEPS,
}


def _sequential(t, state):
    """``torch.nn.Sequential`` of transforms (torchvision's scriptable pipeline): a Compose."""
    from augjax.chain import compose

    steps = _steps(t, t, state)
    return compose(*steps) if steps else None


def _tv(t: Any) -> bool:
    return (type(t).__module__ or "").startswith("torchvision.transforms")


def _convert(t: Any, state: dict, *, after: Any = None) -> Any:
    """``t``'s step (``after``: the transform right after it, for the :data:`PAIRS`)."""
    name = _name(t)
    module = type(t).__module__ or ""
    if name == "Sequential" and module.startswith("torch.nn"):
        state["path"].append(t)
        try:
            return _sequential(t, state)
        finally:
            state["path"].pop()
    if not module.startswith("torchvision.transforms"):
        hint = (f"; wrap a {name} of transforms in v2.Compose([...])"
                if isinstance(t, (list, tuple)) else "")
        what = f"{name} from {module!r}"
        if callable(t) and hasattr(t, "__code__"):  # a function or lambda: v2.Lambda's kind
            what = f"the Python function {getattr(t, '__qualname__', name)}"
            hint = ("; a function's effect cannot be read: write it as an augjax op "
                    "(docs/authoring/op.md) or apply it before or after the chain")
        raise UnsupportedTransformError(
            f"from_torchvision: expects torchvision transforms, got {what}{hint}",
            transform=name)
    if _is_v1(t):
        state["v1"].setdefault(name, None)
    if any(t is outer for outer in state["path"]):
        path = " > ".join(_name(o) for o in state["path"]) + f" > {name}"
        raise UnsupportedTransformError(
            f"from_torchvision: {name} contains itself ({path}): a pipeline that holds itself "
            "never ends; build it without the cycle", transform=name, argument="transforms")
    if name in _PASS:
        return None
    if state.get("unscaled") and name in SUPPORTED and name not in SCALE_FREE:
        raise _fail(t, "it follows ToDtype(torch.float32, scale=False), whose 0..255 float "
                    f"values {name} would read as augjax's 0..1: put it before the ToDtype, or "
                    "use ToDtype(torch.float32, scale=True) (and a Normalize in 0..1)",
                    argument="scale", nearest="to_float")
    if name in PAIRS:  # met alone (after=None): refused, naming what must follow it
        return convert_pair(t, after, state)
    if name in SUPPORTED:
        state["path"].append(t)
        try:
            return SUPPORTED[name](t, state)
        finally:
            state["path"].pop()
    nearest = NEAREST.get(name)
    if name not in NEAREST:
        close = difflib.get_close_matches(name, list(SUPPORTED), n=1, cutoff=0.5)
        nearest = close and f"the conversion of {close[0]}" or None
    raise _fail(t, "no augjax op converts it exactly", nearest=nearest)


def from_torchvision(transform: Any, *, dtype: Any = None) -> Any:
    """The augjax chain that does what the torchvision v2 ``transform`` does.

    Args:
        transform: a ``torchvision.transforms.v2`` transform, usually a ``Compose`` (or a
            ``torch.nn.Sequential`` of transforms, converted as one). v1
            transforms (``torchvision.transforms.X``) convert as their v2 twins, with a
            :class:`augjax.TorchvisionV1Warning`.
        dtype: what the pipeline's input holds, ``"uint8"`` (0..255, what ``ToImage`` gives
            for a PIL image) or ``"float32"`` (0..1), as a string or a NumPy, JAX or torch
            dtype; ``None`` (the default): not stated, known
            from the first ``ToDtype`` / ``ConvertImageDtype`` / ``ToTensor`` /
            ``PILToTensor`` on. torchvision reads fills, ``RandomSolarize``'s threshold and
            ``RandomErasing``'s value in the image's own values; a non-zero one met where the
            dtype is not known is refused (argument ``fill`` / ``threshold`` / ``value``).

    Returns:
        The converted chain, an :class:`augjax.Chain`; call it as ``chain(images,
        key=key)`` on ``(N, H, W, C)`` arrays (``chain(images, labels, key=key)`` with
        CutMix/MixUp), or inside a DALI pipeline.

    Raises:
        UnsupportedTransformError: a transform or setting augjax cannot reproduce; the error
            names it (``.transform``, ``.argument``) and the nearest augjax op (``.nearest``);
            also a pipeline that contains itself.
    """
    import warnings

    from augjax.chain import compose
    from augjax.errors import AugjaxWarning, TorchvisionV1Warning

    name = None if dtype is None else str(getattr(dtype, "name", dtype)).replace("torch.", "")
    if isinstance(dtype, type):  # a scalar type: np.uint8, jnp.float32
        name = dtype.__name__
    if name not in (None, "uint8", "float32"):
        raise UnsupportedTransformError(
            f"from_torchvision: argument 'dtype' expects 'uint8', 'float32' or None, got "
            f"{dtype!r}", transform="", argument="dtype")
    state: dict = {"dtype": name, "path": [], "v1": {}}
    try:
        step = _convert(transform, state)
    except RecursionError:
        raise UnsupportedTransformError(
            f"from_torchvision: {_name(transform)} is nested deeper than Python's recursion "
            "limit", transform=_name(transform), argument="transforms") from None
    if state["v1"]:
        warnings.warn(
            f"from_torchvision: torchvision v1 transforms (torchvision.transforms, not "
            f"torchvision.transforms.v2): {', '.join(state['v1'])}; each converts as its v2 "
            "twin, which the conversion is tested against: use torchvision.transforms.v2",
            TorchvisionV1Warning, stacklevel=2)
    for message in dict.fromkeys(state.get("warnings", ())):
        warnings.warn(message, AugjaxWarning, stacklevel=2)
    if step is None:  # every transform leaves the arrays as they are: nothing to run
        raise UnsupportedTransformError(
            f"from_torchvision: {_name(transform)} converts to no augjax op (its transforms, "
            f"such as ToImage, ToPureTensor, Identity and RGB, leave the arrays as they are): "
            "use the arrays as they are", transform=_name(transform), argument="transforms")
    if state.get("unscaled"):  # ends with ToDtype(float32, scale=False)'s 0..255 values
        import augjax.ops as ops

        parts = tuple(step) if _name(transform) in ("Compose", "Sequential") else (step,)
        return compose(*parts, ops.normalize.bind(mean=0.0, std=1.0 / 255.0))
    if _name(transform) in ("Compose", "Sequential"):
        return step
    return compose(step)
