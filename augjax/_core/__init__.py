"""The op model: parameters and their magnitudes, the op declaration (``@op``, ``OpSpec``),
what a sampler sees (``Meta``) and the Step contract. Imports no JAX; nothing here imports the
runtime at module level."""
