"""The converters of torchvision's dtype and value-scale transforms (``Normalize``, ``ToDtype``
/ ``ConvertImageDtype``, ``ToTensor``, ``PILToTensor``) for :func:`augjax.from_torchvision`:
the dtype the pipeline is in after them, and the 0..255 float values that
``ToDtype(torch.float32, scale=False)`` leaves (``state["unscaled"]``)."""

from __future__ import annotations

from augjax.interop._tv_common import _fail

__all__ = ["SCALE_FREE", "DTYPE_STEPS"]


def _normalize(t, state):
    import augjax.ops as ops

    if state["dtype"] == "uint8" and not state.get("unscaled"):
        raise _fail(t, "on uint8 images: torchvision's Normalize raises there (TypeError: Input "
                    "tensor should be a float tensor); put ToDtype(torch.float32, scale=True) "
                    "before it", argument="dtype", nearest="to_float, normalize")
    state["dtype"] = "float32"
    # after ToDtype(float32, scale=False) the values are 0..255: augjax's are 0..1, so its
    # mean and std are torchvision's / 255 (the same output, to float rounding)
    scale = 255.0 if state.pop("unscaled", False) else 1.0
    mean = tuple(float(m) / scale for m in t.mean)
    std = tuple(float(v) / scale for v in t.std)
    state["normalize"] = (mean, std)  # for a RandomErasing(value="random") right after it
    return ops.normalize.bind(mean=mean, std=std)


def _to_dtype(t, state):
    import augjax.ops as ops

    dtype = t.dtype
    if isinstance(dtype, dict):
        dtypes = {str(v) for v in dtype.values() if v is not None}
        if len(dtypes) != 1:
            raise _fail(t, f"a per-type dtype {dtype!r}", argument="dtype",
                        nearest="to_float / to_uint8")
        dtype = next(v for v in dtype.values() if v is not None)
    name = str(dtype).replace("torch.", "")
    if not getattr(t, "scale", True):  # ConvertImageDtype always scales
        return _unscaled(t, state, name)
    if name == "float32":
        state["dtype"] = "float32"
        return ops.to_float
    if name == "uint8":
        state["dtype"] = "uint8"
        return ops.to_uint8
    raise _fail(t, f"dtype={name}", argument="dtype", nearest="to_float / to_uint8")


#: What may follow ``ToDtype(float32, scale=False)`` (0..255 in floats, augjax's 0..1): steps
#: that move or mix pixels without reading their scale (fills are read in 0..255), the
#: containers around them, and ``Normalize``, which takes the values back to torchvision's.
SCALE_FREE = frozenset({
    "Compose", "RandomApply", "RandomChoice", "RandomOrder", "Sequential",
    "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "RandomCrop",
    "CenterCrop", "Resize", "RandomRotation", "RandomAffine", "RandomPerspective", "CutMix",
    "MixUp", "Normalize", "ToDtype", "ConvertImageDtype", "RandomIoUCrop", "RandomZoomOut",
    "ScaleJitter"})


def _unscaled(t, state, name):
    """``ToDtype(dtype, scale=False)``: uint8 to float32 keeps 0..255. augjax converts to its
    0..1 floats and remembers the factor: ``Normalize`` divides its mean and std by 255, and a
    pipeline that ends unscaled gets a final ``x * 255`` (``normalize(0, 1/255)``)."""
    import augjax.ops as ops

    if name == "float32" and state["dtype"] == "float32":
        return None  # float to float: nothing to do, scaled or not
    if name == "float32" and state["dtype"] == "uint8":
        state["dtype"], state["unscaled"] = "float32", True
        return ops.to_float
    if name == "float32":
        raise _fail(t, "scale=False keeps uint8 images' 0..255 values in float32, and the "
                    "pipeline's dtype is not known here: pass from_torchvision(..., "
                    "dtype='uint8') (or 'float32'), or use scale=True", argument="scale",
                    nearest="to_float")
    raise _fail(t, f"scale=False to {name} is not available (a cast of 0..1 floats to {name} "
                "truncates them to 0 or 1): augjax images are uint8 0..255 or float32 0..1; "
                "use scale=True", argument="scale", nearest="to_uint8")


def _pil_to_tensor(t, state):
    state["dtype"] = "uint8"  # a PIL image of 8-bit channels: uint8 0..255, as it is
    return None


def _to_tensor(t, state):
    import augjax.ops as ops

    state["dtype"] = "float32"  # ToTensor: uint8 to float32 in [0, 1], as ToDtype(scale=True)
    return ops.to_float


#: torchvision class name -> the step converting it.
DTYPE_STEPS = {
    "Normalize": _normalize,
    "ToDtype": _to_dtype,
    "ConvertImageDtype": _to_dtype,
    "ToTensor": _to_tensor,
    "PILToTensor": _pil_to_tensor,
}
