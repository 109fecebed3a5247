"""Images of different sizes: a chain whose first op declares ``ragged=`` (crops, resize).

Such an op turns images of any size into one output size, so it can read a ragged batch: each
sample's params are drawn from the image's true size (``Meta.height``/``width`` traced), with
the key a uniform batch would give it, and the op's :class:`augjax._core.meta.Window` says
which box is resampled to which size and which output window is cut from it. A ``resize``
that does not crop may be followed by a crop that does not resample (timm's eval transform,
``resize(256)`` then ``center_crop(224)``): the two read the image as one window.

The plan (:func:`plan_program`) is shared by both backends, so a DALI pipeline and the array
replay (``key=keys_from_seeds(seeds)``) draw the same windows, and boxes and keypoints move by
the same matrices (:func:`move_window_points`). On arrays each window's region is cut on the
host and read from a bucketed canvas (:mod:`augjax._runtime.ragged.read`); in DALI the plan's
boxes, sizes and anchors drive DALI's own ``fn.slice`` and ``fn.resize``
(``augjax.dali._ragged``), so memory stays bounded by the output. :func:`ragged_apply` (the
images padded to the largest one, read by :func:`augjax.kernels.window.read_window`) is the
reference the canvas path is tested against (copies exact, bilinear within 1 level).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from augjax._core.meta import Meta, Window
from augjax._runtime.execution.lowering import counted
from augjax._runtime.execution.program import build_program, once_cache
from augjax._runtime.targets.follow import move_boxes, move_keypoints
from augjax.errors import InputError, InputTypeError
from augjax.kernels.portable import portable_jit

__all__ = ["RAGGED_OPS", "as_arrays", "check_list", "move_window_points", "pad_images",
           "plan_program", "ragged_apply", "ragged_count", "ragged_message", "window_matrix",
           "window_structure"]

#: augjax's ops that take images of different sizes (any op declaring ``ragged=`` does).
RAGGED_OPS = ("random_resized_crop", "random_crop", "center_crop", "resize", "scale_jitter")


def ragged_message(name: str, what: str, one: bool = False, stack: bool = False) -> str:
    """The error for images of different sizes reaching ``name``, which cannot take them
    (``one``: a list of one image, which a batch of one would serve; ``stack``: a list of
    images of one size, which ``np.stack`` makes a batch)."""
    batch = ("pass one image as a batch of one, np.asarray(image)[None] (a list is taken as "
             "images of different sizes), or " if one else "")
    start = f"{name}: argument 'images' holds {what}, but {name} takes one image size per batch"
    if stack:
        start = (f"{name}: argument 'images' is {what}; a list is taken as images of different "
                 f"sizes, which {name} cannot take (one array per batch)")
        batch = "stack them into one batch, np.stack(images), or "
    return (f"{start}; {batch}start the chain with an op that takes images of different sizes "
            f"and returns one size ({', '.join(RAGGED_OPS)}; resize with one int needs a crop "
            f"after it), e.g. augjax.compose([augjax.ops.random_resized_crop.bind(size=224), "
            f"...])")


def _window(step: Any, params: Any, h: Any, w: Any) -> Window:
    return step.window(params, h, w)


def _plan_one(steps: Sequence[Any], h, w, c, dtype: str, key, start: int):
    """One sample's params (one dict per step) and its combined window."""
    params, windows = [], []
    for pos, step in enumerate(steps, start):
        k = jax.random.fold_in(key, pos) if (key is not None and step.random) else None
        p = step.draw(k, Meta(h, w, c, dtype))
        win = _window(step, p, h, w)
        params.append(p)
        windows.append(win)
        if win.anchor is not None:
            h, w = win.out
        elif win.size is not None:
            h, w = win.size[0], win.size[1]
    if len(windows) == 1:
        return tuple(params), windows[0]
    first, second = windows
    return tuple(params), Window(box=first.box, size=first.size, anchor=second.anchor,
                                 out=second.out, fill=second.fill)


def ragged_count(steps: Sequence[Any], name: str, open_end: bool = False,
                 listed: int | None = None, shapes: Sequence[tuple[int, ...]] = ()) -> int:
    """How many leading steps read the images at their own sizes (1 or 2), checked on the
    plan's structure without running it. ``open_end``: the prefix may end in images of
    different sizes (a DALI ``resize`` with one int that ends the chain). ``listed``: how many
    images the list holds (a list of one is told the batch of one it could be); ``shapes``:
    the list's image shapes (a list of one size is told ``np.stack``).

    Raises:
        InputError: the first step cannot take images of different sizes, or the prefix does
            not end in one output size (``resize`` with one int and no crop after it).
    """
    def ragged(step):
        return step.ragged

    if not steps or not ragged(steps[0]):
        first = getattr(steps[0], "name", name) if steps else name
        one = listed == 1
        stack = not one and len(set(map(tuple, shapes))) == 1
        what = ("a list of one image" if one else
                f"a list of {len(shapes)} images of one size {tuple(shapes[0])}" if stack
                else "images of different sizes")
        raise InputError(ragged_message(first, what, one=one, stack=stack), op=first,
                         argument="images")
    n = 1
    if len(steps) > 1 and ragged(steps[1]):
        a = window_structure(steps[:1])
        b = window_structure(steps[1:2])
        if a.anchor is None and a.size is not None and b.box is None and b.size is None:
            n = 2
    win = window_structure(steps[:n])
    if win.out is None and not (open_end and n == len(steps)):
        first = steps[0].name
        raise InputError(
            f"{first}: on images of different sizes its output size depends on each image "
            f"(resize with one int); give size=(height, width) or follow it with center_crop "
            f"or random_crop", op=first, argument="size")
    return n


def window_structure(steps: Sequence[Any]) -> Window:
    """The combined window of ``steps`` for an abstract image (only which parts are None and
    the static fields matter: the parts are the strings "box", "size", "anchor")."""
    return _window_structure(tuple(steps))


@once_cache(maxsize=256)
def _window_structure(steps: tuple[Any, ...]) -> Window:
    found: list[Window] = []

    def run(h, w, key):
        params, win = _plan_one(steps, h, w, 3, "uint8", key, 0)
        found.append(win)
        return params

    jax.eval_shape(run, jax.ShapeDtypeStruct((), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32),
                   jax.random.key(0))
    win = found[0]
    return Window(box=None if win.box is None else "box",
                  size=None if win.size is None else "size",
                  anchor=None if win.anchor is None else "anchor", out=win.out, fill=win.fill)


@once_cache(maxsize=256)
def plan_program(steps: tuple[Any, ...], start: int, dtype: str = "uint8"):
    """The jitted plan: ``f(shapes, keys) -> (params, window)`` for int32 ``shapes`` ``(N, 3)``
    (height, width, channels) and per-sample keys (or None): each step's params
    with a leading axis N (what ``.sample`` returns) and the combined window's traced fields
    with a leading axis N."""

    def program(shapes, keys):
        shapes = jnp.asarray(shapes, jnp.int32)
        c = shapes[:, 2]

        def one(shape, ch, key):
            params, win = _plan_one(steps, shape[0], shape[1], ch, dtype, key, start)
            return params, (win.box, win.size, win.anchor)

        if keys is None:
            return jax.vmap(lambda s, ch: one(s, ch, None))(shapes, c)
        return jax.vmap(one)(shapes, c, keys)

    # Kept in the program store (a warm process loads it: no trace), with the portable options
    # portable_jit gave it before (the same bits).
    return build_program("read", counted(program), "list-plan", steps,
                         {"start": start, "dtype": dtype})


def pad_images(images: Sequence[Any], name: str) -> tuple[np.ndarray, np.ndarray]:
    """A list of HWC images of different sizes as one zero-padded batch and their int32
    ``(N, 2)`` sizes.

    Raises:
        InputTypeError: an item that is not an array.
        InputError: see :func:`check_list`.
    """
    arrays = as_arrays(images, name)
    sizes = check_list(arrays, name)
    h, w = sizes.max(0)
    out = np.zeros((len(arrays), h, w, arrays[0].shape[2]), arrays[0].dtype)
    for i, a in enumerate(arrays):
        out[i, :a.shape[0], :a.shape[1]] = a
    return out, sizes


def as_arrays(images: Sequence[Any], name: str) -> list[np.ndarray]:
    """The list's images as NumPy arrays.

    Raises:
        InputTypeError: an item that is not a NumPy array or a ``jax.Array``.
    """
    kinds = {type(x) for x in images if not isinstance(x, (np.ndarray, jax.Array))}
    if kinds:
        names = sorted(k.__name__ for k in kinds)
        hint = ""
        if any(k.__module__.split(".")[0] == "PIL" for k in kinds):
            hint = "; a PIL image: np.asarray(image.convert('RGB'))"
        elif any(c.__module__.split(".")[0] == "torch" for k in kinds for c in k.__mro__):
            hint = "; a torch tensor: t.numpy() (channels-last: t.permute(1, 2, 0).numpy())"
        elif {"Clips", "Volumes"} & set(names):
            hint = ("; clips and volumes come as one array of one size (N, T, H, W, C) / "
                    "(N, D, H, W, C), not as a list")
        raise InputTypeError(
            f"{name}: argument 'images' as a list expects one array per image (NumPy or "
            f"jax.Array, HWC), got {', '.join(names)} items{hint}", op=name, argument="images")
    return [np.asarray(x) for x in images]


def check_list(arrays: Sequence[Any], name: str, first: Any = None) -> np.ndarray:
    """The int32 ``(N, 2)`` sizes of a list of HWC images of one dtype and channel count;
    with ``first`` (the chain's first step) also checked as a batch is for it: its dtypes and
    channel counts, channels-first images, and float values outside [0, 1] (a warning, an
    error in checking mode; the first such image).

    Raises:
        InputError: an empty list, an image that is not ``(H, W, C)``, an image without
            pixels (a height or width of 0), images of different dtypes or channel counts, or
            (with ``first``) a dtype or channel count the step does not take.
    """
    if not arrays:
        raise InputError(f"{name}: argument 'images' is an empty list", op=name,
                         argument="images")
    bad = [i for i, a in enumerate(arrays) if a.ndim != 3]
    kinds = {(np.dtype(a.dtype).name, a.shape[-1]) for a in arrays if a.ndim == 3}
    if bad or len(kinds) != 1:
        shapes = [a.shape for a in arrays]
        hint = ""
        gray = [i for i, a in enumerate(arrays) if a.ndim == 2]
        channels = {a.shape[-1] for a in arrays if a.ndim == 3}
        if len(gray) == len(arrays):
            hint = "; gray (H, W) images: image[..., None] each (or np.repeat to 3 channels)"
        elif not bad and all(a.shape[0] in (1, 3, 4) for a in arrays) and len(channels) > 1:
            hint = ("; channels-first (C, H, W) images: transpose each to (H, W, C) "
                    "(np.moveaxis(image, 0, -1))")
        elif gray:
            hint = (f"; image {gray[0]} is gray (H, W) among color images: "
                    f"np.repeat(image[..., None], 3, axis=-1) (PIL: image.convert('RGB'))")
        elif not bad and 4 in channels and 3 in channels:
            rgba = next(i for i, a in enumerate(arrays) if a.shape[-1] == 4)
            hint = (f"; image {rgba} has 4 channels (RGBA) among RGB images: image[..., :3] "
                    f"(PIL: image.convert('RGB'))")
        elif not bad and len({np.dtype(a.dtype).name for a in arrays}) > 1:
            hint = "; convert every image to one dtype (uint8, or float32 in [0, 1])"
        raise InputError(
            f"{name}: argument 'images' as a list expects HWC images (H, W, C) of one dtype and "
            f"channel count, got shapes {shapes[:8]}{' ...' if len(shapes) > 8 else ''} and "
            f"dtypes {sorted({np.dtype(a.dtype).name for a in arrays})}{hint}", op=name,
            argument="images")
    empty = [i for i, a in enumerate(arrays) if min(a.shape[:2]) < 1]
    if empty:
        raise InputError(
            f"{name}: argument 'images' expects images of at least 1 x 1 pixels, got image "
            f"{empty[0]} of shape {arrays[empty[0]].shape}", op=name, argument="images")
    if first is not None:
        _check_as_first(arrays, first)
    return np.array([a.shape[:2] for a in arrays], np.int32)


def _check_as_first(arrays: Sequence[np.ndarray], step: Any) -> None:
    """The list's images (one dtype and channel count) against what ``step`` takes."""
    from augjax._runtime.execution.checking import check_batch, checking_enabled
    from augjax._runtime.execution.inputs import IMAGE_CHANNELS, integer_hint

    op, image = step.name, arrays[0]
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(image.dtype)).name  # float64: JAX's float32
    if dtype not in step.dtypes:
        hint = integer_hint(image.dtype, arrays) if "float32" in step.dtypes else ""
        raise InputError(f"{op}: argument 'images' expects dtype {' or '.join(step.dtypes)}, "
                         f"got {np.dtype(image.dtype).name}{hint}", op=op, argument="images")
    channels = image.shape[-1]
    if channels not in IMAGE_CHANNELS and all(a.shape[0] in IMAGE_CHANNELS for a in arrays):
        raise InputError(
            f"{op}: argument 'images' as a list expects (H, W, C) images, got image 0 of shape "
            f"{image.shape}, as channels-first data would be: transpose each image to (H, W, "
            f"C) (np.moveaxis(image, 0, -1))", op=op, argument="images")
    if step.channels is not None and channels not in step.channels:
        raise InputError(
            f"{op}: argument 'images' expects {' or '.join(map(str, step.channels))} channels, "
            f"got {channels} (image 0 of shape {image.shape})", op=op, argument="images")
    if np.issubdtype(image.dtype, np.floating):
        for a in arrays:  # the first image outside [0, 1]: one report per call
            if a.size and not (0.0 <= a.min() and a.max() <= 1.0):
                check_batch(a, op, on_host=True, strict=checking_enabled())
                break


@once_cache(maxsize=256)
def _read_program(steps: tuple[Any, ...], out: tuple[int, int]):
    step = steps[0]
    config = step.kwargs
    interpolation = config.get("interpolation", "bilinear")
    antialias = config.get("antialias", True)
    fill = window_structure(steps).fill

    def program(padded, sizes, box, size, anchor):
        from augjax.kernels.window import read_window

        def one(img, hw, b, s, a):
            win = Window(box=b, size=s, anchor=a, out=out, fill=fill)
            return read_window(img, hw[0], hw[1], win, out, interpolation, antialias,
                               op=step.name)

        return jax.vmap(one)(padded, sizes, box, size, anchor)

    return portable_jit(counted(program))


def ragged_apply(steps: tuple[Any, ...], padded: Any, sizes: Any, keys: Any, start: int,
                 name: str) -> tuple[jax.Array, tuple[Any, ...], int]:
    """The first ``n`` steps on a padded batch with true ``sizes``: ``(uniform batch, their
    params, n)``."""
    n = ragged_count(steps, name)
    prefix = steps[:n]
    shapes = np.concatenate([sizes, np.full((len(sizes), 1), padded.shape[-1], np.int32)], 1)
    params, (box, size, anchor) = plan_program(prefix, start, np.dtype(padded.dtype).name)(
        shapes, keys)
    out = window_structure(prefix).out
    images = _read_program(prefix, out)(padded, sizes, box, size, anchor)
    return images, params, n


def window_matrix(box, size, anchor, shape):
    """One sample's forward matrix (pixel indices, centre-aligned resampling) of its window and
    the output's height and width (traced)."""
    h, w = shape[0].astype(jnp.float32), shape[1].astype(jnp.float32)
    top, left, bh, bw = ((0.0, 0.0, h, w) if box is None
                         else tuple(box[i].astype(jnp.float32) for i in range(4)))
    sh, sw = (bh, bw) if size is None else (size[0].astype(jnp.float32),
                                          size[1].astype(jnp.float32))
    ay, ax = (0.0, 0.0) if anchor is None else (anchor[0].astype(jnp.float32),
                                                anchor[1].astype(jnp.float32))
    sy, sx = sh / bh, sw / bw
    m = jnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], jnp.float32)
    m = m.at[0, 0].set(sx).at[0, 2].set((0.5 - left) * sx - 0.5 - ax)
    m = m.at[1, 1].set(sy).at[1, 2].set((0.5 - top) * sy - 0.5 - ay)
    return m, sh, sw


def move_window_points(struct: Window, shapes, window, given: dict[str, Any]) -> list[Any]:
    """Boxes and keypoints among ``given`` (each with its ``*_valid``: ``(N, M)`` flags,
    ``(N,)`` counts, or absent) moved by each sample's window (traced; ``shapes`` int32
    ``(N, >= 2)`` true sizes, ``window`` the plan's ``(box, size, anchor)``): ``[boxes,
    boxes_valid, keypoints, keypoints_valid]`` for those given, clamped and flagged as after any
    geometric op. Shared by the DALI pipeline and the array path."""
    box, size, anchor = window
    n = shapes.shape[0]
    outs = []
    for name, move in (("boxes", move_boxes), ("keypoints", move_keypoints)):
        if name not in given:
            continue
        points = given[name].astype(jnp.float32)
        grouped = points.shape[1:-1] if points.ndim == 4 else None
        valid = given.get(f"{name}_valid")
        if valid is None:
            valid = jnp.ones(points.shape[:-1], jnp.bool_)
        elif valid.ndim == 1:  # counts: the first count are real
            valid = jnp.arange(points.shape[1])[None, :] < valid[:, None]
        valid = valid.astype(jnp.bool_)
        if grouped is not None:  # grouped keypoints (N, G, K, 2): moved as (N, G * K, 2)
            points, valid = points.reshape(n, -1, 2), valid.reshape(n, -1)

        def one(shape, pts, ok, b, s, a, move=move):
            m, oh, ow = window_matrix(None if box is None else b, None if size is None else s,
                                      None if anchor is None else a, shape)
            if struct.out is not None:
                oh, ow = float(struct.out[0]), float(struct.out[1])
            return move(m, pts, ok, oh, ow)

        moved, ok = jax.vmap(one)(shapes, points, valid,
                                  box if box is not None else jnp.zeros((n, 4), jnp.int32),
                                  size if size is not None else jnp.zeros((n, 2), jnp.int32),
                                  anchor if anchor is not None else jnp.zeros((n, 2), jnp.int32))
        if grouped is not None:
            moved, ok = moved.reshape(n, *grouped, 2), ok.reshape(n, *grouped)
        outs += [moved, ok]
    return outs
