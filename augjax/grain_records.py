"""What a grain record (or batch) of each input kind goes through in :mod:`augjax.grain`: the
record split into its image and targets, the chain checked, and the kind's call: images (a
list of one image when the chain starts with a crop), clips (``augjax.Clips``), volumes, and
views (the image field replaced by one field per group). Importable without grain."""

from __future__ import annotations

from typing import Any

import numpy as np

from augjax.errors import InputError, InputTypeError

__all__ = ["TARGETS", "VOLUME_TARGETS", "checked_chain", "checked_image", "clip_record",
           "described", "is_views", "kind_of_layout", "merge", "merge_views", "mixer",
           "not_a_record", "rank_hint", "record_note", "split", "takes_any_size", "unwrapped", "views_record", "volume_chain",
           "volume_record", "volume_targets"]

#: Record fields that follow the image through a chain (augjax's target keywords).
TARGETS = ("masks", "boxes", "boxes_valid", "keypoints", "keypoints_valid")
#: The fields that follow a volume through a volume chain.
VOLUME_TARGETS = ("masks", "keypoints")


def described(value: Any) -> str:
    """What a record (or its image field) is, for a message or a note: an array's shape and
    dtype, bytes' length, a sequence's type and length, another value's type."""
    if isinstance(value, (bytes, bytearray)):
        return f"bytes of length {len(value)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    shape = getattr(value, "shape", None)
    if shape is not None and not callable(shape):
        return f"an array of shape {tuple(shape)}, {getattr(value, 'dtype', '?')}"
    return f"a {type(value).__qualname__}"


def record_note(err: Exception, element: Any, image: str, seeds: Any) -> str:
    """RandomMap's note on an error of a record: its index (from WithIndex), what its image is
    and its seeds, to find it; a crop-first chain runs the image as a list of one (the error
    says "as a list")."""
    index = element.get("index") if isinstance(element, dict) else None
    if not isinstance(element, dict):
        what = described(element)
    elif image in element:
        what = f"its {image!r}: {described(element[image])}"
    else:
        what = f"no field {image!r}"
    listed = "; a crop first runs its image as a list of one, image 0" if "as a list" in str(
        err) else ""
    return (f"augjax.grain.RandomMap: the record{'' if index is None else f' of index {index}'}"
            f" ({what}; keys from seeds {seeds.tolist()}{listed})")


def mixer(chain: Any) -> str:
    """The name of the op of ``chain`` that mixes labels (mixup, cutmix), else the chain's."""
    return next((step.name for step in getattr(chain, "steps", ())
                 if "labels" in getattr(step, "inputs", ())),
                getattr(chain, "name", type(chain).__name__))


def not_a_record(element: Any, name: str, image: str, shape: str = "(H, W, C)") -> InputError:
    """The error for a record that is neither a dict nor one array: a tuple ``(image, label)``
    (common in grain pipelines) or a list, which NumPy would turn into a bare ValueError."""
    pair = ("; make it a dict first, e.g. .map(lambda r: {'image': r[0], 'label': r[1]})"
            if isinstance(element, tuple) else "")
    return InputError(f"{name}: a record is a dict (e.g. {{{image!r}: ..., 'label': ...}}) or "
                      f"one {shape} array, got {described(element)}{pair}", argument=image)


def split(element: Any, image: str, name: str = "augjax.grain",
          shape: str = "(H, W, C)") -> tuple[dict, Any, dict]:
    """(the record as a dict, its image, its targets); a bare array is the image itself, a
    tuple or list is refused (:func:`not_a_record`)."""
    if isinstance(element, (tuple, list)):
        raise not_a_record(element, name, image, shape)
    if isinstance(element, dict):
        if image not in element:
            raise InputError(f"augjax.grain: the record has no field {image!r} (fields: "
                             f"{sorted(element)}); name the image field with image=...",
                             argument="image")
        return element, element[image], {k: element[k] for k in TARGETS if k in element}
    return {}, element, {}


def rank_hint(image: np.ndarray, rank: int) -> str:
    """What to do with a record's image of the wrong rank (``""`` when nothing is known): encoded
    bytes, or an encoded buffer (``np.frombuffer(jpeg, np.uint8)``), are decoded first; a gray
    ``(H, W)`` image, where an ``(H, W, C)`` one is expected, gets its channel axis."""
    if image.ndim == 0 or (image.ndim == 1 and image.dtype == np.uint8):
        return ("; decode the image first (encoded bytes are not an image: e.g. "
                "np.asarray(PIL.Image.open(io.BytesIO(data)).convert('RGB')))")
    if image.ndim == 2 and rank == 3:
        return ("; a gray (H, W) image: decode with PIL's .convert('RGB'), or "
                "np.repeat(image[..., None], 3, axis=-1) (colour ops take 3 channels; "
                "image[..., None] for a gray-only chain)")
    return ""


def checked_image(image: np.ndarray, field: str, name: str) -> np.ndarray:
    """A record's image for an image chain or views: one ``(H, W, C)`` array, or InputError with
    what to do (:func:`rank_hint`; a 16-bit image, as a 16-bit PNG decodes, is converted)."""
    if image.ndim != 3:
        raise InputError(f"{name}: expects one (H, W, C) image per record, got shape "
                         f"{image.shape}{rank_hint(image, 3)}", argument=field)
    if image.dtype == np.uint16:
        raise InputError(f"{name}: expects dtype uint8 or float32, got uint16 (a 16-bit PNG?); "
                         f"convert it when the record is decoded: (x >> 8).astype(np.uint8), or "
                         f"x.astype(np.float32) / 65535", argument=field)
    return image


def kind_of_layout(layout: str | None, name: str, images: bool = False) -> Any:
    """The input kind whose batches a ``layout=`` names (``None``: images, as plain arrays);
    ``images``: an image layout (``"CHW"``, a batch ``(B, C, H, W)``) is taken too."""
    if layout is None:
        return None
    from augjax._core.declaration import CLIP_LAYOUTS, LAYOUTS
    from augjax._core.kinds import Clips, Images

    if images and layout in LAYOUTS:
        return Images
    if layout not in CLIP_LAYOUTS:
        taken = f", an image layout {tuple(LAYOUTS)}," if images else ""
        hint = ("" if images or layout not in LAYOUTS else
                "; a record's image is (H, W, C): transpose a channels-first one "
                "(np.moveaxis(image, 0, -1))")
        raise InputError(f"{name}: argument 'layout' expects None (images (H, W, C)){taken} "
                         f"or a clip layout {tuple(CLIP_LAYOUTS)}, got {layout!r}{hint}",
                         argument="layout")
    return Clips


def unwrapped(out: Any) -> Any:
    """A call's result with its images as an array (a kind's ``array``)."""
    from augjax._core.kinds import Kind

    if isinstance(out, Kind):
        return out.array
    if isinstance(out, dict) and isinstance(out.get("images"), Kind):
        return {**out, "images": out["images"].array}
    if isinstance(out, tuple) and out and isinstance(out[0], Kind):
        return (out[0].array, *out[1:])
    return out


def volume_chain(chain: Any) -> bool:
    """Whether ``chain`` is a volume op, step or chain (:mod:`augjax.volumes`)."""
    from augjax.volumes import VolumeChain, VolumeOp, VolumeStep

    return isinstance(chain, (VolumeChain, VolumeOp, VolumeStep))


def volume_targets(targets: dict, name: str) -> dict:
    """The targets of a volume chain's record or batch: masks and keypoints only."""
    other = sorted(set(targets) - set(VOLUME_TARGETS))
    if other:
        raise InputError(f"{name}: a volume chain moves {VOLUME_TARGETS} with the volume; the "
                         f"record has {other}", argument=other[0])
    return targets


def checked_chain(chain: Any, name: str) -> Any:
    """``chain`` when it is an augjax op, step, chain or volume chain, else InputTypeError."""
    from augjax._core.step import BaseStep
    from augjax.calls import Op

    if isinstance(chain, Op):  # a bare op runs with its defaults: a required one missing
        chain.bind()           # is a ParamError here, not in a worker at the first record
    if isinstance(chain, (Op, BaseStep)) or volume_chain(chain) or is_views(chain):
        return chain
    raise InputTypeError(f"{name}: argument 'chain' expects an augjax op, bound op, chain, "
                         f"policy (augjax.compose(...)) or views (augjax.views(...)), got "
                         f"{type(chain).__module__}.{type(chain).__qualname__}",
                         argument="chain")


def is_views(chain: Any) -> bool:
    """Whether ``chain`` is an :class:`augjax.Views` (DINO's, SimCLR's multi-crop views)."""
    from augjax.multiview import Views

    return isinstance(chain, Views)


def merge_views(record: dict, image: str, out: dict, to_host) -> dict:
    """The record with its image replaced by one field per group of views."""
    merged = {k: v for k, v in record.items() if k != image}
    taken = sorted(set(merged) & set(out))
    if taken:
        raise InputError(f"augjax.grain: the views' group {taken[0]!r} would replace the "
                         f"record's field of that name (fields: {sorted(record)}); rename the "
                         f"field or the group", argument=taken[0])
    for name, value in out.items():
        merged[name] = to_host(value)
    return merged


def takes_any_size(steps: tuple[Any, ...]) -> bool:
    """Whether a chain's ``steps`` start with ops that take images of different sizes and
    return one size (``random_resized_crop``, ``resize`` + ``center_crop``, ...): its records
    then run as a list of one image, whose programs are keyed by a canvas bucket, not by the
    record's size."""
    from augjax._runtime.ragged.prefix import ragged_count

    if not steps or not getattr(steps[0], "ragged", None):
        return False
    try:
        ragged_count(steps, "augjax.grain.RandomMap")
    except InputError:  # resize(int) with no crop after it: one size per record
        return False
    return True


def merge(record: dict, image: str, out: Any, to_host) -> Any:
    if not record:
        return to_host(out)
    merged = dict(record)
    if isinstance(out, dict):
        for name, value in out.items():
            merged[image if name == "images" else name] = to_host(value)
    else:
        merged[image] = to_host(out)
    return merged


def views_record(chain: Any, field: str, record: dict, image: np.ndarray, targets: dict,
             seeds: np.ndarray) -> Any:
    """One image record through views (``augjax.views``, the DINO/SimCLR/BYOL recipes):
    the image field replaced by one field per group, ``(V, h, w, C)`` each. Views whose
    steps all start with a crop take the image at its own size (``views([image], ...)``),
    others ``views(image[None], ...)``."""
    import jax

    from augjax._runtime.execution.program import _keys_from_seeds as keys_from_seeds

    name = "augjax.grain.RandomMap"
    if targets:
        raise InputError(f"{name}: views take images only; the record has "
                         f"{sorted(targets)}", argument=sorted(targets)[0])
    checked_image(image, field, name)
    with jax.default_device(jax.devices("cpu")[0]):
        images = [image] if chain.ragged else image[None]
        out = chain(images, key=keys_from_seeds(seeds))
    record = record or {field: image}
    return merge_views(record, field, out, lambda a: np.asarray(a)[0])

def clip_record(chain: Any, layout: str, field: str, record: dict, clip: np.ndarray,
            targets: dict, seeds: np.ndarray) -> Any:
    """One clip record (``(T, H, W, C)`` in the layout given) through the chain: the
    chain's call on a batch of one clip, ``augjax.Clips(clip[None], layout)``, with
    ``keys_from_seeds(seeds)`` (one draw per clip; targets per frame)."""
    import jax

    from augjax._core.kinds import Clips
    from augjax._runtime.execution.program import _keys_from_seeds as keys_from_seeds

    if clip.ndim != len(layout):
        raise InputError(f"augjax.grain.RandomMap: layout {layout!r} expects one clip "
                         f"of rank {len(layout)} per record, got shape {clip.shape}"
                         f"{rank_hint(clip, len(layout))}", argument=field)
    with jax.default_device(jax.devices("cpu")[0]):
        out = chain(Clips(clip[None], layout), key=keys_from_seeds(seeds),
                         **{k: np.asarray(v)[None] for k, v in targets.items()})
    return merge(record, field, unwrapped(out), lambda a: np.asarray(a)[0])

def volume_record(chain: Any, field: str, record: dict, volume: np.ndarray, targets: dict,
              seeds: np.ndarray) -> Any:
    """One volume record through a volume chain: the chain's call on arrays (its own
    sampler and apply programs, cached per shape) with ``keys_from_seeds(seeds)``."""
    import jax

    from augjax._runtime.execution.program import _keys_from_seeds as keys_from_seeds

    name = "augjax.grain.RandomMap"
    if volume.ndim != 4:
        raise InputError(f"{name}: a volume chain expects one (D, H, W, C) volume per "
                         f"record, got shape {volume.shape}{rank_hint(volume, 4)}",
                         argument=field)
    targets = volume_targets(targets, name)
    with jax.default_device(jax.devices("cpu")[0]):
        out = chain(volume[None], key=keys_from_seeds(seeds),
                         **{k: np.asarray(v)[None] for k, v in targets.items()})
    return merge(record, field, out, lambda a: np.asarray(a)[0])
