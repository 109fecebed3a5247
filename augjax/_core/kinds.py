"""Input kinds as types: what a call's images are (a batch of images, of clips) is said by the
caller, never guessed from an array's rank.

torchvision v2's model (``tv_tensors.Image``, ``tv_tensors.Video``, and ``_get_kernel(fn,
type(inpt))`` picking the kernel) in JAX, whose arrays cannot be subclassed: a kind is a thin
wrapper, a pytree holding the data and its layout (one sample's, as DALI names it), and
:mod:`augjax.fronts` maps each kind's type to the front end that runs it.

- :class:`Images`: a batch ``(N, H, W, C)`` (layout ``"HWC"``) or ``(N, C, H, W)`` (``"CHW"``),
  or a list of images of different sizes; one draw per image. A plain array is images.
- :class:`Clips`: ``(N, T, H, W, C)`` (``"FHWC"``) or ``(N, T, C, H, W)`` (``"FCHW"``); one
  draw per clip (``per_frame=True``: per frame); targets per frame, leading with ``(N, T)``.
- :class:`Volumes`: ``(N, D, H, W, C)`` (``"DHWC"``); the volume ops draw once per volume,
  other steps run per slice (:mod:`augjax.volumes`).

A plain array of rank 5 is refused (:class:`~augjax.errors.InputKindError`): clips and 3D
volumes both have rank 5. A call returns its images as the kind they came in (torchvision's
rule for its tv_tensors): a :class:`Clips` gives a :class:`Clips` (with the output's layout), a
plain array a plain array. Kinds are pytrees (the layout static), so they pass through
``jax.jit``; ``np.asarray(kind)`` gives the array.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import numpy as np

from augjax._core.declaration import CLIP_LAYOUTS, HWC, LAYOUTS, VOLUME_LAYOUTS
from augjax.errors import InputError, InputKindError

__all__ = ["Clips", "Images", "Kind", "Volumes", "Wrapped", "check_rank", "frame_layout",
           "kind_of", "layout_hint", "rank_of", "torch_hint"]


def layout_hint(layout: Any) -> str:
    """For a refused ``layout``: the name augjax (and DALI) give it where the caller spelled the
    frame axis ``T`` (torchvision's ``TCHW``, ``THWC``), else ``""``."""
    if not isinstance(layout, str) or "T" not in layout.upper():
        return ""
    spelled = layout.upper().replace("T", "F")
    known = CLIP_LAYOUTS + VOLUME_LAYOUTS + LAYOUTS
    if spelled not in known:
        return ""
    return f" (augjax and DALI call the frame axis F: layout={spelled!r})"


class Wrapped:
    """An array with what describes it (a kind, a target type): its ``shape`` and ``dtype``
    read through, and ``np.asarray`` gives the array."""

    array: Any

    @property
    def shape(self) -> tuple[int, ...] | None:
        shape = getattr(self.array, "shape", None)
        return None if shape is None else tuple(shape)

    @property
    def dtype(self) -> Any:
        return getattr(self.array, "dtype", None)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.array, dtype=dtype)


class Kind(Wrapped):
    """An input kind: the data (``array``) and one sample's ``layout``. Subclasses say the
    layouts they take (the first the default), how many axes lead one image (``image_axes``:
    ``("N",)``, ``("N", "T")``) and so lead the targets, and how draws are shared."""

    #: The layouts of one sample, the default first.
    layouts: ClassVar[tuple[str, ...]] = ()
    #: The axes before one image (they lead the targets too).
    image_axes: ClassVar[tuple[str, ...]] = ("N",)
    #: How draws are shared (for messages and docs).
    draws: ClassVar[str] = "one per image"

    array: Any
    layout: str

    def __init__(self, array: Any, layout: str | None = None) -> None:
        name = f"augjax.{type(self).__name__}"
        layout = self.layouts[0] if layout is None else layout
        if layout not in self.layouts:
            raise InputError(f"{name}: argument 'layout' expects one of {self.layouts}, got "
                             f"{layout!r}{layout_hint(layout)}", op=name, argument="layout")
        if isinstance(array, Kind):
            raise InputError(f"{name}: argument 'array' expects an array, got {array!r} (a kind "
                             f"already)", op=name, argument="array")
        rank = rank_of(array)
        if rank is not None:
            check_rank(rank, self.rank(layout), name, "array", self.describe(layout),
                       shape=tuple(array.shape) if hasattr(array, "shape") else array)
        self.array, self.layout = array, layout

    @classmethod
    def of(cls, array: Any, layout: str) -> Kind:
        """``array`` as this kind, unchecked (the front end checks it, naming the call)."""
        kind = object.__new__(cls)
        kind.array, kind.layout = array, layout
        return kind

    @staticmethod
    def rank(layout: str) -> int:
        """The rank of a batch in ``layout`` (one axis, N, before a sample)."""
        return len(layout) + 1

    @property
    def frame_layout(self) -> str:
        """The layout of one image: ``"FHWC"`` -> ``"HWC"``."""
        return self.layout[-len(HWC):]

    def layout_of(self, image_layout: str) -> str:
        """This kind's layout for images of ``image_layout`` (a chain may end in ``"CHW"``)."""
        return self.layout[:-len(HWC)] + image_layout

    @classmethod
    def describe(cls, layout: str) -> str:
        """The axes of a batch: ``"(N, T, H, W, C)"``."""
        return f"({', '.join(cls.image_axes + tuple(layout[-len(HWC):]))})"

    def tree_flatten(self) -> tuple[tuple[Any], str]:
        return (self.array,), self.layout

    @classmethod
    def tree_unflatten(cls, layout: str, children: Any) -> Kind:
        return cls.of(children[0], layout)

    def __repr__(self) -> str:
        shape = self.shape
        what = (f"{jax.numpy.dtype(self.dtype).name}{list(shape)}" if shape is not None
                and self.dtype is not None else type(self.array).__name__)
        return f"augjax.{type(self).__name__}({what}, layout={self.layout!r})"


@jax.tree_util.register_pytree_node_class
class Images(Kind):
    """A batch of images: ``(N, H, W, C)`` (layout ``"HWC"``, the default) or ``(N, C, H, W)``
    (``"CHW"``), or a list of ``(H, W, C)`` images of different sizes; one draw per image. A
    plain array is taken as images; the wrapper says so explicitly and comes back from a call.

    >>> out = augjax.ops.flip(augjax.Images(x), key=key)    # augjax.Images  # doctest: +SKIP
    """

    layouts = LAYOUTS
    image_axes = ("N",)
    draws = "one per image"


@jax.tree_util.register_pytree_node_class
class Clips(Kind):
    """A batch of clips: ``(N, T, H, W, C)`` (layout ``"FHWC"``, the default) or
    ``(N, T, C, H, W)`` (``"FCHW"``, DALI's sequence layouts). A step draws once per clip (every
    frame of clip ``n`` with its params), or once per frame with ``per_frame=True``; targets are
    per frame (``masks`` ``(N, T, H, W)``, ``boxes`` ``(N, T, M, 4)``, ...). See
    :mod:`augjax.clips`.

    >>> out = augjax.ops.rand_augment(augjax.Clips(videos), key=key)  # doctest: +SKIP
    >>> out.array.shape                                               # doctest: +SKIP
    (8, 16, 224, 224, 3)
    """

    layouts = CLIP_LAYOUTS
    image_axes = ("N", "T")
    draws = "one per clip"


@jax.tree_util.register_pytree_node_class
class Volumes(Kind):
    """A batch of 3D volumes ``(N, D, H, W, C)`` (layout ``"DHWC"``, as DALI's
    ``fn.readers.numpy`` reads them), float; masks ``(N, D, H, W)``, keypoints ``(N, K, 3)``
    voxel indices ``(d, h, w)``. The volume ops (``augjax.volume_ops``) draw once per volume;
    any other step runs on the D slices, one draw per volume (``per_frame=True``: per slice).
    See :mod:`augjax.volumes`.

    >>> out = augjax.volume_ops.affine(augjax.Volumes(ct), key=key, rotate=0.5)  # doctest: +SKIP
    """

    layouts = VOLUME_LAYOUTS
    image_axes = ("N", "D")
    draws = "one per volume"


#: The kinds a call takes, by the layouts that name them (``layout=`` on a plain array).
KINDS: tuple[type[Kind], ...] = (Images, Clips, Volumes)


def frame_layout(layout: str) -> str:
    """The layout of one image of a batch in ``layout``: a clip's ``"FHWC"`` -> ``"HWC"``; an
    image layout (or any other) as it is."""
    return layout[1:] if layout in CLIP_LAYOUTS else layout


def rank_of(x: Any) -> int | None:
    """The rank of an array (JAX, NumPy, a ``ShapeDtypeStruct``) or of a shape tuple; None for
    anything else (a list of images, a DALI ``DataNode``)."""
    if isinstance(x, (jax.Array, np.ndarray, jax.ShapeDtypeStruct)):
        return x.ndim if hasattr(x, "ndim") else len(x.shape)
    if isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) for d in x):
        return len(x)
    return None


def torch_hint(x: Any, argument: str) -> str:
    """How to hand augjax ``x`` where it is a torch tensor (torchvision's ``tv_tensors``
    included), as the end of a message (``"; ..."``); ``""`` for anything else. torch is never
    imported: the tensor is known by its classes' module."""
    if not any(c.__module__.split(".")[0] == "torch" for c in type(x).__mro__):
        return ""
    convert = "convert a torch tensor with t.numpy() (CPU) or jax.dlpack.from_dlpack(t) (CPU or " \
              "CUDA, no copy)"
    if argument not in ("images", "array"):
        return f"; {convert}"
    if type(x).__name__ == "Video":
        one = getattr(x, "ndim", None) == 4
        return (f"; {convert}: a torchvision Video (N, T, C, H, W) is "
                "augjax.Clips(array, layout='FCHW')" + (
                    "; this one is one clip (T, C, H, W): add the batch axis, array[None]"
                    if one else ""))
    return (f"; {convert}: channels-first (N, C, H, W) with layout='CHW', or channels-last "
            "(N, H, W, C)")


def pil_hint(x: Any) -> str:
    """How to hand augjax ``x`` where it is a PIL image, as the end of a message; ``""`` for
    anything else (PIL is never imported: the image is known by its class's module)."""
    if not any(c.__module__.split(".")[0] == "PIL" for c in type(x).__mro__):
        return ""
    return ("; a PIL image: np.asarray(image.convert('RGB'))[None] is a batch of one, and a "
            "list of np.asarray(image.convert('RGB')) images of different sizes goes to a "
            "chain that starts with a crop")


def check_rank(rank: int, expected: int, op: str, argument: str, axes: str,
               shape: Any = None) -> None:
    """Raises InputError when a batch has another rank than ``expected`` (its axes
    ``axes``, ``"(N, H, W, C)"``): the one check of a batch's rank, by kind."""
    if rank == expected:
        return
    hint = ""
    if rank == expected - 1 and expected in (4, 5):  # one image / clip / volume, no batch axis
        one = "clip" if "T," in axes else "volume" if "D," in axes else "image"
        hint = f" (a single {one}? add a batch axis: x[None])"
    shape = f" with shape {tuple(shape)}" if shape is not None else ""
    raise InputError(f"{op}: argument '{argument}' expects a batch of rank {expected} {axes}, "
                     f"got rank {rank}{shape}{hint}", op=op, argument=argument)


def kind_of(images: Any, layout: str, name: str) -> tuple[Kind, bool]:
    """The kind of a call's images and whether the caller said it (a :class:`Kind` given):
    a kind as given (its layout the call's; ``layout=`` may repeat it or its frames'), a plain
    value of a layout a kind names (``"FHWC"``: clips) as that kind, anything else as
    :class:`Images` (the image path checks it).

    Raises:
        InputKindError: a plain array of rank 5 with an image layout.
        InputError: ``layout=`` other than the given kind's, or none of the kinds' (on a
            plain array of rank 5).
    """
    if isinstance(images, Kind):
        if layout not in (HWC, images.layout, images.frame_layout):
            raise InputError(f"{name}: argument 'layout' is {layout!r}, but the images are "
                             f"{images!r}: the kind says the layout (drop layout=)", op=name,
                             argument="layout")
        return images, True
    for kind in KINDS:
        if layout in kind.layouts and kind is not Images:
            return kind.of(images, layout), False
    rank = rank_of(images)
    if rank is not None and rank == Clips.rank(Clips.layouts[0]):
        known = tuple(lay for kind in KINDS for lay in kind.layouts)
        if layout not in known:  # the layout the caller gave, not the rank-5 refusal
            raise InputError(f"{name}: argument 'layout' expects one of "
                             f"{', '.join(map(repr, known))}, got {layout!r}"
                             f"{layout_hint(layout)}", op=name, argument="layout")
        shape = tuple(images.shape) if hasattr(images, "shape") else images
        raise InputKindError(
            f"{name}: argument 'images' is a plain array of rank {rank} {shape}: a batch of "
            f"images has rank 4 (N, H, W, C), and rank 5 is clips (N, T, H, W, C) or 3D volumes "
            f"(N, D, H, W, C), which augjax does not guess; say which: augjax.Clips(x) for clips "
            f"(or layout='FHWC' / 'FCHW'), augjax.Volumes(x) for volumes (or layout='DHWC')",
            op=name, argument="images", shape=shape, kinds=("augjax.Clips", "augjax.Volumes"))
    return Images.of(images, layout), False
