"""The op model: parameters and their magnitudes, the op declaration (``@op``, ``OpSpec``),
what a sampler sees (``Meta``) and the Step contract (the ``Step`` protocol). Imports no JAX and
nothing above it: the calls a step makes into the runtime are handed down
(:func:`augjax._core.step.install_calls`)."""
