"""Views inside a DALI pipeline: one ``jax_function`` crossing runs every view of a batch
(:func:`views_dali`, what ``Views.__call__`` does with a DataNode, handing down its
``call``: the views' programs on a batch of arrays); images of different sizes
(``ragged=True``) go to :mod:`augjax.ragged_views`, whose views DALI's own operators read."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from augjax._runtime.execution.inputs import check_arguments
from augjax._runtime.execution.keys import keys_from_seeds
from augjax.errors import AugjaxWarning
from augjax.kernels.embedded import owned
from augjax.views_step import ViewsStep

__all__ = ["views_dali"]


@functools.lru_cache(maxsize=64)
def _dali_function(self: ViewsStep, call: Callable[..., dict[str, Any]], device: str):
    from augjax.dali import dali_modules as _dali

    _, _, jax_fn = _dali()
    names = self.names

    def function(images, seeds):
        out = call(self, images, keys_from_seeds(seeds))
        return tuple(out[name] for name in names)

    return jax_fn.jax_function(owned(function), num_outputs=len(names),
                               output_layouts=tuple("FHWC" for _ in names), device=device)


def views_dali(self: ViewsStep, images: Any, *, call: Callable[..., dict[str, Any]], key: Any,
               seeds: Any, seed: int | None, device: str | None,
               ragged: bool = False) -> dict[str, Any]:
    """The views of a DataNode of images, ``{name: node}``: one ``jax_function`` running
    ``call(views, images, keys)`` on each batch (keys from the pipeline's seeds, or ``seeds``);
    ``ragged``: images of different sizes, each view's window read by DALI's operators."""
    from augjax.dali import dali_modules, from_decoder, node_device, placed, sample_seeds

    dali_modules()  # the install hint first
    device = check_arguments("views", nodes=True, key=key, seeds=seeds, seed=seed,
                             device=device, source=node_device(images))
    if ragged:  # every view's window read by DALI's operators (augjax.ragged_views)
        import augjax.ragged_views as ragged_views

        return ragged_views.call_dali(self, images, seeds=seeds, seed=seed, device=device)
    if from_decoder(images):  # (DALI's own error comes at run time: a uniform shape assert)
        warnings.warn(AugjaxWarning(
            "views: the images come from a DALI decoder, so each has its own size; the views "
            "of such a batch need ragged=True (each view cropped from the image as decoded), "
            "unless every image has one size"), stacklevel=3)
    seeds = seeds if seeds is not None else sample_seeds(device=device, seed=seed)
    out = _dali_function(self, call, device)(placed(images, device), placed(seeds, device))
    out = out if isinstance(out, (list, tuple)) else (out,)
    return dict(zip(self.names, out))
