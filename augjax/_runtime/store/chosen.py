"""XLA options chosen by what a program returns, read off its stored form in a warm process.

Some programs compile with options that depend on their outputs' shapes: on the CPU a sampler
that draws a few values per sample compiles unoptimised, one that draws fields optimised
(:func:`augjax._runtime.execution.program.sampler_compiler_options`). Finding the shapes took
a trace of the program (``jax.eval_shape``) before its key could be written, in every process:
a warm process, which loads the program from the store and traces nothing else, traced it only
for that (``elastic_transform``'s sampler 0.9 s, a timm-style chain's 0.3 s). A
:class:`ByOutputs` holds the choice instead of its result: a
:class:`~augjax._runtime.store.programs.StoredProgram` looks for a stored program under each
option set the choice can give and keeps the one whose outputs (its ``jax.export`` module's)
give that set; only where none is stored does it trace the probe. The options, the key and the
compiled program are the same as when the probe ran first.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["ByOutputs", "outputs_of"]


class ByOutputs:
    """Options chosen by a program's outputs: ``choose(outputs)`` gives them for the outputs
    (``jax.ShapeDtypeStruct`` leaves, as ``jax.eval_shape`` gives them; None where the probe
    failed), ``probe()`` traces the program for its outputs, and ``candidates`` lists every
    option set ``choose`` gives (``None`` for none)."""

    def __init__(self, choose: Callable[[Any], dict[str, Any] | None],
                 probe: Callable[[], Any], candidates: tuple[dict[str, Any] | None, ...]):
        self.choose, self.probe, self.candidates = choose, probe, tuple(candidates)

    def decide(self) -> dict[str, Any] | None:
        """The options, by tracing the probe (a probe that raises counts as no outputs: the
        call traces the program again and says what is wrong)."""
        try:
            outputs = self.probe()
        except Exception:  # noqa: BLE001
            outputs = None
        return self.choose(outputs)


def outputs_of(exported: Any) -> Any:
    """A stored program's outputs (a ``jax.export.Exported``'s) as ``jax.eval_shape`` gives
    them."""
    import jax

    return jax.tree_util.tree_unflatten(
        exported.out_tree, [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                            for a in exported.out_avals])
