"""A :class:`~augjax.multiview.Views` as a :class:`~augjax.Step`: the protocol's structural
members, answered from the views' steps (dtypes, channels, ragged, ...), and the per-sample
members (``after``, ``draw``, ``run``, ``program``, ...) refused with a typed error, since a
views runs on its own: images in, a dict of view batches out (see :mod:`augjax.multiview`)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NoReturn

from augjax._core.declaration import HWC
from augjax._core.step import Step, Structure
from augjax._core.targets import Follow
from augjax.errors import InputError

__all__ = ["ViewsStep"]


class ViewsStep:
    """The Step protocol's members of a views (mixed into :class:`~augjax.multiview.Views`,
    whose ``groups`` and ``names`` they read)."""

    groups: tuple[tuple[str, tuple[Any, ...]], ...]
    names: tuple[str, ...]

    kind = "views"
    level = "sample"  # each image's views draw from its own key; nothing mixes images
    random = True
    chained = False
    sample_targets = ()
    declared = MappingProxyType({})
    follow = Follow()

    @property
    def name(self) -> str:
        return "views"

    @property
    def inputs(self) -> tuple[str, ...]:
        return ("images",)

    @property
    def outputs(self) -> tuple[str, ...]:
        """A call returns one batch per group: the groups' names."""
        return self.names

    @property
    def layouts(self) -> tuple[str, ...]:
        return (HWC,)

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes every view's step takes."""
        steps = self.elements()
        return tuple(d for d in steps[0].dtypes if all(d in s.dtypes for s in steps))

    @property
    def channels(self) -> tuple[int, ...] | None:
        """The channel counts every view's step takes (None: any)."""
        given = [set(s.channels) for s in self.elements() if s.channels is not None]
        return tuple(sorted(set.intersection(*given))) if given else None

    @property
    def compute_bound(self) -> bool:
        return any(s.compute_bound for s in self.elements())

    @property
    def ragged(self) -> bool:
        """Whether every view's step takes images of different sizes (its first op does)."""
        return all(bool(s.program()[0]) and s.program()[0][0].ragged for s in self.elements())

    @property
    def pads_exactly(self) -> bool:
        return all(s.pads_exactly for s in self.elements())

    @property
    def geometric(self) -> bool:
        return any(s.geometric for s in self.elements())

    @property
    def kwargs(self) -> dict[str, Any]:
        return {}

    def elements(self) -> tuple[Any, ...]:
        """Every view's step, group by group."""
        return tuple(step for _, steps in self.groups for step in steps)

    def _alone(self, member: str) -> NoReturn:
        raise InputError(f"views: a Views step runs on its own (images in, a dict of view "
                         f"batches out); it has no per-sample {member!r} and cannot be an "
                         f"element of compose, a composite or another views: call it on the "
                         f"images, then run what follows on each group's batch", op="views",
                         argument="steps")

    def after(self, structure: Structure) -> Structure:
        self._alone("after")

    def window(self, params: Any, height: Any, width: Any) -> Any:
        self._alone("window")

    def draw(self, key: Any, meta: Any) -> Any:
        self._alone("draw")

    def run(self, image: Any, params: Any) -> Any:
        self._alone("run")

    def run_checked(self, image: Any, params: Any, where: str) -> Any:
        self._alone("run")

    def run_batch(self, inputs: Any, params: Any) -> Any:
        self._alone("run_batch")

    def run_masks(self, mask: Any, params: Any) -> Any:
        self._alone("run_masks")

    def matrix(self, params: Any, meta: Any) -> Any:
        self._alone("matrix")

    def stages(self, params: Any, meta: Any) -> Any:
        self._alone("stages")

    def program(self) -> tuple[tuple[Step, ...], int]:
        self._alone("program")

    def to_config(self) -> dict[str, Any]:
        raise InputError("views: has no config form (augjax.to_dict takes chains and "
                         "policies); save each group's step instead", op="views",
                         argument="views")
