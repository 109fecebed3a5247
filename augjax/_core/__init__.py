"""The op model: parameters and their magnitudes, the op declaration (``@op``, ``OpSpec``),
what a sampler sees (``Meta``) and the Step contract (the ``Step`` protocol). Imports no JAX and
nothing above it, and calls nothing above it: the ops and steps users call are those of
:mod:`augjax.calls`, built on these."""
